"""Distributed samplers and the epoch loops that never tell them the epoch (ML017).

A ``torch.utils.data.distributed.DistributedSampler`` shuffles with a generator seeded by
``seed + epoch``; its epoch only changes through ``set_epoch``. Facts, from the file alone:

- **Samplers** (`Sampler`): calls of torch's ``DistributedSampler`` (any import spelling,
  through the file's imports) that shuffle (``shuffle=True`` or left out; any other value,
  or a ``**kwargs``, is unknown and left alone), bound to a name (also under
  ``x if distributed else None``, also after ``a, b = None, None``) or built inline as a
  DataLoader's ``sampler=``.
- **Loaders** (`Loader`): ``DataLoader(..., sampler=<one of them>)`` bound to a name (or to
  a key of a dict literal: ``loaders["train"]``), or returned by a function of the file (alone
  or in a tuple) and bound by its callers; and, when handed to a class of the file whose
  ``__init__`` keeps it as ``self.<attr> = param`` (and nothing else binds that attribute),
  ``self.<attr>`` in that class.
- **Loops over a loader**: loops of the scopes that see its name (``self.x`` across the
  methods of the class, a module-level name in every function that does not shadow it),
  through ``tqdm``/``enumerate``/``iter`` wrappers, and loops of local helpers it is passed
  to (two levels deep); also a loop that draws its batches with ``next(it)``, where ``it =
  iter(loader)`` (``cycle(loader)``) is made outside it in the loop around it (see
  `_drawing_loop`), or with ``next(iter(loader))``.
- **Epoch loops** (`Unseeded`): the loop around a training loop over the loader (its
  parent loop, or the loop around the call of the helper holding it, or around a call of
  the method holding it), built before that loop, whose body (nested loops and local
  functions it calls included) never calls ``set_epoch`` (or ``set_*epoch``) on anything
  and never hands the loader or the sampler to code the file does not show (an inherited
  ``self.<method>(...)`` called once per batch, without ``epoch`` in its name, is not taken
  to set the epoch). Loaders given
  to ``accelerator.prepare`` / ``fabric.setup_dataloaders`` / ``idist.auto_dataloader``
  (which set the epoch themselves) are left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

import libcst as cst

from mllint.semantics.model import BACKWARD, CALL, MODULE_SCOPE, STEP, Context, Effect, FileModel, Loop
from mllint.semantics.names import call_argument, dotted, ref_of

DISTRIBUTED_SAMPLER = frozenset({"torch.utils.data.distributed.DistributedSampler", "torch.utils.data.DistributedSampler"})

# set_epoch, set_sampler_epoch, _set_sampler_epoch, loader.set_epoch (a wrapper's own)
_SET_EPOCH = re.compile(r"^_?set_\w*epoch$|set_epoch")
# calls that take a loader and change nothing about its sampler
_HARMLESS = frozenset(
    {
        "len", "print", "enumerate", "iter", "next", "cycle", "zip", "tqdm", "trange", "range", "isinstance", "str", "repr",
        "format", "getattr", "hasattr", "type", "id", "info", "debug", "warning", "warn", "log", "write", "min", "max",
        "int", "float", "round", "sum", "list", "tuple", "set_description", "set_postfix",
    }
)
# frameworks that take over the loader and set the epoch themselves
_FRAMEWORK_WRAP = frozenset({"prepare", "prepare_data_loader", "setup_dataloaders", "setup_dataloader", "auto_dataloader"})
_ITER_WRAPPERS = frozenset({"tqdm", "enumerate", "iter", "trange", "track", "zip", "cycle"})
# a call in a loop body that trains (the loop's own effects say so in most files)
_TRAINS = re.compile(r"(^|_)(step|backward|train\w*|update|optimi[sz]e\w*|fit\w*)$")


@dataclass(frozen=True)
class Binding:
    """A name an object is bound to, the scope it lives in and the assignment's context."""

    scope: str
    ref: str
    ctx: Optional[Context] = None


