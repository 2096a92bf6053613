"""Data flow for leakage: which values hold which rows, which fits saw which data.

Computed lazily (``dataflow_of(model)``) by one ordered walk over the file's scopes (the
module body and each function body, callees before callers), an abstract interpretation
in source order. Every value is described by

- ``rows``: where its rows come from, as (root, path) pairs. A *root* is data of unknown
  origin (``pd.read_csv(...)``, a parameter, a name from elsewhere); the *path* lists the
  splits taken to reach it, each as (split id, part) with part ``train``, ``val`` or
  ``test``. Column selection, ``.values``, arithmetic, transforms keep the rows; indexing
  with fold indices, slicing into complementary parts and ``train_test_split`` extend the
  path; concatenation unions the rows.
- ``taint``: the transformer fits whose output the value carries (``fit_transform``
  results, ``transform`` by a fitted transformer), so that we know where a fitted
  transformer's output ends up (a model, a split, cross-validation: a "sink"; a plot: not).
- objects: transformers, resamplers, estimators, pipelines, searches and splitters, by
  the constructor they come from, with the fits each has received.

Events are recorded with their order: fits (transformer and model), splits (with the
rows they split), evaluations (predict/score on which rows) and sinks. The rule queries
them (``DataFlow.classify``), e.g. "this scaler was fitted on rows of which a part is
later held out as the test split, and its output reaches a model".

Precision over recall: a value whose origin we cannot see is a fresh root; a function
receiving data as a parameter is analysed with the parameter as a root, so nothing is
claimed about its callers unless a split is visible.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

import libcst as cst

from mllint.semantics.model import MODULE_SCOPE, FileModel
from mllint.semantics.names import dotted, target_names
from mllint.semantics.tree import children as tree_children

Row = Tuple[int, Tuple[Tuple[int, str], ...]]  # (root id, ((split id, part), ...))

TRAIN, VAL, TEST = "train", "val", "test"

# --- object kinds -----------------------------------------------------------------------

TRANSFORMER = "transformer"  # learns statistics in fit (scaler, encoder, imputer, PCA, selector, vectorizer)
RESAMPLER = "resampler"  # fit_resample (SMOTE and kin)
ESTIMATOR = "estimator"  # a model
PIPELINE = "pipeline"  # Pipeline / make_pipeline / ColumnTransformer / FeatureUnion
SEARCH = "search"  # GridSearchCV and kin: cross-validates on what it is fitted on
SPLITTER = "splitter"  # KFold and kin
CALIBRATOR = "calibrator"  # CalibratedClassifierCV: fitting it on held-out data is its purpose
SCORER = "scorer"  # a wrapper handed an already-fitted model that its fit only scores (permutation importance)
EMBEDDER = "embedder"  # t-SNE, MDS, spectral embedding: fit_transform only, no transform of other rows

_TRANSFORMER_CLASSES = {
    # scalers and other per-feature statistics
    "StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler", "QuantileTransformer", "PowerTransformer",
    "KBinsDiscretizer", "SplineTransformer", "TargetEncoder", "OneHotEncoder", "OrdinalEncoder",
    "LabelEncoder", "LabelBinarizer", "MultiLabelBinarizer",
    # imputers
    "SimpleImputer", "KNNImputer", "IterativeImputer", "MissingIndicator", "Imputer",
    # decomposition and embeddings
    "PCA", "IncrementalPCA", "KernelPCA", "SparsePCA", "MiniBatchSparsePCA", "TruncatedSVD", "FastICA", "NMF",
    "MiniBatchNMF", "FactorAnalysis", "LatentDirichletAllocation", "DictionaryLearning", "MiniBatchDictionaryLearning",
    "TSNE", "Isomap", "LocallyLinearEmbedding", "SpectralEmbedding", "MDS", "UMAP", "Nystroem",
    # feature selection
    "SelectKBest", "SelectPercentile", "SelectFpr", "SelectFdr", "SelectFwe", "GenericUnivariateSelect", "RFE",
    "RFECV", "VarianceThreshold", "SelectFromModel", "SequentialFeatureSelector", "BorutaPy",
    # text
    "CountVectorizer", "TfidfVectorizer", "TfidfTransformer", "DictVectorizer", "VocabularyProcessor",
    # category_encoders and feature_engine
    "CatBoostEncoder", "WOEEncoder", "BinaryEncoder", "LeaveOneOutEncoder", "JamesSteinEncoder", "MEstimateEncoder",
    "CountEncoder", "GLMMEncoder", "BaseNEncoder", "HelmertEncoder", "SumEncoder", "PolynomialEncoder",
    "BackwardDifferenceEncoder", "QuantileEncoder", "MeanEncoder", "OrdinalEncoder", "RareLabelEncoder",
    "MeanMedianImputer", "ArbitraryNumberImputer", "CategoricalImputer", "EndTailImputer", "Winsorizer",
    "DropCorrelatedFeatures", "SmartCorrelatedSelection", "DropConstantFeatures",
}
# Encoders meant for the target: fitting them on all labels is harmless to scores.
LABEL_ENCODERS = {"LabelEncoder", "LabelBinarizer", "MultiLabelBinarizer"}
# Transformers without learned statistics (their fit only records shapes): never a leak.
_STATELESS = {
    "Normalizer", "Binarizer", "FunctionTransformer", "HashingVectorizer", "FeatureHasher", "PolynomialFeatures",
    "GaussianRandomProjection", "SparseRandomProjection", "RBFSampler", "SkewedChi2Sampler", "AdditiveChi2Sampler",
    "HashingEncoder",
}
_RESAMPLER_CLASSES = {
    "SMOTE", "ADASYN", "BorderlineSMOTE", "SVMSMOTE", "KMeansSMOTE", "SMOTENC", "SMOTEN", "RandomOverSampler",
    "RandomUnderSampler", "NearMiss", "TomekLinks", "EditedNearestNeighbours", "RepeatedEditedNearestNeighbours",
    "AllKNN", "SMOTEENN", "SMOTETomek", "ClusterCentroids", "CondensedNearestNeighbour", "OneSidedSelection",
    "NeighbourhoodCleaningRule", "InstanceHardnessThreshold",
}
_SPLITTER_CLASSES = {
    "KFold", "StratifiedKFold", "GroupKFold", "StratifiedGroupKFold", "RepeatedKFold", "RepeatedStratifiedKFold",
    "ShuffleSplit", "StratifiedShuffleSplit", "GroupShuffleSplit", "TimeSeriesSplit", "LeaveOneOut", "LeavePOut",
    "LeaveOneGroupOut", "LeavePGroupsOut", "PredefinedSplit", "MultilabelStratifiedKFold",
    "MultilabelStratifiedShuffleSplit", "RepeatedMultilabelStratifiedKFold", "IterativeStratification",
}
_SEARCH_CLASSES = {
    "GridSearchCV", "RandomizedSearchCV", "HalvingGridSearchCV", "HalvingRandomSearchCV", "BayesSearchCV",
    "TuneSearchCV", "TuneGridSearchCV",
}
_PIPELINE_CLASSES = {"Pipeline", "make_pipeline", "ColumnTransformer", "make_column_transformer", "FeatureUnion", "make_union"}
_CALIBRATORS = {"CalibratedClassifierCV"}
# Embeddings with fit/fit_transform and no transform: what they learn embeds the rows they are
# fitted on and cannot be applied to other rows (sklearn.manifold TSNE, MDS, SpectralEmbedding).
_EMBEDDERS = {"TSNE", "MDS", "SpectralEmbedding"}
# Encoders that learn only their categories: told them as constants, they learn nothing from the rows.
_GIVEN_CATEGORIES = {"OneHotEncoder", "OrdinalEncoder"}
_ESTIMATOR_MODULES = re.compile(
    r"^(sklearn\.(linear_model|ensemble|svm|tree|neighbors|naive_bayes|neural_network|discriminant_analysis|"
    r"gaussian_process|kernel_ridge|cluster|multiclass|multioutput|semi_supervised|dummy|isotonic|"
    r"cross_decomposition|compose|mixture)|xgboost|lightgbm|catboost|(tensorflow\.)?keras|ngboost|"
    r"imblearn\.ensemble)\b"
)
_ESTIMATOR_NAME = re.compile(
    r"(Classifier|Regressor|Regression|Classification|SVC|SVR|NB|Booster|Ridge|Lasso|ElasticNet|KMeans|"
    r"DBSCAN|Sequential|Perceptron|Forest|Trees|Boosting|LGBM\w*|XGB\w*|CatBoost\w*)$"
)
_TRANSFORMER_MODULES = re.compile(
    r"^(sklearn\.(preprocessing|decomposition|feature_selection|feature_extraction|impute|manifold|"
    r"kernel_approximation)|category_encoders|feature_engine|umap)\b"
)

# Function forms that fit and transform in one call.
_FIT_TRANSFORM_FUNCTIONS = {"scale", "minmax_scale", "maxabs_scale", "robust_scale", "quantile_transform", "power_transform"}

_CV_HELPERS = {
    "cross_val_score": 1, "cross_validate": 1, "cross_val_predict": 1, "learning_curve": 1, "validation_curve": 1,
    "permutation_test_score": 1,
}  # name -> index of X among the positional arguments
_CONCAT_FUNCTIONS = {
    "numpy.concatenate", "numpy.vstack", "numpy.row_stack", "numpy.append", "numpy.hstack", "numpy.column_stack",
    "numpy.r_", "pandas.concat", "torch.cat", "torch.concat", "torch.vstack", "torch.stack", "scipy.sparse.vstack",
    "scipy.sparse.hstack", "tensorflow.concat", "torch.utils.data.ConcatDataset", "ConcatDataset",
}
_EVAL_METHODS = {"predict", "predict_proba", "predict_log_proba", "decision_function", "score", "evaluate", "score_samples"}
_SINK_CALL_NAMES = re.compile(r"^(fit\w*|train\w*|evaluate\w*|eval_model|predict\w*|score\w*|run_(model|experiment)\w*|cross_val\w*)$")
_NOT_SINKS = re.compile(
    r"^(print|display|repr|str|len|type|isinstance|format|logging|logger|log|plt|pyplot|matplotlib|sns|seaborn|"
    r"px|plotly|go|ax|axes|fig|st|tqdm|wandb|mlflow|np\.(mean|std|min|max|sum|round|shape|isnan|unique|percentile))\b"
)
_PLOTTING_HEADS = {"plt", "sns", "px", "go", "ax", "axes", "fig", "st", "matplotlib", "seaborn", "plotly", "pyplot"}

def words(text: str) -> List[str]:
    """The words of an identifier or expression text: ``X_test.values`` -> x, test, values."""
    return [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", text)]


def is_test_name(text: str) -> bool:
    return any("test" in w or w in ("tst", "te", "holdout") for w in words(text))


def is_val_name(text: str) -> bool:
    return any(
        w.startswith(("val", "calib", "blend")) and w not in ("values", "value") or w in ("dev", "oof", "meta", "stack", "stacking")
        for w in words(text)
    )


def is_train_name(text: str) -> bool:
    return any("train" in w or w in ("tr", "trn") for w in words(text))


_TARGET_WORDS = {
    "y", "target", "targets", "label", "labels", "class", "classes", "outcome", "category", "categories", "species",
    "diagnosis", "sentiment", "churn", "survived", "income", "response", "lbl", "cls",
}


def is_target_name(text: str) -> bool:
    return any(w in _TARGET_WORDS for w in words(text))


# --- values ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Obj:
    oid: int
    kind: str
    cls: str  # the class (or function) name, for messages
    node: Optional[cst.CSTNode] = None  # the constructor call
    inner: Tuple["Obj", ...] = ()  # a search's or pipeline's estimators


@dataclass(frozen=True)
class Val:
    rows: FrozenSet[Row] = frozenset()
    taint: FrozenSet[int] = frozenset()  # transformer fits whose output this carries
    coltaint: FrozenSet[Tuple[str, int]] = frozenset()  # (column, fit): column-level taint of a data frame
    index: FrozenSet[Tuple[int, str]] = frozenset()  # (split, part): usable as row indices of that part
    objs: FrozenSet[Obj] = frozenset()
    items: Optional[Tuple["Val", ...]] = None  # elements of a tuple/list
    gen: FrozenSet[int] = frozenset()  # fold generators (``kf.split(X)``): split ids
    enum: bool = False  # ``enumerate(kf.split(X))``

    def all_taint(self) -> FrozenSet[int]:
        out = set(self.taint)
        out.update(f for _, f in self.coltaint)
        for item in self.items or ():
            out.update(item.all_taint())
        return frozenset(out)

    def all_rows(self) -> FrozenSet[Row]:
        if not self.items:
            return self.rows
        out = set(self.rows)
        for item in self.items:
            out.update(item.all_rows())
        return frozenset(out)

    @property
    def empty(self) -> bool:
        return not (self.rows or self.taint or self.coltaint or self.index or self.objs or self.items or self.gen)


EMPTY = Val()


def join(a: Val, b: Val) -> Val:
    if a is b or b.empty:
        return a
    if a.empty:
        return b
    items = None
    if a.items is not None and b.items is not None and len(a.items) == len(b.items):
        items = tuple(join(x, y) for x, y in zip(a.items, b.items))
    return Val(
        a.rows | b.rows,
        a.taint | b.taint,
        a.coltaint | b.coltaint,
        a.index | b.index,
        a.objs | b.objs,
        items,
        a.gen | b.gen,
        a.enum or b.enum,
    )


def data_of(v: Val) -> Val:
    """The data a value carries (rows, taint, index markers), without objects."""
    if v.items:
        out = Val(v.rows, v.taint, v.coltaint, v.index)
        for item in v.items:
            out = join(out, data_of(item))
        return out
    if v.objs or v.gen:
        return Val(v.rows, v.taint, v.coltaint, v.index)
    return v


def flat(v: Val) -> Val:
    """Like data_of, with column taint folded into the whole value."""
    d = data_of(v)
    return Val(d.rows, d.all_taint(), frozenset(), d.index)


# --- events ---------------------------------------------------------------------------------


@dataclass
class FitEvent:
    fid: int
    node: cst.Call
    scope: str
    kind: str  # TRANSFORMER / RESAMPLER (transformer fits), ESTIMATOR / SEARCH / PIPELINE / CALIBRATOR (model fits)
    method: str  # fit / fit_transform / fit_resample / <function name> for function forms
    cls: str  # class name of the fitted object ("" when unknown)
    obj: Optional[Obj]
    receiver: str  # text of the receiver, "" for function forms
    key: str  # identity of the fitted object for ordering queries (obj id or receiver text)
    data: Val
    label: Optional[Val]
    data_node: Optional[cst.BaseExpression]
    order: int
    statement: Optional[cst.CSTNode]
    block: Optional[cst.CSTNode]
    rows: Set[Row] = field(default_factory=set)  # the fitted rows, with instantiations through helpers
    # each call of the enclosing helper(s) that handed it data: (call, the rows it fitted then)
    instances: List[Tuple[cst.CSTNode, FrozenSet[Row]]] = field(default_factory=list)
    previous: Optional["FitEvent"] = None  # the object's previous fit in the same scope, if any

    @property
    def is_transformer(self) -> bool:
        return self.kind in (TRANSFORMER, RESAMPLER)


@dataclass
class SplitInfo:
    sid: int
    node: cst.CSTNode
    kind: str  # "train_test_split", "random_split", "folds", "cv", "slice", "mask", "sample"
    scope: str
    order: int
    inputs: Set[Row] = field(default_factory=set)
    confirmed: bool = True  # slices/masks/samples: only once the complementary part is seen
    seen_parts: Set[str] = field(default_factory=set)
    swap: bool = False  # complementary slices whose names say the lower one is the test part
    names: Dict[str, List[str]] = field(default_factory=dict)  # part -> names it was assigned to, in order
    label: str = ""  # how to call it in a message

    def named_as_split(self) -> bool:
        """Whether the names the parts were assigned to say training and held-out data."""
        train = [n for n in self.names_of(TRAIN) if is_train_name(n) and not (is_test_name(n) or is_val_name(n))]
        held = [
            n for part in (TEST, VAL) for n in self.names_of(part)
            if (is_test_name(n) or is_val_name(n)) and not is_train_name(n)
        ]
        return bool(train and held)

    def names_of(self, part: str) -> List[str]:
        """Names the (swap-corrected) part was assigned to."""
        if self.swap and part in (TRAIN, TEST):
            part = TEST if part == TRAIN else TRAIN
        return self.names.get(part, [])
    bounds: Tuple[Set[str], Set[str]] = field(default_factory=lambda: (set(), set()))  # slices: (upper, lower) bounds seen


@dataclass
class EvalEvent:
    key: str
    node: cst.Call
    method: str
    data: Val
    order: int
    scope: str
    # each call of the enclosing helper(s) that handed it data: (call, the rows it evaluated then)
    instances: List[Tuple[cst.CSTNode, FrozenSet[Row]]] = field(default_factory=list)

    def rows_for(self, call: Optional[cst.CSTNode]) -> FrozenSet[Row]:
        """The rows it evaluated when ``call`` ran it (all it is known to evaluate without one)."""
        if call is not None:
            for instance, rows in self.instances:
                if instance is call:
                    return rows
        return self.data.rows


@dataclass
class SinkUse:
    node: cst.CSTNode
    what: str  # "split", "cv", "fit", "eval", "call", "return", "model"
    x_position: bool
    order: int
    scope: str
    rows: FrozenSet[Row] = frozenset()  # the rows of the value handed over
    sid: Optional[int] = None  # "split": the split that takes the value apart


@dataclass
class Summary:
    params: Tuple[str, ...]
    param_roots: Tuple[int, ...]
    ret: Val
    globals: FrozenSet[str] = frozenset()  # module-level names it (or a helper it calls) reads


class DataFlow:
    """The facts of one file (see the module docstring)."""

    def __init__(self) -> None:
        self.fits: List[FitEvent] = []
        # fit_transform of an embedding (t-SNE, MDS...): what they fit on, and (as sinks) where
        # their output goes; kept apart from ``fits`` (nothing they learn applies to other rows)
        self.embeddings: List[FitEvent] = []
        self.splits: Dict[int, SplitInfo] = {}
        self.evals: List[EvalEvent] = []
        self.sinks: Dict[int, List[SinkUse]] = {}  # fit id -> uses of its output
        self.param_roots: Dict[int, Tuple[str, int]] = {}  # root -> (function key, parameter index)
        self.opaque_roots: Set[int] = set()  # parameters and names bound elsewhere
        self.resets: List[Tuple[str, int, str]] = []  # (object key, order, scope): fitted attributes assigned
        self.summaries: Dict[str, Summary] = {}
        # dataset classes: fitted output stored on self (fit id -> {(class, attribute)}), and the
        # attributes of self handed to an explicit split ((class, attribute) -> [(method, split)])
        self.self_stores: Dict[int, Set[Tuple[str, str]]] = {}
        self.self_splits: Dict[Tuple[str, str], List[Tuple[str, SplitInfo]]] = {}
        self.bound_at: Dict[Tuple[str, str], List[int]] = {}  # (scope, name) -> orders of its bindings
        self.references: Dict[Tuple[str, str], List[Tuple[int, cst.Name]]] = {}  # (scope, name) -> (order, node)

    # --- queries ------------------------------------------------------------------------
    def split_of(self, sid: int) -> Optional[SplitInfo]:
        info = self.splits.get(sid)
        return info if info is not None and info.confirmed else None

    def steps(self, row: Row) -> List[Tuple[SplitInfo, str]]:
        """The confirmed splits on a row's path, with the part taken (swaps applied)."""
        out = []
        for sid, part in row[1]:
            info = self.split_of(sid)
            if info is None:
                continue
            if info.swap and part in (TRAIN, TEST):
                part = TEST if part == TRAIN else TRAIN
            out.append((info, part))
        return out

    def top_splits(self, root: int) -> List[SplitInfo]:
        """Confirmed splits applied to all rows of ``root`` (nothing held out before)."""
        return [
            info
            for info in self.splits.values()
            if info.confirmed and any(r == root and not self.steps((r, p)) for r, p in info.inputs)
        ]

    @staticmethod
    def _nearest(splits: List["SplitInfo"], near: Optional["FitEvent"]) -> "SplitInfo":
        """The split to name in a message: the first one after the fit in its own scope, else the
        first one in its scope, else the first one."""
        if near is not None:
            after = [s for s in splits if s.scope == near.scope and s.order > near.order]
            if after:
                return min(after, key=lambda s: s.order)
            same = [s for s in splits if s.scope == near.scope]
            if same:
                return min(same, key=lambda s: s.order)
        return min(splits, key=lambda s: s.order)

    def row_kind(self, row: Row, near: Optional["FitEvent"] = None) -> Tuple[str, Optional[SplitInfo]]:
        """``full`` (rows later/earlier split into train and test), ``unsplit`` (never split),
        ``test`` (inside the held-out part of a top-level split), ``val`` (held out by a
        split of a training part: validation), ``train``."""
        steps = self.steps(row)
        if not steps:
            tops = self.top_splits(row[0])
            if tops:
                return "full", self._nearest(tops, near)
            return "unsplit", None
        first, part = steps[0]
        if part == TEST:
            return TEST, first
        if part == VAL:
            return VAL, first
        for info, inner in steps[1:]:
            if inner in (TEST, VAL):
                return VAL, info
        return TRAIN, first

    def classify(self, rows: Iterable[Row], near: Optional["FitEvent"] = None) -> Tuple[Optional[str], Optional[SplitInfo]]:
        """What a fit on ``rows`` sees: ``full`` (data that is split into train and test),
        ``concat`` (train and test parts together), ``test``, ``val`` (validation rows
        only), or None (training rows, or data never split)."""
        kinds: Dict[str, SplitInfo] = {}
        for row in rows:
            kind, info = self.row_kind(row, near)
            if info is not None and (kinds.get(kind) is None or (kind != "full" and info.order < kinds[kind].order)):
                kinds[kind] = info
            elif kind not in kinds:
                kinds[kind] = None  # type: ignore[assignment]
        if "full" in kinds:
            return "full", kinds["full"]
        if TEST in kinds:
            if TRAIN in kinds or VAL in kinds:
                return "concat", kinds[TEST]
            return TEST, kinds[TEST]
        if VAL in kinds and TRAIN not in kinds and "unsplit" not in kinds:
            return VAL, kinds[VAL]
        return None, None

    _PRIORITY = ("full", "concat", TEST, VAL)

    def classify_fit(self, fit: "FitEvent") -> Tuple[Optional[str], Optional[SplitInfo], Optional[cst.CSTNode]]:
        """Like ``classify`` for a fit, taking each call of its helper on its own (a helper
        called once with the training split and once with the test split fits on the test
        split, not on their union). Returns (kind, split, the helper call or None)."""
        best = self.classify(fit.data.rows, near=fit) + (None,)
        for call, rows in fit.instances:
            kind, split = self.classify(rows, near=fit)
            if kind is not None and (best[0] is None or self._PRIORITY.index(kind) < self._PRIORITY.index(best[0])):
                best = (kind, split, call)
        return best

    def part_names(self, rows: Iterable[Row], part: str = TEST) -> Set[str]:
        out: Set[str] = set()
        for row in rows:
            steps = self.steps(row)
            if steps and steps[0][1] == part:
                out.update(steps[0][0].names_of(part))
        return out

    def relevant(self, use: "SinkUse") -> bool:
        """Whether a use of a fit's output bears on an evaluation: the output is split or
        cross-validated there, or reaches a model together with rows that come from a split."""
        if use.what == "cv":
            return True
        if use.what == "split":
            info = self.split_of(use.sid) if use.sid is not None else None
            # slices, masks and samples are splits by inference: their parts must reach a model
            if use.sid is None or (info is not None and info.kind not in _INFERRED_SPLITS):
                return True
            # the parts of an inferred split are named as training and held-out data (X_train = X[:n],
            # self.testData = data[b:e]): the code says it is a split even where its use is out of sight
            return info is not None and info.named_as_split()

        return any(self.steps(row) for row in use.rows)

    def stored_then_split(self, fit: "FitEvent", model: FileModel) -> Optional[SplitInfo]:
        """A dataset class whose method stores the fitted output on ``self.attr`` and whose other
        method splits ``self.attr`` (``self.X_train, self.X_test, ... = train_test_split(self.X,
        ...)``), with the fitting method called before the splitting one somewhere in the file."""
        for cls, attr in sorted(self.self_stores.get(fit.fid, ())):
            for scope, info in self.self_splits.get((cls, attr), []):
                if scope != fit.scope and _called_before(model, fit.scope, scope):
                    return info
        return None

    def opaque(self, rows: Iterable[Row]) -> bool:
        """Rows of data whose origin we cannot see (parameters, names from elsewhere)."""
        return all(root in self.opaque_roots for root, path in rows)


