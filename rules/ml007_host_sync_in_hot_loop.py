"""``.item()``, ``.cpu()``, ``.numpy()`` or ``print(tensor)`` on every training iteration.

Why it matters
    CUDA runs asynchronously: the Python loop queues kernels and moves on, so the GPU can
    work on one batch while Python prepares the next. Reading a tensor's value on the host
    (``loss.item()``, ``outputs.cpu()``, ``preds.numpy()``, ``print(loss)``, an f-string of a
    tensor) makes the CPU wait until every queued kernel has finished: one full device
    synchronisation per iteration, and the GPU idles while Python builds the next step.
    Nothing is wrong with the results; the loop is just slower than it needs to be. The
    rule is off by default (``--select ML007`` or ``extend-select``): a ``.item()`` per
    step is common and often cheap next to the step itself.

When the code is fine
    - the read runs only some iterations (``if step % log_every == 0:``, under any ``if``
      inside the loop), or after the loop, or in an evaluation loop (no ``backward()`` in it);
    - the value is not a tensor of the training step (``lr.item()`` of a Python number,
      ``batch["labels"].numpy()`` of data still on the CPU): only losses and the outputs of
      the model or of a loss function, and what is computed from them, are followed;
    - the file never moves anything to a device (no ``.cuda()``, ``.to(device)``,
      ``device=...cuda...``, accelerate): on the CPU there is nothing to synchronise with
      (and so no runnable CPU fixture can show the cost: there is none in this repository);
    - reads in a nested loop inside the step, in a helper called by the loop, or in a
      ``lambda`` are not followed.

How to fix
    Keep the running values on the device and read them rarely: accumulate
    ``total += loss.detach()`` and call ``.item()`` once per epoch or under
    ``if step % log_every == 0:``; log tensors only at the logging interval. No automatic
    fix: where to read the value is the author's choice.
"""

from __future__ import annotations

from typing import Iterable, Optional, Set

import libcst as cst

from mllint.findings import Finding
from mllint.semantics import hotloop
from mllint.semantics.model import FileModel
from mllint.semantics.names import shorten
from mllint.semantics.tree import visit as tree_visit

CODE = "ML007"
NAME = "host-sync-in-hot-loop"
MESSAGE = "a tensor is read on the host on every training iteration: each read waits for the device"
TRIGGERS = (".item(", ".cpu(", ".numpy(", "print(", ".tolist(")
REQUIRES = ("backward",)
DEFAULT_ENABLED = False
FRAMEWORK = "torch"  # left out for files of another framework (mllint/frameworks.py)
FIX = None


def SCREEN(facts) -> bool:
    # Sound: findings sit in training loops (hotloop.training_loops: a loop that runs a
    # backward pass or an optimizer step).
    return facts.has_loop and not facts.call_names.isdisjoint({"backward", "manual_backward", "step", "optimizer_step"})

_SYNC_METHODS = ("item", "cpu", "numpy", "tolist")


def _sync_method(call: cst.Call) -> Optional[str]:
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in _SYNC_METHODS:
        if call.func.attr.value == "cpu" or not call.args:
            return call.func.attr.value
    return None


def _contains_sync(expr: cst.BaseExpression) -> bool:
    found = []

    class Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if _sync_method(node):
                found.append(node)

    tree_visit(expr, Finder())
    return bool(found)


def _printed_tensor(model: FileModel, call: cst.Call, scope: str, known: Set[str]) -> Optional[cst.BaseExpression]:
    """The tensor ``print(...)`` formats, if any: an argument that is one, or a tensor
    expression inside an f-string argument (``f"loss {loss}"``)."""
    if not (isinstance(call.func, cst.Name) and call.func.value == "print"):
        return None
    for arg in call.args:
        if arg.keyword is not None:
            continue
        values = [arg.value]
        if isinstance(arg.value, cst.FormattedString):
            values = [p.expression for p in arg.value.parts if isinstance(p, cst.FormattedStringExpression)]
        for value in values:
            if _contains_sync(value):
                continue  # print(loss.item()): the .item() is the read, reported itself
            if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript, cst.Call, cst.BinaryOperation)) and hotloop.is_tensor(model, value, scope, known):
                return value
    return None


