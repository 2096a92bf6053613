"""The optimizer steps every N iterations but the loss is not divided by N: the accumulated gradient is N batch gradients.

Why it matters
    Gradient accumulation runs ``backward()`` on every batch and ``optimizer.step()`` (and
    ``zero_grad()``) only every N batches, to train as if the batch were N times larger.
    ``.grad`` *adds up* the N backward passes: unless each batch's loss is divided by N, the
    step applies the **sum** of N batch gradients, N times the gradient of the large batch
    it stands for. Plain SGD then takes N-times larger steps (the learning rate silently
    depends on the accumulation count), every clipping threshold (``clip_grad_norm_``) bites
    N times earlier, weight decay and Adam's epsilon weigh N times less; changing N to fit
    another GPU changes the training. No error is raised. fixtures/ml015: SGD (lr 0.25) on a
    linear regression, accumulation 4 over batches of 16 against one batch of 64: the
    undivided loss gives a gradient norm 4.00 times the large batch's (divided: 1.00) and
    diverges (final loss 4.1e+11) where the divided loss reaches 0.0104, like the large batch.

    Reported at the backward pass: an optimizer step directly in a loop body under a periodic
    guard (``if (i + 1) % accum_steps == 0:``, ``if step % 4 == 0 or last:``,
    ``if not (i + 1) % n:``, a counter ``if count == n:`` that the branch resets to 0, an early
    ``if (i + 1) % n != 0: continue``), every clearing of that optimizer's gradients in the
    loop periodic as well, fed by a ``loss.backward()`` / ``scaler.scale(loss).backward()``
    that runs on every iteration, where the loss, followed back through its assignments
    (and through helpers of the file that compute it, their parameters followed to what the
    loop hands them), is never divided. The step may be an AMP ``scaler.step(optimizer)``. Also
    per-call accumulation: a method that runs the backward pass on every call, counts its calls
    in an attribute (``self._micro += 1``) and steps and clears the optimizer only under
    ``if self._micro == self.accum_steps:`` (resetting it) or ``if self.n % self.accum == 0:``,
    the method called once per batch (from a loop of the file that does not clear the gradients
    itself, or, with no caller in the file, named or taking parameters like a training step).
    A count of 1 cannot be ruled out statically; the guard alone is reported.

When the code is fine
    - the loss divided before the backward pass, by the count or by anything that might be
      it: ``loss = loss / accum_steps``, ``loss /= n``, ``(loss / n).backward()``,
      ``loss * (1 / n)``, ``loss.div(n)``, a factor named like a scale (``loss * scale``),
      a helper of the file that divides what it returns, a call handed the count
      (``compute_loss(batch, args)`` for ``args.accum_steps``); a per-sample weight read from
      the batch (``loss * batch["weight"]``) is no such division;
    - a sum-reduced loss normalised by a token or sample count (a division too), transformers
      models given ``num_items_in_batch``;
    - frameworks that scale: accelerate (``with accelerator.accumulate(model):``,
      ``accelerator.backward(loss)``, a ``sync_gradients`` guard), DeepSpeed
      (``model_engine.backward(loss)``), Lightning (``accumulate_grad_batches``,
      ``manual_backward``), HF ``Trainer``: no ``<tensor>.backward()`` of ours;
    - gradients scaled by hand before the step (``p.grad /= n``, ``p.grad.div_(n)``, a helper
      named like ``scale_grads``), or a learning rate divided by a setting or the count
      (``lr=cfg.learning_rate / cfg.batch``: darknet's sum-reduced losses, normalised in the rate);
    - a step under a guard that is not periodic (``if loss < best:``, ``if use_amp:``), a
      step that runs with its backward pass (both under the guard, or in one helper), an
      optimizer cleared on every iteration (no accumulation: the other gradients are thrown
      away), an optimizer never cleared (ML001 reports that);
    - a counter of a method's calls that guards something else than the step (an EMA update,
      logging), a counter advanced only on some calls, a caller that clears the gradients
      before each call;
    - a backward pass inside a nested micro-batch loop (not judged).

How to fix
    Divide the loss by the accumulation count at the backward pass:
    ``(loss / accum_steps).backward()`` (``scaler.scale(loss / accum_steps).backward()``
    with AMP), or use a framework that does it. ``--unsafe-fixes`` rewrites the backward
    call so when the count is a name, an attribute chain or a literal written in the guard
    of the same function; unsafe because it changes the training (the effective step
    size), which is the point, but so does every learning rate tuned on the old behaviour.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

import libcst as cst

from mllint.findings import Applicability, Example, Finding, Fix
from mllint.semantics.model import FileModel
from mllint.semantics.names import dotted
from mllint.semantics.periodic import (
    AccumulatingStep,
    accumulating_steps,
    backward_receiver,
    framework_scales,
    grads_scaled_by_hand,
    learning_rate_normalised,
    loss_divided,
    micro_batch_steps,
    per_call_steps,
    scaled_loss,
)

CODE = "ML015"
NAME = "accumulation-without-loss-scaling"
MESSAGE = "the optimizer steps every N iterations but the loss is not divided by N: the accumulated gradient is N batch gradients"
TRIGGERS = ("backward(",)  # loss.backward(), scaler.scale(loss).backward()
REQUIRES = ("step",)  # optimizer.step(), scaler.step(optimizer)
DEFAULT_ENABLED = True
FRAMEWORK = "torch"
FIX = "unsafe"


def SCREEN(facts) -> bool:
    # Sound: a finding is a zero-positional-argument ``<tensor>.backward()`` in a loop of the file
    # (or of a helper of the file a loop calls: still a loop in the file) feeding an optimizer step
    # (``.step(...)``/``.optimizer_step(...)``, also in a helper of the file) under a guard; or
    # the backward pass of a method of a class counting its own calls (no loop needed in the file).
    return (
        (facts.has_loop or facts.has_class)
        and "backward" in facts.attr_calls
        and not facts.call_names.isdisjoint({"step", "optimizer_step"})
    )


def _short(text: str, limit: int = 30) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _label(count: str, limit: int) -> str:
    """The count as a message names it: ``grad_accumulation_step`` for
    ``self.config.get('grad_accumulation_step', 1)``, else its text, shortened."""
    lookup = re.match(r"^[\w.]+\.get\(\s*['\"](\w+)['\"]", count)
    return _short(lookup.group(1) if lookup else count, limit)


def _fixable_count(count: cst.BaseExpression) -> bool:
    if isinstance(count, cst.Integer):
        return True
    return dotted(count) is not None and not count.lpar


def _fix(model: FileModel, found: AccumulatingStep) -> Optional[Fix]:
    call = found.backward.node
    if found.backward.via or found.backward.origin is None or not isinstance(call, cst.Call):
        return None
    if not _fixable_count(found.guard.count):
        return None
    receiver = backward_receiver(call)
    if receiver is None:
        return None
    loss, scale = scaled_loss(receiver)
    count = found.guard.count.deep_clone()
    if scale is not None:
        divided = cst.BinaryOperation(left=loss, operator=cst.Divide(), right=count)
        new_scale = scale.with_changes(args=[scale.args[0].with_changes(value=divided)])
        new_call = call.with_changes(func=call.func.with_changes(value=new_scale))
    else:
        divided = cst.BinaryOperation(
            left=loss, operator=cst.Divide(), right=count, lpar=[cst.LeftParen()], rpar=[cst.RightParen()]
        )
        new_call = call.with_changes(func=call.func.with_changes(value=divided))
    text = model.code_of(found.guard.count)
    return model.fix_replacing(call, new_call, Applicability.UNSAFE, f"divide the loss by `{_short(text, 24)}` before backward()")


def check(model: FileModel) -> Iterable[Finding]:
    seen = set()
    for found in [*accumulating_steps(model), *micro_batch_steps(model), *per_call_steps(model)]:
        call = found.backward.node
        if id(call) in seen or not isinstance(call, cst.Call):
            continue
        micro = found.inner is not None and found.inner.parent is None or found.method is not None
        if framework_scales(model, found) or loss_divided(model, found) or grads_scaled_by_hand(model, found.loop, micro):
            continue
        if learning_rate_normalised(model, found):
            continue
        seen.add(id(call))
        count = _short(model.code_of(found.guard.count), 28)
        label = _label(" ".join(model.code_of(found.guard.count).split()), 20)
        receiver = backward_receiver(call)
        loss_text = _short(model.code_of(scaled_loss(receiver)[0]) if receiver is not None else "the loss", 24)
        step_line = model.position(found.step.node).start.line
        if found.inner is not None:
            inner_line = model.position(found.inner.node).start.line
            message = (f"the loss is not divided by the `{_short(count, 14)}` micro-batches the optimizer steps over:"
                       " their gradients add up")
            detail = (
                f"`{loss_text}` is backpropagated undivided. The loop on line {inner_line} runs this backward pass on each of `{count}` micro-batches and "
                f"their gradients add up in `.grad` before the one optimizer step on line {step_line}: the step "
                f"applies `{count}` times the gradient of the whole batch (SGD's learning rate, clipping thresholds "
                f"and weight decay all change with `{count}`). Divide the loss by `{count}` before backward()."
            )
            yield model.finding(call, CODE, NAME, message, _fix(model, found), detail)
            continue
        if found.method is not None:
            method = found.method.rsplit(".", 1)[-1]
            message = (f"the loss is not divided by the `{label}` calls the optimizer steps over: their"
                       " gradients add up")
            detail = (
                f"`{loss_text}` is backpropagated undivided on every call of `{_short(method, 30)}()`, which counts its calls in "
                f"`{found.counter}` and steps the optimizer (line {step_line}) and clears its gradients only every `{count}` calls: "
                f"the step applies `{count}` times the gradient of the large batch it stands for (SGD's learning rate, "
                f"clipping thresholds and weight decay all change with `{count}`). Divide the loss by `{count}` before backward()."
            )
            yield model.finding(call, CODE, NAME, message, _fix(model, found), detail)
            continue
        message = (f"the loss is not divided by the `{label}` batches the optimizer steps over: their"
                   " gradients add up")
        via = ""
        if found.backward.via:
            via = f" (through `{_short(model.code_of(found.backward.via[0].node), 40)}`, line {model.position(found.backward.via[0].node).start.line})"
        detail = (
            f"`{loss_text}` is backpropagated undivided. The optimizer step on line {step_line} runs only every `{count}` iterations and its gradients are cleared "
            f"only then, while this backward pass{via} adds the full per-batch gradient on every iteration: the step "
            f"applies `{count}` times the gradient of the large batch it stands for (SGD's learning rate, clipping "
            f"thresholds and weight decay all change with `{count}`). Divide the loss by `{count}` before backward()."
        )
        yield model.finding(call, CODE, NAME, message, _fix(model, found), detail)



# --- examples ------------------------------------------------------------------------------------

VALID = [
    # the loss divided by the accumulation count before backward
    Example(
        """
