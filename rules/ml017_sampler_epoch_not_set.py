"""A shuffling `DistributedSampler` is never told the epoch: every epoch sees the same order.

Why it matters
    ``torch.utils.data.distributed.DistributedSampler`` shuffles with a generator seeded by
    ``seed + epoch``, and its epoch only changes when ``sampler.set_epoch(epoch)`` is called.
    Without it every epoch iterates the data in exactly the same order on every rank: the
    shuffling is done once and then frozen, which is what PyTorch's documentation warns about
    ("Calling the set_epoch() method at the beginning of each epoch before creating the
    DataLoader iterator is necessary to make shuffling work properly across multiple epochs.
    Otherwise, the same ordering will be always used."). Nothing fails; the model simply sees
    batches of the same composition in the same order each epoch, which can hurt
    generalisation and makes runs with "shuffling" behave like runs without
    (fixtures/ml017: 2 replicas, 5 epochs of 16 samples: without ``set_epoch`` all 5 epochs
    of rank 0 share one order, with it all 5 differ).
    Reported at the epoch loop (the loop around the loop over the loader, also when that inner
    loop is in a helper it calls: ``for epoch in ...: train_one_epoch(model, loader)``; also a
    loop drawing batches by hand, ``it = iter(loader)`` (or ``cycle(loader)``) made each epoch and
    ``next(it)`` in its step loop, or ``next(iter(loader))``; also a loader handed to a trainer
    class of the file that keeps it as ``self.<attr>``, alone or in a dict of loaders), when
    the loader is fed (``sampler=``, built inline, or through ``batch_sampler=BatchSampler(sampler,
    ...)``) by a ``DistributedSampler`` that shuffles
    (``shuffle=True`` or left out), built before the epoch loop, the inner loop trains (a
    backward pass, an optimizer step or a training-step call), and nothing the epoch loop runs
    (nested loops and local functions it calls included) calls ``set_epoch``.

When the code is fine
    - ``set_epoch`` called anywhere in the epoch loop, before or after the loop over the
      loader, directly (``sampler.set_epoch(epoch)``), through the loader
      (``train_loader.sampler.set_epoch(epoch)``) or in a helper of the file it calls (any
      ``.set_epoch(...)`` / ``set_*_epoch(...)`` call counts, whatever it is called on);
    - ``DistributedSampler(..., shuffle=False)``; a shuffle flag we cannot read
      (``shuffle=is_train``, ``**kwargs``) is given the benefit of the doubt;
    - one pass over the loader (no epoch loop around it), an evaluation loop (no training in
      it), a sampler or loader built anew inside the epoch loop; an iterator made once before
      the loops and made again only when exhausted (step-based training), a ``cycle(loader)``
      made once (it replays its first pass: ``set_epoch`` would change nothing);
    - frameworks that set the epoch themselves: Lightning's ``Trainer`` (and Fabric's
      ``setup_dataloaders``), accelerate's ``accelerator.prepare(loader)``, ignite's
      ``auto_dataloader``, Hugging Face's ``Trainer`` (no hand-written epoch loop);
    - samplers that are not torch's ``DistributedSampler`` (a ``RandomSampler``, a class of
      your own, another library's distributed sampler);
    - an epoch loop that hands the loader or the sampler to code the file does not show
      (``utils.train(loader, epoch)`` from another module, an inherited ``self.on_epoch_start``):
      it may set the epoch there (an inherited method called once per batch, like
      ``self._backward(loss)``, is not taken to set it, unless its name says ``epoch``).

How to fix
    Call ``sampler.set_epoch(epoch)`` at the start of every epoch, before iterating the loader.
    ``--fix`` inserts it as the first statement of the epoch loop when the sampler is a plain
    name bound in the loop's scope before it (to the sampler, or to ``None`` in the other
    branch: then as ``if sampler is not None: sampler.set_epoch(epoch)``) and the epoch loop is
    ``for epoch in range(...)`` (``trange``, ``tqdm(range(...))``); otherwise it is left for
    you (``loader.sampler.set_epoch(epoch)`` reaches a sampler built elsewhere).
"""

from __future__ import annotations

from typing import Iterable, Optional

import libcst as cst

from mllint.findings import Applicability, Example, Finding, Fix
from mllint.semantics.model import FileModel
from mllint.semantics.names import dotted, shorten
from mllint.semantics.samplers import Unseeded, branches, in_loop, is_sampler_call, is_none, unseeded

CODE = "ML017"
NAME = "sampler-epoch-not-set"
MESSAGE = "a shuffling `DistributedSampler` is never told the epoch: every epoch sees the same order"
TRIGGERS = ("DistributedSampler",)
DEFAULT_ENABLED = True
FRAMEWORK = "torch"
FIX = "safe"


def SCREEN(facts) -> bool:
    # Sound: a finding needs a call of torch's DistributedSampler (its name is called or
    # imported under an alias) and a loop.
    return facts.has_loop and ("DistributedSampler" in facts.identifiers or "DistributedSampler" in facts.imported_names)


def _counts_epochs(model: FileModel, node: cst.BaseExpression) -> bool:
    """``range(...)``, ``trange(...)``, ``tqdm(range(...))``: an integer per iteration."""
    while isinstance(node, cst.Call):
        name = (model.imports.qualname(node.func) or dotted(node.func) or "").rsplit(".", 1)[-1]
        if name in ("range", "trange"):
            return name not in {k.rsplit(".", 1)[-1] for k in model.functions}
        if name != "tqdm" or not node.args:
            return False
        node = node.args[0].value
    return False


def _fix(model: FileModel, found: Unseeded) -> Optional[Fix]:
    sampler = found.loader.sampler
    binding = sampler.binding
    epoch = found.epoch
    node = epoch.node
    if binding is None or binding.ctx is None or not binding.ref.isidentifier() or binding.scope != epoch.scope:
        return None
    if not isinstance(node, cst.For) or not isinstance(node.target, cst.Name) or not isinstance(node.body, cst.IndentedBlock):
        return None
    if not _counts_epochs(model, node.iter):
        return None
    guard = False
    for value in sampler.values:
        order = model.assignment_order.get(value)
        if order is None and isinstance(model.parents.get(value), cst.Element):  # a, b = None, None
            order = model.assignment_order.get(model.parents.get(model.parents.get(value)))
        if order is None or order > epoch.order:
            return None  # bound after the loop starts
        for branch in branches(value):
            if is_none(branch):
                guard = True
            elif not is_sampler_call(model, branch):
                return None  # another sampler in the other branch: it may have no set_epoch
    for targets, _value, ctx in model.assignments_in(epoch.scope):
        if binding.ref in targets and in_loop(ctx, epoch):
            return None  # rebound in the loop
    name, var = binding.ref, node.target.value
    if guard:
        text = f"if {name} is not None:\n{model.module.default_indent}{name}.set_epoch({var})\n"
    else:
        text = f"{name}.set_epoch({var})\n"

    statement = cst.parse_statement(text, config=model.module.config_for_parsing)
    body = node.body.with_changes(body=(statement,) + tuple(node.body.body))
    return model.fix_replacing(
        node, node.with_changes(body=body), Applicability.SAFE, f"call `{name}.set_epoch({var})` at the start of each epoch"
    )


