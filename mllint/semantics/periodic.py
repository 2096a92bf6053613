"""Optimizer steps that run every N iterations (gradient accumulation) and whether the loss
backpropagated on the other iterations is divided by N (ML015).

Built on the loop effects of model.py (``FileModel.loop_effects``: STEP, BACKWARD and CLEAR
effects with the conditions they run under inside the loop, helpers included), the way ML001
reads accumulation ("``step()`` and ``zero_grad()`` both run every N iterations"):

- a *periodic guard* is a condition of the loop body that counts iterations (model.py's
  ``counts_iterations``) with a modulus (``moduli``): ``(i + 1) % accum_steps == 0``,
  ``step % 4 == 0``, ``not (i + 1) % n``, also one side of ``... or last_batch`` / ``... and
  i > 0``; or a counter guard ``if counter == N:`` / ``>= N`` whose branch resets the counter
  (``counter = 0``) while the loop increments it (``counter += 1``); also an early
  ``if (i + 1) % N != 0: continue`` in front of the step;
- an *accumulating step* (`accumulating_steps`) is an optimizer step directly in a loop body
  under such a guard, fed by a backward pass of the same body that runs on the other
  iterations as well (not under a periodic guard of its own, not inside the helper that
  steps), every clearing of that optimizer in the loop periodic too (a clearing on every
  iteration throws the other gradients away: no accumulation), at least one of them;
- a *per-call step* (`per_call_steps`) is the same in a method with no loop: the backward pass
  on every call, an attribute counting the calls (``self._micro += 1`` on the method's straight
  line, nowhere else), the step and every clearing under ``self._micro == N`` / ``>= N`` (the
  branch resetting the counter) or ``self._micro % N == 0``, the method called once per batch;
- `loss_divided` says whether the tensor ``.backward()`` is called on is, or might be,
  divided before the call: any division on its way (``loss / n``, ``loss /= n``,
  ``loss.div(n)``, ``loss * (1 / n)``, a factor named like a scale), a helper of the file
  that divides what it returns (its parameters followed to the caller's arguments; one element
  of a returned tuple), a call handed the count, apex's ``amp.scale_loss(loss / n)``; a factor
  read from the batch (``weight = batch_data[...]``) is a per-sample weight, no division.
  Whatever cannot be followed counts as divided (silence).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from mllint.semantics.model import (
    ANY,
    BACKWARD,
    CALL,
    CLEAR,
    FRESH,
    MODULE_SCOPE,
    STEP,
    Cond,
    FileModel,
    Loop,
    LoopEffect,
    conds_within,
    counts_iterations,
    moduli,
    translate,
)
from mllint.semantics import roles as R
from mllint.semantics.names import dotted, ref_of

_EMPTY = cst.Module(body=[])


def _code(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node).strip()


@dataclass
class Guard:
    """A periodic guard: the condition (or the early ``continue`` test) and its count."""

    count: cst.BaseExpression  # N: the modulus, or the bound of a reset counter
    cond: Optional[Cond]  # None for an early ``if ...: continue``

    @property
    def text(self) -> str:
        return _code(self.count)


@dataclass
class AccumulatingStep:
    loop: Loop
    step: LoopEffect
    backward: LoopEffect
    guard: Guard
    inner: Optional[Loop] = None  # the micro-batch loop holding the backward pass (step after it)
    method: Optional[str] = None  # per-call accumulation: the method (``loop`` stands for its body)
    counter: Optional[str] = None  # per-call accumulation: the attribute counting its calls


# --- periodic guards ------------------------------------------------------------------------


def _modulus_of(
    node: cst.BaseExpression, loop: Loop, holds: bool, model: Optional[FileModel] = None
) -> Optional[cst.BaseExpression]:
    """The modulus ``N`` when ``node`` (a test that holds iff ``holds``) is ``<count> % N == k``
    (``holds``) or ``<count> % N != k`` / ``<count> % N`` (not ``holds``), the left side counting
    iterations; None for anything else. An ``N`` of the literal 1 is no period."""
    while isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        node, holds = node.expression, not holds
    modulo = None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
        if holds:
            return None  # ``if i % n:`` runs on the iterations between, not every n-th
        modulo = node
    elif isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        target = node.comparisons[0]
        if isinstance(target.operator, cst.Equal):
            pass
        elif isinstance(target.operator, cst.NotEqual):
            holds = not holds
        else:
            return None
        if not holds:
            return None
        sides = [node.left, target.comparator]
        modulo = next((x for x in sides if isinstance(x, cst.BinaryOperation) and isinstance(x.operator, cst.Modulo)), None)
        other = [x for x in sides if x is not modulo]
        if modulo is None or not other or isinstance(other[0], (cst.SimpleString, cst.FormattedString)):
            return None
    if modulo is None:
        return None
    right = modulo.right
    if isinstance(right, cst.Integer) and int(right.value, 0) < 2:
        return None
    if isinstance(modulo.left, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
        return None  # "%d" % x
    probe = Cond(None, "if", loop, modulo.left, render=lambda: "")
    if not counts_iterations(probe, loop.targets) and not _incremented(loop, modulo.left):
        if model is None or not _derived_counter(model, loop, modulo.left):
            return None
    return right


def _derived_counter(model: FileModel, loop: Loop, node: cst.BaseExpression) -> bool:
    """Whether ``node`` is a name bound once in the loop body from the loop's own counter
    (``ni = i + nb * epoch``: the batches since the start of training)."""
    if not isinstance(node, cst.Name) or not loop.targets:
        return False
    bound = [(value, ctx) for targets, value, ctx in model.assignments_naming(node.value) if ctx.scope == loop.scope]
    if len(bound) != 1 or bound[0][1].loop is not loop:
        return False
    value = bound[0][0]
    if not isinstance(value, (cst.BinaryOperation, cst.Name)):
        return False
    names = {n.value for n in [value, *_nodes(value, cst.Name)] if isinstance(n, cst.Name)}
    return bool(names & set(loop.targets))


def _incremented(loop: Loop, node: cst.BaseExpression) -> bool:
    """Whether ``node`` names something the loop body increments (``n += 1``)."""
    name = ref_of(node)
    if name is None:
        return False
    for aug in _nodes(loop.body, cst.AugAssign):
        if isinstance(aug.operator, cst.AddAssign) and ref_of(aug.target) == name:
            return True
    return False


def _nodes(root: cst.CSTNode, kind) -> Iterator[cst.CSTNode]:
    """The nodes of ``kind`` under ``root``, not inside nested functions, classes or lambdas."""
    stack = [root]
    while stack:
        node = stack.pop()
        for child in node.children:
            if isinstance(child, kind):
                yield child
            if not isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                stack.append(child)


def _operands(node: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """``node`` and, through ``and``/``or``, each operand: the step runs every N iterations
    when one side is the period (``(i + 1) % n == 0 or i == last``)."""
    yield node
    if isinstance(node, cst.BooleanOperation):
        yield from _operands(node.left)
        yield from _operands(node.right)


def periodic_guard(model: FileModel, loop: Loop, cond: Cond) -> Optional[Guard]:
    """The guard ``cond`` is, when it makes what it guards run every N iterations of ``loop``."""
    if cond.branch != "if" or cond.loop is not loop or cond.node is None:
        return None
    if not moduli(cond) and not isinstance(cond.node, (cst.Comparison, cst.BooleanOperation, cst.Name, cst.Attribute)):
        return None
    for operand in _operands(cond.node):
        count = _modulus_of(operand, loop, True, model)
        if count is not None:
            return Guard(count, cond)
    counter = _counter_guard(model, loop, cond)
    if counter is not None:
        return Guard(counter, cond)
    flag = _flag_guard(model, loop, cond)
    if flag is not None:
        return Guard(flag, cond)
    return None


def _flag_guard(model: FileModel, loop: Loop, cond: Cond) -> Optional[cst.BaseExpression]:
    """``need_update = (i + 1) % accum_steps == 0 or last`` bound once in the loop body, then
    ``if need_update:``: the modulus."""
    name = ref_of(cond.node) if isinstance(cond.node, (cst.Name, cst.Attribute)) else None
    if name is None:
        return None
    bound = [
        (targets, value, ctx) for targets, value, ctx in model.assignments_naming(name)
        if ctx.scope == loop.scope and loop.encloses(ctx.loop)
    ]
    if len(bound) != 1 or bound[0][0] != (name,) or bound[0][2].loop is not loop:
        return None
    for operand in _operands(bound[0][1]):
        count = _modulus_of(operand, loop, True, model)
        if count is not None:
            return count
    return None


def _counter_guard(model: FileModel, loop: Loop, cond: Cond) -> Optional[cst.BaseExpression]:
    """The bound N of ``if counter == N:`` / ``if counter >= N:`` whose branch resets the
    counter (``counter = 0``) while the loop body increments it (``counter += 1``)."""
    node = cond.node
    if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
        return None
    target = node.comparisons[0]
    left, right = node.left, target.comparator
    op = target.operator
    if isinstance(op, (cst.Equal, cst.GreaterThanEqual)):
        counter, bound = left, right
    elif isinstance(op, cst.LessThanEqual):
        counter, bound = right, left
    else:
        return None
    name = ref_of(counter)
    if name is None or isinstance(bound, (cst.SimpleString, cst.Name)) and ref_of(bound) in ("None", "True", "False"):
        return None
    if isinstance(bound, cst.Integer) and int(bound.value, 0) < 2:
        return None
    branch = model.parents.get(node)
    if not isinstance(branch, cst.If) or not _incremented(loop, counter):
        return None
    for assign in _nodes(branch.body, cst.Assign):
        if (
            len(assign.targets) == 1 and ref_of(assign.targets[0].target) == name
            and isinstance(assign.value, cst.Integer) and int(assign.value.value, 0) == 0
        ):
            return bound
    return None


def _early_continue(model: FileModel, loop: Loop, step: LoopEffect, backward: LoopEffect) -> Optional[Guard]:
    """``if (i + 1) % n != 0: continue`` directly in the loop body, after the backward pass and
    before the step: the step runs every n iterations."""
    origin = step.origin
    if origin is None or backward.origin is None or not isinstance(loop.body, cst.IndentedBlock):
        return None
    body = list(loop.body.body)
    if origin.ctx.block is not loop.body or backward.origin.ctx.block is not loop.body:
        return None
    try:
        s, b = body.index(origin.ctx.statement), body.index(backward.origin.ctx.statement)
    except ValueError:
        return None
    for statement in body[b + 1 : s]:
        if not isinstance(statement, cst.If) or statement.orelse is not None:
            continue
        inner = statement.body
        if not isinstance(inner, cst.IndentedBlock) or len(inner.body) != 1:
            continue
        only = inner.body[0]
        if not (isinstance(only, cst.SimpleStatementLine) and len(only.body) == 1 and isinstance(only.body[0], cst.Continue)):
            continue
        count = _modulus_of(statement.test, loop, False, model)
        if count is not None:
            return Guard(count, None)
    return None


def _periodic(model: FileModel, loop: Loop, effect: LoopEffect) -> Optional[Guard]:
    for cond in effect.conds:
        guard = periodic_guard(model, loop, cond)
        if guard is not None:
            return guard
    return None


def _between(order: int, start: int, end: int) -> bool:
    if start < end:
        return start < order < end
    return order > start or order < end


def _feeding_backward(backwards: List[LoopEffect], step: LoopEffect) -> Optional[LoopEffect]:
    """The last backward pass before ``step`` in the loop body (going round)."""
    if not backwards:
        return None
    before = [b for b in backwards if b.order <= step.order]
    return max(before or backwards, key=lambda b: b.order)


def accumulating_steps(model: FileModel) -> Iterator[AccumulatingStep]:
    """Each optimizer step that runs every N iterations of a loop while the backward pass that
    feeds it runs on every iteration (see the module docstring)."""
    for loop in model.loops:
        effects = model.loop_effects(loop)
        steps = [e for e in effects if e.kind == STEP and e.depth == 0]
        if not steps:
            continue
        backwards = [e for e in effects if e.kind == BACKWARD and e.depth == 0]
        seen: Set[int] = set()
        for step in steps:
            if step.feeder is not None or id(step.node) in seen:
                continue  # the helper that steps runs its own backward pass with it
            backward = _feeding_backward(backwards, step)
            if backward is None or _periodic(model, loop, backward) is not None:
                continue
            guard = _periodic(model, loop, step)
            if guard is not None:
                if guard.cond in backward.conds:
                    continue
            elif not step.conditional:
                guard = _early_continue(model, loop, step, backward)
            if guard is None:
                continue
            if not _clears_periodically(model, loop, effects, step):
                continue
            seen.add(id(step.node))
            yield AccumulatingStep(loop, step, backward, guard)


def _clears_periodically(model: FileModel, loop: Loop, effects: List[LoopEffect], step: LoopEffect) -> bool:
    """Whether the step's optimizer is cleared in the loop, only ever every N iterations (under a
    periodic guard, or after an early ``continue`` like the step)."""
    clears = [e for e in effects if e.kind in (CLEAR, FRESH) and model.clears(e.ref, step.ref, loop.scope)]
    if not clears:
        return False
    for clear in clears:
        if clear.depth != 0 or clear.kind == FRESH:
            return False
        if _periodic(model, loop, clear) is not None:
            continue
        if step.conds and all(c in clear.conds for c in step.conds):
            continue
        if not clear.conditional and not step.conditional and clear.origin is not None and step.origin is not None:
            # both after the early ``continue``: same block, clearing after it
            if clear.origin.ctx.block is step.origin.ctx.block and clear.order > step.order:
                continue
        return False
    return True


# --- micro-batch loops -----------------------------------------------------------------------

_MICRO_WORDS = re.compile(r"accum|micro|update_freq", re.IGNORECASE)
# counts of separate objectives, not of micro-batches of one
_OBJECTIVE_WORDS = re.compile(r"task|domain|head|model|loss|agent|env|critic|disc|gen|layer|class|gpu|device|rank", re.IGNORECASE)
_WRAPPERS = frozenset({"enumerate", "tqdm", "zip", "iter", "list", "tqdm.tqdm", "tqdm.auto.tqdm", "reversed"})


def _unwrap(model: FileModel, node: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(node, cst.Call):
        qual = model.imports.qualname(node.func) or dotted(node.func) or ""
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        if qual not in _WRAPPERS or not positional:
            break
        node = positional[0]
    return node


def _draws_next(inner: Loop) -> bool:
    """``batch = next(data_iter)`` in the loop body, the iterator not chosen by the loop's own
    variable (``next(iters[task])`` draws from another stream on each pass)."""
    for call in _nodes(inner.body, cst.Call):
        if isinstance(call.func, cst.Name) and call.func.value == "next" and call.args:
            names = {n.value for n in [call.args[0].value, *_nodes(call.args[0].value, cst.Name)] if isinstance(n, cst.Name)}
            if not names & set(inner.targets):
                return True
    return False


def micro_count(model: FileModel, inner: Loop) -> Optional[cst.BaseExpression]:
    """The number of micro-batches when ``inner`` splits one batch or repeats micro-steps of one
    data stream: ``range(accum_steps)`` (a count or a variable named for accumulation, or a
    ``next(it)`` drawn on each pass), ``batch.chunk(n)`` / ``torch.chunk(batch, n)`` (n),
    ``batch.split(size)`` or a collection named for micro-batches (``len(...)``); None for
    anything else (a loop over tasks, losses, models: separate objectives)."""
    node = inner.node
    if not isinstance(node, cst.For):
        return None
    it = _unwrap(model, node.iter)
    if isinstance(it, cst.Call):
        qual = model.imports.qualname(it.func) or dotted(it.func) or ""
        positional = [a.value for a in it.args if a.keyword is None and not a.star]
        keywords = {a.keyword.value: a.value for a in it.args if a.keyword is not None}
        method = it.func.attr.value if isinstance(it.func, cst.Attribute) else None
        if qual == "range":
            if len(positional) != 1 or keywords:
                return None
            count = positional[0]
            if isinstance(count, cst.Integer) or _OBJECTIVE_WORDS.search(_code(count)):
                return None if not isinstance(count, cst.Integer) or not _draws_next(inner) else count
            if _MICRO_WORDS.search(_code(count)) or any(_MICRO_WORDS.search(t) for t in inner.targets) or _draws_next(inner):
                return count
            return None
        if qual in ("torch.chunk", "numpy.array_split", "np.array_split") or (method == "chunk" and not qual.startswith("torch.")):
            args = positional[1:] if qual in ("torch.chunk", "numpy.array_split", "np.array_split") else positional
            count = keywords.get("chunks", keywords.get("indices_or_sections", args[0] if args else None))
            return count
        if qual in ("torch.split", "torch.tensor_split") or method in ("split", "tensor_split"):
            if not positional or any(isinstance(a, (cst.SimpleString, cst.FormattedString)) for a in positional):
                return None  # str.split(",")
            if method in ("split", "tensor_split") and len(positional) > 1:
                return None
            return cst.Call(func=cst.Name("len"), args=[cst.Arg(it)])
        return None
    if isinstance(it, (cst.Name, cst.Attribute)) and re.search(r"micro|accum", _code(it), re.IGNORECASE):
        return cst.Call(func=cst.Name("len"), args=[cst.Arg(it)])
    return None


def _level_effects(model: FileModel, inner: Loop) -> List[LoopEffect]:
    """The effects of the code around ``inner`` at its own level: the body of its parent loop
    (depth 0), or the function (outside any loop) when it has none."""
    if inner.parent is not None:
        return [e for e in model.loop_effects(inner.parent) if e.depth == 0]
    return _scope_effects(model, inner.scope)


def _scope_effects(model: FileModel, scope: str) -> List[LoopEffect]:
    """The effects of a function outside its loops (a helper's through the call), as loop
    effects of depth 0."""
    out: List[LoopEffect] = []
    for effect in model.effects_in(scope):
        if effect.ctx.loop is not None:
            continue
        conds = conds_within(effect.ctx.conds, None)
        if effect.kind != CALL:
            out.append(LoopEffect(effect.kind, effect.ref, effect.node, 0, effect.ctx.conditional, effect.order, (), effect, conds))
            continue
        summary = model.summaries.get(effect.callee or "")
        if summary is None:
            continue
        mapping, via = effect.args or {}, (effect,)
        for node in summary.backward_sites:
            out.append(LoopEffect(BACKWARD, ANY, node, 0, True, effect.order, via, None, conds))
        for kind, sites in ((CLEAR, summary.clears), (FRESH, summary.fresh)):
            for clear in sites:
                out.append(LoopEffect(kind, translate(clear.ref, mapping), effect.node, 0, True, effect.order, via, None, conds + clear.conds))
        for step in summary.top_steps:
            out.append(LoopEffect(STEP, translate(step.ref, mapping), step.node, 0, effect.ctx.conditional or bool(step.conds),
                                  effect.order, via, None, conds + step.conds, step.feeder, step.covered))
    return out


def _tests_targets(cond: Cond, inner: Loop) -> bool:
    """Whether a condition reads the loop's own variable (``if micro_step == n - 1:``): the code
    under it does not run on every pass."""
    if cond.node is None:
        return False
    names = {n.value for n in [cond.node, *_nodes(cond.node, cst.Name)] if isinstance(n, cst.Name)}
    return bool(names & set(inner.targets))


def _site(effect: LoopEffect) -> cst.CSTNode:
    return effect.via[0].node if effect.via else effect.node


def micro_batch_steps(model: FileModel) -> Iterator[AccumulatingStep]:
    """Each optimizer step that runs once after a micro-batch loop (see `micro_count`) whose
    every pass runs a backward pass, the optimizer cleared around the loop, never inside it."""
    for inner in model.loops:
        count = micro_count(model, inner)
        if count is None:
            continue
        inside = model.loop_effects(inner)
        if any(e.kind in (STEP, CLEAR, FRESH) for e in inside):
            continue  # a step or a clearing per micro-batch: no accumulation across them
        backwards = [
            e for e in inside
            if e.kind == BACKWARD and e.depth == 0
            and not any(_tests_targets(c, inner) for c in e.conds)
        ]
        if not backwards:
            continue
        end = model.position(inner.node).end.line
        level = _level_effects(model, inner)
        after = lambda e: model.position(_site(e)).start.line > end  # noqa: E731
        for step in level:
            if step.kind != STEP or step.feeder is not None or not after(step):
                continue
            start = model.position(_site(step)).start.line
            if any(e.kind == BACKWARD and end < model.position(_site(e)).start.line <= start for e in level):
                continue  # another backward pass between the loop and the step feeds it
            clears = [e for e in level if e.kind in (CLEAR, FRESH) and model.clears(e.ref, step.ref, inner.scope)]
            if not clears or any(e.kind == FRESH for e in clears):
                continue
            yield AccumulatingStep(inner.parent or inner, step, backwards[-1], Guard(count, None), inner)
            break


# --- per-call accumulation: a method counting its own calls ---------------------------------

# names of a method a training loop calls once per batch (when nothing in the file calls it)
_PER_BATCH_METHOD = re.compile(r"step|update|train|batch|iter|optimi[sz]e|learn|fit", re.IGNORECASE)
_BATCH_PARAM = re.compile(r"batch|data|inputs?$|samples?$|^x$|^xb$", re.IGNORECASE)


def _self_counter(node: Optional[cst.BaseExpression]) -> Optional[str]:
    """``self.X`` (one attribute of the instance), as a ref; None for anything else."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return f"self.{node.attr.value}"
    return None


_BRANCHING = tuple(
    getattr(cst, kind) for kind in ("For", "While", "If", "Try", "TryStar", "Match", "FunctionDef", "Lambda", "ClassDef",
                                    "IfExp", "BooleanOperation", "CompFor")
    if hasattr(cst, kind)
)


def _straight_line(model: FileModel, node: cst.CSTNode, fn: cst.FunctionDef) -> bool:
    """Whether ``node`` runs on every call of ``fn``: no loop, branch, ``try`` or nested
    function between them (``with`` blocks are fine)."""
    parent = model.parents.get(node)
    while parent is not None and parent is not fn:
        if isinstance(parent, _BRANCHING):
            return False
        parent = model.parents.get(parent)
    return parent is fn


def _counter_increments(model: FileModel, fn, counter: str) -> bool:
    """Whether ``counter`` (``self.X``) is incremented by one on every call of ``fn``
    (``self.X += 1`` on its straight line) and by no other method of its class."""
    info = model.classes.get(fn.cls or "")
    if info is None:
        return False
    here = 0
    methods = [other.node for other in model.functions.values() if other.cls == fn.cls]
    for aug in (a for method in methods for a in _nodes(method, cst.AugAssign)):
        if ref_of(aug.target) != counter:
            continue
        if not (isinstance(aug.operator, cst.AddAssign) and isinstance(aug.value, cst.Integer) and aug.value.value == "1"):
            return False
        if model.index.enclosing(aug, cst.FunctionDef) is not fn.node or not _straight_line(model, aug, fn.node):
            return False
        here += 1
    # ``self.X = self.X + 1`` elsewhere: another way to count, not followed
    for targets, value, ctx in model.assignments_naming(counter):
        if isinstance(value, cst.BinaryOperation) and counter in _code(value):
            return False
    return here == 1


def _resets(branch: cst.If, counter: str) -> bool:
    return any(
        len(assign.targets) == 1 and ref_of(assign.targets[0].target) == counter
        and isinstance(assign.value, cst.Integer) and int(assign.value.value, 0) == 0
        for assign in _nodes(branch.body, cst.Assign)
    )


def _attribute_guard(model: FileModel, fn, cond: Cond) -> Optional[Tuple[Guard, str]]:
    """A guard on a counter of the method's calls: ``self.X % N == 0`` (``not self.X % N``), or
    ``self.X == N`` / ``self.X >= N`` whose branch resets ``self.X = 0``; (guard, counter)."""
    if cond.branch != "if" or cond.node is None or cond.loop is not None:
        return None
    branch = model.parents.get(cond.node)
    if not isinstance(branch, cst.If):
        return None
    for operand in _operands(cond.node):
        node, holds = operand, True
        while isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            node, holds = node.expression, not holds
        counter = bound = None
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo) and not holds:
            counter, bound = _self_counter(node.left), node.right  # ``not self.X % N``
        elif isinstance(node, cst.Comparison) and len(node.comparisons) == 1 and holds:
            target = node.comparisons[0]
            left, right, op = node.left, target.comparator, target.operator
            modulo = next((x for x in (left, right) if isinstance(x, cst.BinaryOperation) and isinstance(x.operator, cst.Modulo)), None)
            if modulo is not None and isinstance(op, cst.Equal):
                other = right if modulo is left else left
                if isinstance(other, cst.Integer):
                    counter, bound = _self_counter(modulo.left), modulo.right
            elif isinstance(op, (cst.Equal, cst.GreaterThanEqual)) and _self_counter(left):
                counter, bound = _self_counter(left), right
                if not _resets(branch, counter):
                    counter = None
            elif isinstance(op, cst.LessThanEqual) and _self_counter(right):
                counter, bound = _self_counter(right), left
                if not _resets(branch, counter):
                    counter = None
        if counter is None or bound is None:
            continue
        if isinstance(bound, cst.Integer) and int(bound.value, 0) < 2:
            continue
        if isinstance(bound, (cst.SimpleString, cst.FormattedString, cst.Float)) or ref_of(bound) in ("None", "True", "False"):
            continue
        if counter in _code(bound) or not _counter_increments(model, fn, counter):
            continue
        return Guard(bound, cond), counter
    return None