import torch

def train(model, loader, accum_steps):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss = loss / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""
    ),
    # divided at the backward, with AMP
    Example(
        """
import torch

scaler = torch.cuda.amp.GradScaler()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step, batch in enumerate(loader):
    with torch.autocast("cuda"):
        loss = model(**batch).loss
    scaler.scale(loss / args.gradient_accumulation_steps).backward()
    if (step + 1) % args.gradient_accumulation_steps == 0:
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
"""
    ),
    # in-place division and a product with the reciprocal
    Example(
        """
import torch

optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
for i, (x, y) in enumerate(loader):
    loss = criterion(net(x), y)
    loss /= accum
    loss.backward()
    if i % accum == 0:
        optimizer.step()
        optimizer.zero_grad()
for i, (x, y) in enumerate(loader):
    (criterion(net(x), y) * (1 / accum)).backward()
    if i % accum == 0:
        optimizer.step()
        optimizer.zero_grad()
"""
    ),
    # a sum-reduced loss normalised by the token count of the whole accumulation
    Example(
        """
import torch

optimizer = torch.optim.Adam(model.parameters())
for i, batch in enumerate(loader):
    logits = model(batch["input_ids"])
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), reduction="sum")
    loss = loss / tokens_per_update
    loss.backward()
    if (i + 1) % update_freq == 0:
        optimizer.step()
        optimizer.zero_grad()
"""
    ),
    # accelerate scales the loss and skips the steps itself
    Example(
        """
from accelerate import Accelerator

accelerator = Accelerator(gradient_accumulation_steps=4)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for step, batch in enumerate(loader):
    with accelerator.accumulate(model):
        loss = model(**batch).loss
        loss.backward()
        if step % 4 == 0:
            optimizer.step()
            optimizer.zero_grad()
for step, batch in enumerate(loader):
    loss = model(**batch).loss
    accelerator.backward(loss)
    if (step + 1) % 4 == 0:
        optimizer.step()
        optimizer.zero_grad()
"""
    ),
    # DeepSpeed's engine scales by its own gradient_accumulation_steps
    Example(
        """
import deepspeed

model_engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
for step, batch in enumerate(loader):
    loss = model_engine(batch)
    model_engine.backward(loss)
    if (step + 1) % cfg["gradient_accumulation_steps"] == 0:
        optimizer.step()
        optimizer.zero_grad()
"""
    ),
    # gradients divided by hand before the step
    Example(
        """
import torch

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    if (i + 1) % n_accum == 0:
        for p in model.parameters():
            p.grad /= n_accum
        optimizer.step()
        optimizer.zero_grad()
"""
    ),
    # a guard that is no period: the step runs when the loss improved
    Example(
        """
import torch

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
best = float("inf")
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    if loss.item() < best:
        best = loss.item()
        optimizer.step()
        optimizer.zero_grad()
"""
    ),
    # the backward pass runs with the step, every N iterations (an RL update), and a clearing on
    # every iteration (no accumulation at all)
    Example(
        """
import torch

optimizer = torch.optim.Adam(policy.parameters(), lr=3e-4)
for t in range(total_steps):
    obs = env.step(policy.act(obs))
    if t % update_every == 0:
        loss = policy.loss(buffer.sample())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
for i, (x, y) in enumerate(loader):
    optimizer.zero_grad()
    loss = criterion(policy(x), y)
    loss.backward()
    if i % 2 == 0:
        optimizer.step()
"""
    ),
    # a helper of the file divides the loss it returns; a call handed the settings may
    # divide by ``args.accum_steps`` itself
    Example(
        """
import torch

def compute_loss(model, batch):
    out = model(batch["x"])
    return torch.nn.functional.cross_entropy(out, batch["y"]) / ACCUM

def train(model, loader, args):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, batch in enumerate(loader):
        loss = compute_loss(model, batch)
        loss.backward()
        if (i + 1) % ACCUM == 0:
            optimizer.step()
            optimizer.zero_grad()
    for i, batch in enumerate(loader):
        loss = training_loss(model, batch, args)
        loss.backward()
        if (i + 1) % args.accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""
    ),
    # apex: the loss handed to amp.scale_loss is divided
    Example(
        """
from apex import amp
import torch

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = amp.initialize(model, optimizer)
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y) / grad_accum
    with amp.scale_loss(loss, optimizer) as scaled_loss:
        scaled_loss.backward()
    if (i + 1) % grad_accum == 0:
        optimizer.step()
        optimizer.zero_grad()
