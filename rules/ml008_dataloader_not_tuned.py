"""A DataLoader feeding CUDA training with no worker processes or without pinned memory.

Why it matters
    With ``num_workers`` missing or 0 the main process loads and collates every batch
    itself, between training steps, while the GPU waits. Without ``pin_memory=True``
    each batch sits in pageable host memory: copying it to the GPU goes through an extra
    staging copy, and ``.to(device, non_blocking=True)`` cannot overlap with compute. For
    a loader whose batches are moved to CUDA in a training loop, both usually cost
    throughput. The rule is off by default (``--select ML008`` or ``extend-select``):
    whether workers help depends on the dataset (an in-memory ``TensorDataset`` gains
    little), and a CPU run cannot show the effect (so there is no runnable fixture).

When the code is fine
    - a setting that comes from a variable or the configuration (``num_workers=args.workers``,
      ``pin_memory=cfg.pin``) is the author's choice and is never reported (the other one,
      when missing, still is); with ``**loader_kwargs`` nothing is reported;
    - the loader's batches are never moved to CUDA in a training loop (CPU training,
      evaluation loaders, loaders whose batches stay on the host); ``.to(device)`` counts
      only when ``device`` is derived from ``"cuda"`` in the file;
    - the loader is built by a helper and the loop over it is not in the file.

How to fix
    Pass ``num_workers=<a few, e.g. 4>`` (or a value from the configuration) and
    ``pin_memory=True``, and move batches with ``.to(device, non_blocking=True)``. No
    automatic fix: the right number of workers depends on the machine, and worker
    processes need the dataset to be picklable and the script guarded by
    ``if __name__ == "__main__":`` on some platforms.
"""

from __future__ import annotations

from typing import Iterable, Optional, Tuple

import libcst as cst

from mllint.findings import Finding
from mllint.semantics import hotloop
from mllint.semantics.model import FileModel
from mllint.semantics.names import shorten

CODE = "ML008"
NAME = "dataloader-not-tuned"
MESSAGE = "a DataLoader feeding CUDA training has no workers or unpinned memory"
TRIGGERS = ("DataLoader",)
REQUIRES = ("cuda",)
DEFAULT_ENABLED = False
FRAMEWORK = "torch"  # left out for files of another framework (mllint/frameworks.py)
FIX = None


# DataLoaders that are torch's (or subclass it and pass num_workers/pin_memory through).
_LOADERS = frozenset({
    "torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader", "monai.data.DataLoader",
    "monai.data.dataloader.DataLoader", "torch_geometric.loader.DataLoader", "torch_geometric.data.DataLoader",
    "torch_frame.data.DataLoader",
})


def _is_dataloader(model: FileModel, call: cst.Call) -> bool:
    qual = model.imports.qualname(call.func) or ""
    return qual in _LOADERS or (qual.endswith(".DataLoader") and qual.startswith("torch."))


def _settings(call: cst.Call) -> Optional[Tuple[bool, bool]]:
    """(no workers, not pinned) for a DataLoader call: each true when the setting is missing
    or a literal 0/False; a setting from a variable (``num_workers=args.workers``) is the
    author's choice and is not reported. None for ``**kwargs`` or settings passed positionally."""
    workers = pinned = None
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is None:
            if index >= 5:
                return None  # DataLoader(ds, bs, shuffle, sampler, batch_sampler, num_workers, ...)
            continue
        key = arg.keyword.value
        if key == "num_workers":
            workers = arg.value
        elif key == "pin_memory":
            pinned = arg.value
    no_workers = workers is None or (isinstance(workers, cst.Integer) and workers.value == "0")
    unpinned = pinned is None or (isinstance(pinned, cst.Name) and pinned.value == "False")
    # A setting read from a variable or the configuration is the author's choice: not reported.
    return no_workers, unpinned


def _bound_name(model: FileModel, call: cst.Call, scope: str) -> Optional[str]:
    for targets, value, ctx in model.assignments:
        if value is call and ctx.scope == scope and len(targets) == 1:
            return targets[0]
    return None


