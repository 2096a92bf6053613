"""Per-function summaries, computed to a fixpoint so that a call to a helper counts as
what the helper does (helpers calling helpers, in any order, recursion included)."""

from __future__ import annotations

from typing import Dict

from mllint.semantics.model import (
    BACKWARD,
    CALL,
    CLEAR,
    EVAL,
    FORWARD,
    STEP,
    TRAIN,
    FileModel,
    Summary,
    translate,
)

MAX_ROUNDS = 50


def _summarise(model: FileModel, key: str, known: Dict[str, Summary]) -> Summary:
    fn = model.functions[key]
    backward, clears, top_steps, loop_steps = set(), set(), set(), set()
    forwards, evals, trains = set(), set(), set()
    for effect in model.effects_in(key):
        in_loop = effect.ctx.loop is not None
        if effect.kind == BACKWARD:
            backward.add(effect.node)
        elif effect.kind == CLEAR:
            clears.add(effect.ref)
        elif effect.kind == STEP:
            if in_loop:
                loop_steps.add(effect.ref)
            else:
                top_steps.add((effect.ref, effect.node, effect.ctx.conditional))
        elif effect.kind == FORWARD:
            forwards.add(effect.ref)
        elif effect.kind == EVAL:
            evals.add(effect.ref)
        elif effect.kind == TRAIN:
            trains.add(effect.ref)
        elif effect.kind == CALL:
            callee = known.get(effect.callee or "")
            if callee is None:
                continue
            mapping = effect.args or {}
            backward |= callee.backward_sites
            clears |= {translate(r, mapping) for r in callee.clears}
            for ref, node, cond in callee.top_steps:
                ref = translate(ref, mapping)
                if in_loop:
                    loop_steps.add(ref)
                else:
                    top_steps.add((ref, node, cond or effect.ctx.conditional))
            loop_steps |= {translate(r, mapping) for r in callee.loop_steps}
            forwards |= {translate(r, mapping) for r in callee.forwards}
            evals |= {translate(r, mapping) for r in callee.evals}
            trains |= {translate(r, mapping) for r in callee.trains}
    return Summary(
        frozenset(backward),
        frozenset(clears),
        frozenset(top_steps),
        frozenset(loop_steps),
        frozenset(forwards),
        frozenset(evals),
        frozenset(trains),
        fn.grad == "off",
    )


def compute(model: FileModel) -> Dict[str, Summary]:
    summaries: Dict[str, Summary] = {key: Summary() for key in model.functions}
    for _ in range(MAX_ROUNDS):
        changed = False
        for key in model.functions:
            new = _summarise(model, key, summaries)
            if new != summaries[key]:
                summaries[key] = new
                changed = True
        if not changed:
            break
    return summaries
