"""Vocabulary of names: what a function, a piece of data or a model is called, and small
helpers on references shared by every phase question."""

from __future__ import annotations

import ast
import functools
import re
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from mllint.pyast import dotted as screen_dotted
from mllint.semantics.model import (
    ANY,
    FileModel,
)

# --- words ------------------------------------------------------------------------------

_STRONG_EVAL_WORDS = frozenset(
    "eval evaluate evaluation evaluating evaluator validate validation validating val valid test testing "
    "predict prediction predictions predicting infer inference inferencing".split()
)
_WEAK_EVAL_WORDS = frozenset(
    "generate generation generating sample sampling score scoring translate translation decode decoding".split()
)
# Words in the names of data (loaders, splits, tensors) that hold evaluation data.
_EVAL_DATA_WORDS = frozenset("val valid validation test eval evaluation holdout heldout dev".split())
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


_GLUED = re.compile(r"^(test|val|valid|validation|eval|holdout|dev)(loader|loaders|dataloader|set|sets|data|dataset|dl|ds|iter|batches|images|imgs|x|y)$")


def _unglued(tokens: List[str]) -> List[str]:
    """Words written as one (``testloader``, ``valset``, ``testX``: the tutorials' spelling)
    split into the two words they are."""
    out: List[str] = []
    for token in tokens:
        match = _GLUED.match(token)
        out.extend(match.groups() if match else (token,))
    return out


def is_eval_data_ref(ref: Optional[str]) -> bool:
    """Whether a reference names evaluation data (``X_val``, ``val_loader``, ``self.test_data``).
    ``val``/``valid``/``dev`` need a word for data beside them (``valid_mask``, ``valid_ratios`` are not
    data, ``dev`` alone is a device)."""
    if not ref or ref == ANY:
        return False
    parts = [p for p in re.split(r"[.\[\]]", ref) if p and p not in ("self", "cls")]
    if not parts:
        return False
    tokens = [t for p in parts for t in _unglued(name_tokens(p))]
    if any(t in _SETTING_WORDS for t in tokens):
        return False
    if any(t in _EVAL_DATA_WORDS and t not in ("val", "valid", "dev") for t in tokens):
        return True
    if any(t in ("val", "valid") for t in tokens):
        return len(tokens) == 1 or any(t in _DATA_WORDS for t in tokens)
    if "dev" in tokens:  # the development split (``dev_loader``, ``devset``), never ``dev`` alone (a device)
        return any(t in _DATA_WORDS for t in tokens)
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


def _asserts(m: FileModel, node: cst.FunctionDef) -> bool:
    """Whether the function (not a function nested in it) has an ``assert`` statement."""
    return m.index.has(cst.Assert, node.body, skip=(cst.FunctionDef,))


def _words(text: Optional[str]) -> List[str]:
    """The words of a condition's text (``not is_train`` -> [not, is_train])."""
    return [w for w in re.split(r"\W+", text or "") if w]


_NO_VALUE = object()


def _constant(expr: Optional[cst.BaseExpression]):
    """The Python value of a literal (True, False, None, a number, a string), else _NO_VALUE."""
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[expr.value]
    if isinstance(expr, (cst.Integer, cst.SimpleString)):
        try:
            return expr.evaluated_value
        except Exception:
            return _NO_VALUE
    return _NO_VALUE


def _truth(expr: cst.BaseExpression, bindings: Dict[str, object]) -> Optional[bool]:
    """The truth of a test when the names in ``bindings`` hold those constants (None: it
    depends on something else): ``train``, ``not is_train``, ``mode == "train"``,
    ``phase in ("val", "test")``, ``and``/``or`` of those."""
    if isinstance(expr, cst.Name) and expr.value in bindings:
        return bool(bindings[expr.value])
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        inner = _truth(expr.expression, bindings)
        return None if inner is None else not inner
    if isinstance(expr, cst.BooleanOperation):
        left, right = _truth(expr.left, bindings), _truth(expr.right, bindings)
        if isinstance(expr.operator, cst.And):
            if left is False or right is False:
                return False
            return True if left and right else None
        if left is True or right is True:
            return True
        return False if left is False and right is False else None
    if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
        target = expr.comparisons[0]
        sides = [expr.left, target.comparator]
        names = [a.value for a in sides if isinstance(a, cst.Name) and a.value in bindings]
        if len(names) != 1:
            return None
        value = bindings[names[0]]
        other = sides[1] if isinstance(sides[0], cst.Name) and sides[0].value == names[0] else sides[0]
        op = target.operator
        if isinstance(op, (cst.In, cst.NotIn)) and other is target.comparator:
            if not isinstance(other, (cst.Tuple, cst.List, cst.Set)):
                return None
            values = [_constant(e.value) for e in other.elements]
            if any(v is _NO_VALUE for v in values):
                return None
            return (value in values) == isinstance(op, cst.In)
        constant = _constant(other)
        if constant is _NO_VALUE:
            return None
        if isinstance(op, (cst.Equal, cst.Is)):
            return value == constant
        if isinstance(op, (cst.NotEqual, cst.IsNot)):
            return value != constant
    return None


