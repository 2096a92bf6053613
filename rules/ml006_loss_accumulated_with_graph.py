"""A loss tensor summed or collected across iterations keeps every iteration's graph alive.

Why it matters
    ``total_loss += loss`` adds a tensor that carries its autograd graph to an accumulator
    that outlives the iteration: the sum is a tensor too, and its graph links back to the
    loss of every iteration so far. ``losses.append(loss)`` does the same with a list.
    Nothing is freed until the accumulator goes away, so memory grows with every batch
    (fixtures/ml006: 200 batches keep 600 autograd nodes and 200 loss tensors alive with
    ``total += loss``, none with ``loss.item()``; in an evaluation loop run with grad on,
    every batch's activations are kept as well), and any later ``.backward()`` through
    the sum would run through all of them. No error is raised; the loop just grows.

When the code is fine
    - the accumulated value is a number or a detached tensor: ``loss.item()``,
      ``float(loss)``, ``loss.detach()``, ``loss.cpu().item()``, a helper that calls
      ``.item()``, or a name rebound to one of these before it is added;
    - the code runs with grad off (``torch.no_grad()``, ``inference_mode()``,
      ``@torch.no_grad()``);
    - the accumulator is backpropagated afterwards: gradient accumulation
      (``loss_sum = loss_sum + loss`` then ``loss_sum.backward()``), REINFORCE-style lists
      summed or stacked and backpropagated, a value computed from the accumulator and
      backpropagated, or the accumulator handed to a helper that runs a backward pass;
    - the accumulator lives for one iteration only (rebound before it is added to, in the
      same loop body).
    The rule reports only a loss that the same loop backpropagates (``loss.backward()``,
    ``scaler.scale(loss).backward()``, ``accelerator.backward(loss)``, or a scaled or reduced
    form of it: ``(loss / n).backward()``, ``loss.div(n).backward()``,
    ``loss.mean().backward()``), or a loss returned by a helper of the file that
    backpropagated it (``loss = self.train_step(batch)``): that proves it is a
    tensor with a graph. A value whose kind is not known (a metric that may be a float) is
    left alone.

How to fix
    Accumulate the Python number: ``total_loss += loss.item()``,
    ``losses.append(loss.item())``. ``--fix`` does this when the accumulator starts as a
    number (``0``, ``0.0``) or an empty list and is afterwards only used as a number
    (printed, logged, averaged, summed); when it is returned or stored the fix is offered
    as unsafe; when it is used as a tensor (``total.item()``, ``torch.stack(losses)``) no
    fix is offered: use ``loss.detach()`` there, or change those uses too.
    Where ML007 is on and the file trains on a device, a ``.item()`` on every step is ML007's
    finding: there the advice is ``total_loss += loss.detach()``, read with ``.item()`` once
    per epoch, and the fix (unsafe: the accumulator becomes a device tensor) writes
    ``loss.detach()``.
"""

from __future__ import annotations

from typing import Iterable, List, Optional

import libcst as cst

from mllint.findings import Applicability, Example, Finding, Fix
from mllint.semantics import hotloop
from mllint.semantics.accumulation import Accumulation, _match, _nodes, _root, accumulations, derived, text
from mllint.semantics.model import FileModel

CODE = "ML006"
NAME = "loss-accumulated-with-graph"
MESSAGE = "a loss tensor accumulated across iterations keeps every iteration's graph alive: use `loss.item()`"
TRIGGERS = ("+=", "append(", " + ", "] = ")
REQUIRES = ("backward",)
DEFAULT_ENABLED = True
FRAMEWORK = "torch"  # left out for files of another framework (mllint/frameworks.py)
FIX = "safe"


def SCREEN(facts) -> bool:
    # Sound: an accumulation is reported in a loop, of a value that a backward pass
    # (``.backward()``/``.manual_backward()``/``torch.autograd.backward``) runs on.
    return facts.has_loop and not facts.call_names.isdisjoint({"backward", "manual_backward"})

SAFE, UNSAFE, NONE = "safe", "unsafe", "none"
_LIST_METHODS = frozenset({"append", "extend", "clear", "pop", "__len__", "copy"})


