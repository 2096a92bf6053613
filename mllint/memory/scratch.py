"""Allocator-level memory: what kernels allocate inside one op, measured, not guessed.

The tensor-level replay counts every storage an op returns. An allocator holds more: a kernel
may allocate scratch inside itself and free it before it returns (oneDNN's convolution reorder
buffers and RNN workspaces, a contiguous copy of a strided operand inside a matmul's backward),
which no tracker of tensors sees. Here each distinct op call of the replay (the op, the shape,
stride, dtype and storage of every tensor argument, the other arguments) is run once for real on
the CPU, on tensors of the same layout, under ``torch.profiler``'s memory events, which record
every allocation and free of the CPU allocator. The highest point of the allocator's running
total inside the call (outputs included) is that call's *in-op peak*; the allocator-level peak of
the step is the largest ``live tensors before the call + in-op peak`` over all calls.

A call whose tensors (arguments and outputs) exceed ``MAX_REAL_BYTES`` is not run at its real
size: the fake replay runs again at two smaller batch sizes, the calls are matched by their
order among the calls of the same op, and the in-op peaks measured there are extended linearly to the real batch
(`allocator_peak`); a call that cannot be matched is left unmeasured (counted in the report). Results are
cached on disk by signature, torch version and CPU capability (oneDNN picks kernels by the CPU's
instruction set), so a second estimate of the same model measures nothing.

`AllocatorProbe` is the measurement side: the same memory events over a real step give the CPU
allocator's own peak (``--measure``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch.utils._pytree import tree_flatten, tree_map, tree_map_only

MiB = 1 << 20
MAX_REAL_BYTES = 128 * MiB  # arguments and outputs of one call run for real; larger: at smaller batches
CACHE_VERSION = 1


@dataclass(frozen=True)
class TensorSpec:
    """The layout of a tensor argument: enough to build a real tensor that a kernel treats the same."""

    shape: Tuple[int, ...]
    stride: Tuple[int, ...]
    offset: int
    storage: int  # elements in the storage
    dtype: torch.dtype

    @property
    def nbytes(self) -> int:
        return self.storage * self.dtype.itemsize

    def key(self) -> str:
        return f"T({self.shape},{self.stride},{self.offset},{self.storage},{self.dtype})"

    def real(self, device: str = "cpu") -> "torch.Tensor":
        fill = torch.ones if (self.dtype.is_floating_point or self.dtype.is_complex) else torch.zeros
        base = fill((max(self.storage, 1),), dtype=self.dtype, device=device)
        return base.as_strided(self.shape, self.stride, self.offset)


class Unbuildable(str):
    """A tensor argument no real copy can be made of here (sparse, nested, a subclass): the call
    is left unmeasured."""


def spec_of(value: Any) -> Any:
    """`value` with every tensor replaced by its TensorSpec (lists, tuples, dicts kept)."""
    return tree_map_only(torch.Tensor, _spec, value)


def _spec(value: "torch.Tensor") -> Any:
    if value.layout != torch.strided or value.is_nested or value.is_quantized:
        return Unbuildable(f"<{value.layout} {value.dtype} tensor>")
    try:
        storage = value.untyped_storage().nbytes() // max(value.element_size(), 1)
    except (RuntimeError, NotImplementedError, TypeError):
        storage = value.numel()
    return TensorSpec(tuple(value.shape), tuple(value.stride()), int(value.storage_offset()), int(storage), value.dtype)


def _key(value: Any) -> str:
    if isinstance(value, TensorSpec):
        return value.key()
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_key(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_key(v)}" for k, v in sorted(value.items())) + "}"
    return repr(value)


def _real(value: Any, device: str = "cpu") -> Any:
    """`value` with every TensorSpec built as a real tensor on `device` (and devices moved there)."""

    def build(leaf: Any) -> Any:
        if isinstance(leaf, TensorSpec):
            return leaf.real(device)
        if isinstance(leaf, Unbuildable):
            raise TypeError(f"cannot build {leaf}")
        if isinstance(leaf, torch.device) and device != "cpu":
            return torch.device(device)
        return leaf

    return tree_map(build, value)


def _specs(value: Any) -> List[TensorSpec]:
    return [leaf for leaf in tree_flatten(value)[0] if isinstance(leaf, TensorSpec)]


@dataclass
class Call:
    """One distinct op call: the op and its arguments as specs."""

    func: Any
    args: tuple
    kwargs: dict
    key: str
    out_bytes: int = 0  # what its outputs took in the replay (a real run allocates them too)

    @property
    def name(self) -> str:
        return str(self.func)

    @property
    def nbytes(self) -> int:
        """Bytes a real run of the call needs: its tensor arguments and its outputs."""
        return sum(s.nbytes for s in _specs(self.args) + _specs(self.kwargs)) + self.out_bytes


def call_of(func, args, kwargs) -> Call:
    a, k = spec_of(tuple(args)), {name: spec_of(v) for name, v in (kwargs or {}).items()}
    return Call(func, a, k, f"{func}|{_key(a)}|{_key(k)}")


# --- the CPU allocator's running total, from the profiler's memory events ---------------------


@contextlib.contextmanager
def _quiet_stderr():
    """Kineto writes a line to the process's stderr (fd 2) each time the profiler starts and
    stops ("USDT: ... profiler_start"), whatever its log level says: hidden while it does."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError, AttributeError):
        yield
        return
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