def _in_class_ref(ref: str, receiver: Optional[str]) -> str:
    """``self.optimizer`` seen from a caller that calls the method on ``receiver``."""
    if receiver and receiver != "self" and ref.startswith("self."):
        return receiver + ref[len("self"):]
    return ref


def _called_per_batch(model: FileModel, key: str, fn, step_ref: str) -> bool:
    """Whether the method ``key`` is called once per batch: from a loop of the file that does not
    clear the optimizer on each pass itself, or from a function the file calls in a loop; with no
    caller in the file, when it is named or takes parameters like a per-batch training step."""
    callers = [e for e in model.effects if e.kind == CALL and e.callee == key]
    if not callers:
        name = key.rsplit(".", 1)[-1]
        params = [p for p in fn.params if p not in ("self", "cls")]
        return bool(_PER_BATCH_METHOD.search(name)) or any(_BATCH_PARAM.search(p) for p in params)
    in_loop = [e for e in callers if e.ctx.loop is not None]
    for call in in_loop:
        receiver = ref_of(call.node.func.value) if isinstance(call.node, cst.Call) and isinstance(call.node.func, cst.Attribute) else None
        ref = _in_class_ref(step_ref, receiver)
        for effect in model.loop_effects(call.ctx.loop):
            if effect.kind not in (CLEAR, FRESH) or effect.depth != 0 or (effect.via and effect.via[0] is call):
                continue
            if effect.ref == ANY or model.clears(effect.ref, ref, call.ctx.loop.scope):
                return False  # the caller clears the gradients on every batch: nothing accumulates
    if in_loop:
        return True
    outer = {e.ctx.scope for e in callers}
    return any(e.kind == CALL and e.callee in outer and e.ctx.loop is not None for e in model.effects)