def _head(ref: str) -> str:
    return ref.split(".", 1)[0].split("[", 1)[0]


# --- the screen (mllint/screen.py) --------------------------------------------------------------

_TORCH_FAMILY = ("torch", "torchvision", "lightning", "pytorch_lightning", "timm", "transformers", "accelerate")


@functools.lru_cache(maxsize=50_000)  # identifiers repeat across the files of a run
def _eval_data_word(identifier: str) -> bool:
    """Whether `identifier` can be part of a reference ``is_eval_data_ref`` accepts: it holds a
    word for evaluation data and no word for a setting (which rejects every reference holding it)."""
    tokens = _unglued(name_tokens(identifier))
    return not _EVAL_DATA_WORDS.isdisjoint(tokens) and _SETTING_WORDS.isdisjoint(tokens)


def torch_file_possible(facts) -> bool:
    """Over-approximates ``Phases.torch_file`` from the screen's facts: a torch-family import
    or a class (a class may be an nn.Module subclass)."""
    return facts.has_class or facts.torch_project or any(facts.imports_module(p) for p in _TORCH_FAMILY)


# Methods whose result carries no gradient: a forward's output read only through them
# (``out.detach()``, ``out.argmax(1)``, ``out.cpu().numpy()``) needs no autograd graph
# (EvaluationFacts.output_evidence).
GRADIENT_CUTS = frozenset("detach detach_ item tolist numpy argmax argmin".split())
# Methods that move a value to a device or dtype, and methods that only reshape it: followed
# from a forward's output up to a cut (EvaluationFacts.gradient_cut_output).
MOVES = frozenset("to cuda cpu float half double long int bfloat16 contiguous".split())
RESHAPES = frozenset("squeeze unsqueeze view reshape permute transpose flatten".split())
_MOVES_OR_RESHAPES = MOVES | RESHAPES
# Libraries whose functions are not models (``torch.arange(n).tolist()``, ``np.array(x).argmax()``),
# and builtins that return no tensor of a model.
_NO_MODEL_LIBRARIES = frozenset("torch numpy math scipy pandas random itertools functools operator einops".split())
_NO_MODEL_BUILTINS = frozenset(
    "len range sum max min abs round float int list tuple sorted zip enumerate map dict set str bool any all iter next".split())


def cut_forward_possible(facts) -> bool:
    """Over-approximates ``EvaluationFacts.output_evidence`` from the screen's facts: a call of a
    method that cuts autograd (``GRADIENT_CUTS``), or a ``.data``, whose receiver, through
    subscripts, moves and reshapes, is a call that may be a forward (not of a function of the libraries above, nor of
    a builtin), or a name assigned anywhere in the file from such a call (``out = model(x)`` then
    ``out.argmax(1)``). Once per file; without the tree, any cut call counts."""
    if facts.call_names.isdisjoint(GRADIENT_CUTS) and "data" not in facts.identifiers:
        return False
    return facts.of_text("cut_forward_possible", _cut_forward_possible)


def _cut_forward_possible(facts) -> bool:
    tree = facts.tree
    if tree is None:
        return True
    libraries = {local for local, fulls in facts.aliases.items()
                 if any(full.split(".")[0] in _NO_MODEL_LIBRARIES for full in fulls)}

    def root(expr):
        while True:
            if isinstance(expr, ast.Subscript):
                expr = expr.value
            elif (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)
                  and expr.func.attr in _MOVES_OR_RESHAPES):
                expr = expr.func.value
            else:
                return expr

    def may_forward(expr) -> bool:
        # A forward (``Phases.forwards``) is a call given some argument whose callee is a
        # reference (``names.ref_of``: names, attributes, subscripts by one constant or name),
        # e.g. ``model(x)``, ``self.blocks[0](x)``, ``model.forward(x)``: not ``x.float().var(0)``,
        # ``valid[:, 0].max()`` or ``indices.tolist()``.
        if not isinstance(expr, ast.Call) or not (expr.args or expr.keywords):
            return False
        head = expr.func
        while True:
            if isinstance(head, ast.Attribute):
                head = head.value
            elif isinstance(head, ast.Subscript) and isinstance(head.slice, (ast.Constant, ast.Name)) and (
                    isinstance(head.slice, ast.Name) or type(head.slice.value) in (int, str)):
                head = head.value
            else:
                break
        if not isinstance(head, ast.Name):
            return False
        if head.id in libraries or head is expr.func and head.id in _NO_MODEL_BUILTINS:
            return False
        return True

    # ``out = model(x)`` and ``out.argmax(1)`` count together only in one function's own body
    # (``_uses_of_assigned`` reads the uses in the forward's scope; class bodies and lambdas are
    # taken with the code around them, which only makes this pass more often).
    assigned: Dict[int, Set[str]] = {}
    cut_names: Dict[int, Set[str]] = {}
    stack = [(tree, 0)]
    while stack:
        node, scope = stack.pop()
        if isinstance(node, ast.Assign):
            if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and may_forward(root(node.value)):
                assigned.setdefault(scope, set()).add(node.targets[0].id)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in GRADIENT_CUTS
              or isinstance(node, ast.Attribute) and node.attr == "data"):
            receiver = root(node.func.value if isinstance(node, ast.Call) else node.value)
            if may_forward(receiver):
                return True
            if isinstance(receiver, ast.Name):
                cut_names.setdefault(scope, set()).add(receiver.id)
        inner = id(node) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else scope
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    return any(not names.isdisjoint(assigned.get(scope, ())) for scope, names in cut_names.items())


