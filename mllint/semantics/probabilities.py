"""Which expressions hold softmax (log_softmax, sigmoid) output, and which callables are the
losses that must not get it (cross-entropy, BCEWithLogitsLoss, NLLLoss).

``softmax_origin(m, expr, scope)`` answers "did this value just come out of a softmax?"
by following the value back through:

- direct calls: ``F.softmax(z, dim=1)``, ``torch.softmax(z, 1)``, ``z.softmax(-1)``,
  ``nn.Softmax(dim=1)(z)``, a module attribute bound to ``nn.Softmax`` (``self.sm(z)``);
- shape-only methods that keep the values (``.view``, ``.reshape``, ``.squeeze``,
  ``.float()``, ``.to(...)``, subscripts);
- names: the last assignment before the use in the same function;
- calls of functions and methods defined in the file, whose every ``return`` gives softmax
  output (a helper ``predict(x)``, ``self.head(x)``);
- calls of models: an instance of a class defined in the file whose ``forward`` returns
  softmax output on every path, or an ``nn.Sequential`` whose last layer is ``nn.Softmax``;
  parameters of a function are what every caller in the file passes (its default when a
  caller leaves it out, or when no call in the file may reach the function);
- ``a, b = f(x)``: element ``i`` of every tuple ``f`` (a function, method or model of this
  file) returns; ``for row in probs:``: each element of what the loop iterates;
- ``out["prob"]``: the entry under that key of every dict display ``f`` returns;
- ``self(x)`` in a method (a LightningModule's ``training_step``): the class's ``forward``;
  ``net.predict_proba(x)``: that method of the class ``net`` is an instance of (not when a
  subclass in the file overrides it);
- a parameter never rebound: what every call of the function in the file passes
  (``compute_loss(pred, y)``); ``torch.squeeze(p, 1)`` and the other functional shape ops;
  models wrapped in ``nn.DataParallel``/``torch.compile``, ``nn.Sequential(OrderedDict([...]))``
  and ``nn.Sequential(*layers)`` of a list display never changed;
  a name rebound by an unpacking before its last plain assignment (``output, hidden =
  self.gru(...)`` then ``output = self.softmax(...)``).

It answers with the node that applies the softmax (a call, or the ``nn.Softmax(...)``
layer inside a Sequential), or None. ``log_softmax``/``nn.LogSoftmax`` are not softmax
here: cross-entropy after them is harmless (log_softmax is idempotent). A whole tuple
(model returning logits and probabilities), a dict, anything computed from the probabilities
(``torch.log(p)``, ``p * mask``) are not followed: None.

The same tracing serves each ``Kind``: ``SOFTMAX``, ``LOG_SOFTMAX`` and ``SIGMOID``
(``torch.sigmoid``, ``F.sigmoid``, ``torch.special.expit``, ``z.sigmoid()``, ``nn.Sigmoid``).

``loss_of(m, func, scope)``: which ``Loss`` the callee computes: ``CROSS_ENTROPY``
(``F.cross_entropy`` / ``nn.CrossEntropyLoss``; must not get softmax or log_softmax output),
``BCE_WITH_LOGITS`` (``F.binary_cross_entropy_with_logits`` / ``nn.BCEWithLogitsLoss``; must
not get sigmoid output) or ``NLL`` (``F.nll_loss`` / ``nn.NLLLoss``; must not get softmax
output), directly or through a callable bound to the class (a name, ``self.criterion``, a
parameter every caller hands one or that defaults to one, or ``nn.NLLLoss()(...)`` inline).
``is_cross_entropy`` is ``loss_of(...) is CROSS_ENTROPY``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, List, Optional, Tuple

import libcst as cst

from mllint.semantics.model import CALL, MODULE_SCOPE, FileModel
from mllint.semantics.names import call_argument, dotted

SOFTMAX_FUNCTIONS = frozenset({"torch.nn.functional.softmax", "torch.softmax", "torch.special.softmax"})
SOFTMAX_LAYERS = frozenset({"torch.nn.Softmax", "torch.nn.modules.activation.Softmax"})
CROSS_ENTROPY_FUNCTIONS = frozenset({"torch.nn.functional.cross_entropy"})
CROSS_ENTROPY_LOSSES = frozenset({"torch.nn.CrossEntropyLoss", "torch.nn.modules.loss.CrossEntropyLoss"})
_KEEP_VALUES = frozenset({
    "view", "reshape", "squeeze", "unsqueeze", "contiguous", "float", "double", "half", "to", "cuda", "cpu",
    "permute", "transpose", "flatten", "view_as", "reshape_as", "type_as", "clone", "t", "resize", "resize_as",
})
# torch.squeeze(p, 1), torch.flatten(p): the functional forms of shape-only methods
_KEEP_FUNCTIONS = frozenset("torch." + name for name in (
    "squeeze", "unsqueeze", "reshape", "flatten", "permute", "transpose", "t", "clone", "ravel"))
# objects that call the module they wrap: nn.DataParallel(net), torch.compile(net)
_MODULE_WRAPPERS = frozenset({
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.data_parallel.DataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.compile"})
LOG_SOFTMAX_FUNCTIONS = frozenset({"torch.nn.functional.log_softmax", "torch.log_softmax", "torch.special.log_softmax"})
LOG_SOFTMAX_LAYERS = frozenset({"torch.nn.LogSoftmax", "torch.nn.modules.activation.LogSoftmax"})
SIGMOID_FUNCTIONS = frozenset({"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit"})
SIGMOID_LAYERS = frozenset({"torch.nn.Sigmoid", "torch.nn.modules.activation.Sigmoid"})
BCE_WITH_LOGITS_FUNCTIONS = frozenset({"torch.nn.functional.binary_cross_entropy_with_logits",
                                       "torch.binary_cross_entropy_with_logits"})
BCE_WITH_LOGITS_LOSSES = frozenset({"torch.nn.BCEWithLogitsLoss", "torch.nn.modules.loss.BCEWithLogitsLoss"})
NLL_FUNCTIONS = frozenset({"torch.nn.functional.nll_loss"})
NLL_LOSSES = frozenset({"torch.nn.NLLLoss", "torch.nn.modules.loss.NLLLoss", "torch.nn.NLLLoss2d"})


@dataclass(frozen=True)
class Kind:
    """What is traced: the softmax (probabilities) or the log_softmax (log-probabilities)."""

    name: str
    functions: FrozenSet[str]  # F.softmax, torch.softmax
    method: str  # z.softmax(1)
    layers: FrozenSet[str]  # nn.Softmax


SOFTMAX = Kind("softmax", SOFTMAX_FUNCTIONS, "softmax", SOFTMAX_LAYERS)
LOG_SOFTMAX = Kind("log_softmax", LOG_SOFTMAX_FUNCTIONS, "log_softmax", LOG_SOFTMAX_LAYERS)
SIGMOID = Kind("sigmoid", SIGMOID_FUNCTIONS, "sigmoid", SIGMOID_LAYERS)


@dataclass(frozen=True)
class Loss:
    """A loss and the kinds of output it must not be given (it computes them itself, or it
    expects something else)."""

    name: str  # the class: "CrossEntropyLoss"
    function: str  # the functional form: "cross_entropy"
    functions: FrozenSet[str]  # F.cross_entropy
    classes: FrozenSet[str]  # nn.CrossEntropyLoss
    kinds: Tuple[Kind, ...]  # tried in this order


CROSS_ENTROPY = Loss("CrossEntropyLoss", "cross_entropy", CROSS_ENTROPY_FUNCTIONS, CROSS_ENTROPY_LOSSES,
                     (SOFTMAX, LOG_SOFTMAX))
BCE_WITH_LOGITS = Loss("BCEWithLogitsLoss", "binary_cross_entropy_with_logits", BCE_WITH_LOGITS_FUNCTIONS,
                       BCE_WITH_LOGITS_LOSSES, (SIGMOID,))
NLL = Loss("NLLLoss", "nll_loss", NLL_FUNCTIONS, NLL_LOSSES, (SOFTMAX,))
LOSSES = (CROSS_ENTROPY, BCE_WITH_LOGITS, NLL)
_WRAPPERS = frozenset({"to", "cuda", "cpu", "float", "double", "half", "train", "eval"})
_MAX_DEPTH = 14
# Calling the object is the softmax (it is an ``nn.Softmax`` layer): the caller reports its call.
_CALL_SITE = cst.Name("__softmax_layer_call__")


def _qual(m: FileModel, func: cst.BaseExpression) -> str:
    return m.imports.qualname(func) or ""


def _is_qual(m: FileModel, func: cst.BaseExpression, names) -> bool:
    qual = _qual(m, func)
    if qual in names:
        return True
    # ``nn.Softmax`` with ``from torch import nn``: qualname gives torch.nn.Softmax already;
    # a bare ``nn.`` (unresolved import) is taken as torch.nn.
    return qual.startswith("nn.") and ("torch." + qual) in names


def _first_arg(call: cst.Call, keyword: str = "input") -> Optional[cst.BaseExpression]:
    return call_argument(call, 0, keyword)


def _bindings(m: FileModel, ref: str, scope: str) -> List[Tuple[cst.BaseExpression, str]]:
    """Values assigned to ``ref`` alone, seen from ``scope``: in the scope itself, else (for
    ``self.x``) in the class's methods, else at module level."""
    own = [(v, c.scope) for t, v, c in m.assignments_to(ref) if c.scope == scope]
    if own:
        return own
    cls_scope = m.class_scope_of(scope) if scope != MODULE_SCOPE else None
    if ref.startswith("self.") and cls_scope is not None:
        found = [(v, c.scope) for t, v, c in m.assignments_to(ref) if m.class_scope_of(c.scope) == cls_scope]
        if found:
            return found
    fn = m.functions.get(scope)
    head = ref.split(".", 1)[0]
    if fn is not None and head in fn.params:
        return []
    if scope != MODULE_SCOPE and "." in scope and head not in m.locals.get(scope, ()):
        parent = scope.rsplit(".", 1)[0]
        if parent in m.functions:
            return _bindings(m, ref, parent)
    if head in m.locals.get(scope, ()) and scope != MODULE_SCOPE:
        return []
    return [(v, c.scope) for t, v, c in m.assignments_to(ref) if c.scope == MODULE_SCOPE]


