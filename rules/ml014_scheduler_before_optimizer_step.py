"""A learning-rate scheduler stepped before the optimizer: the first learning rate is skipped.

Why it matters
    Since PyTorch 1.1 a scheduler's ``step()`` belongs after ``optimizer.step()``. Called
    first, it advances the schedule before the optimizer has used the starting value: the
    first learning rate (or the first milestone of a warm-up) is never used, every later one
    comes one step early, and PyTorch only warns once ("Detected call of
    ``lr_scheduler.step()`` before ``optimizer.step()``"). fixtures/ml014: with
    ``StepLR(step_size=2, gamma=0.1)`` from lr 1.0 the bad order trains with
    0.1, 0.1, 0.01, 0.01 instead of 1.0, 1.0, 0.1, 0.1.
    Reported in one iteration of a loop (or one body of a training function): a
    zero-argument ``scheduler.step()`` that runs before the step of the optimizer it drives,
    with no step of that optimizer before it there. This covers per-epoch schedulers
    stepped at the top of the epoch loop before the batch loop (or before calling a helper
    such as ``train_one_epoch(...)`` that steps the optimizer), per-batch schedulers and
    warm-up wrappers (``LambdaLR`` warm-ups, ``GradualWarmupScheduler``, transformers'
    ``get_linear_schedule_with_warmup``) stepped before ``optimizer.step()``. A scheduler is
    known by what built it, or, when the file does not show that (a parameter, an attribute
    unpacked from a pair handed in: ``self.optimizer, self.lr_scheduler = optimizers``), by
    its name.

When the code is fine
    - ``scheduler.step()`` after the optimizer step, or after the batch loop of the epoch;
    - ``scheduler.step(val_loss)`` (``ReduceLROnPlateau`` on a metric), ``scheduler.step(epoch)``
      and any ``step(...)`` with arguments: the metric does not skip a value, an explicit
      epoch sets it (timm's schedulers are stepped that way);
    - objects that are not torch learning-rate schedulers: diffusers' noise schedulers
      (``noise_scheduler.step(output, t, sample)`` is a sampling step), custom objects with a
      ``step`` method, anything bound from a call we cannot identify as a scheduler;
    - a scheduler stepped under a condition the optimizer step does not share
      (``if epoch > 0:``, ``if i % 100 == 0:``), or an optimizer step under a condition the
      scheduler does not share (gradient accumulation): we cannot order them, so we stay
      silent; switches such as ``if scheduler is not None:`` are looked through, and so are
      warm-up guards (``if epoch <= args.warm:``, ``if step < args.warmup_steps:``: a counter under
      an upper bound holds from the first iteration, so the first rate is skipped all the same).

How to fix
    Step the scheduler after the optimizer: right after ``optimizer.step()`` for a per-batch
    schedule, after the batch loop for a per-epoch schedule. ``--fix`` moves
    ``scheduler.step()`` to just after ``optimizer.step()`` (or ``scaler.step(optimizer)``)
    when both are plain statements of the same block and nothing between them reads the
    learning rate; a per-epoch step before the batch loop is left for you to move.
"""

from __future__ import annotations

import re
from typing import Iterable, List, Optional

import libcst as cst

from mllint.findings import Applicability, Example, Finding, Fix
from mllint.semantics.model import FileModel
from mllint.semantics.names import dotted
from mllint.semantics.schedulers import _TRAINER_CALL, StepAhead, steps_ahead

CODE = "ML014"
NAME = "scheduler-before-optimizer-step"
MESSAGE = "`scheduler.step()` runs before `optimizer.step()`: the first learning rate is skipped"
TRIGGERS = ("step(",)
DEFAULT_ENABLED = True
FRAMEWORK = "torch"  # left out for files of another framework (mllint/frameworks.py)
FIX = "safe"