class AllocatorProbe:
    """``with AllocatorProbe() as probe: ...``, then ``probe.peak()``: the highest point the CPU
    allocator's running total reached inside the block, above where it stood at the start
    (allocations made before the block and freed inside it count as negative)."""

    def __init__(self) -> None:
        self._profile = None
        self.events: List[Tuple[int, int, int]] = []  # (time ns, order, bytes: + allocated, - freed)
        self.ranges: Dict[str, Tuple[int, int]] = {}  # record_function label -> (start ns, end ns)

    def __enter__(self) -> "AllocatorProbe":
        from torch.profiler import ProfilerActivity, profile

        self._profile = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
        with _quiet_stderr():
            self._profile.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        profile = self._profile
        with _quiet_stderr():
            profile.__exit__(*exc)
        results = profile.profiler.kineto_results if profile.profiler is not None else None
        if results is None:
            return
        for order, event in enumerate(results.events()):
            name = event.name()
            if name == "[memory]":
                if str(event.device_type()).endswith("CPU"):
                    self.events.append((event.start_ns(), order, int(event.nbytes())))
            elif name.startswith("mllint.scratch."):
                self.ranges[name] = (event.start_ns(), event.end_ns())
        self.events.sort()

    def peak(self, start: Optional[int] = None, end: Optional[int] = None) -> int:
        """The highest running total (from 0) over the events between `start` and `end` (ns)."""
        total = best = 0
        for when, _order, nbytes in self.events:
            if start is not None and when < start:
                continue
            if end is not None and when > end:
                break
            total += nbytes
            best = max(best, total)
        return best

    @staticmethod
    def mark(label: str):
        """A range of the profile named `label`; ``ranges["mllint.scratch." + label]`` after the probe."""
        return torch.profiler.record_function(f"mllint.scratch.{label}")

    def held_peak(self, label: str) -> Optional[int]:
        """The highest the running total since the probe started reached inside the range
        `label`: what the allocator held at its peak there, of all that was allocated since the
        probe started (everything a step uses, when the probe starts before the model is built)."""
        span = self.ranges.get(f"mllint.scratch.{label}")
        if span is None:
            return None
        total = 0
        best = None
        for when, _order, nbytes in self.events:
            if when > span[1]:
                break
            total += nbytes
            if when >= span[0]:
                best = total if best is None else max(best, total)
        return total if best is None else best


def measure_calls(calls: List[Call], device: str = "cpu") -> Dict[str, Optional[int]]:
    """The in-op peak of each call, run once on real tensors (None: it raised). On CUDA from the
    caching allocator's own peak statistics around each call (not run on this machine: no GPU)."""
    if device != "cpu":
        return _measure_calls_cuda(calls, device)
    out: Dict[str, Optional[int]] = {}
    prepared = []
    for index, call in enumerate(calls):
        prepared.append((f"mllint.scratch.{index}", call))
    with torch.no_grad(), AllocatorProbe() as probe:
        for label, call in prepared:
            try:
                args, kwargs = _real(call.args), {k: _real(v) for k, v in call.kwargs.items()}
            except (RuntimeError, ValueError, TypeError, MemoryError):
                out[call.key] = None
                continue
            result = None
            try:
                # once to warm up, then measured: a kernel's first call may also fill caches that
                # outlive it (oneDNN's primitive cache), which are no part of this call's scratch
                result = call.func(*args, **kwargs)
                result = None
                with torch.profiler.record_function(label):
                    result = call.func(*args, **kwargs)
            except Exception:  # a kernel that needs real values (or fails on ones): left unmeasured
                out[call.key] = None
            del result, args, kwargs
    for label, call in prepared:
        if call.key in out:
            continue
        span = probe.ranges.get(label)
        out[call.key] = probe.peak(*span) if span is not None else None
    return out


