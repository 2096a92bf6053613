"""Gradients accumulate across optimizer steps because nothing clears them.

Why it matters
    PyTorch adds each ``backward()`` into ``.grad``; it never resets it by itself.
    In a loop that calls ``backward()`` and ``optimizer.step()`` but never clears
    that optimizer's gradients, step *k* applies the sum of all *k* gradients seen
    so far: the effective learning rate grows every step, momentum and Adam
    statistics are fed the wrong values, and training silently diverges or
    plateaus. No error is raised.

    Calling ``zero_grad()`` once before the loop, or once per epoch around an inner
    loop that steps on every batch, is the same bug.

When the code is fine
    - ``optimizer.zero_grad()`` (or ``model.zero_grad()`` on the model whose
      parameters the optimizer holds, or ``p.grad = None`` / ``p.grad.zero_()`` over
      the parameters or over the tensors the optimizer was given, also under
      ``if p.grad is not None``, or a helper that does one of these, or a callable
      that does: ``zero = opt.zero_grad``, a lambda, a hook list, a callback every
      caller hands over) anywhere in the loop body, before or after the step, as
      long as it runs whenever the step runs (a clear that only runs on logging
      iterations, in an ``except`` handler or when ``batch_idx == 0`` does not count, nor one
      under a flag the loop never changes, ``if use_sched:``, while the step runs without it;
      clears in every branch of one ``if``/``else`` count together);
    - a fresh optimizer built in each iteration over a model (or tensors) also built
      in that iteration, e.g. one model and optimizer per fold; an optimizer rebuilt
      over a model that lives on is not enough: the model's ``.grad`` carries over;
    - distributed autograd: ``with dist_autograd.context() as ctx`` in each iteration
      (``dist_autograd.backward(ctx, ...)``, ``DistributedOptimizer.step(ctx)``): the
      gradients live in the per-iteration context;
    - Pyro: ``svi.step()`` is not a torch optimizer step, and ``pyro.optim`` optimizers
      are not torch optimizers;
    - gradient accumulation: ``step()`` and ``zero_grad()`` both run every N
      iterations (at the same or another residue of the same period, unless the period may
      be 1: a clear under ``i % n == 1`` never runs when ``n`` is 1, while a step under
      ``i % n == 0`` runs on every iteration);
    - ``optimizer.step(closure)`` where the closure clears the gradients;
    - an inner micro-batch loop with ``zero_grad()``/``step()`` in the outer loop;
    - frameworks that own the loop (Lightning ``training_step``, HF ``Trainer``).
    With two optimizers (GANs) each stepped optimizer needs its own clearing.

How to fix
    Call ``optimizer.zero_grad()`` at the start of every iteration, before the
    forward pass; ``--fix`` inserts it there. Where that would not isolate the step,
    ``--fix`` puts it elsewhere:

    - the step only runs every N iterations (gradient accumulation): right after
      the step;
    - the optimizer steps twice in one iteration: right after the first step;
    - another backward pass runs earlier in the iteration (a GAN's other loss, an
      adversarial attack): right before the backward pass that feeds the step;
    - the optimizer is built in the iteration: right after it is built (no fix when
      it is only rebuilt on some iterations).

    The fix is safe only when the optimizer is known to be a torch optimizer (built
    by ``torch.optim``, a torch optimizer class of apex, bitsandbytes, transformers,
    timm, DeepSpeed or torch_optimizer, timm's ``create_optimizer_v2``, annotated
    ``torch.optim.Optimizer``, or handed one by every caller); for an optimizer of
    unknown type it is unsafe (``--unsafe-fixes``), and there is none for one known to
    lack ``zero_grad()`` (``DistributedOptimizer``).
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Tuple

import libcst as cst

from mllint.findings import Applicability, Example, Finding, Fix
from mllint.semantics.model import (
    ANY,
    BACKWARD,
    CALL,
    CLEAR,
    Cond,
    FRESH,
    STEP,
    FileModel,
    Loop,
    LoopEffect,
    conds_within,
    counts_iterations,
    covers,
    moduli,
    never_with_period_one,
)
from mllint.semantics.invariance import analysis
from mllint.semantics.phases import Phases
from mllint.semantics.names import after_docstring, dotted, ref_of, shorten
from mllint.semantics.tree import children as tree_children
from mllint.semantics.tree import visit as tree_visit

CODE = "ML001"
NAME = "missing-zero-grad"
MESSAGE = "gradients accumulate across optimizer steps: nothing clears them in this loop"
TRIGGERS = ("backward(",)  # loss.backward(), accelerator.backward(loss), torch.autograd.backward(...)
REQUIRES = ("step",)  # optimizer.step(), scaler.step(optimizer), xm.optimizer_step(optimizer)
DEFAULT_ENABLED = True
FRAMEWORK = "torch"  # left out for files of another framework (mllint/frameworks.py)
FIX = "safe"


def SCREEN(facts) -> bool:
    # Sound: a finding is a backward pass in a loop (a BACKWARD effect: ``.backward()``,
    # ``.manual_backward()``, ``torch.autograd.backward`` under any alias) whose gradients an
    # optimizer step uses (a STEP effect: ``.step(...)``/``.optimizer_step(...)``, also inside
    # helpers of the file, which are calls in the file too). A file without loops of its own
    # can still be reported when a loop of another file of the project calls its functions.
    return (
        (facts.has_loop or "called-in-loop" in facts.project_words or "Engine" in facts.call_names)
        and not facts.call_names.isdisjoint({"backward", "manual_backward"})
        and not facts.call_names.isdisjoint({"step", "optimizer_step"})
    )


# --- finding the bug ------------------------------------------------------------------------


def _between(order: int, start: int, end: int) -> bool:
    """Whether ``order`` lies strictly between two positions of a loop body, going round."""
    if start < end:
        return start < order < end
    return order > start or order < end


_CHANGED_BY_TRAINING = frozenset(("grad", "weight", "bias", "data"))


def _invariant(model: FileModel, loop: Loop):
    """Whether a condition directly in ``loop``'s body is a flag, the same on every iteration:
    built from names and attributes the loop never assigns or changes (``if use_sched:``,
    ``if self.scheduler:``), without ``%`` (a period is a count, whatever feeds it), and none
    of them handed to a call in the loop (``callback.on_step(self.state)`` may advance
    ``self.state.step``)."""

    def invariant(cond: Cond) -> bool:
        if cond.loop is not loop or cond.node is None or moduli(cond):
            return False
        if not analysis(model).facts(loop).invariant(cond.node):
            return False
        refs = set()

        class Refs(cst.CSTVisitor):
            def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
                name = dotted(node)
                if name is not None:
                    refs.add(name)
                    return False
                return True

            def visit_Name(self, node: cst.Name) -> None:
                refs.add(node.value)

        tree_visit(cond.node, Refs())
        if any(set(r.split(".")[1:]) & _CHANGED_BY_TRAINING for r in refs):
            return False  # backward() and step() change gradients and parameters
        for call, ctx in model.calls:
            if ctx.scope != loop.scope or not loop.encloses(ctx.loop):
                continue
            for arg in call.args:
                handed = ref_of(arg.value)
                if handed and any(r == handed or r.startswith(handed + ".") for r in refs):
                    return False
        return True

    return invariant


def _covering(model: FileModel, loop: Loop, clears: List[LoopEffect], step: LoopEffect) -> List[LoopEffect]:
    """The clearings in the loop that clear ``step``'s optimizer whenever the step runs."""
    invariant = _invariant(model, loop)
    mine = [c for c in clears if model.clears(c.ref, step.ref, loop.scope)]
    single = [
        c
        for c in mine
        if covers(_needed(model, loop, c.conds, step), c.ref, step.conds, loop.targets, invariant, model.fixed_period)
    ]
    if single or len(mine) < 2:
        return single
    # Clearings in every branch of one ``if``/``elif``/``else`` together run whenever their
    # common conditions hold (``if flag: opt.zero_grad() else: opt.zero_grad(set_to_none=True)``).
    merged = {c.conds: [c] for c in mine if c.conds}
    for _ in range(8):
        grown = False
        for a, users_a in list(merged.items()):
            for b, users_b in list(merged.items()):
                rest = _complementary(a, b)
                if rest is not None and rest not in merged:
                    merged[rest] = users_a + users_b
                    grown = True
        if not grown:
            break
    for conds, users in merged.items():
        if len(users) > 1 and covers(conds, users[0].ref, step.conds, loop.targets, invariant, model.fixed_period):
            return users
    return []


def _needed(model: FileModel, loop: Loop, conds: Tuple[Cond, ...], step: LoopEffect) -> Tuple[Cond, ...]:
    """A clearing's conditions less those that only skip iterations with nothing to clear: a
    test that a gradient of the step's optimizer exists (``if model.fc.weight.grad is not
    None:``, ``if any(p.grad is not None for p in model.parameters()):``)."""
    return tuple(c for c in conds if not _has_gradients(model, loop, c, step))


