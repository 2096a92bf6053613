"""Per-function summaries, computed to a fixpoint so that a call to a helper counts as
what the helper does (helpers calling helpers, in any order, recursion included)."""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Tuple

from mllint.semantics.model import (
    BACKWARD,
    CALL,
    CLEAR,
    EVAL,
    FRESH,
    FORWARD,
    STEP,
    TRAIN,
    ClearSite,
    FileModel,
    StepSite,
    Summary,
    conds_within,
    covers,
    translate,
)

MAX_ROUNDS = 50


def _join(outer: Tuple, inner: Tuple) -> Tuple:
    """The conditions of a site in a callee seen from the call: the call's, then the callee's
    not already among them. A condition repeated adds nothing (``covers`` reads them as a
    set), and without this a recursive helper's sites gained the call's conditions again on
    every round, so the summaries never settled and grew for MAX_ROUNDS rounds (a worker at
    several GiB on torch/_dynamo/utils.py). Without recursion nothing repeats: unchanged."""
    return outer + tuple(c for c in inner if c not in outer) if inner else outer


def _distinct(sites):
    """One site per place and set of conditions: ``covers`` reads conditions as a set, so
    two orders of the same conditions are the same site. Helpers that call each other under
    different conditions otherwise produced every order of every subset, round after round
    (torch/_subclasses/meta_utils.py). The order kept is the first by the conditions' text."""
    best = {}
    for site in sites:
        place = dataclasses.replace(site, conds=())
        group = (place, frozenset(site.conds))
        rank = tuple((c.text, c.branch) for c in site.conds)
        if group not in best or rank < best[group][0]:
            best[group] = (rank, site)
    return {site for _, site in best.values()}


def _summarise(model: FileModel, key: str, known: Dict[str, Summary]) -> Summary:
    fn = model.functions[key]
    backward, clears, fresh, loop_steps = set(), set(), set(), set()
    forwards, evals, trains = set(), set(), set()
    steps: List[Tuple[int, StepSite]] = []  # (order, step) before coverage is known
    backward_orders: List[Tuple[int, object]] = []
    for effect in model.effects_in(key):
        in_loop = effect.ctx.loop is not None
        conds = conds_within(effect.ctx.conds, None)
        if effect.kind == BACKWARD:
            backward.add(effect.node)
            backward_orders.append((effect.order, effect.node))
        elif effect.kind == CLEAR:
            clears.add(ClearSite(effect.ref, conds))
        elif effect.kind == FRESH and not in_loop:
            fresh.add(ClearSite(effect.ref, conds))
        elif effect.kind == STEP:
            if in_loop:
                loop_steps.add(effect.ref)
            else:
                steps.append((effect.order, StepSite(effect.ref, effect.node, conds, None, False)))
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
            clears |= {ClearSite(translate(c.ref, mapping), _join(conds, c.conds)) for c in callee.clears}
            if not in_loop:
                fresh |= {ClearSite(translate(c.ref, mapping), _join(conds, c.conds)) for c in callee.fresh}
            for step in callee.top_steps:
                ref = translate(step.ref, mapping)
                if in_loop:
                    loop_steps.add(ref)
                else:
                    steps.append((effect.order, StepSite(ref, step.node, _join(conds, step.conds), step.feeder, step.covered)))
            loop_steps |= {translate(r, mapping) for r in callee.loop_steps}
            forwards |= {translate(r, mapping) for r in callee.forwards}
            evals |= {translate(r, mapping) for r in callee.evals}
            trains |= {translate(r, mapping) for r in callee.trains}
    top_steps = set()
    for order, step in steps:
        feeder = step.feeder
        if feeder is None:
            before = [node for o, node in backward_orders if o < order]
            feeder = before[-1] if before else None
        covered = step.covered or any(
            covers(c.conds, c.ref, step.conds, fixed=model.fixed_period) and model.clears(c.ref, step.ref, key) for c in clears | fresh
        )
        top_steps.add(StepSite(step.ref, step.node, step.conds, feeder, covered))
    return Summary(
        frozenset(backward),
        frozenset(_distinct(clears)),
        frozenset(_distinct(fresh)),
        frozenset(_distinct(top_steps)),
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
