"""Cheap facts about one file of a project, read with CPython's ``ast`` (no LibCST, no torch).

What the rules of another file may need to know about this one, and nothing more:

- ``imports``: local name -> qualified name as written (``from .models import Net`` ->
  ``.models.Net``; relative names keep their dots and are resolved by the project index); a
  star import (``from ..network import *``) as ``*0`` -> ``..network`` (``*1`` the next);
- ``classes``: each class's bases (dotted, as written), methods, the mode-dependent layers it
  builds or calls (dropout, batch norm, ``self.training``), the classes it builds as
  submodules, and what its ``forward`` returns when every return is one kind of probability;
- ``functions``: each function's parameters and what calling it does to them (switches mode,
  clears gradients, steps, runs backward, runs a forward, autograd off by decorator);
- ``calls``: every call of a name this file imports or defines, with where it sits (under
  ``no_grad``, in a loop, in a loop that trains, after an ``eval()`` in the same scope) and
  its arguments (dotted references and constants);
- ``frameworks``: which deep-learning frameworks the file imports;
- ``instances`` and ``switched``: the names bound to a call (``model = Net()``, per scope), and
  every reference whose mode some scope of the file switches (``eval()``/``train(...)``), so
  that a model made at module level and imported elsewhere has a known starting mode.

Facts are plain tuples, dicts and frozensets so that they pickle small and fast (the project
store caches them by content hash, see store.py).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Tuple

from mllint.screen import child_nodes, dotted, walk

# Layer kinds (the words semantics/layers.py uses)
DROPOUT = "dropout"
BATCH_NORM = "batch norm"
TRAINING_FLAG = "layers that read `self.training`"

TORCH_FAMILY = ("torch", "torchvision", "torchaudio", "torchtext", "lightning", "pytorch_lightning", "timm",
                "transformers", "accelerate", "ignite", "deepspeed", "torch_geometric", "fairseq", "detectron2")
OTHER_FRAMEWORKS = ("tensorflow", "keras", "jax", "flax", "paddle", "mxnet", "mindspore", "oneflow", "haiku")

_DROPOUT_CLASSES = {"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"}
_NORM_CLASSES = {"BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LazyBatchNorm1d",
                 "LazyBatchNorm2d", "LazyBatchNorm3d"}
_TRANSFORMER_CLASSES = {"Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
                        "TransformerDecoderLayer"}
_DROPOUT_ARGUMENT = {"RNN", "LSTM", "GRU", "MultiheadAttention"}
_FUNCTIONAL_DROPOUT = {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"}
_GRAD_OFF = {"no_grad", "inference_mode"}
# Module methods that return the module itself (``Net(...).to(device).eval()`` is that ``Net``);
# the per-file model reads the same list (semantics/builder.py)
SELF_RETURNING = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "type", "eval", "train",
                            "requires_grad_", "share_memory"})
_PROBABILITY = {"log_softmax": "log_softmax", "LogSoftmax": "log_softmax", "softmax": "softmax",
                "Softmax": "softmax", "sigmoid": "sigmoid", "Sigmoid": "sigmoid"}

FACTS_VERSION = 12


def is_module_base(qualname: Optional[str]) -> bool:
    """Whether a qualified base-class name is torch's ``nn.Module`` or a well-known subclass of it."""
    if not qualname:
        return False
    return bool(
        qualname in ("torch.nn.Module", "nn.Module", "Module")
        or qualname.endswith(".nn.Module")
        or qualname.endswith("LightningModule")
        or qualname.endswith("PreTrainedModel")
        or re.match(r"^torch\.nn\.(Sequential|ModuleList|ModuleDict|Linear|Conv\dd|Transformer\w*)$", qualname)
        or (qualname.startswith("torchvision.models.") and qualname[-1:].isupper() is False)
    )