def _has_gradients(model: FileModel, loop: Loop, cond: Cond, step: LoopEffect) -> bool:
    node = cond.node
    if cond.branch != "if" or cond.loop is not loop or node is None:
        return False
    tensor = _grad_tested(node)
    if tensor is not None:
        return model.clears(f"{tensor}.grad", step.ref, loop.scope) and tensor.split(".")[0] not in loop.targets
    # any(p.grad is not None for p in model.parameters())
    if not (isinstance(node, cst.Call) and dotted(node.func) == "any" and len(node.args) == 1):
        return False
    gen = node.args[0].value
    if not isinstance(gen, cst.GeneratorExp) or gen.for_in.inner_for_in is not None or gen.for_in.ifs:
        return False
    source = gen.for_in.iter
    if not (isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) and source.func.attr.value == "parameters"):
        return False
    owner = ref_of(source.func.value)
    target = ref_of(gen.for_in.target)
    return bool(owner) and target is not None and _grad_tested(gen.elt) == target and model.clears(owner, step.ref, loop.scope)


def _grad_tested(node: cst.CSTNode) -> Optional[str]:
    """``x`` for a test ``x.grad is not None``."""
    if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
        return None
    target = node.comparisons[0]
    if not isinstance(target.operator, cst.IsNot) or not (isinstance(target.comparator, cst.Name) and target.comparator.value == "None"):
        return None
    left = node.left
    if not (isinstance(left, cst.Attribute) and left.attr.value == "grad"):
        return None
    return ref_of(left.value)


def _complementary(a: Tuple[Cond, ...], b: Tuple[Cond, ...]) -> Optional[Tuple[Cond, ...]]:
    """The conditions ``a`` and ``b`` share when they differ only in taking the two branches
    of one test (``if x`` / ``else``), else None."""
    if len(a) != len(b) or not a:
        return None
    differ = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
    if len(differ) != 1:
        return None
    x, y = a[differ[0]], b[differ[0]]
    if x.text != y.text or {x.branch, y.branch} != {"if", "else"}:
        return None
    return a[: differ[0]] + a[differ[0] + 1:]


def _uncleared(model: FileModel, loop: Loop, effects: List[LoopEffect]):
    """(step, previous step or None) for each optimizer step whose gradients are not
    cleared since that optimizer's previous step (None: not on every iteration that steps)."""
    clears = [e for e in effects if e.kind in (CLEAR, FRESH)]
    groups = {}
    for step in effects:
        if step.kind == STEP and step.depth == 0 and not step.covered:
            group = groups.setdefault(model.canonical(step.ref, loop.scope), [])
            if all(other.node is not step.node for other in group):
                group.append(step)
    for group in groups.values():
        uncovered = [s for s in group if not _covering(model, loop, clears, s)]
        if uncovered:
            for step in uncovered:
                yield step, None
            continue
        # Stepped more than once per iteration, in plain sight, all steps running together
        # (unconditional, or under the same guard): each needs a clear since the previous one.
        if len(group) < 2 or any(s.origin is None for s in group):
            continue
        if len({id(s.origin.ctx.block) for s in group}) > 1 and any(s.conditional for s in group):
            continue
        group.sort(key=lambda s: s.order)
        for index, step in enumerate(group):
            previous = group[index - 1]
            if not any(_between(c.order, previous.order, step.order) for c in _covering(model, loop, clears, step)):
                yield step, previous


def _backward_before(backwards: List[LoopEffect], step: LoopEffect, since: Optional[LoopEffect] = None) -> Optional[LoopEffect]:
    """The backward pass whose gradients ``step`` applies: the one the helper runs before
    it, else the last one before it in the loop body (going round), after ``since`` if given."""
    if step.feeder is not None:
        for b in backwards:
            if b.node is step.feeder:
                return b
    if since is not None:
        candidates = [b for b in backwards if _between(b.order, since.order, step.order) or b.order == step.order]
    else:
        candidates = backwards
    if not candidates:
        return None
    before = [b for b in candidates if b.order <= step.order]
    return max(before or candidates, key=lambda b: b.order)


# --- the message --------------------------------------------------------------------------------


def _how_often(loop: Loop, step: LoopEffect) -> str:
    if not step.conditional:
        return "on every iteration"
    if any(counts_iterations(c, loop.targets) for c in step.conds):
        return "every few iterations"
    return "in the loop"


def _where_cleared(model: FileModel, loop: Loop, effects: List[LoopEffect], step: LoopEffect) -> Tuple[Optional[str], Optional[str], Optional[str]]:
    """Where the optimizer *is* cleared, when not whenever it steps (``runs only ...``, for the
    message); the object whose ``zero_grad()`` does it when that is not the optimizer
    (``self.zero_grad()`` in a model's own method), written in the loop's scope; and a
    sentence for the detail saying why that is not enough, when the message cannot."""
    where, cleared, note = _where(model, loop, effects, step)
    if where is None or cleared is None or cleared == step.ref or ".grad" in cleared or "[" in cleared:
        cleared = None
    return where, cleared, note


def _where(model: FileModel, loop: Loop, effects: List[LoopEffect], step: LoopEffect) -> Tuple[Optional[str], Optional[str], Optional[str]]:
    for clear in effects:
        if clear.kind == CLEAR and clear.ref != ANY and model.clears(clear.ref, step.ref, loop.scope):
            extra = [c for c in _needed(model, loop, clear.conds, step) if c not in step.conds]
            if extra:
                where, note = _where_guarded(model, loop, extra, step)
                return where, (clear.ref if clear.origin is not None else None), note
    outer = loop.parent
    while outer is not None:
        for effect in model.loop_effects(outer):
            if effect.kind == CLEAR and effect.depth == 0 and effect.ref != ANY and model.clears(effect.ref, step.ref, outer.scope):
                return "runs only once per iteration of the enclosing loop", None, None
        outer = outer.parent
    for effect in model.effects_in(loop.scope):
        if effect.kind == CLEAR and effect.ctx.loop is None and effect.ref != ANY and model.clears(effect.ref, step.ref, loop.scope):
            return "runs only once, before the loop", None, None
    return None, None, None


def _where_guarded(model: FileModel, loop: Loop, extra: List[Cond], step: LoopEffect) -> Tuple[str, Optional[str]]:
    """``runs only when ...`` for a clearing under conditions ``extra`` the step does not share,
    and the reason in a sentence when the condition never holds with a period of 1
    (``i % n == 1``) or is a flag the loop never changes while the step runs on every iteration."""
    cond = extra[0]
    if cond.branch == "except":
        return f"runs only in `{shorten(cond.text)}`", None
    text = shorten(cond.text)
    where = f"runs only when `{text}`" if cond.branch == "if" else f"runs only when not `{text}`"
    for guard in extra:
        period = never_with_period_one(guard, step.conds, model.fixed_period)
        if period is not None:
            holds = next((c for c in step.conds if c != guard and period in moduli(c)), None)
            when = f" when `{holds.text}`" if holds is not None and holds.branch == "if" else ""
            return f"never runs when `{shorten(period, 20)}` is 1", (
                f"The clearing runs only when `{guard.text}`{'' if guard.branch == 'if' else ' does not hold'}, which never "
                f"happens when `{period}` is 1 (`x % 1` is always 0), while the step runs{when}: on every iteration then."
            )
    if _invariant(model, loop)(cond) and not step.conditional:
        return f"{where}, a flag the loop never changes", (
            f"`{cond.text}` is the same on every iteration: when it {'is false' if cond.branch == 'if' else 'holds'}, "
            f"nothing clears the gradients while the step runs on every iteration."
        )
    return where, None


def _message(model: FileModel, loop: Loop, effects, steps: List[LoopEffect], previous: Optional[LoopEffect] = None) -> Tuple[str, str]:
    """The one-line message and the detail (JSON, SARIF, --show-source)."""
    if previous is not None:
        step = steps[0]
        name = shorten(step.ref)
        line = model.position(previous.node).start.line
        return (
            f"gradients accumulate: `{name}.step()` runs again before its gradients are cleared",
            f"Nothing clears `{step.ref}`'s gradients after its step on line {line}, so this step re-applies "
            f"them; call `{step.ref}.zero_grad()` after each step.",
        )
    if len(steps) > 1:
        names = " and ".join(f"`{s.ref}`" for s in steps)
        short = " and ".join(f"`{shorten(s.ref, 20)}`" for s in steps[:2]) + (" and others" if len(steps) > 2 else "")
        return (
            f"gradients accumulate: nothing in the loop clears the gradients of {short}",
            f"The optimizers {names} step in the loop, so each step applies the sum of every gradient since the "
            f"loop began; call `zero_grad()` on each of them once per step.",
        )
    step = steps[0]
    name = step.ref if step.ref != ANY else "the optimizer"
    where, cleared, note = _where_cleared(model, loop, effects, step)
    if where:
        message = f"gradients accumulate: `{shorten(cleared or name)}.zero_grad()` {where}"
    else:
        message = f"gradients accumulate: nothing clears `{shorten(name)}`'s gradients in the loop"
    detail = (f"{note} " if note else "") + (
        f"`{name}.step()` runs {_how_often(loop, step)}, so each step applies the sum of the gradients of every "
        f"backward pass since they were last cleared; call `{name}.zero_grad()` once per step."
    )
    return message, detail


