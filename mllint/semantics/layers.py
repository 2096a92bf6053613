"""Which layers that behave differently in training and evaluation a model has.

``model.train()``/``model.eval()`` change what dropout and batch norm do (and anything
that reads ``self.training``). To say something true about a model evaluated in
training mode, a rule asks ``mode_layers(m, ref, scope)``:

- a non-empty set such as ``{"dropout", "batch norm"}``: the model has them;
- an empty set: it is known to have none (its class is defined in this file, or it is
  built from ``nn.Sequential`` and known torch layers, and every submodule is known);
- ``None``: unknown (a class or factory from elsewhere, a parameter, a loaded model).

What counts as known: classes defined in the file (with their in-file bases and nested
submodules, recursively) and ``torch.nn`` layers. Unknown: a base class or a layer factory
from elsewhere, a module handed to ``__init__`` (``self.backbone = backbone``: annotated with
a non-scalar type, or named like a module), and ``nn.Sequential(*layers)`` of a list we do not
follow. A parameter of a function is what every call of it in the file passes. ``nn.RNN``/``LSTM``/``GRU`` and
``nn.MultiheadAttention`` have dropout only when given a ``dropout`` argument;
transformer layers have dropout by default.
"""

from __future__ import annotations

import builtins
import re
from typing import FrozenSet, Optional, Set

import libcst as cst

from mllint.semantics.model import CALL, MODULE_SCOPE, FileModel
from mllint.semantics.names import dotted

DROPOUT = "dropout"
BATCH_NORM = "batch norm"
TRAINING_FLAG = "layers that read `self.training`"

_DROPOUT_CLASSES = {"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"}
_NORM_CLASSES = {
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LazyBatchNorm1d", "LazyBatchNorm2d",
    "LazyBatchNorm3d",
}
# Instance norm uses each input's own statistics in both modes, unless track_running_stats=True.
_INSTANCE_NORM_CLASSES = {"InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
                          "LazyInstanceNorm2d", "LazyInstanceNorm3d"}
_TRANSFORMER_CLASSES = {"Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
                        "TransformerDecoderLayer"}