def _header(model: FileModel, node: cst.CSTNode) -> str:
    if isinstance(node, cst.For):
        return f"for {model.code_of(node.target).strip()} in {model.code_of(node.iter).strip()}"
    if isinstance(node, cst.While):
        return f"while {model.code_of(node.test).strip()}"
    return "the loop"


def check(model: FileModel) -> Iterable[Finding]:
    for found in unseeded(model):
        sampler = found.loader.sampler
        header = _header(model, found.epoch.node)
        line = model.position(sampler.call).start.line
        name = sampler.binding.ref if sampler.binding is not None else "the DistributedSampler"
        loader = found.loader.bindings[0].ref if found.loader.bindings else "the loader"
        inner = _header(model, found.inner.node)
        message = f"`{shorten(header, 32)}` never calls `set_epoch` on its DistributedSampler: same order every epoch"
        where = "" if not found.via else f" (in `{found.inner.scope}`)"
        drawn = "" if found.through is None else f"`{shorten(model.code_of(found.through).strip(), 30)}` in "
        detail = (
            f"`{name}` (the DistributedSampler built on line {line}, shuffling) feeds `{loader}`, iterated by "
            f"{drawn}`{shorten(inner, 50)}`{where} once per iteration of `{shorten(header, 50)}`, but nothing in that loop calls "
            f"`set_epoch`: the sampler seeds its shuffle with `seed + epoch`, so every epoch gets the same order on every "
            f"rank. Call `{name if sampler.binding is not None else f'{loader}.sampler'}.set_epoch(epoch)` at the start "
            f"of each epoch."
        )
        loop = found.epoch.node  # reported at its header's iterable (or test), not the whole loop body
        at = getattr(loop, "iter", None) or getattr(loop, "test", None) or loop
        yield model.finding(at, CODE, NAME, message, _fix(model, found), detail)


# ---------------------------------------------------------------------------------------
# Examples (collected by the test suite). INVALID examples carry the expected --fix output.