"""
    ),
    # a step every N iterations without any clearing: ML001's finding, not this one
    Example(
        """
import torch

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    if i % 4 == 0:
        optimizer.step()
"""
    ),
]

INVALID = [
    # the classic: the loss backpropagated as it is, stepped every accum_steps batches
    Example(
        """
import torch

def train(model, loader, accum_steps):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
        unsafe_fixed="""
import torch

def train(model, loader, accum_steps):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        (loss / accum_steps).backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
    ),
    # AMP: the loss inside scaler.scale(...) is divided
    Example(
        """
import torch

scaler = torch.cuda.amp.GradScaler()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step, batch in enumerate(loader):
    with torch.autocast("cuda"):
        loss = model(**batch).loss
    scaler.scale(loss).backward()
    if (step + 1) % args.gradient_accumulation_steps == 0 or step + 1 == len(loader):
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
""",
        unsafe_fixed="""
import torch

scaler = torch.cuda.amp.GradScaler()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step, batch in enumerate(loader):
    with torch.autocast("cuda"):
        loss = model(**batch).loss
    scaler.scale(loss / args.gradient_accumulation_steps).backward()
    if (step + 1) % args.gradient_accumulation_steps == 0 or step + 1 == len(loader):
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
""",
    ),
    # a literal period, the backward called on the criterion's result
    Example(
        """