def check(model: FileModel) -> Iterable[Finding]:
    if not hotloop.targets_device(model):
        return
    loops = hotloop.training_loops(model)
    if not loops:
        return
    names = {}
    for loop in loops:
        known = names.get(loop.scope)
        if known is None:
            known = names[loop.scope] = hotloop.tensor_names(model, loop.scope)
        if not known:
            continue
        for call, ctx in model.calls:
            if ctx.scope != loop.scope or not hotloop.every_iteration(model, loop, ctx):
                continue
            method = _sync_method(call)
            if method is not None:
                receiver = call.func.value
                if _contains_sync(receiver):
                    continue  # loss.cpu().numpy(): the inner read is reported
                if not hotloop.is_tensor(model, receiver, loop.scope, known):
                    continue
                text = shorten(model.code_of(call), 36)
                message = f"`{text}` on every training step waits for the device: read it less often"
                detail = (
                    f"`.{method}()` copies the value of `{shorten(model.code_of(receiver), 60)}` to the host, so the CPU "
                    "waits until every queued kernel has run, on each iteration of this training loop. Keep running "
                    "values on the device (`total += loss.detach()`) and read them once per epoch or under "
                    "`if step % log_every == 0:`."
                )
                yield model.finding(call, CODE, NAME, message, None, detail)
                continue
            printed = _printed_tensor(model, call, loop.scope, known)
            if printed is not None:
                text = shorten(model.code_of(printed), 30)
                message = f"printing `{text}` on every training iteration waits for the device: print it less often"
                detail = (
                    f"Formatting the tensor `{shorten(model.code_of(printed), 60)}` copies its value to the host, so the "
                    "CPU waits until every queued kernel has run, on each iteration of this training loop. Print it "
                    "under `if step % log_every == 0:` or after the loop."
                )
                yield model.finding(call, CODE, NAME, message, None, detail)


VALID = [
    # logged only every `log_interval` steps
    """
    import torch

    def train(model, loader, optimizer, criterion, device, log_interval=50):
        model.train()
        for step, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            if step % log_interval == 0:
                print(f"step {step} loss {loss.item():.4f}")
    """,
    # accumulated on the device, read once after the loop
    """
    import torch

    def train_epoch(model, loader, optimizer, device):
        total = torch.zeros((), device=device)
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            loss = torch.nn.functional.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach()
        return total.item() / len(loader)
    """,
    # CPU-only code: nothing is asynchronous, nothing to wait for
    """
    import torch

    model = torch.nn.Linear(10, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = ((model(x) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    """,
    # an evaluation loop: no backward, the predictions are needed on the host
    """
    import torch

    @torch.no_grad()
    def evaluate(model, loader, device):
        preds = []
        for x, _ in loader:
            out = model(x.to(device))
            preds.append(out.argmax(1).cpu().numpy())
        return preds
    """,
    # a Python number and CPU-side batch data, not a tensor of the step
    """
    import torch

    def train(model, loader, optimizer, scheduler, device):
        for batch in loader:
            labels_np = batch["labels"].numpy()
            counts.update(labels_np.tolist())
            loss = model(batch["x"].to(device), batch["labels"].to(device)).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            scheduler.step()
    """,
    # the epoch loop around the batch loop: reads once per epoch
    """
    import torch

    for epoch in range(epochs):
        running = 0.0
        for x, y in train_loader:
            x, y = x.cuda(), y.cuda()
            loss = criterion(net(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running += loss.detach()
        print(f"epoch {epoch}: {running.item() / len(train_loader):.3f}")
    """,
    # read only when the loss is not finite (an `if` inside the loop)
    """
    import torch

    for step, batch in enumerate(loader):
        batch = batch.to(device)
        loss = model(batch).mean()
        if not torch.isfinite(loss):
            print(f"non-finite loss {loss.item()} at step {step}")
            continue
        loss.backward()
        opt.step()
        opt.zero_grad()
    """,
    # read inside a nested loop over the parameters under a debug flag: not every step
    """
    import torch

    def fit(model, loader, optimizer, device, debug=False):
        for x, y in loader:
            loss = model(x.to(device), y.to(device))
            loss.backward()
            if debug:
                for name, p in model.named_parameters():
                    print(name, p.grad.norm().item())
            optimizer.step()
            optimizer.zero_grad()
    """,
    # gradient accumulation: the loss is read only on the optimizer steps
    """
    import torch

    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x.cuda()), y.cuda()) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
            logger.info("loss %.4f", loss.item() * accum)
    """,
    # the learning rate and a CPU counter, not tensors of the step
    """
    import torch

    def train(model, loader, optimizer, scheduler, device):
        for x, y in loader:
            loss = model(x.to(device), y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            lrs.append(scheduler.get_last_lr()[0])
            seen = torch.tensor(len(x)).item()
    """,
]

