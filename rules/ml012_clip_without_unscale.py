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
    A function handed the scaler (a parameter annotated ``GradScaler`` or named ``*scaler``)
    that clips and then calls ``scaler.step(...)`` runs after its caller's scaled backward
    pass: it is reported unless it unscales first, except when the file itself calls it (the
    callers are followed instead, so an ``unscale_`` they run before the call counts).
    ``for opt in optimizers: scaler.unscale_(opt)`` unscales every optimizer.

How to fix
    Call ``scaler.unscale_(optimizer)`` right before the clip; ``scaler.step(optimizer)``
    then knows the gradients are unscaled and does not unscale them again. ``--unsafe-fixes``
    inserts it when the clip, the scaler's step and the optimizer are in the same function
    and loop, the step runs wherever the clip runs (not only under ``if scaler is not None``),
    and no ``unscale_`` for that step runs later (a second ``unscale_`` before one step raises). The fix is unsafe because it changes training: the clip starts clipping at
    the threshold the code asks for, so the updates grow.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional

import libcst as cst

from mllint.findings import Applicability, Example, Finding, Fix
from mllint.semantics.amp import ScaledClip, scaled_clips
from mllint.semantics.model import FileModel
from mllint.semantics.names import dotted

CODE = "ML012"
NAME = "clip-without-unscale"
MESSAGE = "the clip sees scaled gradients: call `scaler.unscale_(optimizer)` before clipping"
TRIGGERS = ("clip_grad",)
REQUIRES = (".scale(|GradScaler|scaler",)
DEFAULT_ENABLED = True
FRAMEWORK = "torch"  # left out for files of another framework (mllint/frameworks.py)
FIX = "unsafe"


def SCREEN(facts) -> bool:
    # Sound: every finding is about a gradient-clipping call (``clip_grad_norm_``,
    # ``clip_grad_value_``, ``accelerator.clip_grad_norm_``, ``fabric.clip_gradients``...),
    # whose callee's name holds ``clip_grad`` (aliases resolved).
    return any("clip_grad" in name for name in facts.call_names)


def _block_of(model: FileModel, statement) -> Optional[cst.CSTNode]:
    """The indented block ``statement`` is directly in."""
    parent = model.parents.get(statement)
    return parent if isinstance(parent, cst.IndentedBlock) and any(s is statement for s in parent.body) else None