VALID = [
    # set_epoch at the top of the epoch loop
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    sampler.set_epoch(epoch)
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
    # set_epoch through the loader, after the loop over it
    """
import torch
from torch.utils.data import DataLoader, DistributedSampler

train_loader = DataLoader(dataset, batch_size=32, sampler=DistributedSampler(dataset))
for epoch in range(10):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    train_loader.sampler.set_epoch(epoch + 1)
""",
    # shuffle=False: there is no order to refresh
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

sampler = DistributedSampler(dataset, shuffle=False)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
    # one pass over the loader: no epoch loop
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for x, y in loader:
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    optimizer.step()
""",
    # a helper of the file sets the epoch on what it is passed
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

def train_one_epoch(model, loader, optimizer, epoch):
    loader.sampler.set_epoch(epoch)
    for x, y in loader:
        optimizer.zero_grad()
        model.loss(x, y).backward()
        optimizer.step()

def main(model, dataset, optimizer):
    loader = DataLoader(dataset, batch_size=64, sampler=DistributedSampler(dataset))
    for epoch in range(100):
        train_one_epoch(model, loader, optimizer, epoch)
""",
    # accelerate prepares the loader (and sets the epoch itself)
    """
from accelerate import Accelerator
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

accelerator = Accelerator()
loader = DataLoader(dataset, batch_size=32, sampler=DistributedSampler(dataset))
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for epoch in range(3):
    for batch in loader:
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
""",
    # not a DistributedSampler
    """
import torch
from torch.utils.data import DataLoader, RandomSampler

sampler = RandomSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
    # an evaluation loader (default shuffle) iterated every epoch: nothing trains on it
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

val_loader = DataLoader(val_set, batch_size=64, sampler=DistributedSampler(val_set))
for epoch in range(10):
    train(model, train_loader, optimizer, epoch)
    model.eval()
    with torch.no_grad():
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum()
""",
    # the loader is handed to a training function of another module: it may set the epoch
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from engine import train_one_epoch

sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    train_one_epoch(model, loader, optimizer, epoch)
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
    # a shuffle flag we cannot read
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

sampler = DistributedSampler(dataset, shuffle=args.shuffle)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
    # sampler and loader built anew each epoch (a curriculum)
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

for epoch in range(10):
    subset = curriculum(dataset, epoch)
    loader = DataLoader(subset, batch_size=32, sampler=DistributedSampler(subset, seed=epoch))
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
    # a Lightning module: the Trainer runs the epochs and sets the epoch
    """
import lightning as L
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

class Data(L.LightningDataModule):
    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=32, sampler=DistributedSampler(self.train_set))

trainer = L.Trainer(max_epochs=10, strategy="ddp")
trainer.fit(model, datamodule=Data())
""",
    # a trainer class: set_epoch in the epoch hook of the file
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

class Trainer:
    def __init__(self, model, dataset):
        self.model = model
        self.sampler = DistributedSampler(dataset)
        self.loader = DataLoader(dataset, batch_size=32, sampler=self.sampler)
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def begin_epoch(self, epoch):
        self.sampler.set_epoch(epoch)

    def fit(self, epochs):
        for epoch in range(epochs):
            self.begin_epoch(epoch)
            for x, y in self.loader:
                self.optimizer.zero_grad()
                self.model.loss(x, y).backward()
                self.optimizer.step()
""",
    # dev set: loader sampler set
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def get_loader(args, dataset):
    sampler = DistributedSampler(dataset)
    return DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)


def train_one_epoch(model, loader, optimizer, epoch):
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()


def main(args, model, dataset):
    loader = get_loader(args, dataset)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        loader.sampler.set_epoch(epoch)
        train_one_epoch(model, loader, optimizer, epoch)
""",
    # dev set: if distributed
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(args, model, train_dataset, criterion, optimizer):
    train_sampler = DistributedSampler(train_dataset) if args.distributed else None
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size, shuffle=(train_sampler is None),
                              sampler=train_sampler)
    for epoch in range(args.start_epoch, args.epochs):
        if args.distributed:
            train_sampler.set_epoch(epoch)
        for images, target in train_loader:
            loss = criterion(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""",
    # dev set: hasattr
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def __init__(self, model, dataset):
        self.model = model
        self.train_loader = DataLoader(dataset, batch_size=32, sampler=DistributedSampler(dataset))
        self.optimizer = torch.optim.Adam(model.parameters())

    def train_epoch(self, epoch):
        if hasattr(self.train_loader.sampler, "set_epoch"):
            self.train_loader.sampler.set_epoch(epoch)
        for x, y in self.train_loader:
            self.optimizer.zero_grad()
            self.model.loss(x, y).backward()
            self.optimizer.step()

    def fit(self, epochs):
        for epoch in range(epochs):
            self.train_epoch(epoch)
""",
    # dev set: tuple set
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def get_loader(args, dataset):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    return loader, sampler


def train_one_epoch(model, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        model.loss(x, y).backward()
        optimizer.step()


def main(args, model, dataset, optimizer):
    train_loader, train_sampler = get_loader(args, dataset)
    epoch = 0
    while epoch < args.epochs:
        train_sampler.set_epoch(epoch)
        train_one_epoch(model, train_loader, optimizer)
        epoch += 1
""",
    # dev set: set in helper self
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def __init__(self, model, dataset):
        self.model = model
        self.train_sampler = DistributedSampler(dataset, shuffle=True)
        self.train_loader = DataLoader(dataset, batch_size=32, sampler=self.train_sampler)
        self.optimizer = torch.optim.Adam(model.parameters())

    def _run_epoch(self, epoch):
        self.train_sampler.set_epoch(epoch)
        for x, y in self.train_loader:
            self.optimizer.zero_grad()
            self.model.loss(x, y).backward()
            self.optimizer.step()

    def train(self, epochs):
        epoch = 0
        while epoch < epochs:
            self._run_epoch(epoch)
            epoch += 1
""",
    # dev set: both set
    """
import torch
from torch.utils.data import DataLoader, DistributedSampler


def main(args, model, train_set, val_set):
    train_sampler = DistributedSampler(train_set, shuffle=True)
    val_sampler = DistributedSampler(val_set, shuffle=False)
    train_loader = DataLoader(train_set, batch_size=args.bs, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=args.bs, sampler=val_sampler)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        val_sampler.set_epoch(epoch)
        for x, y in train_loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
""",
    # dev set: sampler param
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, loader, sampler, optimizer, epoch):
    sampler.set_epoch(epoch)
    for x, y in loader:
        optimizer.zero_grad()
        model.loss(x, y).backward()
        optimizer.step()


def main(model, dataset, optimizer, epochs):
    train_sampler = DistributedSampler(dataset)
    train_loader = DataLoader(dataset, batch_size=32, sampler=train_sampler)
    for epoch in range(epochs):
        train(model, train_loader, train_sampler, optimizer, epoch)
""",
    # dev set: external train
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from engine import train_one_epoch, evaluate


def main(args, model, dataset_train, optimizer):
    sampler_train = DistributedSampler(dataset_train)
    data_loader_train = DataLoader(dataset_train, sampler=sampler_train, batch_size=args.batch_size, drop_last=True)
    for epoch in range(args.start_epoch, args.epochs):
        train_stats = train_one_epoch(model, data_loader_train, optimizer, epoch)
""",
    # dev set: eval only
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def evaluate_all(model, datasets):
    for name, ds in datasets.items():
        loader = DataLoader(ds, batch_size=64, sampler=DistributedSampler(ds))
        for epoch in range(3):
            with torch.no_grad():
                for x, y in loader:
                    model(x)
""",
    # dev set: shuffle false train
    """
import torch
from torch.utils.data import DataLoader
import torch.utils.data as data


def main(model, dataset, optimizer, epochs):
    sampler = data.distributed.DistributedSampler(dataset, shuffle=False)
    loader = data.DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            model.loss(x, y).backward()
            optimizer.step()
""",
    # dev set: set epoch via loader in loop
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def get_loaders(args, train_set, val_set):
    train_sampler = DistributedSampler(train_set)
    val_sampler = DistributedSampler(val_set, shuffle=False)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=args.batch_size, sampler=val_sampler)
    return train_loader, val_loader


def main(args, model, train_set, val_set, optimizer):
    train_loader, val_loader = get_loaders(args, train_set, val_set)
    for epoch in range(args.epochs):
        if isinstance(train_loader.sampler, DistributedSampler):
            train_loader.sampler.set_epoch(epoch)
        for x, y in train_loader:
            optimizer.zero_grad()
            model.loss(x, y).backward()
            optimizer.step()
""",
    # dev set: set epoch on other object
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(args, model, dataset, optimizer):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(args.epochs):
        loader.dataset.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            model.loss(x, y).backward()
            optimizer.step()
""",
    # dev set: inherited hook
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from mylib.trainer import BaseTrainer


class ClsTrainer(BaseTrainer):
    def __init__(self, model, dataset):
        super().__init__()
        self.model = model
        self.train_loader = DataLoader(dataset, batch_size=32, sampler=DistributedSampler(dataset))
        self.optimizer = torch.optim.Adam(model.parameters())

    def train(self, epochs):
        for epoch in range(epochs):
            self.before_epoch(epoch)
            for x, y in self.train_loader:
                self.optimizer.zero_grad()
                self.model.loss(x, y).backward()
                self.optimizer.step()
""",
    # dev set: param sampler set
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def create_dataloader(dataset, batch_size, sampler):
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)


def main(args, model, dataset, optimizer):
    sampler = DistributedSampler(dataset)
    loader = create_dataloader(dataset, args.batch_size, sampler)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            model.loss(x, y).backward()
            optimizer.step()
""",
    # dev set: subclass set
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class MultiEpochsDataLoader(DataLoader):
    pass


def main(args, model, dataset, optimizer):
    sampler = DistributedSampler(dataset)
    loader = MultiEpochsDataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    val_loader = MultiEpochsDataLoader(dataset, batch_size=args.batch_size, sampler=DistributedSampler(dataset, shuffle=False))
    for epoch in range(args.epochs):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            model.loss(x, y).backward()
            optimizer.step()
""",
    # dev set: val loader sampler but train too
    """
import torch
from torch.utils.data import DataLoader, DistributedSampler


def main(args, model, train_set, val_set, optimizer):
    train_loader = DataLoader(train_set, batch_size=8, sampler=DistributedSampler(train_set))
    val_loader = DataLoader(val_set, batch_size=8, sampler=DistributedSampler(val_set))
    for epoch in range(args.epochs):
        for loader in (train_loader, val_loader):
            loader.sampler.set_epoch(epoch)
        for x, y in train_loader:
            optimizer.zero_grad()
            model.loss(x, y).backward()
            optimizer.step()
""",
    # real code (hszhao/semseg): the train sampler is told the epoch; the val sampler (shuffling by
    # default) is not, but its loop only evaluates (a meter's update is no training)
    """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main_worker(args, model, optimizer, criterion, train_data, val_data):
    train_sampler = DistributedSampler(train_data) if args.distributed else None
    train_loader = DataLoader(train_data, batch_size=args.batch_size, shuffle=(train_sampler is None), sampler=train_sampler)
    val_sampler = DistributedSampler(val_data) if args.distributed else None
    val_loader = DataLoader(val_data, batch_size=args.batch_size_val, shuffle=False, sampler=val_sampler)
    for epoch in range(args.start_epoch, args.epochs):
        if args.distributed:
            train_sampler.set_epoch(epoch)
        train(train_loader, model, optimizer, criterion)
        validate(val_loader, model, criterion)


def train(train_loader, model, optimizer, criterion):
    model.train()
    for x, y in train_loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def validate(val_loader, model, criterion):
    loss_meter = AverageMeter()
    model.eval()
    for x, y in val_loader:
        loss = criterion(model(x), y)
        loss_meter.update(loss.item(), x.size(0))
    return loss_meter.avg
""",
    # batches drawn with next(iter(...)) each epoch, and the sampler told the epoch
    """
import torch
from torch.utils.data import DataLoader, DistributedSampler

sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    sampler.set_epoch(epoch)
    it = iter(loader)
    for step in range(100):
        x, y = next(it)
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
    # step-based: one iterator made before the loops, made again only when exhausted (no epoch loop)
    """