def SCREEN(facts) -> bool:
    # Sound: a finding is a zero-argument ``<scheduler>.step()`` followed by an optimizer step,
    # which is another ``.step(...)`` call (also in a helper of the file), an
    # ``.optimizer_step(...)``, or a call of a training function (schedulers._TRAINER_CALL).
    if "step" not in facts.zero_arg_attr_calls:
        return False
    return (
        facts.attr_calls["step"] >= 2
        or "optimizer_step" in facts.attr_calls
        or any(_TRAINER_CALL.match(name) for name in facts.call_names)
    )

_READS_LR = re.compile(r"\blr\b|param_groups|get_last_lr|get_lr|learning_rate|last_epoch")


def _short(text: str, limit: int = 28) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _simple_line(model: FileModel, call: cst.Call, ctx) -> Optional[cst.SimpleStatementLine]:
    line = ctx.statement
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    stmt = line.body[0]
    if isinstance(stmt, cst.Expr) and stmt.value is call:
        return line
    return None


def _fix(model: FileModel, found: StepAhead) -> Optional[Fix]:
    step = found.step
    if step is None:
        return None
    sched_line = _simple_line(model, found.call, found.ctx)
    opt_line = _simple_line(model, step.node, step.ctx)
    block = found.ctx.block
    if sched_line is None or opt_line is None or block is None or step.ctx.block is not block:
        return None
    if not isinstance(block, (cst.IndentedBlock, cst.Module)):
        return None
    body: List[cst.CSTNode] = list(block.body)
    try:
        i, j = body.index(sched_line), body.index(opt_line)
    except ValueError:
        return None
    if i >= j:
        return None
    receiver = dotted(found.call.func.value) or ""
    for between in body[i + 1 : j]:
        text = model.code_of(between)
        if _READS_LR.search(text) or (receiver and receiver in text):
            return None
    moved = body[:i] + body[i + 1 : j + 1] + [sched_line] + body[j + 1 :]
    new_block = block.with_changes(body=moved)
    return model.fix_replacing(
        block, new_block, Applicability.SAFE, f"move `{_short(model.code_of(found.call), 40)}` after the optimizer step"
    )


def check(model: FileModel) -> Iterable[Finding]:
    seen = set()
    for found in steps_ahead(model):
        if found.call in seen:
            continue
        seen.add(found.call)
        sched = _short(model.code_of(found.call))
        optimizer = _short(found.optimizer, 24)
        if found.via is not None:
            helper = _short(dotted(found.via.node.func) or "the helper", 24) if isinstance(found.via.node, cst.Call) else "the helper"
            message = f"`{sched}` runs before `{helper}(...)` steps `{optimizer}`: the first learning rate is skipped"
            where = f"`{helper}(...)`, called after it, steps `{optimizer}`"
        elif found.nested:
            message = f"`{sched}` runs before the loop that steps `{optimizer}`: the first learning rate is skipped"
            where = f"the loop after it steps `{optimizer}`"
        else:
            message = f"`{sched}` runs before `{optimizer}.step()`: the first learning rate is skipped"
            where = f"`{optimizer}.step()` comes after it in the same iteration"
        if len(message) > 110:
            message = f"`{sched}` runs before the optimizer step: the first learning rate is skipped"
        detail = (
            f"`{sched}` advances the learning-rate schedule before the optimizer has used the current value ({where}): "
            "the first learning rate is never used and every later one comes a step early; "
            "step the scheduler after the optimizer."
        )
        yield model.finding(found.call, CODE, NAME, message, _fix(model, found), detail)


# --- examples ------------------------------------------------------------------------------------