import torch

optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
for epoch in range(10):
    for i, (x, y) in enumerate(train_loader):
        criterion(net(x), y).backward()
        if i % 4 == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
        unsafe_fixed="""
import torch

optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
for epoch in range(10):
    for i, (x, y) in enumerate(train_loader):
        (criterion(net(x), y) / 4).backward()
        if i % 4 == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
    ),
    # a counter reset when it reaches the count
    Example(
        """
import torch

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
count = 0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    count += 1
    if count == accumulate:
        optimizer.step()
        optimizer.zero_grad()
        count = 0
""",
        unsafe_fixed="""
import torch

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
count = 0
for x, y in loader:
    loss = criterion(model(x), y)
    (loss / accumulate).backward()
    count += 1
    if count == accumulate:
        optimizer.step()
        optimizer.zero_grad()
        count = 0
""",
    ),
    # an early continue skips the step on the other iterations
    Example(
        """
import torch

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    if (i + 1) % accum_iter != 0:
        continue
    optimizer.step()
    optimizer.zero_grad()
""",
        unsafe_fixed="""
import torch

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    (loss / accum_iter).backward()
    if (i + 1) % accum_iter != 0:
        continue
    optimizer.step()
    optimizer.zero_grad()
""",
    ),
    # the guard through a flag bound in the loop, the loss a weighted sum (still per batch)
    Example(
        """