# --- the fix --------------------------------------------------------------------------------------


def _zero_grad_statement(optimizer: str) -> Optional[cst.SimpleStatementLine]:
    try:
        statement = cst.parse_statement(f"{optimizer}.zero_grad()\n")
    except cst.ParserSyntaxError:
        return None
    return statement if isinstance(statement, cst.SimpleStatementLine) else None


def _fixable_name(model: FileModel, step: LoopEffect) -> Optional[str]:
    optimizer = step.ref
    if optimizer == ANY or "[" in optimizer:
        return None
    head = optimizer.split(".")[0]
    for call in step.via:
        # The optimizer reached us through a helper: its name must mean the same in the loop's scope.
        callee = model.functions.get(call.callee or "")
        if callee is not None and head not in callee.params and model.assigns_locally(callee.key, head):
            return None
    return optimizer


def _insert_at_top(model: FileModel, block, names: List[str], calls: str, where: str, applicability: Applicability) -> Optional[Fix]:
    if not isinstance(block, cst.IndentedBlock):
        return None
    body = list(block.body)
    start = after_docstring(body)  # keep a docstring first
    body[start:start] = [_zero_grad_statement(n) for n in names]
    return model.fix_replacing(block, block.with_changes(body=body), applicability, f"Insert {calls} {where}")


def _insert_near(model: FileModel, effect: LoopEffect, names: List[str], calls: str, after: bool, applicability: Applicability) -> Optional[Fix]:
    """Insert the clearing statements right after (or before) the statement of ``effect``."""
    origin = effect.origin
    if origin is None:
        return None
    return _insert_by(model, origin.ctx, names, calls, after, applicability)


def _insert_by(model: FileModel, ctx, names: List[str], calls: str, after: bool, applicability: Applicability, where: str = "") -> Optional[Fix]:
    """Insert the clearing statements right after (or before) the simple statement of ``ctx``."""
    if not isinstance(ctx.statement, cst.SimpleStatementLine):
        return None
    origin = ctx
    block = origin.block
    if not isinstance(block, cst.IndentedBlock):
        return None
    body = list(block.body)
    index = next((i for i, stmt in enumerate(body) if stmt is origin.statement), None)
    if index is None:
        return None
    statements = [_zero_grad_statement(name) for name in names]
    if after:
        body[index + 1:index + 1] = statements
        where = where or "after the step"
    else:
        # Keep the comments and blank lines above the backward statement above the clear.
        first = statements[0].with_changes(leading_lines=body[index].leading_lines)
        body[index:index] = [first, *statements[1:]]
        body[index + len(statements)] = body[index + len(statements)].with_changes(leading_lines=())
        where = "before the backward pass"
    return model.fix_replacing(block, block.with_changes(body=body), applicability, f"Insert {calls} {where}")


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def _in_comprehension(effect: LoopEffect) -> bool:
    """Whether the effect (or the call in the loop's scope that reaches it) sits in a comprehension:
    it then runs any number of times per pass through the loop body."""
    local = effect.via[0] if effect.via else effect.origin
    if local is None or local.ctx.statement is None:
        return False
    target = local.node

    def inside(node: cst.CSTNode, depth: int) -> bool:
        if node is target:
            return depth > 0
        if isinstance(node, _COMPREHENSIONS):
            depth += 1
        return any(inside(child, depth) for child in tree_children(node))

    return inside(local.ctx.statement, 0)


def _helper_fix(model: FileModel, steps: List[LoopEffect], site: LoopEffect) -> Optional[Fix]:
    """Clear at the start of the helper that runs the backward pass and the step together, on
    every call: ``[self._train_step(b) for b in batches]`` steps once per item, so clearing at
    the top of the surrounding loop would not isolate the steps."""
    if len(steps) != 1 or len(site.via) != 1 or len(steps[0].via) != 1:
        return None
    step = steps[0]
    if site.via[0].node is not step.via[0].node:
        return None
    helper = model.functions.get(step.via[0].callee or "")
    call = step.node
    if helper is None or not isinstance(call, cst.Call) or call.args:
        return None
    own = {id(e.node): e for e in model.effects_in(helper.key)}
    for node in (site.node, step.node):  # both in the helper's own body, on every call
        effect = own.get(id(node))
        if effect is None or effect.ctx.conditional or effect.ctx.loop is not None:
            return None
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "step"):
        return None
    name = model.module.code_for_node(call.func.value)
    applicability = _applicability(model, [name], helper.key)
    if _zero_grad_statement(name) is None or applicability is None or _bindings(model, helper.key, None, name):
        return None
    short = helper.key.rsplit(".", 1)[-1]
    return _insert_at_top(model, helper.node.body, [name], f"`{name}.zero_grad()`", f"at the start of `{short}()`", applicability)


def _closure_of(model: FileModel, site: LoopEffect):
    """The closure function a step calls, when ``site`` (a backward pass) runs inside it."""
    for call in site.via[:1]:
        fn = model.functions.get(call.callee or "")
        if fn is not None and isinstance(call.node, cst.Call) and isinstance(call.node.func, cst.Attribute):
            # ``optimizer.step(closure)``: the function is handed over (not ``gan.step(batch)``,
            # a method named step that is itself called)
            handed = any((dotted(a.value) or "").rsplit(".", 1)[-1] == fn.node.name.value
                         or isinstance(a.value, cst.Lambda) for a in call.node.args)
            if call.node.func.attr.value == "step" and handed:
                return fn
    return None


def _fix(
    model: FileModel,
    loop: Loop,
    steps: List[LoopEffect],
    site: LoopEffect,
    backwards: List[LoopEffect],
    after: Optional[LoopEffect] = None,
) -> Optional[Fix]:
    """Clear at the start of the loop body (before the forward pass), except where that
    would not isolate the step: right after the step when it runs every few iterations
    (accumulation) or twice per iteration; right before the backward pass when other
    backward passes run earlier in the body (a GAN's other loss, an adversarial attack);
    first thing in the closure when ``step(closure)`` runs the backward pass (L-BFGS calls
    the closure several times per step)."""
    names = [_fixable_name(model, step) for step in steps]
    if None in names or None in [_zero_grad_statement(n) for n in names]:
        return None
    applicability = _applicability(model, names, loop.scope)
    if applicability is None:
        return None
    calls = ", ".join(f"`{name}.zero_grad()`" for name in names)
    # An optimizer (re)bound in the iteration can only be cleared after that binding.
    binding = None
    for name in names:
        found = _bindings(model, loop.scope, loop, name)
        if not found:
            continue
        if len(found) > 1 or binding is not None:
            return None
        ctx, order = found[0]
        if ctx.loop is not loop or conds_within(ctx.conds, loop) or ctx.block is not loop.body or order > site.order:
            return None
        binding = found[0]
    if after is not None:
        return _insert_near(model, after, names, calls, True, applicability)
    closure = _closure_of(model, site)
    if closure is not None:
        if any(n.split(".")[0] not in ("self",) and model.assigns_locally(closure.key, n.split(".")[0]) for n in names):
            return None
        return _insert_at_top(model, closure.node.body, names, calls, "at the start of the closure", applicability)
    if any(_in_comprehension(e) for e in [site, *steps]):
        return _helper_fix(model, steps, site) if binding is None else None
    accumulating = [s for s in steps if s.conditional and (s.origin is None or any(counts_iterations(c, loop.targets) for c in s.conds))]
    if accumulating:
        return _insert_near(model, steps[0], names, calls, True, applicability) if len(steps) == 1 else None
    if any(b.order < site.order and b.node is not site.node for b in backwards):
        if site.depth != 0 or site.conditional:
            return None
        return _insert_near(model, site, names, calls, False, applicability)
    if binding is not None:
        return _insert_by(model, binding[0], names, calls, True, applicability, "after the optimizer is built")
    return _insert_at_top(model, loop.body, names, calls, "at the start of the loop body", applicability)


def _applicability(model: FileModel, names: List[str], scope: str) -> Optional[Applicability]:
    """SAFE when every optimizer is known to be a torch optimizer (so it has ``zero_grad()``),
    None when one is known to lack it (``DistributedOptimizer``), else UNSAFE."""
    if any(model.lacks_zero_grad(name, scope) for name in names):
        return None
    if all(model.is_torch_optimizer(name, scope) for name in names):
        return Applicability.SAFE
    return Applicability.UNSAFE