def _caller_arguments(m: FileModel, scope: str, param: str) -> Optional[List[Tuple[cst.BaseExpression, str]]]:
    """What every call of function ``scope`` in the file passes for ``param`` (None: some call
    we cannot read, or no call at all)."""
    fn = m.functions.get(scope)
    if fn is None or param not in fn.params or param in ("self", "cls"):
        return None
    index = fn.params.index(param) - (1 if fn.cls is not None else 0)
    found = []
    calls = [(e.node, e.ctx.scope) for e in m.effects
             if e.kind == CALL and e.callee == fn.key and isinstance(e.node, cst.Call)]
    if fn.key.rsplit(".", 1)[-1] == "__init__" and fn.cls is not None and fn.cls in m.classes:
        calls += [(c, ctx.scope) for c, ctx in m.calls if dotted(c.func) == fn.cls]  # Cls(...) runs __init__
    for call, where in calls:
        arg = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == param), None)
        positional = [a for a in call.args if a.keyword is None]
        if arg is None and 0 <= index < len(positional) and not any(a.star for a in positional[: index + 1]):
            arg = positional[index].value
        if arg is None and not any(a.star for a in call.args):
            arg = _param_default(fn.node, param)  # not passed: the default
            if arg is not None:
                found.append((arg, fn.key))
                continue
        if arg is None:
            return None
        found.append((arg, where))
    if not found:
        # no call of it in the file (a class used elsewhere): what it holds when not passed
        default = _param_default(fn.node, param)
        if default is None or _maybe_called(m, fn):
            return None
        return [(default, fn.key)]
    return found


def _maybe_called(m: FileModel, fn) -> bool:
    """Whether some call in the file may call ``fn`` (by its name, or its class's name for
    ``__init__``): then its parameter's default is not known to be what it holds."""
    name = fn.key.rsplit(".", 1)[-1]
    names = {name}
    cls_name = (fn.cls or "").rsplit(".", 1)[-1]
    if name == "__init__" and fn.cls is not None:
        names = {cls_name}
    for call, ctx in m.calls:
        func = call.func
        called = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if called in names:
            return True
        if name == "__init__" and called == "__init__":
            # super().__init__(...) in a subclass, or Base.__init__(self, ...)
            if dotted(func.value) == cls_name:
                return True
            scope_cls = m.class_scope_of(ctx.scope) if ctx.scope != MODULE_SCOPE else None
            info = m.classes.get(scope_cls.rsplit(".", 1)[-1]) if scope_cls else None
            if info is not None and any(b.rsplit(".", 1)[-1] == cls_name for b in info.bases):
                return True
        if any(dotted(a.value) == name or (dotted(a.value) or "").endswith("." + name) for a in call.args):
            return True  # handed as a callable (partial(f, ...), Trainer(model_fn=f)): called elsewhere
    return False