# --- the walk ---------------------------------------------------------------------------------


def dataflow_of(model: FileModel) -> DataFlow:
    cached = getattr(model, "_dataflow", None)
    if cached is None:
        try:
            cached = _Analysis(model).run()
        except RecursionError:  # pathologically nested code: no facts rather than no lint
            cached = DataFlow()
        model._dataflow = cached  # type: ignore[attr-defined]
    return cached


class _Env:
    def __init__(
        self,
        names: Optional[Dict[str, Val]] = None,
        fits: Optional[Dict[int, FrozenSet[int]]] = None,
        exprs: Optional[Dict[str, cst.BaseExpression]] = None,
    ) -> None:
        self.names: Dict[str, Val] = dict(names or {})
        self.fits: Dict[int, FrozenSet[int]] = dict(fits or {})  # object id -> fits it currently holds
        # name -> the expression its reaching definition assigned (only where every path agrees):
        # slice bounds (``end = int(len(d) * r)``) and masks (``m = df.split == "train"``) by name
        self.exprs: Dict[str, cst.BaseExpression] = dict(exprs or {})

    def copy(self) -> "_Env":
        return _Env(self.names, self.fits, self.exprs)

    def merge(self, other: "_Env") -> None:
        for name, val in other.names.items():
            mine = self.names.get(name)
            self.names[name] = val if mine is None else join(mine, val)
        for oid, fits in other.fits.items():
            self.fits[oid] = self.fits.get(oid, frozenset()) | fits
        for name in list(self.exprs):
            if other.exprs.get(name) is not self.exprs[name]:
                del self.exprs[name]


