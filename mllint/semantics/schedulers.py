"""Learning-rate schedulers: which names hold a torch LR scheduler, and where it is stepped
relative to the optimizer it drives (ML014).

A scheduler is identified, strongest evidence first, by what it was built from (a class of
``torch.optim.lr_scheduler``, a transformers ``get_*_schedule*`` factory, a warm-up wrapper,
a class in the file subclassing one, or any call handed an optimizer as its first argument),
by an ``LRScheduler`` annotation, or, when nothing in the file binds it (a parameter, an
attribute set elsewhere, a name unpacked from a value the file does not show:
``self.optimizer, self.lr_scheduler = optimizers``), by its spelling (``scheduler``,
``lr_scheduler``, ``sched``). ``a, b = x, y`` binds each name to its element.
Anything bound to something else (a diffusers noise scheduler, a custom object) is not one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

import libcst as cst

from mllint.semantics import roles as R
from mllint.semantics.model import ANY, CALL, STEP, Cond, Effect, FileModel, Loop, conds_within, translate
from mllint.semantics.names import dotted, ref_of

# Constructors and factories of torch LR schedulers (by qualified or spelled name).
_LR_SCHEDULER_Q = re.compile(
    r"(^torch\.optim\.lr_scheduler\.|\.lr_scheduler\.[A-Z]\w*$|^transformers\.(optimization\.)?get_\w*schedule\w*$"
    r"|(^|\.)get_\w*schedule\w*$|(^|\.)(StepLR|MultiStepLR|ExponentialLR|CosineAnnealingLR|CosineAnnealingWarmRestarts"
    r"|ReduceLROnPlateau|CyclicLR|OneCycleLR|LambdaLR|MultiplicativeLR|LinearLR|ConstantLR|PolynomialLR|SequentialLR"
    r"|ChainedScheduler|GradualWarmupScheduler|Warmup\w*|\w*WarmupLR|\w*Warmup\w*Schedule\w*|PolyLR|\w+LRScheduler)$)"
)
# Schedulers that are not learning-rate schedulers: samplers of diffusion models, and
# schedulers of other frameworks (their step() drives something else).
_NOT_LR_Q = re.compile(
    r"(^diffusers\.|^(tensorflow|keras|jax|optax|paddle|mxnet)\.|noise|DDPM|DDIM|PNDM|Euler|DPMSolver|Karras|LMS|Heun"
    r"|FlowMatch|Scheduler\.from_pretrained$|\.from_config$|\bray\.|tune\.schedulers)"
)
_LR_SCHEDULER_BASES = re.compile(r"(^|\.)(_LRScheduler|LRScheduler|LambdaLR|StepLR|MultiStepLR|CosineAnnealingLR|OneCycleLR)$")
_SCHEDULER_SPELLING = re.compile(r"^(lr_?)?sched(uler)?s?(_\w+|[A-Z]\w*|\d+)?$|^\w+_(lr_)?sched(uler)?$|lr_sched", re.IGNORECASE)


@dataclass(frozen=True)
class SchedulerInfo:
    ref: str
    optimizer: Optional[str]  # the optimizer it was built on, when seen (None: unknown)
    evidence: str  # "constructor", "annotation" or "name"
    qualname: Optional[str] = None  # what it was built from, when seen


def _is_lr_constructor(qual: str) -> bool:
    return bool(_LR_SCHEDULER_Q.search(qual)) and not _NOT_LR_Q.search(qual)


def _local_lr_class(model: FileModel, name: str, seen=None) -> bool:
    seen = seen if seen is not None else set()
    cls = model.classes.get(name)
    if cls is None or name in seen:
        return False
    seen.add(name)
    return any(_LR_SCHEDULER_BASES.search(b) or _local_lr_class(model, b.rsplit(".", 1)[-1], seen) for b in cls.bases)


def _bindings(model: FileModel, ref: str, scope: str) -> List[cst.BaseExpression]:
    """Values assigned to ``ref`` where ``scope`` sees them: the scope itself, enclosing
    functions and the module for a bare name, any method of the class for ``self.x``."""
    scopes = {scope}
    parts = scope.split(".")
    for end in range(1, len(parts)):
        scopes.add(".".join(parts[:end]))
    scopes.add("<module>")
    cls_scope = model.class_scope_of(scope) if ref.startswith("self.") else None
    out = []
    for targets, value, ctx in model.assignments_naming(ref):
        if ref not in targets:
            continue
        if ctx.scope in scopes or (cls_scope and (ctx.scope == cls_scope or ctx.scope.startswith(cls_scope + "."))):
            if len(targets) != 1:
                out.append(_unpacked(value, targets.index(ref), len(targets)))
            else:
                out.append(value)
    return out


_UNSEEN = "__unseen__"


def _unpacked(value: cst.BaseExpression, index: int, count: int) -> cst.BaseExpression:
    """The element ``a, b = x, y`` binds at ``index``; for any other right-hand side
    (``opt, sched = optimizers``, ``model, opt, sched = accelerator.prepare(...)``) a
    marker saying the value is not seen in the file: that binding is no evidence either way."""
    if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == count \
            and not any(isinstance(e, cst.StarredElement) for e in value.elements):
        return value.elements[index].value
    return cst.Name(_UNSEEN)


def _optimizer_argument(model: FileModel, call: cst.Call, scope: str) -> Tuple[bool, Optional[str]]:
    """(handed an optimizer, its ref) for a scheduler constructor call."""
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value == "optimizer":
            ref = ref_of(arg.value)
            if ref and model.has_role(ref, R.OPTIMIZER, scope):
                return True, ref
            if arg.keyword is None:
                break
    return False, None


def lr_scheduler(model: FileModel, ref: str, scope: str, _seen: Optional[frozenset] = None) -> Optional[SchedulerInfo]:
    """What is known about ``ref`` as a torch LR scheduler (None: not one we can identify)."""
    if not ref or ref == ANY or "noise" in ref.lower():
        return None
    _seen = (_seen or frozenset()) | {ref}
    if len(_seen) > 6:
        return None
    values = [v for v in _bindings(model, ref, scope) if not (isinstance(v, cst.Name) and v.value in ("None", _UNSEEN))]
    if values:
        info = None
        for value in values:
            if not isinstance(value, cst.Call):
                source = ref_of(value)
                if source and source not in _seen:
                    found = lr_scheduler(model, source, scope, _seen)
                    if found is None:
                        return None
                    info = info or found
                    continue
                return None
            qual = model.imports.qualname(value.func) or dotted(value.func) or ""
            if _NOT_LR_Q.search(qual):
                return None
            handed, optimizer = _optimizer_argument(model, value, scope)
            local = dotted(value.func)
            if local and _optimizer_wrapper(model, local):
                return None  # its step() steps an optimizer: the optimizer step itself
            if _is_lr_constructor(qual) or (local and _local_lr_class(model, local)) or handed:
                info = info or SchedulerInfo(ref, optimizer, "constructor", qual)
                continue
            return None
        return info
    known = model.roles.get(scope, ref)
    if known and R.SCHEDULER not in known:
        return None
    if known and R.SCHEDULER in known:
        return SchedulerInfo(ref, None, "annotation")
    last = ref.rsplit(".", 1)[-1].strip("_")
    if _SCHEDULER_SPELLING.search(last):
        return SchedulerInfo(ref, None, "name")
    return None


def _optimizer_wrapper(model: FileModel, name: str) -> bool:
    """A class of this file whose ``step`` method steps an optimizer (``self.optimizer.step()``,
    then maybe its scheduler): an optimizer wrapper, whatever its name says."""
    if name not in model.classes:
        return False
    key = model.method_key(name, "step")
    summary = model.summaries.get(key or "")
    return bool(summary is not None and (summary.top_steps or summary.loop_steps))


@dataclass(frozen=True)
class StepAhead:
    """A scheduler step that runs, in one iteration (or one function body), before the
    optimizer step it should follow."""

    scheduler: SchedulerInfo
    call: cst.Call  # scheduler.step()
    ctx: object  # its Context
    step: Optional[Effect]  # the optimizer step in the same block (None: in a nested loop or a helper)
    optimizer: str  # the optimizer stepped after it
    nested: bool  # the optimizer step sits in a loop nested in the scheduler's loop (per-epoch)
    via: Optional[Effect] = None  # the helper call through which the optimizer step comes


def _flag(cond: Cond) -> bool:
    """A condition that holds on every iteration or on none (a switch, a None check), or that
    holds from the first iteration on (a warm-up guard): a scheduler step under it still runs
    first where it is placed."""
    node = cond.node
    if cond.branch != "if" or node is None:
        return False
    if isinstance(node, (cst.Name, cst.Attribute)):
        return True
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        comp = node.comparisons[0]
        return (
            isinstance(comp.operator, cst.IsNot) and isinstance(comp.comparator, cst.Name)
            and comp.comparator.value == "None" and isinstance(node.left, (cst.Name, cst.Attribute))
        ) or _warmup_guard(node)
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And):
        return _flag(Cond(cond.text, "if", cond.loop, node.left)) and _flag(Cond(cond.text, "if", cond.loop, node.right))
    return _warmup_guard(node)


def _counter(node: cst.BaseExpression) -> bool:
    """A loop counter: a plain name (``epoch``, ``step``), possibly shifted (``epoch - 1``)."""
    return isinstance(node, cst.Name) or (
        isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract))
        and isinstance(node.left, cst.Name) and isinstance(node.right, cst.Integer))


def _bound(node: cst.BaseExpression) -> bool:
    """A bound a counter is compared with: a setting (``args.warm``), a number, a call
    (``len(loader)``), an expression of them; not another plain name (which side counts
    would be a guess), nor 0."""
    if _counter(node):
        return False
    if isinstance(node, (cst.Integer, cst.Float)):
        return float(node.value) != 0
    return isinstance(node, (cst.Attribute, cst.Call, cst.Subscript, cst.BinaryOperation))


def _warmup_guard(node: cst.CSTNode) -> bool:
    """``if epoch <= args.warm:``, ``if step < len(loader) * 5:``: a counter under an upper bound
    holds from the first iteration (counters start low), so a scheduler stepped under it runs
    on the first iteration like an unconditional one. A lower bound (``if epoch > 0:``) does not."""
    if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
        return False
    comp = node.comparisons[0]
    if isinstance(comp.operator, (cst.LessThan, cst.LessThanEqual)):
        return _counter(node.left) and _bound(comp.comparator)
    if isinstance(comp.operator, (cst.GreaterThan, cst.GreaterThanEqual)):
        return _counter(comp.comparator) and _bound(node.left)
    return False


def _matches(model: FileModel, optimizer: Optional[str], stepped: str, scope: str) -> bool:
    if optimizer is None or stepped == ANY:
        return True
    return model.canonical(optimizer, scope) == model.canonical(stepped, scope) or optimizer == stepped


def _optimizer_steps(model: FileModel, loop: Optional[Loop], scope: str) -> Iterator[Tuple[Effect, str, bool, Tuple[Cond, ...], Optional[Effect]]]:
    """Optimizer steps within ``loop``'s body (the scope's body for None), in order:
    (effect, optimizer, nested in a loop of its own, conditions at ``loop``'s level, helper call)."""
    for effect in model.effects_in(scope):
        if loop is not None and not loop.encloses(effect.ctx.loop):
            continue
        nested = effect.ctx.loop is not loop
        conds = conds_within(effect.ctx.conds, loop)
        if effect.kind == STEP:
            if model.has_role(effect.ref, R.SCALER, scope):
                continue
            yield effect, effect.ref, nested, conds, None
        elif effect.kind == CALL:
            summary = model.summaries.get(effect.callee or "")
            if summary is None:
                continue
            mapping = effect.args or {}
            for site in summary.top_steps:
                yield effect, translate(site.ref, mapping), nested, conds + tuple(site.conds), effect
            for ref in summary.loop_steps:
                yield effect, translate(ref, mapping), True, conds, effect


_TRAINER_CALL = re.compile(r"^(train|fit)(_(one_)?epoch|_step|_loop)?$|^train_\w*epoch\w*$|^run_\w*train\w*$")


def _external_trainer_steps(model: FileModel, loop: Optional[Loop], scope: str) -> Iterator[Tuple[Effect, str, bool, Tuple[Cond, ...], Optional[Effect]]]:
    """Calls of a training function not defined in the file (``tnt.train(model, loader,
    optimizer=opt)``, ``train_one_epoch(model, criterion, loader, optimizer, ...)``) handed an
    optimizer: taken to step it inside the epoch they train."""
    local = {e.node for e in model.effects_in(scope) if e.kind == CALL}
    for call, ctx in model.calls:
        if ctx.scope != scope or call in local or (loop is not None and not loop.encloses(ctx.loop)):
            continue
        name = (dotted(call.func) or "").rsplit(".", 1)[-1]
        if not _TRAINER_CALL.match(name):
            continue
        for arg in call.args:
            ref = ref_of(arg.value)
            if ref and (arg.keyword is None or "optim" in arg.keyword.value) and model.has_role(ref, R.OPTIMIZER, scope):
                order = model.call_order.get(call)
                if order is not None:
                    effect = Effect(STEP, ref, call, ctx, order)
                    yield effect, ref, True, conds_within(ctx.conds, loop), effect


def steps_ahead(model: FileModel) -> Iterator[StepAhead]:
    """Every zero-argument ``scheduler.step()`` of an identified LR scheduler that runs before
    the optimizer's step in the same iteration of its innermost loop (or the same body of a
    function), with no step of that optimizer before it there."""
    for call, ctx in model.calls:
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "step" or call.args:
            continue  # step(metric) / step(epoch) / a sampler's step(output, t, x): not the skipped first lr
        receiver = ref_of(func.value)
        if receiver is None:
            continue
        info = lr_scheduler(model, receiver, ctx.scope)
        if info is None or model.has_role(receiver, R.OPTIMIZER, ctx.scope, by_name=False):
            continue
        order = model.call_order.get(call)
        if order is None:
            continue
        loop = ctx.loop
        my_conds = conds_within(ctx.conds, loop)
        before = False
        after = None
        candidates = sorted(
            list(_optimizer_steps(model, loop, ctx.scope)) + list(_external_trainer_steps(model, loop, ctx.scope)),
            key=lambda item: item[0].order,
        )
        for effect, optimizer, nested, conds, via in candidates:
            if not _matches(model, info.optimizer, optimizer, ctx.scope):
                continue
            if effect.order < order:
                before = True
                break
            if after is not None:
                continue
            # Conditions at this level: the optimizer's must hold whenever the scheduler's do
            # (the scheduler may sit under extra switches such as ``if scheduler is not None``).
            extra_opt = [c for c in conds if c not in my_conds]
            extra_sched = [c for c in my_conds if c not in conds]
            if extra_opt or not all(_flag(c) for c in extra_sched):
                before = True  # cannot order them: stay silent
                break
            after = (effect, optimizer, nested, via)
        if before or after is None:
            continue
        effect, optimizer, nested, via = after
        if loop is None and ctx.scope == "<module>" and not nested:
            pass
        yield StepAhead(info, call, ctx, None if (nested or via) else effect, optimizer, nested, via)