def per_call_steps(model: FileModel) -> Iterator[AccumulatingStep]:
    """Each optimizer step of a method under a guard on a counter of the method's own calls
    (``self._micro += 1`` ... ``if self._micro == self.accum_steps:``), fed by a backward pass
    that runs on every call, every clearing of that optimizer in the method under the guard too,
    the method called once per batch."""
    for key, fn in model.functions.items():
        if fn.cls is None or "+=" not in _code(fn.node.body):
            continue
        effects = _scope_effects(model, key)
        steps = [e for e in effects if e.kind == STEP and e.feeder is None]
        if not steps:
            continue
        backwards = [e for e in effects if e.kind == BACKWARD]
        for step in steps:
            found = next((g for g in (_attribute_guard(model, fn, c) for c in step.conds) if g is not None), None)
            if found is None:
                continue
            guard, counter = found
            before = [b for b in backwards if b.order <= step.order]
            if not before:
                continue
            backward = max(before, key=lambda b: b.order)
            if guard.cond in backward.conds or any(counter in c.text for c in backward.conds):
                continue  # the step's own backward pass runs with it (a generator's every n_critic calls)
            clears = [e for e in effects if e.kind in (CLEAR, FRESH) and model.clears(e.ref, step.ref, key)]
            if not clears or any(e.kind == FRESH or guard.cond not in e.conds for e in clears):
                continue
            if not _called_per_batch(model, key, fn, step.ref):
                continue
            body = Loop(fn.node, key, None, (), None, None, fn.node.body, 0)
            yield AccumulatingStep(body, step, backward, guard, method=key, counter=counter)
            break


