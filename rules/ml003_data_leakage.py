"""A preprocessing step or a model learns from data that includes the test set.

Why it matters
    A scaler, encoder, imputer, PCA, feature selector, vectorizer or resampler learns
    statistics in ``fit``. Fitted on all the data before it is split into training and
    test data (or before cross-validation), it has seen the test rows: the test score
    no longer measures performance on unseen data. The effect ranges from small (a
    scaler's mean) to dramatic: selecting 20 of 10,000 pure-noise features on the full
    data and then cross-validating a classifier on them scores far above chance (about
    0.8 accuracy on random labels in ``fixtures/ml003``), while the same selection
    inside the cross-validation scores 0.5, as it should. SMOTE before the split puts
    synthetic copies of test points into training. A model fitted on the test split, or
    refitted on all the data and then scored on the test split, is scored on rows it
    was trained on.

    The analysis follows the data: names through assignments, the outputs of
    ``train_test_split``/``random_split``, the folds of ``KFold`` and kin, Keras
    ``validation_split``, column selection, ``.values``/``.to_numpy()``, concatenation,
    complementary slices (``X[:n]``/``X[n:]``, also by label ``df.loc[:day]``/``df.loc[day:]``
    and by position ``.iloc``, bounds read through the definitions that reach them; overlapping
    shifted slices such as ``s[:-1]``/``s[1:]`` are a lagged pair, not a split), masks (also held in a name, and negated: ``X[m]``/``X[~m]``), ``sample``/``drop``, the
    keys of a dict of splits (``idx["train"]``/``idx["test"]``), index arrays named for their part
    (``X.iloc[train_idx]``/``X.iloc[test_idx]``), and calls of the file's own helper functions
    and methods (also when handed to ``DataFrame.apply``/``map``/``transform``, as are lambdas).
    It reports only when the fitted transformer's output reaches a split, cross-validation or a
    model together with split data, or when the parts of the split are
    named as training and held-out data (a PCA fitted for a plot is not a leak); a transformer
    refitted on the held-out part after its fit on the training part is reported whatever
    becomes of its output.

    Transformers: scalers, encoders (one-hot, ordinal, target, label encoding of feature
    columns), imputers, PCA and other decompositions, feature selectors (``SelectKBest``,
    ``RFE``, ``VarianceThreshold``...), vectorizers and the Keras ``Tokenizer``,
    ``ColumnTransformer``/pipelines used through ``fit_transform``, resamplers (SMOTE and
    kin) and the one-call forms (``sklearn.preprocessing.scale`` and friends).

When the code is fine
    - fitting on the training split and transforming the test split;
    - a ``Pipeline``/``make_pipeline`` handed to cross-validation or fitted on the
      training split;
    - fitting on train+validation after the test split was held out first;
    - transform-only with a transformer fitted on the training split;
    - a ``LabelEncoder``/``LabelBinarizer`` fitted on all the labels (the target): it
      only learns the set of class names, which does not change any score;
    - unsupervised fits (PCA for a plot, clustering) on data that is never split, or
      whose output never reaches a model;
    - refitting the final model on all the data after it was evaluated;
    - an encoder told its categories as constants (``OrdinalEncoder(categories=[["S", "M", "L"]])``):
      it learns nothing from the rows;
    - t-SNE, MDS and spectral embeddings (no ``transform``): what they learn cannot reach other rows;
    - a wrapper that only scores a model fitted before (eli5 ``PermutationImportance(model)``,
      ``cv="prefit"``) fitted on the test split, and ``permutation_importance(model, X_test, y_test)``;
    - code whose data flow is not visible (a function receiving ``X`` as a parameter
      with no split in sight).

How to fix
    Split first, then fit the preprocessing on the training split only and apply it
    (``transform``) to the test split; for cross-validation put the preprocessing and the
    model in one ``Pipeline``. Resample (SMOTE) only the training split. The rule offers
    an unsafe fix (shown by ``--diff``, applied by ``--unsafe-fixes``) in the simple
    shapes: ``X_s = scaler.fit_transform(X)`` (or ``scaler.fit(X)`` and ``X_s =
    scaler.transform(X)``) followed by ``train_test_split(X_s, y)`` in the same block is
    reordered to split first; a transformer fitted before
    ``cross_val_score`` is moved into a ``make_pipeline`` with the model; a
    ``fit_transform`` on the test split becomes ``transform``.
"""

from __future__ import annotations

import re
from typing import Iterable, List, Optional, Set, Tuple

import libcst as cst

from mllint.findings import Applicability, Example, Finding, Fix
from mllint.semantics import dataflow as D
from mllint.semantics.model import FileModel
from mllint.semantics.names import dotted, target_names
from mllint.semantics.tree import visit as tree_visit

CODE = "ML003"
NAME = "data-leakage"
MESSAGE = "a preprocessing step or a model is fitted on data that includes the test set"
TRIGGERS = (".fit", "fit_", "scale(", "_transform(")
DEFAULT_ENABLED = True
FRAMEWORK = "sklearn"  # scikit-learn code: on whatever the deep-learning framework
FIX = "unsafe"


def SCREEN(facts) -> bool:
    # Sound: the data flow behind every finding runs only when the file calls a fit
    # (dataflow._is_fit_call: ``x.fit/fit_transform/fit_resample/fit_sample/partial_fit/
    # fit_on_texts(...)``, or a scaling function such as ``scale(...)``, by attribute or name).
    return not facts.name_calls.isdisjoint(D._FIT_TRANSFORM_FUNCTIONS) or not facts.attr_calls.keys().isdisjoint(
        D._FIT_METHODS | D._FIT_TRANSFORM_FUNCTIONS
    )


# --- finding the leaks ----------------------------------------------------------------------


class Leak:
    def __init__(
        self,
        fit: D.FitEvent,
        kind: str,
        split: Optional[D.SplitInfo],
        evaluation: Optional[D.EvalEvent] = None,
        via: Optional[cst.CSTNode] = None,
    ):
        self.fit = fit
        self.kind = kind  # full / concat / test / val (transformers); model-test / refit (models); paired (names)
        self.split = split
        self.evaluation = evaluation
        self.via = via  # the call of the helper the fit sits in that handed it the data
        self.learned: Optional[D.FitEvent] = None  # applying-refit: the fit in the class's own fit method


def _transformer_leak(flow: D.DataFlow, fit: D.FitEvent, model: FileModel) -> Optional[Leak]:
    kind, split, via = flow.classify_fit(fit)
    uses = flow.sinks.get(fit.fid, [])
    if kind is None:
        return _paired_names_leak(flow, fit, model)
    if kind == "full" and not any(flow.relevant(u) for u in uses):
        stored = flow.stored_then_split(fit, model)
        if stored is not None:  # a dataset class: fitted in one method, split in the next
            return None if fit.cls in D.LABEL_ENCODERS else Leak(fit, kind, stored, via=via)
    if kind == "full":
        uses = [u for u in uses if flow.relevant(u)]
    if not uses and not (kind in (D.TEST, D.VAL) and _refit_after_training_fit(flow, fit)):
        return None
    if fit.cls in D.LABEL_ENCODERS and kind in ("full", "concat"):
        if not any(u.x_position for u in uses) or _targetish(model, fit):
            return None  # label encoding of the target: harmless to scores
    if kind == D.VAL and fit.kind == D.RESAMPLER:
        return None
    if kind == "concat" and _held_out_as_validation(flow, fit.rows):
        return None  # train + validation: the code keeps its test data elsewhere
    return Leak(fit, kind, split, via=via)


def _refit_after_training_fit(flow: D.DataFlow, fit: D.FitEvent) -> bool:
    """Whether the object's previous fit was on the training part of the split whose held-out
    part this fit sees: ``fit_transform(X_test)`` written where ``transform`` was meant. The
    refit is the bug whatever becomes of its output (printed, saved, or used later)."""
    previous = fit.previous
    if previous is None or not previous.is_transformer or previous.kind != fit.kind:
        return False
    held_out = {info.sid for row in fit.rows for info, part in flow.steps(row)[:1] if part in (D.TEST, D.VAL)}
    trained = {info.sid for row in previous.rows for info, part in flow.steps(row)[:1] if part == D.TRAIN}
    return bool(held_out & trained) and flow.classify(previous.rows)[0] is None


def _paired_names_leak(flow: D.DataFlow, fit: D.FitEvent, model: FileModel) -> Optional[Leak]:
    """Data whose split we cannot see (parameters, imported names, separate files): a
    transformer re-fitted on ``X_test`` right after being fitted on ``X_train`` is fitted on
    the test data."""
    previous = fit.previous
    if previous is None or not previous.is_transformer or fit.data_node is None or previous.data_node is None:
        return None
    if any(flow.steps(row) for row in fit.rows) or any(flow.steps(row) for row in previous.rows):
        return None  # the data flow knows which parts these are
    test_text = model.code_of(fit.data_node)
    train_text = model.code_of(previous.data_node)
    if not D.is_test_name(test_text) or D.is_val_name(test_text):
        return None
    if re.sub(r"test", "train", test_text, flags=re.IGNORECASE) != re.sub(r"(?i)train", "train", train_text):
        return None
    return Leak(fit, "paired", None)


def _held_out_as_validation(flow: D.DataFlow, rows) -> bool:
    """Whether the held-out parts among ``rows`` are all named as validation data
    (``X_val``, ``X_valid``, ``X_dev``): refitting on train+validation is fine."""
    names = flow.part_names(rows, D.TEST)
    return bool(names) and all(D.is_val_name(n) and not D.is_test_name(n) for n in names)