import torch
from torch.utils.data import DataLoader, DistributedSampler

sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
it = iter(loader)
for epoch in range(10):
    for step in range(100):
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(loader)
            x, y = next(it)
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
    # itertools.cycle made once: it replays the batches of its first pass, set_epoch would change nothing
    """
import itertools
import torch
from torch.utils.data import DataLoader, DistributedSampler

loader = DataLoader(dataset, batch_size=32, sampler=DistributedSampler(dataset))
batches = itertools.cycle(loader)
for epoch in range(10):
    for step in range(100):
        x, y = next(batches)
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
    # next(...) in an evaluation loop: nothing trains on those batches
    """
import torch
from torch.utils.data import DataLoader, DistributedSampler

val_loader = DataLoader(val_set, batch_size=64, sampler=DistributedSampler(val_set))
for epoch in range(10):
    train(model, optimizer, epoch)
    it = iter(val_loader)
    with torch.no_grad():
        for _ in range(20):
            x, y = next(it)
            correct += (model(x).argmax(1) == y).sum()
""",
    # a trainer given the loader and the sampler: it sets the epoch on what it was given
    """
import torch
from torch.utils.data import DataLoader, DistributedSampler


class Trainer:
    def __init__(self, model, loader, sampler):
        self.model = model
        self.loader = loader
        self.sampler = sampler
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def fit(self, epochs):
        for epoch in range(epochs):
            self.sampler.set_epoch(epoch)
            for x, y in self.loader:
                self.opt.zero_grad()
                self.model.loss(x, y).backward()
                self.opt.step()


def main(model, dataset):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    Trainer(model, loader, sampler).fit(10)
""",
    # a trainer given a dict of loaders sets the epoch through the loader it trains on
    """
import torch
from torch.utils.data import DataLoader, DistributedSampler


class Trainer(object):
    def __init__(self, model, data_loader, optimizer):
        self.model = model
        self.data_loader = data_loader
        self.optimizer = optimizer

    def run(self, epochs):
        for epoch in range(epochs):
            self.data_loader["train"].sampler.set_epoch(epoch)
            self._train_epoch()

    def _train_epoch(self):
        for x, y in self.data_loader["train"]:
            self.optimizer.zero_grad()
            self.model.loss(x, y).backward()
            self.optimizer.step()


def main(model, train_set, optimizer):
    data_loader = {"train": DataLoader(train_set, batch_size=8, sampler=DistributedSampler(train_set))}
    Trainer(model, data_loader, optimizer).run(10)
""",
    # the trainer's __init__ hands the loader to an engine the file does not show: it may set the epoch
    """
import torch
from torch.utils.data import DataLoader, DistributedSampler
from engine import Engine


class Trainer:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader
        self.engine = Engine(model, loader)
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def fit(self, epochs):
        for epoch in range(epochs):
            for x, y in self.loader:
                self.opt.zero_grad()
                self.model.loss(x, y).backward()
                self.opt.step()


def main(model, dataset):
    loader = DataLoader(dataset, batch_size=32, sampler=DistributedSampler(dataset))
    Trainer(model, loader).fit(10)
""",
    # the trainer's loader attribute is rebound elsewhere in the class: which loader it holds is unknown
    """
import torch
from torch.utils.data import DataLoader, DistributedSampler


class Trainer:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def use(self, loader):
        self.loader = make_loader(loader)

    def fit(self, epochs):
        for epoch in range(epochs):
            for x, y in self.loader:
                self.opt.zero_grad()
                self.model.loss(x, y).backward()
                self.opt.step()


def main(model, dataset):
    loader = DataLoader(dataset, batch_size=32, sampler=DistributedSampler(dataset))
    Trainer(model, loader).fit(10)
""",
    # an inherited hook with `epoch` in its name, called in the batch loop, may set the epoch
    """
import torch
from torch.utils.data import DataLoader, DistributedSampler
from base import BaseTrainer


class Trainer(BaseTrainer):
    def load(self):
        self.train_sampler = DistributedSampler(self.train_set)
        self.train_loader = DataLoader(self.train_set, batch_size=32, sampler=self.train_sampler)

    def train(self):
        for epoch in range(self.max_epochs):
            it = iter(self.train_loader)
            for i in range(len(self.train_loader)):
                batch = next(it)
                loss = self.model(batch).mean()
                self._backward(loss)
                self.maybe_end_epoch(i, epoch)
""",
]

INVALID = [
    # the classic: a DistributedSampler, an epoch loop, no set_epoch
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
        fixed="""
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    sampler.set_epoch(epoch)
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
    ),
    # shuffle=True explicitly, another import spelling, in a function
    Example(
        """
import torch
import torch.utils.data as tud

def main(model, dataset, epochs):
    optimizer = torch.optim.Adam(model.parameters())
    train_sampler = tud.distributed.DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True)
    train_loader = tud.DataLoader(dataset, batch_size=16, sampler=train_sampler)
    for ep in range(epochs):
        model.train()
        for i, (x, y) in enumerate(train_loader):
            loss = model.loss(x, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""",
        fixed="""
import torch
import torch.utils.data as tud

def main(model, dataset, epochs):
    optimizer = torch.optim.Adam(model.parameters())
    train_sampler = tud.distributed.DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True)
    train_loader = tud.DataLoader(dataset, batch_size=16, sampler=train_sampler)
    for ep in range(epochs):
        train_sampler.set_epoch(ep)
        model.train()
        for i, (x, y) in enumerate(train_loader):
            loss = model.loss(x, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""",
    ),
    # sampler only when distributed: the fix checks for None
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