def _param_default(fn: cst.FunctionDef, param: str) -> Optional[cst.BaseExpression]:
    """The default value of parameter ``param`` (``loss=nn.CrossEntropyLoss()``), if any."""
    for p in list(fn.params.params) + list(fn.params.kwonly_params) + list(fn.params.posonly_params):
        if p.name.value == param:
            return p.default
    return None


def _unwrap(value: cst.BaseExpression) -> cst.BaseExpression:
    """``Net().to(device).cuda()`` -> ``Net()``."""
    while (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
           and value.func.attr.value in _WRAPPERS and isinstance(value.func.value, cst.Call)):
        value = value.func.value
    return value


def _values_of(m: FileModel, ref: str, scope: str, depth: int) -> Optional[List[Tuple[cst.BaseExpression, str]]]:
    """What the object ``ref`` may be: its bindings, or its callers' arguments for a parameter."""
    fn = m.functions.get(scope)
    head = ref.split(".", 1)[0]
    if fn is not None and ref == head and head in fn.params and head not in ("self", "cls"):
        if not any(c.scope == scope for t, _v, c in m.assignments_to(ref)):
            if depth >= _MAX_DEPTH:
                return None
            return _caller_arguments(m, scope, ref)
    values = _bindings(m, ref, scope)
    return values or None


def project_model_origin(m: FileModel, expr: cst.BaseExpression, scope: str, kind: "Kind" = None,
                         depth: int = 0) -> Optional[Tuple[cst.Call, str]]:
    """``(call, where)`` when `expr` is the output of a model whose class is defined in another
    file of the project and whose ``forward`` returns `kind` output on every path (``out =
    net(x)`` with ``net = Net()`` from ``models.py``); `where` is ``path:line`` of that class."""
    kind = kind or SOFTMAX
    if m.project is None or depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Subscript):
        if _string_key(expr) is not None:
            return None  # out["logits"]: one entry of a dict
        return project_model_origin(m, expr.value, scope, kind, depth + 1)
    if isinstance(expr, cst.Name):
        values = _bindings(m, expr.value, scope)
        if values and len(values) > 1:
            last = _last_plain_value(m, expr.value, scope, expr)
            values = [(last, scope)] if last is not None else None
        if not values or len(values) != 1:
            return None
        return project_model_origin(m, values[0][0], values[0][1], kind, depth + 1)
    if not isinstance(expr, cst.Call):
        return None
    if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _KEEP_VALUES \
            and not _is_qual(m, expr.func, _KEEP_FUNCTIONS):
        return project_model_origin(m, expr.func.value, scope, kind, depth + 1)  # model(x).squeeze(1)
    if _is_qual(m, expr.func, _KEEP_FUNCTIONS) and _first_arg(expr) is not None:
        return project_model_origin(m, _first_arg(expr), scope, kind, depth + 1)  # torch.squeeze(out)
    ref = dotted(expr.func)
    if ref is None:
        return None
    if ref.endswith(".forward"):
        ref = ref[: -len(".forward")]
    values = _values_of(m, ref, scope, depth)
    if not values:
        fn = m.functions.get(scope)
        if fn is not None and ref in fn.params and not m.assigns_locally(scope, ref):
            # a parameter: what the callers in other files pass (``train(encoder, classifier)``
            # called with ``classifier = models.Classifier()``)
            passed = m.project.argument_forward_returns(scope, ref)
            if passed is not None and passed[0] == kind.name:
                return expr, passed[1]
        return None
    if len(values) != 1:
        return None
    built = _unwrap(_unwrap_wrapper(m, _unwrap(values[0][0])))
    if not isinstance(built, cst.Call):
        return None
    qual = m.imports.qualname(built.func)
    if not qual or m.project.forward_returns(qual) != kind.name:
        return None
    return expr, m.project.where(qual) or qual


def _last_plain_value(m: FileModel, ref: str, scope: str, at: cst.CSTNode) -> Optional[cst.BaseExpression]:
    """The value of the last plain assignment ``ref = value`` in `scope` before `at`, when the use
    sees that one: not under a condition, and every other binding of ``ref`` in the scope (an
    unpacking, a loop variable, another assignment) comes before it, outside loops."""
    here = m.position(at).start
    plain, others = [], []
    for targets, value, ctx in m.assignments:
        if ctx.scope != scope or ref not in targets:
            continue
        pos = m.position(value).start
        (plain if targets == (ref,) else others).append(((pos.line, pos.column), value, ctx))
    others += [((m.position(loop.node).start.line, m.position(loop.node).start.column), None, None)
               for loop in m.loops if loop.scope == scope and ref in loop.targets]
    before = sorted((p for p in plain if p[0] < (here.line, here.column)), key=lambda p: p[0])
    if not before:
        return None
    pos, value, ctx = before[-1]
    if ctx.conds or ctx.loop is not None:
        return None
    if any(o[0] >= pos for o in others) or any(p[0] > (here.line, here.column) for p in plain):
        return None
    return value


# --- cross-entropy losses -----------------------------------------------------------------------


def is_cross_entropy(m: FileModel, func: cst.BaseExpression, scope: str, depth: int = 0) -> bool:
    """Whether calling ``func`` computes ``CrossEntropyLoss``/``cross_entropy`` of its first argument."""
    return loss_of(m, func, scope, depth) is CROSS_ENTROPY


def _named_loss(m: FileModel, func: cst.BaseExpression, classes: bool) -> Optional[Loss]:
    """The loss ``func`` names: its functional form (``F.nll_loss``), or with `classes` its
    class (``nn.NLLLoss``)."""
    for loss in LOSSES:
        if _is_qual(m, func, loss.classes if classes else loss.functions):
            return loss
    return None


