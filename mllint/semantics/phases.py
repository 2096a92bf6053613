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
  script (weights loaded, nothing trained). Code after ``.eval()`` in the same
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
- **Eval never undone** (``eval_not_undone``): an ``.eval()`` inside a training loop
  (directly or through a helper) with no ``.train()`` on that model anywhere in the
  loop, for a model the loop trains, outside unknown context managers that may restore
  the mode, and not right before the loop ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

import libcst as cst

from mllint.semantics import roles as R
from mllint.semantics.model import (
    ANY,
    BACKWARD,
    CALL,
    EVAL,
    FORWARD,
    MODE_UNKNOWN,
    MODULE_SCOPE,
    STEP,
    TRAIN,
    Context,
    Effect,
    FileModel,
    Function,
    Loop,
    translate,
)
from mllint.semantics.names import dotted, ref_of

# --- words ------------------------------------------------------------------------------

_STRONG_EVAL_WORDS = frozenset(
    "eval evaluate evaluation evaluating evaluator validate validation validating val valid test testing "
    "predict prediction predictions predicting infer inference inferencing".split()
)
_WEAK_EVAL_WORDS = frozenset("generate generation generating sample sampling score scoring".split())
# Words in the names of data (loaders, splits, tensors) that hold evaluation data.
_EVAL_DATA_WORDS = frozenset("val valid validation test eval evaluation holdout heldout".split())
# Words for data: ``val``/``valid`` need one beside them (``val_loader``, not ``valid_mask``).
_DATA_WORDS = frozenset(
    "x y data dataset datasets ds set loader loaders dataloader dataloaders dl iter iterator batch batches images "
    "imgs img inputs input samples features feats split examples texts text sentences seqs sequences df frame "
    "tensors tensor arr array points graphs graph seq src tgt labels targets queue gen generator X Y".split()
)
# Words that make a name a setting rather than data (``args.test_batch_size``, ``val_every``).
_SETTING_WORDS = frozenset(
    "size sizes num number freq frequency interval every steps step ratio split splits path dir file files "
    "flag mode only bs epochs epoch iters fn func metric metrics loss losses acc accuracy score scores "
    "transform transforms args cfg config kwargs is use do enable enabled name names idx index indices "
    "percent pct fraction frac count len length dataset_name dim dims channels heads head scale dtype attn "
    "embed hidden ratio ratios period patience interval threshold temp temperature weight weights mask masks "
    "lens lengths ids positions coords query queries key keys value values".split()
)
_LOADER_WORDS = frozenset("loader dataloader data dataset batches ds dl iterator".split())
_PROPERTY_WORDS = frozenset(
    "shape shapes size sizes dtype dtypes type types dim dims schema format device dependency dependencies "
    "signature config mask masks code docs doc name names id ids key keys seed seeds".split()
)
_TRAINING_WORDS = frozenset("loss losses train training fit backward optimize optimise update step".split())
_TEACHER_WORDS = frozenset("teacher target ema frozen old ref reference pretrained momentum avg swa mean".split())
_MODE_CALL_WORDS = frozenset("eval train training mode inference dropout bn batchnorm freeze unfreeze".split())

# Lightning hooks the framework runs with the model in eval mode and grad off.
_LIGHTNING_EVAL_HOOKS = frozenset(
    "validation_step test_step predict_step validation_step_end test_step_end validation_epoch_end "
    "test_epoch_end on_validation_epoch_end on_test_epoch_end on_validation_batch_end on_test_batch_end "
    "on_predict_batch_end on_validation_epoch_start on_test_epoch_start on_predict_epoch_end "
    "on_validation_start on_validation_end on_test_start on_test_end on_predict_start on_predict_end".split()
)
# Framework classes whose subclasses the framework runs in eval mode with grad off: HF
# Trainer (and TRL's, SetFit's...), skorch's NeuralNet, HF generation and pipelines. A
# ``BaseTrainer`` of the project's own is not one of them.
_FRAMEWORK_BASES = re.compile(
    r"^(transformers|trl|setfit|skorch|sentence_transformers|peft|optimum|gliner)\b.*"
    r"(Trainer|NeuralNet|NeuralNetClassifier|NeuralNetRegressor|NeuralNetBinaryClassifier)$"
    r"|(^|\.)(GenerationMixin|Pipeline)$"
)
# Base classes (imported, so unseen) whose subclasses are models.
_MODEL_BASE_NAMES = re.compile(
    r"(Model|Module|Layer|Block|Encoder|Decoder|Head|Attention|Embedding|Embeddings|MLP|Net|Network|Backbone|"
    r"Transformer|Sequential|ModuleList|ModuleDict|LightningModule|Diffusion|For[A-Z]\w*)$"
)

# Context managers known not to change grad mode or model mode.
_HARMLESS_CM = re.compile(
    r"(^open$|autocast$|^tqdm|\.tqdm$|nullcontext$|suppress$|catch_warnings$|profile|record_function$|"
    r"^torch\.cuda\.device$|^torch\.device$|^torch\.cuda\.stream$|sdp_kernel$|sdpa_kernel$|Timer$|timer$|"
    r"^time|redirect_std|TemporaryDirectory$|^h5py\.|\.File$|ZipFile$|^tarfile|^threading|Lock$|"
    r"no_sync$|accumulate$|join$|^wandb|^mlflow|start_run$|^torch\.backends|^torch\.random\.fork_rng$|"
    r"fork_rng$|^warnings|^contextlib\.ExitStack$|ExitStack$|^numpy|^np\.|printoptions$|^torch\.cuda\.amp\.autocast$)"
)
_GRAD_HINT = re.compile(r"no_grad|inference|grad_disabled|disable_grad|nograd|grad_off|without_grad", re.IGNORECASE)
_MODE_HINT = re.compile(r"eval|infer|mode|train|swap|average|ema|frozen|freeze", re.IGNORECASE)

_LOAD_CALLS = re.compile(
    r"(load_state_dict|^torch\.load$|from_pretrained|load_from_checkpoint|^torch\.jit\.load$|^torch\.hub\.load$|"
    r"load_checkpoint|load_model|load_weights|load_pretrained|safetensors|load_file$)"
)
_MAIN_NAMES = frozenset("main run cli demo app".split())

_EVAL_INITIAL = re.compile(r"(from_pretrained$|^clip\.load$|open_clip\.create_model)")
_MAYBE_INITIAL = re.compile(r"(^torch\.jit\.load$|jit\.load$|load_from_checkpoint$|deepcopy$|^copy\.copy$|hub\.load$|load_model$)")

_CM_DECORATORS = ("contextmanager", "asynccontextmanager")
_BUILTINS = frozenset("next iter enumerate zip list tuple dict len range sorted reversed map filter isinstance getattr".split())
_FACTORY_WORDS = frozenset(
    "build get create make load init setup prepare new construct instantiate from save log print push export "
    "register wrap unwrap update compute run apply set add remove check convert freeze unfreeze fuse to copy "
    "clone reset init initialize sync broadcast gather reduce".split()
)
# Words that make a model-looking name something else (``model_transform``, ``model_fn``).
_NOT_MODEL_WORDS = frozenset(
    "transform transforms fn func function loss metric metrics criterion hook hooks callback callbacks tokenizer "
    "processor config cfg output outputs factory builder loader kwargs args path name type class cls".split()
)


def name_tokens(name: str) -> List[str]:
    """``validateOneEpoch`` / ``validate_one_epoch`` -> [validate, one, epoch]."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [t for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]


def eval_name_strength(name: str) -> Optional[str]:
    """"strong" for evaluate/validate/test/predict/infer names, "weak" for
    generate/sample/score names, None otherwise."""
    tokens = name_tokens(name)
    if not tokens or tokens[0] in ("is", "has", "check", "get") and len(tokens) > 1 and tokens[1] in ("valid", "val"):
        return None
    if any(t in _PROPERTY_WORDS for t in tokens):
        return None  # ``infer_shape``, ``generate_square_subsequent_mask``: working something out, not evaluating
    if any(t in _STRONG_EVAL_WORDS for t in tokens):
        return "strong"
    if any(t in _WEAK_EVAL_WORDS for t in tokens) and not any(t in _TRAINING_WORDS for t in tokens):
        return "weak"
    return None


def is_eval_data_ref(ref: Optional[str]) -> bool:
    """Whether a reference names evaluation data (``X_val``, ``val_loader``, ``self.test_data``).
    ``val``/``valid`` need a word for data beside them (``valid_mask``, ``valid_ratios`` are not data)."""
    if not ref or ref == ANY:
        return False
    parts = [p for p in re.split(r"[.\[\]]", ref) if p and p not in ("self", "cls")]
    if not parts:
        return False
    tokens = [t for p in parts for t in name_tokens(p)]
    if any(t in _SETTING_WORDS for t in tokens):
        return False
    if any(t in _EVAL_DATA_WORDS and t not in ("val", "valid") for t in tokens):
        return True
    if any(t in ("val", "valid") for t in tokens):
        return len(tokens) == 1 or any(t in _DATA_WORDS for t in tokens)
    return False


def related(a: str, b: str) -> bool:
    """The same model, or one a submodule / wrapper of the other (``model`` and ``model.module``)."""
    if a == ANY or b == ANY:
        return True
    return a == b or a.startswith(b + ".") or b.startswith(a + ".") or a.startswith(b + "[") or b.startswith(a + "[")


def _part_for(targets: Tuple[str, ...], value: cst.BaseExpression, ref: str) -> Optional[cst.BaseExpression]:
    """The part of ``value`` assigned to ``ref`` (``a, b = x, y``), None when unknown."""
    if len(targets) == 1:
        return value
    if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(targets):
        element = value.elements[targets.index(ref)]
        if not isinstance(element, cst.StarredElement):
            return element.value
    return None


def _asserts(node: cst.FunctionDef) -> bool:
    """Whether the function (not a function nested in it) has an ``assert`` statement."""
    found = []

    class Finder(cst.CSTVisitor):
        def visit_Assert(self, node: cst.Assert) -> None:
            found.append(node)

        def visit_FunctionDef(self, inner: cst.FunctionDef) -> bool:
            return False

    node.body.visit(Finder())
    return bool(found)


def _head(ref: str) -> str:
    return ref.split(".", 1)[0].split("[", 1)[0]


# --- data flow: the statements of one scope ----------------------------------------------------------


class _Reads(cst.CSTVisitor):
    """References read by an expression (maximal dotted chains and names) and its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: Set[str] = set()
        self.calls: List[cst.Call] = []
        self.yields = False

    def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
        name = dotted(node)
        if name is not None:
            self.refs.add(name)
            return False
        return True

    def visit_Name(self, node: cst.Name) -> None:
        self.refs.add(node.value)

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)

    def visit_Yield(self, node: cst.Yield) -> None:
        self.yields = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