@dataclass
class Sampler:
    call: cst.Call
    ctx: Context
    binding: Optional[Binding]  # None: built inline in the DataLoader call
    values: Tuple[cst.BaseExpression, ...] = ()  # every value the binding's name is given in its scope


@dataclass
class Loader:
    call: cst.Call
    ctx: Context
    sampler: Sampler
    bindings: List[Binding] = field(default_factory=list)


@dataclass
class Unseeded:
    epoch: Loop  # the loop whose iterations are the epochs
    inner: Loop  # the loop over the loader
    loader: Loader
    via: Tuple[Effect, ...]  # calls of local helpers from the loader's scope to the inner loop
    through: Optional[cst.Call] = None  # ``next(it)``: the inner loop draws its batches by hand


def pairs(targets: Tuple[str, ...], value: cst.BaseExpression) -> Iterator[Tuple[str, cst.BaseExpression]]:
    """(name, value) for each name an assignment binds to a value the file shows: ``a = x``,
    and ``a, b = x, y`` element by element (nothing for other unpacking)."""
    if len(targets) == 1:
        yield targets[0], value
    elif isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(targets) and not any(
        isinstance(e, cst.StarredElement) for e in value.elements
    ):
        for target, element in zip(targets, value.elements):
            yield target, element.value


def is_none(node: Optional[cst.BaseExpression]) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def shuffles(call: cst.Call) -> Optional[bool]:
    """Whether a DistributedSampler call shuffles: True (``shuffle=True`` or left out), False
    (``shuffle=False``), None (anything else, or hidden behind ``*args``/``**kwargs``)."""
    arg = call_argument(call, 3, "shuffle")
    if arg is None:
        return None if any(a.star for a in call.args) else True
    if isinstance(arg, cst.Name) and arg.value in ("True", "False"):
        return arg.value == "True"
    return None