class _Analysis:
    def __init__(self, model: FileModel) -> None:
        self.m = model
        self.df = DataFlow()
        self.counter = 0
        self.scope = MODULE_SCOPE
        self.env = _Env()
        self.globals: Dict[str, int] = {}  # unknown global name -> root
        self.global_reads: Set[str] = set()  # global names the function being walked reads
        self.local_roots: Dict[str, int] = {}
        self.statement: Optional[cst.CSTNode] = None
        self.block: Optional[cst.CSTNode] = None
        self.targets: Tuple[str, ...] = ()  # names the current statement assigns (for split part names)
        self.n_targets = 0
        self.target_node: Optional[cst.BaseExpression] = None  # the current assignment's only target
        self.direct_value: Optional[cst.CSTNode] = None  # the value the current assignment binds as a whole
        self.last_fit: Dict[Tuple[str, str], FitEvent] = {}  # (scope, key) -> last fit
        self.slice_keys: Dict[Tuple[str, object], int] = {}  # (scope, rows of the sliced data) -> slice split id
        self.mask_keys: Dict[Tuple[str, object, str], int] = {}
        self.sample_keys: Dict[Tuple[str, FrozenSet[Row]], int] = {}
        self.loaded: Set[Row] = set()  # roots of data loaded by calls that were handed none of ours
        self.keyed_keys: Dict[Tuple[str, object], int] = {}  # data["train"] / data["test"]
        self.index_keys: Dict[Tuple[str, object], int] = {}  # X[train_idx] / X[test_idx] (indices of unseen origin)
        # imported names, and the conventional module aliases of snippets that skip the imports
        self.module_names: Set[str] = set(model.imports.aliases) | {"np", "pd", "torch", "tf", "sp", "plt", "sns"}
        self.returns: List[Val] = []
        self.local_calls: Optional[Dict[int, str]] = None
        self.lists: Set[str] = set()  # names bound to list literals in the scope being walked
        self.class_attrs: Optional[Dict[str, Obj]] = None  # "Cls.attr" -> object assigned to self.attr in the class

    # --- ids -------------------------------------------------------------------------------
    def next(self) -> int:
        self.counter += 1
        return self.counter

    def root(self) -> Val:
        return Val(rows=frozenset({(self.next(), ())}))

    def _loaded(self) -> Val:
        """A fresh root for data a call brings from elsewhere (no data of ours handed in)."""
        val = self.root()
        self.loaded.update(val.rows)
        return val

    # --- driver ------------------------------------------------------------------------------
    def run(self) -> DataFlow:
        if not any(_is_fit_call(call) for call, _ctx in self.m.calls):
            return self.df  # nothing is fitted in this file
        scopes: List[Tuple[str, cst.FunctionDef]] = []
        for key, fn in self.m.functions.items():
            scopes.append((key, fn.node))
        # Callees first, so that a call to a local helper can use its summary.
        ordered = self._callee_first(scopes)
        for key, node in ordered:
            self._run_function(key, node)
        self.scope = MODULE_SCOPE
        self.env = _Env()
        self.local_roots = {}
        self.lists = set()
        self._run_block(self.m.module.body, self.m.module)
        return self.df

    def _callee_first(self, scopes: List[Tuple[str, cst.FunctionDef]]) -> List[Tuple[str, cst.FunctionDef]]:
        calls: Dict[str, Set[str]] = {key: set() for key, _ in scopes}
        for effect in self.m.effects:
            if effect.kind == "call" and effect.callee and effect.ctx.scope in calls:
                calls[effect.ctx.scope].add(effect.callee)
        done: List[Tuple[str, cst.FunctionDef]] = []
        seen: Set[str] = set()
        nodes = dict(scopes)

        def visit(key: str, stack: Set[str]) -> None:
            if key in seen or key in stack:
                return
            stack.add(key)
            for callee in sorted(calls.get(key, ())):
                if callee in nodes:
                    visit(callee, stack)
            stack.discard(key)
            seen.add(key)
            done.append((key, nodes[key]))

        for key, _ in scopes:
            visit(key, set())
        return done

    def _run_function(self, key: str, node: cst.FunctionDef) -> None:
        self.scope = key
        self.env = _Env()
        self.local_roots = {}
        self.lists = set()
        fn = self.m.functions[key]
        params = list(fn.params)
        roots = []
        for index, name in enumerate(params):
            if name in ("self", "cls") and index == 0:
                roots.append(0)
                continue
            val = self.root()
            root = next(iter(val.rows))[0]
            self.df.param_roots[root] = (key, index)
            self.df.opaque_roots.add(root)
            roots.append(root)
            self.env.names[name] = val
            self._bound(name)
        self.returns: List[Val] = []
        self.global_reads = set()
        self._run_block(node.body.body if isinstance(node.body, cst.IndentedBlock) else [node.body], node.body)
        ret = EMPTY
        for val in self.returns:
            ret = join(ret, val)
        self.df.summaries[key] = Summary(tuple(params), tuple(roots), ret, frozenset(self.global_reads))
        self.global_reads = set()

    # --- statements ------------------------------------------------------------------------------
    def _run_block(self, body, block) -> None:
        saved_block = self.block
        self.block = block
        for stmt in body:
            self._stmt(stmt)
        self.block = saved_block

    def _suite(self, suite: Optional[cst.BaseSuite]) -> None:
        if suite is None:
            return
        if isinstance(suite, cst.IndentedBlock):
            self._run_block(suite.body, suite)
        elif isinstance(suite, cst.SimpleStatementSuite):
            for small in suite.body:
                self._small(small)

    def _stmt(self, stmt: cst.CSTNode) -> None:
        if isinstance(stmt, cst.SimpleStatementLine):
            saved = self.statement
            self.statement = stmt
            for small in stmt.body:
                self._small(small)
            self.statement = saved
            return
        saved = self.statement
        self.statement = stmt
        try:
            self._compound(stmt)
        finally:
            self.statement = saved

    def _compound(self, stmt: cst.CSTNode) -> None:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return
        if isinstance(stmt, cst.If):
            self.ev(stmt.test)
            before = self.env.copy()
            self._suite(stmt.body)
            after_body = self.env
            self.env = before
            if stmt.orelse is not None:
                if isinstance(stmt.orelse, cst.If):
                    self._stmt(stmt.orelse)
                else:
                    self._suite(stmt.orelse.body)
            self.env.merge(after_body)
            return
        if isinstance(stmt, cst.For):
            iterated = self.ev(stmt.iter)
            self._bind_loop_target(stmt.target, iterated)
            before = self.env.copy()
            self._suite(stmt.body)
            self.env.merge(before)  # the body may not run
            if stmt.orelse is not None:
                self._suite(stmt.orelse.body)
            return
        if isinstance(stmt, cst.While):
            self.ev(stmt.test)
            before = self.env.copy()
            self._suite(stmt.body)
            self.env.merge(before)
            if stmt.orelse is not None:
                self._suite(stmt.orelse.body)
            return
        if isinstance(stmt, cst.With):
            for item in stmt.items:
                val = self.ev(item.item)
                if item.asname is not None:
                    self._bind(item.asname.name, val)
            self._suite(stmt.body)
            return
        if isinstance(stmt, cst.Try) or type(stmt).__name__ == "TryStar":
            before = self.env.copy()
            self._suite(stmt.body)
            for handler in stmt.handlers:
                saved = self.env
                self.env = before.copy()
                self._suite(handler.body)
                saved.merge(self.env)
                self.env = saved
            if stmt.orelse is not None:
                self._suite(stmt.orelse.body)
            if stmt.finalbody is not None:
                self._suite(stmt.finalbody.body)
            return
        if type(stmt).__name__ == "Match":
            self.ev(stmt.subject)  # type: ignore[attr-defined]
            before = self.env.copy()
            merged = before.copy()
            for case in stmt.cases:  # type: ignore[attr-defined]
                self.env = before.copy()
                self._suite(case.body)
                merged.merge(self.env)
            self.env = merged
            return

    def _small(self, small: cst.BaseSmallStatement) -> None:
        if isinstance(small, cst.Assign):
            names = []
            for target in small.targets:
                names.extend(target_names(target.target, dotted))
            saved = self.targets, self.n_targets
            saved_node = self.target_node
            self.targets = tuple(names)
            first = small.targets[0].target
            self.target_node = first if len(small.targets) == 1 else None
            self.n_targets = len(first.elements) if isinstance(first, (cst.Tuple, cst.List)) else 1
            if isinstance(small.value, (cst.Tuple, cst.List)) and isinstance(first, (cst.Tuple, cst.List)) and len(small.value.elements) == len(first.elements) and len(small.targets) == 1:
                # a, b = x[tr], x[te]: element by element, each with its own target name
                vals = []
                for target_el, value_el in zip(first.elements, small.value.elements):
                    if isinstance(target_el.value, cst.Name) and isinstance(value_el.value, (cst.List, cst.ListComp)):
                        self.lists.add(target_el.value.value)
                    self.targets = tuple(target_names(target_el.value, dotted))
                    self.n_targets = 1
                    self.target_node = target_el.value
                    self.direct_value = _principal(value_el.value)
                    vals.append(self.ev(value_el.value))
                self.direct_value = None
                self.targets, self.n_targets = saved
                self.target_node = saved_node
                for target_el, value_el, val in zip(first.elements, small.value.elements, vals):
                    self._bind(target_el.value, val)
                    if isinstance(target_el.value, cst.Name):
                        self.env.exprs[target_el.value.value] = value_el.value
                return
            self.direct_value = _principal(small.value)
            val = self.ev(small.value)
            self.direct_value = None
            for target in small.targets:  # names holding lists built here (xs = []): append adds data
                if isinstance(target.target, cst.Name):
                    if isinstance(small.value, (cst.List, cst.ListComp)) or (isinstance(small.value, cst.Call) and dotted(small.value.func) == "list"):
                        self.lists.add(target.target.value)
                    else:
                        self.lists.discard(target.target.value)
            self.targets, self.n_targets = saved
            self.target_node = saved_node
            for target in small.targets:
                self._bind(target.target, val)
            if len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                self.env.exprs[small.targets[0].target.value] = small.value
            return
        if isinstance(small, cst.AnnAssign):
            if small.value is not None:
                val = self.ev(small.value)
                self._bind(small.target, val)
            return
        if isinstance(small, cst.AugAssign):
            val = self.ev(small.value)
            old = self.ev(small.target)
            self._bind(small.target, join(data_of(old), data_of(val)))
            return
        if isinstance(small, cst.Expr):
            self.ev(small.value)
            return
        if isinstance(small, cst.Return):
            if small.value is not None:
                val = self.ev(small.value)
                self.returns.append(val)
                self._sink(val, small, "return", True)
            return

    # --- binding ---------------------------------------------------------------------------------
    def _bound(self, name: str) -> None:
        self.df.bound_at.setdefault((self.scope, name), []).append(self.next())

    def _bind(self, target: cst.BaseExpression, val: Val) -> None:
        if isinstance(target, cst.Name):
            self.env.names[target.value] = val
            self.env.exprs.pop(target.value, None)
            self._bound(target.value)
            self._name_parts(target.value, val)
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            if any(isinstance(e, cst.StarredElement) for e in target.elements):
                for element in elements:
                    self._bind(element.value if isinstance(element, cst.StarredElement) else element, data_of(val))
                return
            if val.items is not None and len(val.items) == len(elements):
                for element, item in zip(elements, val.items):
                    self._bind(element, item)
                return
            if val.items is None and len(val.rows) == 1 and next(iter(val.rows)) in self.loaded and not val.taint:
                # X, X_test, y, ids = load_data(): the loader's outputs are different data, not one
                for element in elements:
                    self._bind(element, self._loaded())
                return
            for element in elements:
                self._bind(element, self._element(val))
            return
        if isinstance(target, cst.Attribute):
            name = dotted(target)
            attr = target.attr.value
            if attr.endswith("_") and not attr.startswith("_"):
                # clf.coef_ = ...: the model's fitted state is replaced, as by a new fit
                owner = self.ev(target.value)
                obj = min(owner.objs, key=lambda o: o.oid) if owner.objs else None
                self.df.resets.append((self._key(obj, _text(self.m, target.value)), self.next(), self.scope))
            if name is not None:
                self.env.names[name] = val
                self._bound(name)
                self._name_parts(name, val)
                self._self_attribute(name, lambda cls, attr: [
                    self.df.self_stores.setdefault(fid, set()).add((cls, attr)) for fid in flat(val).taint
                ])
                base = dotted(target.value)
                if base is not None and base in self.env.names and not self.env.names[base].objs:
                    self._set_column(base, target.attr.value, val)
            return
        if isinstance(target, cst.Subscript):
            base = target.value
            if isinstance(base, cst.Attribute) and base.attr.value in ("loc", "iloc", "at", "iat"):
                base = base.value
            name = dotted(base)
            if name is None:
                self.ev(target)
                return
            key = _column_key(target)
            self._set_column(name, key, val)
            return
        if isinstance(target, cst.StarredElement):
            self._bind(target.value, data_of(val))

    def _set_column(self, name: str, column: Optional[str], val: Val) -> None:
        current = self.env.names.get(name)
        if current is None:
            current = self._lookup(name)
        added = flat(val).taint
        if column is not None:
            coltaint = frozenset((c, f) for c, f in current.coltaint if c != column) | frozenset((column, f) for f in added)
            self.env.names[name] = replace(current, coltaint=coltaint)
        else:
            self.env.names[name] = replace(current, taint=current.taint | added)

    def _element(self, val: Val) -> Val:
        """An element of an unpacked value we know nothing specific about."""
        if val.objs and not val.rows:
            return Val(objs=val.objs)
        return data_of(val)

    def _name_parts(self, name: str, val: Val) -> None:
        for row in val.rows:
            if row[1]:
                sid, part = row[1][-1]
                info = self.df.splits.get(sid)
                if info is not None and name not in info.names.setdefault(part, []):
                    info.names[part].append(name)

    def _bind_loop_target(self, target: cst.BaseExpression, iterated: Val) -> None:
        if iterated.gen:
            parts = tuple(Val(index=frozenset((sid, part) for sid in iterated.gen)) for part in (TRAIN, TEST))
            fold = Val(items=parts)
            if iterated.enum and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
                self._bind(target.elements[0].value, EMPTY)
                self._bind(target.elements[1].value, fold)
                return
            self._bind(target, fold)
            return
        if iterated.items is not None:
            element = EMPTY
            for item in iterated.items:
                element = join(element, item)
            self._bind(target, element)
            return
        self._bind(target, self._element(iterated))

    # --- names -------------------------------------------------------------------------------------
    def _lookup(self, name: str) -> Val:
        val = self.env.names.get(name)
        if val is not None:
            return val
        head = name.split(".")[0]
        if head in self.module_names and head not in self.env.names:
            return EMPTY
        if name in self.m.functions and "." not in name:
            return EMPTY  # a function of the file handed over as a value (``map(helper, rows)``): no data
        if head in ("self", "cls"):
            cls = self.m.class_scope_of(self.scope) if self.scope != MODULE_SCOPE else None
            obj = self._class_attr(cls, name.split(".", 1)[1]) if cls and "." in name else None
            if obj is not None:
                return Val(objs=frozenset({obj}))
        if self.scope == MODULE_SCOPE or name in self.local_roots:
            root = self.local_roots.get(name)
            if root is None:
                root = next(iter(self.root().rows))[0]
                self.local_roots[name] = root
                self.df.opaque_roots.add(root)
            val = Val(rows=frozenset({(root, ())}))
            self.env.names[name] = val
            return val
        # a global seen from a function: one root per name, shared by every function
        if "." not in name:
            self.global_reads.add(name)
        root = self.globals.get(name)
        if root is None:
            root = next(iter(self.root().rows))[0]
            self.globals[name] = root
            self.df.opaque_roots.add(root)
        return Val(rows=frozenset({(root, ())}))

    def _class_attr(self, cls: str, attr: str) -> Optional[Obj]:
        """``self.scaler = StandardScaler()`` anywhere in a class: ``self.scaler`` is that object."""
        if self.class_attrs is None:
            self.class_attrs = {}
            for targets, value, ctx in self.m.assignments:
                if len(targets) == 1 and targets[0].startswith("self.") and targets[0].count(".") == 1 and isinstance(value, cst.Call):
                    owner = self.m.class_scope_of(ctx.scope)
                    obj = self._constructed(value) if owner else None
                    if obj is not None:
                        self.class_attrs.setdefault(f"{owner}.{targets[0][5:]}", obj)
        return self.class_attrs.get(f"{cls}.{attr}")

    # --- expressions --------------------------------------------------------------------------------
    def ev(self, node: cst.BaseExpression) -> Val:
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                return EMPTY
            self.df.references.setdefault((self.scope, node.value), []).append((self.next(), node))
            return self._lookup(node.value)
        if isinstance(node, cst.Attribute):
            return self._attribute(node)
        if isinstance(node, cst.Subscript):
            return self._subscript(node)
        if isinstance(node, cst.Call):
            return self._call(node)
        if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
            items = []
            for element in node.elements:
                val = self.ev(element.value)
                items.append(data_of(val) if isinstance(element, cst.StarredElement) else val)
            out = Val(items=tuple(items))
            for item in items:
                if item.objs:
                    out = replace(out, objs=out.objs | item.objs)
            return out
        if isinstance(node, cst.Dict):
            out = EMPTY
            for element in node.elements:
                if isinstance(element, cst.DictElement):
                    self.ev(element.key)
                    out = join(out, self.ev(element.value))
                else:
                    out = join(out, self.ev(element.value))
            return replace(out, items=None)
        if isinstance(node, cst.BinaryOperation):
            left, right = self.ev(node.left), self.ev(node.right)
            return join(data_of(left), data_of(right))
        if isinstance(node, cst.UnaryOperation):
            val = data_of(self.ev(node.expression))
            if isinstance(node.operator, (cst.BitInvert, cst.Not)):
                return replace(val, index=frozenset())  # ~mask: the other rows, not that part
            return val
        if isinstance(node, cst.BooleanOperation):
            return join(self.ev(node.left), self.ev(node.right))
        if isinstance(node, cst.Comparison):
            out = data_of(self.ev(node.left))
            for target in node.comparisons:
                out = join(out, data_of(self.ev(target.comparator)))
            return replace(out, index=frozenset())
        if isinstance(node, cst.IfExp):
            self.ev(node.test)
            return join(self.ev(node.body), self.ev(node.orelse))
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            return self._comprehension(node)
        if isinstance(node, cst.NamedExpr):
            val = self.ev(node.value)
            self._bind(node.target, val)
            return val
        if isinstance(node, cst.Lambda):
            return EMPTY
        if isinstance(node, (cst.Await, cst.Yield)):
            inner = getattr(node, "expression", None) or getattr(node, "value", None)
            if isinstance(inner, cst.BaseExpression):
                return self.ev(inner)
            return EMPTY
        if isinstance(node, cst.StarredElement):
            return data_of(self.ev(node.value))
        # anything else (f-strings, constants, slices): evaluate sub-expressions for their events
        for child in tree_children(node):
            if isinstance(child, cst.BaseExpression):
                self.ev(child)
            elif isinstance(child, cst.FormattedStringExpression):
                self.ev(child.expression)
        return EMPTY

    def _comprehension(self, node) -> Val:
        saved = self.env.copy()
        comp = node.for_in
        while comp is not None:
            iterated = self.ev(comp.iter)
            self._bind_loop_target(comp.target, iterated)
            for cond in comp.ifs:
                self.ev(cond.test)
            comp = comp.inner_for_in
        if isinstance(node, cst.DictComp):
            self.ev(node.key)
            out = self.ev(node.value)
        else:
            out = self.ev(node.elt)
        self.env = saved
        return Val(items=(out,)) if isinstance(node, cst.ListComp) else data_of(out)

    def _attribute(self, node: cst.Attribute) -> Val:
        name = dotted(node)
        attr = node.attr.value
        if name is not None:
            head = name.split(".")[0]
            if name in self.env.names:
                self.df.references.setdefault((self.scope, head), []).append((self.next(), node))
                return self.env.names[name]
            if head in self.module_names and head not in self.env.names:
                return EMPTY
            if head in ("self", "cls") and name.count(".") == 1 and self.scope != MODULE_SCOPE:
                # self.scaler, bound to a constructor in some method of the class (``__init__``)
                cls = self.m.class_scope_of(self.scope)
                obj = self._class_attr(cls, attr) if cls else None
                if obj is not None:
                    return Val(objs=frozenset({obj}))
        base = self.ev(node.value)
        if base.objs and not base.rows:
            if attr.endswith("_") and not attr.startswith("_"):
                # fitted attributes: a search's best_estimator_ is (a clone refitted by) the search
                return Val(objs=base.objs) if attr in ("best_estimator_", "estimator_", "estimators_") else EMPTY
            if attr in ("named_steps", "steps"):
                return Val(objs=base.objs)
            return EMPTY
        if attr == "index":
            out = data_of(base)
            markers = set(out.index)
            for row in out.rows:
                if row[1]:
                    markers.add(row[1][-1])
            return replace(out, index=frozenset(markers), coltaint=frozenset(), taint=frozenset())
        if attr in ("shape", "dtype", "dtypes", "columns", "size", "ndim", "name", "classes_", "mean_", "scale_"):
            return EMPTY
        out = data_of(base)
        if out.coltaint and attr not in ("values", "T", "loc", "iloc", "at", "iat", "str", "dt", "cat", "array", "data"):
            return self._read_columns(out, [attr])
        return out

    def _read_columns(self, val: Val, columns: Optional[List[str]]) -> Val:
        if columns is None:
            return Val(val.rows, val.all_taint(), frozenset(), val.index)
        taint = set(val.taint)
        taint.update(f for c, f in val.coltaint if c in columns)
        return Val(val.rows, frozenset(taint), frozenset(), val.index)

    def _subscript(self, node: cst.Subscript) -> Val:
        base_node = node.value
        via = None
        if isinstance(base_node, cst.Attribute) and base_node.attr.value in ("loc", "iloc", "at", "iat"):
            via = base_node.attr.value
            base_node = base_node.value
        base = self.ev(base_node)
        elements = list(node.slice)
        index_vals = []
        for element in elements:
            sl = element.slice
            if isinstance(sl, cst.Index):
                index_vals.append(self.ev(sl.value))
            else:
                for part in (sl.lower, sl.upper, sl.step):
                    if part is not None:
                        self.ev(part)
                index_vals.append(EMPTY)
        if base.items is not None and len(elements) == 1 and isinstance(elements[0].slice, cst.Index):
            value = elements[0].slice.value
            if isinstance(value, cst.Integer):
                i = int(value.value, 0)
                if -len(base.items) <= i < len(base.items):
                    return base.items[i]
            if isinstance(value, cst.UnaryOperation) and isinstance(value.expression, cst.Integer):
                i = -int(value.expression.value, 0)
                if -len(base.items) <= i < len(base.items):
                    return base.items[i]
            out = EMPTY
            for item in base.items:
                out = join(out, item)
            return out
        if base.objs and not base.rows:
            return Val(objs=base.objs)  # pipeline["clf"], models[name]
        data = data_of(base)
        first = elements[0].slice if elements else None
        # rows taken by fold indices / split outputs
        if index_vals and index_vals[0].index:
            return self._restrict(data, index_vals[0].index, node)
        if isinstance(first, cst.Index):
            part = self._named_part(data, base_node, first.value, via, index_vals[0], node)
            if part is not None:
                return part
        # complementary slices: X[:n], X[n:]
        if isinstance(first, cst.Slice) and (first.lower is not None or first.upper is not None):
            if first.step is None:
                return self._slice_part(data, base_node, first, node, by_label=via == "loc")
        # complementary masks: df[df.date < t], df[df.date >= t]
        if isinstance(first, cst.Index) and isinstance(first.value, cst.Comparison):
            part = self._mask_part(data, base_node, first.value)
            if part is not None:
                return part
        # column selection
        columns = _columns_of(node, via)
        return self._read_columns(data, columns) if data.coltaint else replace(data, coltaint=frozenset())

    def _restrict(self, data: Val, markers: FrozenSet[Tuple[int, str]], node: cst.CSTNode) -> Val:
        for sid, _part in markers:
            self._sink(data, node, "split", True, sid)
        rows = set()
        for row in data.rows:
            path = row[1]
            for sid, part in sorted(markers):
                info = self.df.splits.get(sid)
                if info is not None and not any(s == sid for s, _ in path):
                    info.inputs.add(row)
                    path = path + ((sid, part),)
            rows.add((row[0], path))
        return Val(frozenset(rows), data.taint, data.coltaint, markers)

    def _split_rows(self, info: SplitInfo, data: Val, part: str) -> Val:
        if info.kind in _INFERRED_SPLITS or info.kind == "keyed":
            self._sink(data, info.node, "split", True, info.sid)
        rows = set()
        for row in data.rows:
            info.inputs.add(row)
            rows.add((row[0], row[1] + ((info.sid, part),)))
        markers = frozenset({(info.sid, part)})
        if not data.rows and data.index:
            # ids or indices of a part split again (``ids_tr, ids_va = train_test_split(ids_train)``):
            # the parts are rows of both splits
            markers |= data.index
        return Val(frozenset(rows), data.taint, data.coltaint, markers)

    def _new_split(self, node: cst.CSTNode, kind: str, label: str, confirmed: bool = True) -> SplitInfo:
        info = SplitInfo(self.next(), node, kind, self.scope, self.counter, confirmed=confirmed, label=label)
        self.df.splits[info.sid] = info
        return info

    def _shared_split(self, table: dict, key, node: cst.CSTNode, kind: str, label: str) -> SplitInfo:
        """The unconfirmed split registered under `key` in `table`, made on first use (every slice
        of the same rows, every mask on the same column, is one split)."""
        sid = table.get(key)
        if sid is not None:
            return self.df.splits[sid]
        info = self._new_split(node, kind, label, confirmed=False)
        table[key] = info.sid
        return info

    def _slice_part(self, data: Val, base_node: cst.BaseExpression, sl: cst.Slice, node: cst.CSTNode, by_label: bool = False) -> Val:
        """One part of complementary slices of the same rows. The split is confirmed by two parts
        on one boundary (``X[:n]``/``X[n:]``, ``df.loc[:day]``/``df.loc[day:]``), or, by position,
        by a head and a tail that do not overlap (``X[:n]``/``X[n + gap:]``). Overlapping shifted
        slices (``s[:-1]``/``s[1:]``, ``s[:-k]``/``s[k:]``) are a lagged pair of one series: no split."""
        base_text = _text(self.m, base_node)
        lower = _bound_text(self.m, self._definition(sl.lower), base_text)
        upper = _bound_text(self.m, self._definition(sl.upper), base_text)
        if lower is None and upper is None:
            return data
        # one split per data (by its rows): series[:n] and scaled[n:] split the same rows
        key = (self.scope, data.rows or base_text)
        info = self._shared_split(self.slice_keys, key, node, "slice", f"slicing `{base_text}`")
        uppers, lowers = info.bounds
        if lower is None:
            part = TRAIN
            uppers.update((upper, f"<head>{upper}"))
        elif upper is None:
            part = TEST
            lowers.update((lower, f"<tail>{lower}"))
        else:
            part = VAL
            lowers.add(lower)
            uppers.add(upper)
        if not by_label and part != VAL:
            heads = [b[6:] for b in uppers if b.startswith("<head>")]
            tails = [b[6:] for b in lowers if b.startswith("<tail>")]
            if any(not _slices_overlap(h, t) for h in heads for t in tails):
                info.confirmed = True  # a head X[:a] and a tail X[b:] that do not overlap, both taken
        if uppers & lowers:
            info.confirmed = True  # X[:n] and X[n:] (or X[n:m]) on one boundary
        if node is self.direct_value and len(self.targets) == 1:
            # the assigned name says which part this is: X_test = X[:n], X_valid = X_full[:5000] / 255.
            name = self.targets[0]
            held_out = (is_test_name(name) or is_val_name(name)) and not is_train_name(name)
            training = is_train_name(name) and not (is_test_name(name) or is_val_name(name))
            if (part == TRAIN and held_out) or (part == TEST and training):
                info.swap = True
        return self._split_rows(info, data, part)

    def _definition(self, node: Optional[cst.BaseExpression]) -> Optional[cst.BaseExpression]:
        """A bound written as a name, read through the definition that reaches it: with ``begin = 0``
        and ``end = int(len(d) * r)``, ``d[begin:end]`` is ``d[:int(len(d) * r)]``."""
        for _ in range(3):
            if isinstance(node, cst.Name) and node.value in self.env.exprs:
                node = self.env.exprs[node.value]
            else:
                break
        return node

    def _named_part(
        self, data: Val, base_node: cst.BaseExpression, value: cst.BaseExpression, via: Optional[str], index: Val, node: cst.CSTNode
    ) -> Optional[Val]:
        """Rows taken by a selector whose name or definition says which part they are:
        ``data["train"]``/``data["test"]`` (a dict of splits), a mask held in a name (``X[m]``,
        ``X[~m]`` with ``m = df.split == "train"``), a negated mask (``df[~(df.year < 2020)]``),
        and index arrays of unseen origin named for a part (``X[train_idx]``, ``X.iloc[val_idx]``).
        Each is one split per data, confirmed once a training and a held-out part are taken."""
        if not data.rows:
            return None
        base_text = _text(self.m, base_node)
        if isinstance(value, cst.SimpleString) and via is None:
            key = value.evaluated_value if isinstance(value.evaluated_value, str) else ""
            part = _key_part(key)
            if part is None:
                return None
            info = self._shared_split(self.keyed_keys, (self.scope, data.rows), node, "keyed", f"the keys of `{base_text}`")
            return self._confirm_part(info, data, part)
        negated = False
        expr = value
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
            negated, expr = True, expr.expression
        if isinstance(expr, cst.Name) and isinstance(self.env.exprs.get(expr.value), cst.Comparison):
            return self._mask_part(data, base_node, self.env.exprs[expr.value], negated)
        if negated and isinstance(expr, cst.Comparison):
            return self._mask_part(data, base_node, expr, negated)
        name = dotted(expr)
        if name is None or negated or index.index or isinstance(self.env.exprs.get(name), cst.Comparison):
            return None
        part = _named_index_part(name)
        if part is None:
            return None
        info = self._shared_split(self.index_keys, (self.scope, data.rows), node, "index", f"the indices `{name}`")
        return self._confirm_part(info, data, part)

    def _confirm_part(self, info: SplitInfo, data: Val, part: str) -> Val:
        info.seen_parts.add(part)
        if TRAIN in info.seen_parts and (TEST in info.seen_parts or VAL in info.seen_parts):
            info.confirmed = True
        return self._split_rows(info, data, part)

    def _mask_part(self, data: Val, base_node: cst.BaseExpression, comparison: cst.Comparison, negate: bool = False) -> Optional[Val]:
        if len(comparison.comparisons) != 1:
            return None
        op = comparison.comparisons[0].operator
        left = _text(self.m, comparison.left)
        right = _text(self.m, comparison.comparisons[0].comparator)
        base_text = _text(self.m, base_node)
        comparator = comparison.comparisons[0].comparator
        if isinstance(op, (cst.LessThan, cst.LessThanEqual)):
            part, key = TRAIN, f"{left}|{right}"
        elif isinstance(op, (cst.GreaterThan, cst.GreaterThanEqual)):
            part, key = TEST, f"{left}|{right}"
        elif isinstance(op, (cst.Equal, cst.NotEqual)) and isinstance(comparator, (cst.Name, cst.Attribute, cst.Subscript)) and not isinstance(comparison.left, cst.SimpleString):
            # df[df.fold != k] / df[df.fold == k]: the training folds and the held-out fold
            part, key = (TEST if isinstance(op, cst.Equal) else TRAIN), f"{left}|{right}"
        elif isinstance(op, (cst.Equal, cst.NotEqual)) and isinstance(comparator, cst.SimpleString):
            value = comparator.evaluated_value if isinstance(comparator.evaluated_value, str) else ""
            if is_test_name(value):
                part = TEST if isinstance(op, cst.Equal) else TRAIN
            elif is_train_name(value):
                part = TRAIN if isinstance(op, cst.Equal) else TEST
            elif is_val_name(value) and isinstance(op, cst.Equal):
                part = VAL
            else:
                return None
            key = f"{left}|split-column"
        else:
            return None
        if negate:
            if part == VAL:
                return None  # everything but the validation rows: training and test together
            part = TEST if part == TRAIN else TRAIN
        mask_key = (self.scope, data.rows or base_text, key)
        info = self._shared_split(self.mask_keys, mask_key, comparison, "mask", f"the masks on `{left}`")
        return self._confirm_part(info, data, part)

    # --- calls ---------------------------------------------------------------------------------------
    def _args(self, call: cst.Call) -> Tuple[List[Val], Dict[str, Val], List[cst.BaseExpression]]:
        positional, keywords, nodes = [], {}, []
        for arg in call.args:
            val = self.ev(arg.value)
            if arg.keyword is not None:
                keywords[arg.keyword.value] = val
            elif arg.star:
                positional.append(data_of(val))
                nodes.append(arg.value)
            else:
                positional.append(val)
                nodes.append(arg.value)
        return positional, keywords, nodes

    def _call(self, call: cst.Call) -> Val:
        func = call.func
        name = dotted(func)
        qual = self.m.imports.qualify(name) if name else None
        is_method = isinstance(func, cst.Attribute) and not (
            name is not None and (name.split(".")[0] in self.module_names and name.split(".")[0] not in self.env.names)
        )
        if is_method and (name is not None and name in self.m.functions or self._local_function(call, name or "")):
            is_method = False  # self.helper(...), obj.method(...) of a class defined here: its summary
        if not is_method:
            return self._function_call(call, name or "", qual or "")
        receiver = self.ev(func.value)
        return self._method_call(call, func.attr.value, receiver, func.value)

    def _constructed(self, call: cst.Call) -> Optional[Obj]:
        name = dotted(call.func)
        if name is None:
            return None
        qual = self.m.imports.qualify(name) or name
        last = qual.rsplit(".", 1)[-1]
        if name in self.m.classes or last in self.m.classes and "." not in name:
            return None
        kind = None
        if last in _STATELESS:
            return None
        if last in ("FeatureUnion", "make_union", "Pipeline", "make_pipeline", "ColumnTransformer", "make_column_transformer") \
                and self._stateless_steps(call, last):
            return None  # every step learns nothing from the rows: neither does the union or pipeline
        if last in _GIVEN_CATEGORIES and self._given_categories(call):
            return None  # OneHotEncoder(categories=[["a", "b"]]): the fit learns nothing from the rows
        if last in _RESAMPLER_CLASSES or qual.startswith(("imblearn.over_sampling", "imblearn.under_sampling", "imblearn.combine")):
            kind = RESAMPLER
        elif last in _SPLITTER_CLASSES:
            kind = SPLITTER
        elif last in _SEARCH_CLASSES:
            kind = SEARCH
        elif last in _PIPELINE_CLASSES:
            kind = PIPELINE
        elif last in _CALIBRATORS:
            kind = CALIBRATOR
        elif last in _EMBEDDERS:
            kind = EMBEDDER
        elif last in _TRANSFORMER_CLASSES or (_TRANSFORMER_MODULES.match(qual) and last[:1].isupper()):
            kind = TRANSFORMER
        elif _ESTIMATOR_MODULES.match(qual) and last[:1].isupper() or _ESTIMATOR_NAME.search(last):
            kind = ESTIMATOR
        if kind is None:
            return None
        inner = []
        for arg in call.args[:1]:
            inner_val = self.env.names.get(dotted(arg.value) or "")
            if inner_val is not None:
                inner.extend(inner_val.objs)
        return Obj(self.next(), kind, last, call, tuple(inner))

    def _stateless_steps(self, call: cst.Call, kind: str) -> bool:
        """Whether every step a pipeline, union or column transformer is built from, as written
        in the call, learns nothing from the rows it is fitted on: a stateless scikit-learn
        class (``Normalizer``, ``FunctionTransformer(np.log1p)``) or a class of this file whose
        ``fit`` (and ``fit_transform``, if it has one) stores nothing on ``self`` (``def fit(self,
        x): return x``). ``Pipeline([(name, Step()), ...])``, ``FeatureUnion([(name, Step(k)) for k
        in kernels])``, ``make_union(A(), B())``, ``ColumnTransformer([(name, Step(), cols)],
        remainder="passthrough")``, ``make_column_transformer((Step(), cols))``."""
        if not call.args or call.args[0].keyword is not None:
            return False
        if kind == "ColumnTransformer" and any(
                a.keyword is not None and a.keyword.value == "remainder" and not (
                    isinstance(a.value, cst.SimpleString) and a.value.evaluated_value in ("drop", "passthrough"))
                for a in call.args):
            return False  # remainder=StandardScaler(): a step of its own
        first = call.args[0].value
        if kind == "make_column_transformer":
            steps = [a.value for a in call.args if a.keyword is None]
        elif isinstance(first, (cst.List, cst.Tuple)) and kind not in ("make_union", "make_pipeline"):
            steps = [e.value for e in first.elements]
        elif isinstance(first, (cst.ListComp, cst.GeneratorExp)):
            steps = [first.elt]
        else:
            steps = [a.value for a in call.args if a.keyword is None]
        index = 0 if kind == "make_column_transformer" else 1
        built = []
        for step in steps:
            if isinstance(step, cst.Tuple) and len(step.elements) > index:
                step = step.elements[index].value
            if isinstance(step, cst.SimpleString) and step.evaluated_value in ("drop", "passthrough"):
                continue
            if not isinstance(step, cst.Call):
                return False
            built.append(step)
        return bool(built) and all(self._learns_nothing(step) for step in built)

    def _learns_nothing(self, call: cst.Call) -> bool:
        name = dotted(call.func)
        if name is None:
            return False
        last = (self.m.imports.qualify(name) or name).rsplit(".", 1)[-1]
        if last in _STATELESS:
            return True
        if name not in self.m.classes:
            return False
        fit = self.m.method_key(name, "fit")
        if fit is None or fit not in self.m.functions:
            return False  # inherited: what it stores is not known here
        for method in (fit, self.m.method_key(name, "fit_transform")):
            if method is None or method not in self.m.functions:
                continue
            body = self.m.functions[method].node.body
            targets = [n.target for n in self.m.index.nodes((cst.AssignTarget, cst.AugAssign, cst.AnnAssign), body)]
            if any(isinstance(t, (cst.Attribute, cst.Subscript)) for t in targets):
                return False  # ``self.mean_ = ...`` (or anything else it stores into)
            if any(isinstance(c.func, cst.Name) and c.func.value == "setattr" for c in self.m.index.nodes(cst.Call, body)):
                return False
        return True

    def _fitted_models(self, node: Optional[cst.BaseExpression]) -> Tuple[Obj, ...]:
        """The models ``node`` names that were fitted before this point (by object, or by the
        receiver's name for models of unknown class); () when any of them was not."""
        if node is None:
            return ()
        text = dotted(node)
        if text is None:
            return ()
        val = self.env.names.get(text)
        objs = tuple(o for o in (val.objs if val is not None else ()) if o.kind in (ESTIMATOR, PIPELINE, SEARCH))
        if val is not None and val.objs and not objs:
            return ()  # a transformer, a splitter
        keys = [f"obj:{o.oid}" for o in objs] or [self._key(None, text)]
        fitted = {f.key for f in self.df.fits if f.kind not in (TRANSFORMER, RESAMPLER)}
        if not all(key in fitted for key in keys):
            return ()
        return objs or (Obj(self.next(), ESTIMATOR, text, None),)

    def _scoring_wrapper(self, call: cst.Call, last: str) -> Optional[Obj]:
        """``Wrapper(fitted_model, ...)`` whose ``fit`` only scores the model it is handed:
        told so (``cv="prefit"``, ``prefit=True``), or a class we do not know as a learner (eli5's
        ``PermutationImportance``, whose ``cv`` defaults to ``"prefit"``). Known learners (searches,
        ensembles, pipelines) clone and refit what they are handed: not these."""
        if not last[:1].isupper() or last in self.m.classes:
            return None  # functions: clone(model), deepcopy(model) are fitted afresh; classes of the file
        model_node = call.args[0].value if call.args and call.args[0].keyword is None and not call.args[0].star else _keyword_node(call, ("estimator", "model", "base_estimator"))
        inner = self._fitted_models(model_node)
        if not inner:
            return None
        known = self._constructed(call)
        if known is not None and known.kind != ESTIMATOR:
            return None  # calibrators, searches, pipelines, selectors keep their own reading
        cv = _keyword_node(call, ("cv",))
        prefit = _keyword_node(call, ("prefit",))
        said_prefit = (isinstance(cv, cst.SimpleString) and cv.evaluated_value == "prefit") or (
            isinstance(prefit, cst.Name) and prefit.value == "True"
        )
        if said_prefit:
            return Obj(self.next(), SCORER, last, call, inner)
        if cv is not None or prefit is not None or known is not None:
            return None  # a known learner, or told to cross-validate (refit) the model
        return Obj(self.next(), SCORER, last, call, inner)

    def _given_categories(self, call: cst.Call) -> bool:
        """An encoder told its categories as constants (``categories=[["I", "II", "III"]]``, or a
        name bound to such a literal), with nothing it would count in the rows (no
        ``min_frequency``/``max_categories``)."""
        given = _keyword_node(call, ("categories",))
        if given is None or _keyword_node(call, ("min_frequency", "max_categories")) is not None:
            return False
        if isinstance(given, cst.SimpleString) and given.evaluated_value == "auto":
            return False

        def constant(node: cst.BaseExpression, depth: int = 0) -> bool:
            if depth > 8:
                return False
            if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float)):
                return True
            if isinstance(node, cst.Name):
                if node.value in ("None", "True", "False"):
                    return True
                definition = self._definition(node)
                return definition is not node and definition is not None and constant(definition, depth + 1)
            if isinstance(node, cst.UnaryOperation):
                return constant(node.expression, depth + 1)
            if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
                return all(not isinstance(e, cst.StarredElement) and constant(e.value, depth + 1) for e in node.elements)
            if isinstance(node, cst.Call) and (dotted(node.func) or "").rsplit(".", 1)[-1] in ("range", "list", "arange", "array"):
                return all(arg.keyword is None and constant(arg.value, depth + 1) for arg in node.args)
            return False

        return constant(given)

    def _function_call(self, call: cst.Call, name: str, qual: str) -> Val:
        last = qual.rsplit(".", 1)[-1] if qual else name.rsplit(".", 1)[-1]
        head = name.split(".")[0]
        # constructors
        scorer = self._scoring_wrapper(call, last)
        if scorer is not None:
            self._args(call)
            return Val(objs=frozenset({scorer}))
        obj = self._constructed(call)
        if obj is not None:
            positional, keywords, _ = self._args(call)
            if obj.kind in (SEARCH, PIPELINE, CALIBRATOR):
                inner = set(obj.inner)
                for val in positional + list(keywords.values()):
                    inner.update(val.objs)
                obj = replace(obj, inner=tuple(sorted(inner, key=lambda o: o.oid)))
            if obj.kind == PIPELINE and _last_step_kinds(obj.cls, positional, keywords) == {EMBEDDER}:
                obj = replace(obj, kind=EMBEDDER)  # PCA then t-SNE: the pipeline cannot transform other rows
            return Val(objs=frozenset({obj}))
        positional, keywords, nodes = self._args(call)
        if last == "train_test_split" or last == "iterative_train_test_split":
            return self._train_test_split(call, positional, last)
        if last == "random_split" and positional:
            return self._random_split(call, positional, keywords)
        if last in _CV_HELPERS:
            return self._cv_helper(call, last, positional, keywords)
        if last == "permutation_importance" and len(positional) >= 2:
            # sklearn.inspection.permutation_importance(model, X, y): scores the fitted model on X
            model_objs = sorted(positional[0].objs, key=lambda o: o.oid)
            key = f"obj:{model_objs[0].oid}" if model_objs else self._key(None, _text(self.m, nodes[0]))
            self.df.evals.append(EvalEvent(key, call, "score", data_of(positional[1]), self.next(), self.scope))
            self._sink(positional[1], call, "eval", True)
            return EMPTY
        if qual.startswith("sklearn.preprocessing.") and last in _FIT_TRANSFORM_FUNCTIONS and (positional or "X" in keywords):
            data = positional[0] if positional else keywords["X"]
            fit = self._fit(call, TRANSFORMER, last, last, None, "", data, None, nodes[0] if nodes else None)
            return Val(data_of(data).rows, flat(data).taint | {fit.fid}, frozenset(), data_of(data).index)
        if qual in _CONCAT_FUNCTIONS or last in ("concatenate", "vstack", "concat", "cat", "row_stack", "ConcatDataset") and head in self.module_names | {"ConcatDataset"}:
            out = EMPTY
            for val in positional:
                out = join(out, flat(val))
                for item in val.items or ():
                    out = join(out, flat(item))
            return replace(out, index=frozenset())
        if last in ("enumerate", "list", "tuple", "iter", "tqdm", "sorted", "reversed", "track") and positional:
            inner = positional[0]
            if inner.gen:
                return replace(inner, enum=inner.enum or last == "enumerate")
            if last == "enumerate" and inner.items is None:
                return Val(items=(EMPTY, self._element(inner)))  # loop target (i, x)
            return inner
        if last == "next" and positional and positional[0].gen:
            return Val(items=tuple(Val(index=frozenset((sid, part) for sid in positional[0].gen)) for part in (TRAIN, TEST)))
        if last == "Subset" and len(positional) >= 2 and positional[1].index:
            return self._restrict(data_of(positional[0]), positional[1].index, call)  # torch Subset(ds, train_idx)
        if last in ("merge", "merge_asof", "merge_ordered") and head in self.module_names and positional:
            # pd.merge(left, lookup): the left frame's rows, with the looked-up columns added; a side
            # table merged into both the training and the test frame does not make them one data
            out = replace(data_of(positional[0]), index=frozenset())
            for val in positional[1:] + list(keywords.values()):
                out = join(out, Val(taint=flat(val).taint))
            return out
        if last in _KEEP_INDEX and head in self.module_names and positional and positional[0].index and not positional[0].items:
            return positional[0]  # np.array(split["train"]), torch.tensor(train_idx): still those indices
        if last == "zip" and positional:
            return Val(items=tuple(self._element(v) for v in positional))
        # local functions: their summaries
        local = self._local_function(call, name)
        if local is not None:
            self._sink_all(positional + list(keywords.values()), call, "call", True)
            return self._apply_summary(local, call, positional, keywords)
        # models called directly (torch): a sink for what they are given
        if name and self.m.has_role(name, "model", self.scope, by_name=False):
            self._sink_all(positional, call, "model", True)
            return self._union(positional)
        if head in _PLOTTING_HEADS or (head in ("print", "display", "len", "isinstance", "type", "repr", "str", "format")):
            return EMPTY
        named = self._named_split_call(call, name, last, positional, keywords, nodes)
        if named is not None:
            return named
        if _SINK_CALL_NAMES.match(last):
            self._sink_all(positional + list(keywords.values()), call, "call", True)
        # unknown: the result is derived from the data handed in (or a fresh root)
        data_args = [v for v in positional + list(keywords.values()) if data_of(v).rows]
        if data_args:
            return replace(self._union(data_args), index=frozenset())
        return self._loaded()

    def _named_split_call(
        self, call: cst.Call, name: str, last: str, positional: List[Val], keywords: Dict[str, Val], nodes: List[cst.BaseExpression]
    ) -> Optional[Val]:
        """A function we cannot see whose name says it splits (``split_samples``, ``split_data``),
        handed whole data, whose result is unpacked straight into names that each say a part
        (``(X_train, X_test), (y_train, y_test) = split_samples(X, y, [0.9, 0.1])``): a split,
        each name the part it says, of the data handed in."""
        if "split" not in words(last) or call is not self.direct_value or self.target_node is None:
            return None
        if not isinstance(self.target_node, (cst.Tuple, cst.List)) or len(self.targets) < 2:
            return None
        parts = {}
        for target in self.targets:
            part = _part_of_name(target)
            if part is None:
                return None  # a name that is not a part (ids, a report): the shape is not known
            parts[target] = part
        if TRAIN not in parts.values() or not ({TEST, VAL} & set(parts.values())):
            return None
        data_nodes = [(val, node) for val, node in zip(positional, nodes) if data_of(val).rows]
        data_nodes += [(val, None) for val in keywords.values() if data_of(val).rows]
        if not data_nodes:
            return None
        for val, node in data_nodes:
            if node is None or _part_of_name(_text(self.m, node)) is not None or is_train_name(_text(self.m, node)) or is_test_name(_text(self.m, node)):
                return None  # parts handed in (``prepare(train_df, test_df)``): not one split
        data = EMPTY
        for val, _node in data_nodes:
            data = join(data, data_of(val))
        info = self._new_split(call, "named_call", f"`{last}`")
        for index, (val, _node) in enumerate(data_nodes):
            self._sink(val, call, "split", index == 0)
        split_parts = {part: self._split_rows(info, data, part) for part in set(parts.values())}

        def shaped(target: cst.BaseExpression) -> Val:
            if isinstance(target, (cst.Tuple, cst.List)):
                return Val(items=tuple(shaped(e.value) for e in target.elements))
            text = dotted(target)
            return split_parts[parts[text]] if text in parts else EMPTY

        for target, part in parts.items():
            _add_name(info, part, target)
        return shaped(self.target_node)

    def _union(self, vals: Iterable[Val]) -> Val:
        out = EMPTY
        for val in vals:
            out = join(out, flat(val))
        return out

    def _local_function(self, call: cst.Call, name: str) -> Optional[str]:
        if self.local_calls is None:
            self.local_calls = {id(e.node): e.callee for e in self.m.effects if e.kind == "call" and e.callee}
        return self.local_calls.get(id(call))

    def _apply_summary(self, key: str, call: cst.Call, positional: List[Val], keywords: Dict[str, Val]) -> Val:
        summary = self.df.summaries.get(key)
        if summary is None:
            return self._union(positional + list(keywords.values())) if positional or keywords else self.root()
        params = list(summary.params)
        offset = 1 if params and params[0] in ("self", "cls") and isinstance(call.func, cst.Attribute) else 0
        mapping: Dict[int, Val] = {}
        for index, val in enumerate(positional):
            if index + offset < len(params):
                root = summary.param_roots[index + offset]
                if root:
                    mapping[root] = val
        for keyword, val in keywords.items():
            if keyword in params:
                root = summary.param_roots[params.index(keyword)]
                if root:
                    mapping[root] = val
        if self.scope != MODULE_SCOPE:
            self.global_reads.update(summary.globals)  # the caller reads what its helper reads
        # the module-level names the helper reads, as bound where the module calls it; only the
        # helper's own fits and evaluations (and its helpers') see them: global roots are shared
        global_mapping: Dict[int, Val] = {}
        if self.scope == MODULE_SCOPE:
            for global_name in sorted(summary.globals):
                root = self.globals.get(global_name)
                bound = self.env.names.get(global_name)
                if root is not None and bound is not None and root not in mapping and data_of(bound).rows:
                    global_mapping[root] = bound
        reached = self._reached_scopes(key) if global_mapping else frozenset()
        # instantiate: fits and splits inside the helper (or in helpers it calls, which were
        # instantiated with its parameters) now also see the caller's rows
        if mapping or global_mapping:
            for fit in self.df.fits:
                added = _substitute(frozenset(fit.rows), mapping)
                if fit.scope in reached:
                    added |= _substitute(frozenset(fit.rows), global_mapping)
                if added:
                    fit.rows.update(added)
                    fit.instances.append((call, frozenset(added)))
            for evaluation in self.df.evals:
                if evaluation.scope not in reached:
                    continue
                known = evaluation.data.rows.union(*(rows for _call, rows in evaluation.instances))
                added = _substitute(known, global_mapping) | _substitute(known, mapping)
                if added:
                    evaluation.instances.append((call, frozenset(added)))
            split_roots: Dict[int, Set[int]] = {}
            for info in self.df.splits.values():
                added = _substitute(frozenset(info.inputs), mapping)
                if added:
                    info.inputs.update(added)
                    for root, _path in info.inputs:
                        if root in mapping:
                            split_roots.setdefault(root, set()).add(info.sid)
            for root, sids in split_roots.items():
                # the helper splits (or cross-validates) what it is handed; a slice or mask whose
                # complement it never takes (``X[y == digit]`` to draw a class) is no split
                if any(self.df.split_of(sid) is not None for sid in sids):
                    self._sink(mapping[root], call, "split", True)
        return _substitute_val(summary.ret, mapping, self)

    def _reached_scopes(self, key: str) -> FrozenSet[str]:
        """The function ``key`` and every function of the file it calls, directly or not."""
        if not hasattr(self, "_callees"):
            self._callees: Dict[str, Set[str]] = {}
            for effect in self.m.effects:
                if effect.kind == "call" and effect.callee:
                    self._callees.setdefault(effect.ctx.scope, set()).add(effect.callee)
        seen: Set[str] = set()
        todo = [key]
        while todo:
            scope = todo.pop()
            if scope in seen:
                continue
            seen.add(scope)
            todo.extend(self._callees.get(scope, ()))
            todo.extend(k for k in self.m.functions if k.startswith(scope + "."))  # nested functions
        return frozenset(seen)

    def _method_call(self, call: cst.Call, method: str, receiver: Val, receiver_node: cst.BaseExpression) -> Val:
        objs = receiver.objs
        kinds = {o.kind for o in objs}
        receiver_text = _text(self.m, receiver_node)
        positional, keywords, nodes = self._args(call)
        x = positional[0] if positional else keywords.get("X", keywords.get("x"))
        x_node = nodes[0] if nodes else _keyword_node(call, ("X", "x"))
        y = positional[1] if len(positional) > 1 else keywords.get("y")
        obj = min(objs, key=lambda o: o.oid) if objs else None

        if method == "fit_on_texts" and x is not None:
            # a Keras Tokenizer learns its vocabulary (and word frequencies) from these texts
            fit = self._fit(call, TRANSFORMER, method, "Tokenizer", obj, receiver_text, x, None, x_node)
            if obj is None:  # remember the fit by the receiver's name
                self.env.names[f"<tokenizer>{receiver_text}"] = Val(taint=frozenset({fit.fid}))
            return EMPTY
        if method in ("texts_to_sequences", "texts_to_matrix", "sequences_to_matrix") and x is not None:
            fits = frozenset()
            for o in objs:
                fits |= self.env.fits.get(o.oid, frozenset())
            marker = self.env.names.get(f"<tokenizer>{receiver_text}")
            if marker is not None:
                fits |= marker.taint
            return Val(data_of(x).rows, flat(x).taint | fits, frozenset(), data_of(x).index)
        if method == "fit" and x is not None and kinds and kinds <= {SCORER}:
            # PermutationImportance(fitted).fit(X_test, y_test): scores the wrapped model
            for inner in sorted({o for scorer in objs for o in scorer.inner}, key=lambda o: o.oid):
                key = f"obj:{inner.oid}" if inner.node is not None else self._key(None, inner.cls)
                self.df.evals.append(EvalEvent(key, call, "score", data_of(x), self.next(), self.scope))
            self._sink(x, call, "eval", True)
            if y is not None:
                self._sink(y, call, "eval", False)
            return Val(objs=objs)
        if method in ("fit", "fit_transform") and x is not None and kinds and kinds <= {EMBEDDER}:
            # an embedding of exactly these rows: nothing it learns applies to other rows (where
            # its output goes is kept: a model scored on a test split embedded on its own)
            if method == "fit_transform":
                fit = self._fit(call, EMBEDDER, method, obj.cls if obj else "", obj, receiver_text, x, y, x_node)
                return Val(data_of(x).rows, flat(x).taint | {fit.fid}, frozenset(), data_of(x).index)
            return Val(objs=objs)
        if method in ("fit", "fit_transform", "fit_resample", "fit_sample", "partial_fit") and x is not None:
            if kinds & {TRANSFORMER, RESAMPLER} or (method == "fit_transform" and kinds & {PIPELINE, ESTIMATOR}):
                kind = RESAMPLER if RESAMPLER in kinds else TRANSFORMER
                fit = self._fit(call, kind, method, obj.cls if obj else "", obj, receiver_text, x, y, x_node)
                if method in ("fit_resample", "fit_sample"):  # fit_sample: imbalanced-learn before 0.4
                    xs = Val(data_of(x).rows, flat(x).taint | {fit.fid}, frozenset(), frozenset())
                    ys = Val(data_of(y).rows, flat(y).taint | {fit.fid}, frozenset(), frozenset()) if y is not None else EMPTY
                    return Val(items=(xs, ys))
                if method == "fit_transform":
                    return Val(data_of(x).rows, flat(x).taint | {fit.fid}, frozenset(), data_of(x).index)
                return Val(objs=objs)
            if method in ("fit_resample", "fit_sample"):
                return Val(items=(flat(x), flat(y) if y is not None else EMPTY))
            if method == "fit_transform":
                return Val(data_of(x).rows, flat(x).taint, frozenset(), data_of(x).index)
            # a model's fit
            kind = SEARCH if SEARCH in kinds else CALIBRATOR if CALIBRATOR in kinds else PIPELINE if PIPELINE in kinds else ESTIMATOR
            if kinds & {SPLITTER}:
                return EMPTY
            if kind == SEARCH:
                info = self._new_split(call, "cv", f"the cross-validation in `{receiver_text}.fit`")
                self._split_rows(info, data_of(x), TRAIN)
                if y is not None:
                    self._split_rows(info, data_of(y), TRAIN)
            if "validation_split" in keywords:
                # Keras holds out the last rows of what it is given for validation
                info = self._new_split(call, "validation_split", f"`validation_split` of `{receiver_text}.fit`")
                self._split_rows(info, data_of(x), TRAIN)
                self._sink(x, call, "split", True)
            self._fit(call, kind, method, obj.cls if obj else "", obj, receiver_text, x, y, x_node)
            self._sink(x, call, "cv" if kind == SEARCH else "fit", True)
            if y is not None:
                self._sink(y, call, "fit", False)
            self._sink_all(list(keywords.values()), call, "fit", False)
            return Val(objs=objs) if objs else EMPTY
        if method == "isin" and positional and not objs:
            markers = _membership_markers(self.df, positional[0])
            if markers:
                # a mask selecting the rows whose key is among the members of one part of a split
                return Val(data_of(receiver).rows, frozenset(), frozenset(), markers)
        if method in _APPLY_METHODS and call.args and not objs and data_of(receiver).rows:
            applied = self._apply_function(call, call.args[0].value, data_of(receiver))
            if applied is not None:
                return applied
        if method in ("transform", "inverse_transform") and (kinds & {TRANSFORMER, PIPELINE, ESTIMATOR} or not objs) and x is not None:
            fits = frozenset()
            for o in objs:
                fits |= self.env.fits.get(o.oid, frozenset())
            return Val(data_of(x).rows, flat(x).taint | fits, frozenset(), data_of(x).index)
        if method in _EVAL_METHODS and x is not None and not (kinds & {TRANSFORMER, RESAMPLER, SPLITTER}):
            key = self._key(obj, receiver_text)
            self.df.evals.append(EvalEvent(key, call, method, data_of(x), self.next(), self.scope))
            self._sink(x, call, "eval", True)
            if y is not None:
                self._sink(y, call, "eval", False)
            return Val(data_of(x).rows, frozenset(), frozenset(), frozenset())
        if method == "split" and (SPLITTER in kinds or (not objs and re.search(r"fold|kf|cv|split|sss|gss|tscv", receiver_text, re.I) and not data_of(receiver).rows)) and x is not None:
            info = self._new_split(call, "folds", f"`{receiver_text}.split`")
            for val in positional + list(keywords.values()):
                for row in data_of(val).rows:
                    info.inputs.add(row)
            return Val(gen=frozenset({info.sid}))
        data = data_of(receiver)
        if method == "sample" and data.rows and ("frac" in keywords or "n" in keywords or positional):
            key = (self.scope, data.rows)
            sid = self.sample_keys.get(key)
            info = self.df.splits[sid] if sid is not None else self._new_split(call, "sample", f"`{receiver_text}.sample`", confirmed=False)
            self.sample_keys[key] = info.sid
            return self._split_rows(info, data, TRAIN)
        if method == "drop" and data.rows and positional and positional[0].index and "axis" not in keywords:
            markers = [(sid, part) for sid, part in positional[0].index if self.df.splits.get(sid) and self.df.splits[sid].kind == "sample"]
            if markers:
                info = self.df.splits[markers[0][0]]
                info.confirmed = True
                return self._split_rows(info, data, TEST)
        if method == "drop" and data.coltaint:
            dropped = _dropped_columns(call)
            if dropped is not None:
                return replace(data, coltaint=frozenset((c, f) for c, f in data.coltaint if c not in dropped), index=frozenset())
            return replace(data, index=frozenset())
        if method in ("append", "extend", "insert") and positional and isinstance(receiver_node, cst.Name) and receiver_node.value in self.lists:
            # xs.append(window) on a list built here: the list now holds that data too
            added = flat(positional[-1])
            if not added.empty:
                name = receiver_node.value
                # rows of data lose their part markers; ids of a part (no rows) keep them: the
                # list collects the members of that part (``train_ids.extend(ids_tr)``)
                kept = added.index if not added.rows else frozenset()
                self.env.names[name] = join(data_of(self.env.names.get(name, EMPTY)), replace(added, index=kept))
            return EMPTY
        if method in ("append",) and data.rows and positional:
            return join(data, flat(positional[0]))
        if method in ("sum", "mean", "std", "min", "max", "count", "nunique", "describe", "info", "head", "tail", "corr", "value_counts", "plot", "hist", "isnull", "isna", "unique", "tolist", "to_csv", "to_parquet", "save", "print"):
            return Val(data.rows, data.taint, data.coltaint, frozenset()) if method in ("head", "tail") else EMPTY
        if data.rows or data.taint or data.coltaint:
            extra = [flat(v) for v in positional if data_of(v).taint]
            out = replace(data, index=frozenset() if method not in ("copy", "reset_index", "to_numpy", "astype", "reshape") else data.index)
            for val in extra:
                out = join(out, Val(taint=val.taint))
            if method in ("assign", "join", "merge"):
                for val in positional + list(keywords.values()):
                    out = join(out, Val(taint=flat(val).taint))
            return out
        if objs:
            if method in ("set_params", "set_output", "fit"):
                return Val(objs=objs)
            return EMPTY
        if _SINK_CALL_NAMES.match(method) and method not in ("transform",):
            self._sink_all(positional + list(keywords.values()), call, "call", True)
            return EMPTY
        if method.startswith(("load", "read", "get", "fetch")) or method in ("toPandas", "collect", "to_pandas"):
            return self._loaded()  # data from elsewhere: mnist.load_data(), spark.read.csv(...)
        return EMPTY

    def _apply_function(self, call: cst.Call, func: cst.BaseExpression, data: Val) -> Optional[Val]:
        """``df[cols].apply(helper)`` / ``s.map(lambda c: ...)`` / ``df.transform(f)``: the function
        runs on the receiver's data, so a fit inside it fits that data (as a call would)."""
        if isinstance(func, cst.Lambda):
            params = [p.name.value for p in func.params.params]
            if not params:
                return None
            saved = {name: self.env.names.get(name) for name in params}
            self.env.names[params[0]] = data
            for name in params[1:]:
                self.env.names[name] = EMPTY
            out = self.ev(func.body)
            for name, val in saved.items():
                if val is None:
                    self.env.names.pop(name, None)
                else:
                    self.env.names[name] = val
            return Val(data.rows, data.taint | flat(out).taint, data.coltaint, frozenset())
        name = dotted(func)
        if name is None or name not in self.m.functions or name not in self.df.summaries:
            return None
        out = self._apply_summary(name, call, [data], {})
        return Val(data.rows, data.taint | flat(out).taint, data.coltaint, frozenset())

    def _key(self, obj: Optional[Obj], receiver_text: str) -> str:
        if obj is not None:
            return f"obj:{obj.oid}"
        head = receiver_text.split(".")[0]
        return f"{self.scope}:{head}"

    # --- events -------------------------------------------------------------------------------------
    def _fit(self, call, kind, method, cls, obj, receiver_text, data: Val, label: Optional[Val], data_node) -> FitEvent:
        key = self._key(obj, receiver_text) if (obj or receiver_text) else f"call:{id(call)}"
        fit = FitEvent(
            fid=self.next(),
            node=call,
            scope=self.scope,
            kind=kind,
            method=method,
            cls=cls,
            obj=obj,
            receiver=receiver_text,
            key=key,
            data=data_of(data),
            label=data_of(label) if label is not None else None,
            data_node=data_node,
            order=self.counter,
            statement=self.statement,
            block=self.block,
        )
        fit.rows.update(data_of(data).rows)
        if kind == EMBEDDER:
            self.df.embeddings.append(fit)
            return fit
        fit.previous = self.last_fit.get((self.scope, key))
        self.last_fit[(self.scope, key)] = fit
        self.df.fits.append(fit)
        if obj is not None and kind in (TRANSFORMER, RESAMPLER):
            self.env.fits[obj.oid] = frozenset({fit.fid})
        return fit

    def _sink(self, val: Optional[Val], node: cst.CSTNode, what: str, x_position: bool, sid: Optional[int] = None) -> None:
        if val is None:
            return
        taint = val.all_taint()
        if not taint:
            return
        use = SinkUse(node, what, x_position, self.next(), self.scope, val.all_rows(), sid)
        for fid in taint:
            self.df.sinks.setdefault(fid, []).append(use)

    def _sink_all(self, vals: Iterable[Val], node: cst.CSTNode, what: str, x_position: bool) -> None:
        for val in vals:
            self._sink(val, node, what, x_position)

    def _self_attribute(self, name: str, record) -> None:
        """Calls ``record(class, attribute)`` when ``name`` is ``self.attribute`` in a method."""
        if not name.startswith("self.") or name.count(".") != 1 or self.scope == MODULE_SCOPE:
            return
        cls = self.m.class_scope_of(self.scope)
        if cls is not None:
            record(cls, name[5:])

    def _train_test_split(self, call: cst.Call, arrays: List[Val], last: str) -> Val:
        info = self._new_split(call, "train_test_split", f"`{last}`")
        for arg in call.args:
            if arg.keyword is None and not arg.star:
                self._self_attribute(
                    dotted(arg.value) or "",
                    lambda cls, attr: self.df.self_splits.setdefault((cls, attr), []).append((self.scope, info)),
                )
        items = []
        for index, array in enumerate(arrays):
            data = data_of(array)
            items.append(self._split_rows(info, data, TRAIN))
            items.append(self._split_rows(info, data, TEST))
            self._sink(array, call, "split", index == 0)
        if last == "iterative_train_test_split" and len(items) == 4:
            items = [items[0], items[2], items[1], items[3]]  # X_train, y_train, X_test, y_test
        # names of the parts, from the assignment targets
        if len(self.targets) == len(items):
            for target, item in zip(self.targets, items):
                part = next(iter(item.index))[1]
                _add_name(info, part, target)
        return Val(items=tuple(items))

    def _random_split(self, call: cst.Call, positional: List[Val], keywords: Dict[str, Val]) -> Val:
        info = self._new_split(call, "random_split", "`random_split`")
        data = data_of(positional[0])
        n = 2
        if len(call.args) > 1 and isinstance(call.args[1].value, (cst.List, cst.Tuple)):
            n = max(2, len(call.args[1].value.elements))
        elif self.n_targets > 1:
            n = self.n_targets
        parts = [TRAIN] + [VAL] * (n - 2) + [TEST]
        self._sink(positional[0], call, "split", True)
        items = tuple(self._split_rows(info, data, part) for part in parts)
        if len(self.targets) == len(items):
            for target, part in zip(self.targets, parts):
                _add_name(info, part, target)
        return Val(items=items)

    def _cv_helper(self, call: cst.Call, last: str, positional: List[Val], keywords: Dict[str, Val]) -> Val:
        index = _CV_HELPERS[last]
        x = positional[index] if len(positional) > index else keywords.get("X")
        y = positional[index + 1] if len(positional) > index + 1 else keywords.get("y")
        if x is None:
            return EMPTY
        info = self._new_split(call, "cv", f"`{last}`")
        self._split_rows(info, data_of(x), TRAIN)
        if y is not None:
            self._split_rows(info, data_of(y), TRAIN)
        self._sink(x, call, "cv", True)
        if y is not None:
            self._sink(y, call, "cv", False)
        return Val(data_of(x).rows) if last == "cross_val_predict" else EMPTY