INVALID = [
    # the classic running loss: `.item()` on every batch
    """
    import torch

    def train(model, loader, optimizer, criterion, device):
        model.train()
        running_loss = 0.0
        for inputs, targets in loader:
            inputs, targets = inputs.to(device), targets.to(device)
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = criterion(outputs, targets)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
        return running_loss / len(loader)
    """,
    # accuracy counted on the host on every batch
    """
    import torch

    for images, labels in train_loader:
        images, labels = images.cuda(), labels.cuda()
        logits = net(images)
        loss = criterion(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        correct += (logits.argmax(1) == labels).sum().item()
    """,
    # the loss printed every step
    """
    import torch

    device = torch.device("cuda")
    model = Net().to(device)
    for step, (x, y) in enumerate(loader):
        loss = F.nll_loss(model(x.to(device)), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step}: {loss}")
    """,
    # predictions copied to numpy for a metric on every batch
    """
    import torch

    def train_epoch(self, loader):
        for batch in loader:
            x, y = batch[0].to(self.device), batch[1].to(self.device)
            out = self.model(x)
            loss = self.criterion(out, y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.metric.update(out.detach().cpu().numpy(), y.cpu().numpy())
    """,
    # a progress bar updated with the loss value on every step
    """
    import torch
    from tqdm import tqdm

    def train(model, loader, optimizer, device):
        pbar = tqdm(loader)
        for batch in pbar:
            batch = {k: v.to(device) for k, v in batch.items()}
            outputs = model(**batch)
            loss = outputs.loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            pbar.set_postfix(loss=loss.item())
    """,
    # mixed precision: the scaled backward, then the loss logged every step
    """
    import torch

    scaler = torch.cuda.amp.GradScaler()
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        with torch.autocast("cuda"):
            loss = criterion(model(x), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.detach().cpu())
    """,
    # a while loop of steps, wandb logging every step
    """
    import torch
    import wandb

    step = 0
    while step < max_steps:
        x, y = next(batches)
        logits, loss = model(x.to(device), y.to(device))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        wandb.log({"train/loss": loss.item()}, step=step)
        step += 1
    """,
    # the loss list converted for a plot on every step
    """
    import torch

    def fit(net, loader, opt, loss_fn, device):
        history = []
        for xb, yb in loader:
            pred = net(xb.to(device))
            loss = loss_fn(pred, yb.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            history.append(loss.detach().cpu().numpy())
        return history
    """,
    # a method of a trainer: the model output's logits read on every batch
    """
    import torch

    class Trainer:
        def fit(self, loader):
            for x, y in loader:
                x, y = x.to(self.device), y.to(self.device)
                out = self.model(x)
                loss = self.loss_fn(out.logits, y)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                self.preds.extend(out.logits.argmax(-1).tolist())
    """,
    # the loss printed as such on every step (`print(loss)` formats the tensor)
    """
    import torch

    net = Net().cuda()
    for data, target in train_loader:
        output = net(data.cuda())
        loss = F.cross_entropy(output, target.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("loss:", loss)
    """,
]