@dataclass(frozen=True)
class ClassFacts:
    name: str
    line: int
    bases: Tuple[str, ...]  # dotted as written (qualify with the file's imports)
    methods: FrozenSet[str]
    layers: FrozenSet[str]  # mode-dependent layer kinds built or called in the class body
    submodules: Tuple[str, ...]  # dotted callees assigned to ``self.<attr>`` (may be classes of the project)
    opaque: bool  # a submodule handed in from outside (``self.backbone = backbone``) or built by a factory
    forward_returns: Optional[str]  # "log_softmax" / "softmax" / "sigmoid" when every return of forward is one
    forward_grad_off: bool = False  # its forward turns autograd off itself (``with torch.no_grad():`` inside)
    handed_in: FrozenSet[str] = frozenset()  # ``self.<attr>`` bound to a plain name (``self.model = model``)


@dataclass(frozen=True)
class FunctionFacts:
    key: str  # "f" or "Cls.method"
    line: int
    params: Tuple[str, ...]
    grad_off: bool  # @torch.no_grad() / @torch.inference_mode()
    evals: FrozenSet[str]  # references it switches to eval mode (``model``, ``self.net``)
    trains: FrozenSet[str]  # ... to train mode
    clears: FrozenSet[str]  # ... whose gradients it clears (``opt.zero_grad()``, ``model.zero_grad()``)
    steps: FrozenSet[str]  # optimizers it steps
    backward: bool  # calls backward
    forwards: FrozenSet[str]  # references it calls like a model (``model(x)``)
    # the dotted callees that build what it returns, when every return builds one (``return
    # Net(...)``, or ``m = Net(); ...; return m``), and whether it switches that to eval mode first
    returns: Tuple[str, ...] = ()
    returns_eval: bool = False
    # references it calls like a model with autograd on (not under ``no_grad`` in its body): its
    # parameters (``model(x)``, ``model.forward(x)``) and, in a method, ``self.<attr>(x)``
    forwards_grad_on: FrozenSet[str] = frozenset()
    # the dotted callees whose results reach a backward pass in its own body (``loss =
    # self.validation_loss(x, y, self.adaptation(x_t))`` then ``loss.backward()``): its training
    # step's pieces, which a subclass may define
    backprop_calls: FrozenSet[str] = frozenset()
    # the parameter that picks the mode it switches its models to (``def set_mode_train(self,
    # train=True): if train: self.model.train() else: self.model.eval()``, ``self.net.train(mode)``):
    # a true value switches ``trains | evals`` to training mode, a false one to eval mode
    mode_param: str = ""


@dataclass(frozen=True)
class CallFacts:
    callee: str  # dotted as written (``evaluate``, ``utils.evaluate``, ``trainer.step``)
    caller: str  # function key or "<module>"
    line: int
    grad_off: bool  # under no_grad/inference_mode/set_grad_enabled(False), or in a function decorated so
    in_loop: bool
    train_loop: bool  # some enclosing loop (of the same function) runs backward or an optimizer step
    loop_trains: bool  # ... and that loop's body calls ``.train()`` somewhere
    loop_clears: bool  # some enclosing loop clears gradients (``*.zero_grad()``, ``.grad = ...``)
    evals_before: FrozenSet[str]  # references switched to eval mode earlier in the same scope
    args: Tuple[str, ...]  # positional arguments: dotted reference, repr of a constant, or "?"
    kwargs: Tuple[Tuple[str, str], ...]

    def argument(self, name: str, index: int) -> Optional[str]:
        """What the call passes for parameter `name` at position `index` (keyword first)."""
        return dict(self.kwargs).get(name) or (self.args[index] if index < len(self.args) else None)


@dataclass(frozen=True)
class FileFacts:
    version: int
    imports: Tuple[Tuple[str, str], ...]  # (local, qualified as written)
    classes: Tuple[ClassFacts, ...]
    functions: Tuple[FunctionFacts, ...]
    calls: Tuple[CallFacts, ...]
    frameworks: FrozenSet[str]  # "torch" and/or the other frameworks' top-level names
    instances: Tuple[Tuple[str, str, str], ...]  # (scope, name, dotted class called) for ``name = Cls(...)``
    parsed: bool = True  # False: the file did not parse (no facts)
    switched: FrozenSet[str] = frozenset()  # references some scope of the file (module level too) switches the mode of