def _bindings(model: FileModel, scope: str, loop: Optional[Loop], name: str):
    """(context, position) of each assignment to ``name`` in ``loop`` (or anywhere in ``scope``'s
    own body for None)."""
    return [
        (ctx, model.assignment_order[value])
        for targets, value, ctx in model.assignments_in(scope)
        if name in targets and (loop is None or loop.encloses(ctx.loop))
    ]


def check(model: FileModel) -> Iterable[Finding]:
    reported = set()
    for loop in sorted(model.loops, key=lambda l: l.order):
        if loop.trip_count is not None and loop.trip_count <= 1:
            continue  # runs once: nothing can accumulate between steps
        effects = model.loop_effects(loop)
        backwards = [e for e in effects if e.kind == BACKWARD]
        if not backwards:
            continue
        by_site: dict = {}  # backward site -> (site effect, the uncleared steps whose gradients it produces)
        for step, previous in _uncleared(model, loop, effects):
            site = _backward_before(backwards, step, previous)
            if site is None or site.node in reported:
                continue
            if previous is not None:
                reported.add(site.node)
                fix = _fix(model, loop, [step], site, backwards, after=previous)
                message, detail = _message(model, loop, effects, [step], previous)
                yield model.finding(site.node, CODE, NAME, message, fix, detail)
                continue
            _, steps = by_site.setdefault(site.node, (site, []))
            if all(s.ref != step.ref for s in steps):
                steps.append(step)
        for node, (site, steps) in by_site.items():
            if node in reported:
                continue
            reported.add(node)
            fix = _fix(model, loop, steps, site, backwards)
            message, detail = _message(model, loop, effects, steps)
            yield model.finding(node, CODE, NAME, message, fix, detail)
    yield from _stepped_from_other_files(model, reported)
    yield from _stepped_by_an_engine(model, Phases.of(model), reported)


def _stepped_by_an_engine(model: FileModel, phases: Phases, reported: set) -> Iterable[Finding]:
    """A process function an ignite ``Engine`` is built on (``trainer = Engine(train_step)``) that
    runs backward and steps an optimizer without clearing it: the engine calls it once per
    batch and clears nothing, so the gradients of every batch add up."""
    for key, engines in phases.engine_functions().items():
        summary = model.summaries.get(key)
        if summary is None:
            continue
        for step in summary.top_steps:
            if step.feeder is None or step.covered or step.conds or step.feeder in reported:
                continue
            reported.add(step.feeder)
            name = key.rsplit(".", 1)[-1]
            engine = engines[0][0]
            message = (f"gradients accumulate: `{shorten(name, 24)}()` steps `{shorten(step.ref, 24)}` once per batch of "
                       f"`{shorten(engine, 20)}`, and nothing clears them")
            detail = (f"`{engine} = Engine({name})` calls `{key}()` once per batch; it runs backward and "
                      f"`{step.ref}.step()` without clearing the gradients, so each update uses the sum of all past "
                      f"gradients. Call `{step.ref}.zero_grad()` at the start of `{name}()`.")
            yield model.finding(step.feeder, CODE, NAME, message, None, detail)


def _stepped_from_other_files(model: FileModel, reported: set) -> Iterable[Finding]:
    """A function or method of this file that runs backward and then steps an optimizer on
    every call, without clearing it, called once per iteration of a loop in another file of
    the project that clears nothing either (``disc.step(batch)`` in ``train.py``): the
    gradients of every iteration add up. Reported at the backward, without a fix (whether
    to clear here or in the caller's loop is the author's call)."""
    if model.project is None:
        return
    for key, summary in model.summaries.items():
        for step in summary.top_steps:
            if step.feeder is None or step.covered or step.conds or step.feeder in reported:
                continue
            if any(e.kind == CALL and e.callee == key and e.ctx.loop is not None for e in model.effects):
                continue  # called in a loop of this file: the loops above judge it
            callers = [(rel, call) for rel, call in model.project.callers(key) if call.in_loop]
            if not callers or any(call.loop_clears or _clears_same_object(model, rel, call) for rel, call in callers):
                continue
            reported.add(step.feeder)
            rel, call = callers[0]
            name = key.rsplit(".", 1)[-1]
            message = (f"gradients accumulate: `{name}()` steps `{shorten(step.ref, 24)}` on every call from the loop "
                       f"at {rel}:{call.line}, and nothing clears them")
            detail = (f"`{key}()` runs backward and `{step.ref}.step()` each time it is called, and the loop at "
                      f"{rel}:{call.line} calls it once per iteration without clearing the gradients, so each update "
                      f"uses the sum of all past gradients. Call `{step.ref}.zero_grad()` before the backward here, "
                      f"or in that loop.")
            yield model.finding(step.feeder, CODE, NAME, message, None, detail)


def _clears_same_object(model: FileModel, rel: str, call) -> bool:
    """The caller also calls, in the same function, a method of the same object that clears
    gradients (``gan.reset_grad(); gan.step(batch)``)."""
    head = call.callee.rsplit(".", 1)[0] if "." in call.callee else None
    if head is None:
        return False
    project = model.project.project
    for other in project.facts[rel].calls:
        if other is call or other.caller != call.caller or not other.callee.startswith(head + "."):
            continue
        if "zero_grad" in other.callee or "clear" in other.callee:
            return True
        target = project.called(rel, other)
        if target is not None and target.facts.clears:
            return True
    return False


# ---------------------------------------------------------------------------------------
# Examples (collected by the test suite). INVALID examples carry the expected --fix output.