def loss_of(m: FileModel, func: cst.BaseExpression, scope: str, depth: int = 0) -> Optional[Loss]:
    """Which of LOSSES calling ``func`` computes on its first argument: ``F.cross_entropy``,
    ``F.binary_cross_entropy_with_logits``, ``F.nll_loss``, or a callable bound to the loss's
    class (a name, ``self.criterion``, a parameter every caller hands one or that defaults to
    one, ``nn.NLLLoss()(...)`` inline); None when not known, or when the bindings disagree."""
    if depth > _MAX_DEPTH:
        return None
    found = _named_loss(m, func, classes=False)
    if found is not None:
        return found
    if isinstance(func, cst.Call):
        return _named_loss(m, func.func, classes=True)
    if isinstance(func, cst.Attribute) and func.attr.value == "forward":
        return loss_of(m, func.value, scope, depth + 1)  # criterion.forward(out, y)
    ref = dotted(func)
    if ref is None:
        return None
    values = _values_of(m, ref, scope, depth)
    if not values:
        return None
    losses = set()
    for value, where in values:
        value = _unwrap(value)
        loss = None
        if isinstance(value, cst.Call):
            loss = _named_loss(m, value.func, classes=True)
        if loss is None:
            loss = _named_loss(m, value, classes=False)  # loss_fn = F.cross_entropy
        if loss is None and isinstance(value, (cst.Name, cst.Attribute)):
            loss = loss_of(m, value, where, depth + 1)
        if loss is None:
            return None
        losses.add(loss)
    return losses.pop() if len(losses) == 1 else None


# --- softmax output -----------------------------------------------------------------------------