VALID = [
    # per-batch schedule stepped right after the optimizer
    Example(
        """
import torch
from transformers import get_linear_schedule_with_warmup

def train(model, loader, epochs):
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    scheduler = get_linear_schedule_with_warmup(optimizer, 100, len(loader) * epochs)
    for epoch in range(epochs):
        for batch in loader:
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
"""
    ),
    # per-epoch schedule stepped after the batch loop
    Example(
        """
import torch
from torch.optim.lr_scheduler import MultiStepLR

optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
scheduler = MultiStepLR(optimizer, milestones=[30, 60], gamma=0.1)
for epoch in range(90):
    for x, y in train_loader:
        optimizer.zero_grad()
        criterion(net(x), y).backward()
        optimizer.step()
    scheduler.step()
"""
    ),
    # ReduceLROnPlateau stepped on the validation loss at the top of the epoch: a metric, no skipped value
    Example(
        """
import torch

def fit(model, train_loader, val_loader, epochs):
    optimizer = torch.optim.Adam(model.parameters())
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=3)
    val_loss = float("inf")
    for epoch in range(epochs):
        scheduler.step(val_loss)
        for x, y in train_loader:
            optimizer.zero_grad()
            model.loss(x, y).backward()
            optimizer.step()
        val_loss = evaluate(model, val_loader)
"""
    ),
    # a diffusers noise scheduler: step(output, t, sample) is a sampling step
    Example(
        """
import torch
from diffusers import DDPMScheduler

noise_scheduler = DDPMScheduler(num_train_timesteps=1000)
optimizer = torch.optim.AdamW(unet.parameters(), lr=1e-4)
for batch in loader:
    noise = torch.randn_like(batch)
    t = torch.randint(0, 1000, (batch.shape[0],))
    noisy = noise_scheduler.add_noise(batch, noise, t)
    loss = torch.nn.functional.mse_loss(unet(noisy, t).sample, noise)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""
    ),
    # a diffusers scheduler named plainly `scheduler`, stepped with arguments while sampling
    Example(
        """
import torch
from diffusers import DDIMScheduler

scheduler = DDIMScheduler.from_pretrained("repo", subfolder="scheduler")
optimizer = torch.optim.Adam(model.parameters())
for step, batch in enumerate(loader):
    latents = torch.randn(4, 4, 64, 64)
    for t in scheduler.timesteps:
        out = model(latents, t).sample
        latents = scheduler.step(out, t, latents).prev_sample
    loss = critic(latents, batch)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""
    ),
    # unpacked from a literal pair: the element is what it holds (an EMA helper, not a scheduler)
    Example(
        """
import torch

def fit(model, loader, optimizer):
    optimizer, sched = optimizer, ModelEMA(model)
    for x, y in loader:
        sched.step()
        optimizer.zero_grad()
        model.loss(x, y).backward()
        optimizer.step()
"""
    ),
    # an optimizer wrapper named like a schedule: its step() steps the optimizer, then the
    # schedule (the wrapper is the optimizer step, not a scheduler stepped before one)
    Example(
        """
import torch

class OptimizerWithWarmupSchedule:
    def __init__(self, accelerator, optimizer, warmup_steps=0):
        self.optimizer = optimizer
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup_steps))
        self.optimizer, self.scheduler = accelerator.prepare(self.optimizer, self.scheduler)

    def step(self):
        self.optimizer.step()
        self.scheduler.step()

class Trainer:
    def __init__(self, accelerator, model):
        self.model = model
        self.optim = OptimizerWithWarmupSchedule(accelerator, torch.optim.Adam(model.parameters()), 100)
        self.model, self.optim = accelerator.prepare(self.model, self.optim)

    def train_step(self, batch):
        loss = self.model(batch)
        loss.backward()
        self.optim.step()
        self.optim.zero_grad()
"""
    ),
    # a custom object with a step() method, not a torch scheduler
    Example(
        """
import torch

class Annealer:
    def __init__(self):
        self.beta = 0.0
    def step(self):
        self.beta = min(1.0, self.beta + 0.01)

def train(model, loader):
    optimizer = torch.optim.Adam(model.parameters())
    kl_scheduler = Annealer()
    for x in loader:
        kl_scheduler.step()
        recon, kl = model(x)
        loss = recon + kl_scheduler.beta * kl
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""
    ),
    # gradient accumulation: the scheduler steps under the same condition, after the optimizer
    Example(
        """
import torch

def train(model, loader, optimizer, scheduler, accum):
    for i, batch in enumerate(loader):
        loss = model(**batch).loss / accum
        loss.backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
"""
    ),
    # stepped at the top of the epoch only after the first epoch: the first rate is used
    Example(
        """
import torch

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10)
for epoch in range(100):
    if epoch > 0:
        scheduler.step()
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
"""
    ),
    # timm-style scheduler stepped with the epoch number: an explicit epoch sets the value
    Example(
        """
import torch
from timm.scheduler import create_scheduler

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
lr_scheduler, num_epochs = create_scheduler(args, optimizer)
for epoch in range(num_epochs):
    lr_scheduler.step(epoch)
    train_one_epoch(model, loader, optimizer)
"""
    ),
    # warm-up scheduler stepped after the AMP scaler's step
    Example(
        """
import torch

def train(model, loader, optimizer, warmup_scheduler, scaler):
    for x, y in loader:
        with torch.autocast("cuda"):
            loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        warmup_scheduler.step()
        optimizer.zero_grad()
"""
    ),
]

INVALID = [
    # a per-batch warm-up schedule stepped before the optimizer: moved after it
    Example(
        """
import torch
from transformers import get_linear_schedule_with_warmup

def train(model, loader, epochs):
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    scheduler = get_linear_schedule_with_warmup(optimizer, 100, len(loader) * epochs)
    for epoch in range(epochs):
        for batch in loader:
            loss = model(**batch).loss
            loss.backward()
            scheduler.step()
            optimizer.step()
            optimizer.zero_grad()
""",
        fixed="""
import torch
from transformers import get_linear_schedule_with_warmup

def train(model, loader, epochs):
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    scheduler = get_linear_schedule_with_warmup(optimizer, 100, len(loader) * epochs)
    for epoch in range(epochs):
        for batch in loader:
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
""",
    ),
    # the classic per-epoch bug: StepLR stepped at the top of the epoch, before the batch loop
    Example(
        """
import torch
from torch.optim import lr_scheduler

optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
exp_lr_scheduler = lr_scheduler.StepLR(optimizer, step_size=7, gamma=0.1)
for epoch in range(25):
    exp_lr_scheduler.step()
    net.train()
    for inputs, labels in dataloaders["train"]:
        optimizer.zero_grad()
        loss = criterion(net(inputs), labels)
        loss.backward()
        optimizer.step()
"""
    ),
    # per-epoch scheduler stepped before a helper that trains one epoch
    Example(
        """
import torch

def train_one_epoch(model, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        model.loss(x, y).backward()
        optimizer.step()

def main(model, loader, epochs):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    for epoch in range(epochs):
        scheduler.step()
        train_one_epoch(model, loader, optimizer)
"""
    ),
    # a trainer method: the scheduler held on self, stepped before the optimizer
    Example(
        """
import torch

class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
        self.lr_scheduler = torch.optim.lr_scheduler.OneCycleLR(self.optimizer, max_lr=3e-3, total_steps=1000)

    def train_step(self, x, y):
        self.optimizer.zero_grad()
        loss = self.model.loss(x, y)
        loss.backward()
        self.lr_scheduler.step()
        self.optimizer.step()
        return loss.item()
""",
        fixed="""
import torch

class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
        self.lr_scheduler = torch.optim.lr_scheduler.OneCycleLR(self.optimizer, max_lr=3e-3, total_steps=1000)

    def train_step(self, x, y):
        self.optimizer.zero_grad()
        loss = self.model.loss(x, y)
        loss.backward()
        self.optimizer.step()
        self.lr_scheduler.step()
        return loss.item()
""",
    ),
    # stepped before the optimizer with AMP: moved after scaler.step(optimizer)
    Example(
        """
import torch

def train(model, loader, optimizer, scheduler, scaler):
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda"):
            loss = model(x, y)
        scaler.scale(loss).backward()
        scheduler.step()
        scaler.step(optimizer)
        scaler.update()
""",
        fixed="""
import torch

def train(model, loader, optimizer, scheduler, scaler):
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda"):
            loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scheduler.step()
        scaler.update()
""",
    ),
    # a LambdaLR warm-up stepped at the start of each iteration, before the forward pass
    Example(
        """
import torch

optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 500))
for step, (x, y) in enumerate(loader):
    warmup.step()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