def _model_leak(flow: D.DataFlow, fit: D.FitEvent, model: FileModel) -> Optional[Leak]:
    kind, split, via = flow.classify_fit(fit)
    if kind == D.TEST:
        if fit.kind == D.CALIBRATOR or any(o.kind == D.CALIBRATOR for o in (fit.obj.inner if fit.obj else ())):
            return None
        names = flow.part_names(fit.rows, D.TEST)
        if fit.data_node is not None:
            names.add(model.code_of(fit.data_node))
        if not any(D.is_test_name(n) and not D.is_val_name(n) for n in names):
            return None  # a held-out part the code treats as validation (calibration, blending)
        return Leak(fit, "model-test", split, via=via)
    if kind in ("full", "concat"):
        later_fits = [
            f.order for f in flow.fits if f is not fit and f.key == fit.key and f.scope == fit.scope and f.order > fit.order
        ] + [order for key, order, scope in flow.resets if key == fit.key and scope == fit.scope and order > fit.order]
        for evaluation in flow.evals:
            if evaluation.key != fit.key or evaluation.scope != fit.scope or evaluation.order < fit.order:
                continue
            if any(order < evaluation.order for order in later_fits):
                continue
            eval_kind, eval_split = flow.classify(evaluation.rows_for(via))
            if eval_kind == D.TEST:
                return Leak(fit, "refit", eval_split, evaluation, via)
    return None


# Methods that, by the estimator API, apply what ``fit`` learned to the data they are handed
# (new data: the test split), never learn from it.
_APPLYING_METHODS = ("transform", "predict", "predict_proba", "predict_log_proba", "decision_function")


def _refit_in_applying_method(flow: D.DataFlow, fit: D.FitEvent, model: FileModel) -> Optional[Leak]:
    """A class of the file with the estimator API (``fit``/``fit_transform`` and ``transform``
    or ``predict``) whose applying method refits the transformer its ``fit`` fitted, on the data
    it is handed: ``transform(X_test)`` then learns from the test split (``fit_transform``
    written where ``transform`` was meant)."""
    if fit.kind != D.TRANSFORMER or fit.method not in ("fit", "fit_transform") or fit.scope == D.MODULE_SCOPE:
        return None
    cls = model.class_scope_of(fit.scope)
    receiver = fit.receiver
    if cls is None or fit.scope.rsplit(".", 1)[-1] not in _APPLYING_METHODS or fit.scope.count(".") != cls.count(".") + 1:
        return None
    if not re.fullmatch(r"self\.\w+", receiver or ""):
        return None
    # what it fits is the data the method was handed (not a reference set the object keeps)
    if not fit.rows or not all(flow.param_roots.get(root, ("",))[0] == fit.scope for root, _path in fit.rows):
        return None
    learned = [
        other for other in flow.fits
        if other.scope in (f"{cls}.fit", f"{cls}.fit_transform") and other.receiver == receiver and other.is_transformer
    ]
    if not learned:
        return None
    leak = Leak(fit, "applying-refit", None)
    leak.learned = learned[0]
    return leak


def find_leaks(model: FileModel) -> List[Leak]:
    flow = D.dataflow_of(model)
    leaks = []
    for fit in flow.fits:
        if fit.is_transformer:
            leak = _transformer_leak(flow, fit, model) or _refit_in_applying_method(flow, fit, model)
        else:
            leak = _model_leak(flow, fit, model)
        if leak is not None:
            leaks.append(leak)
    for fit in flow.embeddings:
        leak = _embedding_leak(flow, fit)
        if leak is not None:
            leaks.append(leak)
    return leaks


def _embedding_leak(flow: D.DataFlow, fit: D.FitEvent) -> Optional[Leak]:
    """An embedding without ``transform`` (t-SNE, MDS) fitted on the test split whose output a
    model is scored or predicts on: the test rows are embedded by a fit of their own, which the
    model trained on the training rows' embedding never saw (a plot of it is fine)."""
    kind, split, via = flow.classify_fit(fit)
    if kind != D.TEST:
        return None
    if not any(use.what == "eval" and use.x_position for use in flow.sinks.get(fit.fid, [])):
        return None
    return Leak(fit, "embedded-test", split, via=via)


def _targetish(model: FileModel, fit: D.FitEvent) -> bool:
    texts = []
    if fit.data_node is not None:
        texts.append(model.code_of(fit.data_node))
    statement = fit.statement
    if isinstance(statement, cst.SimpleStatementLine):
        for small in statement.body:
            if isinstance(small, cst.Assign):
                texts.extend(model.code_of(t.target) for t in small.targets)
    return any(D.is_target_name(t) for t in texts)


# --- messages -------------------------------------------------------------------------------------


def _what(fit: D.FitEvent) -> str:
    cls = fit.cls
    if fit.kind == D.RESAMPLER:
        return "resampler"
    if cls.endswith("Scaler") or cls in ("scale", "minmax_scale", "maxabs_scale", "robust_scale", "QuantileTransformer", "PowerTransformer", "quantile_transform", "power_transform"):
        return "scaler"
    if "Encoder" in cls or "Binarizer" in cls or cls == "KBinsDiscretizer":
        return "encoder"
    if "Imputer" in cls:
        return "imputer"
    if cls.startswith("Select") or cls in ("RFE", "RFECV", "VarianceThreshold", "SequentialFeatureSelector", "BorutaPy", "GenericUnivariateSelect"):
        return "feature selector"
    if "Vectorizer" in cls or cls == "TfidfTransformer":
        return "vectorizer"
    if cls in ("PCA", "TruncatedSVD", "KernelPCA", "IncrementalPCA", "NMF", "FastICA"):
        return cls
    if cls == "Tokenizer":
        return "tokenizer"
    if cls in ("ColumnTransformer", "make_column_transformer", "Pipeline", "make_pipeline", "FeatureUnion", "make_union"):
        return "preprocessor"
    return "transformer"


def _line(model: FileModel, node: Optional[cst.CSTNode]) -> Optional[int]:
    if node is None:
        return None
    try:
        return model.position(node).start.line
    except Exception:  # a node from another tree
        return None


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _split_parts(split: Optional[D.SplitInfo]) -> Tuple[str, str]:
    if split is None:
        return "X_train", "X_test"
    train = split.names_of(D.TRAIN)
    test = split.names_of(D.TEST)
    return (train[0] if train else "X_train"), (test[0] if test else "X_test")


def _message(model: FileModel, leak: Leak) -> Tuple[str, str]:
    """The one-line message (what leaks, and where it was split) and the detail: the
    whole story with the code quoted and the fix for this case (JSON, SARIF, --show-source)."""
    detail = _base_message(model, leak)
    fit = leak.fit
    if leak.via is not None and _line(model, leak.via) and fit.data_node is not None:
        data = f"`{_short(model.code_of(fit.data_node))}`"
        via = f" (as passed by `{_short(model.code_of(leak.via), 40)}` on line {_line(model, leak.via)})"
        detail = detail.replace(data, data + via, 1)
    return _headline(model, leak), detail[:1].upper() + detail[1:] + "."


def _headline(model: FileModel, leak: Leak) -> str:
    fit = leak.fit
    what = _what(fit)
    data = f"`{_short(model.code_of(fit.data_node), 20)}`" if fit.data_node is not None else "the data"
    split = leak.split
    line = _line(model, split.node) if split is not None else None
    at = f" (line {line})" if line else ""
    if leak.kind == "embedded-test":
        return f"`{fit.cls}` embeds the test split by a fit of its own{at}, and a model is scored on that embedding"
    if leak.kind == "full":
        if fit.kind == D.RESAMPLER:
            return f"resampler applied to all of {data} before the split{at}: test rows leak into training"
        if split is not None and split.kind == "cv":
            return f"{what} fitted on {data}, then cross-validated{at}: test folds leak into the fit"
        if split is not None and split.kind == "validation_split":
            return f"{what} fitted on all of {data} before `fit(validation_split=...)` holds out validation rows: they leak"
        if split is not None and split.kind == "folds":
            return f"{what} fitted on {data} before the fold split{at}: test folds leak into the fit"
        return f"{what} fitted on {data} before the split{at}: test rows leak into the fit"
    if leak.kind == "concat":
        return f"{what} fitted on data that includes the test split{at}: test rows leak into the fit"
    if leak.kind == "applying-refit":
        method = fit.scope.rsplit(".", 1)[-1]
        learned = leak.learned.scope.rsplit(".", 1)[-1] if leak.learned is not None else "fit"
        return f"`{method}()` refits the {what} already fitted in `{learned}()`: it learns from the data it is handed (the test split)"
    if leak.kind in (D.TEST, D.VAL) and leak.via is not None and _line(model, leak.via):
        part = "test" if leak.kind == D.TEST else "validation"
        return f"{what} refitted on the {part} split when line {_line(model, leak.via)} calls it: fit it once, on training data"
    if leak.kind in (D.TEST, "paired"):
        if fit.kind == D.RESAMPLER:
            return f"test split resampled{at}: the score no longer measures the real test data"
        return f"{what} fitted on the test split{at}: fit on the training split, only transform this one"
    if leak.kind == D.VAL:
        return f"{what} fitted on the validation split{at}: fit on the training split, only transform this one"
    if leak.kind == "model-test":
        return f"model trained on the test split{at}: keep the test split for evaluation only"
    evaluation = leak.evaluation
    eval_line = _line(model, evaluation.node) if evaluation is not None else None
    scored = f" then scored on line {eval_line}" if eval_line else " then scored"
    return f"model trained on all of {data} (test split included),{scored}: on rows it has seen"