def _innermost_block(model: FileModel, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    """The innermost indented block holding ``node``."""
    return next((a for a in model.parents.ancestors(node) if isinstance(a, cst.IndentedBlock)), None)


def _contains(model: FileModel, outer: cst.CSTNode, node: cst.CSTNode) -> bool:
    return node is outer or any(a is outer for a in model.parents.ancestors(node))


def _fix(model: FileModel, hits: List[ScaledClip]) -> Optional[Fix]:
    first = hits[0]
    clip = first.clip
    pairs = {(h.scaler, h.optimizer) for h in hits}
    if len(pairs) != 1 or first.optimizer is None or "[" in first.optimizer:
        return None
    if any(h.step_frame is not clip.frame or h.step_loop is not clip.loop or h.unscaled_later for h in hits):
        return None
    for hit in hits:
        # the step must run wherever the clip runs (``if scaler is not None: scaler.step(...)``
        # around the step only: the scaler may be None where the clip is, so no unscale_ there)
        step_block = _innermost_block(model, hit.step)
        if step_block is None or not _contains(model, step_block, clip.node):
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


VALID = [
    # the documented recipe: unscale_, then clip, then step
    """
import torch
scaler = torch.amp.GradScaler("cuda")
for x, y in loader:
    optimizer.zero_grad()
    with torch.autocast("cuda", dtype=torch.float16):
        loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
""",
    # no scaler: a plain fp32 backward pass
    """
import torch
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    optimizer.step()
""",
    # the clip only runs on the fp32 branch
    """
from torch.cuda.amp import GradScaler
from torch.nn.utils import clip_grad_norm_
scaler = GradScaler()
for batch in loader:
    loss = compute_loss(model, batch)
    if args.amp:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        clip_grad_norm_(model.parameters(), args.clip)
        optimizer.step()
    optimizer.zero_grad()
""",
    # the clip is conditional on AMP being off (a separate `if not use_amp`)
    """
import torch
scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
for x, y in loader:
    scaler.scale(criterion(model(x), y)).backward()
    if not use_amp:
        torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
""",
    # accelerate unscales inside its own clip_grad_norm_
    """
from accelerate import Accelerator
accelerator = Accelerator(mixed_precision="fp16")
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for batch in loader:
    loss = model(**batch).loss
    accelerator.backward(loss)
    if accelerator.sync_gradients:
        accelerator.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad()
""",
    # the unscale_ runs in a helper that is called before the clip
    """
import torch

class Trainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer
        self.scaler = torch.cuda.amp.GradScaler()

    def _prepare_grads(self):
        self.scaler.unscale_(self.optimizer)

    def train_step(self, batch):
        loss = self.model(batch).mean()
        self.scaler.scale(loss).backward()
        self._prepare_grads()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.scaler.step(self.optimizer)
        self.scaler.update()
""",
    # a helper that unscales and clips, with the scaler passed in
    """
import torch

def clip_gradients(model, scaler, optimizer, max_norm):
    scaler.unscale_(optimizer)
    return torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)

scaler = torch.amp.GradScaler()
for x in loader:
    scaler.scale(model(x).sum()).backward()
    norm = clip_gradients(model, scaler, optimizer, 1.0)
    scaler.step(optimizer)
    scaler.update()
""",
    # `scaler is None` means fp32 training here: the clip only runs then
    """
import torch
def train_one_epoch(model, loader, optimizer, scaler=None, clip=1.0):
    for images, targets in loader:
        loss = model(images, targets)
        optimizer.zero_grad()
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
""",
    # the clip is after the step (a different matter), the scaled gradients are never clipped
    """
import torch
scaler = torch.cuda.amp.GradScaler()
for x in loader:
    scaler.scale(model(x).mean()).backward()
    scaler.step(optimizer)
    scaler.update()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.zero_grad()
""",
    # apex amp unscales when the scale_loss context exits; Lightning clips through its own hook
    """
import torch
from apex import amp
model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
for x in loader:
    with amp.scale_loss(model(x).mean(), optimizer) as scaled_loss:
        scaled_loss.backward()
    torch.nn.utils.clip_grad_norm_(amp.master_params(optimizer), 1.0)
    optimizer.step()
    optimizer.zero_grad()
""",
    # every optimizer unscaled in a loop before the clip (a GAN with two optimizers)
    """
import torch
scaler = torch.cuda.amp.GradScaler()
for real in loader:
    scaler.scale(gan_loss(real)).backward()
    for opt in (opt_g, opt_d):
        scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(all_params, 1.0)
    for opt in (opt_g, opt_d):
        scaler.step(opt)
    scaler.update()
""",
    # a step helper handed the scaler, called by this file after unscale_
    """
import torch

def clip_then_step(net, opt, scaler):
    torch.nn.utils.clip_grad_norm_(net.parameters(), 2.0)
    scaler.step(opt)
    scaler.update()

scaler = torch.amp.GradScaler()
for x, y in loader:
    scaler.scale(loss_fn(net(x), y)).backward()
    scaler.unscale_(opt)
    clip_then_step(net, opt, scaler)
""",
    # the unscale on a one-line `if` that guards the scaler's existence: without one nothing was scaled
    """
    import torch

    class AmpOptimizer:
        def backward_clip_step(self, stepping, loss):
            if self.scaler is not None: self.scaler.scale(loss).backward()
            else: loss.backward()
            if stepping:
                if self.scaler is not None: self.scaler.unscale_(self.optimizer)
                norm = torch.nn.utils.clip_grad_norm_(self.params, self.max_norm)
                if self.scaler is not None:
                    self.scaler.step(self.optimizer)
                    self.scaler.update()
                else:
                    self.optimizer.step()
            return norm
    """,
]

INVALID = [
    # the classic: clip between scale(loss).backward() and step
    Example(
        """
import torch
scaler = torch.cuda.amp.GradScaler()
for x, y in loader:
    optimizer.zero_grad()
    with torch.cuda.amp.autocast():
        loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
""",
        unsafe_fixed="""
import torch
scaler = torch.cuda.amp.GradScaler()
for x, y in loader:
    optimizer.zero_grad()
    with torch.cuda.amp.autocast():
        loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
""",
    ),
    # torch.amp spelling, scaler enabled by a flag: still a scaler when the flag is on
    Example(
        """
import torch
from torch import nn
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
for step, batch in enumerate(loader):
    loss = model(batch)
    scaler.scale(loss).backward()
    nn.utils.clip_grad_value_(model.parameters(), clip_value=0.1)
    scaler.step(opt)
    scaler.update()
    opt.zero_grad(set_to_none=True)
""",
        unsafe_fixed="""
import torch
from torch import nn
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
for step, batch in enumerate(loader):
    loss = model(batch)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    nn.utils.clip_grad_value_(model.parameters(), clip_value=0.1)
    scaler.step(opt)
    scaler.update()
    opt.zero_grad(set_to_none=True)
""",
    ),
    # on the AMP branch of the same method (the fp32 branch is fine)
    Example(
        """
import torch

class Trainer:
    def __init__(self, model, optimizer, use_amp):
        self.model, self.optimizer, self.use_amp = model, optimizer, use_amp
        self.scaler = torch.cuda.amp.GradScaler()

    def run_batch(self, x, y):
        loss = self.model(x, y)
        self.optimizer.zero_grad(set_to_none=True)
        if self.use_amp:
            self.scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()
""",
        unsafe_fixed="""
import torch

class Trainer:
    def __init__(self, model, optimizer, use_amp):
        self.model, self.optimizer, self.use_amp = model, optimizer, use_amp
        self.scaler = torch.cuda.amp.GradScaler()

    def run_batch(self, x, y):
        loss = self.model(x, y)
        self.optimizer.zero_grad(set_to_none=True)
        if self.use_amp:
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()
""",
    ),
    # the clip is in a helper defined in the file: reported at the call, no fix
    """
import torch
from torch.cuda.amp import GradScaler

def clip_gradients(model, max_norm=1.0):
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)

scaler = GradScaler()
for x, y in loader:
    scaler.scale(loss_fn(model(x), y)).backward()
    clip_gradients(model)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
""",
    # the scaler passed as a parameter; gradient accumulation steps every few batches
    Example(
        """
import torch
from torch.nn.utils import clip_grad_norm_

def train_epoch(model, loader, optimizer, scaler, accum_steps, max_norm):
    for i, (x, y) in enumerate(loader):
        with torch.autocast("cuda"):
            loss = model(x, y) / accum_steps
        scaler.scale(loss).backward()
        if (i + 1) % accum_steps == 0:
            clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
""",
        unsafe_fixed="""
import torch
from torch.nn.utils import clip_grad_norm_

def train_epoch(model, loader, optimizer, scaler, accum_steps, max_norm):
    for i, (x, y) in enumerate(loader):
        with torch.autocast("cuda"):
            loss = model(x, y) / accum_steps
        scaler.scale(loss).backward()
        if (i + 1) % accum_steps == 0:
            scaler.unscale_(optimizer)
            clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
""",
    ),
    # the scaled backward runs in one method, the clip in the caller: followed through self
    """
import torch

class Engine:
    def __init__(self, net, opt):
        self.net, self.opt = net, opt
        self.scaler = torch.cuda.amp.GradScaler()

    def backward(self, loss):
        self.scaler.scale(loss).backward()

    def step(self, batch):
        loss = self.net(batch)
        self.backward(loss)
        torch.nn.utils.clip_grad_norm_(self.net.parameters(), 10.0)
        self.scaler.step(self.opt)
        self.scaler.update()
""",
    # unscale_ after the clip is too late: the clip already saw scaled gradients (no fix: a
    # second unscale_ before the step raises)
    """
import torch
scaler = torch.cuda.amp.GradScaler()
for x in loader:
    scaler.scale(model(x).mean()).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.unscale_(optimizer)
    scaler.step(optimizer)
    scaler.update()
""",
    # a clip conditioned on something that is not AMP still sees the scaled gradients
    Example(
        """
import torch
scaler = torch.cuda.amp.GradScaler()
for it, batch in enumerate(loader):
    loss = model(batch)
    scaler.scale(loss).backward()
    if args.clip_grad > 0:
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad)
    scaler.step(optimizer)
    scaler.update()
""",
        unsafe_fixed="""
import torch
scaler = torch.cuda.amp.GradScaler()
for it, batch in enumerate(loader):
    loss = model(batch)
    scaler.scale(loss).backward()
    if args.clip_grad > 0:
        scaler.unscale_(optimizer)
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad)
    scaler.step(optimizer)
    scaler.update()
""",
    ),
    # the scaled loss bound to a name first
    Example(
        """
import torch
scaler = torch.amp.GradScaler()
for x in loader:
    scaled = scaler.scale(model(x).mean())
    scaled.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
""",
        unsafe_fixed="""
import torch
scaler = torch.amp.GradScaler()
for x in loader:
    scaled = scaler.scale(model(x).mean())
    scaled.backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
""",
    ),
    # a ShardedGradScaler (FSDP) and a clip helper method on self
    """
import torch
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

class Runner:
    def __init__(self, model, optim):
        self.model, self.optim = model, optim
        self.grad_scaler = ShardedGradScaler()

    def clip_gradients(self):
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)

    def train_step(self, batch):
        loss = self.model(batch).loss
        self.grad_scaler.scale(loss).backward()
        self.clip_gradients()
        self.grad_scaler.step(self.optim)
        self.grad_scaler.update()
""",
    # an update helper handed the caller's GradScaler: the caller ran scaler.scale(loss).backward()
    Example(
        """
import torch
from torch.cuda.amp import GradScaler

def apply_update(net, opt, scaler: GradScaler, max_norm=1.0):
    torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm)
    scaler.step(opt)
    scaler.update()
    opt.zero_grad(set_to_none=True)
""",
        unsafe_fixed="""
import torch
from torch.cuda.amp import GradScaler

def apply_update(net, opt, scaler: GradScaler, max_norm=1.0):
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm)
    scaler.step(opt)
    scaler.update()
    opt.zero_grad(set_to_none=True)
""",
    ),
    # an optional scaler handed to an updater method: reported, no fix (the scaler may be None at the clip)
    Example(
        """
import torch

class Updater:
    def step(self, *, grad_scaler=None):
        torch.nn.utils.clip_grad_value_(self.net.parameters(), 0.5)
        if grad_scaler is not None:
            grad_scaler.step(self.opt)
            grad_scaler.update()
        else:
            self.opt.step()
"""
    ),
    # one-line branches: the scaled backward on `if use_amp:`, the clip on every path
    """
    import torch

    scaler = torch.cuda.amp.GradScaler()

    def train(model, loader, opt, use_amp):
        for x, y in loader:
            loss = model(x, y)
            if use_amp: scaler.scale(loss).backward()
            else: loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if use_amp: scaler.step(opt)
            else: opt.step()
    """,
]