# --- helpers -----------------------------------------------------------------------------------------


_APPLY_METHODS = {"apply", "map", "applymap", "transform", "agg", "aggregate", "pipe"}
_INFERRED_SPLITS = ("slice", "mask", "sample", "index")  # splits read from the code's shape, not from a split call
_KEEP_INDEX = {"array", "asarray", "tensor", "as_tensor", "LongTensor", "from_numpy", "sort", "ravel", "squeeze", "flatten"}
_SPLIT_KEY = re.compile(
    r"(train|training|trn|valid|validation|val|dev|test|testing|tst|holdout)([_ -]?(idx|index|indices|ids|set|data|df|split|mask))?",
    re.IGNORECASE,
)
_INDEX_WORDS = {"idx", "index", "indices", "indexes", "ids", "ind", "inds", "ix", "mask", "msk", "rows"}


def _key_part(key: str) -> Optional[str]:
    """The part a dict key names: "train" -> train, "valid" -> val, "test_idx" -> test."""
    if not _SPLIT_KEY.fullmatch(key):
        return None
    if is_train_name(key):
        return TRAIN
    if is_val_name(key):
        return VAL
    return TEST


def _part_of_name(name: str) -> Optional[str]:
    """The part a data name names, when it names exactly one: X_train -> train, X_valid -> val."""
    train, test, val = is_train_name(name), is_test_name(name), is_val_name(name)
    if train + test + val != 1:
        return None
    return TRAIN if train else TEST if test else VAL