# --- is the loss divided? -------------------------------------------------------------------

# ``batch_size``/``bs``: a mean turned into a sum over the batch (``loss *= batch_size``, yolov5):
# accumulated sums are the large batch's sum, whatever the split
_SCALE_WORDS = re.compile(r"accum|scale|norm|factor|inv|div|frac|ratio|coef|steps|num_|n_|count|mult|weight|batch|\bbsz?\b", re.IGNORECASE)
_SCALE_WORDS_PROPER = re.compile(r"accum|scale|norm|factor|inv|div|frac|ratio|coef|steps|count|mult", re.IGNORECASE)


def _keyed_lookup(node: cst.BaseExpression) -> bool:
    """``weights[task.name]``, ``w[key]``: a subscript whose key is not a literal."""
    if not isinstance(node, cst.Subscript) or len(node.slice) != 1:
        return False
    index = node.slice[0].slice
    return isinstance(index, cst.Index) and not isinstance(
        index.value, (cst.Integer, cst.SimpleString, cst.Float, cst.ConcatenatedString)
    )


_PASS_METHODS = frozenset({"mean", "sum", "float", "double", "half", "squeeze", "view", "reshape", "to", "cuda",
                           "contiguous", "clone", "nanmean", "nansum", "requires_grad_", "flatten"})