def loaded_here_possible(facts) -> bool:
    """Over-approximates ``EvaluationFacts.loaded_here_evidence`` from the screen's facts: a
    weights load (``_LOAD_CALLS`` on a call's qualified callee or its method name) written in a
    function that is no method (a ``def`` not directly in a class body) and not named as a
    script's main (module level and main() are ``script_evidence``'s, which
    ``evaluation_possible`` covers). Once per file; without the tree, any load counts."""
    if not load_possible(facts):
        return False
    return facts.of_text("loaded_here_possible", _loaded_here_possible)


def load_possible(facts) -> bool:
    """Over-approximates ``EvaluationFacts._load_call`` on some call of the file: ``_LOAD_CALLS``
    on a call's qualified callee or on its method name."""
    return (any(_LOAD_CALLS.search(name) for name in facts.call_quals)
            or any(_LOAD_CALLS.search(name) for name in facts.attr_calls))


def _loaded_here_possible(facts) -> bool:
    tree = facts.tree
    if tree is None:
        return True
    stack = [(tree, False, False)]  # (node, in a plain function's scope, directly in a class body)
    while stack:
        node, plain, in_class = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner_plain = not in_class and node.name not in _MAIN_NAMES
            stack.extend((child, inner_plain, False) for child in ast.iter_child_nodes(node))
            continue
        if isinstance(node, ast.ClassDef):
            stack.extend((child, plain, True) for child in node.body)
            stack.extend((child, plain, False) for child in node.bases + node.keywords + node.decorator_list)
            continue
        if plain and isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and _LOAD_CALLS.search(node.func.attr):
                return True
            name = screen_dotted(node.func)
            if name is not None and any(_LOAD_CALLS.search(q) for q in facts.qualify(name)):
                return True
        stack.extend((child, plain, False) for child in ast.iter_child_nodes(node))
    return False


def evaluation_possible(facts) -> bool:
    """`_evaluation_possible`, once per file."""
    return facts.of_text("evaluation_possible", _evaluation_possible)


def _evaluation_possible(facts) -> bool:
    """Whether the file can hold evidence of evaluation (``Phases.evidence``/``mode_evidence``/
    ``eval_not_undone``), from the screen's facts. Every kind of evidence comes from names:
    a function of the file named for evaluation (``eval_name_strength`` of its own name);
    evaluation data iterated or passed (``is_eval_data_ref`` of a reference, also with a
    subscript key such as ``loaders["val"]``: some identifier of it holds an evaluation-data
    word, and none a setting word, which would reject the whole reference); a weights load for
    an inference script (``_LOAD_CALLS`` on a call at module level or in main() and the like,
    where ``script_evidence`` looks); or a mode switch (``.eval()``,
    ``.train(False)``); or a string naming an evaluation split handed to a call
    (``get_batch("val")``, ``eval_split_call``); or an evaluation harness imported
    (``lm_eval``: its model classes evaluate). A caller's evidence ("callers") is one of
    these further up."""
    if facts.eval_switch or facts.eval_split_arg:
        return True  # x.eval(), x.train(False): the EVAL effects, also inside helpers (a
        # train(flag) is a "maybe" mode event, which is never evidence of evaluation); a string
        # naming an evaluation split handed to a call (``get_batch("val")``)
    if facts.imports_module("lm_eval"):
        return True  # an evaluation harness's model class: every method of it evaluates
    # script_evidence: a load in the forward's own scope, module level or main()/run()...
    if any(_LOAD_CALLS.search(name) for name in facts.script_call_quals):
        return True
    if facts.pretrained_build:  # ... or a model built with trained weights (``resnet18(pretrained=True)``)
        return True
    # a test suite's test functions are unit tests (EvaluationFacts.unit_test): no evidence
    suite = facts.imports_module("pytest") or facts.imports_module("unittest")
    for name in facts.function_names:
        if eval_name_strength(name) and not (suite and {"test", "tests"} & set(name_tokens(name))):
            return True
    if not any(_eval_data_word(identifier) for identifier in facts.identifiers):
        return False
    # some identifier holds the word: whether a reference holding it names evaluation data
    # (``patch_valid``, ``max_val`` do not: ``val``/``valid`` need a word for data beside them)
    return any(is_eval_data_ref(ref) for ref in facts.references())