def _base_message(model: FileModel, leak: Leak) -> str:
    fit = leak.fit
    call = _short(model.code_of(fit.node))
    data = _short(model.code_of(fit.data_node)) if fit.data_node is not None else "the data"
    split = leak.split
    where = f" on line {_line(model, split.node)}" if split is not None and _line(model, split.node) else ""
    if where and split.scope != fit.scope and split.scope != "<module>":
        where += f" (in `{split.scope}`)"
    origin = f" (split off on line {_line(model, split.node)})" if where else ""
    if leak.kind == "embedded-test":
        return (
            f"`{call}` fits `{fit.cls}` on the test split `{data}`{origin} on its own, and a model then predicts or is "
            f"scored on that embedding: the test rows are placed by a fit the model trained on the training rows' "
            f"embedding never saw, so the score measures nothing. `{fit.cls}` has no `transform`; embed with a "
            f"transformer fitted on the training split only (PCA, UMAP) and transform the test split"
        )
    label = f" ({_short(split.label, 50)})" if split is not None and split.label else ""
    if label.count("`") % 2:
        label = label[:-1] + "`)"
    receiver = fit.receiver if fit.receiver and re.fullmatch(r"[\w.]+", fit.receiver) else _what(fit).replace(" ", "_")
    train, test = _split_parts(split)
    what = _what(fit)
    if leak.kind == "full":
        if fit.kind == D.RESAMPLER:
            return (
                f"`{call}` resamples all of `{data}` before it is split{where}{label}: samples made from test rows "
                f"end up in training and the test split is resampled too; resample only the training split, after "
                f"the split: `{receiver}.fit_resample({train}, ...)`"
            )
        if split is not None and split.kind == "cv":
            return (
                f"`{call}` fits the {what} on all of `{data}`, which is then cross-validated{where}{label}: every "
                f"fold's test rows were seen by the fit; put the {what} and the model in one pipeline "
                f"(`make_pipeline({fit.cls or what}(...), model)`) and cross-validate that on `{data}`"
            )
        if split is not None and split.kind == "validation_split":
            return (
                f"`{call}` fits the {what} on all of `{data}`, whose last rows Keras holds out for validation{where} "
                f"(`validation_split`): the validation rows leak into the fit; split off the validation data first "
                f"(`train_test_split`), fit the {what} on the training part and pass `validation_data=...`"
            )
        if split is not None and split.kind == "folds":
            return (
                f"`{call}` fits the {what} on all of `{data}`, which is split into folds{where}{label}: every fold's "
                f"test rows were seen by the fit; fit it inside the loop on the training fold only, or use a pipeline"
            )
        if fit.method == "fit_on_texts":
            advice = f"`{receiver}.fit_on_texts({train})`, then `texts_to_sequences` on each split"
        else:
            advice = f"`{receiver}.fit_transform({train})` / `{receiver}.transform({test})`"
        return (
            f"`{call}` fits the {what} on all of `{data}`, which is split into train and test{where}{label}: the "
            f"test rows leak into the fit; fit the {what} on the training split only: move it after the split and "
            f"use {advice}"
        )
    if leak.kind == "concat":
        return (
            f"`{call}` fits the {what} on data that includes the test split{origin}: fit it on the training "
            f"split only and use `{receiver}.transform(...)` on the test split"
        )
    if leak.kind == "applying-refit":
        method = fit.scope.rsplit(".", 1)[-1]
        learned = leak.learned.scope.rsplit(".", 1)[-1] if leak.learned is not None else "fit"
        return (
            f"`{call}` in `{fit.scope}` refits the {what} on `{data}`, the data `{method}()` is handed: once "
            f"`{learned}()` has learned from the training split, `{method}(X_test)` fits the test split again; use "
            f"`{receiver}.transform({data})` here and fit only in `{learned}()`"
        )
    if leak.kind in (D.TEST, D.VAL) and leak.via is not None and _line(model, leak.via):
        part = "test" if leak.kind == D.TEST else "validation"
        return (
            f"`{call}` fits the {what} on the {part} split when `{_short(model.code_of(leak.via), 40)}` (line "
            f"{_line(model, leak.via)}) calls it: fit the {what} once, on the training split, and only transform "
            f"the {part} split"
        )
    if leak.kind in (D.TEST, "paired"):
        if fit.kind == D.RESAMPLER:
            return (
                f"`{call}` resamples the test split{origin}: evaluate on the test data as it is and resample only "
                f"the training split"
            )
        return (
            f"`{call}` fits the {what} on the test split{origin}: use `{receiver}.transform({data})` with the "
            f"{what} fitted on the training split"
        )
    if leak.kind == D.VAL:
        return (
            f"`{call}` fits the {what} on the validation split{origin}: use `{receiver}.transform({data})` with the "
            f"{what} fitted on the training split"
        )
    if leak.kind == "model-test":
        return (
            f"`{call}` trains the model on the test split{origin}: train on the training split and keep the test "
            f"split for evaluation"
        )
    evaluation = leak.evaluation
    eval_line = _line(model, evaluation.node) if evaluation is not None else None
    eval_text = _short(model.code_of(evaluation.node)) if evaluation is not None else "the test split"
    return (
        f"`{call}` trains on all of `{data}`, including the test split{origin}, and the model is then evaluated by "
        f"`{eval_text}` on line {eval_line}: it is scored on rows it was trained on; evaluate a model fitted on "
        f"the training split (refit on all the data only after the evaluation)"
    )


# --- fixes ------------------------------------------------------------------------------------------


def _names_in(node: cst.CSTNode) -> List[cst.Name]:
    found: List[cst.Name] = []

    class Finder(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name)

        def visit_Attribute(self, attr: cst.Attribute) -> bool:
            tree_visit(attr.value, self)
            return False

    tree_visit(node, Finder())
    return found