import torch

optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for batch_idx, (x, y) in enumerate(loader):
    out, aux = model(x)
    loss = criterion(out, y) + 0.4 * criterion(aux, y)
    loss.backward()
    need_update = (batch_idx + 1) % accum_steps == 0 or batch_idx + 1 == len(loader)
    if need_update:
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
""",
        unsafe_fixed="""
import torch

optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for batch_idx, (x, y) in enumerate(loader):
    out, aux = model(x)
    loss = criterion(out, y) + 0.4 * criterion(aux, y)
    (loss / accum_steps).backward()
    need_update = (batch_idx + 1) % accum_steps == 0 or batch_idx + 1 == len(loader)
    if need_update:
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
""",
    ),
    # a trainer class: the count is an attribute, the clearing is periodic at the top
    Example(
        """
import torch

class Trainer:
    def __init__(self, model, grad_accum):
        self.model = model
        self.grad_accum = grad_accum
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_epoch(self, loader):
        for i, batch in enumerate(loader):
            if i % self.grad_accum == 0:
                self.optimizer.zero_grad()
            loss = self.model.compute_loss(batch)
            loss.backward()
            if (i + 1) % self.grad_accum == 0:
                self.optimizer.step()
""",
        unsafe_fixed="""
import torch

class Trainer:
    def __init__(self, model, grad_accum):
        self.model = model
        self.grad_accum = grad_accum
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_epoch(self, loader):
        for i, batch in enumerate(loader):
            if i % self.grad_accum == 0:
                self.optimizer.zero_grad()
            loss = self.model.compute_loss(batch)
            (loss / self.grad_accum).backward()
            if (i + 1) % self.grad_accum == 0:
                self.optimizer.step()
""",
    ),
    # a manual step counter in a while loop, ``not (...)`` as the guard
    Example(
        """
import torch

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
step = 0
while step < max_steps:
    x, y = next(batches)
    loss = criterion(model(x), y).mean()
    loss.backward()
    step += 1
    if not step % n_micro:
        optimizer.step()
        optimizer.zero_grad()
""",
        unsafe_fixed="""
import torch

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
step = 0
while step < max_steps:
    x, y = next(batches)
    loss = criterion(model(x), y).mean()
    (loss / n_micro).backward()
    step += 1
    if not step % n_micro:
        optimizer.step()
        optimizer.zero_grad()
""",
    ),
    # the count is a subscript: reported, no fix
    Example(
        """
import torch

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    if (i + 1) % cfg["accum"] == 0:
        optimizer.step()
        optimizer.zero_grad()
"""
    ),
    # the backward pass in a helper of the file, handed the undivided loss: reported there, no fix
    Example(
        """
import torch

def backward_pass(loss):
    loss.backward()

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    backward_pass(loss)
    if (i + 1) % accum == 0:
        optimizer.step()
        optimizer.zero_grad()
"""
    ),
    # the step in a helper of the file called under the guard
    Example(
        """
import torch

def update(optimizer, model):
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad()

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    if (i + 1) % accum == 0:
        update(optimizer, model)
""",
        unsafe_fixed="""
import torch

def update(optimizer, model):
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad()

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    (loss / accum).backward()
    if (i + 1) % accum == 0:
        update(optimizer, model)
""",
    ),
]

VALID += [
    # micro-batch loops with the loss divided by their count (nanoGPT's fix, a chunked batch)
    Example(
        """
import torch

optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4)
while iter_num < max_iters:
    for micro_step in range(gradient_accumulation_steps):
        logits, loss = model(X, Y)
        loss = loss / gradient_accumulation_steps
        X, Y = get_batch("train")
        scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    iter_num += 1

def train_step(model, optimizer, x, y, n_chunks):
    optimizer.zero_grad()
    for xc, yc in zip(x.chunk(n_chunks), y.chunk(n_chunks)):
        (criterion(model(xc), yc) / n_chunks).backward()
    optimizer.step()
"""
    ),
    # loops over separate objectives (tasks, a GAN's two losses), not micro-batches of one, and a
    # step or a clearing on every micro-step
    Example(
        """
import torch