def _named_index_part(name: str) -> Optional[str]:
    """The part an index array's name names: train_idx -> train, val_mask -> val, test_index -> test."""
    ws = words(name)
    if not any(w in _INDEX_WORDS for w in ws):
        return None
    train, test, val = is_train_name(name), is_test_name(name), is_val_name(name)
    if train and not (test or val):
        return TRAIN
    if test and not (train or val):
        return TEST
    if val and not (train or test):
        return VAL
    return None


def _membership_markers(df: "DataFlow", members: Val) -> FrozenSet[Tuple[int, str]]:
    """The part of a split that ``members`` are the ids of (``isin(members)``): its index markers
    when it holds ids taken from one part (no data rows), or the path of the one part its rows
    come from (``df.id.isin(train_df.id)``); empty when they mix parts or come from no split."""
    members = flat(members)
    if members.rows:
        paths = {path for _root, path in members.rows}
        if len(paths) != 1:
            return frozenset()
        markers = frozenset(next(iter(paths)))
    else:
        markers = members.index
    if not markers or len({sid for sid, _part in markers}) != len(markers):
        return frozenset()  # ids of the training and the test part together
    return markers


_FIT_METHODS = {"fit", "fit_transform", "fit_resample", "fit_sample", "partial_fit", "fit_on_texts"}


