"""The estimator: a FakeTensorMode replay, the fallback to small real runs when fake tensors cannot
run the model, the CUDA range, and the batch-size search for ``--gpu-memory``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from mllint.config import ConfigError

from .replay import CATEGORIES, PhasePeak, RunResult, StepError, replay
from .target import Settings, Target, describe_exception

MiB = 1 << 20
GiB = 1 << 30


@dataclass
class CudaTerm:
    name: str
    low: int
    high: int
    note: str
    counted_in: str  # "allocated", "reserved" or "process"


@dataclass
class CudaModel:
    allocated: Tuple[int, int]  # predicted torch.cuda.max_memory_allocated
    reserved: Tuple[int, int]  # predicted torch.cuda.max_memory_reserved
    total: Tuple[int, int]  # what the process holds on the GPU (nvidia-smi)
    terms: List[CudaTerm]


@dataclass
class Estimate:
    settings: Settings
    run: RunResult
    method: str  # "fake", "real", "extrapolated"
    notes: List[str] = field(default_factory=list)
    fallback_reason: Optional[str] = None
    fallback_batches: Tuple[int, ...] = ()
    cuda: Optional[CudaModel] = None
    seconds: float = 0.0


def cuda_model(run: RunResult, settings: Settings) -> CudaModel:
    """The CUDA range on top of the tensor-level peak. Terms (each listed in the report):

    - 512-B block rounding: the caching allocator rounds every block up to 512 B, and
      ``max_memory_allocated`` counts rounded blocks (computed from the replay's allocations);
    - cuBLAS workspaces: allocated through the caching allocator, one per handle (the forward thread
      and autograd's backward thread each use one in training): ~8 MiB each before Hopper, 32 MiB on
      Hopper (``CUBLAS_WORKSPACE_CONFIG`` changes it);
    - segment rounding: blocks under 1 MiB come from 2 MiB segments, 1-10 MiB from 20 MiB segments,
      larger ones are rounded to 2 MiB (computed from the storages live at the peak);
    - fragmentation: reserved minus allocated beyond segment rounding, 0-15% of the peak (reports in
      pytorch#40989 are 10-15%; less with ``expandable_segments``);
    - the CUDA context (driver, kernels): 300 MiB-2 GiB depending on GPU, CUDA version and lazy
      loading; not seen by torch's allocator statistics, seen by nvidia-smi.
    """
    peak = run.peak
    rounding = max(0, run.rounded_peak - run.peak)
    handles = 2 if settings.mode == "train" else 1
    cublas = CudaTerm("cuBLAS workspace", handles * (8 * MiB + 128 * 1024), handles * 32 * MiB,
                      f"{handles} handle{'s' if handles > 1 else ''} (forward{' + backward thread' if handles > 1 else ''}); "
                      "~8 MiB each, 32 MiB on Hopper", "allocated")
    small = sum(n for n in run.peak_live_sizes if 0 < n <= MiB)
    medium = sum(n for n in run.peak_live_sizes if MiB < n < 10 * MiB)
    large_overhead = sum(-(-n // (2 * MiB)) * 2 * MiB - n for n in run.peak_live_sizes if n >= 10 * MiB)
    segments = (-(-small // (2 * MiB)) * 2 * MiB - small) + (-(-medium // (20 * MiB)) * 20 * MiB - medium) + large_overhead
    frag_high = int(0.15 * peak)
    terms = [
        CudaTerm("allocator rounding (512 B blocks)", rounding, rounding,
                 "every tensor rounded up to a multiple of 512 B", "allocated"),
        cublas,
        CudaTerm("segment rounding (2 MiB / 20 MiB segments)", segments, segments,
                 "small blocks share 2 MiB segments, 1-10 MiB blocks 20 MiB ones, larger round to 2 MiB",
                 "reserved"),
        CudaTerm("fragmentation margin", 0, frag_high, "reserved minus allocated: 0-15% of the peak", "reserved"),
        CudaTerm("CUDA context", 300 * MiB, 2 * GiB,
                 "driver and kernels; 300 MiB-2 GiB by GPU, CUDA version and lazy loading", "process"),
    ]
    alloc = (peak + rounding + cublas.low, peak + rounding + cublas.high)
    reserved = (alloc[0] + segments, alloc[1] + segments + frag_high)
    total = (reserved[0] + 300 * MiB, reserved[1] + 2 * GiB)
    return CudaModel(alloc, reserved, total, terms)


def _lerp(a: int, b: int, xa: int, xb: int, x: int) -> int:
    if xb == xa:
        return b
    return max(0, int(round(a + (b - a) * (x - xa) / (xb - xa))))


def extrapolate(r1: RunResult, r2: RunResult, batch: int) -> RunResult:
    """Extend two real runs at batches b1 < b2 linearly to `batch`: each phase's peak and breakdown
    separately (the phase holding the peak can change with the batch), then the largest."""
    b1, b2 = r1.batch, r2.batch
    out = RunResult(r2.mode, batch, False, loss=r2.loss)
    for name in ("parameters_bytes", "parameter_tensors", "n_params", "trainable_params", "buffers_bytes",
                 "gradients_bytes", "optimizer_bytes", "optimizer_tensors"):
        setattr(out, name, getattr(r2, name))
    out.optimizer_state_names = list(r2.optimizer_state_names)
    for name in ("inputs_bytes", "other_bytes", "activations_bytes", "rounded_peak"):
        setattr(out, name, _lerp(getattr(r1, name), getattr(r2, name), b1, b2, batch))
    first = {(p.phase, p.step): p for p in r1.phases}
    for p2 in r2.phases:
        p1 = first.get((p2.phase, p2.step), p2)
        breakdown = {c: _lerp(p1.breakdown.get(c, 0), p2.breakdown.get(c, 0), b1, b2, batch) for c in CATEGORIES}
        for c in ("parameters", "buffers", "optimizer"):
            breakdown[c] = p2.breakdown.get(c, 0)
        out.phases.append(PhasePeak(p2.phase, p2.step, sum(breakdown.values()), breakdown))
    best = max(out.phases, key=lambda p: p.peak)
    out.peak, out.peak_phase, out.peak_step, out.breakdown = best.peak, best.phase, best.step, best.breakdown
    out.rounded_peak = max(out.rounded_peak, out.peak)
    out.modules = {m: _lerp(r1.modules.get(m, 0), v, b1, b2, batch) for m, v in r2.modules.items()}
    scale = batch / b2 if b2 else 1.0
    out.peak_live_sizes = [int(n * scale) for n in r2.peak_live_sizes]
    if r1.allocator is not None and r2.allocator is not None:
        from .scratch import AllocatorPeak

        peak = max(out.peak, _lerp(r1.allocator.peak, r2.allocator.peak, b1, b2, batch))
        out.allocator = AllocatorPeak(peak, how=f"extrapolated linearly in batch from the CPU allocator's peaks "
                                                f"measured in the real runs at batch {b1} and {b2}")
    return out


REAL_RUN_CAP = 1 << 30  # at most 1 GiB of tensors for a real fallback run at the full batch


def real_run_limit() -> int:
    """How large a real fallback run at the full batch may be: 1 GiB, or a quarter of the memory
    available now when that is less."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return min(REAL_RUN_CAP, int(line.split()[1]) * 1024 // 4)
    except (OSError, ValueError, IndexError):
        pass
    return REAL_RUN_CAP


class Estimator:
    """Estimates for one TARGET and settings, at any batch size."""

    def __init__(self, target: Target, settings: Settings, progress: Optional[Callable[[str], None]] = None,
                 allocator: bool = True) -> None:
        self.target = target
        self.settings = settings
        # Told what is being done (a terminal status line).
        self.progress = progress or (lambda text: None)
        self.stage = ""
        self.foreach = True if settings.device == "cuda" and settings.mode == "train" else None
        # the allocator level is measured by running ops on the device modelled (scratch.py): CPU,
        # or a GPU when this machine has one
        self.allocator = None
        if allocator:
            import torch

            if settings.device == "cpu":
                self.allocator = "cpu"
            elif settings.device == "cuda" and torch.cuda.is_available():
                self.allocator = "cuda"
        self._fallback: Optional[Tuple[RunResult, RunResult, str]] = None

    def at(self, batch: Optional[int], stage: str = "") -> Estimate:
        """The estimate at `batch`; `stage` prefixes what the progress line says (a --gpu-memory probe)."""
        started = time.perf_counter()
        self.stage = stage
        if self._fallback is None:
            try:
                at = f"batch {batch}" if batch is not None else "TARGET's batch"
                self.progress(f"{self.stage}fake-tensor replay of the {self.settings.mode} step at {at}")
                run = self._fake(batch)
                if self.allocator is not None:
                    from .scratch import allocator_peak

                    self.progress(f"{self.stage}allocator level: running each distinct op once at {at}")
                    run.allocator = allocator_peak(run, self.allocator, self._fake)
                    run.op_log = run.op_calls = None
                est = Estimate(self.settings, run, "fake", notes=list(run.notes))
            except StepError as exc:
                est = self._real_fallback(batch, exc)
        else:
            est = self._from_fallback(batch)
        if self.settings.device == "cuda":
            est.cuda = cuda_model(est.run, self.settings)
        est.seconds = time.perf_counter() - started
        return est

    def _fake(self, batch: Optional[int]) -> RunResult:
        """The FakeTensorMode replay at `batch` (every op call logged when the allocator level is wanted)."""
        return replay(self.target, self.settings, batch, fake=True, foreach=self.foreach,
                      allocator=self.allocator is not None)

    # --- fallback: real runs at small batches ----------------------------------------------------

    def _real_fallback(self, batch: Optional[int], fake_error: StepError) -> Estimate:
        reason = describe_exception(fake_error.exc)
        where = fake_error.phase
        # Is it the TARGET's own error? Run it for real at a small batch to find out.
        full = batch
        # Reduced batches: B/8 and B/4 (at least 2 and 4): larger samples than 2 and 4 make the
        # extrapolation less sensitive to data-dependent sizes that vary from batch to batch.
        probe_batch = 2 if (full is None or full > 2) else full
        if full is not None and full >= 32:
            probe_batch = full // 8
        try:
            small = self._real(probe_batch)
        except StepError as exc:
            # The same error where the fake replay raised it: the fake one's message, which has the
            # user's batch size (the real run's has the probe's).
            same = type(exc.exc) is type(fake_error.exc) and exc.phase == fake_error.phase
            raise ConfigError(f"TARGET `{self.target.text}` raised {fake_error if same else exc}") from None
        if small.batch is None:
            raise ConfigError(f"TARGET `{self.target.text}`: fake tensors cannot run it ({reason}) and its "
                              "inputs have no batch dimension to extrapolate over")
        full = full if full is not None else (small.natural_batch or small.batch)
        if full <= 4:
            run = small if small.batch == full else self._real(full)
            est = Estimate(self.settings, run, "real", fallback_reason=f"{reason} (during {where})",
                           fallback_batches=(full,))
            est.notes.append(f"fake tensors could not run the model ({reason}, during {where}); measured with real "
                             f"tensors at batch {full} instead (this used real memory)")
            return est
        if probe_batch == 2 and full >= 32:
            small = self._real(full // 8)
        larger = self._real(max(4, 2 * small.batch))
        self._fallback = (small, larger, f"{reason} (during {where})")
        return self._from_fallback(full)

    def _real(self, batch: Optional[int]) -> RunResult:
        """A real run at `batch` on this CPU (the fallback); it measures the allocator too for a CPU estimate."""
        at = f"batch {batch}" if batch is not None else "TARGET's batch"
        self.progress(f"{self.stage}real run of the {self.settings.mode} step at {at} (fake tensors cannot "
                      "run this model)")
        return replay(self.target, self.settings, batch, fake=False, foreach=self.foreach,
                      allocator=self.allocator == "cpu")

    def _from_fallback(self, batch: Optional[int]) -> Estimate:
        small, larger, reason = self._fallback
        batch = batch if batch is not None else (small.natural_batch or larger.batch)
        run = extrapolate(small, larger, batch)
        limit = real_run_limit()
        if run.peak <= limit:
            # Small enough to run for real at this very batch: measured, not extrapolated (activations
            # that depend on the data, e.g. masked token counts, do not scale linearly in batch).
            try:
                measured = self._real(batch)
            except StepError:
                measured = None
            if measured is not None:
                est = Estimate(self.settings, measured, "real", fallback_reason=reason, fallback_batches=(batch,))
                est.notes.append(f"fake tensors could not run the model ({reason}); measured with real tensors at "
                                 f"batch {batch} instead (extrapolation predicted {run.peak:,} B, under the "
                                 f"{limit:,} B limit for real runs; this used real memory)")
                return est
        est = Estimate(self.settings, run, "extrapolated", fallback_reason=reason,
                       fallback_batches=(small.batch, larger.batch))
        est.notes.append(f"fake tensors could not run the model ({reason}); the estimate is a linear "
                         f"extrapolation in batch from real runs at batch {small.batch} and {larger.batch} "
                         "(this used real memory of the model's size; activations that depend on data values "
                         "are taken as they were in those runs)")
        return est


@dataclass
class BatchSearch:
    budget: int
    largest: int  # 0: not even batch 1 fits
    capped: bool
    probes: List[Tuple[int, int, bool]]  # (batch, high estimate, fits)
    estimate: Optional[Estimate]  # at the largest batch that fits


def search_batch(estimator: Estimator, budget: int, cap: int = 1 << 16) -> BatchSearch:
    """The largest batch whose estimate (the high end of the CUDA range when modelling CUDA, the
    tensor peak otherwise) fits `budget`: exponential search up, then binary search; every probe is a
    replay at that batch size."""
    probes: List[Tuple[int, int, bool]] = []
    cache: Dict[int, Estimate] = {}

    def fits(batch: int) -> bool:
        largest = max((b for b, _, ok in probes if ok), default=0)
        fitting = f"{largest} fits, " if largest else ""
        est = estimator.at(batch, stage=f"--gpu-memory: {fitting}trying batch {batch}: ")
        cache[batch] = est
        need = est.cuda.total[1] if est.cuda is not None else est.run.peak
        ok = need <= budget
        probes.append((batch, need, ok))
        return ok

    if not fits(1):
        return BatchSearch(budget, 0, False, probes, None)
    lo, hi = 1, 2
    while hi <= cap and fits(hi):
        lo, hi = hi, hi * 2
    if hi > cap:
        return BatchSearch(budget, lo, True, probes, cache[lo])
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return BatchSearch(budget, lo, False, probes, cache[lo])