VALID = [
    # an ignite Engine's process function that clears the gradients itself
    """
import torch
from torch import nn
from ignite.engine import Engine

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(10)]


def train_step(engine, batch):
    model.train()
    x, y = batch
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


trainer = Engine(train_step)
trainer.run(train_loader, max_epochs=2)
""",
    # the tensor the optimizer holds is rebuilt in both branches of an if/else before the optimizer
    # is made afresh: every step starts from new gradients
    """
import torch


def make_input(seed):
    return torch.randn(1, 3, 8, 8, generator=torch.Generator().manual_seed(seed))


def visualise(model, steps, blur_every):
    image = make_input(0)
    for i in range(steps):
        if i % blur_every == 0:
            image = torch.nn.functional.avg_pool2d(image.detach(), 3, 1, 1).requires_grad_()
        else:
            image = image.detach().clone().requires_grad_()
        optimizer = torch.optim.SGD([image], lr=1.0)
        loss = -model(image).mean()
        loss.backward()
        optimizer.step()
    return image
""",
    # zero_grad at the top of the loop
    """
    import torch
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    """,
    # zero_grad after the step is just as good
    """
    for epoch in range(epochs):
        for batch in train_loader:
            loss = compute_loss(model, batch)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    """,
    # model.zero_grad() on the model whose parameters the optimizer holds
    """
    import torch
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    for inputs, targets in loader:
        net.zero_grad()
        loss = criterion(net(inputs), targets)
        loss.backward()
        opt.step()
    """,
    # gradient accumulation: step and zero_grad both every N iterations
    """
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    """,
    # AMP with a GradScaler; clearing through a local helper
    """
    import torch
    scaler = torch.cuda.amp.GradScaler()

    def reset(opt):
        opt.zero_grad(set_to_none=True)

    while step < max_steps:
        reset(optimizer)
        with torch.autocast("cuda"):
            loss = model(batch)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        step += 1
    """,
    # LBFGS-style closure that clears the gradients
    """
    import torch
    optimizer = torch.optim.LBFGS(model.parameters())
    for epoch in range(20):
        def closure():
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            return loss
        optimizer.step(closure)
    """,
    # p.grad = None over the parameters
    """
    for x, y in loader:
        for p in model.parameters():
            p.grad = None
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    """,
    # GAN: each optimizer cleared through its own model
    """
    import torch
    netD, netG = Discriminator(), Generator()
    optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-4)
    optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-4)
    for real in dataloader:
        netD.zero_grad()
        errD = criterion(netD(real), ones) + criterion(netD(netG(noise).detach()), zeros)
        errD.backward()
        optimizerD.step()
        netG.zero_grad()
        errG = criterion(netD(netG(noise)), ones)
        errG.backward()
        optimizerG.step()
    """,
    # micro-batches: backward in the inner loop, zero_grad and step in the outer loop
    """
    for batch in loader:
        optimizer.zero_grad()
        for micro in batch.split(4):
            loss = model(micro).mean() / 4
            loss.backward()
        optimizer.step()
    """,
    # the training step lives in a helper that clears; the loop calls it
    """
    def train_step(model, optimizer, batch):
        optimizer.zero_grad()
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        return loss.item()

    for epoch in range(10):
        for batch in loader:
            train_step(model, optimizer, batch)
    """,
    # a scheduler's step is not an optimizer step; no optimizer steps in this loop
    """
    for epoch in range(epochs):
        loss = model(x).sum()
        grads = torch.autograd.grad(loss, params)
        scheduler.step()
    """,
    # a step and backward but no loop: called from elsewhere, we cannot tell (Lightning manual optimization)
    """
    class LitModel(LightningModule):
        def training_step(self, batch, batch_idx):
            opt = self.optimizers()
            loss = self.compute_loss(batch)
            self.manual_backward(loss)
            opt.step()
            opt.zero_grad()
    """,
    # several optimizers cleared in a loop over them
    """
    for batch in loader:
        for opt in optimizers:
            opt.zero_grad()
        loss = model(batch).mean()
        loss.backward()
        for opt in optimizers:
            opt.step()
    """,
    # DeepSpeed-style engine: engine.step() clears gradients itself, and it is not an optimizer
    """
    for batch in loader:
        loss = model_engine(batch)
        model_engine.backward(loss)
        model_engine.step()
    """,
    # accumulation written with two guards of the same period
    """
    for i, batch in enumerate(loader):
        if i % accum_steps == 0:
            optimizer.zero_grad()
        loss = model(batch).mean() / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
    """,
    # a clear guarded by a test of the optimizer itself still runs whenever it can step
    """
    for batch in loader:
        if self.optimizer is not None:
            self.optimizer.zero_grad()
        loss = self.model(batch).mean()
        loss.backward()
        self.optimizer.step()
    """,
    # a loop that runs once: nothing can accumulate between steps
    """
    for _ in range(1):
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
    """,
    # two steps of one optimizer with a clear between them and one at the top
    """
    for real, fake in loader:
        opt_d.zero_grad()
        bce(disc(fake), zeros).backward()
        opt_d.step()
        opt_d.zero_grad()
        bce(disc(real), ones).backward()
        opt_d.step()
    """,
    # an optimizer over plain tensors, cleared through the tensor's .grad
    """
    import torch
    delta = torch.zeros(3, requires_grad=True)
    opt = torch.optim.SGD([delta], lr=0.1)
    for step in range(100):
        loss = objective(x + delta)
        loss.backward()
        opt.step()
        delta.grad.zero_()
    """,
    # a shared train/val loop: the step only runs in the training phase, cleared every batch
    """
    import torch
    for phase in ["train", "val"]:
        for inputs, labels in dataloaders[phase]:
            optimizer.zero_grad()
            with torch.set_grad_enabled(phase == "train"):
                loss = criterion(model(inputs), labels)
                if phase == "train":
                    loss.backward()
                    optimizer.step()
    """,
    # optimizers kept in a dict, cleared through a variable key: we cannot tell which, stay silent
    """
    for batch in loader:
        for name in optimizers:
            optimizers[name].zero_grad()
        loss = model(batch)
        loss.backward()
        optimizers["main"].step()
    """,
    # clearing by an imported helper we cannot see: stay silent
    """
    from utils import zero_grads
    for batch in loader:
        zero_grads(model)
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
    """,
    # distributed autograd: each iteration's gradients live in its own context, which
    # DistributedOptimizer.step(context_id) reads (pytorch/examples distributed/rpc)
    """
    import torch.distributed.autograd as dist_autograd
    from torch.distributed.optim import DistributedOptimizer
    opt = DistributedOptimizer(torch.optim.SGD, model.parameter_rrefs(), lr=0.05)
    for epoch in range(10):
        for data, target in loader:
            with dist_autograd.context() as context_id:
                loss = criterion(model(data), target)
                dist_autograd.backward(context_id, [loss])
                opt.step(context_id)
    """,
    # the same through another alias, in a helper run once per batch
    """
    from torch.distributed import autograd
    def train_batch(net, opt, batch):
        with autograd.context() as ctx:
            loss = net(batch).sum()
            autograd.backward(ctx, [loss])
            opt.step(ctx)

    for batch in loader:
        train_batch(net, dist_opt, batch)
    """,
    # a fresh model and optimizer per fold: nothing carries over between iterations
    """
    import torch
    for fold, (train_idx, val_idx) in enumerate(kfold.split(X)):
        model = Net()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss = criterion(model(X[train_idx]), y[train_idx])
        loss.backward()
        optimizer.step()
    """,
    # a fresh tensor optimized by a fresh optimizer in each iteration (guidance on a latent)
    """
    import torch
    for t in timesteps:
        x_in = latents.detach().clone()
        x_in.requires_grad = True
        opt = torch.optim.SGD([x_in], lr=guidance_scale)
        loss = guidance_loss(unet(x_in, t))
        loss.backward()
        opt.step()
        latents = x_in.detach()
    """,
    # a helper that builds its model and optimizer and takes one step, called for each seed
    """
    def make_checkpoint(path, config, seed, with_optimizer):
        model = config.build()
        if with_optimizer:
            optim = optim_config.build(model)
            loss = model(inputs).sum()
            loss.backward()
            optim.step()
        save(path, model, optim)

    for path, seed in [("a", 1), ("b", 2), ("c", 3)]:
        make_checkpoint(path, config, seed, True)
    """,
    # gradients cleared by hand over the list of tensors the optimizer holds
    """
    import torch
    w = torch.zeros(3, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    tensors = [w, b]
    opt = torch.optim.SGD(tensors, lr=0.1)
    for step in range(100):
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        opt.step()
        for t in tensors:
            t.grad.zero_()
    """,
    # detach_() + zero_() over the parameters, skipping those without a gradient yet
    """
    import torch
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        for p in model.parameters():
            if p.grad is not None:
                p.grad.detach_()
                p.grad.zero_()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
    """,
    # a tensor optimized directly, its gradient reset by assignment
    """
    import torch
    x = torch.zeros(3, requires_grad=True)
    opt = torch.optim.Adam([x], lr=0.1)
    for i in range(100):
        loss = f(x)
        loss.backward()
        opt.step()
        x.grad = None
    """,
    # clearing through a bound method stored in a variable
    """
    import torch
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    zero_fn = opt.zero_grad
    for x, y in loader:
        zero_fn()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
    """,
    # clearing through a lambda, and through a list of hooks run every iteration
    """
    import torch
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    clear = lambda: opt.zero_grad(set_to_none=True)
    hooks = [log_batch]
    hooks.append(clear)
    for x, y in loader:
        for hook in hooks:
            hook()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
    """,
    # clearing through a callable every caller hands over
    """
    import torch
    def fit(model, opt, loader, reset):
        for x, y in loader:
            reset()
            loss = crit(model(x), y)
            loss.backward()
            opt.step()

    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    fit(model, opt, loader, opt.zero_grad)
    """,
    # a wrapper class of the file whose zero_grad() clears the optimizer it wraps (Noam schedule)
    """
    class NoamOpt:
        def __init__(self, optimizer):
            self.optimizer = optimizer
        def step(self):
            self.optimizer.step()
        def zero_grad(self):
            self.optimizer.zero_grad()

    def train(model, optimizer: NoamOpt, loader):
        for batch in loader:
            optimizer.zero_grad()
            loss = model(batch).mean()
            loss.backward()
            optimizer.step()
    """,
    # one optimizer per model, zipped, each cleared through the loop variable
    """
    import torch
    models = [Net() for _ in range(3)]
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in models]
    for x, y in loader:
        for model, opt in zip(models, optimizers):
            opt.zero_grad()
            loss = crit(model(x), y)
            loss.backward()
            opt.step()
    """,
    # Pyro: SVI.step() runs the backward pass, steps and clears the gradients itself, and
    # Pyro's optimizers are not torch optimizers
    """
    import pyro
    from pyro.infer import SVI, Trace_ELBO
    optimizer = pyro.optim.Adam({"lr": 0.01})
    svi = SVI(model, guide, optimizer, loss=Trace_ELBO())
    for step in range(1000):
        loss = svi.step(data)
    """,
    # accelerate: accelerator.backward, step and zero_grad on the prepared optimizer
    """
    from accelerate import Accelerator
    accelerator = Accelerator()
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        outputs = model(**batch)
        accelerator.backward(outputs.loss)
        optimizer.step()
        optimizer.zero_grad()
    """,
    # JAX/Optax code whose names look like a torch loop: not torch code (mllint/frameworks.py)
    """
    import jax
    import optax

    for x, y in loader:
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state)
        loss.backward()
        optimizer.step()
    """,
    # every branch of an if/elif/else clears: together they run on every iteration
    """
    def train(model, optimizer, loader, mode):
        for x, y in loader:
            if mode == "none":
                optimizer.zero_grad(set_to_none=True)
            elif mode == "model":
                model.zero_grad()
            else:
                optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    """,
    # a guard that only skips the clear while there is no gradient yet
    """
    import torch
    w = torch.zeros(3, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    for step in range(100):
        if w.grad is not None:
            w.grad.zero_()
        loss = objective(w)
        loss.backward()
        opt.step()
    """,
    # accumulation over a literal period of 2: the clear (residue 1) runs once between two
    # steps (residue 0), only at another point of the period
    """
    def train(model, optimizer, loader):
        for it, (x, y) in enumerate(loader):
            if it % 2 == 1:
                optimizer.zero_grad()
            loss = criterion(model(x), y) / 2
            loss.backward()
            if it % 2 == 0:
                optimizer.step()
    """,
    # the same with a period the file only ever sets to 4: it is never 1
    """
    ACCUM = 4
    def train(model, optimizer, loader):
        for it, (x, y) in enumerate(loader):
            if it % ACCUM == 1:
                optimizer.zero_grad()
            loss = criterion(model(x), y) / ACCUM
            loss.backward()
            if it % ACCUM == 0:
                optimizer.step()
    """,
    # the optimizer was built over a filtered view of the model's parameters, in the caller:
    # the helper's model.zero_grad() clears them
    """
    import torch
    def train(model, optimizer, loader):
        for x, y in loader:
            model.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()

    net = Net()
    opt = torch.optim.SGD(filter(lambda p: p.requires_grad, net.parameters()), lr=0.1)
    train(net, opt, loader)
    """,
    # guards that only skip the clear while the optimizer's model has no gradient yet
    """
    def train(model, optimizer, loader):
        for x, y in loader:
            if any(p.grad is not None for p in model.parameters()):
                optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            if model.head.weight.grad is not None:
                model.zero_grad()
    """,
    # an optimizer over parameters collected in place, from loops over the model's parameters
    """
    import torch
    def train(model, head, loader):
        params = []
        for name, p in model.named_parameters():
            if not name.startswith("embed"):
                params.append(p)
        params += list(head.parameters())
        optimizer = torch.optim.SGD(params, lr=0.1)
        for x, y in loader:
            model.zero_grad()
            loss = criterion(head(model(x)), y)
            loss.backward()
            optimizer.step()
    """,
    # param groups over two models, through a comprehension over both: model.zero_grad() on
    # either may be the clear (which models the comprehension runs over is not followed)
    """
    import torch
    encoder, decoder = Encoder(), Decoder()
    optimizer = torch.optim.Adam([{"params": [p for m in (encoder, decoder) for p in m.parameters()]}])
    for x, y in loader:
        encoder.zero_grad()
        decoder.zero_grad()
        loss = criterion(decoder(encoder(x)), y)
        loss.backward()
        optimizer.step()
    """,
    # each network of the GAN holds its own optimizer, and each is cleared before its backward
    """
import torch
from torch import nn


class Generator(nn.Module):
    def __init__(self, latent, lr):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(latent, 784), nn.Tanh())
        self.optimizer = torch.optim.Adam(self.parameters(), lr=lr)

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, lr):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(784, 1), nn.Sigmoid())
        self.optimizer = torch.optim.Adam(self.parameters(), lr=lr)

    def forward(self, x):
        return self.main(x)


class GAN:
    def __init__(self, latent, lr):
        self.latent = latent
        self.generator = Generator(latent, lr)
        self.discriminator = Discriminator(lr)
        self.criterion = nn.BCELoss()

    def step(self, real):
        ones = torch.ones(real.shape[0])
        zeros = torch.zeros(real.shape[0])
        self.discriminator.zero_grad()
        self.criterion(self.discriminator(real).view(-1), ones).backward()
        fake = self.generator(torch.randn(real.shape[0], self.latent))
        self.criterion(self.discriminator(fake.detach()).view(-1), zeros).backward()
        self.discriminator.optimizer.step()

        self.generator.zero_grad()
        self.criterion(self.discriminator(fake).view(-1), ones).backward()
        self.generator.optimizer.step()


gan = GAN(100, 2e-4)
loader = torch.utils.data.DataLoader(torch.randn(64, 784), batch_size=16)
for epoch in range(5):
    for real in loader:
        gan.step(real)
""",
]