_COMBINING = frozenset({"sum", "stack", "cat", "mean", "add", "sub", "max", "min", "abs", "square", "sqrt", "log",
                        "logsumexp", "nanmean", "nansum", "where"})
_DIVIDING_METHODS = frozenset({"div", "div_", "true_divide", "divide", "mul", "mul_", "multiply", "__truediv__",
                               "__mul__", "floor_divide", "scale"})


DIV, PLAIN, UNKNOWN = "divided", "plain", "unknown"

# a batch as a training step receives it (``batch_data[...]``, ``batch['weight']``)
_BATCH_FIELD = re.compile(r"^(batch\w*|\w*_batch|data|batch_data|inputs?|samples?|examples?)$", re.IGNORECASE)
_MOVES = frozenset({"cuda", "to", "float", "double", "half", "contiguous", "view", "reshape", "squeeze", "unsqueeze",
                    "detach", "clone"})


def _either(states) -> str:
    """Alternatives or terms of a sum: divided if one is, unknown if one is, else plain."""
    states = list(states)
    if DIV in states:
        return DIV
    return UNKNOWN if UNKNOWN in states or not states else PLAIN


def _product(states) -> str:
    """Factors of a product (already vetted as no scale): divided if one is, plain if one is
    (the loss, the other a weight), else unknown."""
    states = list(states)
    if DIV in states:
        return DIV
    return PLAIN if PLAIN in states else UNKNOWN