train_sampler = DistributedSampler(train_set) if args.distributed else None
train_loader = DataLoader(train_set, batch_size=64, shuffle=(train_sampler is None), sampler=train_sampler)
for epoch in range(args.start_epoch, args.epochs):
    for images, target in train_loader:
        loss = criterion(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        fixed="""
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

train_sampler = DistributedSampler(train_set) if args.distributed else None
train_loader = DataLoader(train_set, batch_size=64, shuffle=(train_sampler is None), sampler=train_sampler)
for epoch in range(args.start_epoch, args.epochs):
    if train_sampler is not None:
        train_sampler.set_epoch(epoch)
    for images, target in train_loader:
        loss = criterion(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
    ),
    # the inner loop in a helper of the file called from the epoch loop
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

def train_one_epoch(model, loader, optimizer):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        model.loss(x, y).backward()
        optimizer.step()

def main(model, dataset, optimizer, epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=64, sampler=sampler)
    for epoch in range(epochs):
        train_one_epoch(model, loader, optimizer)
        evaluate(model)
""",
        fixed="""
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

def train_one_epoch(model, loader, optimizer):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        model.loss(x, y).backward()
        optimizer.step()

def main(model, dataset, optimizer, epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=64, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        train_one_epoch(model, loader, optimizer)
        evaluate(model)
""",
    ),
    # built inline: no name to call set_epoch on, no automatic fix
    Example(
        """
import torch
from torch.utils.data import DataLoader, DistributedSampler

loader = DataLoader(dataset, batch_size=32, sampler=DistributedSampler(dataset))
for epoch in range(10):
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
    ),
    # the loader built by a function of the file and returned with other things
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

def prepare_dataloaders(hparams):
    trainset = TextMelLoader(hparams.training_files)
    train_sampler = DistributedSampler(trainset) if hparams.distributed_run else None
    train_loader = DataLoader(trainset, num_workers=1, sampler=train_sampler, batch_size=hparams.batch_size)
    return train_loader, trainset

def train(hparams, model, optimizer):
    train_loader, trainset = prepare_dataloaders(hparams)
    for epoch in range(hparams.epochs):
        for i, batch in enumerate(train_loader):
            model.zero_grad()
            loss = criterion(model(batch), batch)
            loss.backward()
            optimizer.step()
""",
    ),
    # a trainer class holding sampler and loader on self
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

class Trainer:
    def __init__(self, model, dataset):
        self.model = model
        self.train_sampler = DistributedSampler(dataset)
        self.train_loader = DataLoader(dataset, batch_size=32, sampler=self.train_sampler)
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_epoch(self):
        for x, y in self.train_loader:
            self.optimizer.zero_grad()
            self.model.loss(x, y).backward()
            self.optimizer.step()

    def fit(self, epochs):
        for epoch in range(epochs):
            self.train_epoch()
""",
    ),
    # a step-based loop: the loader restarted in a while loop
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)
loader = DataLoader(dataset, batch_size=32, sampler=sampler, drop_last=True)
step = 0
while step < max_steps:
    for batch in loader:
        loss = model(batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        step += 1
""",
    ),
    # tqdm around the epochs and around the batches
    Example(
        """
import torch
from tqdm import tqdm
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in tqdm(range(10)):
    pbar = tqdm(loader, desc=f"epoch {epoch}")
    for x, y in pbar:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        pbar.set_postfix(loss=loss.item())
""",
        fixed="""
import torch
from tqdm import tqdm
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in tqdm(range(10)):
    sampler.set_epoch(epoch)
    pbar = tqdm(loader, desc=f"epoch {epoch}")
    for x, y in pbar:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        pbar.set_postfix(loss=loss.item())
""",
    ),
    # a RandomSampler in the other branch: reported, no automatic fix (it has no set_epoch)
    Example(
        """
import torch
from torch.utils.data import DataLoader, RandomSampler
from torch.utils.data.distributed import DistributedSampler

if args.local_rank == -1:
    train_sampler = RandomSampler(train_dataset)
else:
    train_sampler = DistributedSampler(train_dataset)
train_dataloader = DataLoader(train_dataset, sampler=train_sampler, batch_size=args.train_batch_size)
for _ in range(int(args.num_train_epochs)):
    for step, batch in enumerate(train_dataloader):
        loss = model(*batch)[0]
        loss.backward()
        optimizer.step()
        model.zero_grad()
""",
    ),
    # through a BatchSampler, trained in a helper of the file
    Example(
        """
import torch
from torch.utils.data import BatchSampler, DataLoader
from torch.utils.data.distributed import DistributedSampler

def train_one_epoch(net, optimizer, loader):
    for images, labels in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(net(images), labels).backward()
        optimizer.step()

def main(net, train_dataset, epochs):
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    train_sampler = DistributedSampler(train_dataset)
    train_batch_sampler = BatchSampler(train_sampler, 32, drop_last=True)
    train_loader = DataLoader(train_dataset, batch_sampler=train_batch_sampler)
    for epoch in range(epochs):
        train_one_epoch(net, optimizer, train_loader)
""",
        fixed="""
import torch
from torch.utils.data import BatchSampler, DataLoader
from torch.utils.data.distributed import DistributedSampler

def train_one_epoch(net, optimizer, loader):
    for images, labels in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(net(images), labels).backward()
        optimizer.step()

def main(net, train_dataset, epochs):
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    train_sampler = DistributedSampler(train_dataset)
    train_batch_sampler = BatchSampler(train_sampler, 32, drop_last=True)
    train_loader = DataLoader(train_dataset, batch_sampler=train_batch_sampler)
    for epoch in range(epochs):
        train_sampler.set_epoch(epoch)
        train_one_epoch(net, optimizer, train_loader)
""",
    ),
    # dev set: getloader tuple
    Example(
        """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def get_loader(args, dataset):
    sampler = DistributedSampler(dataset, num_replicas=dist.get_world_size(), rank=dist.get_rank())
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=4, pin_memory=True)
    return loader, sampler


def train_one_epoch(model, loader, optimizer, epoch):
    model.train()
    for step, (images, targets) in enumerate(loader):
        images, targets = images.cuda(non_blocking=True), targets.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(images), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            print(f"epoch {epoch} step {step} loss {loss.item():.3f}")


def main(args, model, dataset):
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    train_loader, train_sampler = get_loader(args, dataset)
    start_epoch = 0
    for epoch in range(start_epoch, args.epochs):
        train_one_epoch(model, train_loader, optimizer, epoch)
        torch.save(model.state_dict(), f"ckpt_{epoch}.pt")
""",
    ),
    # dev set: build dataloader alias
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler as DS