def _scope(model: FileModel, acc: Accumulation) -> cst.CSTNode:
    fn = model.functions.get(acc.loop.scope)
    return fn.node if fn is not None else model.module


def _use_kind(model: FileModel, node: cst.CSTNode, is_list: bool) -> str:
    """How one read of the accumulator (or a value derived from it) uses it."""
    parents = model.parents
    parent = parents.get(node)
    if isinstance(parent, cst.Attribute) and parent.value is node:
        if is_list and parent.attr.value in _LIST_METHODS:
            return SAFE
        return NONE  # total.item(), total.cpu(): needs a tensor
    current: Optional[cst.CSTNode] = node
    while current is not None:
        parent = parents.get(current)
        if isinstance(parent, cst.Arg):
            call = parents.get(parent)
            if isinstance(call, cst.Call):
                qual = model.imports.qualname(call.func) or ""
                if qual.startswith("torch.") and not qual.startswith("torch.utils.tensorboard"):
                    return NONE
                if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("add_", "copy_", "backward"):
                    return NONE
        if isinstance(parent, (cst.Return, cst.Yield)):
            return UNSAFE
        if isinstance(parent, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = parent.targets if isinstance(parent, cst.Assign) else [parent]
            if any(not isinstance(t.target, cst.Name) for t in targets):
                return UNSAFE  # stored on an object or in a container
        if isinstance(parent, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) or parent is None:
            break
        current = parent
    return SAFE


def _fix_kind(model: FileModel, acc: Accumulation, others: List[cst.CSTNode]) -> str:
    if not acc.scalar:
        return NONE
    root = _root(acc.target)
    if not isinstance(root, cst.Name) or root is not acc.target:
        return UNSAFE  # self.total, logs["loss"]: who else reads it is not known here
    scope = _scope(model, acc)
    name = root.value
    is_list = acc.kind == "append"
    own_ids = {id(n) for stmt in others for n in _nodes(model, (cst.Assign, cst.Name), stmt)} | {id(s) for s in others}
    # how the accumulator starts
    start_ok = False
    for node in _nodes(model, cst.Assign, scope):
        if len(node.targets) != 1 or id(node) in own_ids:
            continue
        pairs = [(node.targets[0].target, node.value)]
        target = node.targets[0].target
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(node.value, (cst.Tuple, cst.List)) \
                and len(target.elements) == len(node.value.elements):
            pairs = [(t.value, v.value) for t, v in zip(target.elements, node.value.elements)]
        for bound, value in pairs:
            if not isinstance(bound, cst.Name) or bound.value != name:
                continue
            if is_list:
                start_ok = isinstance(value, cst.List) and not value.elements
            else:
                start_ok = isinstance(value, (cst.Integer, cst.Float)) or (
                    isinstance(value, cst.UnaryOperation) and isinstance(value.expression, (cst.Integer, cst.Float)))
            if not start_ok:
                return UNSAFE
    if not start_ok:
        return UNSAFE
    names = derived(model, scope, name, name)
    worst = SAFE
    for node in _nodes(model, cst.Name, scope):
        if id(node) in own_ids or node.value not in names:
            continue
        parent = model.parents.get(node)
        holder = parent
        while isinstance(holder, (cst.Element, cst.Tuple, cst.List, cst.StarredElement)):
            holder = model.parents.get(holder)
        if isinstance(holder, cst.AssignTarget):
            continue
        if isinstance(parent, cst.AssignTarget) or (isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node):
            continue
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            continue
        if isinstance(parent, (cst.Param, cst.Arg)) and getattr(parent, "keyword", None) is node:
            continue
        kind = _use_kind(model, node, is_list and node.value == name)
        if kind == NONE:
            return NONE
        if kind == UNSAFE:
            worst = UNSAFE
    return worst


def _fix(model: FileModel, acc: Accumulation, kind: str, on_device: bool) -> Optional[Fix]:
    if kind == NONE:
        return None
    if on_device:  # the accumulator then holds a device tensor: its readers must take `.item()` themselves
        new = cst.Call(func=cst.Attribute(value=acc.name, attr=cst.Name("detach")))
        return model.fix_replacing(acc.name, new, Applicability.UNSAFE, f"Accumulate `{acc.name.value}.detach()`")
    new = cst.Call(func=cst.Attribute(value=acc.name, attr=cst.Name("item")))
    applicability = Applicability.SAFE if kind == SAFE else Applicability.UNSAFE
    return model.fix_replacing(acc.name, new, applicability, f"Accumulate `{acc.name.value}.item()`")


def _reads_on_device(model: FileModel) -> bool:
    """ML007 is on for this file and the file trains on a device: there a `.item()` on every
    step is ML007's finding, so the advice (and the fix) is `.detach()`, read once per epoch."""
    return model.enabled is not None and "ML007" in model.enabled and hotloop.targets_device(model)


def _brief(model: FileModel, node: cst.CSTNode) -> str:
    snippet = " ".join(model.code_of(node).split())
    return snippet if len(snippet) <= 40 else snippet[:37] + "..."


def check(model: FileModel) -> Iterable[Finding]:
    found = accumulations(model)
    on_device = bool(found) and _reads_on_device(model)
    by_target = {}
    for acc in found:
        by_target.setdefault((acc.loop.scope, text(model, acc.target)), []).append(acc.statement)
    for acc in found:
        scope = _scope(model, acc)
        acc_text = text(model, acc.target)
        # every accumulation statement into the same accumulator (also of other values)
        others = [s for s in _nodes(model, cst.BaseSmallStatement, scope)
                  if (m := _match(model, s)) is not None and text(model, m[0]) == acc_text]
        kind = _fix_kind(model, acc, others)
        fix = _fix(model, acc, kind, on_device)
        loss = acc.name.value
        statement = _brief(model, acc.statement)
        remedy = (f"use `{loss}.detach()`" if on_device else f"use `{loss}.item()`") if acc.scalar else "detach it first"
        message = f"`{statement}` keeps every iteration's graph alive: {remedy}"
        if len(message) > 110:
            message = f"`{loss}` is accumulated with its graph across iterations: {remedy}"
        inside = any(n is acc.backward for n in _nodes(model, cst.Call, acc.loop.node))
        where = "in this loop" if inside else \
            f"by the helper it comes from (line {model.position(acc.backward).start.line})"
        fix_note = {
            SAFE: "",
            UNSAFE: f" `{acc_text}` is returned or stored, so the fix is unsafe: check its users.",
            NONE: f" `{acc_text}` is used as a tensor later (or `{loss}` is not a scalar): detach it instead.",
        }[kind]
        if on_device and kind != NONE:
            fix_note = (f" The fix is unsafe: `{acc_text}` then holds a tensor on the device, so read it with "
                        f"`.item()` where it is printed or stored.")
        remedy_detail = (
            f"Accumulate `{loss}.detach()` on the device and read it with `.item()` once per epoch (a `.item()` on "
            "every step waits for the device: ML007)." if on_device else
            f"Accumulate the number `{loss}.item()` (or `{loss}.detach()`)."
        )
        detail = (
            f"`{loss}` is backpropagated {where}, so it carries its autograd graph; accumulating it into "
            f"`{acc_text}`, which outlives the iteration, keeps the graph of every iteration alive until "
            f"`{acc_text}` goes away. " + remedy_detail + fix_note
            if acc.scalar else
            f"`{loss}` holds a tensor that is backpropagated {where}, so it carries its autograd graph; "
            f"keeping it in `{acc_text}`, which outlives the iteration, keeps the graph of every iteration alive. "
            f"Detach the tensor it holds (or store `.item()`) before keeping it."
        )
        yield model.finding(acc.statement, CODE, NAME, message, fix, detail)


# --- examples ------------------------------------------------------------------------------------

VALID = [
    # the helper detaches the loss before returning it
    """
    import torch

    def step(model, x, y, opt):
        loss = model(x, y)
        loss.backward()
        opt.step()
        loss = loss.detach()
        return loss

    def fit(model, loader, opt):
        hist = []
        for x, y in loader:
            hist.append(step(model, x, y, opt))
            last = step(model, x, y, opt)
            hist.append(last)
        return hist
    """,
    # the number, not the tensor
    """
    import torch
    def train_epoch(model, loader, optimizer, criterion):
        running_loss = 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            running_loss += loss.item() * x.size(0)
        return running_loss / len(loader.dataset)
    """,
    # detached, or converted on the way (float(), .cpu().item(), a helper)
    """
    import torch
    def to_number(t):
        return t.item()

    def fit(model, loader, optimizer, history):
        total, seen, logged = 0.0, 0.0, []
        for batch in loader:
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            total += loss.detach()
            seen += float(loss)
            history.append(loss.cpu().item())
            logged.append(to_number(loss))
        return total, seen, logged
    """,
    # rebound to its detached value before it is added
    """
    import torch
    epoch_loss = 0
    for step, (src, tgt) in enumerate(train_loader):
        loss = criterion(model(src), tgt)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss = loss.detach()
        epoch_loss += loss
    print(epoch_loss / len(train_loader))
    """,
    # gradient accumulation: the sum is backpropagated
    """
    import torch
    def train_step(model, micro_batches, optimizer):
        loss_sum = 0
        for micro in micro_batches:
            loss = model(micro).mean()
            loss.backward(retain_graph=True)
            loss_sum = loss_sum + loss
        (loss_sum / len(micro_batches)).backward()
        optimizer.step()
    """,
    # REINFORCE: per-step losses collected, then summed and backpropagated
    """
    import torch
    def finish_episode(policy, optimizer, log_probs, rewards):
        policy_losses = []
        for log_prob, reward in zip(log_probs, rewards):
            loss = -log_prob * reward
            policy_losses.append(loss)
        optimizer.zero_grad()
        total = torch.stack(policy_losses).sum()
        total.backward()
        optimizer.step()
    """,
    # evaluation under no_grad (nothing is backpropagated; no graph is built)
    """
    import torch
    @torch.no_grad()
    def evaluate(model, loader, criterion):
        val_loss = 0.0
        for x, y in loader:
            loss = criterion(model(x), y)
            val_loss += loss
        return val_loss / len(loader)
    """,
    # the accumulator lives for one iteration: rebound at the start of the body
    """
    import torch
    for epoch in range(epochs):
        for images, labels in loader:
            step_loss = 0
            outputs = model(images)
            loss = criterion(outputs, labels)
            loss.backward()
            step_loss += loss
            optimizer.step()
            optimizer.zero_grad()
            print(step_loss)
    """,
    # a loss of unknown kind (a metric, maybe a float) that the loop does not backpropagate
    """
    from sklearn.metrics import log_loss
    losses = []
    for fold, (train_idx, test_idx) in enumerate(folds):
        clf.fit(X[train_idx], y[train_idx])
        loss = log_loss(y[test_idx], clf.predict_proba(X[test_idx]))
        losses.append(loss)
    """,
    # a dict of losses that is summed and backpropagated each step from a running list
    """
    import torch
    def train(model, loader, optimizer, accum_steps):
        pending = []
        for i, batch in enumerate(loader):
            loss = model(batch)
            loss.backward(retain_graph=True)
            pending.append(loss)
            if (i + 1) % accum_steps == 0:
                optimizer.zero_grad()
                sum(pending).backward()
                optimizer.step()
                pending.clear()
    """,
    # handed to a local helper that backpropagates it
    """
    import torch
    def update(optimizer, objective):
        optimizer.zero_grad()
        objective.backward()
        optimizer.step()

    def unrolled(model, optimizer, batches):
        objective = 0
        for batch in batches:
            loss = model(batch)
            loss.backward(retain_graph=True)
            objective += loss
        update(optimizer, objective)
    """,
    # the accumulated value goes through .data or a no_grad block
    """
    import torch
    total, seen = 0.0, []
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            total += loss
        seen.append(loss.data)
    """,
]

INVALID = [
    # a helper backpropagates the loss and returns it; the epoch loop sums what it returns
    Example(
        """
import torch

class Trainer:
    def train_step(self, batch):
        self.optimizer.zero_grad()
        loss = self.criterion(self.model(batch["x"]), batch["y"])
        loss.backward()
        self.optimizer.step()
        return loss

    def train_epoch(self, loader):
        total = 0.0
        for batch in loader:
            loss = self.train_step(batch)
            total += loss
        print(total / len(loader))
""",
        fixed="""
import torch

class Trainer:
    def train_step(self, batch):
        self.optimizer.zero_grad()
        loss = self.criterion(self.model(batch["x"]), batch["y"])
        loss.backward()
        self.optimizer.step()
        return loss

    def train_epoch(self, loader):
        total = 0.0
        for batch in loader:
            loss = self.train_step(batch)
            total += loss.item()
        print(total / len(loader))
""",
    ),
    # backpropagated through a method of the loss (`loss.div(n)`): the summed tensor keeps the graph
    Example(
        """
import torch

def train_epoch(model, loader, optimizer, criterion):
    total_loss, total_words = 0, 0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.div(y.size(0)).backward()
        optimizer.step()
        total_loss += loss
        total_words += int(y.ne(0).sum())
    return total_loss / total_words
""",
        unsafe_fixed="""
import torch

def train_epoch(model, loader, optimizer, criterion):
    total_loss, total_words = 0, 0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.div(y.size(0)).backward()
        optimizer.step()
        total_loss += loss.item()
        total_words += int(y.ne(0).sum())
    return total_loss / total_words
""",
    ),
    # a per-sample loss reduced for backward, collected whole: no `.item()` fix (not a scalar)
    """
import torch

losses = []
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.mean().backward()
    optimizer.step()
    losses.append(loss)
print(torch.stack(losses).mean())
""",
    # the classic: an epoch's running loss summed as a tensor, then printed
    Example(
        """
import torch

def train(model, loader, optimizer, criterion, epochs):
    for epoch in range(epochs):
        total_loss = 0.0
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = criterion(model(inputs), targets)
            loss.backward()
            optimizer.step()
            total_loss += loss
        print(f"epoch {epoch}: {total_loss / len(loader):.4f}")
""",
        fixed="""
import torch

def train(model, loader, optimizer, criterion, epochs):
    for epoch in range(epochs):
        total_loss = 0.0
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = criterion(model(inputs), targets)
            loss.backward()
            optimizer.step()
            total_loss += loss.item()
        print(f"epoch {epoch}: {total_loss / len(loader):.4f}")
""",
    ),
    # a list of losses averaged with numpy afterwards
    Example(
        """
import numpy as np
import torch

losses = []
for step, batch in enumerate(train_loader):
    out = model(batch["input_ids"], labels=batch["labels"])
    loss = out.loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    losses.append(loss)
print("mean loss", np.mean([float(l) for l in losses]), len(losses))
""",
        fixed="""
import numpy as np
import torch

losses = []
for step, batch in enumerate(train_loader):
    out = model(batch["input_ids"], labels=batch["labels"])
    loss = out.loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    losses.append(loss.item())
print("mean loss", np.mean([float(l) for l in losses]), len(losses))
""",
    ),
    # weighted by the batch size, with a GradScaler
    Example(
        """
import torch

def train_one_epoch(model, loader, optimizer, scaler, device):
    model.train()
    running = 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        with torch.autocast("cuda"):
            loss = torch.nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        running += loss * images.size(0)
    print(running / len(loader.dataset))
""",
        fixed="""
import torch

def train_one_epoch(model, loader, optimizer, scaler, device):
    model.train()
    running = 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        with torch.autocast("cuda"):
            loss = torch.nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        running += loss.item() * images.size(0)
    print(running / len(loader.dataset))
""",
    ),
    # accelerate's backward; the accumulator is returned: unsafe fix (the caller may use it as a tensor)
    Example(
        """
def train_epoch(accelerator, model, loader, optimizer):
    epoch_loss = 0.0
    for batch in loader:
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        epoch_loss = epoch_loss + loss
    return epoch_loss / len(loader)
""",
        unsafe_fixed="""
def train_epoch(accelerator, model, loader, optimizer):
    epoch_loss = 0.0
    for batch in loader:
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        epoch_loss = epoch_loss + loss.item()
    return epoch_loss / len(loader)
""",
    ),
    # a dict-valued loss log
    Example(
        """
import torch
from collections import defaultdict

logs = defaultdict(float)
for it, (x, y) in enumerate(loader):
    recon = vae(x)
    loss = loss_fn(recon, x)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    logs["loss"] += loss
""",
        unsafe_fixed="""
import torch
from collections import defaultdict

logs = defaultdict(float)
for it, (x, y) in enumerate(loader):
    recon = vae(x)
    loss = loss_fn(recon, x)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    logs["loss"] += loss.item()
""",
    ),
    # an attribute of a trainer: unsafe fix (other methods read it)
    Example(
        """
import torch

class Trainer:
    def fit(self, loader):
        for x, y in loader:
            self.optimizer.zero_grad()
            loss = self.criterion(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            self.epoch_losses.append(loss)
""",
        unsafe_fixed="""
import torch

class Trainer:
    def fit(self, loader):
        for x, y in loader:
            self.optimizer.zero_grad()
            loss = self.criterion(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            self.epoch_losses.append(loss.item())
""",
    ),
    # used as a tensor afterwards (`.item()` on the sum): reported, no fix
    Example(
        """
import torch

total = 0
for x, y in loader:
    loss = ((model(x) - y) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    total += loss
print("train loss", total.item() / len(loader))
""",
    ),
    # stacked with torch afterwards: reported, no fix
    Example(
        """
import torch

def train(model, loader, optimizer):
    batch_losses = []
    for data, target in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        batch_losses.append(loss)
    return torch.stack(batch_losses).mean().item()
""",
    ),
    # reset only every N steps: the graphs of N iterations are kept between resets
    Example(
        """
import torch

log_loss = 0.0
for step, (x, y) in enumerate(loader):
    loss = criterion(net(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    log_loss += loss
    if step % 100 == 99:
        print(step, log_loss / 100)
        log_loss = 0.0
""",
        fixed="""
import torch

log_loss = 0.0
for step, (x, y) in enumerate(loader):
    loss = criterion(net(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    log_loss += loss.item()
    if step % 100 == 99:
        print(step, log_loss / 100)
        log_loss = 0.0
""",
    ),
    # a GAN: both losses collected in while loop, plotted afterwards
    Example(
        """
import matplotlib.pyplot as plt

d_history, g_history = [], []
step = 0
while step < num_steps:
    real = next(data_iter)
    d_loss = discriminator_loss(D, G, real)
    d_opt.zero_grad()
    d_loss.backward()
    d_opt.step()
    g_loss = generator_loss(D, G)
    g_opt.zero_grad()
    g_loss.backward()
    g_opt.step()
    d_history.append(d_loss)
    g_history.append(g_loss)
    step += 1
plt.plot(d_history)
plt.plot(g_history)
""",
        fixed="""
import matplotlib.pyplot as plt

d_history, g_history = [], []
step = 0
while step < num_steps:
    real = next(data_iter)
    d_loss = discriminator_loss(D, G, real)
    d_opt.zero_grad()
    d_loss.backward()
    d_opt.step()
    g_loss = generator_loss(D, G)
    g_opt.zero_grad()
    g_loss.backward()
    g_opt.step()
    d_history.append(d_loss.item())
    g_history.append(g_loss.item())
    step += 1
plt.plot(d_history)
plt.plot(g_history)
""",
    ),
    # one entry per step stored in a log: unsafe fix (the log is returned)
    Example(
        """
def train(model, loader, optimizer):
    step_losses = {}
    for step, batch in enumerate(loader):
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        step_losses[step] = loss
    return step_losses
""",
        unsafe_fixed="""
def train(model, loader, optimizer):
    step_losses = {}
    for step, batch in enumerate(loader):
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        step_losses[step] = loss.item()
    return step_losses
""",
    ),
]