def softmax_origin(m: FileModel, expr: cst.BaseExpression, scope: str, at: Optional[cst.CSTNode] = None,
                   depth: int = 0, kind: Kind = SOFTMAX) -> Optional[cst.CSTNode]:
    """The node that applied a softmax to the value of ``expr`` (evaluated in ``scope``,
    at the statement holding ``at``), or None when it is not known to be softmax output."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Subscript):
        key = _string_key(expr)
        if key is not None:
            # ``out["prob"]``: the value stored under that key by every ``return {...}`` of the
            # call ``out`` holds (a dict of tensors is not itself softmax output)
            return _keyed_origin(m, expr.value, key, scope, at or expr, depth + 1, kind=kind)
        return softmax_origin(m, expr.value, scope, at, depth + 1, kind=kind)
    if isinstance(expr, cst.Name) or isinstance(expr, cst.Attribute) and dotted(expr) is not None:
        return _name_origin(m, dotted(expr), scope, at or expr, depth, kind=kind)
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    if _is_qual(m, func, kind.functions):
        return expr
    if isinstance(func, cst.Attribute) and func.attr.value == kind.method and not tensor_method_receiver(m, func):
        return _callee_origin(m, expr, scope, depth, kind=kind)  # self.softmax(x): a layer or method
    if isinstance(func, cst.Attribute) and func.attr.value == kind.method:
        if _is_module_path(m, func.value):
            return None  # another library's softmax (scipy.special.softmax)
        return expr  # z.softmax(dim=1)
    if isinstance(func, cst.Call) and _is_qual(m, func.func, kind.layers):
        return expr  # nn.Softmax(dim=1)(z)
    exp_of = _exp_argument(m, expr) if kind is SOFTMAX else None
    if exp_of is not None:
        # torch.exp(F.log_softmax(z, 1)): softmax spelled out
        return expr if _is_log_softmax(m, exp_of, scope, depth + 1) else None
    if _is_qual(m, func, _KEEP_FUNCTIONS) and _first_arg(expr) is not None:
        return softmax_origin(m, _first_arg(expr), scope, at, depth + 1, kind=kind)  # torch.squeeze(p, 1)
    if isinstance(func, cst.Attribute) and func.attr.value in _KEEP_VALUES:
        return softmax_origin(m, func.value, scope, at, depth + 1, kind=kind)
    # a call of a function, method or module defined in (or built in) this file
    return _callee_origin(m, expr, scope, depth, kind=kind)


def _exp_argument(m: FileModel, call: cst.Call) -> Optional[cst.BaseExpression]:
    """``z`` of ``torch.exp(z)`` or ``z.exp()``."""
    if m.imports.qualname(call.func) == "torch.exp":
        return _first_arg(call)
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "exp" and not call.args:
        if dotted(call.func.value) is None or not _is_module_path(m, call.func.value):
            return call.func.value
    return None


def _is_log_softmax(m: FileModel, expr: cst.BaseExpression, scope: str, depth: int) -> bool:
    """A direct log_softmax: ``F.log_softmax(z)``, ``z.log_softmax(1)``, an ``nn.LogSoftmax`` layer called."""
    if isinstance(expr, (cst.Name, cst.Attribute)):
        ref = dotted(expr)
        values = _values_of(m, ref, scope, depth) if ref else None
        return bool(values) and len(values) == 1 and isinstance(values[0][0], cst.Call) and _is_log_softmax(
            m, values[0][0], values[0][1], depth + 1)
    if not isinstance(expr, cst.Call) or depth > _MAX_DEPTH:
        return False
    func = expr.func
    if _is_qual(m, func, LOG_SOFTMAX_FUNCTIONS):
        return True
    if isinstance(func, cst.Attribute) and func.attr.value == "log_softmax" and tensor_method_receiver(m, func):
        return not _is_module_path(m, func.value)
    if isinstance(func, cst.Call) and _is_qual(m, func.func, LOG_SOFTMAX_LAYERS):
        return True
    ref = dotted(func)
    if ref is not None and ref.startswith("self.") and ref.count(".") == 1:
        values = _values_of(m, ref, scope, depth)
        return bool(values) and all(isinstance(v, cst.Call) and _is_qual(m, v.func, LOG_SOFTMAX_LAYERS) for v, _ in values)
    return False


def tensor_method_receiver(m: FileModel, func: cst.Attribute) -> bool:
    """``z.softmax(...)`` is the tensor method (not ``self.softmax``, a layer or method of the model)."""
    receiver = dotted(func.value)
    return receiver not in ("self", "cls")


def _is_module_path(m: FileModel, node: cst.BaseExpression) -> bool:
    """``torch.special``, ``F``, ``scipy.special``: a module, not a tensor."""
    qual = m.imports.qualname(node) or ""
    head = (dotted(node) or "").split(".", 1)[0]
    return head in m.imports.aliases and head not in m.locals.get(MODULE_SCOPE, ()) and bool(qual)


def _name_origin(m: FileModel, ref: Optional[str], scope: str, at: cst.CSTNode, depth: int, kind: Kind = SOFTMAX) -> Optional[cst.CSTNode]:
    if ref is None:
        return None
    here = m.position(at).start
    earlier = []
    for targets, value, ctx in m.assignments:
        if ctx.scope != scope or targets != (ref,):
            continue
        pos = m.position(value).start
        if (pos.line, pos.column) < (here.line, here.column):
            earlier.append((pos.line, pos.column, value, ctx))
    unpacked = [(t, v) for t, v, c in m.assignments if c.scope == scope and t != (ref,) and ref in t]
    loops = [loop for loop in m.loops if loop.scope == scope and ref in loop.targets]
    if not earlier and not unpacked and not loops:
        # a parameter: what every call of the function in the file passes (``compute_loss(pred,
        # y)`` called with ``torch.sigmoid(logits)``)
        return _parameter_origin(m, ref, scope, depth, kind)
    if not earlier:
        if len(unpacked) == 1 and not loops:
            # ``logits, probs = model(x)``: bound once, by unpacking what a call returns
            targets, value = unpacked[0]
            if m.position(value).start.line < here.line and isinstance(value, cst.Call):
                return _element_origin(m, value, scope, targets.index(ref), len(targets), depth + 1, kind=kind)
        if len(loops) == 1 and not unpacked and loops[0].targets == (ref,) and isinstance(loops[0].node, cst.For):
            # ``for row in probs:``: each element of softmax output is softmax output
            loop = loops[0]
            if loop.node.iter is not None and m.position(loop.node).start.line < here.line:
                return softmax_origin(m, loop.node.iter, scope, loop.node, depth + 1, kind=kind)
        return None
    earlier.sort(key=lambda e: (e[0], e[1]))
    _l, _c, value, ctx = earlier[-1]
    # rebound in a loop of the scope, or in another way than a plain assignment: not followed,
    # unless every such binding comes before the last plain one, which is unconditional
    # (``output, hidden = self.gru(x, h)`` then ``output = self.softmax(self.out(output))``)
    if unpacked or loops:
        others = [m.position(v).start for _t, v in unpacked] + [m.position(loop.node).start for loop in loops]
        if ctx.conds or ctx.loop is not None or any((p.line, p.column) >= (_l, _c) for p in others):
            return None
    if len(earlier) > 1 and ctx.conds:
        return None  # `if ...: out = softmax(out)`: the use may see the other value
    return softmax_origin(m, value, scope, value, depth + 1, kind=kind)


def _parameter_origin(m: FileModel, ref: str, scope: str, depth: int, kind: Kind) -> Optional[cst.CSTNode]:
    """Parameter ``ref`` of function ``scope``, never rebound there, holds `kind` output when every
    call of the function in the file passes it (None when some call passes anything else, when
    there is no call, or when the function may be called from elsewhere: handed on as a callable)."""
    fn = m.functions.get(scope)
    if fn is None or ref not in fn.params or ref in ("self", "cls") or depth >= _MAX_DEPTH:
        return None
    if m.assigns_locally(scope, ref):
        return None
    passed = _caller_arguments(m, scope, ref)
    if not passed or any(where == fn.key for _v, where in passed):
        return None  # no call, or one that leaves the default
    origin = None
    for value, where in passed:
        origin = softmax_origin(m, value, where, value, depth + 1, kind=kind)
        if origin is None:
            return None
    return origin


def _string_key(expr: cst.Subscript) -> Optional[str]:
    """``"prob"`` of ``out["prob"]``."""
    if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
        return None
    key = expr.slice[0].slice.value
    if isinstance(key, cst.SimpleString) and key.prefix == "":
        return key.evaluated_value if isinstance(key.evaluated_value, str) else None
    return None


def _dict_entry(m: FileModel, value: cst.BaseExpression, key: str) -> Optional[cst.BaseExpression]:
    """The value stored under `key` in a dict display ``{"prob": p}`` or ``dict(prob=p)``."""
    if isinstance(value, cst.Dict):
        found = None
        for element in value.elements:
            if not isinstance(element, cst.DictElement):
                return None  # ``{**base, ...}``
            if isinstance(element.key, cst.SimpleString) and element.key.evaluated_value == key:
                found = element.value
        return found
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "dict" \
            and "dict" not in m.locals.get(MODULE_SCOPE, ()):
        if any(a.keyword is None for a in value.args):
            return None
        return next((a.value for a in value.args if a.keyword.value == key), None)
    return None


def _keyed_origin(m: FileModel, container: cst.BaseExpression, key: str, scope: str, at: cst.CSTNode, depth: int,
                  kind: Kind) -> Optional[cst.CSTNode]:
    """``out["prob"]`` (`container` ``out``): the `kind` output stored under `key` by the dict
    `container` holds: a dict display, or a call (function, method, model of this file) whose
    every ``return`` is one. A dict written to or updated in the scope is not followed."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(container, cst.Name):
        ref = container.value
        if any(any(t.startswith(ref + "[") for t in targets) for targets, _v, c in m.assignments if c.scope == scope):
            return None
        if any(isinstance(c.func, cst.Attribute) and dotted(c.func.value) == ref for c, ctx in m.calls if ctx.scope == scope):
            return None  # out.update(...), out.pop(...)
        here = m.position(at).start
        earlier = [(m.position(v).start, v, c) for t, v, c in m.assignments if c.scope == scope and t == (ref,)
                   and (m.position(v).start.line, m.position(v).start.column) < (here.line, here.column)]
        if not earlier or any(ref in loop.targets for loop in m.loops if loop.scope == scope) \
                or any(ref in t and t != (ref,) for t, _v, c in m.assignments if c.scope == scope):
            return None
        earlier.sort(key=lambda e: (e[0].line, e[0].column))
        _pos, value, ctx = earlier[-1]
        if len(earlier) > 1 and ctx.conds:
            return None
        return _keyed_origin(m, value, key, scope, value, depth + 1, kind)
    entry = _dict_entry(m, container, key)
    if entry is not None:
        return softmax_origin(m, entry, scope, entry, depth + 1, kind=kind)
    if not isinstance(container, cst.Call):
        return None
    callee = _callee_key(m, container, scope)

    def element(ret: cst.Return) -> Optional[cst.CSTNode]:
        stored = _dict_entry(m, ret.value, key)
        return None if stored is None else softmax_origin(m, stored, callee, ret, depth + 1, kind=kind)

    return _every_return(m, callee, depth, element)