INVALID = [
    # an ignite Engine's process function: the engine calls it once per batch and clears nothing
    """
import torch
from torch import nn
from ignite.engine import Engine

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(10)]


def train_step(engine, batch):
    model.train()
    x, y = batch
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


trainer = Engine(train_step)
trainer.run(train_loader, max_epochs=2)
""",
    # no clearing at all
    Example(
        """
import torch
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
""",
        fixed="""
import torch
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
""",
    ),
    # zero_grad only once, before the loop
    Example(
        """
optimizer.zero_grad()
for step, batch in enumerate(train_loader):
    # forward pass
    output = model(batch["input"])
    loss = criterion(output, batch["target"])
    loss.backward()
    optimizer.step()
""",
        unsafe_fixed="""
optimizer.zero_grad()
for step, batch in enumerate(train_loader):
    optimizer.zero_grad()
    # forward pass
    output = model(batch["input"])
    loss = criterion(output, batch["target"])
    loss.backward()
    optimizer.step()
""",
    ),
    # zero_grad once per epoch around a batch loop that steps every batch
    Example(
        """
def train(model, loader, opt, epochs):
    for epoch in range(epochs):
        opt.zero_grad()
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
""",
        unsafe_fixed="""
def train(model, loader, opt, epochs):
    for epoch in range(epochs):
        opt.zero_grad()
        for x, y in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
""",
    ),
    # while loop, backward and step nested in with/if blocks; the guard tests a value, not an
    # iteration count, so the fix clears at the start of the body (clearing after the step
    # would leave a skipped step's gradients in place forever)
    Example(
        """
import torch
while global_step < max_steps:
    batch = next(data_iter)
    with torch.autocast("cpu"):
        loss = model(batch).mean()
    if torch.isfinite(loss):
        loss.backward()
        optimizer.step()
    global_step += 1
""",
        unsafe_fixed="""
import torch
while global_step < max_steps:
    optimizer.zero_grad()
    batch = next(data_iter)
    with torch.autocast("cpu"):
        loss = model(batch).mean()
    if torch.isfinite(loss):
        loss.backward()
        optimizer.step()
    global_step += 1
""",
    ),
    # GradScaler: scaler.step(optimizer) is the optimizer step
    Example(
        """
import torch
scaler = torch.cuda.amp.GradScaler()
for images, labels in loader:
    with torch.autocast("cuda"):
        loss = criterion(model(images), labels)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
""",
        unsafe_fixed="""
import torch
scaler = torch.cuda.amp.GradScaler()
for images, labels in loader:
    optimizer.zero_grad()
    with torch.autocast("cuda"):
        loss = criterion(model(images), labels)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
""",
    ),
    # GAN: the generator's optimizer is never cleared (only the discriminator is); the fix
    # clears right before the generator's backward, so the discriminator's backward (which
    # may reach the generator when the fake batch is not detached) cannot leak into its step
    Example(
        """
import torch
netD, netG = Discriminator(), Generator()
optD = torch.optim.Adam(netD.parameters())
optG = torch.optim.Adam(netG.parameters())
for real in loader:
    netD.zero_grad()
    errD = bce(netD(real), ones) + bce(netD(netG(z).detach()), zeros)
    errD.backward()
    optD.step()
    errG = bce(netD(netG(z)), ones)
    errG.backward()
    optG.step()
""",
        fixed="""
import torch
netD, netG = Discriminator(), Generator()
optD = torch.optim.Adam(netD.parameters())
optG = torch.optim.Adam(netG.parameters())
for real in loader:
    netD.zero_grad()
    errD = bce(netD(real), ones) + bce(netD(netG(z).detach()), zeros)
    errD.backward()
    optD.step()
    errG = bce(netD(netG(z)), ones)
    optG.zero_grad()
    errG.backward()
    optG.step()
""",
    ),
    # the step happens in a helper called from the loop; nothing clears
    Example(
        """
def update(model, optimizer, x, y):
    loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()

for epoch in range(num_epochs):
    for x, y in train_loader:
        update(model, opt, x, y)
""",
        unsafe_fixed="""
def update(model, optimizer, x, y):
    loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()

for epoch in range(num_epochs):
    for x, y in train_loader:
        opt.zero_grad()
        update(model, opt, x, y)
""",
    ),
    # gradient accumulation that never clears after the step
    Example(
        """
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y) / accumulation_steps
    loss.backward()
    if (i + 1) % accumulation_steps == 0:
        optimizer.step()
""",
        unsafe_fixed="""
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y) / accumulation_steps
    loss.backward()
    if (i + 1) % accumulation_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
""",
    ),
    # full-batch training over epochs, optimizer held on self
    Example(
        """
import torch.optim as optim

class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = optim.Adam(model.parameters(), lr=1e-3)

    def fit(self, x, y, epochs=100):
        for epoch in range(epochs):
            pred = self.model(x)
            loss = ((pred - y) ** 2).mean()
            loss.backward()
            self.optimizer.step()
""",
        fixed="""
import torch.optim as optim

class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = optim.Adam(model.parameters(), lr=1e-3)

    def fit(self, x, y, epochs=100):
        for epoch in range(epochs):
            self.optimizer.zero_grad()
            pred = self.model(x)
            loss = ((pred - y) ** 2).mean()
            loss.backward()
            self.optimizer.step()
""",
    ),
    # accelerate: accelerator.backward(loss) is a backward pass; zero_grad on a different optimizer
    Example(
        """
from accelerate import Accelerator
accelerator = Accelerator()
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for batch in loader:
    outputs = model(**batch)
    accelerator.backward(outputs.loss)
    optimizer.step()
    lr_scheduler.step()
""",
        unsafe_fixed="""
from accelerate import Accelerator
accelerator = Accelerator()
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for batch in loader:
    optimizer.zero_grad()
    outputs = model(**batch)
    accelerator.backward(outputs.loss)
    optimizer.step()
    lr_scheduler.step()
""",
    ),
    # the other optimizer's zero_grad does not clear this one
    Example(
        """
import torch
enc_opt = torch.optim.Adam(encoder.parameters())
dec_opt = torch.optim.Adam(decoder.parameters())
for src, tgt in pairs:
    enc_opt.zero_grad()
    loss = seq2seq_loss(encoder, decoder, src, tgt)
    loss.backward()
    enc_opt.step()
    dec_opt.step()
""",
        fixed="""
import torch
enc_opt = torch.optim.Adam(encoder.parameters())
dec_opt = torch.optim.Adam(decoder.parameters())
for src, tgt in pairs:
    dec_opt.zero_grad()
    enc_opt.zero_grad()
    loss = seq2seq_loss(encoder, decoder, src, tgt)
    loss.backward()
    enc_opt.step()
    dec_opt.step()
""",
    ),
    # one optimizer stepped twice per iteration, cleared only once: the second step re-applies the first loss
    Example(
        """
for real, fake in loader:
    opt_d.zero_grad()
    loss_fake = bce(disc(fake), zeros)
    loss_fake.backward()
    opt_d.step()
    loss_real = bce(disc(real), ones)
    loss_real.backward()
    opt_d.step()
""",
        unsafe_fixed="""
for real, fake in loader:
    opt_d.zero_grad()
    loss_fake = bce(disc(fake), zeros)
    loss_fake.backward()
    opt_d.step()
    opt_d.zero_grad()
    loss_real = bce(disc(real), ones)
    loss_real.backward()
    opt_d.step()
""",
    ),
    # adversarial training: the attack clears the perturbation's gradient, never the model's
    Example(
        """
for x, y in loader:
    delta = torch.zeros_like(x, requires_grad=True)
    for _ in range(attack_steps):
        attack_loss = F.cross_entropy(model(x + delta), y)
        attack_loss.backward()
        delta.data = (delta + alpha * delta.grad.sign()).clamp(-eps, eps)
        delta.grad.zero_()
    loss = F.cross_entropy(model(x + delta.detach()), y)
    loss.backward()
    optimizer.step()
""",
        unsafe_fixed="""
for x, y in loader:
    delta = torch.zeros_like(x, requires_grad=True)
    for _ in range(attack_steps):
        attack_loss = F.cross_entropy(model(x + delta), y)
        attack_loss.backward()
        delta.data = (delta + alpha * delta.grad.sign()).clamp(-eps, eps)
        delta.grad.zero_()
    loss = F.cross_entropy(model(x + delta.detach()), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
""",
    ),
    # the clear only runs on the logging iterations
    Example(
        """
for it, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    if it % log_interval == 0:
        print(f"iter {it}: {loss.item():.4f}")
        optimizer.zero_grad()
""",
        unsafe_fixed="""
for it, (x, y) in enumerate(loader):
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    if it % log_interval == 0:
        print(f"iter {it}: {loss.item():.4f}")
        optimizer.zero_grad()
""",
    ),
    # L-BFGS calls the closure several times per step: the clear belongs inside the closure
    Example(
        """
import torch
optimizer = torch.optim.LBFGS(model.parameters(), lr=1)
for i in range(max_iter):
    def closure():
        loss = criterion(model(inputs), targets)
        loss.backward()
        return loss
    optimizer.step(closure)
""",
        fixed="""
import torch
optimizer = torch.optim.LBFGS(model.parameters(), lr=1)
for i in range(max_iter):
    def closure():
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        return loss
    optimizer.step(closure)
""",
    ),
    # one backward feeding two optimizers, neither cleared: one finding, one fix for both
    Example(
        """
for batch in loader:
    loss = vae_loss(encoder, decoder, batch)
    loss.backward()
    enc_optimizer.step()
    dec_optimizer.step()
""",
        unsafe_fixed="""
for batch in loader:
    enc_optimizer.zero_grad()
    dec_optimizer.zero_grad()
    loss = vae_loss(encoder, decoder, batch)
    loss.backward()
    enc_optimizer.step()
    dec_optimizer.step()
""",
    ),
    # torch.autograd.backward counts as a backward pass
    Example(
        """
import torch
for step in range(1000):
    losses = [head(features) for head in heads]
    torch.autograd.backward(losses)
    optimizer.step()
""",
        unsafe_fixed="""
import torch
for step in range(1000):
    optimizer.zero_grad()
    losses = [head(features) for head in heads]
    torch.autograd.backward(losses)
    optimizer.step()
""",
    ),
    # the training steps run in a comprehension: clear at the start of the helper that steps
    Example(
        """
import torch

class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def _train_step(self, batch):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def fit(self, batches, epochs):
        for epoch in range(epochs):
            losses = [self._train_step(b) for b in batches]
""",
        fixed="""
import torch

class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def _train_step(self, batch):
        self.optimizer.zero_grad()
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def fit(self, batches, epochs):
        for epoch in range(epochs):
            losses = [self._train_step(b) for b in batches]
""",
    ),
    # a comprehension over a helper that steps only sometimes: no safe place to clear, no fix
    Example(
        """
import torch

def train_step(model, optimizer, batch, i):
    loss = model(batch).mean()
    loss.backward()
    if i % 4 == 0:
        optimizer.step()

def fit(model, optimizer, batches, epochs):
    for epoch in range(epochs):
        [train_step(model, optimizer, b, i) for i, b in enumerate(batches)]
"""
    ),
    # a fresh optimizer per trial over a model that lives on: the model's .grad carries over
    # from trial to trial; the clear must come after the optimizer is built (before it, the
    # first iteration would raise NameError)
    Example(
        """
import torch
model = Net()
for trial in range(n_trials):
    optimizer = torch.optim.SGD(model.parameters(), lr=lrs[trial])
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
""",
        fixed="""
import torch
model = Net()
for trial in range(n_trials):
    optimizer = torch.optim.SGD(model.parameters(), lr=lrs[trial])
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
""",
    ),
    # an optimizer rebound only on some iterations: no place in the body is after every
    # binding, so no fix
    Example(
        """
import torch
for epoch in range(epochs):
    if epoch == warmup_epochs:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
"""
    ),
    # a fresh model and optimizer, but stepped twice without a clear in between
    Example(
        """
import torch
for fold in folds:
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_a = criterion(model(xa), ya)
    loss_a.backward()
    opt.step()
    loss_b = criterion(model(xb), yb)
    loss_b.backward()
    opt.step()
""",
        fixed="""
import torch
for fold in folds:
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_a = criterion(model(xa), ya)
    loss_a.backward()
    opt.step()
    opt.zero_grad()
    loss_b = criterion(model(xb), yb)
    loss_b.backward()
    opt.step()
""",
    ),
    # one distributed autograd context for the whole loop: its gradients accumulate; a
    # DistributedOptimizer has no zero_grad(), so no fix
    Example(
        """
import torch.distributed.autograd as dist_autograd
from torch.distributed.optim import DistributedOptimizer
opt = DistributedOptimizer(torch.optim.SGD, rrefs, lr=0.05)
with dist_autograd.context() as context_id:
    for data, target in loader:
        loss = criterion(model(data), target)
        dist_autograd.backward(context_id, [loss])
        opt.step(context_id)
"""
    ),
    # the hand clearing resets the inputs' gradients, not the model's the optimizer holds
    Example(
        """
import torch
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for x, y in loader:
    for t in perturbations:
        t.grad.zero_()
    loss = criterion(model(x + sum(perturbations)), y)
    loss.backward()
    optimizer.step()
""",
        fixed="""
import torch
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for x, y in loader:
    optimizer.zero_grad()
    for t in perturbations:
        t.grad.zero_()
    loss = criterion(model(x + sum(perturbations)), y)
    loss.backward()
    optimizer.step()
""",
    ),
    # a callback that clears for one caller only: the other call never clears
    Example(
        """
import torch
def fit(model, opt, loader, on_batch):
    for x, y in loader:
        on_batch()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()

opt = torch.optim.SGD(model.parameters(), lr=0.1)
fit(model, opt, loader, opt.zero_grad)
fit(model, opt, loader, print)
""",
        fixed="""
import torch
def fit(model, opt, loader, on_batch):
    for x, y in loader:
        opt.zero_grad()
        on_batch()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()

opt = torch.optim.SGD(model.parameters(), lr=0.1)
fit(model, opt, loader, opt.zero_grad)
fit(model, opt, loader, print)
""",
    ),
    # well-known torch optimizers from other packages get the safe fix (timm's factory, apex)
    Example(
        """
import timm.optim
from apex.optimizers import FusedAdam
optimizer = timm.optim.create_optimizer_v2(model, "adamw", lr=1e-3)
head_opt = FusedAdam(head.parameters())
for x, y in loader:
    loss = criterion(head(model(x)), y)
    loss.backward()
    optimizer.step()
    head_opt.step()
""",
        fixed="""
import timm.optim
from apex.optimizers import FusedAdam
optimizer = timm.optim.create_optimizer_v2(model, "adamw", lr=1e-3)
head_opt = FusedAdam(head.parameters())
for x, y in loader:
    optimizer.zero_grad()
    head_opt.zero_grad()
    loss = criterion(head(model(x)), y)
    loss.backward()
    optimizer.step()
    head_opt.step()
""",
    ),
    # an optimizer returned by a helper we cannot see may lack zero_grad(): the fix is unsafe
    Example(
        """
from myproject.training import build_optimizer
optimizer = build_optimizer(cfg, model)
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
""",
        unsafe_fixed="""
from myproject.training import build_optimizer
optimizer = build_optimizer(cfg, model)
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
""",
    ),
    # the clear is guarded by a flag the loop never changes, the step is not: with no
    # scheduler nothing ever clears (a model's own zero_grad() clears its optimizer)
    Example(
        """
import torch

class Regressor(torch.nn.Module):
    def fit(self, loader, epochs):
        optimizer = torch.optim.Adam(self.parameters(), lr=1e-3)
        for epoch in range(epochs):
            for x, y in loader:
                if self.scheduler:
                    self.zero_grad()
                loss = torch.nn.functional.mse_loss(self(x), y)
                loss.backward()
                optimizer.step()
""",
        fixed="""
import torch

class Regressor(torch.nn.Module):
    def fit(self, loader, epochs):
        optimizer = torch.optim.Adam(self.parameters(), lr=1e-3)
        for epoch in range(epochs):
            for x, y in loader:
                optimizer.zero_grad()
                if self.scheduler:
                    self.zero_grad()
                loss = torch.nn.functional.mse_loss(self(x), y)
                loss.backward()
                optimizer.step()
""",
    ),
    # the same with the clear after the step, beside the scheduler's step
    Example(
        """
def train(model, optimizer, loader, use_sched):
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        if use_sched:
            scheduler.step()
            optimizer.zero_grad()
""",
        unsafe_fixed="""
def train(model, optimizer, loader, use_sched):
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        if use_sched:
            scheduler.step()
            optimizer.zero_grad()
""",
    ),
    # accumulation whose clear sits under a flag: a name that looks like a counter
    # (`step_scheduler`) but never changes in the loop counts nothing
    Example(
        """
def train(model, optimizer, loader, args):
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / args.accum_steps
        loss.backward()
        if (i + 1) % args.accum_steps == 0:
            optimizer.step()
            if args.step_scheduler:
                scheduler.step()
                optimizer.zero_grad()
""",
        unsafe_fixed="""
def train(model, optimizer, loader, args):
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / args.accum_steps
        loss.backward()
        if (i + 1) % args.accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
            if args.step_scheduler:
                scheduler.step()
                optimizer.zero_grad()
""",
    ),
    # the clear and the step take different residues of the same period: with
    # grad_accum == 1 (the default) `iteration % 1 == 1` never holds and nothing clears
    Example(
        """
def train(model, optimizer, loader, grad_accum=1):
    for iteration, (x, y) in enumerate(loader):
        if iteration % grad_accum == 1:
            optimizer.zero_grad()
        loss = criterion(model(x), y) / grad_accum
        loss.backward()
        if iteration % grad_accum == 0:
            optimizer.step()
""",
        unsafe_fixed="""
def train(model, optimizer, loader, grad_accum=1):
    for iteration, (x, y) in enumerate(loader):
        if iteration % grad_accum == 1:
            optimizer.zero_grad()
        loss = criterion(model(x), y) / grad_accum
        loss.backward()
        if iteration % grad_accum == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
    ),
    # the helper's model.zero_grad() clears the backbone, while the optimizer handed over holds
    # the head's parameters (through a filter): named as the helper sees them, they differ
    Example(
        """
import torch
import torch.nn as nn

def train(model, optimizer, loader):
    for x, y in loader:
        model.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()

backbone = nn.Linear(16, 16)
head = nn.Linear(16, 1)
head_optimizer = torch.optim.SGD(filter(lambda p: p.requires_grad, head.parameters()), lr=0.1)
train(backbone, head_optimizer, loader)
""",
        fixed="""
import torch
import torch.nn as nn

def train(model, optimizer, loader):
    for x, y in loader:
        optimizer.zero_grad()
        model.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()

backbone = nn.Linear(16, 16)
head = nn.Linear(16, 1)
head_optimizer = torch.optim.SGD(filter(lambda p: p.requires_grad, head.parameters()), lr=0.1)
train(backbone, head_optimizer, loader)
""",
    ),
    # the guard tests the batch's gradient, not the model's: a fresh batch has none when the
    # clear runs, so nothing ever clears
    Example(
        """
def train(model, optimizer, loader):
    for x, y in loader:
        if x.grad is not None:
            optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
""",
        unsafe_fixed="""
def train(model, optimizer, loader):
    for x, y in loader:
        optimizer.zero_grad()
        if x.grad is not None:
            optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
""",
    ),
    # the optimizer a network holds (``self.optimizer`` over its own parameters): clearing the
    # other network does not clear it; ``gan.step`` is a method, not ``optimizer.step(closure)``
    Example(
        """
import torch
from torch import nn


class Generator(nn.Module):
    def __init__(self, latent, lr):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(latent, 784), nn.Tanh())
        self.optimizer = torch.optim.Adam(self.parameters(), lr=lr)

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, lr):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(784, 1), nn.Sigmoid())
        self.optimizer = torch.optim.Adam(self.parameters(), lr=lr)

    def forward(self, x):
        return self.main(x)