def _measure_calls_cuda(calls: List[Call], device: str) -> Dict[str, Optional[int]]:
    out: Dict[str, Optional[int]] = {}
    cuda = torch.cuda
    with torch.no_grad():
        for call in calls:
            try:
                args, kwargs = _real(call.args, device), {k: _real(v, device) for k, v in call.kwargs.items()}
                cuda.synchronize(device)
                base = cuda.memory_allocated(device)
                cuda.reset_peak_memory_stats(device)
                result = call.func(*args, **kwargs)
                cuda.synchronize(device)
                out[call.key] = max(0, cuda.max_memory_allocated(device) - base)
                del result, args, kwargs
            except Exception:  # a CPU-only kernel, or one that needs real values
                out[call.key] = None
    return out


# --- the cache -----------------------------------------------------------------------------------


def _cache_path(device: str = "cpu") -> Optional[Path]:
    if os.environ.get("MLLINT_NO_CACHE"):
        return None
    base = os.environ.get("MLLINT_MEMORY_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "mllint")
    capability = ""
    try:
        if device == "cpu":
            capability = torch.backends.cpu.get_cpu_capability()
        else:
            capability = torch.cuda.get_device_name(device) + f"|{torch.version.cuda}|{torch.backends.cudnn.version()}"
    except (AttributeError, RuntimeError, AssertionError):
        pass
    tag = hashlib.sha256(f"{CACHE_VERSION}|{torch.__version__}|{device}|{capability}|{torch.get_num_threads()}".encode()).hexdigest()[:16]
    return Path(base) / f"scratch-{tag}.json"


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:24]


class ScratchCache:
    """In-op peaks by call signature, kept in one JSON file per torch version and CPU."""

    def __init__(self, path: Optional[Path]) -> None:
        self.path = path
        self.data: Dict[str, Optional[int]] = {}
        self.dirty = False
        if path is not None:
            try:
                loaded = json.loads(path.read_text())
                if isinstance(loaded, dict):
                    self.data = {k: v for k, v in loaded.items() if v is None or isinstance(v, int)}
            except (OSError, ValueError):
                pass

    def get(self, key: str):
        return self.data.get(_digest(key), "missing")

    def put(self, key: str, value: Optional[int]) -> None:
        if " at 0x" in key:
            return  # an argument shown by its address (an opaque object): no stable signature
        self.data[_digest(key)] = value
        self.dirty = True

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, tmp = tempfile.mkstemp(dir=str(self.path.parent), suffix=".tmp")
            with os.fdopen(handle, "w") as out:
                json.dump(self.data, out)
            os.replace(tmp, self.path)
        except OSError:
            pass  # a cache that cannot be written only costs time


# --- the allocator-level peak of a replay ----------------------------------------------------------


@dataclass
class AllocatorPeak:
    peak: int = 0  # bytes: the highest ``live tensors + in-op peak`` over the step
    phase: str = ""
    op: Optional[str] = None  # the op at that peak (None: the tensor-level peak is the highest)
    scratch_ops: List[Tuple[str, int, int]] = field(default_factory=list)  # (op, largest scratch, calls)
    signatures: int = 0
    measured: int = 0  # measured now (the rest came from the cache)
    extrapolated: int = 0
    unmeasured: int = 0
    how: str = ""


def in_op_peaks(calls: List[Call], cache: ScratchCache, device: str = "cpu") -> Tuple[Dict[str, Optional[int]], int]:
    """In-op peak of each call, from the cache or measured now (None: it could not be run);
    and how many were measured now."""
    peaks: Dict[str, Optional[int]] = {}
    todo: List[Call] = []
    for call in calls:
        cached = cache.get(call.key)
        if cached != "missing":
            peaks[call.key] = cached
        elif call.key not in peaks:
            peaks[call.key] = None
            todo.append(call)
    if todo:
        for key, value in measure_calls(todo, device).items():
            peaks[key] = value
            cache.put(key, value)
    return peaks, len(todo)


