"""One small interface over the device code runs on, so that timing and memory logic is written
once for CPU and CUDA.

- ``Device.timed()`` measures a region: on CPU with ``perf_counter_ns``; on CUDA with a pair of CUDA
  events recorded on the current stream and a ``synchronize()`` before reading them (the host
  clock alone would measure kernel launches, not kernels).
- ``Device.reset_peak()`` / ``Device.allocator_peak()``: the caching allocator's peak statistics on
  CUDA (``max_memory_allocated`` / ``max_memory_reserved``). CPU has no such counters, so callers
  use ``mllint.runtime.tracker.LiveTensorTracker`` there (RSS differences are wrong by tens of
  percent, see shared/research/memory-and-verification.md).

The CUDA paths cannot run on the machine this was written on (no GPU); they are kept to the calls
above so that everything else is shared with, and tested through, the CPU path.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

DEVICE_CHOICES = ("auto", "cpu", "cuda")


class DeviceError(Exception):
    """The requested device cannot be used (one-line message for the user)."""


@dataclass
class Timing:
    seconds: float = 0.0


class Device:
    """The CPU; the base for CUDA."""

    name = "cpu"

    def synchronize(self) -> None:
        pass

    def timed(self):
        return _HostTimer(self)

    def reset_peak(self) -> None:
        pass

    def allocator_peak(self) -> Optional[dict]:
        """``{"allocated": bytes, "reserved": bytes}`` since the last reset, or None when the device
        has no allocator statistics (CPU)."""
        return None

    def describe(self) -> str:
        import torch

        return f"cpu ({torch.get_num_threads()} thread{'s' if torch.get_num_threads() != 1 else ''})"


class CudaDevice(Device):
    name = "cuda"

    def __init__(self, index: int = 0) -> None:
        self.index = index

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize(self.index)

    def timed(self):
        return _CudaTimer(self)

    def reset_peak(self) -> None:
        import torch

        torch.cuda.synchronize(self.index)
        torch.cuda.reset_peak_memory_stats(self.index)

    def allocator_peak(self) -> Optional[dict]:
        import torch

        torch.cuda.synchronize(self.index)
        return {
            "allocated": int(torch.cuda.max_memory_allocated(self.index)),
            "reserved": int(torch.cuda.max_memory_reserved(self.index)),
        }

    def describe(self) -> str:
        import torch

        return f"cuda:{self.index} ({torch.cuda.get_device_name(self.index)})"


class _HostTimer:
    def __init__(self, device: Device) -> None:
        self.device = device
        self.result = Timing()

    def __enter__(self) -> Timing:
        self.device.synchronize()
        self._start = time.perf_counter_ns()
        return self.result

    def __exit__(self, *exc) -> None:
        self.device.synchronize()
        self.result.seconds = (time.perf_counter_ns() - self._start) / 1e9


class _CudaTimer(_HostTimer):
    def __enter__(self) -> Timing:
        import torch

        self._start_event = torch.cuda.Event(enable_timing=True)
        self._end_event = torch.cuda.Event(enable_timing=True)
        self.device.synchronize()
        self._start_event.record()
        return self.result

    def __exit__(self, *exc) -> None:
        self._end_event.record()
        self._end_event.synchronize()
        self.result.seconds = self._start_event.elapsed_time(self._end_event) / 1e3


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def select(requested: str) -> Device:
    """The device for ``--device auto|cpu|cuda``; ``cuda`` without a usable GPU is a DeviceError."""
    requested = (requested or "auto").lower()
    if requested not in DEVICE_CHOICES:
        raise DeviceError(f"unknown device `{requested}` (choose one of {', '.join(DEVICE_CHOICES)})")
    if requested == "cpu":
        return Device()
    if cuda_available():
        return CudaDevice(0)
    if requested == "cuda":
        import torch

        why = "this torch build has no CUDA support" if torch.version.cuda is None else "no CUDA GPU is visible"
        raise DeviceError(f"--device cuda: {why} (torch {torch.__version__}); use --device cpu or auto")
    return Device()


def require_torch(feature: str):
    """Import torch for `feature`, or raise DeviceError saying how to install it."""
    try:
        import torch
    except ImportError:
        raise DeviceError(
            f"{feature} needs PyTorch, which is not installed: pip install torch --index-url"
            " https://download.pytorch.org/whl/cpu (a CPU build; for a GPU, the command pytorch.org gives"
            " for your CUDA version)"
        ) from None
    return torch