EMPTY = FileFacts(FACTS_VERSION, (), (), (), (), frozenset(), (), parsed=False)


def _ref(node) -> Optional[str]:
    """A reference a call acts on: a dotted name, seen through ``.to(...)``/``.cuda()``/``.module``."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda", "cpu"):
        node = node.func.value
    return dotted(node)


def _evaluated_argument(node) -> Optional[str]:
    """``model.eval()`` / ``model.train(False)`` passed as an argument: ``model``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        attr, args = node.func.attr, node.args
        if (attr == "eval" and not args) or (attr == "train" and len(args) == 1 and isinstance(args[0], ast.Constant)
                                             and args[0].value is False):
            return _ref(node.func.value)
    return None


_LITERALS = (bool, int, float, str, type(None))


def _argument(node) -> str:
    kind = type(node)
    if kind is ast.Name:  # (the commonest argument first)
        return node.id
    if kind is ast.Constant:
        return repr(node.value) if isinstance(node.value, _LITERALS) else "?"
    return _ref(node) or _evaluated_argument(node) or "?"


def _last(name: Optional[str]) -> str:
    return (name or "").rsplit(".", 1)[-1]


def parse_source(source: str, path: str = "<unknown>") -> Optional[ast.Module]:
    """CPython's ``ast`` of `source` (as the screen parses it), or None when it does not parse."""
    try:
        return compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def facts_of_source(source: str, path: str = "<unknown>", tree: Optional[ast.Module] = None) -> FileFacts:
    """The facts of `source` (`tree`: its ``parse_source``, when the caller has parsed it)."""
    if tree is None:
        tree = parse_source(source, path)
        if tree is None:
            return EMPTY
    try:
        return facts_of_tree(tree)
    except RecursionError:
        return EMPTY


def facts_of_tree(tree: ast.Module) -> FileFacts:
    walker = _Walker()
    walker.module(tree)
    frameworks = set()
    for _, full in walker.imports.items():
        top = full.lstrip(".").split(".", 1)[0]
        if top in TORCH_FAMILY:
            frameworks.add("torch")
        elif top in OTHER_FRAMEWORKS:
            frameworks.add(top)
    return FileFacts(
        FACTS_VERSION,
        tuple(walker.imports.items()),
        tuple(walker.classes),
        tuple(walker.functions),
        tuple(walker.calls),
        frozenset(frameworks),
        tuple(walker.instances),
        switched=frozenset(walker.top.evals | walker.top.trains).union(*(f.evals | f.trains for f in walker.functions)),
    )


class _Scope:
    __slots__ = ("key", "cls", "params", "grad_off", "evals", "trains", "clears", "steps", "backward", "forwards",
                 "evaluated", "line", "returned", "built", "forwards_on")

    def __init__(self, key: str, cls: Optional[str], params: Tuple[str, ...], grad_off: bool, line: int) -> None:
        self.key, self.cls, self.params, self.grad_off, self.line = key, cls, params, grad_off, line
        self.evals, self.trains, self.clears, self.steps, self.forwards = set(), set(), set(), set(), set()
        self.backward = False
        self.evaluated: set = set()  # eval() seen so far in textual order (for CallFacts.evals_before)
        self.returned: List[Optional[Tuple[str, bool]]] = []  # per return: (callee that built it, eval()ed)
        self.built: Dict[str, str] = {}  # name -> dotted callee of ``name = Callee(...)`` in this scope
        self.forwards_on: set = set()  # forwards run with autograd on (FunctionFacts.forwards_grad_on)