def _is_fit_call(call: cst.Call) -> bool:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value in _FIT_METHODS or func.attr.value in _FIT_TRANSFORM_FUNCTIONS
    return isinstance(func, cst.Name) and func.value in _FIT_TRANSFORM_FUNCTIONS


def _called_before(model: FileModel, first: str, second: str) -> bool:
    """Whether some scope calls the function ``first`` on an earlier line than ``second``."""
    lines: Dict[Tuple[str, str], List[int]] = {}
    for effect in model.effects:
        if effect.kind == "call" and effect.callee in (first, second):
            try:
                line = model.position(effect.node).start.line
            except Exception:  # pragma: no cover - defensive
                continue
            lines.setdefault((effect.ctx.scope, effect.callee), []).append(line)
    for (scope, callee), found in lines.items():
        if callee == first and any(line > min(found) for line in lines.get((scope, second), [])):
            return True
    return False


def _substitute(rows: FrozenSet[Row], mapping: Dict[int, Val]) -> Set[Row]:
    out: Set[Row] = set()
    for root, path in rows:
        val = mapping.get(root)
        if val is None:
            continue
        for arg_root, arg_path in data_of(val).rows:
            out.add((arg_root, arg_path + path))
    return out


def _substitute_val(val: Val, mapping: Dict[int, Val], analysis: "_Analysis") -> Val:
    if val.items is not None:
        return replace(val, items=tuple(_substitute_val(item, mapping, analysis) for item in val.items))
    if not val.rows:
        return val
    rows: Set[Row] = set()
    taint = set(val.taint)
    for root, path in val.rows:
        arg = mapping.get(root)
        if arg is not None:
            for arg_root, arg_path in data_of(arg).rows:
                rows.add((arg_root, arg_path + path))
            taint.update(flat(arg).taint)
        elif root in analysis.df.param_roots:
            continue  # a parameter the caller did not pass: unknown
        else:
            rows.add((root, path))
    if not rows and val.rows:
        rows = set(analysis.root().rows)
    return replace(val, rows=frozenset(rows), taint=frozenset(taint))