def check(model: FileModel) -> Iterable[Finding]:
    training = set(id(loop.node) for loop in hotloop.training_loops(model))
    if not training:
        return
    for call, ctx in model.calls:
        if not _is_dataloader(model, call):
            continue
        settings = _settings(call)
        if settings is None or not any(settings):
            continue
        name = _bound_name(model, call, ctx.scope)
        if name is None:
            continue
        mover = None
        for loop in hotloop.loops_over(model, name, ctx.scope):
            if id(loop.node) in training:
                mover = hotloop.moves_to_cuda(model, loop)
                if mover is not None:
                    break
        if mover is None:
            continue
        no_workers, unpinned = settings
        short = shorten(name, 24)
        moved = shorten(model.code_of(mover), 50)
        if no_workers:
            message = f"`{short}` feeds CUDA training from the main process: pass `num_workers=` (e.g. 4)"
            detail = (
                f"The batches of `{name}` are moved to the GPU in a training loop (`{moved}`), but with num_workers "
                "missing or 0 the main process loads and collates every batch between steps while the GPU waits. "
                "Set the workers to what the machine has (or read them from the configuration)."
            )
            yield model.finding(call, CODE, NAME, message, None, detail)
        if unpinned:
            message = f"`{short}` feeds CUDA training from pageable memory: pass `pin_memory=True`"
            detail = (
                f"The batches of `{name}` are moved to the GPU in a training loop (`{moved}`), but without "
                "pin_memory=True each batch is copied through a staging buffer and a non_blocking copy cannot "
                "overlap with compute."
            )
            yield model.finding(call, CODE, NAME, message, None, detail)


VALID = [
    # both tuned with literals
    """
    import torch
    from torch.utils.data import DataLoader

    device = torch.device("cuda")
    loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=4, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    """,
    # settings from the command line
    """
    import torch
    from torch.utils.data import DataLoader

    def main(args):
        train_loader = DataLoader(dataset, batch_size=args.batch_size, num_workers=args.workers, pin_memory=args.pin)
        for images, target in train_loader:
            images, target = images.cuda(), target.cuda()
            loss = criterion(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    """,
    # settings from a dict of keyword arguments
    """
    import torch
    import torch.utils.data

    kwargs = {"num_workers": 1, "pin_memory": True} if use_cuda else {}
    train_loader = torch.utils.data.DataLoader(train_ds, batch_size=64, shuffle=True, **kwargs)
    for data, target in train_loader:
        data, target = data.cuda(), target.cuda()
        loss = F.nll_loss(model(data), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    """,
    # CPU training: pinning and workers for a GPU copy do not apply
    """
    import torch
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, batch_size=32, shuffle=True)
    device = torch.device("cpu")
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(torch.cuda.is_available())
    """,
    # an evaluation loader: no training step in its loop
    """
    import torch
    from torch.utils.data import DataLoader

    val_loader = DataLoader(val_ds, batch_size=256)
    with torch.no_grad():
        for x, y in val_loader:
            preds = model(x.cuda()).argmax(1)
            correct += (preds == y.cuda()).sum()
    """,
    # the device is a parameter of unknown origin
    """
    import torch
    from torch.utils.data import DataLoader

    def train(model, ds, optimizer, device):
        loader = DataLoader(ds, batch_size=16, shuffle=True)
        for x, y in loader:
            loss = model(x.to(device), y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    x = torch.zeros(1).cuda()
    """,
    # workers from a variable, pinned explicitly
    """
    import torch
    from torch.utils.data import DataLoader

    NUM_WORKERS = min(8, os.cpu_count())
    loader = DataLoader(ds, batch_size=128, num_workers=NUM_WORKERS, pin_memory=True)
    for x, y in loader:
        loss = crit(net(x.cuda()), y.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
    """,
    # batches stay on the host: the model runs on the CPU although the file mentions cuda
    """
    import torch
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, batch_size=8)
    for x, y in loader:
        loss = crit(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.cuda.empty_cache()
    """,
    # a loader returned by a factory: its settings are not visible here
    """
    import torch

    loader = build_loader(cfg)
    for x, y in loader:
        loss = crit(net(x.cuda()), y.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
    """,
    # a non-torch DataLoader of the same name
    """
    from mylib.data import DataLoader

    loader = DataLoader(files, batch_size=8)
    for x, y in loader:
        loss = crit(net(x.cuda()), y.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
    """,
]