class GAN:
    def __init__(self, latent, lr):
        self.latent = latent
        self.generator = Generator(latent, lr)
        self.discriminator = Discriminator(lr)
        self.criterion = nn.BCELoss()

    def step(self, real):
        ones = torch.ones(real.shape[0])
        zeros = torch.zeros(real.shape[0])
        self.criterion(self.discriminator(real).view(-1), ones).backward()
        fake = self.generator(torch.randn(real.shape[0], self.latent))
        self.criterion(self.discriminator(fake.detach()).view(-1), zeros).backward()
        self.discriminator.optimizer.step()

        self.generator.zero_grad()
        self.criterion(self.discriminator(fake).view(-1), ones).backward()
        self.generator.optimizer.step()


gan = GAN(100, 2e-4)
loader = torch.utils.data.DataLoader(torch.randn(64, 784), batch_size=16)
for epoch in range(5):
    for real in loader:
        gan.step(real)
""",
        unsafe_fixed="""
import torch
from torch import nn


class Generator(nn.Module):
    def __init__(self, latent, lr):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(latent, 784), nn.Tanh())
        self.optimizer = torch.optim.Adam(self.parameters(), lr=lr)

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, lr):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(784, 1), nn.Sigmoid())
        self.optimizer = torch.optim.Adam(self.parameters(), lr=lr)

    def forward(self, x):
        return self.main(x)


class GAN:
    def __init__(self, latent, lr):
        self.latent = latent
        self.generator = Generator(latent, lr)
        self.discriminator = Discriminator(lr)
        self.criterion = nn.BCELoss()

    def step(self, real):
        ones = torch.ones(real.shape[0])
        zeros = torch.zeros(real.shape[0])
        self.criterion(self.discriminator(real).view(-1), ones).backward()
        fake = self.generator(torch.randn(real.shape[0], self.latent))
        self.criterion(self.discriminator(fake.detach()).view(-1), zeros).backward()
        self.discriminator.optimizer.step()

        self.generator.zero_grad()
        self.criterion(self.discriminator(fake).view(-1), ones).backward()
        self.generator.optimizer.step()


gan = GAN(100, 2e-4)
loader = torch.utils.data.DataLoader(torch.randn(64, 784), batch_size=16)
for epoch in range(5):
    for real in loader:
        gan.discriminator.optimizer.zero_grad()
        gan.step(real)
""",
    ),
]