_DROPOUT_ARGUMENT = {"RNN", "LSTM", "GRU", "MultiheadAttention"}  # dropout=0 by default
_FUNCTIONAL_DROPOUT = {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"}
_FUNCTIONAL_NORM = {"batch_norm", "instance_norm"}
_SAFE_PREFIXES = ("torch.", "math.", "numpy.", "collections.", "functools.", "itertools.", "operator.", "copy.")
_WRAPPERS = {"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "train", "requires_grad_"}


class _Unknown(Exception):
    pass


def mode_layers(m: FileModel, ref: str, scope: str, depth: int = 0) -> Optional[FrozenSet[str]]:
    """The kinds of mode-dependent layers the model ``ref`` (seen from ``scope``) has;
    an empty set when it is known to have none; None when we cannot tell. A parameter
    of a function in this file is what every call of the function passes (when they agree)."""
    fn = m.functions.get(scope)
    if fn is not None and ref in fn.params and ref not in ("self", "cls") and m.instance_of.get(scope, ref) is None:
        return _from_callers(m, fn, ref, depth) if depth < 3 else None
    try:
        found: Set[str] = set()
        if ref in ("self", "cls"):
            cls_scope = m.class_scope_of(scope) if scope != MODULE_SCOPE else None
            cls = m.classes.get((cls_scope or "").rsplit(".", 1)[-1])
            if cls is None:
                return None
            _class_layers(m, cls.name, found, set())
            return frozenset(found)
        for candidate in dict.fromkeys((ref, m.canonical(ref, scope))):
            cls_name = m.instance_of.get(scope, candidate)
            if cls_name is not None and cls_name in m.classes:
                _class_layers(m, cls_name, found, set())
                return frozenset(found)
        value = _built_from(m, ref, scope)
        if value is None:
            return None
        _expression_layers(m, value, found, set())
        return frozenset(found)
    except _Unknown:
        return None


def _from_callers(m: FileModel, fn, param: str, depth: int) -> Optional[FrozenSet[str]]:
    index = fn.params.index(param) - (1 if fn.cls is not None else 0)
    answers = set()
    for effect in m.effects:
        if effect.kind != CALL or effect.callee != fn.key or not isinstance(effect.node, cst.Call):
            continue
        arg = next((a for a in effect.node.args if a.keyword is not None and a.keyword.value == param), None)
        positional = [a for a in effect.node.args if a.keyword is None]
        if arg is None and 0 <= index < len(positional) and not any(a.star for a in positional[: index + 1]):
            arg = positional[index]
        ref = dotted(arg.value) if arg is not None else None
        if ref is None:
            return None
        answers.add(mode_layers(m, ref, effect.ctx.scope, depth + 1))
    if not answers and m.project is not None:
        return m.project.argument_mode_layers(fn.key, param)  # only callers in other files
    if len(answers) != 1:
        return None
    return answers.pop()


def _built_from(m: FileModel, ref: str, scope: str) -> Optional[cst.Call]:
    """The one call that builds ``ref`` (``nn.Sequential(...)``, ``Net().to(device)``)."""
    values = []
    for name in dict.fromkeys((ref, m.canonical(ref, scope))):
        for targets, value, ctx in m.assignments:
            if targets != (name,):
                continue
            same_class = name.startswith("self.") and m.class_scope_of(ctx.scope) == m.class_scope_of(scope) is not None
            if (ctx.scope in (scope, MODULE_SCOPE) or same_class) and not _rebinds(value, name):
                values.append(value)
        if values:
            break
    calls = [_unwrap(v) for v in values]
    if not calls or any(c is None for c in calls):
        return None
    texts = {m.code_of(c) for c in calls}
    return calls[0] if len(texts) == 1 else None


def _rebinds(value: cst.BaseExpression, name: str) -> bool:
    """``net = net.to(device)`` / ``net = net.type(dtype)``: the same module moved or cast
    in place, not a new one (its layers are those it was built with)."""
    moved = False
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and (
        value.func.attr.value in _WRAPPERS or (value.func.attr.value == "type" and len(value.args) == 1)
    ):
        value, moved = value.func.value, True
    return moved and dotted(value) == name


def _unwrap(value: cst.BaseExpression) -> Optional[cst.Call]:
    """``Net().to(device).cuda()`` -> ``Net()``."""
    while (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
           and value.func.attr.value in _WRAPPERS and isinstance(value.func.value, cst.Call)):
        value = value.func.value
    return value if isinstance(value, cst.Call) else None


def _class_layers(m: FileModel, name: str, found: Set[str], seen: Set[str]) -> None:
    if name in seen:
        return
    seen.add(name)
    info = m.classes[name]
    for base in info.bases:
        last = base.rsplit(".", 1)[-1]
        if last in m.classes:
            _class_layers(m, last, found, seen)
        elif base not in ("torch.nn.Module", "torch.nn.modules.module.Module", "object"):
            if not _project_layers(m, base, found):
                raise _Unknown  # a base class from elsewhere may add layers
    for node in m.index.nodes((cst.Attribute, cst.Call), info.node.body):
        if isinstance(node, cst.Attribute) and node.attr.value == "training" and dotted(node.value) == "self":
            found.add(TRAINING_FLAG)
        elif isinstance(node, cst.Call):
            _call_layers(m, node, found, seen, assigned=False)
    for fn in m.index.nodes(cst.FunctionDef, info.node.body):  # a module handed in (``self.backbone = backbone``) is not known
        params = {p.name.value: p for p in fn.params.params + fn.params.kwonly_params}
        for node in m.index.nodes(cst.Assign, fn.body):
            if isinstance(node.value, cst.Name) and node.value.value in params:
                if any(isinstance(t.target, cst.Attribute) and dotted(t.target.value) == "self" for t in node.targets):
                    if _may_be_module(m, params[node.value.value]):
                        raise _Unknown
    for node in m.index.nodes((cst.Assign, cst.AnnAssign, cst.AugAssign), info.node.body):  # what is stored on self must be known
        if isinstance(node, cst.Assign):
            if any(isinstance(t.target, cst.Attribute) and dotted(t.target.value) == "self" for t in node.targets):
                _stored(m, node.value, found, seen)
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)) and node.value is not None:
            if isinstance(node.target, cst.Attribute) and dotted(node.target.value) == "self":
                _stored(m, node.value, found, seen)


_SCALAR_ANNOTATIONS = {"int", "float", "str", "bool", "bytes", "complex"}
_MODULE_NAME = re.compile(
    r"(?:^|_)(?:model|net|network|backbone|encoder|decoder|module|modules|head|body|stem|trunk|classifier|"
    r"extractor|embedding|embeddings|layer|layers|block|blocks|submodule|criterion|loss_fn)$", re.I)
_COUNT_NAME = re.compile(r"^(?:num|n|max|min)_|size|dim|count|depth|width", re.I)
_CONTAINERS = {"Sequential", "ModuleList", "ModuleDict"}


def _may_be_module(m: FileModel, param: cst.Param) -> bool:
    """A parameter stored on self that may hold a module: annotated with something other than
    a scalar type, or named like one (``backbone``, ``encoder``, ``layers``)."""
    if param.annotation is not None:
        text = m.code_of(param.annotation.annotation)
        return text.split("[", 1)[0].rsplit(".", 1)[-1] not in _SCALAR_ANNOTATIONS
    name = param.name.value
    return bool(_MODULE_NAME.search(name)) and not _COUNT_NAME.search(name)