class _LossTrace:
    """Follows the value a backward pass is called on back through the assignments of its
    function (and helpers of the file): DIV (divided, or may be: by anything that might be the
    count), PLAIN (a per-batch loss, never divided), UNKNOWN (cannot tell)."""

    def __init__(self, model: FileModel, count: str) -> None:
        self.model = model
        self.count = count
        lookup = re.match(r"^([\w.]+)\.get\(\s*['\"](\w+)['\"]", count.strip())
        if lookup:  # ``self.config.get('grad_accumulation_step', 1)``: the setting ``config[...]``
            words = [*lookup.group(1).split("."), lookup.group(2)]
        else:
            words = [w for w in re.split(r"[.\[\]'\"]", count.strip()) if w]
        self.count_word = words
        self.count_last = words[-1] if words else count
        self.count_head = words[0] if words else count
        self.callees: Dict[int, str] = {id(e.node): e.callee for e in model.effects if e.kind == CALL and e.callee}
        self.visited: Set[Tuple[str, str]] = set()
        self.memo: Dict[Tuple[str, str], str] = {}
        # a helper's parameter -> what the call being followed hands it, in the caller's scope
        self.bindings: Dict[Tuple[str, str], Tuple[cst.BaseExpression, str]] = {}
        self.loops_by_node: Dict[int, Loop] = {id(loop.node): loop for loop in model.loops}

    def mentions_count(self, node: cst.CSTNode) -> bool:
        """Whether an expression names the count (``accum_steps``, ``args.accum_steps``) or, for
        an attribute count, hands over its owner (``args``, ``self``)."""
        text = _code(node)
        if re.search(rf"(?<!\w){re.escape(self.count_last)}(?!\w)", text):
            return True
        # an owner handed over whole (``args``, ``self``, ``self.cfg`` for ``self.cfg.accum``),
        # not one of its other attributes (``self._cuda_device``)
        for k in range(1, len(self.count_word)):
            owner = ".".join(self.count_word[:k])
            if re.search(rf"(?<![\w.]){re.escape(owner)}(?![\w.])", text):
                return True
        return False

    def state(self, expr: cst.BaseExpression, scope: str, depth: int = 0, whole: bool = True) -> str:
        """How ``expr`` (in ``scope``) stands. ``whole``: ``expr`` is the whole loss, not one
        term of a sum (``a + 0.4 * b`` weighs a term; ``0.25 * loss`` might be ``1 / N``)."""
        if depth > 20:
            return UNKNOWN
        if isinstance(expr, cst.BinaryOperation):
            op = expr.operator
            if isinstance(op, (cst.Divide, cst.FloorDivide)):
                return DIV
            if isinstance(op, (cst.Add, cst.Subtract)):
                return _either(self.state(side, scope, depth + 1, False) for side in (expr.left, expr.right))
            if isinstance(op, cst.Multiply):
                if any(self._scaling_factor(side, whole, scope) for side in (expr.left, expr.right)):
                    return DIV
                return _product(self.state(side, scope, depth + 1, whole) for side in (expr.left, expr.right))
            if isinstance(op, cst.Power) and isinstance(expr.right, (cst.Integer, cst.Float)):
                return self.state(expr.left, scope, depth + 1, whole)  # ``d ** 2``: the base's state
            return UNKNOWN  # ``@``, ``**`` by a tensor...: not a loss we understand
        if isinstance(expr, cst.UnaryOperation):
            return self.state(expr.expression, scope, depth + 1, whole)
        if isinstance(expr, (cst.Integer, cst.Float)):
            return PLAIN
        if isinstance(expr, cst.Call):
            return self._call(expr, scope, depth)
        if isinstance(expr, (cst.Name, cst.Attribute, cst.Subscript)):
            return self._ref(expr, scope, depth)
        return UNKNOWN

    def _batch_field(self, node: cst.BaseExpression, scope: Optional[str]) -> bool:
        """Whether ``node`` is a name bound in ``scope`` only to a field of the batch
        (``weight = Variable(batch_data[batch_meta['factor']]).cuda()``): a per-sample weight
        that comes with the data, not a normalising constant."""
        if scope is None or not isinstance(node, cst.Name):
            return False
        values = [v for targets, v, _ctx in self.model.assignments_in(scope) if targets == (node.value,)]
        if not values or any(node.value in t and len(t) > 1 for t, _v, _c in self.model.assignments_in(scope)):
            return False
        for value in values:
            while isinstance(value, cst.Call):
                func = value.func
                positional = [a.value for a in value.args if a.keyword is None and not a.star]
                if isinstance(func, cst.Attribute) and func.attr.value in _MOVES:
                    value = func.value  # ``x.cuda()``, ``x.to(device)``, ``x.float()``
                elif positional and (dotted(func) or "").rsplit(".", 1)[-1] in ("Variable", "as_tensor", "tensor", "from_numpy"):
                    value = positional[0]
                else:
                    break
            if not isinstance(value, cst.Subscript):
                return False
            base = dotted(value.value)
            if base is None or "." in base or not _BATCH_FIELD.search(base) or self.mentions_count(value):
                return False
        return True

    def _scaling_factor(self, node: cst.BaseExpression, whole: bool = True, scope: Optional[str] = None) -> bool:
        """Whether a factor of a product might be ``1 / N``: a division, the count, or (for the
        whole loss) a fraction or a name of a scale."""
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Divide, cst.FloorDivide)):
            return True
        if any(True for _ in _nodes(node, (cst.Divide, cst.FloorDivide))):
            return True
        if self.mentions_count(node):
            return True
        if not whole:
            return False
        if isinstance(node, cst.Float):
            return float(node.value.replace("_", "")) < 1
        if isinstance(node, cst.Integer):
            return False
        if self._batch_field(node, scope):
            return False
        if isinstance(node, cst.Call) and (self.model.imports.qualname(node.func) or "").startswith("torch."):
            return False  # ``F.kl_div(...)``: a loss of torch's, whatever its name says
        if _keyed_lookup(node):
            # ``scaling_weights[task.name]``: a table of per-task (per-class) weights looked up
            # by a key, not one normalising constant: only a scale word proper counts
            return bool(_SCALE_WORDS_PROPER.search(_code(node.value)))
        return bool(_SCALE_WORDS.search(_code(node)))

    def _call(self, call: cst.Call, scope: str, depth: int, element: Optional[Tuple[int, int]] = None) -> str:
        """``element``: (index, size) of the value a tuple assignment takes from the call's result."""
        func = call.func
        if any(self.mentions_count(a.value) for a in call.args):
            return DIV  # the count is handed over: the call may divide by it
        if any(a.keyword is not None and a.keyword.value == "num_items_in_batch" for a in call.args):
            return DIV  # transformers models normalise by the tokens of the whole accumulation
        qual = self.model.imports.qualname(func) or ""
        head = qual.split(".", 1)[0]
        if head in ("torch", "numpy", "np", "math") or qual in ("sum", "max", "min", "abs"):
            # a library function: ``torch.mean(loss)``, ``sum(losses)``, ``torch.stack(ls).sum()``
            last = qual.rsplit(".", 1)[-1]
            if last in _DIVIDING_METHODS:
                return DIV
            if last in _PASS_METHODS or last in _COMBINING:
                positional = [a.value for a in call.args if a.keyword is None and not a.star]
                return _either(self.state(v, scope, depth + 1) for v in positional[:1] if last not in _COMBINING) \
                    if last not in _COMBINING else _either(self.state(v, scope, depth + 1) for v in positional)
            return PLAIN  # F.mse_loss(out, y), torch.nn.functional.cross_entropy(...)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in _DIVIDING_METHODS:
                return DIV
            if method in _PASS_METHODS:
                return self.state(func.value, scope, depth + 1)
        callee = self.callees.get(id(call))
        if callee is not None:
            self._bind(callee, call, scope)
            return self._function(callee, depth, element)
        if isinstance(func, cst.Attribute) and ref_of(func.value) in ("self", "cls") and self.count_head in ("self", "cls"):
            if self._held_callable(func, scope):
                return PLAIN  # ``self.model(x)``: a module the instance holds, not a method of it
            return UNKNOWN  # an inherited method may read ``self.<count>``
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) and dotted(func.value.func) == "super":
            return UNKNOWN  # an inherited method we cannot see
        return PLAIN  # criterion(out, y), model(x): a per-batch loss

    def _bind(self, key: str, call: cst.Call, scope: str) -> None:
        """Record what ``call`` (in ``scope``) hands each parameter of the helper ``key``: its
        argument, else the parameter's default (``lam=0.85``); nothing behind ``*args``."""
        fn = self.model.functions.get(key)
        if fn is None or any(a.star for a in call.args):
            return
        params = list(fn.node.params.posonly_params) + list(fn.node.params.params)
        if fn.cls is not None and params and isinstance(call.func, cst.Attribute) and not any(
            dotted(d.decorator) == "staticmethod" for d in fn.node.decorators
        ):
            params = params[1:]  # ``self.helper(x)``: ``self`` is bound already
        positional = [a.value for a in call.args if a.keyword is None]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        for k, param in enumerate(params + list(fn.node.params.kwonly_params)):
            name = param.name.value
            if k < len(positional) and param in params:
                self.bindings[(key, name)] = (positional[k], scope)
            elif name in keywords:
                self.bindings[(key, name)] = (keywords[name], scope)
            elif param.default is not None:
                self.bindings[(key, name)] = (param.default, key)

    def _held_callable(self, func: cst.Attribute, scope: str) -> bool:
        """``self.<attr>`` bound by assignment in the instance's class (``self.model = net``) and
        no method of it, in a class of the file with no base class we cannot see."""
        fn = self.model.functions.get(scope)
        info = self.model.classes.get(fn.cls) if fn is not None and fn.cls else None
        if info is None or func.attr.value in info.methods:
            return False
        if any(b not in ("object", "") and not b.startswith("torch.nn.") for b in info.bases):
            return False
        ref = f"self.{func.attr.value}"
        return any(
            ref in targets and ctx.scope.startswith(f"{info.name}.")
            for targets, _value, ctx in self.model.assignments_naming(ref)
        )

    def _function(self, key: str, depth: int, element: Optional[Tuple[int, int]] = None) -> str:
        """What a helper of the file returns: divided when it divides by the count anywhere.
        ``element`` (index, size): the caller unpacks the helper's tuple and takes that value."""
        fn = self.model.functions.get(key)
        seen = ("<fn>", key if element is None else f"{key}#{element[0]}")
        if fn is None or seen in self.visited:
            return UNKNOWN
        self.visited.add(seen)
        body = fn.node.body
        for node in _nodes(body, (cst.BinaryOperation, cst.AugAssign)):
            if isinstance(node, cst.AugAssign) and isinstance(node.operator, (cst.DivideAssign, cst.FloorDivideAssign)):
                if self.mentions_count(node.value):
                    return DIV
            if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Divide, cst.FloorDivide)):
                if self.mentions_count(node.right):
                    return DIV
        returns = [r.value for r in _nodes(body, cst.Return) if r.value is not None]
        if element is not None and returns and all(
            isinstance(v, cst.Tuple) and len(v.elements) == element[1]
            and not any(isinstance(e, cst.StarredElement) for e in v.elements) for v in returns
        ):
            # ``loss, logits = self._compute_loss(batch)``: the returned tuples' element
            return _either(self.state(v.elements[element[0]].value, key, depth + 1) for v in returns)
        if not returns or any(isinstance(v, cst.Tuple) for v in returns):
            return UNKNOWN  # nothing, or several values: which one is the loss?
        return _either(self.state(v, key, depth + 1) for v in returns)

    def _ref(self, expr: cst.BaseExpression, scope: str, depth: int) -> str:
        ref = ref_of(expr)
        if ref is None:
            # ``out[k]`` with a non-literal key, ``outputs[0].loss``: follow the base
            base = expr.value if isinstance(expr, (cst.Attribute, cst.Subscript)) else None
            return UNKNOWN if base is None else self.state(base, scope, depth + 1)
        key = (scope, ref)
        if key in self.memo:
            return self.memo[key]  # followed before (``d`` read twice): the same answer
        if key in self.visited:
            return PLAIN  # a cycle (``loss = loss + aux``): judged by its other terms
        self.visited.add(key)
        self.memo[key] = result = self._ref_state(ref, scope, depth)
        return result

    def _ref_state(self, ref: str, scope: str, depth: int) -> str:
        head = re.split(r"[.\[]", ref, 1)[0]
        fn = self.model.functions.get(scope)
        root = fn.node if fn is not None else self.model.module
        states = []
        if head in ("self", "cls") and "." in ref:
            # ``self.loss``: perhaps bound in another method
            states = [self.state(v, scope, depth + 1) for targets, v, _ctx in self.model.assignments if ref in targets]
            if not states:
                return UNKNOWN
            root = self.model.module
        else:
            for targets, value, _ctx in self.model.assignments_in(scope):
                if ref in targets or (("." in ref or "[" in ref) and head in targets):
                    element = _unpacked(targets, value, ref if ref in targets else head)
                    if element is not None:
                        states.append(self.state(element, scope, depth + 1))  # ``x, y = x.cuda(), y.cuda()``
                    elif len(targets) != 1:
                        position = (targets.index(ref if ref in targets else head), len(targets))
                        states.append(self._call(value, scope, depth, position) if isinstance(value, cst.Call) else UNKNOWN)
                    else:
                        states.append(self.state(value, scope, depth + 1))
        for more in (self._augmented(ref, root, scope, depth), self._with_bound(ref, root, scope, depth)):
            if more is not None:
                states.append(more)
        if ref in self._for_targets(root):
            states.append(UNKNOWN)  # ``for loss in losses:``: we do not follow collections
        if not states and (scope, head) in self.bindings:
            # a parameter of the helper being followed: what its caller hands it
            bound, caller = self.bindings[(scope, head)]
            return self.state(bound, caller, depth + 1)
        if not states:
            return UNKNOWN  # never bound here: a parameter, a global, a name bound elsewhere
        return _either(states)

    def _augmented(self, ref: str, root: cst.CSTNode, scope: str, depth: int) -> Optional[str]:
        """``loss /= n`` (divided), ``loss += aux`` (the term's state), ``loss.div_(n)``."""
        head = re.split(r"[.\[]", ref, 1)[0]
        states = []
        for aug in _nodes(root, cst.AugAssign):
            target = ref_of(aug.target)
            if target != ref and target != head:
                continue
            op = aug.operator
            if isinstance(op, (cst.DivideAssign, cst.FloorDivideAssign)):
                return DIV
            if isinstance(op, cst.MultiplyAssign):
                if self._scaling_factor(aug.value, True, scope):
                    return DIV
            elif isinstance(op, (cst.AddAssign, cst.SubtractAssign)):
                states.append(self.state(aug.value, scope, depth + 1, False))
            else:
                states.append(UNKNOWN)
        for call in _nodes(root, cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("div_", "mul_", "true_divide_") and ref_of(func.value) == ref:
                return DIV
        return _either(states) if states else None

    def _with_bound(self, ref: str, root: cst.CSTNode, scope: str, depth: int) -> Optional[str]:
        """``with amp.scale_loss(loss, optimizer) as scaled_loss:``: the loss handed in; any
        other ``with ... as loss`` cannot be followed."""
        states = []
        for item in _nodes(root, cst.WithItem):
            if item.asname is None or ref_of(item.asname.name) != ref:
                continue
            value = item.item
            positional = [a for a in value.args if a.keyword is None] if isinstance(value, cst.Call) else []
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "scale_loss" and positional:
                states.append(self.state(positional[0].value, scope, depth + 1))
            else:
                states.append(UNKNOWN)
        return _either(states) if states else None

    def _for_targets(self, root: cst.CSTNode) -> Set[str]:
        out: Set[str] = set()
        for loop in _nodes(root, (cst.For, cst.CompFor)):
            known = self.loops_by_node.get(id(loop))
            if known is not None and known.iter_ref and self.model.has_role(known.iter_ref, R.LOADER, known.scope):
                continue  # ``for x, y in loader:``: a batch of data, not a collection of losses
            out.update(_target_refs(loop.target))
        return out


def _unpacked(targets: Tuple[str, ...], value: cst.BaseExpression, ref: str) -> Optional[cst.BaseExpression]:
    """The element of a tuple value a tuple assignment binds ``ref`` to (``a, b = x, y``)."""
    if len(targets) < 2 or not isinstance(value, (cst.Tuple, cst.List)) or ref not in targets:
        return None
    elements = value.elements
    if len(elements) != len(targets) or any(isinstance(e, cst.StarredElement) for e in elements):
        return None
    return elements[targets.index(ref)].value


def _target_refs(target: cst.BaseExpression) -> List[str]:
    if isinstance(target, (cst.Tuple, cst.List)):
        out: List[str] = []
        for element in target.elements:
            out.extend(_target_refs(element.value))
        return out
    ref = ref_of(target)
    return [ref] if ref else []


def _params(fn: cst.FunctionDef) -> Set[str]:
    params = fn.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    return {p.name.value for p in every}


def backward_receiver(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The tensor of ``<tensor>.backward()`` (keywords only: ``retain_graph=True``); None for
    ``accelerator.backward(loss)``, ``engine.backward(loss)``, ``loss.backward(grad)``."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "backward":
        return None
    if any(a.keyword is None for a in call.args):
        return None
    return func.value


def scaled_loss(receiver: cst.BaseExpression) -> Tuple[cst.BaseExpression, Optional[cst.Call]]:
    """(the loss, the ``scaler.scale(...)`` call around it or None)."""
    if (
        isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) and receiver.func.attr.value == "scale"
        and len(receiver.args) == 1 and receiver.args[0].keyword is None and not receiver.args[0].star
    ):
        return receiver.args[0].value, receiver
    return receiver, None


def scope_of(model: FileModel, node: cst.CSTNode) -> str:
    """The scope key of the function holding ``node`` (MODULE_SCOPE outside functions)."""
    fn = model.index.enclosing(node, cst.FunctionDef)
    if fn is None:
        return MODULE_SCOPE
    for key, info in model.functions.items():
        if info.node is fn:
            return key
    return MODULE_SCOPE


def loss_divided(model: FileModel, found: AccumulatingStep) -> bool:
    """Whether the loss the accumulating step's backward pass is called on is (or may be)
    divided before the backward (True also whenever we cannot tell)."""
    call = found.backward.node
    if not isinstance(call, cst.Call):
        return True
    receiver = backward_receiver(call)
    if receiver is None:
        return True
    loss, _scale = scaled_loss(receiver)
    trace = _LossTrace(model, found.guard.text)
    scope = scope_of(model, call)
    if found.backward.via:
        # through a helper: its parameter is the loop's argument
        caller = found.backward.via[0]
        fn = model.functions.get(scope)
        name = ref_of(loss)
        if fn is not None and name is not None and name in _params(fn.node) and caller.callee == scope:
            mapped = (caller.args or {}).get(name)
            if not mapped or any(ch in mapped for ch in "([*"):
                return True
            if _assigned_in(model, scope, name):
                return True
            return trace.state(cst.parse_expression(mapped), found.loop.scope) != PLAIN
    return trace.state(loss, scope) != PLAIN


def _assigned_in(model: FileModel, scope: str, name: str) -> bool:
    return any(name in targets for targets, _v, _c in model.assignments_in(scope))


def grads_scaled_by_hand(model: FileModel, loop: Loop, micro: bool = False) -> bool:
    """``p.grad /= n``, ``p.grad.div_(n)``, ``p.grad.data.mul_(1 / n)``, ``p.grad = p.grad / n``
    in the loop body or in a helper of the file it calls (``micro``: ``loop`` is a micro-batch
    loop of no outer loop: the function around it)."""
    root: cst.CSTNode = loop.body
    if micro:
        fn = model.functions.get(loop.scope)
        root = fn.node.body if fn is not None else model.module
    roots: List[cst.CSTNode] = [root]
    for effect in model.effects_in(loop.scope):
        if effect.kind == CALL and effect.callee and (micro or loop.encloses(effect.ctx.loop)):
            fn = model.functions.get(effect.callee)
            if fn is not None:
                roots.append(fn.node.body)
    for root in roots:
        for node in _nodes(root, (cst.AugAssign, cst.Call, cst.Assign)):
            if isinstance(node, cst.AugAssign):
                if "grad" in _code(node.target) and isinstance(node.operator, (cst.DivideAssign, cst.MultiplyAssign, cst.FloorDivideAssign)):
                    return True
            elif isinstance(node, cst.Call):
                func = node.func
                if isinstance(func, cst.Attribute) and func.attr.value in ("div_", "mul_", "true_divide_", "multiply_", "divide_"):
                    if "grad" in _code(func.value):
                        return True
                name = (dotted(func) or "").rsplit(".", 1)[-1].lower()
                if "grad" in name and re.search(r"scale|div|normali[sz]e|average|avg|mean|rescale", name):
                    return True
            elif isinstance(node, cst.Assign):
                if any("grad" in _code(t.target) for t in node.targets) and isinstance(node.value, cst.BinaryOperation):
                    return True
    return False


def framework_scales(model: FileModel, found: AccumulatingStep) -> bool:
    """accelerate's ``with accelerator.accumulate(model):`` around the backward pass or the
    step, or a guard on ``sync_gradients``: the framework divides and skips steps itself."""
    for effect in (found.backward, found.step):
        origin = effect.origin if effect.origin is not None else (effect.via[0] if effect.via else None)
        if origin is None:
            continue
        for with_node in origin.ctx.withs:
            for item in with_node.items:
                value = item.item
                if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in ("accumulate", "autocast_and_accumulate"):
                    return True
    return any("sync_gradients" in c.text for c in found.step.conds)


def learning_rate_normalised(model: FileModel, found: AccumulatingStep) -> bool:
    """The stepped optimizer built with a learning rate divided by a name
    (``lr=cfg.learning_rate / cfg.batch``: darknet's sum-reduced losses over the whole
    accumulated batch) or naming the count: the sum is what the rate expects."""
    trace = _LossTrace(model, found.guard.text)
    for _targets, value, _ctx in model.assignments_to(found.step.ref):
        if not isinstance(value, cst.Call):
            continue
        positional = [a.value for a in value.args if a.keyword is None]
        rates = [a.value for a in value.args if a.keyword is not None and a.keyword.value == "lr"] + positional[1:2]
        for rate in rates:
            if re.search(rf"(?<!\w){re.escape(trace.count_last)}(?!\w)", _code(rate)):
                return True
            for node in [rate, *_nodes(rate, cst.BinaryOperation)]:
                if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Divide, cst.FloorDivide)):
                    if not isinstance(node.right, (cst.Integer, cst.Float)):
                        return True
    return False
