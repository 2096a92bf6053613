"""The verifier's live-storage tracker: the shared ``LiveTensorTracker`` with fresh allocations
attributed to lines of the flagged file and the running total reported to the instrument, so that
the peak during each forward call site's region is known. Paused while the harness itself computes
(gradient copies, eval-mode probes), so only the user's code is counted."""

from __future__ import annotations

from mllint.runtime.tracker import LiveTensorTracker


class AttributingTracker(LiveTensorTracker):
    def __init__(self, instrument) -> None:
        super().__init__()
        self.instrument = instrument

    def tag_for(self, storage, nbytes: int, func) -> object:
        self.instrument.on_allocation(nbytes)
        return None

    def on_alloc(self, nbytes: int, tag: object) -> None:
        self.instrument.on_peak(self.current)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.instrument.paused:
            return func(*args, **(kwargs or {}))
        return super().__torch_dispatch__(func, types, args, kwargs)