INVALID = [
    # neither workers nor pinned memory, batches moved with .cuda()
    """
    import torch
    from torch.utils.data import DataLoader

    train_loader = DataLoader(train_set, batch_size=128, shuffle=True)
    for epoch in range(10):
        for images, labels in train_loader:
            images, labels = images.cuda(), labels.cuda()
            loss = criterion(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    """,
    # num_workers=0 explicitly, device derived from cuda
    """
    import torch
    import torch.utils.data as data

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = data.DataLoader(ds, batch_size=32, shuffle=True, num_workers=0, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    """,
    # workers but no pinned memory
    """
    import torch
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=8)
    for batch in loader:
        batch = batch.to("cuda")
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    """,
    # the loader is passed to a training function that moves batches to the device
    """
    import torch
    from torch.utils.data import DataLoader

    def train(model, loader, optimizer, device):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    def main():
        device = torch.device("cuda:0")
        train_loader = DataLoader(train_ds, batch_size=64, shuffle=True)
        train(model, train_loader, optimizer, device)
    """,
    # pin_memory=False explicitly, with workers
    """
    import torch
    from torch.utils.data import DataLoader

    dl = DataLoader(ds, batch_size=16, num_workers=2, pin_memory=False)
    for step, (x, y) in enumerate(dl):
        out = net(x.cuda(non_blocking=True))
        loss = crit(out, y.cuda(non_blocking=True))
        loss.backward()
        opt.step()
        opt.zero_grad()
    """,
    # a method of a trainer, self.device built from cuda
    """
    import torch
    from torch.utils.data import DataLoader

    class Trainer:
        def __init__(self, model, ds):
            self.device = torch.device("cuda")
            self.model = model.to(self.device)
            self.ds = ds

        def fit(self, optimizer):
            loader = DataLoader(self.ds, batch_size=32, shuffle=True)
            for x, y in loader:
                x, y = x.to(self.device), y.to(self.device)
                loss = self.model(x, y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """,
    # enumerate and tqdm around the loader
    """
    import torch
    from torch.utils.data import DataLoader
    from tqdm import tqdm

    train_dl = DataLoader(dataset, batch_size=4, shuffle=True, num_workers=0)
    for i, batch in enumerate(tqdm(train_dl)):
        input_ids = batch["input_ids"].cuda()
        loss = model(input_ids, labels=input_ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    """,
    # device from argparse default "cuda"
    """
    import argparse
    import torch
    from torch.utils.data import DataLoader

    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    loader = DataLoader(ds, batch_size=64, shuffle=True)
    for x, y in loader:
        x, y = x.to(args.device), y.to(args.device)
        loss = crit(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    """,
    # a while loop over an iterator of the loader is not followed; a for loop over it is
    """
    import torch
    from torch.utils.data import DataLoader

    loader = DataLoader(ds, batch_size=64, drop_last=True)
    for step, (src, tgt) in enumerate(loader):
        src, tgt = src.cuda(), tgt.cuda()
        scaler.scale(criterion(model(src), tgt)).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
    """,
    # the torch module spelled out
    """
    import torch

    loader = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True, pin_memory=True)
    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    """,
    # workers from the configuration (the author's choice, not reported), pinned memory missing
    """
    import torch
    from torch.utils.data import DataLoader

    class Trainer:
        def __init__(self, config):
            self.config = config
            self.device = torch.cuda.current_device()

        def train(self, model, optimizer, data):
            loader = DataLoader(data, batch_size=self.config.batch_size, num_workers=self.config.num_workers)
            for x, y in loader:
                x, y = x.to(self.device), y.to(self.device)
                loss = model(x, y)
                model.zero_grad()
                loss.backward()
                optimizer.step()
    """,
]