def build_dataloader(cfg, dataset, world_size, rank):
    sampler = DS(dataset, num_replicas=world_size, rank=rank, shuffle=True)
    return DataLoader(dataset, batch_size=cfg.batch_size, sampler=sampler, drop_last=True)


def main(cfg, model, dataset, world_size, rank):
    loader = build_dataloader(cfg, dataset, world_size, rank)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    for epoch in range(cfg.max_epochs):
        model.train()
        for batch in loader:
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        if rank == 0:
            torch.save(model.state_dict(), "last.pt")
""",
    ),
    # dev set: trainer fit
    Example(
        """
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def get_loader(args, dataset):
    sampler = DistributedSampler(dataset)
    return DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=args.workers)


class Trainer:
    def __init__(self, args, model, dataset):
        self.args = args
        self.model = model
        self.train_loader = get_loader(args, dataset)
        self.optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    def train_epoch(self, epoch):
        self.model.train()
        total = 0.0
        for x, y in self.train_loader:
            self.optimizer.zero_grad()
            loss = F.mse_loss(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            total += loss.item()
        return total / len(self.train_loader)

    def fit(self):
        for epoch in range(self.args.epochs):
            avg = self.train_epoch(epoch)
            print(epoch, avg)
""",
    ),
    # dev set: while epoch
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def run(model, dataset, optimizer, max_epochs, rank, world_size):
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)
    loader = DataLoader(dataset, batch_size=64, sampler=sampler)
    epoch = 0
    while epoch < max_epochs:
        for inputs, labels in loader:
            outputs = model(inputs)
            loss = torch.nn.functional.nll_loss(outputs, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        epoch += 1
""",
    ),
    # dev set: torch qualified
    Example(
        """
import torch
import torch.nn as nn


def main(args, model, train_dataset):
    criterion = nn.CrossEntropyLoss().cuda()
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum)
    if args.distributed:
        train_sampler = torch.utils.data.DistributedSampler(train_dataset)
    else:
        train_sampler = None
    train_loader = torch.utils.data.DataLoader(
        train_dataset, batch_size=args.batch_size, shuffle=(train_sampler is None),
        num_workers=args.workers, pin_memory=True, sampler=train_sampler)
    for epoch in range(args.start_epoch, args.epochs):
        train(train_loader, model, criterion, optimizer, epoch, args)


def train(train_loader, model, criterion, optimizer, epoch, args):
    model.train()
    for i, (images, target) in enumerate(train_loader):
        images = images.cuda(args.gpu, non_blocking=True)
        target = target.cuda(args.gpu, non_blocking=True)
        output = model(images)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        fixed="""
import torch
import torch.nn as nn


def main(args, model, train_dataset):
    criterion = nn.CrossEntropyLoss().cuda()
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum)
    if args.distributed:
        train_sampler = torch.utils.data.DistributedSampler(train_dataset)
    else:
        train_sampler = None
    train_loader = torch.utils.data.DataLoader(
        train_dataset, batch_size=args.batch_size, shuffle=(train_sampler is None),
        num_workers=args.workers, pin_memory=True, sampler=train_sampler)
    for epoch in range(args.start_epoch, args.epochs):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        train(train_loader, model, criterion, optimizer, epoch, args)


def train(train_loader, model, criterion, optimizer, epoch, args):
    model.train()
    for i, (images, target) in enumerate(train_loader):
        images = images.cuda(args.gpu, non_blocking=True)
        target = target.cuda(args.gpu, non_blocking=True)
        output = model(images)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
    ),
    # dev set: data alias
    Example(
        """
import torch
import torch.utils.data as data


def main(model, dataset, optimizer, epochs, rank, world):
    sampler = data.distributed.DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True)
    loader = data.DataLoader(dataset, batch_size=32, sampler=sampler, num_workers=2)
    for epoch in range(1, epochs + 1):
        model.train()
        for batch_idx, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
""",
        fixed="""
import torch
import torch.utils.data as data


def main(model, dataset, optimizer, epochs, rank, world):
    sampler = data.distributed.DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True)
    loader = data.DataLoader(dataset, batch_size=32, sampler=sampler, num_workers=2)
    for epoch in range(1, epochs + 1):
        sampler.set_epoch(epoch)
        model.train()
        for batch_idx, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
""",
    ),
    # dev set: val only
    Example(
        """
import torch
from torch.utils.data import DataLoader, DistributedSampler


def main(args, model, train_set, val_set):
    train_sampler = DistributedSampler(train_set, shuffle=True)
    val_sampler = DistributedSampler(val_set, shuffle=False)
    train_loader = DataLoader(train_set, batch_size=args.bs, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=args.bs, sampler=val_sampler)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        val_sampler.set_epoch(epoch)
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            for x, y in val_loader:
                acc = (model(x).argmax(1) == y).float().mean()
""",
        fixed="""
import torch
from torch.utils.data import DataLoader, DistributedSampler


def main(args, model, train_set, val_set):
    train_sampler = DistributedSampler(train_set, shuffle=True)
    val_sampler = DistributedSampler(val_set, shuffle=False)
    train_loader = DataLoader(train_set, batch_size=args.bs, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=args.bs, sampler=val_sampler)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        val_sampler.set_epoch(epoch)
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            for x, y in val_loader:
                acc = (model(x).argmax(1) == y).float().mean()
""",
    ),
    # dev set: global train fn
    Example(
        """
import argparse
import torch
import torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data.distributed import DistributedSampler

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
args = parser.parse_args()
dist.init_process_group("nccl")
train_dataset = make_dataset()
train_sampler = DistributedSampler(train_dataset)
train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=128, sampler=train_sampler)
model = Net().cuda()
optimizer = torch.optim.Adam(model.parameters())


def train(epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.cuda(), target.cuda()
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()


for epoch in range(1, args.epochs + 1):
    train(epoch)
""",
        fixed="""
import argparse
import torch
import torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data.distributed import DistributedSampler

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
args = parser.parse_args()
dist.init_process_group("nccl")
train_dataset = make_dataset()
train_sampler = DistributedSampler(train_dataset)
train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=128, sampler=train_sampler)
model = Net().cuda()
optimizer = torch.optim.Adam(model.parameters())


def train(epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.cuda(), target.cuda()
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()


for epoch in range(1, args.epochs + 1):
    train_sampler.set_epoch(epoch)
    train(epoch)
""",
    ),
    # dev set: trainer methods
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def __init__(self, cfg, model, train_set):
        self.cfg = cfg
        self.model = model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
        self._build_loaders(train_set)

    def _build_loaders(self, train_set):
        self.train_sampler = DistributedSampler(train_set, shuffle=True, seed=self.cfg.seed)
        self.train_loader = DataLoader(train_set, batch_size=self.cfg.batch_size, sampler=self.train_sampler,
                                       num_workers=8, pin_memory=True, drop_last=True)

    def _run_epoch(self, epoch):
        self.model.train()
        for it, batch in enumerate(self.train_loader):
            loss = self.model(batch)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()

    def train(self):
        for epoch in range(self.cfg.start_epoch, self.cfg.epochs):
            self._run_epoch(epoch)
            self._save(epoch)

    def _save(self, epoch):
        torch.save({"model": self.model.state_dict(), "epoch": epoch}, "ckpt.pt")