def _reads(*nodes: Optional[cst.CSTNode]) -> _Reads:
    visitor = _Reads()
    for node in nodes:
        if node is not None:
            node.visit(visitor)
    return visitor


def _target_refs(target: cst.BaseExpression) -> List[str]:
    if isinstance(target, (cst.Tuple, cst.List)):
        out: List[str] = []
        for element in target.elements:
            out.extend(_target_refs(element.value))
        return out
    if isinstance(target, cst.StarredElement):
        return _target_refs(target.value)
    if isinstance(target, cst.Subscript):
        base = ref_of(target.value)
        return [base] if base else []
    ref = dotted(target)
    return [ref] if ref else []


@dataclass
class _Stmt:
    node: cst.CSTNode
    reads: Set[str]
    writes: List[str]
    kill: bool  # a plain assignment: its targets lose what they held
    calls: Set[cst.Call]
    sink_reads: Set[str] = field(default_factory=set)  # what backward()/autograd.grad read
    sink_calls: Set[cst.Call] = field(default_factory=set)  # calls inside a backward()/autograd.grad expression
    returns: bool = False
    mutates: Set[str] = field(default_factory=set)  # receivers of method calls with arguments (outs.append(x))
    local_args: List[Tuple[str, str, Set[str], Set[cst.Call]]] = field(default_factory=list)  # callee, param, reads, calls


def _hits(reads: Iterable[str], tainted: Iterable[str]) -> bool:
    tainted = list(tainted)
    for r in reads:
        for t in tainted:
            if r == t or r.startswith(t + ".") or r.startswith(t + "["):
                return True
    return False


# --- results ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """Why a piece of code is evaluation code."""

    kind: str  # "function", "callers", "loop", "data", "script", "mode"
    text: str  # for messages: "in `evaluate()`", "in the loop over `val_loader`"
    function: Optional[str] = None  # the evaluation function (kind function/callers)
    loop: Optional[Loop] = field(default=None, compare=False, hash=False)  # the evaluation loop (kind loop)
    weak: bool = False  # only a generate/sample/score name says so (inference, not evaluation: ML002 only)


@dataclass
class ModeEvent:
    """A mode switch seen from one scope: directly there, or through a helper it calls."""

    order: float
    kind: str  # "eval", "train" or "maybe"
    ref: str  # the model, in this scope's terms
    node: cst.CSTNode  # the .eval()/.train() call itself (possibly in a helper)
    ctx: Context  # where it happens in this scope (of the call that brings it, for a helper's)
    via: Tuple[Effect, ...] = ()
    cond: bool = False  # may not happen (conditional inside a helper, or one branch of an expression)
    withs: Tuple[cst.With, ...] = ()  # with-blocks around the switch itself (inside the helper too)


@dataclass
class NotUndone:
    """An ``.eval()`` in a training loop that nothing switches back before the next training step."""

    event: ModeEvent
    loop: Loop
    ref: str  # the model, in the loop's scope


# --- the analysis ------------------------------------------------------------------------------------------