def branches(value: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """``a if c else b`` -> a, b; ``c and a`` -> c, a (recursively); else the value itself."""
    if isinstance(value, cst.IfExp):
        yield from branches(value.body)
        yield from branches(value.orelse)
    elif isinstance(value, cst.BooleanOperation):
        yield from branches(value.left)
        yield from branches(value.right)
    else:
        yield value


def _last(model: FileModel, func: cst.BaseExpression) -> str:
    name = model.imports.qualname(func) or dotted(func) or ""
    return name.rsplit(".", 1)[-1]


def is_sampler_call(model: FileModel, node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and model.imports.qualname(node.func) in DISTRIBUTED_SAMPLER


def _holder(model: FileModel, node: cst.CSTNode) -> Tuple[cst.CSTNode, Optional[cst.CSTNode]]:
    """The outermost conditional expression holding ``node`` and that expression's parent."""
    parents = model.parents
    parent = parents.get(node)
    while isinstance(parent, (cst.IfExp, cst.BooleanOperation)):
        node, parent = parent, parents.get(parent)
    return node, parent


def _home(model: FileModel, scope: str, ref: str) -> str:
    if ref.startswith(("self.", "cls.")):
        return model.class_scope_of(scope) or scope
    return scope


def sees(model: FileModel, scope: str, ref: str, where: str) -> bool:
    """Whether code in scope ``where`` reads the object that ``ref`` names in ``scope``."""
    if ref.startswith(("self.", "cls.")):
        cls = model.class_scope_of(scope)
        return cls is not None and model.class_scope_of(where) == cls
    if where == scope:
        return True
    if scope != MODULE_SCOPE and not where.startswith(scope + "."):
        return False
    head = ref.split(".", 1)[0].split("[", 1)[0]
    current = where
    while current != scope and current != MODULE_SCOPE:
        if head in model.locals.get(current, set()):
            return False  # shadowed by a parameter or local
        current = current.rsplit(".", 1)[0] if "." in current else MODULE_SCOPE
    return True


def _values_of(model: FileModel, binding: Binding) -> Tuple[cst.BaseExpression, ...]:
    """Every value the binding's name is given where it lives (its scope; for ``self.x``, the class)."""
    home = _home(model, binding.scope, binding.ref)
    out = []
    for targets, value, ctx in model.assignments_naming(binding.ref):
        if _home(model, ctx.scope, binding.ref) == home and (binding.ref.startswith(("self.", "cls.")) or ctx.scope == binding.scope):
            mine = [v for t, v in pairs(targets, value) if t == binding.ref]  # ``a, b = None, None`` too
            out.append(mine[0] if len(mine) == 1 else None)
    return tuple(out)


def _assignment_of(model: FileModel, value: cst.CSTNode):
    for targets, assigned, ctx in model.assignments:
        if assigned is value:
            return targets, ctx
    return None


def samplers(model: FileModel) -> List[Sampler]:
    """The shuffling DistributedSamplers of the file bound to a name or built inline in a
    DataLoader call (a name any of whose samplers does not surely shuffle is left out)."""

    def compute(model: FileModel) -> List[Sampler]:
        found: List[Sampler] = []
        for call, ctx in model.calls:
            if not is_sampler_call(model, call) or shuffles(call) is not True:
                continue
            outer, parent = _holder(model, call)
            if isinstance(parent, cst.Arg):
                found.append(Sampler(call, ctx, None))  # DataLoader(ds, sampler=DistributedSampler(ds)), BatchSampler(...)
                continue
            if not isinstance(parent, (cst.Assign, cst.AnnAssign)):
                continue
            assigned = _assignment_of(model, outer)
            if assigned is None or len(assigned[0]) != 1:
                continue
            binding = Binding(ctx.scope, assigned[0][0], assigned[1])
            values = _values_of(model, binding)
            if any(v is None for v in values):
                continue  # also bound by unpacking: unknown
            if any(is_sampler_call(model, b) and shuffles(b) is not True for v in values for b in branches(v)):
                continue  # some binding may not shuffle
            found.append(Sampler(call, ctx, binding, values))
        return found

    return model.memo("ml017.samplers", compute)


def _sampler_of(model: FileModel, loader_call: cst.Call, scope: str, found: List[Sampler], positional: bool = True) -> Optional[Sampler]:
    """The sampler feeding a DataLoader call: its ``sampler=``, or the sampler of the
    ``BatchSampler`` given as its ``batch_sampler=`` (inline or bound to a name). Only by
    keyword for a loader class that is not torch's own (its positions may differ)."""
    arg = call_argument(loader_call, 3 if positional else 99, "sampler")
    if arg is not None:
        return _resolve(model, arg, scope, found)
    batches = call_argument(loader_call, 4 if positional else 99, "batch_sampler")
    if batches is None:
        return None
    if isinstance(batches, (cst.Name, cst.Attribute)):
        ref = ref_of(batches)
        values = [v for targets, v, ctx in model.assignments_naming(ref or "") if ctx.scope == scope and len(targets) == 1]
        if len(values) != 1:
            return None
        batches = values[0]
    if isinstance(batches, cst.Call) and _last(model, batches.func) == "BatchSampler":
        inner = call_argument(batches, 0, "sampler")
        return _resolve(model, inner, scope, found) if inner is not None else None
    return None


def _resolve(model: FileModel, arg: cst.BaseExpression, scope: str, found: List[Sampler]) -> Optional[Sampler]:
    for branch in branches(arg):
        for sampler in found:
            if sampler.binding is None:
                if sampler.call is branch:
                    return sampler
            elif ref_of(branch) == sampler.binding.ref and sees(model, sampler.binding.scope, sampler.binding.ref, scope):
                return sampler
    if isinstance(arg, cst.Name):
        return _through_parameter(model, arg.value, scope, found)
    return None


def _through_parameter(model: FileModel, name: str, scope: str, found: List[Sampler]) -> Optional[Sampler]:
    """``def make_loader(ds, sampler): return DataLoader(ds, sampler=sampler)``: the sampler every
    call of the function passes for that parameter (the same one at each call), if it is never
    rebound in the function."""
    fn = model.functions.get(scope)
    if fn is None or name not in fn.params or any(name in t for t, _v, _c in model.assignments_in(scope)):
        return None
    sites = [e for e in model.effects if e.kind == CALL and e.callee == scope]
    chosen: Optional[Sampler] = None
    for site in sites:
        ref = (site.args or {}).get(name)
        hit = None
        for sampler in found:
            if sampler.binding is not None and ref == sampler.binding.ref and sees(model, sampler.binding.scope, ref, site.ctx.scope):
                hit = sampler
        if hit is None or (chosen is not None and hit is not chosen):
            return None
        chosen = hit
    return chosen


def _returned_at(model: FileModel, fn_key: str, names: Set[str], node: cst.CSTNode) -> Optional[Tuple[Optional[int], int]]:
    """Whether the function returns the loader (``node`` itself or one of ``names``): (None, 1)
    for a plain return, (i, n) for element i of an n-tuple; None when it does not (or not always
    at the same place)."""
    fn = model.functions.get(fn_key)
    if fn is None:
        return None
    places = set()
    for ret in model.index.nodes(cst.Return, fn.node, nested=False):
        value = ret.value
        if value is None:
            continue
        if value is node or ref_of(value) in names:
            places.add((None, 1))
        elif isinstance(value, cst.Tuple):
            for i, element in enumerate(value.elements):
                if element.value is node or ref_of(element.value) in names:
                    places.add((i, len(value.elements)))
    return places.pop() if len(places) == 1 else None


def loaders(model: FileModel) -> List[Loader]:
    """DataLoaders fed by a shuffling DistributedSampler, with the names that hold them."""

    def compute(model: FileModel) -> List[Loader]:
        found = samplers(model)
        out: List[Loader] = []
        if not found:
            return out
        for call, ctx in model.calls:
            last = _last(model, call.func)
            if not last.endswith("DataLoader"):
                continue  # torch's, or a subclass / wrapper named like it (MultiEpochsDataLoader)
            sampler = _sampler_of(model, call, ctx.scope, found, positional=last == "DataLoader")
            if sampler is None:
                continue
            loader = Loader(call, ctx, sampler)
            outer, parent = _holder(model, call)
            names: Set[str] = set()
            if isinstance(parent, (cst.Assign, cst.AnnAssign)):
                assigned = _assignment_of(model, outer)
                if assigned is not None and len(assigned[0]) == 1:
                    loader.bindings.append(Binding(ctx.scope, assigned[0][0], assigned[1]))
                    names.add(assigned[0][0])
            elif isinstance(parent, cst.DictElement) and isinstance(parent.key, cst.SimpleString):
                assigned = _assignment_of(model, model.parents.get(parent))  # {"train": DataLoader(...)}
                if assigned is not None and len(assigned[0]) == 1 and assigned[0][0].isidentifier():
                    loader.bindings.append(Binding(ctx.scope, f"{assigned[0][0]}[{parent.key.value}]", assigned[1]))
            if ctx.scope in model.functions:
                place = _returned_at(model, ctx.scope, names, outer)
                if place is not None:
                    loader.bindings.extend(_bound_by_callers(model, ctx.scope, place))
            for binding in list(loader.bindings):
                loader.bindings.extend(_handed_to_instances(model, binding))
            if loader.bindings:
                out.append(loader)
        return out

    return model.memo("ml017.loaders", compute)


def _handed_to_instances(model: FileModel, binding: Binding) -> List[Binding]:
    """``Trainer(model, loader)`` for a class of the file whose ``__init__`` keeps that
    parameter as ``self.<attr> = param`` (and binds ``self.<attr>`` nowhere else in the class,
    nor gives the parameter to code the file does not show): ``self.<attr>`` in the class holds
    the loader (``self.loaders["train"]`` for ``Trainer(loaders)`` given ``loaders = {"train":
    DataLoader(...)}``)."""
    ref = binding.ref
    if ref.startswith(("self.", "cls.")):
        return []
    head = ref.split("[", 1)[0]
    out: List[Binding] = []
    for call, ctx in model.calls:
        cls = dotted(call.func)
        init = model.functions.get(f"{cls}.__init__") if cls in model.classes else None
        if init is None or not sees(model, binding.scope, head, ctx.scope):
            continue
        params = [p for p in init.params if p not in ("self", "cls")]
        given: Dict[str, Optional[str]] = {}
        for i, arg in enumerate(call.args):
            if arg.star:
                break
            name = arg.keyword.value if arg.keyword is not None else (params[i] if i < len(params) else None)
            if name is not None:
                given[name] = ref_of(arg.value)
        key = f"{cls}.__init__"
        for param, arg in given.items():
            if arg != head or param not in init.params or any(param in t for t, _v, _c in model.assignments_in(key)):
                continue
            if _hands_over(model, _calls_in(model, key), {param}, False):
                continue
            for targets, value, actx in model.assignments_in(key):
                if len(targets) != 1 or not targets[0].startswith("self.") or not (isinstance(value, cst.Name) and value.value == param):
                    continue
                attr = targets[0]
                if all(
                    isinstance(v, cst.Name) and v.value == param and c.scope == key and len(t) == 1
                    for t, v, c in model.assignments_naming(attr)
                    if model.class_scope_of(c.scope) == cls
                ):
                    out.append(Binding(key, attr + ref[len(head):], actx))
    return out


def _bound_by_callers(model: FileModel, fn_key: str, place: Tuple[Optional[int], int]) -> List[Binding]:
    index, size = place
    out = []
    for effect in model.effects:
        if effect.kind != CALL or effect.callee != fn_key:
            continue
        assigned = _assignment_of(model, effect.node)
        if assigned is None:
            continue
        targets, ctx = assigned
        if index is None and len(targets) == 1:
            out.append(Binding(ctx.scope, targets[0], ctx))
        elif index is not None and len(targets) == size:
            out.append(Binding(ctx.scope, targets[index], ctx))
    return out


def _wraps(value: cst.BaseExpression, name: str) -> bool:
    while isinstance(value, cst.Call):
        callee = dotted(value.func) or ""
        if callee.rsplit(".", 1)[-1] not in _ITER_WRAPPERS or not value.args:
            return False
        value = value.args[0].value
    return ref_of(value) == name


def _loops_over(model: FileModel, binding: Binding, via: Tuple[Effect, ...], depth: int, out: list) -> None:
    scope, ref = binding.scope, binding.ref
    aliases: Dict[str, Set[str]] = {}  # scope -> names wrapping the loader there (pbar = tqdm(loader))
    passes: Dict[Tuple[str, str], List[Context]] = {}  # (scope, name) -> where ``name = iter(loader)`` starts a pass
    for targets, value, ctx in model.assignments:
        for target, part in pairs(targets, value):
            if _wraps(part, ref) and sees(model, scope, ref, ctx.scope):
                aliases.setdefault(ctx.scope, set()).add(target)
                passes.setdefault((ctx.scope, target), []).append(ctx)
    for loop in model.loops:
        if loop.iter_ref is None or not sees(model, scope, ref, loop.scope):
            continue
        if loop.iter_ref == ref or loop.iter_ref in aliases.get(loop.scope, ()):
            out.append((loop, via, None))
    for call, ctx in _next_calls(model):
        if ctx.loop is None or not sees(model, scope, ref, ctx.scope):
            continue
        inner = _drawing_loop(call.args[0].value, ctx, ref, passes)
        if inner is not None:
            out.append((inner, via, call))
    if depth >= 2:
        return
    for effect in model.effects:
        if effect.kind != CALL or not effect.args or not effect.callee or not sees(model, scope, ref, effect.ctx.scope):
            continue
        for param, arg in effect.args.items():
            if arg == ref and param not in ("self", "cls"):
                _loops_over(model, Binding(effect.callee, param), via + (effect,), depth + 1, out)


def _next_calls(model: FileModel) -> List[Tuple[cst.Call, Context]]:
    return model.memo(
        "ml017.next_calls",
        lambda m: [(c, x) for c, x in m.calls if c.args and not c.args[0].star and _last(m, c.func) == "next" and x.loop is not None],
    )


def _drawing_loop(arg: cst.BaseExpression, ctx: Context, ref: str, passes: Dict[Tuple[str, str], List[Context]]) -> Optional[Loop]:
    """The loop that draws the loader's batches with ``next(...)`` (at ``ctx``), once per fresh
    pass over it: ``next(iter(loader))`` in a loop (a fresh pass per call), or ``it =
    iter(loader)`` (``cycle(loader)``) made in the same scope outside that loop, which is then
    the outermost loop around the ``next`` call inside the one the pass is made in (``it =
    iter(loader)`` in the epoch loop, ``next(it)`` in its step loop; a pass made again under
    ``except StopIteration:`` inside the step loop does not count)."""
    if isinstance(arg, cst.Call):
        return ctx.loop if _wraps(arg, ref) else None
    if not isinstance(arg, cst.Name):
        return None
    for made in passes.get((ctx.scope, arg.value), ()):
        outer = made.loop
        inner = ctx.loop
        if inner is outer or (outer is not None and not outer.encloses(inner)):
            continue
        while inner is not None and inner.parent is not outer:
            inner = inner.parent
        if inner is not None:
            return inner
    return None


def _call_sites(model: FileModel, key: str) -> List[Effect]:
    return [e for e in model.effects if e.kind == CALL and e.callee == key]


def _epoch_loops(model: FileModel, inner: Loop, via: Tuple[Effect, ...]) -> List[Tuple[Loop, Tuple[Effect, ...]]]:
    """The loops whose iterations run ``inner`` once each: its parent loop, or the loop around
    the call that reaches it (through ``via``, or through the callers of its function)."""
    if inner.parent is not None:
        return [(inner.parent, via)]
    for i in range(len(via) - 1, -1, -1):
        if via[i].ctx.loop is not None:
            return [(via[i].ctx.loop, via[: i + 1])]
    if via:
        return []
    out = []
    frontier = [(inner.scope, ())]
    for _level in range(2):
        nxt = []
        for key, chain in frontier:
            for site in _call_sites(model, key):
                if site.ctx.loop is not None:
                    out.append((site.ctx.loop, (site,) + chain))
                else:
                    nxt.append((site.ctx.scope, (site,) + chain))
        frontier = nxt
    return out


def in_loop(ctx: Optional[Context], loop: Loop) -> bool:
    return ctx is not None and ctx.scope == loop.scope and loop.encloses(ctx.loop)


def _calls_in(model: FileModel, scope: str) -> List[Tuple[cst.Call, Context]]:
    def compute(model: FileModel) -> Dict[str, List[Tuple[cst.Call, Context]]]:
        table: Dict[str, List[Tuple[cst.Call, Context]]] = {}
        for call, ctx in model.calls:
            table.setdefault(ctx.scope, []).append((call, ctx))
        return table

    return model.memo("ml017.calls_by_scope", compute).get(scope, [])


def _nested_scopes(model: FileModel, key: str) -> List[str]:
    return [key] + [k for k in model.functions if k.startswith(key + ".")]


def region_calls(model: FileModel, loop: Loop) -> Tuple[List[Tuple[cst.Call, Context]], Set[str]]:
    """The calls one iteration of ``loop`` makes (nested loops included) and in the local
    functions it calls (transitively), with the keys of those functions."""
    calls = [(c, ctx) for c, ctx in _calls_in(model, loop.scope) if loop.encloses(ctx.loop)]
    reached: Set[str] = set()
    frontier = [e.callee for e in model.effects_in(loop.scope) if e.kind == CALL and e.callee and loop.encloses(e.ctx.loop)]
    while frontier:
        key = frontier.pop()
        if key in reached:
            continue
        reached.add(key)
        for scope in _nested_scopes(model, key):
            calls.extend(_calls_in(model, scope))
            frontier.extend(e.callee for e in model.effects_in(scope) if e.kind == CALL and e.callee)
    return calls, reached


def _outer(loop: Loop) -> Iterator[Loop]:
    current = loop.parent
    while current is not None:
        yield current
        current = current.parent


def _sets_epoch(model: FileModel, calls, loader: Optional[Loader] = None) -> bool:
    """Whether one of the calls sets an epoch (``set_epoch``, ``set_*epoch``), on anything but
    an object the file shows to be another sampler or another loader's (``val_sampler``)."""
    for call, ctx in calls:
        func = call.func  # also ``self.samplers["train"].set_epoch(e)``, which has no dotted name
        name = func.attr.value if isinstance(func, cst.Attribute) else (dotted(func) or "")
        if _SET_EPOCH.search(name):
            if loader is not None and _other_sampler(model, call, ctx, loader):
                continue
            return True
    return False


def _bound_values(model: FileModel, ref: str, scope: str) -> Optional[List[cst.BaseExpression]]:
    """Every value ``ref`` is given where ``scope`` reads it (its class for ``self.x``, the
    scope itself, else the module for a global); None when one is unknown (unpacking, none)."""
    if ref.startswith("self."):
        cls = model.class_scope_of(scope)
        if cls is None:
            return None
        home = [(t, v) for t, v, c in model.assignments_naming(ref) if model.class_scope_of(c.scope) == cls]
    else:
        head = ref.split(".", 1)[0]
        home = [(t, v) for t, v, c in model.assignments_naming(ref) if c.scope == scope]
        if not home and head not in model.locals.get(scope, set()):
            home = [(t, v) for t, v, c in model.assignments_naming(ref) if c.scope == MODULE_SCOPE]
    if not home or any(len(t) != 1 for t, _v in home):
        return None
    return [v for _t, v in home]


def _other_sampler(model: FileModel, call: cst.Call, ctx: Context, loader: Loader) -> bool:
    """``val_sampler.set_epoch(e)`` / ``val_loader.sampler.set_epoch(e)`` where every value the
    receiver is given is another DistributedSampler call (another DataLoader call)."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    ref = ref_of(func.value)
    if ref is None:
        return False
    if ref.endswith(".sampler"):
        values = _bound_values(model, ref[: -len(".sampler")], ctx.scope)
        return bool(values) and all(
            isinstance(v, cst.Call) and _last(model, v.func).endswith("DataLoader") and v is not loader.call for v in values  # type: ignore[union-attr]
        )
    values = _bound_values(model, ref, ctx.scope)
    if not values:
        return False
    mine = loader.sampler.call
    seen_sampler = False
    for value in values:
        for branch in branches(value):
            if is_none(branch):
                continue
            if not is_sampler_call(model, branch) or branch is mine:
                return False
            seen_sampler = True
    return seen_sampler


def _local_call_nodes(model: FileModel) -> Set[cst.CSTNode]:
    return model.memo("ml017.local_calls", lambda m: {e.node for e in m.effects if e.kind == CALL})


def _hands_over(model: FileModel, calls, tracked: Set[str], self_held: bool, per_batch: FrozenSet[cst.Call] = frozenset()) -> bool:
    """Whether a call the file cannot see into receives the loader or the sampler (or, for
    objects held on ``self``, ``self`` itself or a method of it the file does not define,
    unless it runs once per batch (``per_batch``: ``self._backward(loss)`` in the loop over the
    loader) and has no ``epoch`` in its name: an epoch is set once per epoch, not per step)."""
    local = _local_call_nodes(model)
    for call, ctx in calls:
        if call in local:
            continue
        func = call.func
        last = (dotted(func) or "").rsplit(".", 1)[-1]
        if last in _HARMLESS:
            continue
        if self_held and isinstance(func, cst.Attribute) and ref_of(func.value) == "self" and _may_inherit(model, ctx.scope, func.attr.value):
            if call not in per_batch or "epoch" in func.attr.value.lower():
                return True  # an inherited hook (``self.on_epoch_start(epoch)``) may set the epoch
            continue
        for arg in call.args:
            ref = ref_of(arg.value)
            if ref is None:
                continue
            if ref in tracked or any(ref.startswith(t + ".") or t.startswith(ref + "[") for t in tracked) or (self_held and ref == "self"):
                return True
    return False


def _may_inherit(model: FileModel, scope: str, name: str) -> bool:
    """Whether ``self.<name>(...)`` in ``scope`` may run a method the file does not show: not
    when the class assigns ``self.<name>`` (a model, a loss: an object held, not a hook) nor
    when the class has no base to inherit it from."""
    cls = model.class_scope_of(scope)
    if cls is None:
        return True
    info = model.classes.get(cls)
    if info is not None and all(b.rsplit(".", 1)[-1] == "object" for b in info.bases):
        return False
    for _targets, _value, ctx in model.assignments_naming(f"self.{name}"):
        if model.class_scope_of(ctx.scope) == cls:
            return False
    return True


def _framework_loader(model: FileModel, tracked: Set[str]) -> bool:
    for call, _ctx in model.calls:
        if _last(model, call.func) not in _FRAMEWORK_WRAP:
            continue
        for arg in call.args:
            for branch in branches(arg.value):
                if ref_of(branch) in tracked:
                    return True
    return False


def _trains(model: FileModel, inner: Loop) -> bool:
    """Whether the loop over the loader trains: a backward pass or an optimizer step in it
    (helpers included), or a call named like a training step."""
    if any(e.kind in (BACKWARD, STEP) for e in model.loop_effects(inner)):
        return True
    calls, _reached = region_calls(model, inner)
    for call, ctx in calls:
        if ctx.grad == "off":
            continue
        name = (dotted(call.func) or "").rsplit(".", 1)[-1]
        if name == "update" and isinstance(call.func, cst.Attribute):
            continue  # meter.update(loss.item()): bookkeeping in any loop (a scaler's comes with a step)
        if _TRAINS.search(name):
            return True
    return False


def unseeded(model: FileModel) -> List[Unseeded]:
    """Epoch loops around a training loop over a DistributedSampler's loader that never call
    ``set_epoch`` (one entry per epoch loop, the first loader found)."""
    out: List[Unseeded] = []
    seen: Set[cst.CSTNode] = set()
    for loader in loaders(model):
        sampler = loader.sampler
        tracked = {b.ref for b in loader.bindings}
        if sampler.binding is not None:
            tracked.add(sampler.binding.ref)
        self_held = any(r.startswith("self.") for r in tracked)
        if _framework_loader(model, tracked):
            continue
        found: list = []
        for binding in loader.bindings:
            _loops_over(model, binding, (), 0, found)
        for inner, via, through in found:
            for epoch, chain in _epoch_loops(model, inner, via):
                if epoch.node in seen:
                    continue
                contexts = [sampler.ctx, loader.ctx] + [b.ctx for b in loader.bindings]
                if sampler.binding is not None:
                    contexts.append(sampler.binding.ctx)
                if any(in_loop(c, epoch) for c in contexts):
                    continue  # built anew each epoch
                calls, reached = region_calls(model, epoch)
                if any(c is not None and c.scope in reached for c in contexts):
                    continue  # built by a function the epoch loop calls
                if _sets_epoch(model, calls, loader) or any(
                    _sets_epoch(model, region_calls(model, outer)[0], loader) for outer in _outer(epoch)
                ):
                    continue  # told the epoch here, or in a loop around this one
                names = set(tracked) | {param for e in chain for param, arg in (e.args or {}).items() if arg in tracked}
                per_batch = frozenset(c for c, _x in region_calls(model, inner)[0]) if self_held else frozenset()
                if _hands_over(model, calls, names, self_held, per_batch):
                    continue
                if not _trains(model, inner):
                    continue
                seen.add(epoch.node)
                out.append(Unseeded(epoch, inner, loader, chain, through))
    return out