optimizer = torch.optim.Adam(model.parameters())
for epoch in range(10):
    for task in tasks:
        batch = next(iterators[task])
        loss = model(batch, task=task)
        loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    for i in range(len(tasks)):
        heads[i](x).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
    for micro in range(accum_steps):
        optimizer.zero_grad()
        model(next(data)).backward()
        optimizer.step()
"""
    ),
    # the derived step counter with the loss divided (yolov3's fix); a per-task weight table
    # with the loss divided (jiant's fix); a mean turned into a sum over the batch (yolov5)
    Example(
        """
import torch

optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(epochs):
    for i, (imgs, targets) in enumerate(loader):
        ni = i + nb * epoch
        loss, items = compute_loss(model(imgs), targets)
        if accumulate > 1:
            loss /= accumulate
        loss.backward()
        if ni % accumulate == 0:
            optimizer.step()
            optimizer.zero_grad()
    for i, (imgs, targets) in enumerate(loader):
        ni = i + nb * epoch
        loss = criterion(model(imgs), targets)
        loss *= batch_size
        loss.backward()
        if ni % accumulate == 0:
            optimizer.step()
            optimizer.zero_grad()
"""
    ),
]

INVALID += [
    # nanoGPT before 553f949: the micro-step loop backpropagates the undivided loss
    Example(
        """
import torch

optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4)
while iter_num < max_iters:
    for micro_step in range(gradient_accumulation_steps):
        logits, loss = model(X, Y)
        X, Y = get_batch("train")
        scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    iter_num += 1
""",
        unsafe_fixed="""
import torch

optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4)
while iter_num < max_iters:
    for micro_step in range(gradient_accumulation_steps):
        logits, loss = model(X, Y)
        X, Y = get_batch("train")
        scaler.scale(loss / gradient_accumulation_steps).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    iter_num += 1
""",
    ),
    # a trainer drawing the micro-batches with next() (denoising-diffusion-pytorch before 698227a)
    Example(
        """
import torch

class Trainer(object):
    def __init__(self, model, loader, every=2):
        self.model = model
        self.every = every
        self.dl = loader
        self.opt = torch.optim.Adam(model.parameters(), lr=2e-5)

    def train(self):
        while self.step < self.num_steps:
            for i in range(self.every):
                data = next(self.dl)
                loss = self.model(data)
                loss.backward()
            self.opt.step()
            self.opt.zero_grad()
""",
        unsafe_fixed="""
import torch

class Trainer(object):
    def __init__(self, model, loader, every=2):
        self.model = model
        self.every = every
        self.dl = loader
        self.opt = torch.optim.Adam(model.parameters(), lr=2e-5)

    def train(self):
        while self.step < self.num_steps:
            for i in range(self.every):
                data = next(self.dl)
                loss = self.model(data)
                (loss / self.every).backward()
            self.opt.step()
            self.opt.zero_grad()
""",
    ),
    # a batch split into chunks in a train-step function, no outer loop
    Example(
        """
import torch

def train_step(model, optimizer, x, y, n_chunks):
    optimizer.zero_grad()
    for xc, yc in zip(x.chunk(n_chunks), y.chunk(n_chunks)):
        criterion(model(xc), yc).backward()
    optimizer.step()
""",
        unsafe_fixed="""
import torch

def train_step(model, optimizer, x, y, n_chunks):
    optimizer.zero_grad()
    for xc, yc in zip(x.chunk(n_chunks), y.chunk(n_chunks)):
        (criterion(model(xc), yc) / n_chunks).backward()
    optimizer.step()
""",
    ),
    # a batch split by size: the count is the number of pieces, no fix
    Example(
        """
import torch

def train_step(model, optimizer, x, y):
    for xc, yc in zip(x.split(8), y.split(8)):
        loss = criterion(model(xc), yc)
        loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""
    ),
    # yolov3 before a85f7d9: the guard counts batches since the start (``ni = i + nb * epoch``)
    Example(
        """
import torch

optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(epochs):
    for i, (imgs, targets) in enumerate(loader):
        ni = i + nb * epoch
        loss, items = compute_loss(model(imgs), targets)
        loss.backward()
        if ni % accumulate == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
        unsafe_fixed="""
import torch

optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(epochs):
    for i, (imgs, targets) in enumerate(loader):
        ni = i + nb * epoch
        loss, items = compute_loss(model(imgs), targets)
        (loss / accumulate).backward()
        if ni % accumulate == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
    ),
    # jiant before a78444d: a per-task weight looked up by key is no 1/N; a helper handed
    # another attribute of ``self`` is not handed the count
    Example(
        """
import torch

class Trainer:
    def train(self, optimizer, generator, task):
        for batch in generator:
            out = self._forward(batch, task=task)
            loss = get_output_attribute(out, "loss", self._cuda_device)
            loss *= scaling_weights[task.name]
            loss.backward()
            n_step += 1
            if n_step % self._accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
""",
        unsafe_fixed="""
import torch

class Trainer:
    def train(self, optimizer, generator, task):
        for batch in generator:
            out = self._forward(batch, task=task)
            loss = get_output_attribute(out, "loss", self._cuda_device)
            loss *= scaling_weights[task.name]
            (loss / self._accumulation_steps).backward()
            n_step += 1
            if n_step % self._accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
""",
    ),
]