def _bound_names(statements) -> Set[str]:
    bound: Set[str] = set()

    class Finder(cst.CSTVisitor):
        def _target(self, target: cst.BaseExpression) -> None:
            for element in target_names(target, dotted):
                bound.add(element.split(".")[0].split("[")[0])
            if isinstance(target, cst.Subscript):
                base = dotted(target.value)
                if base:
                    bound.add(base.split(".")[0])

        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                self._target(target.target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self._target(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            self._target(node.target)

        def visit_For(self, node: cst.For) -> None:
            self._target(node.target)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            self._target(node.target)

    for statement in statements:
        tree_visit(statement, Finder())
    return bound


def _uses(statements, name: str) -> int:
    return sum(1 for statement in statements for n in _names_in(statement) if n.value == name)


def _fresh_name(model: FileModel, cls: str, what: str) -> str:
    base = {
        "scaler": "scaler", "encoder": "encoder", "imputer": "imputer", "feature selector": "selector",
        "vectorizer": "vectorizer", "preprocessor": "preprocessor",
    }.get(what)
    if base is None:
        base = re.sub(r"(?<!^)(?=[A-Z][a-z])", "_", cls).lower() or "transformer"
    taken = {n.value for n in _names_in(model.module)}
    name, index = base, 2
    while name in taken:
        name, index = f"{base}_{index}", index + 1
    return name


def _statement(code: str) -> Optional[cst.BaseStatement]:
    try:
        return cst.parse_statement(code)
    except Exception:
        return None


def _simple_fit(fit: D.FitEvent):
    """(statement, assigned names, receiver expression, positional args) of a fit written as
    ``T = recv.fit_transform(D[, y])`` / ``T, Ty = recv.fit_resample(D, y)``, else None."""
    statement = fit.statement
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    assign = statement.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or assign.value is not fit.node:
        return None
    call = fit.node
    if not isinstance(call.func, cst.Attribute) or any(a.keyword is not None or a.star for a in call.args):
        return None
    target = assign.targets[0].target
    if fit.method == "fit_transform" and isinstance(target, cst.Name) and 1 <= len(call.args) <= 2:
        names = [target.value]
    elif fit.method == "fit_resample" and isinstance(target, (cst.Tuple, cst.List)) and len(call.args) == 2:
        if len(target.elements) != 2 or not all(isinstance(e.value, cst.Name) for e in target.elements):
            return None
        names = [e.value.value for e in target.elements]
    else:
        return None
    receiver = call.func.value
    if not isinstance(receiver, (cst.Name, cst.Call)):
        return None
    return statement, names, receiver, [a.value for a in call.args]


def _two_step_fit(model: FileModel, fit: D.FitEvent, body) -> Optional[Tuple[List[int], List[str], cst.Name, list]]:
    """``recv.fit(D)`` followed in the same block by ``T = recv.transform(D)``: (indices of the
    two statements, [T], recv, [D]), else None."""
    statement = fit.statement
    call = fit.node
    if fit.method != "fit" or not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    expr = statement.body[0]
    if not isinstance(expr, cst.Expr) or expr.value is not call or not isinstance(call.func, cst.Attribute):
        return None
    receiver = call.func.value
    if not isinstance(receiver, cst.Name) or len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return None
    i = _block_index(type("B", (), {"body": body})(), statement)
    if i is None:
        return None
    data_text = model.code_of(call.args[0].value)
    for k in range(i + 1, len(body)):
        item = body[k]
        if isinstance(item, cst.SimpleStatementLine) and len(item.body) == 1 and isinstance(item.body[0], cst.Assign):
            assign = item.body[0]
            value = assign.value
            if (
                len(assign.targets) == 1
                and isinstance(assign.targets[0].target, cst.Name)
                and isinstance(value, cst.Call)
                and isinstance(value.func, cst.Attribute)
                and value.func.attr.value == "transform"
                and isinstance(value.func.value, cst.Name)
                and value.func.value.value == receiver.value
                and len(value.args) == 1
                and model.code_of(value.args[0].value) == data_text
            ):
                if _uses(body[i + 1:k], receiver.value) or _bound_names(body[i + 1:k]) & {n.value for n in _names_in(call.args[0].value)}:
                    return None
                return [i, k], [assign.targets[0].target.value], receiver, [call.args[0].value]
        if _uses([item], receiver.value):
            return None
    return None


def _block_index(block, statement) -> Optional[int]:
    body = getattr(block, "body", None)
    if not isinstance(body, (list, tuple)):
        return None
    for index, item in enumerate(body):
        if item is statement:
            return index
    return None


def _fix_split_first(model: FileModel, leak: Leak) -> Optional[Fix]:
    """``T = r.fit_transform(D)`` ... ``a, b, c, d = train_test_split(T, y)`` in one block:
    split ``D`` first, then fit on the training part and transform the test part."""
    fit, split = leak.fit, leak.split
    if split is None or split.kind != "train_test_split":
        return None
    block = fit.block
    if not isinstance(block, (cst.IndentedBlock, cst.Module)):
        return None
    if isinstance(block, cst.IndentedBlock) and not any(f.node.body is block for f in model.functions.values()):
        return None  # only a module's or a function's own body: later uses are all visible
    body = list(block.body)
    method = fit.method
    simple = _simple_fit(fit)
    if simple is not None:
        statement, names, receiver, args = simple
        i = _block_index(block, statement)
        if i is None:
            return None
        removed = [i]
    else:
        two_step = _two_step_fit(model, fit, body)
        if two_step is None:
            return None
        removed, names, receiver, args = two_step
        statement = body[removed[0]]
        i = removed[-1]
        method = "fit_transform"
    split_call = split.node
    j = None
    for index in range(i + 1, len(body)):
        item = body[index]
        if isinstance(item, cst.SimpleStatementLine) and len(item.body) == 1 and isinstance(item.body[0], cst.Assign):
            if item.body[0].value is split_call:
                j = index
                break
    if j is None:
        return None
    assign = body[j].body[0]
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, (cst.Tuple, cst.List)):
        return None
    targets = assign.targets[0].target.elements
    arrays = [a for a in split_call.args if a.keyword is None and not a.star]
    if len(targets) != 2 * len(arrays) or not all(isinstance(t.value, cst.Name) for t in targets):
        return None
    target_names = [t.value.value for t in targets]
    array_names = [a.value.value if isinstance(a.value, cst.Name) else None for a in arrays]
    # the fitted output(s) must be split right there and used nowhere else afterwards
    positions = []
    for name in names:
        if name not in array_names or _uses(body[i + 1:j] + body[j + 1:], name):
            return None
        positions.append(array_names.index(name))
    between = body[i + 1:j]
    data = args[0]
    if _bound_names(between) & {n.value for n in _names_in(data)}:
        return None
    label = args[1] if len(args) > 1 else None
    if label is not None and method == "fit_transform":
        if not isinstance(label, cst.Name) or label.value not in array_names or label.value in _bound_names(between):
            return None
    if isinstance(receiver, cst.Name) and (_uses(between, receiver.value) or receiver.value in _bound_names(body[j + 1:])):
        return None
    # build the new statements
    replacements = {0: data}
    if method == "fit_resample":
        if positions[0] != 0 or len(positions) != 2:
            return None
        replacements = {positions[0]: args[0], positions[1]: args[1]}
    elif positions[0] != 0:
        return None
    originals = {names[k]: replacements[positions[k]] for k in range(len(names))}
    new_split = assign.with_changes(value=split_call.with_changes(args=[_rename(a, originals) for a in split_call.args]))
    new_split_line = body[j].with_changes(body=[new_split])
    code = model.code_of
    prelude = []
    if isinstance(receiver, cst.Call):
        name = _fresh_name(model, fit.cls, _what(fit))
        prelude.append(f"{name} = {code(receiver)}\n")
    else:
        name = receiver.value
    x_train, x_test = target_names[0], target_names[1]
    if method == "fit_resample":
        y_pos = positions[1]
        y_train = target_names[2 * y_pos]
        lines = prelude + [f"{x_train}, {y_train} = {name}.fit_resample({x_train}, {y_train})\n"]
        description = f"Resample only the training split, after `{code(split_call.func)}`"
    else:
        extra = ""
        if label is not None:
            extra = f", {target_names[2 * array_names.index(label.value)]}"
        lines = prelude + [
            f"{x_train} = {name}.fit_transform({x_train}{extra})\n",
            f"{x_test} = {name}.transform({x_test})\n",
        ]
        description = f"Split first, then fit `{name}` on `{x_train}` and transform `{x_test}`"
    new_statements = [_statement(line) for line in lines]
    if any(s is None for s in new_statements):
        return None
    new_statements[0] = new_statements[0].with_changes(leading_lines=statement.leading_lines)
    kept = [item for index, item in enumerate(body[:j]) if index not in removed]
    new_body = kept + [new_split_line] + new_statements + body[j + 1:]
    return model.fix_replacing(block, block.with_changes(body=new_body), Applicability.UNSAFE, description)


def _rename(node, mapping):
    """``node`` with every Name in ``mapping`` replaced by the mapped expression."""

    class Renamer(cst.CSTTransformer):
        def leave_Name(self, original: cst.Name, updated: cst.Name):
            return mapping.get(original.value, updated)

        def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
            return updated.with_changes(attr=original.attr)

        def leave_Arg(self, original: cst.Arg, updated: cst.Arg):
            return updated.with_changes(keyword=original.keyword)

    return node.visit(Renamer())


def _fix_pipeline(model: FileModel, leak: Leak) -> Optional[Fix]:
    """``T = r.fit_transform(D)`` ... ``cross_val_score(est, T, y)``: cross-validate
    ``make_pipeline(r, est)`` on ``D`` instead."""
    fit, split = leak.fit, leak.split
    if split is None or split.kind != "cv" or not isinstance(split.node, cst.Call):
        return None
    simple = _simple_fit(fit)
    if simple is None or fit.method != "fit_transform":
        return None
    statement, names, receiver, args = simple
    block = fit.block
    if not isinstance(block, (cst.IndentedBlock, cst.Module)):
        return None
    if isinstance(block, cst.IndentedBlock) and not any(f.node.body is block for f in model.functions.values()):
        return None
    i = _block_index(block, statement)
    if i is None:
        return None
    body = list(block.body)
    cv_call = split.node
    j = None
    for index in range(i + 1, len(body)):
        if any(node is cv_call for node in _calls_in(body[index])):
            j = index
            break
    if j is None or not isinstance(body[j], cst.SimpleStatementLine):
        return None
    positional = [a for a in cv_call.args if a.keyword is None and not a.star]
    if len(positional) < 2 or not isinstance(positional[1].value, cst.Name) or positional[1].value.value != names[0]:
        return None
    if _uses(body[i + 1:], names[0]) != 1:
        return None
    between = body[i + 1:j]
    data = args[0]
    if _bound_names(between) & {n.value for n in _names_in(data)}:
        return None
    if isinstance(receiver, cst.Name) and _uses(body[i + 1:], receiver.value):
        return None  # the transformer is used again later: it must stay fitted
    pipeline_name = "make_pipeline"
    qualified = model.imports.qualify(pipeline_name)
    needs_import = qualified != "sklearn.pipeline.make_pipeline"
    if needs_import and (qualified != pipeline_name or pipeline_name in {n.value for n in _names_in(model.module)}):
        return None
    estimator = positional[0]
    new_estimator = cst.parse_expression(f"make_pipeline({model.code_of(receiver)}, {model.code_of(estimator.value)})")
    new_args = []
    for arg in cv_call.args:
        if arg is estimator:
            new_args.append(arg.with_changes(value=new_estimator))
        elif arg is positional[1]:
            new_args.append(arg.with_changes(value=data))
        else:
            new_args.append(arg)
    new_line = body[j].deep_replace(cv_call, cv_call.with_changes(args=new_args))
    new_body = body[:i] + body[i + 1:j] + [new_line] + body[j + 1:]
    if statement.leading_lines:  # blank lines and comments above the removed statement stay where they were
        follower = new_body[i]
        new_body[i] = follower.with_changes(leading_lines=tuple(statement.leading_lines) + tuple(follower.leading_lines))
    new_block = block.with_changes(body=new_body)
    module = model.module if isinstance(block, cst.Module) else None
    new_module = new_block if module is not None else model.replaced(block, new_block)
    if needs_import:
        new_module = _add_import(new_module, "from sklearn.pipeline import make_pipeline\n")
        if new_module is None:
            return None
    description = f"Cross-validate `make_pipeline({_short(model.code_of(receiver), 30)}, ...)` on `{model.code_of(data)}`"
    return model.fix_replacing(model.module, new_module, Applicability.UNSAFE, description)


def _calls_in(node: cst.CSTNode) -> List[cst.Call]:
    found: List[cst.Call] = []

    class Finder(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            found.append(call)

    tree_visit(node, Finder())
    return found


def _add_import(module: cst.Module, line: str) -> Optional[cst.Module]:
    statement = _statement(line)
    if statement is None:
        return None
    body = list(module.body)
    last_import = -1
    for index, item in enumerate(body):
        if isinstance(item, cst.SimpleStatementLine) and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in item.body):
            last_import = index
        elif index == 0 and isinstance(item, cst.SimpleStatementLine) and isinstance(item.body[0], cst.Expr):
            continue  # docstring
        elif last_import >= 0:
            break
    body.insert(last_import + 1, statement)
    return module.with_changes(body=body)


def _fix_transform(model: FileModel, leak: Leak) -> Optional[Fix]:
    """``t.fit_transform(X_test)`` after ``t`` was fitted on the training split: ``t.transform(X_test)``."""
    fit = leak.fit
    if fit.method != "fit_transform" or fit.kind != D.TRANSFORMER or not isinstance(fit.node.func, cst.Attribute):
        return None
    previous = fit.previous
    if previous is None or not previous.is_transformer or previous.scope != fit.scope:
        return None
    flow = D.dataflow_of(model)
    if leak.kind != "paired":
        kind, _ = flow.classify(previous.rows)
        if kind is not None or not any(flow.steps(row) for row in previous.rows):
            return None
    if not isinstance(fit.node.func.value, cst.Name):
        return None
    call = fit.node
    args = [a for a in call.args if a.keyword is None and not a.star]
    if not args:
        return None
    new_call = call.with_changes(
        func=call.func.with_changes(attr=cst.Name("transform")),
        args=[args[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)],
    )
    return model.fix_replacing(call, new_call, Applicability.UNSAFE, f"Use `{call.func.value.value}.transform(...)` on the test split")


def _fix_applying_refit(model: FileModel, leak: Leak) -> Optional[Fix]:
    """``self.t.fit_transform(X)`` in ``transform``/``predict``: ``self.t.transform(X)``."""
    fit = leak.fit
    call = fit.node
    if fit.method != "fit_transform" or not isinstance(call.func, cst.Attribute):
        return None
    args = [a for a in call.args if a.keyword is None and not a.star]
    if len(args) != 1 or len(call.args) != 1:
        return None  # a label or keyword arguments: transform takes none
    new_call = call.with_changes(func=call.func.with_changes(attr=cst.Name("transform")))
    return model.fix_replacing(call, new_call, Applicability.UNSAFE, f"Use `{fit.receiver}.transform(...)`: fit only in `fit`")


def _fix(model: FileModel, leak: Leak) -> Optional[Fix]:
    try:
        if leak.kind == "full":
            return _fix_split_first(model, leak) or _fix_pipeline(model, leak)
        if leak.kind in (D.TEST, "paired", D.VAL):
            return _fix_transform(model, leak)
        if leak.kind == "applying-refit":
            return _fix_applying_refit(model, leak)
    except Exception:  # a fix is a convenience: never let it break linting
        return None
    return None


def check(model: FileModel) -> Iterable[Finding]:
    reported = set()
    for leak in find_leaks(model):
        node = leak.fit.node
        if id(node) in reported:
            continue
        reported.add(id(node))
        message, detail = _message(model, leak)
        yield model.finding(node, CODE, NAME, message, _fix(model, leak), detail)


# ---------------------------------------------------------------------------------------
# Examples (collected by the test suite). INVALID examples carry the expected unsafe fix.


VALID = [
    # t-SNE of the test split for a plot: no model is scored on it
    """
from sklearn.manifold import TSNE
from sklearn.model_selection import train_test_split
import matplotlib.pyplot as plt

X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=1)
clf.fit(X_train, y_train)
plt.scatter(*TSNE().fit_transform(X_test).T, c=clf.predict(X_test))
""",
    # a union of transformers of this file whose fit stores nothing (``return self``): fitting it
    # on the test split learns nothing from it
    """
import numpy as np
from sklearn.pipeline import FeatureUnion
from sklearn.model_selection import train_test_split


class Conv:
    def __init__(self, kernel):
        self.kernel = kernel

    def fit(self, x, y=None):
        return self

    def transform(self, x):
        return x * self.kernel


X, y = np.random.rand(100, 4), np.random.rand(100)
x_train, x_test, y_train, y_test = train_test_split(X, y)
union = FeatureUnion([(str(k), Conv(k)) for k in (1, 2)])
a = union.fit_transform(x_train)
b = union.fit_transform(x_test)
""",
    # split first, fit on the training split, transform the test split
    """
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0)
    scaler = StandardScaler()
    X_train = scaler.fit_transform(X_train)
    X_test = scaler.transform(X_test)
    model.fit(X_train, y_train)
    print(model.score(X_test, y_test))
    """,
    # a pipeline handed to cross-validation: each fold fits the selector on its own training part
    """
    from sklearn.feature_selection import SelectKBest, f_classif
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    pipe = make_pipeline(SelectKBest(f_classif, k=20), LogisticRegression(max_iter=1000))
    cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    scores = cross_val_score(pipe, X, y, cv=cv)
    print(f"accuracy {scores.mean():.3f}")
    """,
    # label encoding of the target on all labels: it only learns the class names
    """
    from sklearn.preprocessing import LabelEncoder
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.model_selection import train_test_split
    texts = df["clean_text"].values
    labels = LabelEncoder().fit_transform(df["category"].values)
    X_train, X_test, y_train, y_test = train_test_split(texts, labels, test_size=0.2, stratify=labels)
    vectorizer = TfidfVectorizer(max_features=5000)
    X_train_tfidf = vectorizer.fit_transform(X_train)
    X_test_tfidf = vectorizer.transform(X_test)
    clf.fit(X_train_tfidf, y_train)
    """,
    # PCA on everything for a plot; the model itself is a pipeline fitted on the training split
    """
    import matplotlib.pyplot as plt
    from sklearn.decomposition import PCA
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC
    coords = PCA(n_components=2).fit_transform(X)
    plt.scatter(coords[:, 0], coords[:, 1], c=y)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=42)
    clf = make_pipeline(StandardScaler(), SVC())
    clf.fit(X_train, y_train)
    print(clf.score(X_test, y_test))
    """,
    # a manual k-fold loop that fits the preprocessing inside each fold
    """
    from sklearn.decomposition import PCA
    from sklearn.model_selection import KFold
    kf = KFold(n_splits=5, shuffle=True, random_state=0)
    for fold, (train_idx, val_idx) in enumerate(kf.split(X)):
        X_tr, X_va = X[train_idx], X[val_idx]
        y_tr, y_va = y[train_idx], y[val_idx]
        pca = PCA(n_components=10).fit(X_tr)
        clf.fit(pca.transform(X_tr), y_tr)
        print(fold, clf.score(pca.transform(X_va), y_va))
    """,
    # test held out first; the scaler is refitted on train+validation for the final model
    """
    import numpy as np
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    X_dev, X_test, y_dev, y_test = train_test_split(X, y, test_size=0.2, random_state=1)
    X_tr, X_val, y_tr, y_val = train_test_split(X_dev, y_dev, test_size=0.25, random_state=1)
    scaler = StandardScaler().fit(X_tr)
    model.fit(scaler.transform(X_tr), y_tr)
    print("val", model.score(scaler.transform(X_val), y_val))
    scaler = StandardScaler().fit(np.concatenate([X_tr, X_val]))
    final_model.fit(scaler.transform(X_dev), y_dev)
    print("test", final_model.score(scaler.transform(X_test), y_test))
    """,
    # evaluated first, then refitted on all the data for deployment
    """
    import joblib
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import train_test_split
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
    forest = RandomForestClassifier(n_estimators=300)
    forest.fit(X_train, y_train)
    print("held-out accuracy", forest.score(X_test, y_test))
    forest.fit(X, y)
    joblib.dump(forest, "forest.joblib")
    """,
    # a calibrator fitted on a held-out calibration split is the point of prefit calibration
    """
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.model_selection import train_test_split
    X_train, X_calib, y_train, y_calib = train_test_split(X, y, test_size=0.3, random_state=0)
    base.fit(X_train, y_train)
    calibrated = CalibratedClassifierCV(base, cv="prefit")
    calibrated.fit(X_calib, y_calib)
    """,
    # a helper receiving the data as a parameter: no split in sight, nothing to say
    """
    from sklearn.preprocessing import MinMaxScaler

    def scale_features(frame, columns):
        scaler = MinMaxScaler()
        frame[columns] = scaler.fit_transform(frame[columns])
        return frame, scaler
    """,
    # competition data: the test file is not a split of the training data
    """
    import pandas as pd
    from sklearn.preprocessing import StandardScaler
    train = pd.read_csv("train.csv")
    test = pd.read_csv("test.csv")
    scaler = StandardScaler()
    X = scaler.fit_transform(train[FEATURES])
    X_submit = scaler.transform(test[FEATURES])
    model.fit(X, train["target"])
    submission = model.predict(X_submit)
    """,
    # stratified shuffle split, a preprocessing pipeline fitted on the training set, CV on it
    """
    from sklearn.model_selection import StratifiedShuffleSplit, cross_val_score
    split = StratifiedShuffleSplit(n_splits=1, test_size=0.2, random_state=42)
    for train_index, test_index in split.split(housing, housing["income_cat"]):
        strat_train_set = housing.loc[train_index]
        strat_test_set = housing.loc[test_index]
    housing = strat_train_set.drop("median_house_value", axis=1)
    housing_labels = strat_train_set["median_house_value"].copy()
    housing_prepared = full_pipeline.fit_transform(housing)
    lin_reg.fit(housing_prepared, housing_labels)
    scores = cross_val_score(lin_reg, housing_prepared, housing_labels, cv=10)
    X_test = strat_test_set.drop("median_house_value", axis=1)
    X_test_prepared = full_pipeline.transform(X_test)
    final_predictions = lin_reg.predict(X_test_prepared)
    """,
    # time series: the scaler learns from the training window only, then scales the whole series
    """
    from sklearn.preprocessing import StandardScaler
    n_train = int(len(series) * 0.8)
    scaler = StandardScaler()
    scaler.fit(series[:n_train])
    scaled = scaler.transform(series)
    train, test = scaled[:n_train], scaled[n_train:]
    model.fit(make_windows(train))
    forecast = model.predict(make_windows(test))
    """,
    # the target column is label-encoded in the frame and then dropped from the features
    """
    import pandas as pd
    from sklearn.preprocessing import LabelEncoder, StandardScaler
    from sklearn.model_selection import train_test_split
    df = pd.read_csv("iris.csv")
    df["species"] = LabelEncoder().fit_transform(df["species"])
    X = df.drop(columns=["species"])
    y = df["species"]
    X_train, X_test, y_train, y_test = train_test_split(X, y, stratify=y)
    sc = StandardScaler()
    X_train = sc.fit_transform(X_train)
    X_test = sc.transform(X_test)
    knn.fit(X_train, y_train)
    """,
    # the split made here is train/validation; the test data comes from its own file:
    # refitting on train + validation for the final model is fine
    """
    import numpy as np
    import pandas as pd
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    X_test = pd.read_csv("test_features.csv")
    X_train, X_val, y_train, y_val = train_test_split(X, y, test_size=0.2, random_state=0)
    scaler = StandardScaler().fit(X_train)
    model.fit(scaler.transform(X_train), y_train)
    print("validation", model.score(scaler.transform(X_val), y_val))
    scaler = StandardScaler().fit(np.concatenate([X_train, X_val]))
    model.fit(scaler.transform(np.concatenate([X_train, X_val])), np.concatenate([y_train, y_val]))
    predictions = model.predict(scaler.transform(X_test))
    """,
    # the head of the training data is the validation set: the names say which slice is which
    """
    from tensorflow import keras
    from sklearn.preprocessing import StandardScaler
    (X_train_full, y_train_full), (X_test, y_test) = keras.datasets.fashion_mnist.load_data()
    X_valid, X_train = X_train_full[:5000] / 255.0, X_train_full[5000:] / 255.0
    y_valid, y_train = y_train_full[:5000], y_train_full[5000:]
    scaler = StandardScaler()
    X_train_scaled = scaler.fit_transform(X_train.reshape(-1, 784))
    X_valid_scaled = scaler.transform(X_valid.reshape(-1, 784))
    model.fit(X_train_scaled, y_train, epochs=30, validation_data=(X_valid_scaled, y_valid))
    model.evaluate(scaler.transform(X_test.reshape(-1, 784)), y_test)
    """,
    # grid search on the scaled training split (the test split stays out)
    """
    from sklearn.model_selection import GridSearchCV, train_test_split
    from sklearn.preprocessing import RobustScaler
    from sklearn.svm import SVC
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=7)
    scaler = RobustScaler()
    X_train = scaler.fit_transform(X_train)
    X_test = scaler.transform(X_test)
    search = GridSearchCV(SVC(), {"C": [0.1, 1, 10]}, cv=5)
    search.fit(X_train, y_train)
    print(search.best_params_, search.score(X_test, y_test))
    """,
    # a second, separate scaler fitted on the test split only to draw it: no score depends on it
    """
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import MinMaxScaler
    import matplotlib.pyplot as plt
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2)
    scaler = MinMaxScaler().fit(X_train)
    model.fit(scaler.transform(X_train), y_train)
    print(model.score(scaler.transform(X_test), y_test))
    shown = MinMaxScaler().fit_transform(X_test)
    plt.imshow(shown)
    """,
    # only one key of a dict that happens to be called "train": nothing is held out in sight
    """
    from sklearn.preprocessing import StandardScaler
    cfg = load_config()
    block = frames["train"]
    scaled = StandardScaler().fit_transform(block)
    model.fit(scaled, labels)
    """,
    # index arrays named for their parts, the scaler fitted on the training rows only
    """
    from sklearn.preprocessing import StandardScaler
    train_idx, test_idx = load_indices()
    sc = StandardScaler().fit(X[train_idx])
    clf.fit(sc.transform(X[train_idx]), y[train_idx])
    print(clf.score(sc.transform(X[test_idx]), y[test_idx]))
    """,
    # a mask in a name that is not a split (outlier removal): fitting on the kept rows is fine
    """
    from sklearn.preprocessing import StandardScaler
    keep = df.amount < 10000
    clean = df[keep]
    sc = StandardScaler().fit(clean[cols])
    clf.fit(sc.transform(clean[cols]), clean.y)
    """,
    # a helper applied to each training fold only
    """
    from sklearn.preprocessing import StandardScaler
    from sklearn.model_selection import train_test_split

    def standardize(column):
        return StandardScaler().fit_transform(column.to_frame()).ravel()

    tr, te = train_test_split(frame, test_size=0.2)
    tr_scaled = tr[cols].apply(standardize)
    model.fit(tr_scaled, tr.y)
    """,
    # the same class, but the split is taken before the scaling (which then only the caller sees)
    """
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    class Tabular:
        def __init__(self, frame):
            self.features = frame.drop(columns="y").values
            self.labels = frame["y"].values

        def normalise(self):
            self.features = StandardScaler().fit_transform(self.features)

        def make_splits(self):
            self.f_train, self.f_test, self.l_train, self.l_test = train_test_split(self.features, self.labels)

    ds = Tabular(frame)
    ds.make_splits()
    ds.normalise()
    """,
    # a name reused for test data much later does not reach back: the earlier fit saw other data
    """
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    X, y = load_training_table()
    scaler = StandardScaler().fit(X)
    final = model.fit(scaler.transform(X), y)
    P_train, P_test, q_train, q_test = train_test_split(other, q)
    probe.fit(P_train, q_train)
    X = P_test
    print(probe.score(X, q_test))
    """,
    # a 2-D view of a sample drawn after the split, only plotted: the plotting helper's scaler and
    # its per-class masks (``X[y == c]``) split nothing
    """
    import matplotlib.pyplot as plt
    from sklearn.decomposition import PCA
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import MinMaxScaler

    def draw(points, groups):
        unit = MinMaxScaler().fit_transform(points)
        for g in sorted(set(groups)):
            plt.scatter(unit[groups == g, 0], unit[groups == g, 1])

    X_train, X_test, y_train, y_test = train_test_split(table, target)
    model.fit(X_train, y_train)
    print(model.score(X_test, y_test))
    subset = table[chosen]
    draw(PCA(n_components=2).fit_transform(subset), target[chosen])
    """,
    # t-SNE and MDS have no transform: their embedding cannot carry fitted statistics to other rows
    """
    import numpy as np
    from sklearn.decomposition import PCA
    from sklearn.manifold import MDS, TSNE
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    flat = TSNE(n_components=2).fit_transform(table)
    layout = make_pipeline(PCA(n_components=30), MDS(n_components=2)).fit_transform(table)
    X_train, X_test, y_train, y_test = train_test_split(np.hstack([flat, layout]), target)
    model.fit(X_train, y_train)
    print(model.score(X_test, y_test))
    """,
    # a date split by label, the scaler fitted on the early part; s[:-1]/s[1:] is a lagged pair
    """
    from sklearn.preprocessing import StandardScaler
    early = series.loc[:boundary_day]
    late = series.loc[boundary_day:]
    scaler = StandardScaler()
    early_s = scaler.fit_transform(early)
    late_s = scaler.transform(late)
    regressor.fit(early_s[:-1], early_s[1:])
    print(regressor.score(late_s[:-1], late_s[1:]))
    """,
    # lagged inputs and targets of one scaled series: a shift, not a train/test split
    """
    from sklearn.preprocessing import MinMaxScaler
    levels = MinMaxScaler().fit_transform(readings)
    past, future = levels[:-horizon], levels[horizon:]
    forecaster.fit(past, future)
    """,
    # an encoder told its categories learns nothing from the rows it is fitted on
    """
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import OrdinalEncoder
    sizes = OrdinalEncoder(categories=[["S", "M", "L", "XL"]]).fit_transform(shop[["size"]])
    X_train, X_test, y_train, y_test = train_test_split(sizes, shop["returned"])
    model.fit(X_train, y_train)
    print(model.score(X_test, y_test))
    """,
    # permutation importance of a model fitted on the training split, computed on the test split
    """
    from eli5.sklearn import PermutationImportance
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.inspection import permutation_importance
    from sklearn.model_selection import train_test_split
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=3)
    booster = GradientBoostingClassifier().fit(X_train, y_train)
    importances = PermutationImportance(booster, random_state=3).fit(X_test, y_test)
    result = permutation_importance(booster, X_test, y_test, n_repeats=10)
    """,
    # a wrapper class that learns its scaling in fit and only applies it in predict
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    class ScaledClassifier:
        def __init__(self):
            self.scaler = StandardScaler()
            self.clf = LogisticRegression()

        def fit(self, X, y):
            self.clf.fit(self.scaler.fit_transform(X), y)
            return self

        def predict(self, X):
            return self.clf.predict(self.scaler.transform(X))
    """,
    # transform refits on a reference set the object keeps, never on the data it is handed
    """
    from sklearn.preprocessing import StandardScaler

    class ReferenceScaler:
        def __init__(self, reference):
            self.reference = reference
            self.scaler = StandardScaler()

        def fit(self, X, y=None):
            self.scaler.fit(self.reference)
            return self

        def transform(self, X):
            self.scaler.fit(self.reference)
            return self.scaler.transform(X)
    """,
    # groups split first; the scaler learns from the training groups' rows only
    """
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    train_ids, test_ids = train_test_split(frame["patient"].unique(), test_size=0.25)
    train = frame[frame["patient"].isin(train_ids)]
    test = frame[frame["patient"].isin(test_ids)]
    scaler = StandardScaler().fit(train[COLS])
    model.fit(scaler.transform(train[COLS]), train["y"])
    print(model.score(scaler.transform(test[COLS]), test["y"]))
    """,
    # a helper named for splitting that is handed the two parts: not one split of the scaler's data
    """
    from sklearn.preprocessing import StandardScaler
    scaler = StandardScaler().fit(train_raw[COLS])
    train_df, test_df = split_and_clean(train_raw, test_raw)
    model.fit(scaler.transform(train_df[COLS]), train_df["y"])
    print(model.score(scaler.transform(test_df[COLS]), test_df["y"]))
    """,
    # evaluated on the held-out part; a helper then refits on all the rows for deployment
    """
    import joblib
    from sklearn.model_selection import train_test_split
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2)

    def refit_for_release():
        model.fit(X, y)
        joblib.dump(model, "model.joblib")

    model.fit(X_train, y_train)
    print(model.score(X_test, y_test))
    refit_for_release()
    """,
]

INVALID = [
    # t-SNE has no transform: fitted again on the test split, its embedding of the test rows is
    # not the one the classifier was trained on, and the classifier is scored on it
    """
from sklearn.manifold import TSNE
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier

X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=1)
tsne = TSNE(random_state=42)
train_2d = tsne.fit_transform(X_train)
test_2d = tsne.fit_transform(X_test)
clf = KNeighborsClassifier().fit(train_2d, y_train)
print(clf.score(test_2d, y_test))
""",
    # the classic: scale everything, then split
    Example(
        """
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler
        scaler = StandardScaler()
        X_scaled = scaler.fit_transform(X)
        X_train, X_test, y_train, y_test = train_test_split(X_scaled, y, test_size=0.2)
        model.fit(X_train, y_train)
        print(model.score(X_test, y_test))
        """,
        unsafe_fixed="""
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler
        scaler = StandardScaler()
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2)
        X_train = scaler.fit_transform(X_train)
        X_test = scaler.transform(X_test)
        model.fit(X_train, y_train)
        print(model.score(X_test, y_test))
        """,
    ),
    # feature selection on all the data, then cross-validation on the selected features
    Example(
        """
        import numpy as np
        from sklearn.feature_selection import SelectKBest, f_classif
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import cross_val_score
        X = np.random.randn(100, 10000)
        y = np.random.randint(0, 2, 100)
        X_sel = SelectKBest(f_classif, k=20).fit_transform(X, y)
        scores = cross_val_score(LogisticRegression(), X_sel, y, cv=5)
        print(scores.mean())
        """,
        unsafe_fixed="""
        import numpy as np
        from sklearn.feature_selection import SelectKBest, f_classif
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import cross_val_score
        from sklearn.pipeline import make_pipeline
        X = np.random.randn(100, 10000)
        y = np.random.randint(0, 2, 100)
        scores = cross_val_score(make_pipeline(SelectKBest(f_classif, k=20), LogisticRegression()), X, y, cv=5)
        print(scores.mean())
        """,
    ),
    # oversampling before the split puts synthetic copies of test rows into training
    Example(
        """
        from imblearn.over_sampling import SMOTE
        from sklearn.model_selection import train_test_split
        X_res, y_res = SMOTE(random_state=42).fit_resample(X, y)
        X_train, X_val, y_train, y_val = train_test_split(X_res, y_res, test_size=0.2, stratify=y_res)
        clf.fit(X_train, y_train)
        print(clf.score(X_val, y_val))
        """,
        unsafe_fixed="""
        from imblearn.over_sampling import SMOTE
        from sklearn.model_selection import train_test_split
        X_train, X_val, y_train, y_val = train_test_split(X, y, test_size=0.2, stratify=y)
        smote = SMOTE(random_state=42)
        X_train, y_train = smote.fit_resample(X_train, y_train)
        clf.fit(X_train, y_train)
        print(clf.score(X_val, y_val))
        """,
    ),
    # TF-IDF statistics learned from every document before the split
    Example(
        """
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import train_test_split
        tfidf = TfidfVectorizer(max_features=5000, ngram_range=(1, 2))
        X = tfidf.fit_transform(df["review"])
        y = df["sentiment"]
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=42)
        clf = LogisticRegression().fit(X_train, y_train)
        print(clf.score(X_test, y_test))
        """,
        unsafe_fixed="""
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import train_test_split
        tfidf = TfidfVectorizer(max_features=5000, ngram_range=(1, 2))
        y = df["sentiment"]
        X_train, X_test, y_train, y_test = train_test_split(df["review"], y, test_size=0.2, random_state=42)
        X_train = tfidf.fit_transform(X_train)
        X_test = tfidf.transform(X_test)
        clf = LogisticRegression().fit(X_train, y_train)
        print(clf.score(X_test, y_test))
        """,
    ),
    # fit and transform as two steps, both before the split
    Example(
        """
        from sklearn.datasets import make_classification
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import MinMaxScaler
        X, y = make_classification(n_samples=1000, n_features=20, random_state=7)
        scaler = MinMaxScaler()
        scaler.fit(X)
        X = scaler.transform(X)
        # split into train and test sets
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.33, random_state=1)
        model = LogisticRegression().fit(X_train, y_train)
        print(model.score(X_test, y_test))
        """,
        unsafe_fixed="""
        from sklearn.datasets import make_classification
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import MinMaxScaler
        X, y = make_classification(n_samples=1000, n_features=20, random_state=7)
        scaler = MinMaxScaler()
        # split into train and test sets
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.33, random_state=1)
        X_train = scaler.fit_transform(X_train)
        X_test = scaler.transform(X_test)
        model = LogisticRegression().fit(X_train, y_train)
        print(model.score(X_test, y_test))
        """,
    ),
    # the scaler is refitted on the test split instead of reusing the training statistics
    Example(
        """
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
        sc = StandardScaler()
        X_train = sc.fit_transform(X_train)
        X_test = sc.fit_transform(X_test)
        classifier.fit(X_train, y_train)
        y_pred = classifier.predict(X_test)
        """,
        unsafe_fixed="""
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
        sc = StandardScaler()
        X_train = sc.fit_transform(X_train)
        X_test = sc.transform(X_test)
        classifier.fit(X_train, y_train)
        y_pred = classifier.predict(X_test)
        """,
    ),
    # columns scaled in place on the whole frame (.loc), then the frame is split
    """
    from sklearn import preprocessing as pp
    from sklearn.model_selection import train_test_split
    dataX = data.copy().drop(["Class"], axis=1)
    dataY = data["Class"].copy()
    featuresToScale = dataX.columns
    sX = pp.StandardScaler(copy=True)
    dataX.loc[:, featuresToScale] = sX.fit_transform(dataX[featuresToScale])
    X_train, X_test, y_train, y_test = train_test_split(dataX, dataY, test_size=0.33, stratify=dataY)
    logReg.fit(X_train, y_train)
    """,
    # imputation statistics from the whole frame, inside main()
    """
    import pandas as pd
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.impute import SimpleImputer
    from sklearn.model_selection import train_test_split

    def main():
        df = pd.read_csv("houses.csv")
        features = ["LotArea", "YearBuilt", "GarageArea"]
        df[features] = SimpleImputer(strategy="median").fit_transform(df[features])
        X_train, X_test, y_train, y_test = train_test_split(df[features], df["SalePrice"], random_state=1)
        reg = GradientBoostingRegressor().fit(X_train, y_train)
        print(reg.score(X_test, y_test))
    """,
    # PCA on everything, then a manual k-fold loop
    """
    from sklearn.decomposition import PCA
    from sklearn.model_selection import StratifiedKFold
    X = PCA(n_components=10).fit_transform(X)
    skf = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    for fold, (train_idx, val_idx) in enumerate(skf.split(X, y)):
        clf.fit(X[train_idx], y[train_idx])
        print(fold, clf.score(X[val_idx], y[val_idx]))
    """,
    # a time series scaled as a whole, then cut into a training and a test window
    """
    from sklearn.preprocessing import MinMaxScaler
    dataset = dataframe.values.astype("float32")
    scaler = MinMaxScaler(feature_range=(0, 1))
    dataset = scaler.fit_transform(dataset)
    train_size = int(len(dataset) * 0.67)
    train, test = dataset[0:train_size, :], dataset[train_size:len(dataset), :]
    trainX, trainY = create_dataset(train, look_back)
    testX, testY = create_dataset(test, look_back)
    model.fit(trainX, trainY, epochs=100, batch_size=1)
    """,
    # stock-price LSTM: the whole series is scaled, then cut into overlapping training and test windows
    """
    import numpy as np
    from sklearn.preprocessing import MinMaxScaler
    dataset = df.filter(["Close"]).values
    training_data_len = int(np.ceil(len(dataset) * 0.95))
    scaler = MinMaxScaler(feature_range=(0, 1))
    scaled_data = scaler.fit_transform(dataset)
    train_data = scaled_data[0:training_data_len, :]
    x_train, y_train = [], []
    for i in range(60, len(train_data)):
        x_train.append(train_data[i - 60:i, 0])
        y_train.append(train_data[i, 0])
    model.fit(np.array(x_train), np.array(y_train), batch_size=1, epochs=1)
    test_data = scaled_data[training_data_len - 60:, :]
    x_test = [test_data[i - 60:i, 0] for i in range(60, len(test_data))]
    predictions = scaler.inverse_transform(model.predict(np.array(x_test)))
    """,
    # refitted on all the data, then "evaluated" on the test split it has seen
    """
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.metrics import accuracy_score
    from sklearn.model_selection import train_test_split
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25)
    model = RandomForestClassifier()
    model.fit(X, y)
    y_pred = model.predict(X_test)
    print(accuracy_score(y_test, y_pred))
    """,
    # a model trained on the test split
    """
    from sklearn.model_selection import train_test_split
    from sklearn.tree import DecisionTreeClassifier
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=1)
    clf = DecisionTreeClassifier()
    clf = clf.fit(X_test, y_test)
    y_pred = clf.predict(X_test)
    """,
    # the scaler sees the training and the test split stacked together
    """
    import numpy as np
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    X_train, X_test, y_train, y_test = train_test_split(X, y)
    scaler = StandardScaler().fit(np.vstack([X_train, X_test]))
    model.fit(scaler.transform(X_train), y_train)
    print(model.score(scaler.transform(X_test), y_test))
    """,
    # categorical feature columns label-encoded on the whole frame before the split
    """
    import pandas as pd
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import LabelEncoder
    df = pd.read_csv("titanic.csv")
    le = LabelEncoder()
    for col in ["Sex", "Embarked", "Cabin"]:
        df[col] = le.fit_transform(df[col].astype(str))
    X = df.drop("Survived", axis=1)
    y = df["Survived"]
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2)
    model.fit(X_train, y_train)
    """,
    # the leaking fit sits in a helper; the caller splits its output
    """
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import MinMaxScaler

    def scaling(X):
        return MinMaxScaler(feature_range=(0, 1)).fit_transform(X)

    X = scaling(df.drop("target", axis=1))
    X_train, X_test, y_train, y_test = train_test_split(X, df["target"])
    knn.fit(X_train, y_train)
    """,
    # features selected on all the data, then a grid search cross-validates on them
    """
    from sklearn.feature_selection import SelectKBest
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC
    selector = SelectKBest(k=50)
    X_sel = selector.fit_transform(X, y)
    grid = GridSearchCV(SVC(), {"C": [0.1, 1, 10]}, cv=5)
    grid.fit(X_sel, y)
    print(grid.best_score_)
    """,
    # sklearn.preprocessing.scale: fit and transform in one call, before the split
    """
    import numpy as np
    from sklearn import preprocessing, svm
    from sklearn.model_selection import train_test_split
    X = np.array(df.drop(["label"], axis=1))
    X = preprocessing.scale(X)
    y = np.array(df["label"])
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2)
    clf = svm.SVR().fit(X_train, y_train)
    print(clf.score(X_test, y_test))
    """,
    # the test split is oversampled too
    """
    from imblearn.over_sampling import SMOTE
    from sklearn.model_selection import train_test_split
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y)
    sm = SMOTE()
    X_train_bal, y_train_bal = sm.fit_resample(X_train, y_train)
    X_test_bal, y_test_bal = sm.fit_resample(X_test, y_test)
    model.fit(X_train_bal, y_train_bal)
    print(model.score(X_test_bal, y_test_bal))
    """,
    # a frame scaled, then split by date
    """
    from sklearn.preprocessing import StandardScaler
    df[cols] = StandardScaler().fit_transform(df[cols])
    train = df[df["date"] < "2020-01-01"]
    test = df[df["date"] >= "2020-01-01"]
    model.fit(train[cols], train["y"])
    print(model.score(test[cols], test["y"]))
    """,
    # fitted before a pandas sample/drop split
    """
    from sklearn.preprocessing import MinMaxScaler
    scaler = MinMaxScaler()
    df[num_cols] = scaler.fit_transform(df[num_cols])
    train = df.sample(frac=0.8, random_state=1)
    test = df.drop(train.index)
    model.fit(train[num_cols], train["y"])
    print(model.score(test[num_cols], test["y"]))
    """,
    # train and test arrays imported from elsewhere: the scaler is refitted on the test set
    Example(
        """
        from sklearn import preprocessing
        from data_creation import X_train, X_test

        scaler = preprocessing.MinMaxScaler()
        X_train = scaler.fit_transform(X_train.values)
        X_test = scaler.fit_transform(X_test.values)
        """,
        unsafe_fixed="""
        from sklearn import preprocessing
        from data_creation import X_train, X_test

        scaler = preprocessing.MinMaxScaler()
        X_train = scaler.fit_transform(X_train.values)
        X_test = scaler.transform(X_test.values)
        """,
    ),
    # the old imbalanced-learn spelling fit_sample: all rows oversampled although the test split was set aside
    """
    from imblearn.over_sampling import RandomOverSampler
    from sklearn.model_selection import train_test_split

    def make_sets(X, y):
        _, X_held, _, y_held = train_test_split(X, y, test_size=0.25, random_state=3)
        X_up, y_up = RandomOverSampler().fit_sample(X, y)
        X_fit, _, y_fit, _ = train_test_split(X_up, y_up, test_size=0.25, random_state=3)
        return X_fit, y_fit, X_held, y_held
    """,
    # refitted on the validation part after the fit on the training part, even if the result is only shown
    Example(
        """
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import RobustScaler
        feats_tr, feats_va, t_tr, t_va = train_test_split(feats, t, test_size=0.1)
        rs = RobustScaler()
        feats_tr = rs.fit_transform(feats_tr)
        feats_va = rs.fit_transform(feats_va)
        print(feats_va.mean(axis=0))
        """,
        unsafe_fixed="""
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import RobustScaler
        feats_tr, feats_va, t_tr, t_va = train_test_split(feats, t, test_size=0.1)
        rs = RobustScaler()
        feats_tr = rs.fit_transform(feats_tr)
        feats_va = rs.transform(feats_va)
        print(feats_va.mean(axis=0))
        """,
    ),
    # a graph benchmark's split dictionary: the scaler is refitted on the validation rows
    Example(
        """
        import numpy as np
        from sklearn.preprocessing import StandardScaler
        split = ds.get_idx_split()
        tr_ids, va_ids = np.asarray(split["train"]), np.asarray(split["valid"])
        Z_tr, Z_va = feats[tr_ids], feats[va_ids]
        norm = StandardScaler()
        Z_tr = norm.fit_transform(Z_tr)
        Z_va = norm.fit_transform(Z_va)
        reg.fit(Z_tr, target[tr_ids])
        print(reg.score(Z_va, target[va_ids]))
        """,
        unsafe_fixed="""
        import numpy as np
        from sklearn.preprocessing import StandardScaler
        split = ds.get_idx_split()
        tr_ids, va_ids = np.asarray(split["train"]), np.asarray(split["valid"])
        Z_tr, Z_va = feats[tr_ids], feats[va_ids]
        norm = StandardScaler()
        Z_tr = norm.fit_transform(Z_tr)
        Z_va = norm.transform(Z_va)
        reg.fit(Z_tr, target[tr_ids])
        print(reg.score(Z_va, target[va_ids]))
        """,
    ),
    # a boolean mask kept in a name; its negation is the test part
    """
    import numpy as np
    from sklearn.preprocessing import QuantileTransformer
    table[num] = QuantileTransformer().fit_transform(table[num])
    in_train = np.random.rand(len(table)) < 0.75
    gbm.fit(table[in_train][num], table[in_train]["price"])
    print(gbm.score(table[~in_train][num], table[~in_train]["price"]))
    """,
    # index arrays from a file, named for their part, select the rows of an already scaled frame
    """
    import json
    from sklearn.preprocessing import MinMaxScaler
    folds = json.load(open("folds.json"))
    trn_index, tst_index = folds["a"], folds["b"]
    frame[cols] = MinMaxScaler().fit_transform(frame[cols])
    svm.fit(frame.iloc[trn_index][cols], frame.iloc[trn_index]["y"])
    print(svm.score(frame.iloc[tst_index][cols], frame.iloc[tst_index]["y"]))
    """,
    # a dataset class scales the whole series, then keeps the slice its flag asks for
    """
    import numpy as np
    from sklearn.preprocessing import MinMaxScaler
    from torch.utils.data import Dataset

    class Windows(Dataset):
        def __init__(self, path, flag, ratio):
            raw = np.load(path)
            raw = MinMaxScaler().fit_transform(raw)
            if flag == "train":
                start, stop = 0, int(len(raw) * ratio)
                self.train_part = raw[start:stop]
            else:
                start, stop = int(len(raw) * ratio), len(raw)
                self.test_part = raw[start:stop]
    """,
    # a helper handed to DataFrame.apply fits an imputer on each whole column, before the split
    """
    from sklearn.impute import SimpleImputer
    from sklearn.model_selection import train_test_split

    def fill(column):
        return SimpleImputer(strategy="median").fit_transform(column.to_frame()).ravel()

    data[numeric] = data[numeric].apply(fill)
    a_tr, a_te, b_tr, b_te = train_test_split(data[numeric], data["label"], test_size=0.3)
    forest.fit(a_tr, b_tr)
    print(forest.score(a_te, b_te))
    """,
    # the same through a lambda and Series.map-style application
    """
    from sklearn.preprocessing import OrdinalEncoder
    from sklearn.model_selection import train_test_split
    coded = raw[cat_cols].apply(lambda s: OrdinalEncoder().fit_transform(s.to_frame()).ravel())
    p_tr, p_te, q_tr, q_te = train_test_split(coded, raw.target)
    tree.fit(p_tr, q_tr)
    print(tree.score(p_te, q_te))
    """,
    # a dataset class: one method scales everything it holds, the next one splits it
    """
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    class Tabular:
        def __init__(self, frame):
            self.features = frame.drop(columns="y").values
            self.labels = frame["y"].values

        def normalise(self):
            self.features = StandardScaler().fit_transform(self.features)

        def make_splits(self):
            self.f_train, self.f_test, self.l_train, self.l_test = train_test_split(self.features, self.labels)

    ds = Tabular(frame)
    ds.normalise()
    ds.make_splits()
    """,
    # a Keras notebook: scikit-learn leakage is reported whatever the framework
    Example(
        """
        from tensorflow import keras
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler
        X_scaled = StandardScaler().fit_transform(X)
        X_train, X_test, y_train, y_test = train_test_split(X_scaled, y)
        model = keras.Sequential([keras.layers.Dense(1)])
        model.fit(X_train, y_train)
        """,
        unsafe_fixed="""
        from tensorflow import keras
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler
        X_train, X_test, y_train, y_test = train_test_split(X, y)
        scaler = StandardScaler()
        X_train = scaler.fit_transform(X_train)
        X_test = scaler.transform(X_test)
        model = keras.Sequential([keras.layers.Dense(1)])
        model.fit(X_train, y_train)
        """,
    ),
    # the whole series scaled, then split by position on one boundary (lagged pairs inside each part)
    """
    from sklearn.preprocessing import MinMaxScaler
    levels = MinMaxScaler().fit_transform(readings)
    cut = int(len(levels) * 0.8)
    early, late = levels.iloc[:cut], levels.iloc[cut:]
    forecaster.fit(early[:-1], early[1:])
    print(forecaster.score(late[:-1], late[1:]))
    """,
    # scaled before a date split by label
    """
    from sklearn.preprocessing import StandardScaler
    frame[COLS] = StandardScaler().fit_transform(frame[COLS])
    history = frame.loc[:"2020-12-31"]
    recent = frame.loc["2020-12-31":]
    model.fit(history[COLS], history["y"])
    print(model.score(recent[COLS], recent["y"]))
    """,
    # an encoder whose categories are read off all the rows learns them from the test rows too
    """
    import numpy as np
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import OneHotEncoder
    codes = OneHotEncoder(categories=[shop["brand"].unique()]).fit_transform(shop[["brand"]])
    X_train, X_test, y_train, y_test = train_test_split(np.hstack([codes, prices]), shop["returned"])
    model.fit(X_train, y_train)
    print(model.score(X_test, y_test))
    """,
    # a permutation-importance wrapper told to cross-validate refits the model on the test split
    """
    from eli5.sklearn import PermutationImportance
    from sklearn.model_selection import train_test_split
    X_train, X_test, y_train, y_test = train_test_split(X, y)
    model.fit(X_train, y_train)
    importances = PermutationImportance(model, cv=5).fit(X_test, y_test)
    """,
    # a wrapper class whose predict refits the scaler that fit fitted: predict(X_test) learns from the test rows
    Example(
        """
        from sklearn.linear_model import LogisticRegression
        from sklearn.preprocessing import StandardScaler

        class ScaledClassifier:
            def __init__(self):
                self.scaler = StandardScaler()
                self.clf = LogisticRegression()

            def fit(self, X, y):
                self.clf.fit(self.scaler.fit_transform(X), y)
                return self

            def predict(self, X):
                return self.clf.predict(self.scaler.fit_transform(X))
        """,
        unsafe_fixed="""
        from sklearn.linear_model import LogisticRegression
        from sklearn.preprocessing import StandardScaler

        class ScaledClassifier:
            def __init__(self):
                self.scaler = StandardScaler()
                self.clf = LogisticRegression()

            def fit(self, X, y):
                self.clf.fit(self.scaler.fit_transform(X), y)
                return self

            def predict(self, X):
                return self.clf.predict(self.scaler.transform(X))
        """,
    ),
    # a column scaled on the whole frame, then the frame split by group membership (ids split first)
    """
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    frame["dose_s"] = StandardScaler().fit_transform(frame[["dose"]])
    train_ids, test_ids = train_test_split(frame["patient"].unique(), test_size=0.25)
    train = frame[frame["patient"].isin(train_ids)]
    test = frame[frame["patient"].isin(test_ids)]
    model.fit(train[["dose_s"]], train["y"])
    print(model.score(test[["dose_s"]], test["y"]))
    """,
    # a split helper we cannot see, its parts named; a helper reading the module's data fits on all rows
    """
    from sklearn.ensemble import RandomForestClassifier
    from samples import split_samples
    (X_train, X_test), (y_train, y_test) = split_samples(X, y, [0.8, 0.2])

    def fit_and_score(n_trees):
        forest = RandomForestClassifier(n_estimators=n_trees)
        forest.fit(X, y)
        return forest.score(X_test, y_test)

    scores = [fit_and_score(n) for n in (10, 100)]
    """,
]
