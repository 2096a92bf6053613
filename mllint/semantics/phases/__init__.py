"""Evaluation and training phases of one file: what code evaluates, what trains, in which mode.

Shared by ML002 (inference without no_grad) and ML005 (missing eval mode). Computed
lazily from the FileModel (``Phases.of(model)``), and only as far as a rule asks.

Facts:

- **Evaluation code** (``evidence``): a forward pass of a model (not a constructor, a
  factory or a transform that looks like one) is evaluation when it sits in a function
  named like evaluation (evaluate, validate, val, test, predict, infer; generate,
  sample and score are *weak*: inference for ML002, not evaluation for ML005) that
  trains nothing and whose result feeds no backward pass; in a loop over
  validation/test data that runs no backward pass; in a helper every caller of which
  is evaluation code; on validation/test data (``model(X_val)``); or in an inference
  script (weights loaded, nothing trained); a shape check of a model built right there and
  not trained or loaded by then (``trained_before``: training earlier in program order or in
  a loop around it; later training does not count) is not. Code after ``.eval()`` in the same
  function that never calls backward counts for ML002 (``mode_evidence``). Framework
  code (Lightning evaluation hooks, HF ``Trainer``/skorch ``NeuralNet`` subclasses, HF
  generation and pipelines), unit tests and model internals (methods of classes that
  look like models) are never evaluation code.
- **Data flow to backward** (``feeds_backward``): whether a forward's output reaches
  ``backward()`` / ``torch.autograd.grad`` (training, adversarial examples, saliency,
  frozen teachers, target networks): names are followed in source order through
  assignments (a plain reassignment ends the trail), containers (``outs.append(out)``),
  returns to callers, local helpers and ``self`` attributes.
- **Grad protection** (``protected``): ``no_grad``/``inference_mode``/
  ``set_grad_enabled(False or a flag)`` blocks and decorators, a
  ``torch.set_grad_enabled(False)`` statement before, local context managers that turn
  grad off, unknown context managers named for it, and functions every caller of which
  calls them with grad off; models whose parameters are all frozen (``frozen``).
- **Mode** (``mode_at``): the modes a model can be in at a point (eval, eval_initial,
  train, maybe, none), from ``.eval()``/``.train()``/``.train(flag)`` on it or an alias
  in the function, in helpers called before (in the order they run), in context
  managers (mode on entry and on exit), around loops (a ``.train()`` later in a loop
  body reaches the next iteration), and in callers before the call (a model handed to
  a constructor is the attribute ``__init__`` stores it in: ``model.eval()`` counts for
  ``trainer.model`` after ``trainer = Trainer(model)``); when nobody in
  the file calls the function, from how the model was made (``from_pretrained``
  returns it in eval mode) and the code that owns it (``__init__``, the module).
- **Constant arguments** (``constant_arguments``, ``settled_event``): a helper's mode
  switches under conditions on a parameter the call binds to a literal (or leaves at a
  literal default) are settled by that value (``set_mode("eval", [model])``); a list or
  tuple of models handed over reaches each of them.
- **Shared training/evaluation functions** (``training_flag``, ``flag_off_at``,
  ``flag_evaluations``): a function whose every backward pass is under one parameter
  (``if is_train:``), called with it off (False, "val", a default), evaluates; the mode
  there is what the function does with that value, else what the caller left.
- **Evaluation data by split name** (``eval_split_call``): ``get_batch("val")`` for a
  function that picks its data by that parameter.
- **Eval never undone** (``eval_not_undone``): an ``.eval()`` inside a training loop
  (directly or through a helper) with no ``.train()`` on that model anywhere in the
  loop, for a model the loop trains, outside unknown context managers that may restore
  the mode, and not right before the loop ends.

Where each question is decided (one module each, one test file each):

- ``evaluation.py``: is this evaluation code (``evidence``, ``mode_evidence``) -- tests/test_phases_evaluation.py
- ``grad.py``: is grad on here (``protected``, ``frozen``) -- tests/test_phases_grad.py
- ``mode.py``: what mode is this model in (``mode_at``, ``eval_not_undone``) -- tests/test_phases_mode.py
- ``flow.py``: does this output reach a backward pass (``feeds_backward``, ``trains``) -- tests/test_phases_flow.py
- ``base.py``: file facts shared by all four; ``words.py``: the vocabulary of names.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from mllint.semantics.model import Context, Effect, FileModel
from mllint.semantics.phases.base import FileFacts
from mllint.semantics.phases.evaluation import EvaluationFacts, Evidence
from mllint.semantics.phases.flow import BackwardFlow, _Stmt
from mllint.semantics.phases.grad import GradFacts
from mllint.semantics.phases.mode import FlagEvaluation, ModeEvent, ModeFacts, NotUndone
from mllint.semantics.phases.words import eval_name_strength, is_eval_data_ref, name_tokens, related

__all__ = ["Evidence", "FlagEvaluation", "ModeEvent", "NotUndone", "Phases", "eval_name_strength", "is_eval_data_ref", "name_tokens", "related"]

# --- the analysis ------------------------------------------------------------------------------------------


class Phases(FileFacts, BackwardFlow, GradFacts, EvaluationFacts, ModeFacts):
    """The four questions, answered lazily and cached per file."""

    @staticmethod
    def of(model: FileModel) -> "Phases":
        found = getattr(model, "_phases", None)
        if found is None:
            found = Phases(model)
            model._phases = found  # type: ignore[attr-defined]
        return found

    def __init__(self, model: FileModel) -> None:
        self.m = model
        self._flows: Dict[str, List[_Stmt]] = {}
        self._stmt_of: Dict[str, Dict[cst.Call, int]] = {}
        self._backward_refs: Optional[Dict[str, Set[str]]] = None
        self._sinks: Optional[bool] = None
        self._class_backward_attrs: Optional[Dict[str, Set[str]]] = None
        self._feeds: Dict[cst.CSTNode, bool] = {}
        self._call_sites: Optional[Dict[str, List[Effect]]] = None
        self._value_refs: Optional[Set[str]] = None
        self._engines: Optional[Dict[str, List[Tuple[str, Context]]]] = None
        self._backprop_fns: Optional[Set[str]] = None
        self._step_fns: Optional[Set[str]] = None
        self._grad_off_fns: Optional[Set[str]] = None
        self._fn_eval: Dict[str, Optional[Evidence]] = {}
        self._evidence: Dict[cst.CSTNode, Optional[Evidence]] = {}
        self._events: Dict[str, List[ModeEvent]] = {}
        self._frozen: Optional[Set[str]] = None
        self._loop_backprops: Dict[int, bool] = {}
        self._calls_by_scope: Optional[Dict[str, List[Tuple[cst.Call, Context]]]] = None
        self._with_ends: Dict[cst.With, float] = {}
        self._yield_line: Dict[str, Optional[int]] = {}
        self._assign_of_call: Optional[Dict[cst.CSTNode, Tuple[str, ...]]] = None
        self._grad_off_statements: Optional[List[Tuple[str, int]]] = None
        self._blocks: Optional[Dict[cst.CSTNode, cst.CSTNode]] = None
        self._with_owner: Dict[cst.CSTNode, cst.With] = {}
        self._held: Dict[Tuple[str, str], Optional[str]] = {}
        self._forward_reach: Dict[str, Set[str]] = {}
        self._generate_calls: Optional[List[Effect]] = None