def _is_grad_off_cm(expr, imports: Dict[str, str]) -> bool:
    if not isinstance(expr, ast.Call):
        return False
    name = _last(dotted(expr.func))
    if name in _GRAD_OFF:
        return not (name == "inference_mode" and expr.args and isinstance(expr.args[0], ast.Constant)
                    and expr.args[0].value is False)
    if name == "set_grad_enabled" and expr.args:
        arg = expr.args[0]
        return isinstance(arg, ast.Constant) and arg.value is False
    return False


def _loop_facts(loop) -> Tuple[bool, bool, bool]:
    """(trains, calls train(), clears gradients) for a loop body, nested definitions left out."""
    trains = calls_train = clears = False
    stack = list(loop.body) + list(getattr(loop, "orelse", []))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call):
            name = _last(dotted(node.func))
            if name in ("backward", "manual_backward") or (name == "step" and not node.args):
                trains = True
            elif name == "train" and isinstance(node.func, ast.Attribute) and not (
                    node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value is False):
                calls_train = True
            elif "zero_grad" in name or "clear_grad" in name:
                clears = True
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and t.attr == "grad" for t in targets):
                clears = True
        stack.extend(child_nodes(node))
    return trains, calls_train, clears


class _Walker:
    def __init__(self) -> None:
        self.imports: Dict[str, str] = {}
        self.classes: List[ClassFacts] = []
        self.functions: List[FunctionFacts] = []
        self.calls: List[CallFacts] = []
        self.instances: List[Tuple[str, str, str]] = []
        self.scopes: List[_Scope] = []
        self.loops: List[Tuple[bool, bool, bool]] = []  # (trains, calls train, clears) of the enclosing loops
        self.grad_off = 0
        self.layers: List[_Layers] = []  # the classes being walked, innermost last

    # --- structure -------------------------------------------------------------------
    def module(self, tree: ast.Module) -> None:
        top = self.top = _Scope("<module>", None, (), False, 1)
        self.scopes.append(top)
        self.body(tree.body, None)

    def body(self, statements, cls: Optional[str]) -> None:
        for stmt in statements:
            self.statement(stmt, cls)

    def statement(self, node, cls: Optional[str]) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self.import_(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.function(node, cls)
        elif isinstance(node, ast.ClassDef):
            self.class_(node)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            self.expressions(node.iter if not isinstance(node, ast.While) else node.test)
            self.loops.append(_loop_facts(node))
            self.body(node.body, cls)
            self.loops.pop()
            self.body(node.orelse, cls)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            off = any(_is_grad_off_cm(item.context_expr, self.imports) for item in node.items)
            for item in node.items:
                self.expressions(item.context_expr)
            self.grad_off += off
            self.body(node.body, cls)
            self.grad_off -= off
        elif isinstance(node, ast.If):
            self.expressions(node.test)
            self.body(node.body, cls)
            self.body(node.orelse, cls)
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            self.body(node.body, cls)
            for handler in node.handlers:
                self.body(handler.body, cls)
            self.body(node.orelse, cls)
            self.body(node.finalbody, cls)
        elif type(node).__name__ == "Match":
            self.expressions(node.subject)
            for case in node.cases:
                self.body(case.body, cls)
        else:
            if isinstance(node, ast.Return):
                self.returned(node.value)
            if self.layers and isinstance(node, ast.Assign):
                self.layers[-1].assign(node)
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                value = node.value
                while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                        and value.func.attr in SELF_RETURNING and isinstance(value.func.value, ast.Call):
                    value = value.func.value  # ``Net(...).to(device).eval()``: a Net
                if isinstance(value, ast.Call):
                    callee = dotted(value.func)
                    if callee:
                        self.instances.append((self.scopes[-1].key, node.targets[0].id, callee))
                        self.scopes[-1].built[node.targets[0].id] = callee
            self.expressions(node)

    def returned(self, value) -> None:
        """Record what a ``return`` gives back: the callee that built it, and whether it was
        switched to eval mode (``return Net().eval()``, ``m.eval(); return m``)."""
        scope = self.scopes[-1]
        evaled = False
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                and value.func.attr in SELF_RETURNING and isinstance(value.func.value, (ast.Call, ast.Name)):
            evaled = evaled or (value.func.attr == "eval" and not value.args)
            value = value.func.value
        if isinstance(value, ast.Call):
            callee = dotted(value.func)
            scope.returned.append((callee, evaled) if callee else None)
        elif isinstance(value, ast.Name) and value.id in scope.built:
            scope.returned.append((scope.built[value.id], evaled or value.id in scope.evaluated))
        else:
            scope.returned.append(None)

    def import_(self, node) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.imports[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    self.imports[top] = top
            return
        base = "." * node.level + (node.module or "")
        for alias in node.names:
            if alias.name == "*":  # ``from ..network import *``: kept as ``*N`` -> the module (index.star_modules)
                if base:
                    self.imports[f"*{sum(1 for k in self.imports if k[:1] == '*')}"] = base
                continue
            local = alias.asname or alias.name
            self.imports[local] = f"{base}.{alias.name}" if base and not base.endswith(".") else base + alias.name

    def function(self, node, cls: Optional[str]) -> None:
        for dec in node.decorator_list:
            self.expressions(dec)
        if self.layers:  # what the walk of a class body reads beyond the statements
            self.layers[-1].walk(node.args)
            if node.returns is not None:
                self.layers[-1].walk(node.returns)
        outer = self.scopes[-1]
        key = f"{cls}.{node.name}" if cls else (node.name if outer.key == "<module>" else f"{outer.key}.{node.name}")
        args = node.args
        params = tuple(a.arg for a in list(getattr(args, "posonlyargs", [])) + list(args.args) + list(args.kwonlyargs))
        grad_off = any(_last(dotted(d.func if isinstance(d, ast.Call) else d)) in _GRAD_OFF for d in node.decorator_list)
        scope = _Scope(key, cls, params, grad_off, node.lineno)
        saved_loops, saved_grad = self.loops, self.grad_off
        self.loops, self.grad_off = [], 0
        self.scopes.append(scope)
        self.body(node.body, None)
        self.scopes.pop()
        self.loops, self.grad_off = saved_loops, saved_grad
        returned = scope.returned
        complete = bool(returned) and all(r is not None for r in returned)
        self.functions.append(FunctionFacts(
            key, node.lineno, params, grad_off, frozenset(scope.evals), frozenset(scope.trains),
            frozenset(scope.clears), frozenset(scope.steps), scope.backward, frozenset(scope.forwards),
            tuple(dict.fromkeys(r[0] for r in returned)) if complete else (),
            complete and all(r[1] for r in returned),
            frozenset() if grad_off else frozenset(scope.forwards_on),
            _backprop_calls(node) if scope.backward else frozenset(),
            _mode_param(node, params) if scope.evals or scope.trains else "",
        ))

    def class_(self, node: ast.ClassDef) -> None:
        bases = []
        for base in node.bases:
            if isinstance(base, ast.Subscript):
                base = base.value
            name = dotted(base)
            if name:
                bases.append(name)
        methods = frozenset(s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)))
        layers = _Layers()
        for part in node.bases + [k.value for k in node.keywords] + node.decorator_list:
            layers.walk(part)
        self.layers.append(layers)
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.function(stmt, node.name)
            else:  # class attributes: read for the layers only (no scope of their own)
                layers.walk(stmt)
        self.layers.pop()
        if self.layers:  # an enclosing class's walk covers this one
            self.layers[-1].merge(layers)
        self.classes.append(ClassFacts(node.name, node.lineno, tuple(bases), methods, frozenset(layers.kinds),
                                       tuple(dict.fromkeys(layers.submodules)), layers.opaque,
                                       _forward_returns(node, layers.attrs), _forward_grad_off(node, self.imports),
                                       frozenset(layers.handed_in)))

    # --- expressions -------------------------------------------------------------------
    def expressions(self, node) -> None:
        layers = self.layers[-1] if self.layers else None
        stack = [node]
        pop, extend = stack.pop, stack.extend
        while stack:
            current = pop()
            kind = type(current)
            if kind is ast.Name or kind is ast.Constant:
                continue
            if kind in _DEFINITIONS:
                self.statement(current, None)
                continue
            if kind is ast.Lambda:
                if layers is not None:
                    layers.walk(current)
                continue
            if kind is ast.Call:
                self.call(current)
                if layers is not None:
                    layers.call(current)
            elif kind is ast.Attribute and layers is not None:
                layers.attribute(current)
            children = child_nodes(current)
            children.reverse()
            extend(children)

    def call(self, node: ast.Call) -> None:
        scope = self.scopes[-1]
        func = node.func
        if isinstance(func, ast.Attribute):
            attr = func.attr
            receiver = _ref(func.value)
            if attr in ("backward", "manual_backward"):
                scope.backward = True  # also ``model(x).sum().backward()``, whose receiver is no reference
            if receiver is not None:
                if attr == "eval" and not node.args:
                    scope.evals.add(receiver)
                    scope.evaluated.add(receiver)
                elif attr == "train":
                    off = node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value is False
                    (scope.evals if off else scope.trains).add(receiver)
                    if off:
                        scope.evaluated.add(receiver)
                    else:
                        scope.evaluated.discard(receiver)
                elif attr == "zero_grad":
                    scope.clears.add(receiver)
                elif attr == "step" and not node.args:
                    scope.steps.add(receiver)
                elif attr in ("backward", "manual_backward"):
                    scope.backward = True
                elif attr == "forward":
                    scope.forwards.add(receiver)
                    if not self.grad_off:
                        scope.forwards_on.add(receiver)
            if scope.cls is not None and isinstance(func.value, ast.Name) and func.value.id == "self" \
                    and not self.grad_off:
                scope.forwards_on.add(f"self.{attr}")  # a model attribute, or a method: the reader decides
        elif isinstance(func, ast.Name) and func.id in scope.params and func.id not in ("self", "cls"):
            scope.forwards.add(func.id)
            if not self.grad_off:
                scope.forwards_on.add(func.id)
        callee = dotted(func)
        if callee is None:
            return
        train_loop = any(trains for trains, _, _ in self.loops)
        loop_trains = any(calls for trains, calls, _ in self.loops if trains)
        loop_clears = any(clears for _, _, clears in self.loops)
        evaluated = frozenset(scope.evaluated)
        switched = [_evaluated_argument(a) for a in list(node.args) + [k.value for k in node.keywords]]
        if any(switched):  # ``test(model.eval(), loader)``: the helper gets a model in eval mode
            evaluated = evaluated | {ref for ref in switched if ref}
        self.calls.append(CallFacts(
            callee, scope.key, node.lineno, bool(self.grad_off) or scope.grad_off, bool(self.loops), train_loop,
            loop_trains, loop_clears, evaluated, tuple(_argument(a) for a in node.args if not isinstance(a, ast.Starred)),
            tuple((k.arg, _argument(k.value)) for k in node.keywords if k.arg),
        ))


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _own_nodes(node):
    """The nodes of a function's body, not of the functions, classes and lambdas in it."""
    todo = list(node.body)
    for current in todo:
        yield current
        todo.extend(child for child in child_nodes(current)
                    if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)))


