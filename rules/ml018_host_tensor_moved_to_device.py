"""A tensor built on the host and copied to the device on every call: build it there with `device=`.

Why it matters
    ``torch.arange(seq_len).to(x.device)``, ``torch.zeros(n).cuda()`` or
    ``torch.ones(t, t).to(device)`` inside a module's ``forward`` (or a method it
    calls) or inside a loop over batches first allocates and fills the tensor in host
    memory, then copies it to the device: a second allocation and a host-to-device copy
    from pageable memory, which the CPU waits for, on every forward pass or every batch.
    Built with ``device=``, the tensor is allocated and filled on the device directly, with
    no copy and no wait. No error is raised; every step just does more work than it needs
    (fixtures/ml018: 2 host-to-device copies and 2 extra host allocations per forward
    pass, against none with ``device=``).

When the code is fine
    - the factory already names the device (``torch.zeros(n, device=x.device)``), or the
      tensor is made from another tensor (``x.new_zeros(n)``, ``torch.zeros_like(x)``);
    - ``torch.tensor(data).to(device)``: the data is Python data in host memory, and
      ``torch.tensor(data, device=device)`` builds it on the host and copies it just the same
      (ML004 reports it in a loop when the data does not change);
    - moving data that was not just built by a factory (``x.to(device)`` of a batch from a
      loader, a tensor built once in ``__init__`` or before the loop);
    - ``.to(torch.float32)``, ``.to(x.dtype)``, ``.to(x)`` of another tensor (not known to be
      only a device move), ``.cpu()``, ``.to("cpu")``;
    - code that runs once: ``__init__``, a cache filled under a condition
      (``if self.cache is None: self.cache = torch.arange(n).to(device)``), loops that are
      not over batches outside ``forward``, unit tests;
    - empty placeholders (``torch.zeros(0).to(device)``), tensors that require grad
      (``torch.zeros(n, requires_grad=True).to(device)`` is not a leaf, the ``device=``
      version is);
    - a tensor built from the same arguments on every batch of a loop: ML004 reports it
      (building it once before the loop is the better fix), and this rule stays silent.

How to fix
    Build the tensor on the device: ``torch.arange(n).to(device)`` becomes
    ``torch.arange(n, device=device)``, ``torch.zeros(n).cuda()`` becomes
    ``torch.zeros(n, device="cuda")``, ``torch.ones(n).to(device, torch.half)`` becomes
    ``torch.ones(n, device=device, dtype=torch.half)``. ``--fix`` does this when the move
    names a plain device (a ``device`` name or attribute, ``x.device``, a device string,
    ``torch.device(...)``, ``.cuda()`` without a device argument); a dtype given to the
    move goes to the factory for ``zeros``/``ones``/``empty``/``eye``, and stays a
    ``.to(dtype)`` on the device otherwise (so that the values are exactly the same).
    For random factories (``rand``, ``randn``, ``randint``, ``randperm``), ``linspace``,
    ``logspace`` and ``arange`` of float literals the fix is unsafe: the device's random
    generator (or arithmetic) gives other numbers than the host's.
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Set

import libcst as cst

from mllint.findings import Applicability, Example, Finding, Fix
from mllint.semantics.invariance import Analysis, LoopFacts, analysis
from mllint.semantics.model import CALL, FileModel, Loop, counts_iterations
from mllint.semantics.modules import is_module_class
from mllint.semantics.names import dotted, shorten

CODE = "ML018"
NAME = "host-tensor-moved-to-device"
MESSAGE = "a tensor is built on the host and copied to the device on every call: build it there with `device=`"
TRIGGERS = (".to(", ".cuda(", ".type_as(")
DEFAULT_ENABLED = True
FRAMEWORK = "torch"
FIX = "safe"

# torch factories that build a new tensor on the host unless given ``device=`` (the ``*_like``
# ones inherit their device; ``torch.tensor(data, device=d)`` builds on the host and copies
# all the same, so moving it afterwards costs nothing more).
_EXACT = ("zeros", "ones", "full", "empty", "eye", "arange")
_RANDOM = ("rand", "randn", "randint", "randperm")
_INEXACT = ("linspace", "logspace")
FACTORIES = frozenset(f"torch.{name}" for name in _EXACT + _RANDOM + _INEXACT)
# legacy typed constructors given sizes (``torch.FloatTensor(b, n)``): an uninitialised host tensor
LEGACY = frozenset(
    f"torch.{name}Tensor" for name in ("", "Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Byte", "Char", "Bool")
)
# value-exact shape and fill methods between the factory and the move
# (``torch.arange(n).unsqueeze(0).to(device)``, ``torch.ones(t, t).triu(1).bool().cuda()``)
_SHAPE_OPS = frozenset(
    {"unsqueeze", "squeeze", "view", "reshape", "flatten", "t", "transpose", "permute", "contiguous", "repeat", "tile",
     "repeat_interleave", "flip", "triu", "tril", "fill_", "zero_", "clone", "unsqueeze_", "squeeze_", "triu_", "tril_"}
)
# views with stride 0 that ``.to()`` copies densely: building them on the device keeps the view
_EXPANDS = frozenset({"expand", "expand_as", "broadcast_to"})
_RANK_WORD = re.compile(r"^_*(local_|global_)?(rank|gpu|gpu_id|gpu_index|device_id|device_index|cuda_id)$", re.IGNORECASE)
# a dtype on the move can become the factory's ``dtype=``: their values are exact in any dtype
_DTYPE_EXACT = frozenset({"zeros", "ones", "empty", "eye"})
# no-argument casts between the factory and the move (``torch.arange(n).float().to(device)``)
_CASTS = frozenset({"float", "double", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char"})
# the move's own keywords that a fresh tensor can drop
_DROPPABLE = frozenset({"non_blocking", "copy"})
_DEVICE_WORD = re.compile(r"^_*(\w+_)?(device|dev)$", re.IGNORECASE)
_CACHES = re.compile(r"(^|\.)(lru_cache|cache|cached_property)$")


def SCREEN(facts) -> bool:
    # Sound: a finding is a call of a factory (by qualified name, as ImportTable resolves it)
    # whose result has ``.to(...)``, ``.cuda(...)`` or ``.type_as(...)`` called on it.
    return not facts.call_quals.isdisjoint(FACTORIES | LEGACY) and bool({"to", "cuda", "type_as"} & set(facts.attr_calls))


# --- the expression: factory, casts, move ----------------------------------------------------------


class Move:
    """``<factory>(...)[.<cast>()...].to(<device>...)`` or ``....cuda()``."""

    def __init__(self, factory: cst.Call, kind: str, call: cst.Call, device: Optional[cst.BaseExpression],
                 dtype: Optional[cst.BaseExpression], fixable: bool) -> None:
        self.factory = factory
        self.chain = False  # methods or a wrapper between the factory and the move
        self.expands = False  # an expand() view among them
        self.kind = kind
        self.call = call  # the .to(...) / .cuda(...) call
        self.device = device  # the device expression for ``device=`` (None: not known)
        self.dtype = dtype  # a dtype the move also converts to
        self.fixable = fixable


def _kwarg(call: cst.Call, name: str) -> Optional[cst.Arg]:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def _is_cpu(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return isinstance(value, str) and value.split(":")[0] == "cpu"
    return False


def _device_expr(model: FileModel, expr: cst.BaseExpression) -> Optional[str]:
    """How ``expr`` names a device: "plain" (a device for sure: ``device``, ``self.device``,
    ``x.device``, ``"cuda"``, ``torch.device("cuda")``), "cpu", or None (not known to be
    a device: a dtype, a tensor, anything else)."""
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        if not isinstance(value, str):
            return None
        if value.split(":")[0] == "cpu":
            return "cpu"
        return "plain" if re.fullmatch(r"(cuda|mps|xpu|hpu|npu|xla|meta)(:\d+)?", value) else None
    if isinstance(expr, cst.Call):
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get_device" and not expr.args:
            return "plain"  # x.get_device(): the index of x's device
        if (model.imports.qualname(expr.func) or "") == "torch.device":
            first = expr.args[0].value if expr.args and expr.args[0].keyword is None else None
            if first is not None and _is_cpu(first):
                return "cpu"
            return "plain"
        return None
    name = dotted(expr)
    if name is None:
        return None
    last = name.rsplit(".", 1)[-1]
    if last == "device" or _DEVICE_WORD.match(last):
        return "plain"
    if _RANK_WORD.match(last):
        return "index"  # .to(local_rank): a device index (an int, in practice), maybe None: no fix
    return None


def _factory_kind(model: FileModel, call: cst.Call) -> Optional[str]:
    qual = model.imports.qualname(call.func) or ""
    if qual in LEGACY:
        return "legacy" if _legacy_sizes(call) else None
    if qual not in FACTORIES:
        return None
    if not call.args:
        return None
    for arg in call.args:
        if arg.star == "**":
            return None  # may hold device=
        if arg.keyword is None:
            continue
        key = arg.keyword.value
        if key in ("device", "out", "pin_memory", "layout"):
            return None
        if key == "requires_grad" and not (isinstance(arg.value, cst.Name) and arg.value.value == "False"):
            return None  # a leaf that collects gradients; moved, it is not a leaf any more
    kind = qual.rsplit(".", 1)[-1]
    if _empty(call, kind):
        return None
    return kind


_SIZED = frozenset({"zeros", "ones", "empty", "rand", "randn", "full", "eye"})


def _size_like(expr: cst.BaseExpression) -> bool:
    """An expression that is a size for sure: ``3``, ``x.size(0)``, ``len(xs)``, ``x.shape[0]``, sums of them."""
    if isinstance(expr, cst.Integer):
        return expr.value != "0"
    if isinstance(expr, cst.BinaryOperation):
        return _size_like(expr.left) and (_size_like(expr.right) or isinstance(expr.right, (cst.Name, cst.Attribute)))
    if isinstance(expr, cst.Call):
        name = dotted(expr.func) or ""
        return name == "len" or name.endswith((".size", ".numel", ".dim"))
    if isinstance(expr, cst.Subscript):
        name = dotted(expr.value) or ""
        return name.endswith(".shape")
    return False


def _legacy_sizes(call: cst.Call) -> bool:
    """``torch.FloatTensor(b, n)`` (sizes: an uninitialised tensor), not ``torch.FloatTensor(data)``."""
    if not call.args or any(a.keyword is not None or a.star for a in call.args):
        return False
    if any(isinstance(a.value, (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp, cst.SimpleString)) for a in call.args):
        return False
    if any(isinstance(a.value, cst.Integer) and a.value.value == "0" for a in call.args):
        return False
    if len(call.args) >= 2:
        return True
    return _size_like(call.args[0].value)


def _empty(call: cst.Call, kind: str) -> bool:
    """``torch.zeros(0)``, ``torch.empty((0, 3))``: no storage to copy."""
    first = call.args[0].value if call.args[0].keyword is None else None
    if first is None:
        return False
    if kind not in _SIZED:
        return False  # torch.arange(0, n), torch.linspace(0, 1, n): the first argument is no size
    if isinstance(first, (cst.List, cst.Tuple)):
        if not first.elements:
            return True
        return any(isinstance(e.value, cst.Integer) and e.value.value == "0" for e in first.elements)
    return isinstance(first, cst.Integer) and first.value == "0"


def _variable_around(model: FileModel, node: cst.CSTNode) -> Optional[cst.Call]:
    """``Variable(<node>)`` (old PyTorch's autograd wrapper, no ``requires_grad``): the call."""
    arg = model.parents.get(node)
    if not isinstance(arg, cst.Arg) or arg.value is not node or arg.keyword is not None or arg.star:
        return None
    call = model.parents.get(arg)
    if not isinstance(call, cst.Call) or not call.args or call.args[0] is not arg:
        return None
    qual = model.imports.qualname(call.func) or dotted(call.func) or ""
    if qual not in ("torch.autograd.Variable", "torch.autograd.variable.Variable"):
        return None
    if any(a.keyword is not None and a.keyword.value == "requires_grad" for a in call.args) or len(call.args) > 1:
        return None  # a leaf that collects gradients (or volatile=...): leave it
    return call


def _plain_index(node: cst.Subscript) -> bool:
    """``t[None]``, ``t[:, None]``, ``t[0]``, ``t[..., :n]``: indexing by constants and slices."""
    for element in node.slice:
        inner = element.slice
        if isinstance(inner, cst.Slice):
            continue
        value = inner.value
        if isinstance(value, cst.Integer) or (isinstance(value, cst.Name) and value.value == "None") or isinstance(value, cst.Ellipsis):
            continue
        return False
    return True


def _move_of(model: FileModel, factory: cst.Call, kind: str) -> Optional[Move]:
    """The move applied at once to the factory's result (through no-argument casts, shape and
    fill methods, constant indexing, or an old ``Variable(...)`` wrapper)."""
    parents = model.parents
    node: cst.CSTNode = factory
    chain = expands = False
    while True:
        wrapper = _variable_around(model, node)
        if wrapper is not None:
            node, chain = wrapper, True
            continue
        attr = parents.get(node)
        if isinstance(attr, cst.Subscript) and attr.value is node and _plain_index(attr):
            node, chain = attr, True
            continue
        if not isinstance(attr, cst.Attribute) or attr.value is not node:
            return None
        call = parents.get(attr)
        if not isinstance(call, cst.Call) or call.func is not attr:
            return None
        method = attr.attr.value
        if method in _CASTS and not call.args:
            node = call
            continue
        if method in _SHAPE_OPS | _EXPANDS and not any(a.star for a in call.args):
            node, chain = call, True
            expands = expands or method in _EXPANDS
            continue
        move = None
        if method == "cuda":
            move = _cuda_move(factory, kind, call)
        elif method == "to":
            move = _to_move(model, factory, kind, call)
        elif method == "type_as":
            move = _type_as_move(factory, kind, call)
            if move is not None and _host_tensor(model, call.args[0].value, call):
                return None
        if move is not None:
            move.chain, move.expands = chain, expands
            if kind == "legacy":
                move.fixable = False
        return move


def _host_tensor(model: FileModel, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """``lens = lengths.cpu()`` ... ``.type_as(lens)``: a name the function binds to a tensor moved
    to the host (``.cpu()``, ``.to("cpu")``, ``.numpy()``-free host data): no device copy."""
    if not isinstance(expr, cst.Name):
        return False
    scope = next((ctx.scope for c, ctx in model.calls if c is at), None)
    if scope is None:
        return False
    for targets, value, ctx in model.assignments_naming(expr.value):
        if ctx.scope != scope or not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
            continue
        method = value.func.attr.value
        if method == "cpu" or (method == "to" and value.args and _is_cpu(value.args[0].value)):
            return True
    return False


def _type_as_move(factory: cst.Call, kind: str, call: cst.Call) -> Optional[Move]:
    """``.type_as(x)``: to x's dtype and x's device."""
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return None
    other = call.args[0].value
    if dotted(other) is None:
        return Move(factory, kind, call, None, None, False)
    device = cst.Attribute(value=other, attr=cst.Name("device"))
    dtype = cst.Attribute(value=other, attr=cst.Name("dtype"))
    return Move(factory, kind, call, device, dtype, True)


def _cuda_move(factory: cst.Call, kind: str, call: cst.Call) -> Optional[Move]:
    if any(a.star for a in call.args):
        return None
    positional = [a for a in call.args if a.keyword is None]
    device_kw = _kwarg(call, "device")
    others = [a for a in call.args if a.keyword is not None and a.keyword.value not in _DROPPABLE and a is not device_kw]
    chosen = positional[0].value if positional else device_kw.value if device_kw is not None else None
    if others or len(positional) > 1:
        return Move(factory, kind, call, None, None, False)
    if chosen is None:
        return Move(factory, kind, call, cst.SimpleString('"cuda"'), None, True)
    if isinstance(chosen, cst.Integer):
        return Move(factory, kind, call, cst.SimpleString(f'"cuda:{chosen.value}"'), None, True)
    return Move(factory, kind, call, None, None, False)  # .cuda(rank): an int or a device, or None


def _to_move(model: FileModel, factory: cst.Call, kind: str, call: cst.Call) -> Optional[Move]:
    if any(a.star for a in call.args):
        return None  # .to(*args, **kwargs)
    positional = [a.value for a in call.args if a.keyword is None]
    device_kw, dtype_kw = _kwarg(call, "device"), _kwarg(call, "dtype")
    device: Optional[cst.BaseExpression] = None
    dtype: Optional[cst.BaseExpression] = None
    if device_kw is not None:
        device = device_kw.value
        if positional:
            return None  # .to(dtype, device=...) is no valid signature; leave it
    elif positional:
        device = positional[0]
        if len(positional) >= 2:
            dtype = positional[1]
        if len(positional) > 2:
            return None
    if device is None:
        return None  # .to(dtype=...): a dtype-only move
    verdict = _device_expr(model, device)
    if verdict == "index":
        return Move(factory, kind, call, None, None, False)
    if verdict != "plain":
        return None  # a dtype, another tensor, "cpu", or not known to be a device
    if dtype_kw is not None:
        if dtype is not None:
            return None
        dtype = dtype_kw.value
    extra = [a for a in call.args if a.keyword is not None and a.keyword.value not in _DROPPABLE | {"device", "dtype"}]
    return Move(factory, kind, call, device, dtype, not extra)


# --- where it runs: forward passes and loops over batches ------------------------------------------


def _forward_functions(model: FileModel, an: Analysis) -> Set[str]:
    """The functions of this file that run on every forward pass: ``forward`` of the file's
    nn.Module classes (and autograd Functions), and the functions it calls, transitively.
    A helper called only under a condition that fills attributes of ``self`` is a cache
    filled once, not a per-call cost; functions under ``functools.lru_cache`` run once per
    argument."""

    def build(_model: FileModel) -> Set[str]:
        todo = []
        for name, info in model.classes.items():
            key = f"{name}.forward"
            if key not in model.functions:
                continue
            if is_module_class(model, name) or any(
                (model.imports.qualify(b) or b) in ("torch.autograd.Function", "torch.autograd.function.Function")
                for b in info.bases
            ):
                todo.append(key)
        return _closure(model, an, todo)

    return model.memo("ml018.forward_functions", build)


_STEP_HOOKS = ("training_step", "validation_step", "test_step", "predict_step")
# method names too common to resolve ``obj.<name>(...)`` by name alone
_GENERIC = frozenset({"forward", "step", "train", "eval", "update", "reset", "run", "__call__", "__init__", "to", "cuda"})


def _method_by_name(model: FileModel, call: cst.Call) -> Optional[str]:
    """``model.init_hidden(b)`` on an object of unknown class: the method of that name when
    exactly one class of the file defines it (and the name is not a generic one)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value in _GENERIC or func.attr.value.startswith("__"):
        return None
    keys = [k for k, fn in model.functions.items() if fn.cls is not None and k.rsplit(".", 1)[-1] == func.attr.value]
    return keys[0] if len(keys) == 1 else None


def _batch_functions(model: FileModel, an: Analysis) -> Set[str]:
    """The functions of this file that run once per batch: those called in the body of a loop
    over batches (not on some iterations only, not to fill a cache on ``self``), a Lightning
    module's ``training_step``/``validation_step``/..., and the functions they call, transitively."""

    def build(_model: FileModel) -> Set[str]:
        todo: List[str] = []
        for name, info in model.classes.items():
            if any((model.imports.qualify(b) or b).rsplit(".", 1)[-1] == "LightningModule" for b in info.bases):
                todo.extend(f"{name}.{hook}" for hook in _STEP_HOOKS if f"{name}.{hook}" in model.functions)
        for call, ctx in model.calls:
            if ctx.loop is None or an.in_unit_test(ctx.scope):
                continue
            callee = an.callee_of(call) or _method_by_name(model, call)
            if callee is None or callee not in model.functions:
                continue
            loop = an.enclosing_batch_loop(ctx.loop)
            if loop is None or not _in_body(an, call, loop) or an.inside_nested_scope(call, loop.node):
                continue
            if _rarely_runs(an.facts(loop), loop, ctx):
                continue
            if ctx.conds and an.self_attributes_assigned_by(callee):
                continue
            todo.append(callee)
        return _closure(model, an, todo)

    return model.memo("ml018.batch_functions", build)


def _closure(model: FileModel, an: Analysis, todo: List[str]) -> Set[str]:
    """The functions in ``todo`` and those they call (not under ``lru_cache``; a helper called
    under a condition that fills attributes of ``self`` is a cache filled once)."""
    calls: Dict[str, List] = {}
    for effect in model.effects:
        if effect.kind == CALL and effect.callee:
            calls.setdefault(effect.ctx.scope, []).append(effect)
    reached: Set[str] = set()
    while todo:
        key = todo.pop()
        if key in reached:
            continue
        fn = model.functions.get(key)
        if fn is None or any(_CACHES.search(d) for d in fn.decorators):
            continue
        reached.add(key)
        for effect in calls.get(key, ()):
            callee = effect.callee
            if callee in reached or callee not in model.functions:
                continue
            if effect.ctx.conds and an.self_attributes_assigned_by(callee):
                continue
            todo.append(callee)
    return reached


def _in_body(an: Analysis, node: cst.CSTNode, loop: Loop) -> bool:
    body = loop.node.body
    return any(parent is body for parent in an.ancestors(node))


def _rarely_runs(facts: LoopFacts, loop: Loop, ctx) -> bool:
    """Under a condition in the loop that holds on some iterations only (as ML004 reads it)."""
    for cond in ctx.conds:
        if cond.loop is not None and loop.encloses(cond.loop):
            if cond.branch == "except" or cond.node is None or counts_iterations(cond, loop.targets):
                return True
            if not facts.invariant(cond.node):
                return True
    return False


def _left_to_ml004(an: Analysis, facts: LoopFacts, move: Move) -> bool:
    """Whether ML004 reports this allocation (a tensor built from the same arguments on
    every batch): then its fix, building it once before the loop, is the better one, and
    this rule stays silent. Mirrors ML004's conditions (invariance.py answers them)."""
    factory = move.factory
    if move.kind in _RANDOM or facts.changes_defaults:
        return False
    if not facts.pure_call(factory) or not all(facts.invariant(a.value) for a in factory.args):
        return False
    if not facts.stays_private(factory):
        return False
    parent = an.parents.get(move.call)
    if isinstance(parent, cst.Attribute) and parent.value is move.call and parent.attr.value in ("repeat", "repeat_interleave", "tile"):
        return False
    return True


def _rarely_runs_here(an: Analysis, ctx) -> bool:
    """In a function run per batch, under a condition of a loop of its own, or in a loop that is
    not over batches (``for i in range(k)``... each pass is still per batch: only conditions count)."""
    if ctx.loop is None:
        return False
    loop = ctx.loop
    while loop.parent is not None:
        loop = loop.parent
    return _rarely_runs(an.facts(loop), loop, ctx)


def _on_self(node: cst.BaseExpression) -> bool:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return isinstance(node, cst.Name) and node.value == "self"


def _cached_on_self(an: Analysis, move: Move, ctx) -> bool:
    """``self.x = torch.arange(n).to(device)`` under a condition: a cache filled once; so is
    ``self.w.data.copy_(torch.randn(...).type_as(...))`` (an init pass: ``if init: ...``)."""
    if not ctx.conds:
        return False
    statement = an.statement_of(move.call)
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        targets = []
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            func = small.value.func
            if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and _on_self(func.value):
                return True
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, cst.AnnAssign):
            targets = [small.target]
        for target in targets:
            while isinstance(target, (cst.Attribute, cst.Subscript)):
                target = target.value
            if isinstance(target, cst.Name) and target.value == "self":
                return True
    return False


# --- the fix -----------------------------------------------------------------------------------------


def _keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def _with_args(call: cst.Call, extra: List[cst.Arg]) -> cst.Call:
    args = list(call.args)
    if args and args[-1].comma is not cst.MaybeSentinel.DEFAULT:
        # a trailing comma (``torch.zeros(\n    n,\n)``): keep it after the new last argument
        comma = args[-1].comma
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        extra = extra[:-1] + [extra[-1].with_changes(comma=comma)]
    return call.with_changes(args=args + extra)


def _applicability(move: Move) -> Applicability:
    if move.kind in _RANDOM or move.kind in _INEXACT or move.expands:
        return Applicability.UNSAFE
    if move.kind == "arange" and any(
        isinstance(a.value, cst.Float) or isinstance(a.value, cst.UnaryOperation) and isinstance(a.value.expression, cst.Float)
        for a in move.factory.args
    ):
        return Applicability.UNSAFE
    return Applicability.SAFE


def _fix(model: FileModel, move: Move) -> Optional[Fix]:
    if not move.fixable or move.device is None:
        return None
    factory = move.factory
    extra = [_keyword("device", move.device)]
    keep_dtype: Optional[cst.BaseExpression] = None
    if move.dtype is not None:
        if move.kind in _DTYPE_EXACT and _kwarg(factory, "dtype") is None and move.call.func.value is factory:  # type: ignore[attr-defined]
            extra.append(_keyword("dtype", move.dtype))
        else:
            keep_dtype = move.dtype
    before = move.call.func.value  # type: ignore[attr-defined]  # the factory, maybe with casts
    new_factory = _with_args(factory, extra)
    replacement: cst.BaseExpression = new_factory if before is factory else before.deep_replace(factory, new_factory)
    if keep_dtype is not None:
        replacement = cst.Call(func=cst.Attribute(value=replacement, attr=cst.Name("to")), args=[cst.Arg(keep_dtype)])
    where = model.code_of(move.device).strip()
    return model.fix_replacing(move.call, replacement, _applicability(move), f"Build the tensor on the device (`device={where}`)")


# --- the rule -------------------------------------------------------------------------------------


def _brief(model: FileModel, node: cst.CSTNode) -> str:
    text = " ".join(model.code_of(node).split())
    return text if len(text) <= 50 else shorten(text, 50)


def check(model: FileModel) -> Iterable[Finding]:
    an: Optional[Analysis] = None
    forward: Optional[Set[str]] = None
    for call, ctx in model.calls:
        kind = _factory_kind(model, call)
        if kind is None:
            continue
        move = _move_of(model, call, kind)
        if move is None:
            continue
        an = an or analysis(model)
        if an.in_unit_test(ctx.scope):
            continue
        where = None
        loop = an.enclosing_batch_loop(ctx.loop) if ctx.loop is not None else None
        if loop is not None and _in_body(an, move.call, loop) and not an.inside_nested_scope(move.call, loop.node):
            facts = an.facts(loop)
            if _rarely_runs(facts, loop, ctx) or _left_to_ml004(an, facts, move):
                continue
            where = "batch"
        else:
            forward = forward if forward is not None else _forward_functions(model, an)
            if ctx.scope in forward and not _cached_on_self(an, move, ctx):
                where = "forward pass"
            elif ctx.scope in _batch_functions(model, an) and not _cached_on_self(an, move, ctx) and not _rarely_runs_here(an, ctx):
                where = "batch"
        if where is None:
            continue
        fix = _fix(model, move)
        message = f"`{shorten(_brief(model, move.call), 25)}` is built on the host, then copied to the device every {where}: pass `device=`"
        detail = (
            f"`{model.code_of(call).strip()}` allocates on the host, then `.{move.call.func.attr.value}(...)` "  # type: ignore[attr-defined]
            f"copies it to the device (a synchronising host-to-device copy) on every {where}; "
            "pass `device=` to the factory to build it on the device directly."
        )
        yield model.finding(move.call, CODE, NAME, message, fix, detail)


# --- examples ---------------------------------------------------------------------------------------

VALID = [
    # the factory already builds on the device
    """
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def forward(self, x):
            pos = torch.arange(x.size(1), device=x.device)
            return x + pos
    """,
    # moving the loader's data is ML008's business, not a factory's result
    """
    import torch

    def train(model, loader, optimizer, device):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = model(x, y)
            loss.backward()
            optimizer.step()
    """,
    # built once in __init__ (and registered as a buffer)
    """
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self, n, device):
            super().__init__()
            self.register_buffer("pos", torch.arange(n).to(device))

        def forward(self, x):
            return x + self.pos
    """,
    # a dtype-only move, and a move to the CPU
    """
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def forward(self, x):
            scale = torch.arange(x.size(-1), device=x.device).to(torch.float32)
            host = torch.zeros(3).to("cpu")
            idx = torch.arange(4).to(x.dtype)
            return x * scale, host, idx
    """,
    # .to(other_tensor) copies dtype and device: not known to be a device move
    """
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def forward(self, x):
            return x + torch.ones(x.size(-1)).to(x)
    """,
    # *_like factories inherit the device
    """
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def forward(self, x):
            return x + torch.rand_like(x).to(x.device) + torch.zeros_like(x).cuda()
    """,
    # a function that is neither a forward nor in a loop over batches
    """
    import torch

    def make_positions(n, device):
        return torch.arange(n).to(device)

    positions = make_positions(128, "cuda")
    """,
    # a cache filled once, under a condition, inside forward
    """
    import torch
    import torch.nn as nn

    class Rotary(nn.Module):
        def __init__(self):
            super().__init__()
            self.cached = None

        def forward(self, x):
            if self.cached is None or self.cached.size(0) < x.size(1):
                self.cached = torch.arange(x.size(1)).to(x.device)
            return x * self.cached[: x.size(1)]
    """,
    # a helper that fills a cache, called from forward under a condition
    """
    import torch
    import torch.nn as nn

    class Rotary(nn.Module):
        def __init__(self):
            super().__init__()
            self.seq_len = 0

        def _build(self, n, device):
            t = torch.arange(n).to(device)
            self.cos = torch.cos(t)
            self.seq_len = n

        def forward(self, x):
            if x.size(1) > self.seq_len:
                self._build(x.size(1), x.device)
            return x * self.cos[: x.size(1)]
    """,
    # the same tensor every batch: ML004 reports it (build it once before the loop)
    """
    import torch

    for epoch in range(10):
        for images, _ in loader:
            real_labels = torch.ones(batch_size, 1).to(device)
            loss = criterion(D(images.to(device)), real_labels)
            loss.backward()
    """,
    # a loop that is not over batches, outside any forward
    """
    import torch

    def build_tables(sizes, device):
        tables = []
        for n in sizes:
            tables.append(torch.eye(n).to(device))
        return tables
    """,
    # a leaf that requires grad, an empty placeholder, and a move whose argument is not a device
    """
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def forward(self, x, dtype, other):
            delta = torch.zeros(x.size(-1), requires_grad=True).to(x.device)
            empty = torch.zeros(0).to(x.device)
            y = torch.ones(3).to(dtype)
            z = torch.ones(3).to(other)
            return x + delta, empty, y, z
    """,
    # torch.tensor of Python data: built on the host and copied with device= as well
    """
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def forward(self, x, lengths):
            return x * torch.tensor(lengths).to(x.device)
    """,
    # a unit test's loop
    """
    import torch

    def test_model_runs(model, loader):
        for batch in loader:
            out = model(batch, torch.arange(batch.size(1)).cuda())
            assert out.shape[0] == batch.shape[0]
    """,
    # only on every 100th batch
    """
    import torch

    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        if step % 100 == 0:
            noise = torch.randn(16, 64).to(device)
            log_samples(generator(noise))
    """,
    # dev set: device kw
    """
import torch
import torch.nn as nn


class PosEmbed(nn.Module):
    def __init__(self, max_len, dim):
        super().__init__()
        self.emb = nn.Embedding(max_len, dim)
        self.register_buffer("causal", torch.ones(max_len, max_len).triu(1).bool().to("cuda"))

    def forward(self, x):
        L = x.size(1)
        position_ids = torch.arange(L, device=x.device).unsqueeze(0)
        h0 = x.new_zeros(1, x.size(0), 8)
        return x + self.emb(position_ids), h0, self.causal[:L, :L]
""",
    # dev set: type as tensor
    """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.scale = torch.ones(4).type_as(self.fc.weight)

    def forward(self, x, mask):
        mask = mask.type_as(x)
        w = torch.ones_like(x).type_as(x)
        return self.fc(x) * mask * w
""",
    # dev set: once before loop
    """
import torch


def train_gan(G, D, loader, opt_d, device, z_dim=100):
    fixed_noise = torch.randn(64, z_dim, 1, 1).to(device)
    for epoch in range(25):
        hidden = G.init_state(8)
        for real, _ in loader:
            real = real.to(device)
            fake = G(real)
            loss = D(fake).mean()
            opt_d.zero_grad()
            loss.backward()
            opt_d.step()
        with torch.no_grad():
            G(fixed_noise)
""",
    # dev set: dtype only
    """
import torch
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x):
        idx = torch.arange(x.size(1), device=x.device).unsqueeze(0).to(torch.float32)
        w = torch.ones(x.size(-1), device=x.device).float().to(x.dtype)
        host = torch.zeros(3).unsqueeze(0).to("cpu")
        return x * idx * w, host
""",
    # dev set: legacy data
    """
import torch
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x, labels, weights):
        t = torch.LongTensor(labels).cuda()
        w = torch.FloatTensor([0.2, 0.8]).cuda()
        u = torch.FloatTensor(weights).to(x.device)
        return x[t] * w[0] * u
""",
    # dev set: variable requires grad
    """
import torch
import torch.nn as nn
from torch.autograd import Variable


class Net(nn.Module):
    def forward(self, x):
        delta = Variable(torch.zeros(x.size()), requires_grad=True).cuda()
        return x + delta
""",
    # dev set: rank data
    """
import torch


def train(model, loader, optimizer, local_rank):
    for x, y in loader:
        x, y = x.to(local_rank), y.to(local_rank)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
    # dev set: helper rare
    """
import torch


def sample_images(G, device, z_dim):
    z = torch.randn(16, z_dim).to(device)
    return G(z)


def train(G, D, loader, opt, device, z_dim):
    for step, (x, _) in enumerate(loader):
        loss = D(G(x.to(device))).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 500 == 0:
            sample_images(G, device, z_dim)
""",
    # dev set: lightning other hooks
    """
import torch
import pytorch_lightning as pl


class GAN(pl.LightningModule):
    def __init__(self, G, z_dim):
        super().__init__()
        self.G, self.z_dim = G, z_dim

    def on_train_start(self):
        self.fixed_z = torch.randn(16, self.z_dim).to(self.device)

    def training_step(self, batch, batch_idx):
        x, _ = batch
        z = torch.randn(x.size(0), self.z_dim, device=self.device)
        return self.G(z).mean()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
""",
    # dev set: helper not per batch
    """
import torch


def make_grid(n, device):
    return torch.arange(n).unsqueeze(0).to(device)


def evaluate_sizes(model, sizes, device):
    out = []
    for n in sizes:
        out.append(model(make_grid(n, device)))
    return out
""",
    # dev set: cache in step helper
    """
import torch


class Runner:
    def __init__(self, model):
        self.model = model
        self.mask = None

    def _build_mask(self, n, device):
        self.mask = torch.ones(n, n).tril().to(device)

    def step(self, batch):
        if self.mask is None:
            self._build_mask(batch.size(1), batch.device)
        return self.model(batch, self.mask)


def train(runner, loader, opt):
    for batch in loader:
        loss = runner.step(batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
""",
    # dev set: invariant in loop
    """
import torch


def train(model, loader, opt, device, batch_size):
    for x, _ in loader:
        real_labels = torch.ones(batch_size, 1).unsqueeze(-1).to(device)
        loss = ((model(x.to(device)) - real_labels) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
""",
    # real code (mead-baseline): type_as a tensor the function moved to the host: no device copy
    """
import torch
import torch.nn as nn


def sequence_mask(lengths, max_len=-1):
    lens = lengths.cpu()
    max_len_v = torch.max(lens) if max_len < 0 else max_len
    row = torch.arange(0, max_len_v).type_as(lens).view(1, -1)
    return row < lens.view(-1, 1)


class Tagger(nn.Module):
    def forward(self, x, lengths):
        return self.rnn(x) * sequence_mask(lengths).to(x.device).unsqueeze(-1)
""",
    # real code (OpenNMT weight norm): a data-dependent init pass, under a flag, in place on self
    """
import torch
import torch.nn as nn


class WeightNormLinear(nn.Linear):
    def forward(self, x, init=False):
        if init is True:
            self.V.data.copy_(torch.randn(self.V.data.size()).type_as(self.V.data) * 0.05)
        return nn.functional.linear(x, self.V * self.g.unsqueeze(1), self.b)
""",
]

INVALID = [
    # position ids built on the host in a module's forward
    Example(
        """
import torch
import torch.nn as nn

class Embedder(nn.Module):
    def __init__(self, vocab, dim, max_len):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)

    def forward(self, ids):
        positions = torch.arange(ids.size(1)).to(ids.device)
        return self.tok(ids) + self.pos(positions)
""",
        fixed="""
import torch
import torch.nn as nn

class Embedder(nn.Module):
    def __init__(self, vocab, dim, max_len):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)

    def forward(self, ids):
        positions = torch.arange(ids.size(1), device=ids.device)
        return self.tok(ids) + self.pos(positions)
""",
    ),
    # .cuda() on a fresh tensor in forward
    Example(
        """
import torch
import torch.nn as nn

class Encoder(nn.Module):
    def forward(self, x):
        h0 = torch.zeros(1, x.size(0), 128).cuda()
        out, _ = self.rnn(x, h0)
        return out
""",
        fixed="""
import torch
import torch.nn as nn

class Encoder(nn.Module):
    def forward(self, x):
        h0 = torch.zeros(1, x.size(0), 128, device="cuda")
        out, _ = self.rnn(x, h0)
        return out
""",
    ),
    # in a method that forward calls
    Example(
        """
import torch
from torch import nn

class Decoder(nn.Module):
    def causal_mask(self, n, device):
        return torch.ones(n, n).to(device).triu(1).bool()

    def forward(self, x):
        return self.attn(x, mask=self.causal_mask(x.size(1), x.device))
""",
        fixed="""
import torch
from torch import nn

class Decoder(nn.Module):
    def causal_mask(self, n, device):
        return torch.ones(n, n, device=device).triu(1).bool()

    def forward(self, x):
        return self.attn(x, mask=self.causal_mask(x.size(1), x.device))
""",
    ),
    # a move with a dtype: it goes onto the factory
    Example(
        """
import torch
import torch.nn as nn

class Head(nn.Module):
    def forward(self, x):
        bias = torch.zeros(x.size(0), 1).to(x.device, torch.float16)
        return self.fc(x) + bias
""",
        fixed="""
import torch
import torch.nn as nn

class Head(nn.Module):
    def forward(self, x):
        bias = torch.zeros(x.size(0), 1, device=x.device, dtype=torch.float16)
        return self.fc(x) + bias
""",
    ),
    # keyword form, with non_blocking (dropped: nothing to overlap for a fresh tensor)
    Example(
        """
import torch
import torch.nn as nn

class Gate(nn.Module):
    def forward(self, x):
        ones = torch.ones(x.shape[0], 1).to(device=self.device, non_blocking=True)
        return torch.cat([x, ones], dim=1)
""",
        fixed="""
import torch
import torch.nn as nn

class Gate(nn.Module):
    def forward(self, x):
        ones = torch.ones(x.shape[0], 1, device=self.device)
        return torch.cat([x, ones], dim=1)
""",
    ),
    # a buffer sized by the batch in a batch loop
    Example(
        """
import torch

def train(model, loader, optimizer, device):
    for texts, labels in loader:
        mask = torch.ones(len(texts), max(len(t) for t in texts)).to(device)
        loss = model(texts, mask, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        fixed="""
import torch

def train(model, loader, optimizer, device):
    for texts, labels in loader:
        mask = torch.ones(len(texts), max(len(t) for t in texts), device=device)
        loss = model(texts, mask, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
    ),
    # a cast between the factory and the move; an imported factory name
    Example(
        """
from torch import arange
import torch.nn as nn

class Sinusoid(nn.Module):
    def forward(self, x):
        t = arange(x.size(1)).float().to(x.device)
        return x + t[None, :, None]
""",
        fixed="""
from torch import arange
import torch.nn as nn

class Sinusoid(nn.Module):
    def forward(self, x):
        t = arange(x.size(1), device=x.device).float()
        return x + t[None, :, None]
""",
    ),
    # labels sized by the batch in a GAN loop, with a dtype the factory does not take exactly
    Example(
        """
import torch

for i, (images, _) in enumerate(train_loader):
    b = images.size(0)
    targets = torch.full((b,), 0.9).to(device, torch.float64)
    loss = criterion(D(images.to(device)), targets)
    loss.backward()
""",
        fixed="""
import torch

for i, (images, _) in enumerate(train_loader):
    b = images.size(0)
    targets = torch.full((b,), 0.9, device=device).to(torch.float64)
    loss = criterion(D(images.to(device)), targets)
    loss.backward()
""",
    ),
    # random noise per batch: reported, but the fix is unsafe (the device's generator draws other numbers)
    Example(
        """
import torch

for x, _ in loader:
    z = torch.randn(x.size(0), 100).to(device)
    loss = -D(G(z)).mean()
    loss.backward()
""",
        unsafe_fixed="""
import torch

for x, _ in loader:
    z = torch.randn(x.size(0), 100, device=device)
    loss = -D(G(z)).mean()
    loss.backward()
""",
    ),
    # an autograd Function's forward, and a device built with torch.device
    Example(
        """
import torch

class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        s = torch.full((1,), 2.0).to(torch.device("cuda"))
        return x * s

    @staticmethod
    def backward(ctx, g):
        return g * 2.0
""",
        fixed="""
import torch

class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        s = torch.full((1,), 2.0, device=torch.device("cuda"))
        return x * s

    @staticmethod
    def backward(ctx, g):
        return g * 2.0
""",
    ),
    # a module-level helper that forward calls, .cuda(0)
    Example(
        """
import torch
import torch.nn as nn

def onehot(y, n):
    return torch.eye(n).cuda(0)[y]

class Net(nn.Module):
    def forward(self, x, y):
        return self.fc(x) - onehot(y, 10)
""",
        fixed="""
import torch
import torch.nn as nn

def onehot(y, n):
    return torch.eye(n, device="cuda:0")[y]

class Net(nn.Module):
    def forward(self, x, y):
        return self.fc(x) - onehot(y, 10)
""",
    ),
    # a device argument to .cuda() that may be None or a rank: reported without a fix
    Example(
        """
import torch
import torch.nn as nn

class Net(nn.Module):
    def forward(self, x):
        return x + torch.ones(x.size(-1)).cuda(self.rank)
""",
    ),
    # dev set: zeros to xdevice
    Example(
        """
import torch
import torch.nn as nn


class SlotAttention(nn.Module):
    def __init__(self, num_slots, dim):
        super().__init__()
        self.num_slots = num_slots
        self.dim = dim
        self.gru = nn.GRUCell(dim, dim)

    def forward(self, inputs):
        b, n, d = inputs.shape
        slots = torch.zeros(b, self.num_slots, d).to(inputs.device)
        for _ in range(3):
            slots = self.gru(inputs.mean(1), slots.reshape(-1, d)).reshape(b, -1, d)
        return slots
""",
        fixed="""
import torch
import torch.nn as nn


class SlotAttention(nn.Module):
    def __init__(self, num_slots, dim):
        super().__init__()
        self.num_slots = num_slots
        self.dim = dim
        self.gru = nn.GRUCell(dim, dim)

    def forward(self, inputs):
        b, n, d = inputs.shape
        slots = torch.zeros(b, self.num_slots, d, device=inputs.device)
        for _ in range(3):
            slots = self.gru(inputs.mean(1), slots.reshape(-1, d)).reshape(b, -1, d)
        return slots
""",
    ),
    # dev set: type as
    Example(
        """
import torch
import torch.nn as nn


class MaskedConv(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x, lengths):
        mask = torch.ones(x.size(0), 1, x.size(2), x.size(3)).type_as(x)
        return self.conv(x * mask)
""",
        fixed="""
import torch
import torch.nn as nn


class MaskedConv(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x, lengths):
        mask = torch.ones(x.size(0), 1, x.size(2), x.size(3), device=x.device, dtype=x.dtype)
        return self.conv(x * mask)
""",
    ),
    # dev set: arange unsqueeze
    Example(
        """
import torch
import torch.nn as nn


class PosEmbed(nn.Module):
    def __init__(self, max_len, dim):
        super().__init__()
        self.emb = nn.Embedding(max_len, dim)

    def forward(self, x):
        L = x.size(1)
        position_ids = torch.arange(L).unsqueeze(0).to(x.device)
        return x + self.emb(position_ids)
""",
        fixed="""
import torch
import torch.nn as nn


class PosEmbed(nn.Module):
    def __init__(self, max_len, dim):
        super().__init__()
        self.emb = nn.Embedding(max_len, dim)

    def forward(self, x):
        L = x.size(1)
        position_ids = torch.arange(L, device=x.device).unsqueeze(0)
        return x + self.emb(position_ids)
""",
    ),
    # dev set: variable cuda
    Example(
        """
import torch
import torch.nn as nn
from torch.autograd import Variable


class LSTMClassifier(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        h0 = Variable(torch.zeros(self.num_layers, x.size(0), self.hidden_size)).cuda()
        c0 = Variable(torch.zeros(self.num_layers, x.size(0), self.hidden_size).cuda())
        out, _ = self.lstm(x, (h0, c0))
        return self.fc(out[:, -1, :])
""",
        fixed="""
import torch
import torch.nn as nn
from torch.autograd import Variable


class LSTMClassifier(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        h0 = Variable(torch.zeros(self.num_layers, x.size(0), self.hidden_size, device="cuda"))
        c0 = Variable(torch.zeros(self.num_layers, x.size(0), self.hidden_size, device="cuda"))
        out, _ = self.lstm(x, (h0, c0))
        return self.fc(out[:, -1, :])
""",
    ),
    # dev set: init hidden
    Example(
        """
import torch
import torch.nn as nn


class CharRNN(nn.Module):
    def __init__(self, vocab, hidden, layers, device):
        super().__init__()
        self.hidden = hidden
        self.layers = layers
        self.device = device
        self.embed = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden, layers)
        self.out = nn.Linear(hidden, vocab)

    def init_hidden(self, batch):
        return torch.zeros(self.layers, batch, self.hidden).to(self.device)

    def forward(self, tokens):
        h = self.init_hidden(tokens.size(1))
        y, h = self.gru(self.embed(tokens), h)
        return self.out(y)
""",
        fixed="""
import torch
import torch.nn as nn


class CharRNN(nn.Module):
    def __init__(self, vocab, hidden, layers, device):
        super().__init__()
        self.hidden = hidden
        self.layers = layers
        self.device = device
        self.embed = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden, layers)
        self.out = nn.Linear(hidden, vocab)

    def init_hidden(self, batch):
        return torch.zeros(self.layers, batch, self.hidden, device=self.device)

    def forward(self, tokens):
        h = self.init_hidden(tokens.size(1))
        y, h = self.gru(self.embed(tokens), h)
        return self.out(y)
""",
    ),
    # dev set: init hidden from loop
    Example(
        """
import torch
import torch.nn as nn


class RNNLM(nn.Module):
    def __init__(self, ntoken, nhid, nlayers):
        super().__init__()
        self.nhid, self.nlayers = nhid, nlayers
        self.rnn = nn.LSTM(nhid, nhid, nlayers)

    def init_hidden(self, bsz):
        return (torch.zeros(self.nlayers, bsz, self.nhid).cuda(),
                torch.zeros(self.nlayers, bsz, self.nhid).cuda())

    def forward(self, x, hidden):
        return self.rnn(x, hidden)


def train(model, loader, optimizer, criterion):
    model.train()
    for data, targets in loader:
        hidden = model.init_hidden(data.size(1))
        output, hidden = model(data.cuda(), hidden)
        loss = criterion(output.view(-1, output.size(-1)), targets.cuda().view(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        fixed="""
import torch
import torch.nn as nn


class RNNLM(nn.Module):
    def __init__(self, ntoken, nhid, nlayers):
        super().__init__()
        self.nhid, self.nlayers = nhid, nlayers
        self.rnn = nn.LSTM(nhid, nhid, nlayers)

    def init_hidden(self, bsz):
        return (torch.zeros(self.nlayers, bsz, self.nhid, device="cuda"),
                torch.zeros(self.nlayers, bsz, self.nhid, device="cuda"))

    def forward(self, x, hidden):
        return self.rnn(x, hidden)


def train(model, loader, optimizer, criterion):
    model.train()
    for data, targets in loader:
        hidden = model.init_hidden(data.size(1))
        output, hidden = model(data.cuda(), hidden)
        loss = criterion(output.view(-1, output.size(-1)), targets.cuda().view(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
    ),
    # dev set: GAN labels sized by the batch in a loop (the noise already built with device=)
    Example(
        """
import torch


def train_gan(G, D, loader, opt_g, opt_d, device, z_dim=100):
    bce = torch.nn.BCEWithLogitsLoss()
    for epoch in range(25):
        for real, _ in loader:
            real = real.to(device)
            b = real.size(0)
            noise = torch.randn(b, z_dim, 1, 1, device=device)
            fake = G(noise)
            ones = torch.ones(b).to(device)
            loss_d = bce(D(real).view(-1), ones) + bce(D(fake.detach()).view(-1), torch.zeros_like(ones))
            opt_d.zero_grad()
            loss_d.backward()
            opt_d.step()
""",
        fixed="""
import torch


def train_gan(G, D, loader, opt_g, opt_d, device, z_dim=100):
    bce = torch.nn.BCEWithLogitsLoss()
    for epoch in range(25):
        for real, _ in loader:
            real = real.to(device)
            b = real.size(0)
            noise = torch.randn(b, z_dim, 1, 1, device=device)
            fake = G(noise)
            ones = torch.ones(b, device=device)
            loss_d = bce(D(real).view(-1), ones) + bce(D(fake.detach()).view(-1), torch.zeros_like(ones))
            opt_d.zero_grad()
            loss_d.backward()
            opt_d.step()
""",
    ),
    # dev set: legacy ctor
    Example(
        """
import torch
import torch.nn as nn


class Attn(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.hidden = hidden
        self.score = nn.Linear(hidden * 2, 1)

    def forward(self, hidden, encoder_outputs):
        seq_len, batch = encoder_outputs.size(0), encoder_outputs.size(1)
        energies = torch.FloatTensor(batch, seq_len).zero_().cuda()
        for i in range(seq_len):
            energies[:, i] = self.score(torch.cat([hidden, encoder_outputs[i]], 1)).squeeze(1)
        return torch.softmax(energies, dim=1)
""",
    ),
    # dev set: ones float cuda
    Example(
        """
import torch
import torch.nn as nn


class Disc(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(10, 1)

    def forward(self, x):
        bias = torch.ones(x.size(0), 1).float().cuda()
        return self.net(x) + bias
""",
        fixed="""
import torch
import torch.nn as nn


class Disc(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(10, 1)

    def forward(self, x):
        bias = torch.ones(x.size(0), 1, device="cuda").float()
        return self.net(x) + bias
""",
    ),
    # dev set: tril mask
    Example(
        """
import torch
import torch.nn as nn


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x):
        T = x.size(1)
        mask = torch.ones(T, T).triu(1).bool().to(x.device)
        out, _ = self.attn(x, x, x, attn_mask=mask)
        return out
""",
        fixed="""
import torch
import torch.nn as nn


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x):
        T = x.size(1)
        mask = torch.ones(T, T, device=x.device).triu(1).bool()
        out, _ = self.attn(x, x, x, attn_mask=mask)
        return out
""",
    ),
    # dev set: train step helper
    Example(
        """
import torch


def train_step(model, batch, optimizer, device, sigma):
    x = batch.to(device)
    noise = torch.randn(x.shape[0], x.shape[1]).to(device)
    loss = ((model(x + sigma * noise) - x) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def train(model, loader, optimizer, device, epochs):
    for epoch in range(epochs):
        for batch in loader:
            train_step(model, batch, optimizer, device, 0.1)
""",
        unsafe_fixed="""
import torch


def train_step(model, batch, optimizer, device, sigma):
    x = batch.to(device)
    noise = torch.randn(x.shape[0], x.shape[1], device=device)
    loss = ((model(x + sigma * noise) - x) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def train(model, loader, optimizer, device, epochs):
    for epoch in range(epochs):
        for batch in loader:
            train_step(model, batch, optimizer, device, 0.1)
""",
    ),
    # dev set: lightning step
    Example(
        """
import torch
import pytorch_lightning as pl


class VAE(pl.LightningModule):
    def __init__(self, enc, dec, z_dim):
        super().__init__()
        self.enc, self.dec, self.z_dim = enc, dec, z_dim

    def training_step(self, batch, batch_idx):
        x, _ = batch
        mu, logvar = self.enc(x)
        eps = torch.randn(x.size(0), self.z_dim).to(self.device)
        z = mu + eps * torch.exp(0.5 * logvar)
        loss = ((self.dec(z) - x) ** 2).mean()
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
""",
        unsafe_fixed="""
import torch
import pytorch_lightning as pl


class VAE(pl.LightningModule):
    def __init__(self, enc, dec, z_dim):
        super().__init__()
        self.enc, self.dec, self.z_dim = enc, dec, z_dim

    def training_step(self, batch, batch_idx):
        x, _ = batch
        mu, logvar = self.enc(x)
        eps = torch.randn(x.size(0), self.z_dim, device=self.device)
        z = mu + eps * torch.exp(0.5 * logvar)
        loss = ((self.dec(z) - x) ** 2).mean()
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
""",
    ),
    # dev set: to device kw self
    Example(
        """
import torch
import torch.nn as nn


class Decoder(nn.Module):
    def __init__(self, vocab, dim, device):
        super().__init__()
        self.device = device
        self.vocab = vocab
        self.rnn = nn.GRUCell(dim, dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, h, steps):
        batch = h.size(0)
        logits = torch.zeros(batch, steps, self.vocab).to(device=self.device)
        for t in range(steps):
            h = self.rnn(torch.zeros_like(h), h)
            logits[:, t] = self.out(h)
        return logits
""",
        fixed="""
import torch
import torch.nn as nn


class Decoder(nn.Module):
    def __init__(self, vocab, dim, device):
        super().__init__()
        self.device = device
        self.vocab = vocab
        self.rnn = nn.GRUCell(dim, dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, h, steps):
        batch = h.size(0)
        logits = torch.zeros(batch, steps, self.vocab, device=self.device)
        for t in range(steps):
            h = self.rnn(torch.zeros_like(h), h)
            logits[:, t] = self.out(h)
        return logits
""",
    ),
    # dev set: local rank
    Example(
        """
import torch


def train(model, loader, optimizer, local_rank, num_classes):
    for x, y in loader:
        x = x.to(local_rank)
        onehot = torch.zeros(y.size(0), num_classes).to(local_rank)
        onehot.scatter_(1, y.view(-1, 1).to(local_rank), 1.0)
        loss = -(onehot * torch.log_softmax(model(x), 1)).sum(1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
    ),
]