def _principal(expr: cst.BaseExpression) -> cst.BaseExpression:
    """The data an assigned expression is mainly made of: ``X[:n]`` in ``X[:n] / 255.``,
    ``X[:n].values.reshape(-1, 1)`` or ``np.array(X[:n])``."""
    for _ in range(20):
        if isinstance(expr, cst.BinaryOperation):
            expr = expr.left
        elif isinstance(expr, cst.Attribute) and not isinstance(expr.value, cst.Name):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and isinstance(expr.func.value, (cst.Subscript, cst.Call, cst.Attribute)):
            expr = expr.func.value
        elif isinstance(expr, cst.Call) and expr.args and dotted(expr.func) in ("np.array", "numpy.array", "np.asarray", "torch.tensor", "pd.DataFrame"):
            expr = expr.args[0].value
        else:
            return expr
    return expr


def _add_name(info: SplitInfo, part: str, name: str) -> None:
    names = info.names.setdefault(part, [])
    if name not in names:
        names.append(name)




def _text(model: FileModel, node: cst.CSTNode) -> str:
    try:
        return " ".join(model.module.code_for_node(node).split())
    except Exception:  # pragma: no cover - defensive
        return "?"


def _bound_text(model: FileModel, node: Optional[cst.BaseExpression], base_text: str) -> Optional[str]:
    """A slice bound as text; 0 and len(base) mean no bound."""
    if node is None:
        return None
    text = _text(model, node)
    if text in ("0", f"len({base_text})", "None"):
        return None
    return text


