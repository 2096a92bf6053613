"""A tensor-level tracker of live storages: the bytes held by tensors at each moment and their peak.

It is a ``TorchDispatchMode``: every op's tensor outputs are looked at, and each storage not seen
before is counted until it is freed (a weak reference to the storage's Python object, which torch
keeps alive exactly as long as the storage). Storages that exist before tracking starts (model
parameters, data) are added with ``track()``. The same tracker runs on real tensors (the verifier's
CPU memory evidence, the estimator's measurements) and under ``FakeTensorMode`` (the estimator's
prediction), so both count the same thing the same way.

Subclasses hook ``on_alloc`` / ``on_free`` to attribute bytes (categories, phases, modules).
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Dict, Iterable, List, Tuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


def storage_of(tensor: "torch.Tensor"):
    """The untyped storage of a tensor, or None for tensors without one (sparse, nested, ...)."""
    try:
        return tensor.untyped_storage()
    except (RuntimeError, NotImplementedError, TypeError):
        return None


class LiveTensorTracker(TorchDispatchMode):
    """Counts bytes of live storages. ``current`` and ``peak`` are in bytes; ``allocations`` counts
    storages first seen as op outputs (fresh allocations) and ``allocated_bytes`` their sizes."""

    def __init__(self) -> None:
        super().__init__()
        self.current = 0
        self.peak = 0
        self.allocations = 0
        self.allocated_bytes = 0
        # id(storage) -> (weak reference, bytes counted, tag)
        self._live: Dict[int, Tuple[weakref.ref, int, object]] = {}

    # --- hooks for subclasses ------------------------------------------------------------

    def tag_for(self, storage, nbytes: int, func) -> object:
        """What to remember with a new storage (a category, a module name); None by default."""
        return None

    def on_alloc(self, nbytes: int, tag: object) -> None:
        pass

    def on_free(self, nbytes: int, tag: object) -> None:
        pass

    def on_peak(self) -> None:
        """Called whenever ``peak`` rises."""

    # --- bookkeeping -----------------------------------------------------------------------

    def track(self, tensors: Iterable["torch.Tensor"], tag: object = None) -> None:
        """Count storages that existed before tracking (parameters, buffers, inputs)."""
        for tensor in tensors:
            if isinstance(tensor, torch.Tensor):
                self._add(storage_of(tensor), tag, None)

    def tracked(self, tensor: "torch.Tensor") -> bool:
        storage = storage_of(tensor)
        return storage is not None and id(storage) in self._live

    def tag_of(self, tensor: "torch.Tensor") -> object:
        storage = storage_of(tensor)
        entry = self._live.get(id(storage)) if storage is not None else None
        return entry[2] if entry else None

    def retag(self, tensor: "torch.Tensor", tag: object) -> None:
        """Move a live storage to another tag (e.g. a saved activation that becomes a gradient)."""
        storage = storage_of(tensor)
        if storage is None or id(storage) not in self._live:
            return
        ref, nbytes, old = self._live[id(storage)]
        if old == tag:
            return
        self.on_free(nbytes, old)
        self._live[id(storage)] = (ref, nbytes, tag)
        self.on_alloc(nbytes, tag)

    def _add(self, storage, tag: object, func) -> bool:
        if storage is None:
            return False
        key = id(storage)
        nbytes = int(storage.nbytes())
        entry = self._live.get(key)
        if entry is not None:
            ref, counted, old_tag = entry
            if ref() is storage:
                if nbytes != counted:  # resized in place (out= ops, resize_)
                    self._live[key] = (ref, nbytes, old_tag)
                    self._change(nbytes - counted, old_tag)
                return False
        if func is not None:
            tag = self.tag_for(storage, nbytes, func)
        try:
            ref = weakref.ref(storage, self._freed_callback(key))
        except TypeError:
            return False
        self._live[key] = (ref, nbytes, tag)
        self._change(nbytes, tag)
        return True

    def _change(self, delta: int, tag: object) -> None:
        self.current += delta
        if delta >= 0:
            self.on_alloc(delta, tag)
        else:
            self.on_free(-delta, tag)
        if self.current > self.peak:
            self.peak = self.current
            self.on_peak()

    def _freed_callback(self, key: int) -> Callable[[weakref.ref], None]:
        def freed(ref: weakref.ref) -> None:
            entry = self._live.get(key)
            if entry is None or entry[0] is not ref:
                return
            del self._live[key]
            self.current -= entry[1]
            self.on_free(entry[1], entry[2])

        return freed

    def reset_peak(self) -> None:
        self.peak = self.current

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in tree_flatten(out)[0]:
            if isinstance(tensor, torch.Tensor):
                if self._add(storage_of(tensor), None, func):
                    self.allocations += 1
                    self.allocated_bytes += self._live[id(storage_of(tensor))][1]
        return out


def tensors_in(value: Any, depth: int = 0) -> List["torch.Tensor"]:
    """Tensors in a model output or an input structure (tensors, lists, tuples, dicts, dataclasses)."""
    if depth > 20:
        return []
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_in(v, depth + 1)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_in(v, depth + 1)]
    fields = getattr(value, "__dataclass_fields__", None)
    if fields:
        return [t for name in fields for t in tensors_in(getattr(value, name, None), depth + 1)]
    return []