def _self_forward(m: FileModel, scope: str) -> Optional[str]:
    """The ``forward`` that ``self(x)`` runs in a method of a class of this file (None when a
    subclass in the file overrides it: then ``self`` may be one of those)."""
    cls_scope = m.class_scope_of(scope) if scope != MODULE_SCOPE else None
    if cls_scope is None:
        return None
    cls_name = cls_scope.rsplit(".", 1)[-1]
    key = m.method_key(cls_name, "forward")
    if key is None or _overridden(m, cls_name, "forward"):
        return None
    return key


def _overridden(m: FileModel, cls_name: str, method: str) -> bool:
    """Whether a subclass (in this file) of class `cls_name` defines its own `method`."""
    for name, info in m.classes.items():
        if name == cls_name:
            continue
        if any(b.rsplit(".", 1)[-1] == cls_name for b in info.bases) and (
                f"{name}.{method}" in m.functions or _overridden(m, name, method)):
            return True
    return False


def _instance_class(m: FileModel, ref: str, scope: str, depth: int) -> Optional[str]:
    """The class of this file the object ``ref`` is an instance of: what ``instance_of`` knows,
    else its one binding (``Net()``, ``Net().to(device)``, ``nn.DataParallel(Net())``), or for a
    parameter what every caller in the file passes, when they agree."""
    if depth > _MAX_DEPTH:
        return None
    cls_name = m.instance_of.get(scope, ref) or m.instance_of.get(scope, m.canonical(ref, scope))
    if cls_name in m.classes:
        return cls_name
    values = _values_of(m, ref, scope, depth) or []
    found = set()
    for value, where in values:
        value = _unwrap(_unwrap_wrapper(m, _unwrap(value)))
        if isinstance(value, cst.Call) and dotted(value.func) in m.classes:
            found.add(dotted(value.func))
        elif isinstance(value, (cst.Name, cst.Attribute)) and dotted(value) is not None and dotted(value) != ref:
            found.add(_instance_class(m, dotted(value), where, depth + 1))
        else:
            return None
    if len(found) != 1 or None in found:
        return None
    return found.pop()


def _unwrap_wrapper(m: FileModel, value: cst.BaseExpression) -> cst.BaseExpression:
    """``nn.DataParallel(net)`` -> ``net``: calling the wrapper calls the module it wraps."""
    if isinstance(value, cst.Call) and _is_qual(m, value.func, _MODULE_WRAPPERS):
        inner = call_argument(value, 0, "module") or call_argument(value, 0, "model")
        if inner is not None:
            return inner
    return value


def _callee_origin(m: FileModel, call: cst.Call, scope: str, depth: int, kind: Kind = SOFTMAX) -> Optional[cst.CSTNode]:
    func = call.func
    ref = dotted(func)
    if ref is None:
        return None
    # a function or method of this file
    key = None
    if ref in m.functions and "." not in ref:
        key = ref
    elif ref.startswith("self.") and ref.count(".") == 1:
        cls_scope = m.class_scope_of(scope) if scope != MODULE_SCOPE else None
        if cls_scope is not None:
            method = m.method_key(cls_scope.rsplit(".", 1)[-1], ref.split(".", 1)[1])
            if method is not None:
                key = method
    elif ref == "self":
        key = _self_forward(m, scope)  # self(x) in a LightningModule's training_step
    elif "." in ref and not ref.endswith(".forward"):
        key = _instance_method(m, ref, scope, depth)  # net.predict_proba(x)
    if key is not None:
        return _returns_softmax(m, key, depth + 1, kind=kind)
    if ref in m.classes:
        return None  # Net(x): building an instance
    if ref.endswith(".forward") and ref != "self.forward":
        ref = ref[: -len(".forward")]  # model.forward(x): what calling the model gives
    found = _module_origin(m, ref, scope, depth + 1, kind=kind)
    return call if found is _CALL_SITE else found


def _callee_key(m: FileModel, call: cst.Call, scope: str) -> Optional[str]:
    """The function of this file that calling ``call.func`` runs: a function, a method of
    ``self``, or the ``forward`` of an instance of a class defined here."""
    ref = dotted(call.func)
    if ref is None:
        return None
    if ref in m.functions and "." not in ref:
        return ref
    if ref.startswith("self.") and ref.count(".") == 1:
        cls_scope = m.class_scope_of(scope) if scope != MODULE_SCOPE else None
        if cls_scope is not None:
            method = m.method_key(cls_scope.rsplit(".", 1)[-1], ref.split(".", 1)[1])
            if method is not None:
                return method
    if ref == "self":
        return _self_forward(m, scope)
    if ref in m.classes:
        return None
    if "." in ref and not ref.endswith(".forward"):
        method = _instance_method(m, ref, scope, 0)
        if method is not None:
            return method
    if ref.endswith(".forward") and ref != "self.forward":
        ref = ref[: -len(".forward")]
    cls_name = _instance_class(m, ref, scope, 0)
    return m.method_key(cls_name, "forward") if cls_name in m.classes else None


def _instance_method(m: FileModel, ref: str, scope: str, depth: int) -> Optional[str]:
    """``Net.predict_proba`` for ``net.predict_proba`` when ``net`` is an instance of class ``Net``
    of this file that defines (or inherits from a class of this file) that method, and no
    subclass in the file overrides it."""
    owner, _, method = ref.rpartition(".")
    if not owner or method.startswith("__") or owner == "self":
        return None
    cls_name = _instance_class(m, owner, scope, depth + 1)
    if cls_name is None:
        return None
    key = m.method_key(cls_name, method)
    if key is None or _overridden(m, cls_name, method):
        return None
    return key


