"""With a ``GradScaler``, a gradient clip before ``scaler.unscale_(optimizer)`` clips scaled gradients.

Why it matters
    ``scaler.scale(loss).backward()`` leaves every gradient multiplied by the loss scale
    (65536 at the start, adjusted as training goes). ``clip_grad_norm_(params, max_norm)``
    called before ``scaler.unscale_(optimizer)`` measures that scaled norm, so it compares
    ``scale * ||g||`` with ``max_norm``: nearly every step is clipped, and the update that
    ``scaler.step`` applies after unscaling is ``max_norm / scale`` times the gradient's
    direction, thousands of times smaller than intended. ``clip_grad_value_`` clips at
    ``clip_value / scale`` in real units. Nothing fails; training is just slow or stalls
    (fixtures/ml012: the clip sees a norm 65536 times the true one).

When the code is fine
    - ``scaler.unscale_(optimizer)`` runs before the clip in the same iteration, also in a
      helper that runs first (``self._unscale()``, ``clip_gradients(scaler, ...)`` that
      unscales then clips);
    - no ``GradScaler`` is used with that backward pass (``loss.backward()``, apex
      ``amp.scale_loss``, ``accelerator.backward``), or the clip only runs when AMP is off
      (``if not args.amp: clip_grad_norm_(...)``, ``if scaler is None``, the ``else`` of
      ``if use_amp:``);
    - ``accelerator.clip_grad_norm_`` (accelerate unscales first), Lightning's
      ``gradient_clip_val`` / ``self.clip_gradients``, timm's ``NativeScaler(...,
      clip_grad=...)``: the library unscales before clipping;
    - the clip comes after ``scaler.step(optimizer)`` (it then clips nothing that step uses:
      a different bug this rule does not report).
    ``scaler = GradScaler(enabled=use_amp)`` is still a scaler: with AMP on, the bug is there.

How to fix
    Call ``scaler.unscale_(optimizer)`` right before the clip; ``scaler.step(optimizer)``
    then knows the gradients are unscaled and does not unscale them again. ``--unsafe-fixes``
    inserts it when the clip, the scaler's step and the optimizer are in the same function
    and loop, and no ``unscale_`` for that step runs later (a second ``unscale_`` before one
    step raises). The fix is unsafe because it changes training: the clip starts clipping at
    the threshold the code asks for, so the updates grow.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional

import libcst as cst

from mllint.findings import Applicability, Finding, Fix
from mllint.registry import Example
from mllint.semantics.amp import ScaledClip, scaled_clips
from mllint.semantics.model import FileModel
from mllint.semantics.names import dotted

CODE = "ML012"
NAME = "clip-without-unscale"
MESSAGE = "the clip sees scaled gradients: call `scaler.unscale_(optimizer)` before clipping"
TRIGGERS = ("clip_grad",)
REQUIRES = (".scale(",)
DEFAULT_ENABLED = True
FIX = "unsafe"


def _block_of(model: FileModel, statement) -> Optional[cst.CSTNode]:
    found: List[cst.CSTNode] = []

    class _Finder(cst.CSTVisitor):
        def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
            if any(s is statement for s in node.body):
                found.append(node)
            return not found

    model.module.visit(_Finder())
    return found[0] if found else None


def _fix(model: FileModel, hits: List[ScaledClip]) -> Optional[Fix]:
    first = hits[0]
    clip = first.clip
    pairs = {(h.scaler, h.optimizer) for h in hits}
    if len(pairs) != 1 or first.optimizer is None or "[" in first.optimizer:
        return None
    if any(h.step_frame is not clip.frame or h.step_loop is not clip.loop or h.unscaled_later for h in hits):
        return None
    statement = clip.statement
    block = _block_of(model, statement)
    if not isinstance(statement, cst.SimpleStatementLine) or not isinstance(block, cst.IndentedBlock):
        return None
    try:
        new = cst.parse_statement(f"{first.scaler}.unscale_({first.optimizer})\n")
    except cst.ParserSyntaxError:
        return None
    body = list(block.body)
    index = next((i for i, s in enumerate(body) if s is statement), None)
    if index is None:
        return None
    new = new.with_changes(leading_lines=statement.leading_lines)
    body[index:index + 1] = [new, statement.with_changes(leading_lines=())]
    return model.fix_replacing(block, block.with_changes(body=body), Applicability.UNSAFE,
                               f"Insert `{first.scaler}.unscale_({first.optimizer})` before the clip")


def check(model: FileModel) -> Iterable[Finding]:
    groups: Dict[cst.CSTNode, List[ScaledClip]] = {}
    for hit in scaled_clips(model):
        groups.setdefault(hit.report_node(), []).append(hit)
    for node, hits in groups.items():
        first = hits[0]
        clip_name = (dotted(first.clip.node.func) or "clip").rsplit(".", 1)[-1]
        scaler = first.scaler if first.step_frame is first.clip.frame else "scaler"
        optimizer = first.optimizer if first.optimizer and first.step_frame is first.clip.frame else "optimizer"
        call = f"{scaler}.unscale_({optimizer})"
        if node is first.clip.node:
            message = f"`{clip_name}` clips scaled gradients: call `{call}` before it"
        else:
            message = f"`{clip_name}` in this call clips scaled gradients: call `{call}` first"
        if len(message) > 110:
            message = f"`{clip_name}` clips scaled gradients: call `scaler.unscale_(optimizer)` first"
        line = model.position(first.step).start.line
        detail = (
            f"After `scale(loss).backward()` the gradients are multiplied by the loss scale (65536 at first), "
            f"so `{clip_name}` measures them scaled and clips by the wrong threshold before "
            f"`{first.scaler}.step(...)` on line {line} unscales them; call `{call}` before the clip."
        )
        fix = _fix(model, hits) if node is first.clip.node else None
        yield model.finding(node, CODE, NAME, message, fix=fix, detail=detail)