def _opaque(expr: cst.BaseExpression) -> bool:
    """An argument of nn.Sequential/ModuleList/ModuleDict whose modules we cannot see:
    a name (``nn.Sequential(*layers)``), an attribute, a subscript."""
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Subscript)):
        return not (isinstance(expr, cst.Name) and expr.value in ("None", "True", "False"))
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        return any(_opaque(e.value) for e in expr.elements)
    if isinstance(expr, cst.Dict):
        return any(not isinstance(e, cst.DictElement) or _opaque(e.value) for e in expr.elements)
    if isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
        return _opaque(expr.elt)
    if isinstance(expr, cst.DictComp):
        return _opaque(expr.value)
    return False


def _stored(m: FileModel, value: cst.BaseExpression, found: Set[str], seen: Set[str]) -> None:
    """Every call in a value stored on ``self`` builds (part of) a submodule: all must be known."""
    calls = m.index.nodes(cst.Call, value)
    for node in [value, *calls] if isinstance(value, cst.Call) else calls:
        _call_layers(m, node, found, seen, assigned=True)


def _expression_layers(m: FileModel, call: cst.Call, found: Set[str], seen: Set[str]) -> None:
    _stored(m, call, found, seen)


def _project_layers(m: FileModel, qual: str, found: Set[str]) -> bool:
    """A class of another file of the project (``from models import Net``): add its layers to
    `found` and return True; raise _Unknown when the project cannot tell; False when `qual` is
    no class of the project."""
    if m.project is None or not qual:
        return False
    if m.project.class_named(qual) is None:
        made = m.project.returned_model(qual)  # a factory of another file: what it builds
        if made is None:
            return False
        if made[1] is None:
            raise _Unknown
        found.update(made[1])
        return True
    layers = m.project.mode_layers(qual)
    if layers is None:
        raise _Unknown
    found.update(layers)
    return True


def _call_layers(m: FileModel, call: cst.Call, found: Set[str], seen: Set[str], *, assigned: bool) -> None:
    """Record what one call contributes. ``assigned``: its result is stored as a
    submodule, so an unknown callee makes the model unknown; other calls (``torch.cat``,
    ``x.view``) are operations, unknown only when they look like a class."""
    qual = m.imports.qualname(call.func) or dotted(call.func) or ""
    last = qual.rsplit(".", 1)[-1]
    if qual.startswith("torch.nn.functional.") or (qual.startswith("F.") and qual.count(".") == 1):
        if last in _FUNCTIONAL_DROPOUT:
            found.add(DROPOUT)
        elif last in _FUNCTIONAL_NORM:
            found.add(BATCH_NORM)
        return
    if qual == last and last in m.classes:
        _class_layers(m, last, found, seen)
        return
    if _project_layers(m, qual, found):
        return
    if qual.startswith("torch.nn.") or qual.startswith("nn."):
        if last in _CONTAINERS and any(_opaque(a.value) for a in call.args):
            raise _Unknown  # nn.Sequential(*layers): what the list holds is not followed
        if last in _DROPOUT_CLASSES:
            found.add(DROPOUT)
        elif last in _NORM_CLASSES:
            found.add(BATCH_NORM)
        elif last in _INSTANCE_NORM_CLASSES:
            arg = next((a for a in call.args if a.keyword is not None and a.keyword.value == "track_running_stats"), None)
            if arg is not None and not (isinstance(arg.value, cst.Name) and arg.value.value == "False"):
                raise _Unknown  # running statistics: switched by eval(), but not batch norm to name in a message
        elif last in _TRANSFORMER_CLASSES:
            found.add(DROPOUT)
        elif last in _DROPOUT_ARGUMENT:
            arg = next((a for a in call.args if a.keyword is not None and a.keyword.value == "dropout"), None)
            if arg is not None:
                if isinstance(arg.value, (cst.Integer, cst.Float)):
                    if float(arg.value.value) != 0.0:
                        found.add(DROPOUT)
                else:
                    raise _Unknown
        return
    if not qual:
        if assigned:
            raise _Unknown  # self.layer = factories[name](...)
        return
    if qual.startswith(_SAFE_PREFIXES) or qual in dir(builtins) or qual in ("super", "self"):
        return
    if qual.split(".", 1)[0] == "self" and qual.count(".") == 1:
        return  # self.block(x), self.get_dim(): the model's own submodules and methods
    if assigned or last[:1].isupper():
        raise _Unknown  # a class or factory from elsewhere