def _element_origin(m: FileModel, call: cst.Call, scope: str, index: int, count: int, depth: int,
                    kind: Kind = SOFTMAX) -> Optional[cst.CSTNode]:
    """The softmax behind element ``index`` of what ``call`` returns, unpacked into ``count``
    names: every ``return`` of the callee is a tuple of ``count`` values whose element
    ``index`` is softmax output (``return logits, F.softmax(logits, 1)``)."""
    key = _callee_key(m, call, scope)

    def element(ret: cst.Return) -> Optional[cst.CSTNode]:
        value = ret.value
        if not isinstance(value, (cst.Tuple, cst.List)) or len(value.elements) != count \
                or any(isinstance(e, cst.StarredElement) for e in value.elements):
            return None
        return softmax_origin(m, value.elements[index].value, key, ret, depth + 1, kind=kind)

    return _every_return(m, key, depth, element)


def _every_return(m: FileModel, key: Optional[str], depth: int, origin_of) -> Optional[cst.CSTNode]:
    """``origin_of(ret)`` for the last ``return`` of function ``key``, when every ``return`` has
    one (None if some return gives None or no value, if it has no return, or it is a generator)."""
    if depth > _MAX_DEPTH or key is None:
        return None
    fn = m.functions.get(key)
    if fn is None:
        return None
    returns, yields = _own_returns(m, fn.node)
    if yields or not returns:
        return None
    origin = None
    for ret in returns:
        if ret.value is None:
            return None
        origin = origin_of(ret)
        if origin is None:
            return None
    return origin


def _module_origin(m: FileModel, ref: str, scope: str, depth: int, kind: Kind = SOFTMAX) -> Optional[cst.CSTNode]:
    """Calling the object ``ref`` (a model, a layer) gives softmax output."""
    if depth > _MAX_DEPTH:
        return None
    cls_name = m.instance_of.get(scope, ref) or m.instance_of.get(scope, m.canonical(ref, scope))
    if cls_name in m.classes:
        return _class_origin(m, cls_name, depth, kind=kind)
    added = _last_added_module(m, ref, scope)
    if added is not None:
        layer = _first_arg(added, "module") if len(added.args) < 2 else added.args[1].value
        if layer is not None and isinstance(layer, cst.Call) and _is_qual(m, layer.func, kind.layers):
            return added  # model.add_module("softmax", nn.Softmax()): the last layer
        return None
    values = _values_of(m, ref, scope, depth)
    if not values:
        return None
    origins = []
    for value, where in values:
        origins.append(_object_origin(m, _unwrap(value), where, depth + 1, kind=kind))
    if any(o is None for o in origins):
        return None
    return origins[-1]


def _object_origin(m: FileModel, value: cst.BaseExpression, scope: str, depth: int, kind: Kind = SOFTMAX) -> Optional[cst.CSTNode]:
    """Calling the object ``value`` evaluates to (gives softmax output)."""
    if isinstance(value, cst.Call):
        if _is_qual(m, value.func, kind.layers):
            return _CALL_SITE  # the object is a softmax layer: calling it is the softmax
        name = dotted(value.func)
        if name in m.classes:
            return _class_origin(m, name, depth, kind=kind)
        if name in m.functions and "." not in name:
            return _factory_origin(m, name, depth + 1, kind=kind)  # model = build_model(...)
        if _is_qual(m, value.func, _MODULE_WRAPPERS):
            inner = _unwrap_wrapper(m, value)
            return None if inner is value else _object_origin(m, _unwrap(inner), scope, depth + 1, kind=kind)
        if _is_qual(m, value.func, frozenset({"torch.nn.Sequential"})):
            last = _last_layer(m, value, scope)
            if last is None:
                return None
            last = _unwrap(last)
            found = _object_origin(m, last, scope, depth + 1, kind=kind)
            return last if found is _CALL_SITE else found
        return None
    ref = dotted(value)
    if ref is not None:
        if _is_qual(m, value, kind.functions):
            return None  # act = F.softmax: not followed
        return _module_origin(m, ref, scope, depth + 1, kind=kind)
    return None


def _last_layer(m: FileModel, sequential: cst.Call, scope: str) -> Optional[cst.BaseExpression]:
    """The last layer of ``nn.Sequential(a, b, c)``, of ``nn.Sequential(OrderedDict([("fc", a),
    ("act", b)]))``, or of ``nn.Sequential(*layers)`` where ``layers`` is bound once in the
    scope, to a list display, and never changed (no method of it called, no ``+=``)."""
    layers = [a for a in sequential.args if a.keyword is None]
    if not layers:
        return None
    last = layers[-1]
    if last.star == "*" and len(layers) == 1 and isinstance(last.value, cst.Name):
        name = last.value.value
        bound = [(t, v) for t, v, c in m.assignments if c.scope == scope and name in t]
        if len(bound) != 1 or bound[0][0] != (name,) or not isinstance(bound[0][1], cst.List):
            return None
        if any(isinstance(c.func, cst.Attribute) and dotted(c.func.value) == name for c, ctx in m.calls
               if ctx.scope == scope) or any(name in loop.targets for loop in m.loops if loop.scope == scope) \
                or _aug_assigned(m, name, scope):
            return None
        elements = bound[0][1].elements
        if not elements or isinstance(elements[-1], cst.StarredElement):
            return None
        return elements[-1].value
    if last.star:
        return None
    value = last.value
    if len(layers) == 1 and isinstance(value, cst.Call) and m.imports.qualname(value.func) in (
            "collections.OrderedDict", "OrderedDict"):
        items = _first_arg(value)
        if not isinstance(items, (cst.List, cst.Tuple)) or not items.elements:
            return None
        pair = items.elements[-1]
        if isinstance(pair, cst.StarredElement) or not isinstance(pair.value, (cst.Tuple, cst.List)) \
                or len(pair.value.elements) != 2:
            return None
        return pair.value.elements[1].value
    return value


def _aug_assigned(m: FileModel, name: str, scope: str) -> bool:
    fn = m.functions.get(scope)
    body = fn.node.body if fn is not None else m.module
    return any(isinstance(a.target, cst.Name) and a.target.value == name
               for a in m.index.nodes(cst.AugAssign, body, nested=False))


def _class_origin(m: FileModel, cls_name: str, depth: int, kind: Kind = SOFTMAX) -> Optional[cst.CSTNode]:
    key = m.method_key(cls_name, "forward")
    if key is None:
        return None
    return _returns_softmax(m, key, depth + 1, kind=kind)