def _switch_of(stmts) -> Optional[str]:
    """"train" / "eval" when the statements switch something to that mode (and not the other)."""
    kinds = set()
    for stmt in stmts:
        for sub in walk(stmt):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
                if sub.func.attr == "eval" and not sub.args:
                    kinds.add("eval")
                elif sub.func.attr == "train" and not sub.args and not sub.keywords:
                    kinds.add("train")
                elif sub.func.attr == "train" and sub.args and isinstance(sub.args[0], ast.Constant):
                    kinds.add("train" if sub.args[0].value else "eval")
    return kinds.pop() if len(kinds) == 1 else None


def _mode_param(node, params: Tuple[str, ...]) -> str:
    """The parameter whose truth picks the mode the function switches to: ``if train:
    X.train() else: X.eval()`` (or ``if not train:`` the other way round), or ``X.train(mode)``;
    "" when there is none."""
    found = ""
    for sub in _own_nodes(node):
        if isinstance(sub, ast.If):
            test, negated = sub.test, False
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                test, negated = test.operand, True
            if isinstance(test, ast.Name) and test.id in params:
                first, second = _switch_of(sub.body), _switch_of(sub.orelse)
                if {first, second} == {"train", "eval"}:
                    if (first == "train") != negated:
                        found = found or test.id
                    continue
        elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "train":
            value = sub.args[0] if sub.args else next((k.value for k in sub.keywords if k.arg == "mode"), None)
            if isinstance(value, ast.Name) and value.id in params:
                found = found or value.id
    return found