def allocator_peak(run, device: str = "cpu", rerun: Optional[Callable[[int], Any]] = None) -> AllocatorPeak:
    """The allocator-level peak of a fake replay (a RunResult with ``op_log``/``op_calls``).

    Calls whose tensors exceed MAX_REAL_BYTES are not run at the real size: the replay is run
    again (fake) at two smaller batch sizes (`rerun(batch)`), the op calls are matched by their
    order among the calls of the same op (`_from_smaller_batches`), those smaller calls are
    measured and the in-op peak is extended linearly in batch. Without that (no batch, an op called a
    different number of times, still too large) the call counts without scratch and the report
    says how many."""
    calls: Dict[str, Call] = run.op_calls or {}
    log = run.op_log or []
    cache = ScratchCache(_cache_path(device))
    small = [c for c in calls.values() if c.nbytes <= MAX_REAL_BYTES]
    large = [c for c in calls.values() if c.nbytes > MAX_REAL_BYTES]
    peaks, measured = in_op_peaks(small, cache, device)
    extrapolated = 0
    for call in large:
        cached = cache.get(call.key)
        if cached != "missing":
            peaks[call.key] = cached
    pending = [c for c in large if c.key not in peaks]
    if pending and rerun is not None and run.batch:
        found, now = _from_smaller_batches(run, pending, rerun, cache, device)
        measured += now
        for key, value in found.items():
            peaks[key] = value
            cache.put(key, value)
            extrapolated += 1
    cache.save()
    unmeasured = sum(1 for key in calls if peaks.get(key) is None)
    out = AllocatorPeak(run.peak, run.peak_phase, None, signatures=len(calls), measured=measured,
                        extrapolated=extrapolated, unmeasured=unmeasured)
    scratch: Dict[str, List[int]] = {}
    for key, before, after, phase in log:
        inside = peaks.get(key)
        if inside is None:
            continue
        top = before + inside
        hidden = top - after
        name = calls[key].name
        if hidden > 0:
            entry = scratch.setdefault(name, [0, 0])
            entry[0] = max(entry[0], hidden)
            entry[1] += 1
        if top > out.peak:
            out.peak, out.phase, out.op = top, phase.split("/")[0], name
    out.scratch_ops = sorted(((n, b, c) for n, (b, c) in scratch.items()), key=lambda t: -t[1])
    out.how = (f"predicted: every distinct op call of the replay run once on real {device.upper()} tensors of the "
               "same layout, measured by " + ("torch.profiler memory events" if device == "cpu" else
                                              "the caching allocator's peak statistics")
               + " (cached by signature); its in-op peak added to the live tensors before it"
               + ("; calls too large to run were measured at smaller batches and extended linearly"
                  if extrapolated else ""))
    return out


def _from_smaller_batches(run, pending: List[Call], rerun, cache: ScratchCache, device: str):
    """In-op peaks of the `pending` (too large) calls of `run`, from two fake replays at smaller
    batches that call each op as often: {key: bytes} for those it could match; and how many
    calls were measured now."""
    batch = run.batch
    worst = max(c.nbytes for c in pending)
    # batch 1 is avoided: code often takes another path for it (squeezed dimensions)
    b2 = min(batch // 2, max(4, batch * MAX_REAL_BYTES // worst))
    b1 = b2 // 2
    if b1 < 2 or b2 >= batch:
        return {}, 0
    try:
        one, two = rerun(b1), rerun(b2)
    except Exception:  # the TARGET cannot run at that batch: leave those calls unmeasured
        return {}, 0
    if one.batch != b1 or two.batch != b2:
        return {}, 0
    # The k-th call of an op at the real batch is the k-th call of that op at a smaller one, when
    # each run calls it as often (ops that only look at metadata may come and go between runs).
    def by_op(r) -> Dict[str, List[str]]:
        out: Dict[str, List[str]] = {}
        for key, _, _, _ in r.op_log:
            out.setdefault(r.op_calls[key].name, []).append(key)
        return out

    full, small1, small2 = by_op(run), by_op(one), by_op(two)
    pairs = []
    for call in pending:
        keys = full.get(call.name, [])
        k1, k2 = small1.get(call.name, []), small2.get(call.name, [])
        if not (len(keys) == len(k1) == len(k2)):
            continue
        index = keys.index(call.key)
        c1, c2 = one.op_calls[k1[index]], two.op_calls[k2[index]]
        if c2.nbytes <= 4 * MAX_REAL_BYTES:
            pairs.append((call, c1, c2))
    peaks, measured = in_op_peaks([c for _, c1, c2 in pairs for c in (c1, c2)], cache, device)
    out: Dict[str, int] = {}
    for call, c1, c2 in pairs:
        p1, p2 = peaks.get(c1.key), peaks.get(c2.key)
        if p1 is not None and p2 is not None:
            out[call.key] = max(0, round(p2 + (p2 - p1) * (batch - b2) / (b2 - b1)))
    return out, measured