# --- AMP steps, helpers' parameters, per-call accumulation -----------------------------------------

_AMP_LOOP = """
import torch
import torch.nn.functional as F

ACCUM = 4
scaler = torch.cuda.amp.GradScaler()

def silog(pred, target, lam=0.85):
    d = torch.log(pred.clamp(min=1e-3)) - torch.log(target)
    return torch.sqrt((d ** 2).mean() - lam * d.mean() ** 2)

def train(model, loader, opt):
    for it, (x, depth) in enumerate(loader):
        x, depth = x.cuda(), depth.cuda()
        with torch.autocast("cuda"):
            loss = silog(model(x).float(), depth)
        {backward}
        if (it + 1) % ACCUM == 0:
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
"""

_EQ_COUNTER = """
import torch
import torch.nn as nn

class Trainer:
    def __init__(self, model, accum_steps=4):
        self.model = model
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        self.accum_steps = accum_steps
        self._micro = 0

    def _compute_loss(self, batch):
        x, y = batch
        logits = self.model(x)
        return self.criterion(logits, y), logits

    def train_step(self, batch):
        loss, logits = self._compute_loss(batch)
        {backward}
        self._micro += 1
        if self._micro == self.accum_steps:
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            self._micro = 0
        return loss.item()

    def train_epoch(self, loader):
        for batch in loader:
            self.train_step(batch)
"""

_MOD_COUNTER = """
import torch
import torch.nn.functional as F

class MultiTaskModel:
    def __init__(self, network, config):
        self.network = network
        self.config = config
        self.optimizer = torch.optim.Adamax(network.parameters(), lr=config["lr"])
        self.local_updates = 0

    def update(self, batch_meta, batch_data):
        self.network.train()
        y = batch_data[batch_meta["label"]].cuda()
        weight = batch_data[batch_meta["factor"]].cuda()
        logits = self.network(*batch_data[: batch_meta["input_len"]])
        loss = torch.mean(F.cross_entropy(logits, y, reduction="none") * weight)
        {backward}
        self.local_updates += 1
        if self.local_updates % self.config["grad_accumulation_step"] == 0:
            torch.nn.utils.clip_grad_norm_(self.network.parameters(), 1.0)
            self.optimizer.step()
            self.optimizer.zero_grad()
"""

_AMP_METHOD = """
import torch

class AmpTrainer:
    def __init__(self, model, optimizer, grad_accum):
        self.model = model
        self.optimizer = optimizer
        self.scaler = torch.cuda.amp.GradScaler()
        self.grad_accum = grad_accum
        self.n = 0

    def step(self, x, y):
        with torch.autocast("cuda"):
            loss = torch.nn.functional.mse_loss(self.model(x), y)
        {backward}
        self.n += 1
        if self.n >= self.grad_accum:
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.optimizer.zero_grad()
            self.n = 0

def fit(trainer, loader):
    for x, y in loader:
        trainer.step(x, y)
"""