def _last_step_kinds(cls: str, positional: List[Val], keywords: Dict[str, Val]) -> Set[str]:
    """The kinds of the objects in a pipeline's last step: ``make_pipeline(a, b)`` -> b,
    ``Pipeline([("a", a), ("b", b)])`` -> b; empty when not written out."""
    if cls == "make_pipeline":
        step = positional[-1] if positional else None
    elif cls == "Pipeline":
        steps = positional[0] if positional else keywords.get("steps")
        step = None
        if steps is not None and steps.items:
            pair = steps.items[-1]
            step = pair.items[-1] if pair.items else None
    else:
        return set()
    return {o.kind for o in step.objs} if step is not None else set()


def _signed_int(text: str) -> Optional[int]:
    try:
        return int(text.replace(" ", ""), 0)
    except ValueError:
        return None


def _slices_overlap(upper: str, lower: str) -> bool:
    """Whether the head ``X[:upper]`` and the tail ``X[lower:]`` share rows on any data longer
    than their bounds: ``X[:-1]``/``X[1:]`` (a lag), ``X[:100]``/``X[50:]``, ``X[:-k]``/``X[k:]``."""
    u, l = _signed_int(upper), _signed_int(lower)
    if u is not None and l is not None:
        if (u < 0) == (l < 0):
            return l < u
        return u < 0 <= l  # X[:-a] reaches past X[b:] once len(X) > a + b
    if upper.startswith("-") and upper[1:].strip("() ") == lower.strip("() "):
        return True  # X[:-k] and X[k:]
    return False


def _column_key(target: cst.Subscript) -> Optional[str]:
    """``df["col"]`` -> "col"; anything else (lists, variables, slices) -> None."""
    if len(target.slice) != 1:
        return None
    sl = target.slice[0].slice
    if isinstance(sl, cst.Index) and isinstance(sl.value, cst.SimpleString):
        value = sl.value.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _columns_of(node: cst.Subscript, via: Optional[str]) -> Optional[List[str]]:
    """Column names selected by a subscript, when written as literals."""
    elements = list(node.slice)
    sl = elements[-1].slice if (via == "loc" and len(elements) == 2) else elements[0].slice
    if not isinstance(sl, cst.Index):
        return None
    return _string_list(sl.value)


def _dropped_columns(call: cst.Call) -> Optional[Set[str]]:
    columns = None
    axis_columns = False
    for arg in call.args:
        keyword = arg.keyword.value if arg.keyword is not None else None
        if keyword == "columns" or keyword is None or keyword == "labels":
            found = _string_list(arg.value)
            if found is not None:
                columns = set(found)
                if keyword == "columns":
                    axis_columns = True
        if keyword == "axis" and _text_simple(arg.value) in ("1", "'columns'", '"columns"'):
            axis_columns = True
    return columns if axis_columns and columns is not None else None


def _string_list(node: cst.BaseExpression) -> Optional[List[str]]:
    """The strings of a literal string or list/tuple of literal strings, in order (None otherwise)."""
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        return [node.evaluated_value]
    if isinstance(node, (cst.List, cst.Tuple)):
        out = []
        for element in node.elements:
            if isinstance(element.value, cst.SimpleString) and isinstance(element.value.evaluated_value, str):
                out.append(element.value.evaluated_value)
            else:
                return None
        return out
    return None


def _text_simple(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Integer):
        return node.value
    if isinstance(node, cst.SimpleString):
        return node.value
    return ""


def _keyword_node(call: cst.Call, names: Tuple[str, ...]) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in names:
            return arg.value
    return None