""",
        fixed="""
import torch

optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 500))
for step, (x, y) in enumerate(loader):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    warmup.step()
""",
    ),
    # the scheduler behind an `is not None` switch, before the epoch's batches
    Example(
        """
import torch

def train(model, loader, optimizer, epochs, scheduler=None):
    for epoch in range(epochs):
        if scheduler is not None:
            scheduler.step()
        for x, y in loader:
            optimizer.zero_grad()
            model.loss(x, y).backward()
            optimizer.step()
"""
    ),
    # a scheduler parameter stepped in a training-step function before the optimizer; the lr is logged in between: no fix
    Example(
        """
import torch

def training_step(model, batch, optimizer, lr_scheduler, log):
    loss = model(**batch).loss
    loss.backward()
    lr_scheduler.step()
    log({"lr": optimizer.param_groups[0]["lr"]})
    optimizer.step()
    optimizer.zero_grad()
"""
    ),
    # optimizer and scheduler unpacked from a pair handed in (a Trainer subclass): the scheduler,
    # known by its name, stepped at the top of each update before the nested loops that step the optimizer
    Example(
        """
import torch

class PolicyTrainer:
    def __init__(self, policy, optimizers=(None, None)):
        self.policy = policy
        self.optimizer, self.lr_scheduler = optimizers

    def train(self, rollouts, num_updates, ppo_epochs):
        optimizer = self.optimizer
        for update in range(num_updates):
            self.lr_scheduler.step()
            batch = rollouts.collect(self.policy)
            for _ in range(ppo_epochs):
                for minibatch in batch.split(8):
                    loss = self.policy.loss(minibatch)
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad()
"""
    ),
    # a per-iteration warm-up stepped under its guard (`epoch <= warm` holds from the start)
    # before the optimizer: the first warm-up rate is skipped (under an `if`: no automatic fix)
    Example(
        """