def _own_returns(m: FileModel, fn: cst.FunctionDef) -> Tuple[List[cst.Return], bool]:
    """The ``return`` statements of `fn` itself (not of functions, classes or lambdas nested
    in it), last first, and whether it yields."""
    returns = m.index.nodes(cst.Return, fn.body, nested=False)
    returns.reverse()
    return returns, m.index.has(cst.Yield, fn.body, nested=False)


def _returns_softmax(m: FileModel, key: str, depth: int, kind: Kind = SOFTMAX) -> Optional[cst.CSTNode]:
    """The softmax every ``return`` of function ``key`` hands back (None if some return
    gives anything else, or it has no return with a value, or it is a generator)."""
    return _every_return(m, key, depth, lambda ret: softmax_origin(m, ret.value, key, ret, depth + 1, kind=kind))


def _last_added_module(m: FileModel, ref: str, scope: str) -> Optional[cst.Call]:
    """The last ``ref.add_module(name, layer)`` call building ``ref`` (in ``scope``, or for
    ``self.x`` in the class's methods), or None when it is not built that way."""
    cls_scope = m.class_scope_of(scope) if scope != MODULE_SCOPE else None
    found = []
    for call, ctx in m.calls:
        if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_module"):
            continue
        if dotted(call.func.value) != ref:
            continue
        if ctx.scope == scope or (ref.startswith("self.") and cls_scope is not None and m.class_scope_of(ctx.scope) == cls_scope):
            pos = m.position(call).start
            found.append(((ctx.scope, pos.line, pos.column), call))
    if not found:
        return None
    scopes = {key[0] for key, _c in found}
    if len(scopes) > 1:
        return None
    return max(found, key=lambda item: item[0])[1]


def _factory_origin(m: FileModel, key: str, depth: int, kind: Kind = SOFTMAX) -> Optional[cst.CSTNode]:
    """Calling the object every ``return`` of function ``key`` hands back gives softmax output."""
    if depth > _MAX_DEPTH:
        return None
    fn = m.functions.get(key)
    if fn is None:
        return None
    returns, _yields = _own_returns(m, fn.node)
    origin = None
    for ret in returns:
        if ret.value is None:
            return None
        found = _object_origin(m, _unwrap(ret.value), key, depth + 1, kind=kind)
        if found is None or found is _CALL_SITE:
            return None
        origin = found
    return origin


# --- a module handed to a training wrapper with a cross-entropy criterion -----------------------

# skorch's binary classifier: its default criterion is BCEWithLogitsLoss (predict_proba applies the sigmoid)
_BINARY_WRAPPERS = frozenset({"skorch.NeuralNetBinaryClassifier", "skorch.classifier.NeuralNetBinaryClassifier"})


def criterion_for_module(m: FileModel, call: cst.Call) -> Optional[Tuple[cst.BaseExpression, cst.BaseExpression, cst.CSTNode]]:
    """``NeuralNet(MyModule, criterion=nn.CrossEntropyLoss)`` (skorch and wrappers built like it):
    a call handed a module (``module=`` or its first positional argument) and
    ``criterion=`` the ``CrossEntropyLoss`` class or an instance, where the module is a class
    of this file (or an instance of one) whose ``forward`` gives softmax output. The wrapper
    feeds the module's output to the criterion. Returns (criterion value, module, softmax)."""
    found = wrapped_criterion(m, call)
    if found is None or found[3] is not CROSS_ENTROPY:
        return None
    return found[0], found[1], found[2]


def wrapped_criterion(m: FileModel, call: cst.Call) -> Optional[Tuple[Optional[cst.BaseExpression], cst.BaseExpression, cst.CSTNode, Loss, Kind]]:
    """As criterion_for_module, for ``criterion=`` a ``CrossEntropyLoss`` (the module's forward
    ends in softmax) or a ``BCEWithLogitsLoss`` (it ends in sigmoid), also skorch's
    ``NeuralNetBinaryClassifier`` left with its default criterion (``BCEWithLogitsLoss``; the
    criterion value is then None). Not ``NLLLoss``: skorch gives it the log of the module's
    output. Returns (criterion value, module, the softmax or sigmoid, loss, kind)."""
    criterion = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "criterion"), None)
    if criterion is None:
        if m.imports.qualname(call.func) not in _BINARY_WRAPPERS:
            return None
        loss = BCE_WITH_LOGITS
    else:
        value = criterion.func if isinstance(criterion, cst.Call) and not criterion.args else criterion
        loss = _named_loss(m, value, classes=True)
        if loss is not CROSS_ENTROPY and loss is not BCE_WITH_LOGITS:
            return None
    module = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "module"), None)
    if module is None:
        positional = [a for a in call.args if a.keyword is None]
        if not positional or positional[0].star:
            return None
        module = positional[0].value
    target = module.func if isinstance(module, cst.Call) else module
    name = dotted(target)
    if name not in m.classes:
        return None
    kind = SOFTMAX if loss is CROSS_ENTROPY else SIGMOID
    origin = _class_origin(m, name, 0, kind=kind)
    if origin is None or origin is _CALL_SITE:
        return None
    return criterion, module, origin, loss, kind


def sole_layer_of_call(m: FileModel, call: cst.Call, layers: FrozenSet[str]) -> Optional[cst.Call]:
    """``nn.Softmax(dim=1)`` for ``self.softmax(x)`` when ``self.softmax`` is bound once, to one of
    `layers`, and this is the only call of it in its class (changing the layer then changes
    this call only); None otherwise."""
    ref = dotted(call.func)
    if ref is None or not ref.startswith("self.") or ref.count(".") != 1:
        return None
    scope = next((ctx.scope for c, ctx in m.calls if c is call), None)
    cls_scope = m.class_scope_of(scope) if scope not in (None, MODULE_SCOPE) else None
    if cls_scope is None:
        return None
    values = _values_of(m, ref, scope, 0)
    if not values or len(values) != 1:
        return None
    built = values[0][0]
    if not (isinstance(built, cst.Call) and _is_qual(m, built.func, layers)):
        return None
    uses = [c for c, ctx in m.calls if dotted(c.func) == ref and ctx.scope != MODULE_SCOPE
            and m.class_scope_of(ctx.scope) == cls_scope]
    return built if len(uses) == 1 else None