INVALID += [
    # AMP: scaler.step(opt) every ACCUM iterations (unscale_ and a clip before it), the loss of a
    # helper of the file (its parameters followed to the loop's batch) never divided
    Example(
        _AMP_LOOP.replace("{backward}", "scaler.scale(loss).backward()"),
        unsafe_fixed=_AMP_LOOP.replace("{backward}", "scaler.scale(loss / ACCUM).backward()"),
    ),
    # a scaler we know only by its name (a parameter), a plain modulus guard
    Example(
        """
import torch

def train(model, loader, optimizer, scaler, accum_iter):
    for step, batch in enumerate(loader):
        with torch.autocast("cuda"):
            loss = model(**batch).loss
        scaler.scale(loss).backward()
        if (step + 1) % accum_iter == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
""",
        unsafe_fixed="""
import torch

def train(model, loader, optimizer, scaler, accum_iter):
    for step, batch in enumerate(loader):
        with torch.autocast("cuda"):
            loss = model(**batch).loss
        scaler.scale(loss / accum_iter).backward()
        if (step + 1) % accum_iter == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
""",
    ),
    # per-call accumulation: the method counts its calls, steps when the count reaches
    # accum_steps and resets it; it is called once per batch from a loop
    Example(
        _EQ_COUNTER.replace("{backward}", "loss.backward()"),
        unsafe_fixed=_EQ_COUNTER.replace("{backward}", "(loss / self.accum_steps).backward()"),
    ),
    # per-call accumulation with a modulus of the call counter (mt-dnn's update); a per-sample
    # weight from the batch is no division by the count
    Example(
        _MOD_COUNTER.replace("{backward}", "loss.backward()"),
    ),
    # per-call accumulation with AMP, a ``>=`` guard, called from a loop of the file
    Example(
        _AMP_METHOD.replace("{backward}", "self.scaler.scale(loss).backward()"),
        unsafe_fixed=_AMP_METHOD.replace("{backward}", "self.scaler.scale(loss / self.grad_accum).backward()"),
    ),
]

VALID += [
    # AMP with the loss divided at the backward
    Example(_AMP_LOOP.replace("{backward}", "scaler.scale(loss / ACCUM).backward()")),
    # per-call accumulation, the loss divided
    Example(_EQ_COUNTER.replace("{backward}", "(loss / self.accum_steps).backward()")),
    Example(_MOD_COUNTER.replace("{backward}", 'loss = loss / self.config["grad_accumulation_step"]\n        loss.backward()')),
    Example(_AMP_METHOD.replace("{backward}", "self.scaler.scale(loss / self.grad_accum).backward()")),
    # the helper that computes the loss divides it
    Example(_EQ_COUNTER.replace("return self.criterion(logits, y), logits", "return self.criterion(logits, y) / self.accum_steps, logits")
            .replace("{backward}", "loss.backward()")),
    # a counter that guards an EMA update, not an optimizer step (the optimizer steps every call)
    Example(
        """
import torch

class EmaTrainer:
    def __init__(self, model, ema, ema_every):
        self.model = model
        self.ema = ema
        self.ema_every = ema_every
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self._calls = 0

    def train_step(self, x, y):
        loss = torch.nn.functional.mse_loss(self.model(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self._calls += 1
        if self._calls == self.ema_every:
            self.ema.update(self.model)
            self._calls = 0
"""
    ),
    # a step on every call, the counter only for logging
    Example(
        """
import torch

class Trainer:
    def __init__(self, model, log_every):
        self.model = model
        self.log_every = log_every
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.global_step = 0

    def train_step(self, x, y):
        loss = torch.nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        self.global_step += 1
        if self.global_step % self.log_every == 0:
            print(self.global_step, loss.item())
"""
    ),
    # the caller clears the gradients before every call: nothing accumulates across calls
    Example(
        _EQ_COUNTER.replace("{backward}", "loss.backward()").replace(
            "        for batch in loader:\n            self.train_step(batch)",
            "        for batch in loader:\n            self.optimizer.zero_grad()\n            self.train_step(batch)",
        )
    ),
    # the counter is advanced only on some calls (not once per call): not followed
    Example(
        _EQ_COUNTER.replace("{backward}", "loss.backward()").replace(
            "        self._micro += 1\n", "        if loss.item() > 0:\n            self._micro += 1\n"
        )
    ),
]

VALID += [
    # a GAN step: the critic every call, the generator every n_critic calls with its own backward
    Example(
        """
import torch

class WGAN:
    def __init__(self, gen, critic, n_critic=5):
        self.gen, self.critic = gen, critic
        self.opt_g = torch.optim.Adam(gen.parameters(), lr=1e-4)
        self.opt_d = torch.optim.Adam(critic.parameters(), lr=1e-4)
        self.n_critic = n_critic
        self.steps = 0

    def train_step(self, real, z):
        self.opt_d.zero_grad()
        d_loss = self.critic(self.gen(z).detach()).mean() - self.critic(real).mean()
        d_loss.backward()
        self.opt_d.step()
        self.steps += 1
        if self.steps % self.n_critic == 0:
            self.opt_g.zero_grad()
            g_loss = -self.critic(self.gen(z)).mean()
            g_loss.backward()
            self.opt_g.step()
"""
    ),
]