""",
    ),
    # dev set: return loader direct inline
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def make_train_loader(dataset, batch_size, rank, world_size):
    return DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=DistributedSampler(dataset, num_replicas=world_size, rank=rank),
        num_workers=4,
    )


def worker(rank, world_size, model, dataset, epochs):
    loader = make_train_loader(dataset, 32, rank, world_size)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for ep in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            loss = ((model(xb) - yb) ** 2).mean()
            loss.backward()
            opt.step()
""",
    ),
    # dev set: three tuple
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def build_loaders(args, train_set, val_set):
    train_sampler = DistributedSampler(train_set)
    val_sampler = DistributedSampler(val_set, shuffle=False)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=args.batch_size, sampler=val_sampler)
    return train_loader, val_loader, train_sampler


def train_epoch(model, loader, optimizer, scaler):
    model.train()
    for x, y in loader:
        with torch.autocast("cuda"):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


def main(args, model, train_set, val_set):
    train_loader, val_loader, train_sampler = build_loaders(args, train_set, val_set)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    scaler = torch.cuda.amp.GradScaler()
    for epoch in range(args.epochs):
        train_epoch(model, train_loader, optimizer, scaler)
""",
    ),
    # dev set: val sampler set tuple
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Runner:
    def __init__(self, model, train_set, val_set, epochs):
        self.model = model
        self.epochs = epochs
        self.train_sampler = DistributedSampler(train_set)
        self.val_sampler = DistributedSampler(val_set)
        self.train_loader = DataLoader(train_set, batch_size=16, sampler=self.train_sampler)
        self.val_loader = DataLoader(val_set, batch_size=16, sampler=self.val_sampler)
        self.optimizer = torch.optim.Adam(model.parameters())

    def fit(self):
        for epoch in range(self.epochs):
            self.val_sampler.set_epoch(epoch)
            for x, y in self.train_loader:
                self.optimizer.zero_grad()
                self.model.loss(x, y).backward()
                self.optimizer.step()
            self.validate()

    @torch.no_grad()
    def validate(self):
        for x, y in self.val_loader:
            self.model(x)
""",
    ),
    # dev set: method returns loader
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Experiment:
    def __init__(self, cfg, model, datasets):
        self.cfg = cfg
        self.model = model
        self.datasets = datasets
        self.train_loader = self.build_dataloader("train")
        self.opt = torch.optim.SGD(model.parameters(), lr=cfg.lr)

    def build_dataloader(self, split):
        ds = self.datasets[split]
        sampler = DistributedSampler(ds, shuffle=True)
        return DataLoader(ds, batch_size=self.cfg.batch_size, sampler=sampler, num_workers=4)

    def train_one_epoch(self, epoch):
        self.model.train()
        for step, (x, y) in enumerate(self.train_loader):
            loss = torch.nn.functional.cross_entropy(self.model(x), y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()

    def run(self):
        for epoch in range(self.cfg.epochs):
            self.train_one_epoch(epoch)
""",
    ),
    # dev set: sampler param loader fn
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def create_dataloader(dataset, batch_size, sampler):
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=2, pin_memory=True)


def main(args, model, dataset):
    sampler = DistributedSampler(dataset, num_replicas=args.world_size, rank=args.rank)
    loader = create_dataloader(dataset, args.batch_size, sampler)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
""",
        fixed="""
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def create_dataloader(dataset, batch_size, sampler):
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=2, pin_memory=True)


def main(args, model, dataset):
    sampler = DistributedSampler(dataset, num_replicas=args.world_size, rank=args.rank)
    loader = create_dataloader(dataset, args.batch_size, sampler)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
""",
    ),
    # dev set: trainer instance
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def train_epoch(self, loader, epoch):
        self.model.train()
        for x, y in loader:
            self.optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(self.model(x), y)
            loss.backward()
            self.optimizer.step()


def main(args, model, dataset):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1))
    for epoch in range(args.epochs):
        trainer.train_epoch(loader, epoch)
""",
        fixed="""
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def train_epoch(self, loader, epoch):
        self.model.train()
        for x, y in loader:
            self.optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(self.model(x), y)
            loss.backward()
            self.optimizer.step()


def main(args, model, dataset):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1))
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        trainer.train_epoch(loader, epoch)
""",
    ),
    # dev set: closure
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(rank, world_size, model, dataset, epochs):
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def train_epoch():
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()

    for epoch in range(epochs):
        train_epoch()
""",
        fixed="""
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(rank, world_size, model, dataset, epochs):
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def train_epoch():
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()

    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        train_epoch()
""",
    ),
    # dev set: loader subclass
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class MultiEpochsDataLoader(DataLoader):
    pass


def main(args, model, dataset, optimizer):
    sampler = DistributedSampler(dataset)
    loader = MultiEpochsDataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=8)
    for epoch in range(args.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            model.loss(x, y).backward()
            optimizer.step()
""",
        fixed="""
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class MultiEpochsDataLoader(DataLoader):
    pass


def main(args, model, dataset, optimizer):
    sampler = DistributedSampler(dataset)
    loader = MultiEpochsDataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=8)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            model.loss(x, y).backward()
            optimizer.step()
""",
    ),
    # dev set: two streams drawn with iter/next, only one sampler told the epoch
    Example(
        """
import torch
from torch.utils.data import DataLoader, DistributedSampler


def main(model, opt, labeled_set, unlabeled_set, steps=1024):
    labeled_sampler = DistributedSampler(labeled_set, shuffle=True)
    unlabeled_sampler = DistributedSampler(unlabeled_set, shuffle=True)
    labeled_loader = DataLoader(labeled_set, batch_size=64, sampler=labeled_sampler)
    unlabeled_loader = DataLoader(unlabeled_set, batch_size=448, sampler=unlabeled_sampler)
    epoch = 0
    while epoch < 100:
        unlabeled_sampler.set_epoch(epoch)
        l_iter, u_iter = iter(labeled_loader), iter(unlabeled_loader)
        for _ in range(steps):
            try:
                x_l, y_l = next(l_iter)
            except StopIteration:
                l_iter = iter(labeled_loader)
                x_l, y_l = next(l_iter)
            x_u, _ = next(u_iter)
            loss = model.loss(x_l, y_l, x_u)
            opt.zero_grad()
            loss.backward()
            opt.step()
        epoch += 1