class Phases:
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
        self._class_backward_attrs: Optional[Dict[str, Set[str]]] = None
        self._feeds: Dict[cst.CSTNode, bool] = {}
        self._call_sites: Optional[Dict[str, List[Effect]]] = None
        self._value_refs: Optional[Set[str]] = None
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

    # --- file -----------------------------------------------------------------------------------------
    @property
    def torch_file(self) -> bool:
        """Whether the file is PyTorch code (and not Keras/JAX/Paddle code that looks alike)."""
        imports = self.m.imports
        if any(imports.imports_module(p) for p in ("torch", "torchvision", "lightning", "pytorch_lightning", "timm", "transformers", "accelerate")):
            return True
        if any(imports.imports_module(p) for p in ("tensorflow", "keras", "jax", "flax", "paddle", "mxnet", "mindspore", "oneflow")):
            return False
        return any(c.is_module for c in self.m.classes.values())

    def torch_name(self) -> Optional[str]:
        """The local name the torch module is bound to (``torch``, ``T``), if any."""
        for local, full in self.m.imports.aliases.items():
            if full == "torch":
                return local
        return None

    def calls_in(self, scope: str) -> List[Tuple[cst.Call, Context]]:
        if self._calls_by_scope is None:
            table: Dict[str, List[Tuple[cst.Call, Context]]] = {}
            for call, ctx in self.m.calls:
                table.setdefault(ctx.scope, []).append((call, ctx))
            self._calls_by_scope = table
        return self._calls_by_scope.get(scope, [])

    def qual(self, node: cst.BaseExpression) -> str:
        return self.m.imports.qualname(node) or dotted(node) or ""

    # --- functions ---------------------------------------------------------------------------------------
    def call_sites(self, key: str) -> List[Effect]:
        if self._call_sites is None:
            table: Dict[str, List[Effect]] = {}
            for effect in self.m.effects:
                if effect.kind == CALL and effect.callee:
                    table.setdefault(effect.callee, []).append(effect)
            self._call_sites = table
        return self._call_sites.get(key, [])

    def referenced_as_value(self, key: str) -> bool:
        """Whether a local function's name is used other than by calling it (a callback)."""
        if self._value_refs is None:
            names: Set[str] = set()
            called: Set[int] = set()

            class Finder(cst.CSTVisitor):
                def visit_Call(self, node: cst.Call) -> None:
                    called.add(id(node.func))

                def visit_Name(self, node: cst.Name) -> None:
                    if id(node) not in called:
                        names.add(node.value)

                def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
                    if id(node) not in called:
                        names.add(node.attr.value)
                    node.value.visit(self)
                    return False

                def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                    for d in node.decorators:
                        d.visit(self)
                    node.body.visit(self)
                    return False

                def visit_ClassDef(self, node: cst.ClassDef) -> bool:
                    node.body.visit(self)
                    return False

                def visit_Arg(self, node: cst.Arg) -> bool:
                    node.value.visit(self)
                    return False

                def visit_Param(self, node: cst.Param) -> bool:
                    if node.default is not None:
                        node.default.visit(self)
                    return False

            self.m.module.visit(Finder())
            self._value_refs = names
        return key.rsplit(".", 1)[-1] in self._value_refs

    def module_method(self, fn: Function) -> bool:
        """A method of an nn.Module subclass: model internals, run in whatever mode the caller set."""
        return fn.cls is not None and self.module_like(fn.cls)

    def module_like(self, name: str, seen: Optional[Set[str]] = None) -> bool:
        """A class that is (very likely) a torch model: an nn.Module subclass, a class with a
        ``forward`` method, or a subclass of an imported class named like a model part."""
        info = self.m.classes.get(name)
        if info is None:
            return False
        if info.is_module or "forward" in info.methods or "_forward" in info.methods:
            return True
        seen = seen or set()
        seen.add(name)
        bases = []
        for arg in info.node.bases:
            expr = arg.value
            if isinstance(expr, cst.Subscript):
                expr = expr.value  # ``Classifier[DT]``
            bases.append(self.qual(expr))
        for base in bases:
            short = base.rsplit(".", 1)[-1]
            if short in self.m.classes:
                if short not in seen and self.module_like(short, seen):
                    return True
            elif short and _MODEL_BASE_NAMES.search(short):
                return True
        return False

    def managed(self, fn: Function) -> bool:
        """Framework code that sets eval mode and grad off by itself: Lightning's evaluation
        hooks, HF ``Trainer`` and skorch ``NeuralNet`` subclasses (and functions nested in them)."""
        key = fn.key
        while True:
            current = self.m.functions.get(key)
            if current is not None:
                if current.cls is not None and current.node.name.value in _LIGHTNING_EVAL_HOOKS:
                    return True
                if current.cls is not None and self._framework_class(current.cls):
                    return True
            if "." not in key:
                return False
            key = key.rsplit(".", 1)[0]

    def _framework_class(self, name: str, seen: Optional[Set[str]] = None) -> bool:
        seen = seen or set()
        if name in seen:
            return False
        seen.add(name)
        info = self.m.classes.get(name)
        if info is None:
            return False
        for base in info.bases:
            short = base.rsplit(".", 1)[-1]
            if short in self.m.classes:
                if self._framework_class(short, seen):
                    return True
            elif base and _FRAMEWORK_BASES.search(base):
                return True
        return False

    def unit_test(self, fn: Function) -> bool:
        """A unit test (forward passes there check the model, they do not evaluate it): a
        ``test`` function in a test suite (pytest/unittest imported, a ``Test`` class), or a
        ``test*()`` function that asserts, or one with no parameters that nothing calls.
        Judged by the code, not by the file's name: ``test.py`` is often the evaluation
        script, and its ``test(model, loader)`` counts correct predictions, it does not
        assert."""
        name = fn.node.name.value
        tokens = name_tokens(name)
        if "test" not in tokens and "tests" not in tokens:
            return False
        if self.m.imports.imports_module("pytest") or self.m.imports.imports_module("unittest"):
            return True
        if fn.cls is not None and (fn.cls.startswith("Test") or any("TestCase" in b for b in self.m.classes[fn.cls].bases)):
            return True
        if not name.startswith("test"):
            return False
        return (not fn.params and not self.call_sites(fn.key)) or _asserts(fn.node)

    def overrides_mode(self, ref: str, scope: str) -> bool:
        """Whether ``ref`` is an instance of a class in this file that defines train()/eval()
        with a meaning of its own (or ``self`` inside such a class)."""
        names = []
        head = _head(ref)
        if head in ("self", "cls") and "." not in ref:
            cls = self.m.class_scope_of(scope)
            if cls:
                names.append(cls.rsplit(".", 1)[-1])
        found = self.m.instance_of.get(scope, ref) or self.m.instance_of.get(scope, self.m.canonical(ref, scope))
        if found:
            names.append(found)
        for name in names:
            seen: Set[str] = set()
            while name and name not in seen:
                seen.add(name)
                info = self.m.classes.get(name)
                if info is None:
                    break
                if info.methods & {"train", "eval"}:
                    return True
                name = next((b.rsplit(".", 1)[-1] for b in info.bases if b.rsplit(".", 1)[-1] in self.m.classes), "")
        return False

    # --- training -------------------------------------------------------------------------------------
    def _autograd_call(self, call: cst.Call) -> bool:
        qual = self.qual(call.func)
        return qual.endswith(("autograd.grad", "autograd.backward", "autograd.functional.jacobian", "autograd.functional.vjp"))

    def _closure(self, initial: Set[str]) -> Set[str]:
        found = set(initial)
        changed = True
        while changed:
            changed = False
            for effect in self.m.effects:
                if effect.kind == CALL and effect.callee in found and effect.ctx.scope not in found and effect.ctx.scope in self.m.functions:
                    found.add(effect.ctx.scope)
                    changed = True
        return found

    @property
    def backprop_functions(self) -> Set[str]:
        """Functions that run a backward pass or torch.autograd.grad (themselves or through helpers)."""
        if self._backprop_fns is None:
            initial = {e.ctx.scope for e in self.m.effects if e.kind == BACKWARD}
            initial |= {ctx.scope for call, ctx in self.m.calls if self._autograd_call(call)}
            self._backprop_fns = self._closure({s for s in initial if s in self.m.functions})
        return self._backprop_fns

    @property
    def step_functions(self) -> Set[str]:
        if self._step_fns is None:
            initial = {e.ctx.scope for e in self.m.effects if e.kind == STEP}
            self._step_fns = self._closure({s for s in initial if s in self.m.functions})
        return self._step_fns

    def trains(self, key: str) -> bool:
        return key in self.backprop_functions or key in self.step_functions

    def file_trains(self) -> bool:
        return any(e.kind in (BACKWARD, STEP) for e in self.m.effects) or any(self._autograd_call(c) for c, _ in self.m.calls)

    def loop_backprops(self, loop: Loop) -> bool:
        """A backward pass (or autograd.grad) runs somewhere in the loop, helpers included."""
        key = id(loop.node)
        if key not in self._loop_backprops:
            found = False
            for effect in self.m.effects_in(loop.scope):
                if not loop.encloses(effect.ctx.loop):
                    continue
                if effect.kind == BACKWARD or (effect.kind == CALL and effect.callee in self.backprop_functions):
                    found = True
                    break
            if not found:
                found = any(loop.encloses(ctx.loop) and self._autograd_call(call) for call, ctx in self.calls_in(loop.scope))
            self._loop_backprops[key] = found
        return self._loop_backprops[key]

    def loop_steps(self, loop: Loop) -> List[str]:
        """Optimizers stepped somewhere in the loop (refs in the loop's scope; ANY when unknown)."""
        out = []
        for effect in self.m.effects_in(loop.scope):
            if not loop.encloses(effect.ctx.loop):
                continue
            if effect.kind == STEP:
                out.append(effect.ref)
            elif effect.kind == CALL and effect.callee in self.step_functions:
                summary = self.m.summaries.get(effect.callee or "")
                refs = []
                if summary is not None:
                    refs = [translate(s.ref, effect.args or {}) for s in summary.top_steps] + [
                        translate(r, effect.args or {}) for r in summary.loop_steps
                    ]
                out.extend(refs or [ANY])
        return out

    def loop_trains(self, loop: Loop) -> bool:
        return self.loop_backprops(loop) and bool(self.loop_steps(loop))

    # --- data flow --------------------------------------------------------------------------------------
    def _scope_body(self, scope: str) -> Optional[cst.CSTNode]:
        if scope == MODULE_SCOPE:
            return self.m.module
        fn = self.m.functions.get(scope)
        return fn.node.body if fn is not None else None

    def flow(self, scope: str) -> List[_Stmt]:
        """The statements of a scope in source order (compound statements: their header)."""
        if scope in self._flows:
            return self._flows[scope]
        stmts: List[_Stmt] = []
        call_effects = {e.node: e for e in self.m.effects_in(scope) if e.kind == CALL}
        module_names = set(self.m.imports.aliases)

        def add(node, reads: _Reads, writes, kill):
            stmt = _Stmt(node, set(reads.refs), list(writes), kill, set(reads.calls))
            stmt.returns = reads.yields
            for call in reads.calls:
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value in ("backward", "manual_backward"):
                    inner = _reads(func.value, *[a.value for a in call.args])
                    stmt.sink_reads |= inner.refs
                    stmt.sink_calls |= set(inner.calls)
                elif self._autograd_call(call):
                    inner = _reads(*[a.value for a in call.args])
                    stmt.sink_reads |= inner.refs
                    stmt.sink_calls |= set(inner.calls)
                effect = call_effects.get(call)
                if effect is not None and effect.callee in self.m.functions:
                    for param, expr in self._bind_exprs(effect.callee, call).items():
                        inner = _reads(expr)
                        stmt.local_args.append((effect.callee, param, inner.refs, set(inner.calls)))
            stmts.append(stmt)
            return stmt

        def small(node: cst.BaseSmallStatement):
            if isinstance(node, cst.Assign):
                writes = [r for t in node.targets for r in _target_refs(t.target)]
                add(node, _reads(node.value), writes, True)
            elif isinstance(node, cst.AnnAssign):
                if node.value is not None:
                    add(node, _reads(node.value), _target_refs(node.target), True)
            elif isinstance(node, cst.AugAssign):
                add(node, _reads(node.target, node.value), _target_refs(node.target), False)
            elif isinstance(node, cst.Return):
                stmt = add(node, _reads(node.value), [], False)
                stmt.returns = True
            else:
                stmt = add(node, _reads(node), [], False)
                # ``outs.append(out)``, ``metric.update(out, y)``: the receiver now holds the value
                value = node.value if isinstance(node, cst.Expr) else None
                if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.args:
                    receiver = dotted(value.func.value)
                    if receiver and _head(receiver) not in module_names and receiver not in ("self", "super"):
                        stmt.mutates.add(receiver)

        def suite(body):
            if isinstance(body, (cst.SimpleStatementSuite,)):
                for item in body.body:
                    small(item)
            elif isinstance(body, (cst.IndentedBlock, cst.Module)):
                for item in body.body:
                    statement(item)

        def statement(node):
            if isinstance(node, cst.SimpleStatementLine):
                for item in node.body:
                    small(item)
            elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                return
            elif isinstance(node, cst.For):
                add(node, _reads(node.iter), _target_refs(node.target), True)
                suite(node.body)
                if node.orelse is not None:
                    suite(node.orelse.body)
            elif isinstance(node, cst.While):
                add(node, _reads(node.test), [], False)
                suite(node.body)
                if node.orelse is not None:
                    suite(node.orelse.body)
            elif isinstance(node, cst.If):
                add(node, _reads(node.test), [], False)
                suite(node.body)
                orelse = node.orelse
                if isinstance(orelse, cst.If):
                    statement(orelse)
                elif orelse is not None:
                    suite(orelse.body)
            elif isinstance(node, cst.With):
                for item in node.items:
                    writes = _target_refs(item.asname.name) if item.asname is not None else []
                    add(node, _reads(item.item), writes, bool(writes))
                suite(node.body)
            elif isinstance(node, cst.Try) or type(node).__name__ == "TryStar":
                suite(node.body)
                for handler in node.handlers:
                    suite(handler.body)
                if node.orelse is not None:
                    suite(node.orelse.body)
                if node.finalbody is not None:
                    suite(node.finalbody.body)
            else:
                for child in node.children:
                    if isinstance(child, cst.BaseSuite):
                        suite(child)

        body = self._scope_body(scope)
        if body is not None:
            suite(body)
        self._flows[scope] = stmts
        index: Dict[cst.Call, int] = {}
        for i, stmt in enumerate(stmts):
            for call in stmt.calls:
                index.setdefault(call, i)
        self._stmt_of[scope] = index
        return stmts

    def _bind_exprs(self, key: str, call: cst.Call) -> Dict[str, cst.BaseExpression]:
        fn = self.m.functions[key]
        params = list(fn.params)
        mapping: Dict[str, cst.BaseExpression] = {}
        if fn.cls and params and params[0] in ("self", "cls"):
            params = params[1:]
        index = 0
        for arg in call.args:
            if arg.star:
                return {}
            if arg.keyword is not None:
                mapping[arg.keyword.value] = arg.value
            elif index < len(params):
                mapping[params[index]] = arg.value
                index += 1
        return mapping

    def _backward_sets(self) -> Dict[str, Set[str]]:
        """For each scope, the references whose values reach a backward pass in it
        (flow-insensitive; through assignments, containers and local helpers)."""
        if self._backward_refs is not None:
            return self._backward_refs
        scopes = list(self.m.functions) + [MODULE_SCOPE]
        sets: Dict[str, Set[str]] = {s: set() for s in scopes}
        for _ in range(10):
            changed = False
            for scope in scopes:
                b = sets[scope]
                before = len(b)
                stmts = self.flow(scope)
                for stmt in stmts:
                    b |= stmt.sink_reads
                    for callee, param, reads, _calls in stmt.local_args:
                        if _hits(sets.get(callee, ()), [param]) or param in sets.get(callee, ()):
                            b |= reads
                grew = True
                while grew:
                    grew = False
                    for stmt in stmts:
                        targets = stmt.writes + list(stmt.mutates)
                        if targets and any(_hits([w], b) or _hits(b, [w]) for w in targets):
                            new = stmt.reads - b
                            if new:
                                b |= new
                                grew = True
                if len(b) != before:
                    changed = True
            if not changed:
                break
        self._backward_refs = sets
        attrs: Dict[str, Set[str]] = {}
        for key, fn in self.m.functions.items():
            if fn.cls is not None:
                attrs.setdefault(fn.cls, set()).update(r for r in sets[key] if r.startswith("self."))
        self._class_backward_attrs = attrs
        return sets

    def feeds_backward(self, node: cst.CSTNode, scope: str, _seen: Optional[Set[cst.CSTNode]] = None) -> bool:
        """Whether the value of call ``node`` (a forward, or a call of a local function)
        reaches a backward pass: in its scope after it, or through a return to a caller
        whose use of the result reaches one, or through a ``self`` attribute some method
        backpropagates."""
        if node in self._feeds:
            return self._feeds[node]
        seen = _seen or set()
        if node in seen:
            return False
        seen.add(node)
        result = self._feeds_in_scope(node, scope, seen)
        if _seen is None:
            self._feeds[node] = result
        return result

    def _feeds_in_scope(self, node: cst.CSTNode, scope: str, seen: Set[cst.CSTNode]) -> bool:
        stmts = self.flow(scope)
        index = self._stmt_of[scope].get(node)  # type: ignore[arg-type]
        if index is None:
            return False
        sets = self._backward_sets()
        fn = self.m.functions.get(scope)
        cls_attrs = self._class_backward_attrs.get(fn.cls, set()) if fn is not None and fn.cls else set()  # type: ignore[union-attr]

        def local_feed(stmt: _Stmt, tainted: Set[str], source: Optional[cst.CSTNode]) -> bool:
            for callee, param, reads, calls in stmt.local_args:
                if (source is not None and source in calls) or (tainted and _hits(reads, tainted)):
                    if param in sets.get(callee, ()) or any(r.startswith(param + ".") for r in sets.get(callee, ())):
                        return True
            return False

        first = stmts[index]
        if node in first.sink_calls or local_feed(first, set(), node):
            return True
        tainted: Set[str] = set(first.writes) | first.mutates if first.writes or first.mutates else set()
        returned = first.returns
        if any(_hits([w], cls_attrs) for w in tainted if w.startswith("self.")):
            return True
        for stmt in stmts[index + 1:]:
            if not tainted:
                break
            if _hits(stmt.reads, tainted):
                if _hits(stmt.sink_reads, tainted) or local_feed(stmt, tainted, None):
                    return True
                if stmt.returns:
                    returned = True
                new = set(stmt.writes) | stmt.mutates
                if any(_hits([w], cls_attrs) for w in new if w.startswith("self.")):
                    return True
                tainted |= new
            elif stmt.kill:
                tainted -= set(stmt.writes)
        if returned and fn is not None:
            for site in self.call_sites(scope):
                if self.feeds_backward(site.node, site.ctx.scope, seen):
                    return True
        return False

    # --- grad ----------------------------------------------------------------------------------------
    def _with_grad(self, item: cst.WithItem, scope: str) -> Optional[str]:
        """"off" when a with-item turns grad off (or may: a flag), "ambiguous" when we cannot
        tell, None when it leaves grad alone."""
        from mllint.semantics.builder import grad_mode_of

        expr = item.item
        call = expr if isinstance(expr, cst.Call) else None
        qual = self.qual(call.func if call else expr)
        mode = grad_mode_of(qual, call)
        if mode is not None:
            return "off" if mode == "off" or mode.startswith("flag") else None
        inner = _reads(expr)
        if any(grad_mode_of(self.qual(c.func), c) not in (None, "on") for c in inner.calls):
            return "off"  # torch.no_grad() if not training else nullcontext()
        if call is not None:
            local = self._local_callable(call.func, scope)
            if local is not None:
                return "off" if self._local_cm_grad_off(local) else None
            if _GRAD_HINT.search(qual):
                return "ambiguous"
            return None
        name = dotted(expr)
        if name is None:
            return "ambiguous"
        value = self._assigned_value(name, scope)
        if value is None:
            return None if _HARMLESS_CM.search(name) else "ambiguous"
        found = _reads(value)
        if any(grad_mode_of(self.qual(c.func), c) not in (None, "on") for c in found.calls):
            return "off"
        if any(_GRAD_HINT.search(self.qual(c.func)) for c in found.calls):
            return "ambiguous"
        return None

    def _assigned_value(self, ref: str, scope: str) -> Optional[cst.BaseExpression]:
        current = scope
        while True:
            for targets, value, ctx in self.m.assignments:
                if ctx.scope == current and targets == (ref,):
                    return value
            if current == MODULE_SCOPE:
                return None
            current = current.rsplit(".", 1)[0] if "." in current else MODULE_SCOPE

    def _local_callable(self, func: cst.BaseExpression, scope: str) -> Optional[str]:
        """A function or class defined in this file that ``func`` names."""
        name = dotted(func)
        if name is None:
            return None
        short = name.rsplit(".", 1)[-1]
        if name.startswith("self.") and name.count(".") == 1:
            cls = self.m.class_scope_of(scope)
            if cls and f"{cls}.{short}" in self.m.functions:
                return f"{cls}.{short}"
        if name in self.m.functions:
            return name
        if name in self.m.classes:
            return name
        return None

    def _local_cm_grad_off(self, key: str) -> bool:
        """A local context manager (a @contextmanager function, or a class whose __enter__
        does it) that turns grad off."""
        keys = [key]
        if key in self.m.classes:
            keys = [f"{key}.__enter__", f"{key}.__init__"]
        for k in keys:
            fn = self.m.functions.get(k)
            if fn is None:
                continue
            if fn.grad == "off":
                return True
            for call, ctx in self.calls_in(k):
                from mllint.semantics.builder import grad_mode_of

                mode = grad_mode_of(self.qual(call.func), call)
                if mode == "off" or (mode or "").startswith("flag"):
                    return True
                if isinstance(call.func, cst.Attribute) and call.func.attr.value == "__enter__":
                    inner = call.func.value
                    if isinstance(inner, cst.Call) and grad_mode_of(self.qual(inner.func), inner) == "off":
                        return True
            for effect in self.m.effects_in(k):
                if effect.ctx.grad == "off" and k not in self.m.classes:
                    return True
        return False

    def _grad_off_statement_orders(self) -> List[Tuple[str, int]]:
        """``torch.set_grad_enabled(False)`` used as a statement: (scope, order) from where grad is off."""
        if self._grad_off_statements is None:
            from mllint.semantics.builder import SET_GRAD_ENABLED

            found = []
            for call, ctx in self.m.calls:
                qual = self.qual(call.func)
                if qual in SET_GRAD_ENABLED or qual == "torch._C._set_grad_enabled":
                    if call.args and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "False":
                        stmt = ctx.statement
                        if isinstance(stmt, cst.SimpleStatementLine) and any(
                            isinstance(s, cst.Expr) and s.value is call for s in stmt.body
                        ):
                            found.append((ctx.scope, self.m.call_order.get(call, 0)))
            self._grad_off_statements = found
        return self._grad_off_statements

    def grad_off_functions(self) -> Set[str]:
        """Functions whose body always runs with grad off: decorated, or every call site in
        a grad-off region (helpers count), computed to a fixpoint."""
        if self._grad_off_fns is not None:
            return self._grad_off_fns
        off: Set[str] = set()
        for key, fn in self.m.functions.items():
            if fn.grad == "off" or any(_GRAD_HINT.search(d) for d in fn.decorators):
                off.add(key)
        changed = True
        while changed:
            changed = False
            for key in self.m.functions:
                if key in off:
                    continue
                sites = self.call_sites(key)
                if sites and all(self._site_grad_off(site, off) for site in sites):
                    off.add(key)
                    changed = True
        self._grad_off_fns = off
        return off

    def _site_grad_off(self, effect: Effect, off_fns: Set[str]) -> bool:
        grad = effect.ctx.grad
        if grad == "off" or (grad or "").startswith("flag"):
            return True
        if grad == "on":
            return False
        if self._withs_grad(effect.ctx) is not None:
            return True
        if self._after_grad_off_statement(effect.ctx.scope, effect.order):
            return True
        return effect.ctx.scope in off_fns

    def _withs_grad(self, ctx: Context) -> Optional[str]:
        found = None
        for with_node in ctx.withs:
            for item in with_node.items:
                mode = self._with_grad(item, ctx.scope)
                if mode == "off":
                    return "off"
                if mode == "ambiguous":
                    found = "ambiguous"
        return found

    def _after_grad_off_statement(self, scope: str, order: int) -> bool:
        for where, at in self._grad_off_statement_orders():
            if where == MODULE_SCOPE and scope == MODULE_SCOPE and at < order:
                return True
            if where == scope and at < order:
                return True
            if where == MODULE_SCOPE and scope != MODULE_SCOPE:
                return True  # set once for the whole program
        return False

    def protected(self, effect: Effect) -> bool:
        """Whether a forward runs with grad off (or may: a flag, an unknown context manager)."""
        return self._site_grad_off(effect, self.grad_off_functions())

    def frozen(self, ref: str, scope: str) -> bool:
        """Whether every parameter of the model is frozen (``requires_grad_(False)``), so a
        forward builds no graph."""
        if self._frozen is None:
            found: Set[str] = set()
            for call, ctx in self.m.calls:
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_" and call.args:
                    value = call.args[0].value
                    if isinstance(value, cst.Name) and value.value == "False":
                        receiver = self._receiver(func.value)
                        if receiver:
                            found.add(self._param_owner(receiver, ctx) or receiver)
            for targets, value, ctx in self.m.assignments:
                if isinstance(value, cst.Name) and value.value == "False":
                    for target in targets:
                        if target.endswith(".requires_grad"):
                            owner = self._param_owner(target[: -len(".requires_grad")], ctx)
                            if owner:
                                found.add(owner)
            self._frozen = found
        canonical = self.m.canonical(ref, scope)
        return any(ref == f or ref.startswith(f + ".") or canonical == f or canonical.startswith(f + ".") for f in self._frozen)

    def _param_owner(self, tensor: str, ctx: Context) -> Optional[str]:
        """``p`` bound by ``for p in model.parameters()``: ``model``."""
        loop = ctx.loop
        while loop is not None:
            if tensor in loop.targets or (loop.targets and tensor == loop.targets[-1]):
                node = loop.node
                if isinstance(node, cst.For):
                    expr = node.iter
                    for _ in range(5):
                        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in (
                            "parameters",
                            "named_parameters",
                        ):
                            return self._receiver(expr.func.value)
                        if isinstance(expr, cst.Call) and expr.args:
                            expr = expr.args[0].value
                            continue
                        break
                return None
            loop = loop.parent
        return None

    def _receiver(self, expr: cst.BaseExpression) -> Optional[str]:
        """The model a call chain acts on: ``model.to(dev).eval()`` -> ``model``."""
        for _ in range(10):
            ref = ref_of(expr)
            if ref is not None:
                return ref
            if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
                expr = expr.func.value
                continue
            return None
        return None

    # --- evaluation code --------------------------------------------------------------------------------
    def function_evidence(self, key: str) -> Optional[Evidence]:
        """Why the whole of function ``key`` is evaluation code (None: it is not)."""
        if key in self._fn_eval:
            return self._fn_eval[key]
        self._fn_eval[key] = None  # recursion guard
        result = self._function_evidence(key)
        self._fn_eval[key] = result
        return result

    def _function_evidence(self, key: str) -> Optional[Evidence]:
        fn = self.m.functions.get(key)
        if fn is None or self.managed(fn) or self.unit_test(fn) or self.trains(key) or self.module_method(fn):
            return None
        if isinstance(fn.node, cst.FunctionDef) and fn.node.asynchronous is not None:
            return None
        name = fn.node.name.value
        sites = self.call_sites(key)
        if any(self.feeds_backward(site.node, site.ctx.scope) for site in sites):
            return None
        strength = eval_name_strength(name)
        if strength and not self.module_method(fn):
            if strength == "strong" or not self.referenced_as_value(key) or sites:
                return Evidence("function", f"in `{name}()`", key, weak=strength == "weak")
        # nested in an evaluation function
        if "." in key:
            outer = key.rsplit(".", 1)[0]
            if outer in self.m.functions:
                found = self.function_evidence(outer)
                outer_name = self.m.functions[outer].node.name.value
                if found is not None and found.kind == "function" and not sites and eval_name_strength(outer_name) == "strong":
                    return found
        if sites and not self.referenced_as_value(key):
            found_at_sites = [self.evidence(site) for site in sites]
            if all(e is not None for e in found_at_sites):
                weak = any(e.weak for e in found_at_sites if e is not None)
                return Evidence("callers", f"in `{name}()` (only evaluation code calls it)", key, weak=weak)
        return None

    def evidence(self, effect: Effect) -> Optional[Evidence]:
        """Why the forward (or call) ``effect`` is evaluation code, or None."""
        if effect.node in self._evidence:
            return self._evidence[effect.node]
        self._evidence[effect.node] = None
        result = self._evidence_of(effect)
        self._evidence[effect.node] = result
        return result

    def _evidence_of(self, effect: Effect) -> Optional[Evidence]:
        scope = effect.ctx.scope
        fn = self.m.functions.get(scope)
        if fn is not None and (self.managed(fn) or self.unit_test(fn) or self.module_method(fn)):
            return None  # framework hooks, unit tests, model internals (run in the caller's mode)
        found = self.loop_evidence(effect.ctx) or (self.function_evidence(scope) if fn is not None else None)
        found = found or self.data_evidence(effect) or self.script_evidence(effect)
        if found is None:
            return None
        if self.feeds_backward(effect.node, scope):
            return None
        return found

    def loop_evidence(self, ctx: Context) -> Optional[Evidence]:
        loop = ctx.loop
        while loop is not None:
            if self.loop_backprops(loop):
                return None
            source = self.iterated_data(loop)
            if source is not None:
                return Evidence("loop", f"in the loop over `{source}`", None, loop)
            loop = loop.parent
        return None

    def iterated_data(self, loop: Loop) -> Optional[str]:
        """The evaluation data a loop iterates (``val_loader``, ``self.get_test_dataloader()``)."""
        node = loop.node
        if not isinstance(node, cst.For):
            return None
        exprs = [node.iter]
        for _ in range(6):
            nxt = []
            for expr in exprs:
                if isinstance(expr, cst.Call):
                    name = self.qual(expr.func)
                    short = name.rsplit(".", 1)[-1]
                    if short in ("enumerate", "tqdm", "iter", "zip", "list", "track", "islice", "sorted", "reversed") or name.endswith("tqdm"):
                        args = [a.value for a in expr.args if a.keyword is None]
                        nxt.extend(args if short == "zip" else args[:1])
                        continue
                    ref = dotted(expr.func)
                    if ref and is_eval_data_ref(ref.rsplit(".", 1)[-1].replace("get_", "")):
                        return self.m.code_of(expr.func) + "()"
                    continue
                ref = ref_of(expr)
                if ref and is_eval_data_ref(ref):
                    return ref
                if isinstance(expr, cst.Attribute):
                    attr = dotted(expr)
                    if attr and is_eval_data_ref(attr):
                        return attr
            if not nxt:
                break
            exprs = nxt
        return None

    def data_evidence(self, effect: Effect) -> Optional[Evidence]:
        """A forward on evaluation data (``model(X_val)``), or on values derived from it."""
        node = effect.node
        if not isinstance(node, cst.Call):
            return None
        for arg in node.args:
            for ref in _reads(arg.value).refs:
                if self._eval_data(ref, effect.ctx, 2):
                    return Evidence("data", f"on `{ref}`")
        return None

    def _eval_data(self, ref: str, ctx: Context, depth: int) -> bool:
        if is_eval_data_ref(ref):
            return True
        if depth <= 0:
            return False
        head = _head(ref)
        loop = ctx.loop
        while loop is not None:
            if head in loop.targets:
                return self.iterated_data(loop) is not None
            loop = loop.parent
        for targets, value, actx in self.m.assignments:
            if actx.scope == ctx.scope and head in targets:
                part = _part_for(targets, value, head)
                refs = [
                    r for r in _reads(part if part is not None else value).refs
                    if _head(r) not in (head, "self", "cls") and _head(r) not in _BUILTINS and _head(r) not in self.m.imports.aliases
                ]
                if part is None:
                    # x, y = next(iter(val_loader)): every part comes from evaluation data
                    # only when all it reads is evaluation data.
                    if refs and all(self._eval_data(r, actx, depth - 1) for r in refs):
                        return True
                    continue
                if any(self._eval_data(r, actx, depth - 1) for r in refs):
                    return True
        return False

    def script_evidence(self, effect: Effect) -> Optional[Evidence]:
        """A forward in an inference script: module level (or main()) of a file that trains
        nothing, where this scope loads weights."""
        scope = effect.ctx.scope
        fn = self.m.functions.get(scope)
        if fn is not None and (fn.cls is not None or fn.node.name.value not in _MAIN_NAMES):
            return None
        if self.file_trains():
            return None
        for call, _ctx in self.calls_in(scope):
            name = self.qual(call.func)
            if _LOAD_CALLS.search(name) or (isinstance(call.func, cst.Attribute) and _LOAD_CALLS.search(call.func.attr.value)):
                return Evidence("script", "in inference code (weights are loaded and nothing is trained)")
        return None

    def mode_evidence(self, effect: Effect) -> Optional[Evidence]:
        """Code after ``.eval()`` that never calls backward (for ML002): the model is in eval
        mode here, no backward pass runs in an enclosing loop or later in the function."""
        scope = effect.ctx.scope
        fn = self.m.functions.get(scope)
        if fn is not None and (self.managed(fn) or self.unit_test(fn)):
            return None
        if self.overrides_mode(effect.ref, scope):
            return None
        loop = effect.ctx.loop
        while loop is not None:
            if self.loop_backprops(loop):
                return None
            loop = loop.parent
        for other in self.m.effects_in(scope):
            if other.order > effect.order and (other.kind == BACKWARD or (other.kind == CALL and other.callee in self.backprop_functions)):
                return None
        for call, _ctx in self.calls_in(scope):
            if self._autograd_call(call):
                return None
        modes = self.mode_at(effect, effect.ref)
        if modes != {"eval"}:
            return None
        if not any(e.kind == "eval" and e.order < effect.order and related(e.ref, effect.ref) for e in self.events(scope)):
            return None  # eval mode set by a caller: too far away to call this evaluation code
        if self.feeds_backward(effect.node, scope):
            return None
        return Evidence("mode", f"after `{effect.ref}.eval()`")

    def evaluation_only_function(self, key: str) -> bool:
        """A function that may take ``@torch.no_grad()``: it evaluates and nothing else."""
        fn = self.m.functions.get(key)
        if fn is None or self.trains(key) or self.module_method(fn) or self.managed(fn):
            return False
        if fn.node.asynchronous is not None:
            return False
        if any(d.endswith("property") or d.endswith("setter") for d in fn.decorators):
            return False
        if any(self.feeds_backward(site.node, site.ctx.scope) for site in self.call_sites(key)):
            return False
        if any(self._autograd_call(c) for c, _ in self.calls_in(key)):
            return False
        for effect in self.m.effects_in(key):
            if effect.ctx.grad == "on":
                return False
        return True

    # --- modes -----------------------------------------------------------------------------------------
    def _assignment_targets(self) -> Dict[cst.CSTNode, Tuple[str, ...]]:
        """For each call that is (the receiver chain of) an assigned value: the targets."""
        if self._assign_of_call is None:
            table: Dict[cst.CSTNode, Tuple[str, ...]] = {}
            for targets, value, _ctx in self.m.assignments:
                expr = value
                for _ in range(10):
                    if not isinstance(expr, cst.Call):
                        break
                    table[expr] = targets
                    if isinstance(expr.func, cst.Attribute):
                        expr = expr.func.value
                    else:
                        break
            self._assign_of_call = table
        return self._assign_of_call

    def _mode_ref(self, effect: Effect) -> str:
        """The model an EVAL/TRAIN effect switches: the assigned name for
        ``model = Net().eval()``, the receiver chain's model for ``model.to(dev).eval()``."""
        if effect.ref != ANY:
            return effect.ref
        targets = self._assignment_targets().get(effect.node)
        if targets and len(targets) == 1:
            return targets[0]
        node = effect.node
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            found = self._receiver(node.func.value)
            if found:
                return found
        return ANY

    def _with_end(self, with_node: cst.With, scope: str) -> float:
        if with_node not in self._with_ends:
            last = 0
            for effect in self.m.effects_in(scope):
                if with_node in effect.ctx.withs:
                    last = max(last, effect.order)
            for call, ctx in self.calls_in(scope):
                if with_node in ctx.withs:
                    last = max(last, self.m.call_order.get(call, 0))
            self._with_ends[with_node] = last + 0.5
        return self._with_ends[with_node]

    def _is_with_item(self, call: cst.CSTNode, ctx: Context) -> Optional[cst.With]:
        stmt = ctx.statement
        if isinstance(stmt, cst.With):
            for item in stmt.items:
                if item.item is call:
                    return stmt
        return None

    def _contextmanager(self, key: str) -> bool:
        fn = self.m.functions.get(key)
        return fn is not None and any(d.rsplit(".", 1)[-1] in _CM_DECORATORS for d in fn.decorators)

    def _yield_line_of(self, key: str) -> Optional[int]:
        if key not in self._yield_line:
            found: List[cst.Yield] = []

            class Finder(cst.CSTVisitor):
                def visit_Yield(self, node: cst.Yield) -> None:
                    found.append(node)

                def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                    return False

            fn = self.m.functions[key]
            fn.node.body.visit(Finder())
            self._yield_line[key] = self.m.position(found[0]).start.line if found else None
        return self._yield_line[key]

    def events(self, scope: str, _stack: Tuple[str, ...] = ()) -> List[ModeEvent]:
        """Mode switches in a scope, in the order they run, helpers' included."""
        if scope in self._events:
            return self._events[scope]
        if scope in _stack or len(_stack) > 8:
            return []
        stack = _stack + (scope,)
        out: List[ModeEvent] = []
        for effect in self.m.effects_in(scope):
            if effect.kind in (EVAL, TRAIN, MODE_UNKNOWN):
                kind = {EVAL: "eval", TRAIN: "train"}.get(effect.kind, "maybe")
                out.append(ModeEvent(effect.order, kind, self._mode_ref(effect), effect.node, effect.ctx, (), False, effect.ctx.withs))
            elif effect.kind == CALL and effect.callee in self.m.functions:
                out.extend(self._helper_events(effect, stack))
        for call, ctx in self.calls_in(scope):
            out.extend(self._unknown_mode_calls(call, ctx))
        # One statement that switches a model both ways (``model.train() if phase == "train"
        # else model.eval()``): either may happen.
        by_statement: Dict[int, Set[str]] = {}
        for event in out:
            if event.ctx.statement is not None and not event.via:
                by_statement.setdefault(id(event.ctx.statement), set()).add(event.kind)
        for event in out:
            if event.ctx.statement is not None and not event.via and len(by_statement.get(id(event.ctx.statement), ())) > 1:
                event.cond = True
        out.sort(key=lambda e: e.order)
        if not _stack:
            self._events[scope] = out
        return out

    def _helper_events(self, effect: Effect, stack: Tuple[str, ...]) -> List[ModeEvent]:
        callee = effect.callee or ""
        inner = self.events(callee, stack)
        if not inner:
            return []
        fn = self.m.functions[callee]
        mapping = effect.args or {}
        with_node = self._is_with_item(effect.node, effect.ctx)
        split = None
        if with_node is not None and self._contextmanager(callee):
            split = self._yield_line_of(callee)
        out = []
        for event in inner:
            ref = event.ref
            head = _head(ref)
            if ref != ANY and head not in fn.params and head not in ("self", "cls"):
                if self.m.assigns_locally(callee, head):
                    continue  # a model the helper makes for itself
            new_ref = translate(ref, mapping) if ref != ANY else ANY
            order: float = effect.order
            if split is not None and with_node is not None and self.m.position(event.node).start.line > split:
                order = self._with_end(with_node, effect.ctx.scope)
            cond = event.cond or bool(event.ctx.conds)
            out.append(ModeEvent(order, event.kind, new_ref, event.node, effect.ctx, (effect,) + event.via, cond, event.withs))
        return out

    def _unknown_mode_calls(self, call: cst.Call, ctx: Context) -> List[ModeEvent]:
        """Calls we cannot see into that may switch a model's mode: ``set_eval(model)``,
        ``model.apply(set_bn_eval)``, ``with EvalMode(model):`` (a local class), ``with
        torch_utils.eval_mode(model):``."""
        func = call.func
        name = dotted(func) or ""
        order = self.m.call_order.get(call, 0)
        out: List[ModeEvent] = []
        if self._local_callable(func, ctx.scope) in self.m.functions:
            return out  # a local function: its effects arrive as a helper's
        local_class = name if name in self.m.classes else None
        tokens = set(name_tokens(name.rsplit(".", 1)[-1])) if name else set()
        if isinstance(func, cst.Attribute) and func.attr.value == "apply" and call.args:
            receiver = ref_of(func.value)
            arg = dotted(call.args[0].value) or ""
            if receiver and set(name_tokens(arg)) & _MODE_CALL_WORDS:
                out.append(ModeEvent(order, "maybe", receiver, call, ctx, (), True))
            return out
        if local_class is not None:
            info = self.m.classes[local_class]
            if "__enter__" not in info.methods:
                return out
            kinds = set()
            for key in (f"{local_class}.__enter__", f"{local_class}.__exit__", f"{local_class}.__init__"):
                kinds |= {e.kind for e in self.events(key)} if key in self.m.functions else set()
            if not kinds:
                return out
        elif not (tokens & _MODE_CALL_WORDS) or isinstance(func, cst.Attribute) and func.attr.value in ("train", "eval"):
            return out
        for arg in call.args:
            ref = ref_of(arg.value)
            if ref and self.m.has_role(ref, R.MODEL, ctx.scope):
                out.append(ModeEvent(order, "maybe", ref, call, ctx, (), True))
        return out

    def mode_at(self, effect: Effect, ref: str) -> Set[str]:
        """The modes ``ref`` may be in when ``effect`` runs: a subset of {"eval", "eval_initial"
        (made by from_pretrained, never switched), "train",
        "maybe", "none"} ("none": nothing sets it and nobody in this file calls the function)."""
        return self._mode(effect.ctx.scope, effect.order, effect.ctx, ref, 0, frozenset())

    def _kind(self, event: ModeEvent, point: Context) -> str:
        if event.cond or event.ref == ANY:
            return "maybe"
        if any(c not in point.conds for c in event.ctx.conds):
            return "maybe"
        return event.kind

    def _mode(self, scope: str, order: float, ctx: Context, ref: str, depth: int, seen: FrozenSet) -> Set[str]:
        if depth > 8:
            return {"maybe"}
        events = [e for e in self.events(scope) if self.same_model(e.ref, ref, scope)]
        before = [e for e in events if e.order < order]
        result: Set[str] = set()
        loop = ctx.loop
        while loop is not None:
            inside = [e for e in before if loop.encloses(e.ctx.loop)]
            if inside:
                result.add(self._kind(inside[-1], ctx))
                return result
            after = [e for e in events if e.order > order and loop.encloses(e.ctx.loop)]
            if after:
                result.add(self._kind(after[-1], ctx))
            loop = loop.parent
        if before:
            result.add(self._kind(before[-1], ctx))
            return result
        return result | self._outer(scope, ref, depth, seen)

    def _outer(self, scope: str, ref: str, depth: int, seen: FrozenSet) -> Set[str]:
        """The mode a model has when ``scope`` starts: from the callers, else how it was made."""
        if scope == MODULE_SCOPE:
            return {self._initial(MODULE_SCOPE, ref)}
        fn = self.m.functions.get(scope)
        if fn is None:
            return {"maybe"}
        head = _head(ref)
        is_param = head in fn.params or head in ("self", "cls")
        if not is_param and self.m.assigns_locally(scope, head):
            return {self._initial(scope, ref)}
        sites = [s for s in self.call_sites(scope) if s.node not in seen]
        if not sites:
            if self.call_sites(scope):
                return {"maybe"}  # recursion
            if head in ("self", "cls"):
                found = self._initial_attr(scope, ref)
                if found == "none" and not self._unset_counts(scope, depth):
                    found = "maybe"
                cls = self.m.class_scope_of(scope) or ""
                owner = f"{cls}.__init__"
                others = [k for k in self.m.functions if k.startswith(cls + ".") and k.count(".") == cls.count(".") + 1]
                return self._settled(found, owner if owner in self.m.functions else None, others, scope, ref)
            if is_param:
                # Nobody in this file calls it: the caller may set the mode. Count that as
                # missing only for the evaluation routine itself, not for a helper of a helper,
                # nor for a method that a base class we cannot see may call (a template method).
                if fn.cls is not None and self._unseen_base(fn.cls):
                    return {"maybe"}
                return {"none" if self._unset_counts(scope, depth) else "maybe"}
            parent = scope.rsplit(".", 1)[0] if "." in scope else MODULE_SCOPE
            if parent in self.m.classes:
                parent = MODULE_SCOPE
            others = [k for k in self.m.functions if self.m.functions[k].cls is None]
            return self._settled(self._initial(parent, ref), parent, others, scope, ref)
        out: Set[str] = set()
        for site in sites:
            new_ref = translate(ref, site.args or {}) if is_param else ref
            if new_ref == ANY:
                out.add("maybe")
                continue
            out |= self._mode(site.ctx.scope, site.order, site.ctx, new_ref, depth + 1, seen | {site.node})
        return out or {"maybe"}

    def _settled(self, initial: str, owner: Optional[str], others: List[str], scope: str, ref: str) -> Set[str]:
        """The mode of a model a function uses but nobody in the file calls the function:
        how it was made, then the last switch in the code that owns it (``__init__`` for
        ``self.model``, the module for a global); a switch in another function may have
        run before (training mode: "train", anything else: "maybe")."""
        found = initial
        if owner is not None:
            settled = [e for e in self.events(owner) if self.same_model(e.ref, ref, owner) and e.ctx.loop is None]
            if settled:
                last = settled[-1]
                found = "maybe" if last.cond or last.ctx.conds else last.kind
        result = {found}
        for key in others:
            if key in (scope, owner):
                continue
            for event in self.events(key):
                if self.same_model(event.ref, ref, key):
                    result.add("train" if event.kind == "train" and not event.cond and not event.via else "maybe")
        return result

    def _unseen_base(self, name: str, seen: Optional[Set[str]] = None) -> bool:
        """Whether a class (or a class it derives from in this file) has a base defined elsewhere."""
        info = self.m.classes.get(name)
        if info is None:
            return False
        seen = seen or set()
        seen.add(name)
        for arg in info.node.bases:
            expr = arg.value.value if isinstance(arg.value, cst.Subscript) else arg.value
            short = (dotted(expr) or "").rsplit(".", 1)[-1]
            if short in ("object", "ABC", "Generic", "Protocol", "NamedTuple", ""):
                continue
            if short in self.m.classes:
                if short not in seen and self._unseen_base(short, seen):
                    return True
                continue
            return True
        return False

    def same_model(self, a: str, b: str, scope: str) -> bool:
        """``related`` after following aliases (``net = model.to(device)``) and models held by
        objects built from them (``trainer.model`` for ``trainer = Trainer(model)``)."""
        if related(a, b) or related(self.m.canonical(a, scope), self.m.canonical(b, scope)):
            return True
        held_a, held_b = self._resolved(a, scope), self._resolved(b, scope)
        return (held_a, held_b) != (a, b) and related(held_a, held_b)

    def _resolved(self, ref: str, scope: str) -> str:
        """``ref`` after following aliases and constructor arguments stored in attributes."""
        for _ in range(4):
            ref = self.m.canonical(ref, scope)
            held = self.held_argument(ref, scope)
            if held is None:
                break
            ref = held
        return ref

    def held_argument(self, ref: str, scope: str) -> Optional[str]:
        """The object ``obj.attr`` holds when ``obj = C(x, ...)`` (one assignment, in ``scope``
        or a scope enclosing it) and ``C.__init__`` stores its parameter in that attribute
        (``self.attr = param``, ``param.to(device)``, a wrapper of it): ``trainer.model`` is
        ``model`` for ``trainer = Trainer(model)``. None whenever that is not certain: the
        attribute is assigned anywhere else in the class, conditionally or in a loop, the
        argument is not passed (a default), or its name is rebound after the construction."""
        key = (ref, scope)
        if key in self._held:
            return self._held[key]
        self._held[key] = None
        found = self._held_argument(ref, scope)
        self._held[key] = found
        return found

    def _held_argument(self, ref: str, scope: str) -> Optional[str]:
        from mllint.semantics.builder import _source_ref

        head = _head(ref)
        if head in ("self", "cls") or not ref.startswith(head + "."):
            return None
        attr_chain = ref[len(head) + 1 :]
        attr = re.split(r"[.\[]", attr_chain, 1)[0]
        rest = attr_chain[len(attr) :]
        if not attr.isidentifier():
            return None
        cls = self.m.instance_of.get(scope, head)
        init = self.m.method_key(cls, "__init__") if cls else None
        if cls is None or init is None:
            return None
        fn = self.m.functions[init]
        owner = self.m.class_scope_of(init)
        target = f"self.{attr}"
        stores = [
            (targets, value, ctx)
            for targets, value, ctx in self.m.assignments
            if target in targets and ctx.scope != MODULE_SCOPE and self.m.class_scope_of(ctx.scope) in (owner, cls)
        ]
        if len(stores) != 1:
            return None
        targets, value, ctx = stores[0]
        if ctx.scope != init or ctx.loop is not None or ctx.conds or ctx.conditional:
            return None
        part = _part_for(targets, value, target)
        source = _source_ref(part) if part is not None else None
        if source is None:
            return None
        param = _head(source)
        params = [p for p in fn.params if p not in ("self", "cls")]
        if param not in params or self.m.assigns_locally(init, param):
            return None
        suffix = source[len(param) :]
        # the one assignment that built ``head``, in the nearest scope that assigns it
        current = scope
        while True:
            built = [(t, v, c) for t, v, c in self.m.assignments if c.scope == current and head in t]
            if built or current == MODULE_SCOPE:
                break
            if head in self.m.locals.get(current, ()):
                return None  # a parameter (or a local bound otherwise): made by the caller
            current = current.rsplit(".", 1)[0] if "." in current else MODULE_SCOPE
        if len(built) != 1:
            return None
        btargets, call, bctx = built[0]
        if len(btargets) != 1 or not isinstance(call, cst.Call) or dotted(call.func) != cls:
            return None
        arg_expr: Optional[cst.BaseExpression] = None
        index = 0
        for arg in call.args:
            if arg.star:
                return None
            if arg.keyword is not None:
                if arg.keyword.value == param:
                    arg_expr = arg.value
            else:
                if index < len(params) and params[index] == param:
                    arg_expr = arg.value
                index += 1
        argument = _source_ref(arg_expr) if arg_expr is not None else None
        if argument is None or _head(argument) in ("self", "cls"):
            return None
        built_line = self.m.position(call).start.line
        for t, v, c in self.m.assignments:
            if c.scope == current and _head(argument) in t and self.m.position(v).start.line > built_line:
                return None  # rebound after the construction: the object may hold the old one
        return argument + suffix + rest

    def _unset_counts(self, scope: str, depth: int) -> bool:
        return depth == 0 or self.loops_over_data(scope)

    def loops_over_data(self, scope: str) -> bool:
        """Whether the scope has a loop over a data loader or a dataset."""
        for loop in self.m.loops:
            if loop.scope != scope or not isinstance(loop.node, cst.For):
                continue
            if self.iterated_data(loop) is not None:
                return True
            ref = loop.iter_ref
            if ref and (self.m.has_role(ref, R.LOADER, scope) or set(name_tokens(ref.rsplit(".", 1)[-1])) & _LOADER_WORDS):
                return True
        return False

    def _initial_of_value(self, value: cst.BaseExpression, scope: str, depth: int = 0) -> str:
        if depth > 4:
            return "maybe"
        ref = ref_of(value)
        if ref is not None:
            return self._initial(scope, ref, depth + 1)
        expr = value
        for _ in range(10):
            if not isinstance(expr, cst.Call):
                return "maybe"
            name = self.qual(expr.func)
            if _EVAL_INITIAL.search(name):
                return "eval_initial"
            if _MAYBE_INITIAL.search(name):
                return "maybe"
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "eval" and not expr.args:
                return "eval"  # teacher = Net().eval()
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ("to", "cuda", "cpu", "float", "half", "double", "bfloat16", "requires_grad_", "share_memory"):
                expr = expr.func.value
                continue
            short = name.rsplit(".", 1)[-1]
            if short in ("DataParallel", "DistributedDataParallel", "compile", "prepare", "prepare_model") and expr.args:
                expr = expr.args[0].value
                inner = ref_of(expr)
                if inner is not None:
                    return self._initial(scope, inner, depth + 1)
                continue
            if isinstance(expr.func, cst.Attribute):
                receiver = ref_of(expr.func.value)
                if receiver is None or _head(receiver) not in self.m.imports.aliases:
                    return "maybe"  # ``self.get_encoder()``: a part of an existing object, in its mode
            return "train"
        return "maybe"

    def _initial(self, scope: str, ref: str, depth: int = 0, bound: Optional[int] = None) -> str:
        """How the model ``ref`` starts out, from the (last) assignment that made it
        (among the first ``bound`` assignments of the file)."""
        if depth > 4:
            return "maybe"
        assignments = self.m.assignments if bound is None else self.m.assignments[:bound]
        current = scope
        while True:
            for index in range(len(assignments) - 1, -1, -1):
                targets, value, ctx = assignments[index]
                if ctx.scope == current and ref in targets:
                    part = _part_for(targets, value, ref)
                    if part is not None and len(targets) != 1:
                        targets, value = (ref,), part
                    if len(targets) != 1:
                        # model, optimizer = accelerator.prepare(model, optimizer)
                        if isinstance(value, cst.Call) and len(value.args) == len(targets) and self.qual(value.func).rsplit(".", 1)[-1] in ("prepare", "setup", "initialize"):
                            source = ref_of(value.args[targets.index(ref)].value)
                            if source is not None:
                                return self._initial(current, source, depth + 1, index)
                        return "maybe"
                    source = ref_of(value)
                    if source is not None:
                        return self._initial(current, source, depth + 1, index)
                    return self._initial_of_value(value, current, depth)
            fn = self.m.functions.get(current)
            if fn is not None and _head(ref) in fn.params:
                return "none"
            if current == MODULE_SCOPE:
                break
            current = current.rsplit(".", 1)[0] if "." in current else MODULE_SCOPE
        if "." in ref and not ref.startswith(("self.", "cls.")):
            return self._initial(scope, ref.split(".", 1)[0], depth + 1)
        if _head(ref) in self.m.imports.aliases:
            return "maybe"  # imported: made where we cannot see
        return "none"  # nothing in this file makes it (a fresh model is in training mode)

    def _initial_attr(self, scope: str, ref: str) -> str:
        cls = self.m.class_scope_of(scope)
        if cls is None or "." not in ref:
            return "none"
        if self.module_like(cls.rsplit(".", 1)[-1]):
            return "maybe"  # a model's own part: in the mode its caller set
        for targets, value, ctx in self.m.assignments:
            if ref in targets and self.m.class_scope_of(ctx.scope) == cls:
                value = _part_for(targets, value, ref)
                if value is None:
                    return "maybe"
                source = ref_of(value)
                fn = self.m.functions.get(ctx.scope)
                if source is not None and fn is not None and _head(source) in fn.params:
                    return "none"
                return self._initial_of_value(value, ctx.scope)
        return "maybe"  # set by a base class we cannot see

    def mode_cm_around(self, ctx: Context, ref: str) -> bool:
        """An unknown context manager around this point that may set the model's mode
        (``with eval_mode(model):``, ``with ema.swap(model):``)."""
        for with_node in ctx.withs:
            for item in with_node.items:
                expr = item.item
                call = expr if isinstance(expr, cst.Call) else None
                name = self.qual(call.func if call else expr)
                if call is not None and self._local_callable(call.func, ctx.scope) is not None:
                    continue  # local: its mode switches are events
                if _HARMLESS_CM.search(name) or self._with_grad(item, ctx.scope) == "off":
                    continue
                if _MODE_HINT.search(name):
                    return True
                if call is not None and any(related(r, ref) for a in call.args for r in [ref_of(a.value) or ""] if r):
                    return True
                if call is None:
                    return True  # ``with ctx:``: unknown
        return False

    def unknown_cm_around(self, withs: Tuple[cst.With, ...], scope: str) -> bool:
        """Any context manager that is neither known harmless nor local (for eval() in a
        training loop: it may restore the mode when it exits)."""
        for with_node in withs:
            for item in with_node.items:
                expr = item.item
                call = expr if isinstance(expr, cst.Call) else None
                name = self.qual(call.func if call else expr)
                if call is not None and self._local_callable(call.func, scope) is not None:
                    continue
                if _HARMLESS_CM.search(name) or self._with_grad(item, scope) == "off":
                    continue
                return True
        return False

    # --- eval() never undone --------------------------------------------------------------------------
    def eval_not_undone(self) -> List[NotUndone]:
        found: List[NotUndone] = []
        reported: Set[cst.CSTNode] = set()
        for loop in sorted(self.m.loops, key=lambda l: (-l.depth, l.order)):
            fn = self.m.functions.get(loop.scope)
            if fn is not None and self.managed(fn):
                continue
            if not self.loop_trains(loop):
                continue
            events = [e for e in self.events(loop.scope) if loop.encloses(e.ctx.loop)]
            for event in events:
                if event.kind != "eval" or event.node in reported or event.ref == ANY:
                    continue
                if self._inner_training_loop(loop, event.ctx.loop):
                    continue  # the nested training loop reports it
                ref = event.ref
                if any(e.kind in ("train", "maybe") and self.same_model(e.ref, ref, loop.scope) for e in events):
                    continue
                if self.overrides_mode(ref, loop.scope) or not self._trained_in(loop, ref):
                    continue
                if self.unknown_cm_around(event.ctx.withs, loop.scope) or self.unknown_cm_around(
                    event.withs, self._event_scope(event)
                ):
                    continue
                if self._stops_after(event):
                    continue
                reported.add(event.node)
                found.append(NotUndone(event, loop, ref))
        return found

    def _event_scope(self, event: ModeEvent) -> str:
        if event.via:
            return event.via[-1].callee or MODULE_SCOPE
        return event.ctx.scope

    def _inner_training_loop(self, loop: Loop, inner: Optional[Loop]) -> bool:
        while inner is not None and inner is not loop:
            if self.loop_trains(inner):
                return True
            inner = inner.parent
        return False

    def _stops_after(self, event: ModeEvent) -> bool:
        """The loop ends right after this evaluation (``break``/``return`` later in its block)."""
        ctx = event.ctx
        block, stmt = ctx.block, ctx.statement
        if not isinstance(block, cst.IndentedBlock) or stmt is None:
            return False
        after = False
        for item in block.body:
            if item is stmt:
                after = True
                continue
            if after and isinstance(item, cst.SimpleStatementLine) and any(isinstance(s, (cst.Break, cst.Return)) for s in item.body):
                return True
        return False

    def _factory_owners(self, optimizer: str, scope: str) -> Optional[FrozenSet[str]]:
        """Models handed to the call that made the optimizer (``build_optimizer(cfg, model)``)."""
        value = self._assigned_value(optimizer, scope)
        if not isinstance(value, cst.Call):
            return None
        found = {r for r in _reads(*[a.value for a in value.args]).refs if self.m.has_role(r, R.MODEL, scope)}
        return frozenset(found) or None

    def _trained_in(self, loop: Loop, ref: str) -> bool:
        """Whether the loop trains this model: an optimizer it steps holds its parameters, or
        (owners unknown) it runs a forward of it with grad on."""
        owners_known = []
        for step in self.loop_steps(loop):
            if step == ANY:
                continue
            owners = self.m.optimizer_owners(step, loop.scope) or self._factory_owners(step, loop.scope)
            if owners:
                owners_known.append(owners)
        canonical = self.m.canonical(ref, loop.scope)
        if owners_known:
            return any(
                related(ref, o) or related(canonical, self.m.canonical(o, loop.scope)) for owners in owners_known for o in owners
            )
        if set(name_tokens(ref.rsplit(".", 1)[-1])) & _TEACHER_WORDS or self.frozen(ref, loop.scope):
            return False
        for effect in self.m.effects_in(loop.scope):
            if not loop.encloses(effect.ctx.loop):
                continue
            if effect.kind == FORWARD and related(effect.ref, ref) and effect.ctx.grad != "off":
                return True
            if effect.kind == CALL:
                summary = self.m.summaries.get(effect.callee or "")
                if summary is not None and any(related(translate(f, effect.args or {}), ref) for f in summary.forwards):
                    return True
        return False

    # --- where statements live (for fixes) -------------------------------------------------------------
    def block_of(self, statement: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The IndentedBlock or Module whose body holds ``statement``."""
        if self._blocks is None:
            blocks: Dict[cst.CSTNode, cst.CSTNode] = {}

            owners = self._with_owner

            class Finder(cst.CSTVisitor):
                def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
                    for item in node.body:
                        blocks[item] = node

                def visit_With(self, node: cst.With) -> None:
                    owners[node.body] = node

                def visit_Module(self, node: cst.Module) -> None:
                    for item in node.body:
                        blocks[item] = node

            self.m.module.visit(Finder())
            self._blocks = blocks
        return self._blocks.get(statement)

    def outside_withs(self, statement: cst.CSTNode, withs: Tuple[cst.With, ...]) -> cst.CSTNode:
        """The outermost of ``withs`` around ``statement`` in its scope (or ``statement``
        itself): where a statement goes that must run before those with-blocks."""
        current = statement
        while True:
            block = self.block_of(current)
            owner = self._with_owner.get(block) if block is not None else None
            if owner is None or owner not in withs:
                return current
            current = owner

    def valid_at(self, ref: str, scope: str, before: Optional[cst.CSTNode] = None, loop: Optional[Loop] = None) -> bool:
        """Whether the name ``ref`` means the model at a point of ``scope``: its start
        (``before`` None), or right before the statement ``before`` (``loop``: the loop that
        statement is, if it is one; names bound inside it are not bound yet)."""
        head = _head(ref)
        if ref == ANY or not head.isidentifier():
            return False
        fn = self.m.functions.get(scope)
        if head in ("self", "cls"):
            return fn is not None and self.m.class_scope_of(scope) is not None
        if fn is not None and head in fn.params:
            return True
        local = False
        for targets, _value, ctx in self.m.assignments:
            if ctx.scope == scope and head in targets:
                if before is None:
                    return False
                if ctx.statement is before or (loop is not None and loop.encloses(ctx.loop)):
                    continue
                local = True
        for other in self.m.loops:
            if other.scope == scope and head in other.targets:
                if before is None:
                    return False
                if loop is not None and loop.encloses(other):
                    continue
                local = True
        if local:
            return True
        if scope != MODULE_SCOPE and head in self.m.locals.get(scope, ()):
            return False  # a local of this function, not bound yet here
        return True  # a global, or a variable of an enclosing function (a closure sees it)

    # --- forward sites ------------------------------------------------------------------------------------
    def forwards(self) -> List[Effect]:
        """Forward passes of models (not constructors or factories that look like models)."""
        seen: Set[cst.CSTNode] = set()
        out = []
        for effect in self.m.effects:
            if effect.kind != FORWARD or effect.node in seen or not self._is_model_call(effect.ref):
                continue
            if isinstance(effect.node, cst.Call) and not effect.node.args:
                continue  # ``model.fuse_model()``: a method, not a forward (a model needs an input)
            seen.add(effect.node)
            out.append(effect)
        return out

    def _is_model_call(self, ref: str) -> bool:
        head = _head(ref)
        last = ref.rsplit(".", 1)[-1].split("[", 1)[0]
        if head in self.m.imports.aliases or head in self.m.classes or last in self.m.classes:
            return False  # a module's function or a class: a factory or a constructor
        if last[:1].isupper():
            return False
        tokens = name_tokens(last)
        return not (tokens and tokens[0] in _FACTORY_WORDS) and not (set(tokens) & _NOT_MODEL_WORDS)