import torch

def train(epoch):
    net.train()
    for images, labels in train_loader:
        if epoch <= args.warm:
            warmup_scheduler.step()
        optimizer.zero_grad()
        loss = loss_function(net(images), labels)
        loss.backward()
        optimizer.step()

optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
warmup_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda it: min(1.0, (it + 1) / 500))
for epoch in range(1, 200):
    train(epoch)
""",
    ),
    # GradualWarmupScheduler wrapping a cosine schedule, stepped at the epoch top
    Example(
        """
import torch
from warmup_scheduler import GradualWarmupScheduler

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, 100)
scheduler_warmup = GradualWarmupScheduler(optimizer, multiplier=1, total_epoch=5, after_scheduler=cosine)
for epoch in range(100):
    scheduler_warmup.step()
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
"""
    ),
    # one scheduler per optimizer (a GAN): the generator's scheduler stepped before its optimizer
    Example(
        """
import torch

opt_d = torch.optim.Adam(disc.parameters(), lr=2e-4)
opt_g = torch.optim.Adam(gen.parameters(), lr=2e-4)
sched_d = torch.optim.lr_scheduler.ExponentialLR(opt_d, gamma=0.99)
sched_g = torch.optim.lr_scheduler.ExponentialLR(opt_g, gamma=0.99)
for real in loader:
    opt_d.zero_grad()
    d_loss(disc, gen, real).backward()
    opt_d.step()
    sched_d.step()
    opt_g.zero_grad()
    g_loss(disc, gen, real).backward()
    sched_g.step()
    opt_g.step()
""",
        fixed="""
import torch

opt_d = torch.optim.Adam(disc.parameters(), lr=2e-4)
opt_g = torch.optim.Adam(gen.parameters(), lr=2e-4)
sched_d = torch.optim.lr_scheduler.ExponentialLR(opt_d, gamma=0.99)
sched_g = torch.optim.lr_scheduler.ExponentialLR(opt_g, gamma=0.99)
for real in loader:
    opt_d.zero_grad()
    d_loss(disc, gen, real).backward()
    opt_d.step()
    sched_d.step()
    opt_g.zero_grad()
    g_loss(disc, gen, real).backward()
    opt_g.step()
    sched_g.step()
""",
    ),
]