def _backprop_calls(node) -> FrozenSet[str]:
    """The dotted callees of the calls whose results reach a ``.backward()`` in the function's
    own body: read by the backward's receiver, or by an assignment to a name it reads, and so on
    (order and branches aside: a superset)."""
    reached: set = set()  # names whose values reach a backward
    callees: set = set()
    assignments = []

    def reads(expr) -> None:
        for sub in walk(expr):
            if isinstance(sub, ast.Name):
                reached.add(sub.id)
            elif isinstance(sub, ast.Call):
                name = dotted(sub.func)
                if name:
                    callees.add(name)

    for sub in _own_nodes(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr in ("backward", "manual_backward"):
            reads(sub.func.value)
            for arg in sub.args:
                reads(arg)
        elif isinstance(sub, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and sub.value is not None:
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            names = {n.id for t in targets for n in walk(t) if isinstance(n, ast.Name)}
            if names:
                assignments.append((names, sub.value))
    changed = True
    while changed:
        changed = False
        for names, value in assignments:
            if names & reached:
                before = len(reached), len(callees)
                reads(value)
                changed = changed or (len(reached), len(callees)) != before
    return frozenset(callees)


class _Layers:
    """What a class's body builds and reads, gathered while the walker passes its nodes:
    mode-dependent layer kinds, the callees assigned to ``self.<attr>`` (submodules), whether
    a module is handed in (``self.backbone = backbone``: opaque), and the probability layers
    assigned to ``self.<attr>``."""

    __slots__ = ("kinds", "submodules", "opaque", "attrs", "handed_in")

    def __init__(self) -> None:
        self.kinds: set = set()
        self.submodules: List[str] = []
        self.opaque = False
        self.handed_in: set = set()  # ``self.model = model``: "self.model"
        self.attrs: Dict[str, str] = {}  # ``self.log_softmax = nn.LogSoftmax(...)`` -> {"self.log_softmax": "log_softmax"}

    def call(self, node: ast.Call) -> None:
        name = _last(dotted(node.func))
        if name in _DROPOUT_CLASSES or name in _TRANSFORMER_CLASSES:
            self.kinds.add(DROPOUT)
        elif name in _NORM_CLASSES:
            self.kinds.add(BATCH_NORM)
        elif name in _DROPOUT_ARGUMENT:
            for kw in node.keywords:
                if kw.arg == "dropout" and not (isinstance(kw.value, ast.Constant) and not kw.value.value):
                    self.kinds.add(DROPOUT)
        elif name in _FUNCTIONAL_DROPOUT and isinstance(node.func, ast.Attribute):
            self.kinds.add(DROPOUT)

    def attribute(self, node: ast.Attribute) -> None:
        if node.attr == "training" and isinstance(node.ctx, ast.Load) and dotted(node.value) == "self":
            self.kinds.add(TRAINING_FLAG)

    def assign(self, node: ast.Assign) -> None:
        value = node.value
        if isinstance(value, ast.Call):
            name = _last(dotted(value.func))
            if name == "Sequential" and value.args and not value.keywords and isinstance(value.args[-1], ast.Call) \
                    and not isinstance(value.args[-1], ast.Starred):
                name = _last(dotted(value.args[-1].func))  # nn.Sequential(..., nn.Sigmoid()): its last layer
            if name in _PROBABILITY and name[0].isupper():
                for target in node.targets:
                    ref = dotted(target)
                    if ref and ref.startswith("self."):
                        self.attrs[ref] = _PROBABILITY[name]
        for target in node.targets:
            if isinstance(target, ast.Attribute) and dotted(target.value) == "self":
                if isinstance(value, ast.Call):
                    callee = dotted(value.func)
                    if callee and not callee.startswith(("nn.", "torch.")):
                        self.submodules.append(callee)
                elif isinstance(value, ast.Name):
                    self.opaque = True  # a module handed in (``self.backbone = backbone``)
                    self.handed_in.add(f"self.{target.attr}")

    def walk(self, node) -> None:
        """Every node under `node`, for a part of the class the walker does not pass."""
        for sub in walk(node):
            if isinstance(sub, ast.Call):
                self.call(sub)
            elif isinstance(sub, ast.Attribute):
                self.attribute(sub)
            elif isinstance(sub, ast.Assign):
                self.assign(sub)

    def merge(self, inner: "_Layers") -> None:
        self.kinds |= inner.kinds
        self.submodules.extend(inner.submodules)
        self.opaque = self.opaque or inner.opaque
        self.attrs.update(inner.attrs)


# shape-only tensor methods: ``torch.sigmoid(z).squeeze(1)`` is still sigmoid output
_SHAPE_ONLY = frozenset({"view", "reshape", "squeeze", "unsqueeze", "flatten", "contiguous", "float", "to"})


def _probability_of(expr, assigned: Dict[str, str], attrs: Dict[str, str]) -> Optional[str]:
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _SHAPE_ONLY \
            and isinstance(expr.func.value, (ast.Call, ast.Name)):
        expr = expr.func.value
    if isinstance(expr, ast.Call):
        func = expr.func
        name = _last(dotted(func))
        if name in _PROBABILITY and (isinstance(func, ast.Attribute) or name[0].islower()):
            if isinstance(func, ast.Attribute) and dotted(func.value) not in (None,) and name[0].isupper():
                return None
            return _PROBABILITY[name]
        if isinstance(func, ast.Call) and _last(dotted(func.func)) in _PROBABILITY:
            return _PROBABILITY[_last(dotted(func.func))]  # nn.LogSoftmax(dim=1)(x)
        target = dotted(func)
        if target in attrs:
            return attrs[target]  # self.log_softmax(x) with self.log_softmax = nn.LogSoftmax(...)
    if isinstance(expr, ast.Name):
        return assigned.get(expr.id)
    return None


def _forward_returns(node: ast.ClassDef, attrs: Dict[str, str]) -> Optional[str]:
    forward = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "forward"), None)
    if forward is None:
        return None
    assigned: Dict[str, str] = {}
    kinds = set()
    for stmt in walk(forward):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            kind = _probability_of(stmt.value, assigned, attrs)
            if kind:
                assigned[stmt.targets[0].id] = kind
            else:
                assigned.pop(stmt.targets[0].id, None)
        elif isinstance(stmt, ast.Return):
            if stmt.value is None:
                return None
            kinds.add(_probability_of(stmt.value, assigned, attrs))
    return kinds.pop() if len(kinds) == 1 else None


def _forward_grad_off(node: ast.ClassDef, imports: Dict[str, str]) -> bool:
    forward = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "forward"), None)
    if forward is None:
        return False
    return any(isinstance(sub, (ast.With, ast.AsyncWith)) and any(_is_grad_off_cm(i.context_expr, imports) for i in sub.items)
               for sub in walk(forward))