""",
    ),
    # an iterator made each epoch, batches drawn with next() in the step loop
    Example(
        """
import torch
from torch.utils.data import DataLoader, DistributedSampler

sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    it = iter(loader)
    for step in range(len(loader)):
        x, y = next(it)
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
        fixed="""
import torch
from torch.utils.data import DataLoader, DistributedSampler

sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    sampler.set_epoch(epoch)
    it = iter(loader)
    for step in range(len(loader)):
        x, y = next(it)
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
    ),
    # next() under gradient accumulation: the pass is per epoch, not per accumulation loop
    Example(
        """
import torch
from torch.utils.data import DataLoader, DistributedSampler

sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    batches = iter(loader)
    for step in range(len(loader) // 4):
        optimizer.zero_grad()
        for _ in range(4):
            x, y = next(batches)
            (loss_fn(model(x), y) / 4).backward()
        optimizer.step()
""",
        fixed="""
import torch
from torch.utils.data import DataLoader, DistributedSampler

sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    sampler.set_epoch(epoch)
    batches = iter(loader)
    for step in range(len(loader) // 4):
        optimizer.zero_grad()
        for _ in range(4):
            x, y = next(batches)
            (loss_fn(model(x), y) / 4).backward()
        optimizer.step()
""",
    ),
    # itertools.cycle made each epoch: its first pass is a fresh pass over the loader
    Example(
        """
from itertools import cycle
import torch
from torch.utils.data import DataLoader, DistributedSampler

sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    stream = cycle(loader)
    for step in range(500):
        x, y = next(stream)
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
        fixed="""
from itertools import cycle
import torch
from torch.utils.data import DataLoader, DistributedSampler

sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    sampler.set_epoch(epoch)
    stream = cycle(loader)
    for step in range(500):
        x, y = next(stream)
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
    ),
    # next(iter(loader)) in the step loop: a fresh pass per step, the same order every epoch
    Example(
        """
import torch
from torch.utils.data import DataLoader, DistributedSampler

sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    for step in range(100):
        x, y = next(iter(loader))
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
        fixed="""
import torch
from torch.utils.data import DataLoader, DistributedSampler

sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    sampler.set_epoch(epoch)
    for step in range(100):
        x, y = next(iter(loader))
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
    ),
    # fairchem: the sampler on self, built in another method; next() in the step loop; the
    # trainer's inherited per-step methods (self._backward, self.save) do not set the epoch
    Example(
        """
import torch
from torch.utils.data import DataLoader, DistributedSampler
from base import BaseTrainer


class ForcesTrainer(BaseTrainer):
    def load_task(self):
        self.train_sampler = DistributedSampler(self.train_dataset, shuffle=True)
        self.train_loader = DataLoader(self.train_dataset, batch_size=32, sampler=self.train_sampler)

    def train(self):
        for epoch in range(self.start_epoch, self.max_epochs):
            train_loader_iter = iter(self.train_loader)
            for i in range(len(self.train_loader)):
                self.model.train()
                batch = next(train_loader_iter)
                loss = self._compute_loss(self._forward(batch), batch)
                self._backward(loss)
                if i % 100 == 0:
                    self.save(epoch, i)

    def _forward(self, batch):
        return self.model(batch)

    def _compute_loss(self, out, batch):
        return (out - batch.y).pow(2).mean()
""",
    ),
    # pytorch/examples: the loader handed to a Trainer of the file, kept as self.train_data
    Example(
        """
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def __init__(self, model, train_data, optimizer, gpu_id):
        self.gpu_id = gpu_id
        self.model = model.to(gpu_id)
        self.train_data = train_data
        self.optimizer = optimizer

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        loss = F.cross_entropy(self.model(source), targets)
        loss.backward()
        self.optimizer.step()

    def _run_epoch(self, epoch):
        for source, targets in self.train_data:
            self._run_batch(source.to(self.gpu_id), targets.to(self.gpu_id))

    def train(self, max_epochs):
        for epoch in range(max_epochs):
            self._run_epoch(epoch)


def prepare_dataloader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, pin_memory=True, shuffle=False, sampler=DistributedSampler(dataset))


def main(rank, dataset, model, optimizer, total_epochs, batch_size):
    train_data = prepare_dataloader(dataset, batch_size)
    trainer = Trainer(model, train_data, optimizer, rank)
    trainer.train(total_epochs)
""",
    ),
    # ParallelWaveGAN: samplers bound by `a, b = None, None` then built under a flag; a dict of
    # loaders handed to a Trainer by keyword, whose `while True` loop runs an epoch per pass
    Example(
        """
import torch
from torch.utils.data import DataLoader


class Trainer(object):
    def __init__(self, steps, data_loader, model, optimizer, config):
        self.steps = steps
        self.data_loader = data_loader
        self.model = model
        self.optimizer = optimizer
        self.config = config
        self.finish_train = False

    def run(self):
        while True:
            self._train_epoch()
            if self.finish_train:
                break

    def _train_step(self, batch):
        loss = self.model(*batch).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.steps += 1

    def _train_epoch(self):
        for batch in self.data_loader["train"]:
            self._train_step(batch)
            if self.steps >= self.config["train_max_steps"]:
                self.finish_train = True
                return


def main(args, config, dataset, model, optimizer):
    train_sampler, dev_sampler = None, None
    if args.distributed:
        from torch.utils.data.distributed import DistributedSampler
        train_sampler = DistributedSampler(dataset=dataset["train"], shuffle=True)
        dev_sampler = DistributedSampler(dataset=dataset["dev"], shuffle=False)
    data_loader = {
        "train": DataLoader(dataset=dataset["train"], shuffle=not args.distributed, sampler=train_sampler),
        "dev": DataLoader(dataset=dataset["dev"], shuffle=False, sampler=dev_sampler),
    }
    trainer = Trainer(steps=0, data_loader=data_loader, model=model, optimizer=optimizer, config=config)
    trainer.run()
""",
    ),
    # samplers bound by `a, b = None, None` first: the fix guards the call
    Example(
        """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(args, model, train_set, optimizer):
    train_sampler, val_sampler = None, None
    if args.distributed:
        train_sampler = DistributedSampler(train_set)
    loader = DataLoader(train_set, batch_size=32, shuffle=train_sampler is None, sampler=train_sampler)
    for epoch in range(args.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            model.loss(x, y).backward()
            optimizer.step()
""",
        fixed="""
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(args, model, train_set, optimizer):
    train_sampler, val_sampler = None, None
    if args.distributed:
        train_sampler = DistributedSampler(train_set)
    loader = DataLoader(train_set, batch_size=32, shuffle=train_sampler is None, sampler=train_sampler)
    for epoch in range(args.epochs):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            model.loss(x, y).backward()
            optimizer.step()
""",
    ),
]
