"""The child side of the verifier: runs one variant of a script (or an entry function) in this
process, under instrumentation patched in from outside the user's code, and writes what it saw.

    python -m mllint.verify.harness SPEC.json

SPEC holds: ``script`` (the variant, in a temporary copy), ``entry`` (None, ``module:function`` or
``file.py:function``), ``watch`` (the flagged file in the copy), ``site_lines`` (lines of the
flagged file whose forward calls / allocations / executions are recorded), ``probe_lines`` (forward
call sites where the eval-mode witnesses run), ``steps``, ``device``, ``mode`` (``evidence`` or
``worker``) and ``out`` (where the JSON result goes, evidence mode).

Instrumentation (none of it edits the user's logic):
- step cap: every pass over a ``DataLoader`` yields at most ``steps`` batches, and the loops the
  parent capped in the sandbox copy (``caps.py``: ``__mllint_loop__``, ``__mllint_while__``, installed
  here as builtins) run at most ``steps`` iterations once the flagged lines they run have run;
  until then they run on (an evaluation every 200 steps must be reached to be measured), for at
  most ``REACH_ITERATIONS_PER_STEP × steps`` such iterations in all, after which the caps apply
  anyway;
- clocks (``clocks``: one per finding, the same in the original and every fixed variant): optimizer
  steps, forward calls at the finding's lines, or executions of its line, counted from the first
  execution of the finding's own line (``after``); once every clock has reached its count the
  witnesses are decided and the run ends (``StopRun``), in evidence and timing runs alike, so all
  variants do the same work;
- optimizers: a global step pre-hook records, per optimizer, the norm of the gradient it is about to
  apply, of the gradient the backward passes since its previous step produced (parameter hooks),
  and of their difference (stale gradient that was never cleared);
- module forward hooks (global): for each top-level forward call, the line of the flagged file
  that called it, whether grad mode was on, whether outputs require grad, bytes saved for backward
  (``saved_tensors_hooks``; parameter storages excluded), time, the module's training flag, and at
  probe sites whether batch-norm buffers changed and whether two identical calls (on a deep copy,
  RNG state restored) give different outputs;
- memory: a live-storage tracker (tensor level) over the whole run, with fresh allocations
  attributed to lines of the flagged file; on CUDA also the allocator's peak statistics;
- line executions of ``site_lines`` (``sys.settrace`` limited to the flagged file's frames).

Worker mode runs the script again on each ``run`` command read from stdin (one JSON reply per line
on the original stdout; the script's own output goes to a log), with only the step cap and
forward timing at the site lines: it is the timed side of the A/B comparison.
"""

from __future__ import annotations

import builtins
import copy
import importlib
import json
import os
import random
import runpy
import sys
import time
import traceback
from typing import Any, Dict, List, Optional

from mllint.runtime.tracker import tensors_in  # the harness runs only in a child that has torch


_MODE_METHODS = ("__torch_dispatch__", "__torch_function__", "__enter__", "__exit__")


REACH_ITERATIONS_PER_STEP = 200  # capped-loop iterations allowed, per --steps, before every finding's line ran


class StopRun(BaseException):
    """Ends a run early (not an Exception, so a user's `except Exception` cannot swallow it)."""


def _seed_all(seed: int = 0) -> None:
    import torch

    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:
        pass
    torch.manual_seed(seed)


def _short_error(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _user_frame(exc: BaseException) -> Optional[Dict[str, Any]]:
    """Where the user's code failed: the innermost traceback frame in a file of the sandbox copy (the
    working directory), as {"file": path relative to the copy, "line": number, "text": source}."""
    root = os.path.realpath(os.getcwd())
    for error in (exc, exc.__cause__ or exc.__context__):  # a SystemExit re-raised by run_target
        if error is None:
            continue
        found = None
        places = [(frame.filename, frame.lineno, frame.line) for frame in traceback.extract_tb(error.__traceback__)]
        if isinstance(error, SyntaxError) and error.filename and error.lineno:
            places.append((error.filename, error.lineno, error.text))
        for filename, lineno, text in places:
            path = os.path.realpath(filename)
            if path.startswith(root + os.sep):
                found = {"file": os.path.relpath(path, root), "line": lineno, "text": (text or "").strip()}
        if found:
            return found
    return None


class _Site:
    __slots__ = ("calls", "grad_enabled", "requires_grad", "saved_bytes", "forward_seconds", "training",
                 "bn_changed", "probes", "outputs_differ", "peak_bytes", "dropout_active", "mode_sensitive")

    def __init__(self) -> None:
        self.calls = 0
        self.grad_enabled = 0
        self.requires_grad = 0
        self.saved_bytes = 0
        self.forward_seconds = 0.0
        self.training = 0
        self.bn_changed = 0
        self.probes = 0
        self.outputs_differ = 0
        self.peak_bytes = 0
        self.dropout_active = 0
        self.mode_sensitive = 0  # calls of a module holding dropout or batch norm (mode matters)

    def to_dict(self) -> Dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


class Instrument:
    """Everything patched into torch for one process."""

    def __init__(self, spec: Dict[str, Any], evidence: bool) -> None:
        import torch

        self.torch = torch
        self.spec = spec
        self.evidence = evidence
        self.watch = os.path.realpath(spec["watch"]) if spec.get("watch") else None
        self.site_lines = set(spec.get("site_lines") or ())
        self.probe_lines = set(spec.get("probe_lines") or ())
        self.steps = max(1, int(spec.get("steps") or 5))
        from mllint.runtime.device import Device, CudaDevice

        self.device = CudaDevice(0) if spec.get("device") == "cuda" else Device()
        self.sites: Dict[int, _Site] = {}
        self.depth = 0
        self.active_site: Optional[int] = None
        self._call_stack: List[tuple] = []
        self.optimizers: List[dict] = []
        self._opt_index: Dict[int, int] = {}
        self._fresh: Dict[int, Any] = {}
        self._hooked: set = set()
        self.batches = 0
        self.line_counts: Dict[int, int] = {}
        self.line_allocs: Dict[int, List[int]] = {}
        self.tracker = None
        self._saved: Optional[Dict[int, int]] = None
        self._param_storages: set = set()
        self._handles: list = []
        self.paused = False
        self.clocks: List[dict] = [dict(clock) for clock in spec.get("clocks") or ()]
        self.clock_lines = {line for clock in self.clocks if clock["kind"] == "line" for line in clock["lines"]}
        self.reach_lines = {line for clock in self.clocks for line in clock.get("after") or ()}
        self.reach_budget = REACH_ITERATIONS_PER_STEP * self.steps
        self._while_counts: Dict[tuple, list] = {}
        self._last_offset: Dict[tuple, int] = {}
        self.loop_cap = self.steps
        self.new_run()  # the per-run state: clocks, reached lines, loop counts

    # --- frames ----------------------------------------------------------------------------

    def _watched_line(self, skip: int = 2) -> Optional[int]:
        """The line of the innermost frame of the flagged file on the stack, skipping the file's own
        dispatch or function modes (a script that measures itself), so the op is charged to the line
        that called it."""
        if self.watch is None:
            return None
        frame = sys._getframe(skip)
        depth = 0
        while frame is not None and depth < 200:
            code = frame.f_code
            if code.co_filename == self._watch_name and code.co_name not in _MODE_METHODS:
                return frame.f_lineno
            frame = frame.f_back
            depth += 1
        return None

    # --- installation ----------------------------------------------------------------------

    def install(self) -> None:
        torch = self.torch
        self._watch_name = self.watch
        self._cap_loaders()
        builtins.__mllint_loop__ = self._loop
        builtins.__mllint_while__ = self._while
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._handles.append(register_optimizer_step_post_hook(self._after_step))
        self._handles.append(torch.nn.modules.module.register_module_forward_pre_hook(self._pre_forward))
        self._handles.append(
            torch.nn.modules.module.register_module_forward_hook(self._post_forward, with_kwargs=True,
                                                                 always_call=True)
        )
        if not self.evidence:
            if (self.clock_lines or self.reach_lines) and self.watch:
                sys.settrace(self._trace)
            return
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        self._handles.append(register_optimizer_step_pre_hook(self._before_step))
        self._saved_hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._saved_hooks.__enter__()
        from mllint.verify.tracking import AttributingTracker

        self.tracker = AttributingTracker(self)
        self.tracker.__enter__()
        if (self.site_lines or self.clock_lines or self.reach_lines) and self.watch:
            sys.settrace(self._trace)
        self.device.reset_peak()

    def uninstall(self) -> None:
        sys.settrace(None)
        if not self.evidence:
            return
        if self.tracker is not None:
            self.tracker.__exit__(None, None, None)
        self._saved_hooks.__exit__(None, None, None)

    def _cap_loaders(self) -> None:
        from torch.utils.data import DataLoader

        original_iter = DataLoader.__iter__
        cap = self.steps
        instrument = self

        def capped(loader):
            iterator = original_iter(loader)

            def generate():
                for index, batch in enumerate(iterator):
                    if index >= cap:
                        break
                    instrument.batches += 1
                    yield batch

            return generate()

        DataLoader.__iter__ = capped

    # --- capped loops ------------------------------------------------------------------------

    def _loop(self, iterable, lines: tuple = ()):
        """A capped `for` (see `_iterate`)."""
        state = [0, None if lines else self.loop_cap]
        for item in iterable:
            if not self._iterate(state, lines):
                return
            yield item

    def _while(self, line: int, lines: tuple = ()) -> bool:
        """A capped `while` (see `_iterate`). Counted per frame and loop; a frame whose memory a later
        call of the same function reuses continues the count (it cannot tell a re-entry from a
        continuation), so such a loop may run fewer iterations, never more."""
        key = (id(sys._getframe(1)), line)
        return self._iterate(self._while_counts.setdefault(key, [0, None if lines else self.loop_cap]), lines)

    def _iterate(self, state: list, lines: tuple) -> bool:
        """May a capped loop (`state`: [iterations so far, limit or None]) iterate again? A training
        loop that runs no flagged code (`lines` empty) has its limit, `steps`, from the start. A
        loop that runs flagged `lines`: until they have all run, yes, within the budget of such
        iterations; from then on, `steps` more iterations (a loop entered later: `steps` in all).
        When the budget runs out first, the caps apply as if from the start."""
        if state[1] is None and not self.unreached.isdisjoint(lines):
            self.pre_reach_iterations += 1
            if self.pre_reach_iterations <= self.reach_budget:
                state[0] += 1
                return True
            self.given_up_on = sorted(self.unreached)
            self.unreached.clear()
        if state[1] is None:
            state[1] = self.loop_cap if self.given_up_on else state[0] + self.loop_cap
        if state[0] >= state[1]:
            return False
        state[0] += 1
        return True

    # --- clocks: when the witness is decided ---------------------------------------------------

    def _count(self, kind: str, line: Optional[int] = None) -> None:
        """One event for the armed clocks of `kind` (at `line`, for calls and lines)."""
        for clock in self.clocks:
            if clock["kind"] == kind and clock["armed"] and (line is None or line in clock["lines"]):
                clock["seen"] += 1

    def _tick(self, kind: str, line: Optional[int] = None) -> None:
        """Count one event; end the run once every clock has reached its count."""
        if not self.clocks:
            return
        self._count(kind, line)
        if self._all_decided():
            self._stop()

    def _all_decided(self) -> bool:
        return all(clock["seen"] >= clock["count"] for clock in self.clocks)

    def _stop(self) -> None:
        self.decided = True
        raise StopRun()

    # --- line executions ----------------------------------------------------------------------

    def _trace(self, frame, event, arg):
        if frame.f_code.co_filename != self._watch_name:
            return None
        return self._trace_lines

    def _trace_lines(self, frame, event, arg):
        if event != "line":
            return self._trace_lines
        line = frame.f_lineno
        if line not in self.site_lines and line not in self.clock_lines and line not in self.reach_lines:
            return self._trace_lines
        # A statement spread over lines comes back to its first line (a call's arguments on the
        # next lines, then the call): only an event at or before the offset of the previous one
        # on this line, in this frame, starts a new execution.
        key = (id(frame), line)
        previous = self._last_offset.get(key)
        self._last_offset[key] = frame.f_lasti
        if previous is not None and frame.f_lasti > previous:
            return self._trace_lines
        if line in self.clock_lines and self._all_decided():
            self._stop()  # the next execution would start: the counted ones are complete
        if line in self.reach_lines:
            self.unreached.discard(line)
            for clock in self.clocks:
                if line in (clock.get("after") or ()):
                    clock["armed"] = True
        if self.evidence and line in self.site_lines:
            self.line_counts[line] = self.line_counts.get(line, 0) + 1
        if line in self.clock_lines:
            self._count("line", line)
        return self._trace_lines

    # --- optimizer steps (evidence) ---------------------------------------------------------

    def new_run(self) -> None:
        """Forget the previous run (timing workers run the script again and again)."""
        self.sites.clear()
        self.optimizer_steps = 0
        self.depth = 0
        self._call_stack.clear()
        self._while_counts.clear()
        self._last_offset.clear()
        self.decided = False
        self.unreached = set(self.reach_lines)
        self.pre_reach_iterations = 0
        self.given_up_on: List[int] = []  # lines not reached within the budget
        for clock in self.clocks:
            clock["seen"] = 0
            clock["armed"] = not clock.get("after")  # a clock counts from its `after` line's first run

    def _after_step(self, optimizer, args, kwargs) -> None:
        self.optimizer_steps += 1
        self._tick("steps")

    def _hook_params(self, optimizer) -> None:
        for group in optimizer.param_groups:
            for param in group["params"]:
                if id(param) in self._hooked or not param.requires_grad:
                    continue
                self._hooked.add(id(param))
                key = id(param)

                def record(grad, key=key):
                    with self._paused():
                        previous = self._fresh.get(key)
                        fresh = grad.detach().clone()
                        self._fresh[key] = fresh if previous is None else previous + fresh
                    return None

                param.register_hook(record)

    def _before_step(self, optimizer, args, kwargs) -> None:
        torch = self.torch
        index = self._opt_index.get(id(optimizer))
        if index is None:
            index = self._opt_index[id(optimizer)] = len(self.optimizers)
            self.optimizers.append({"type": type(optimizer).__name__, "steps": []})
            self._hook_params(optimizer)  # the first step's gradients came before the hooks
            self.optimizers[index]["steps"].append(None)
            self._reset_fresh(optimizer)
            return
        record = self.optimizers[index]["steps"]
        if len(record) < 4 * self.steps + 10:
            with self._paused(), torch.no_grad():
                grad_sq = fresh_sq = stale_sq = 0.0
                for group in optimizer.param_groups:
                    for param in group["params"]:
                        grad = param.grad
                        fresh = self._fresh.get(id(param))
                        if grad is None:
                            continue
                        g = grad.detach().float()
                        grad_sq += float(g.pow(2).sum())
                        if fresh is None:
                            stale_sq += float(g.pow(2).sum())
                        else:
                            f = fresh.float()
                            fresh_sq += float(f.pow(2).sum())
                            stale_sq += float((g - f).pow(2).sum())
                record.append({"grad": grad_sq ** 0.5, "fresh": fresh_sq ** 0.5, "stale": stale_sq ** 0.5})
        else:
            record.append(None)
        self._reset_fresh(optimizer)

    def _reset_fresh(self, optimizer) -> None:
        for group in optimizer.param_groups:
            for param in group["params"]:
                self._fresh.pop(id(param), None)

    # --- forwards ---------------------------------------------------------------------------

    class _Pause:
        def __init__(self, owner) -> None:
            self.owner = owner

        def __enter__(self):
            self.before = self.owner.paused
            self.owner.paused = True

        def __exit__(self, *exc):
            self.owner.paused = self.before

    def _paused(self):
        return Instrument._Pause(self)

    def _pre_forward(self, module, args) -> None:
        if self.paused:
            return None
        self.depth += 1
        if self.depth != 1:
            return None
        line = self._watched_line()
        snapshot = None
        if line is not None and self.evidence:
            self.active_site = line
            if line in self.probe_lines:
                snapshot = self._buffers_snapshot(module)
            self._param_storages = self._storages_of(module)
            self._saved = {}
        self.device.synchronize()
        self._call_stack.append((line, time.perf_counter_ns(), snapshot))
        return None

    def _post_forward(self, module, args, kwargs, output):
        if self.paused:
            return None
        self.depth -= 1
        if self.depth != 0 or not self._call_stack:
            return None
        self.device.synchronize()
        line, started, snapshot = self._call_stack.pop()
        if line is None:
            return None
        site = self.sites.get(line)
        if site is None:
            site = self.sites[line] = _Site()
        site.calls += 1
        site.forward_seconds += (time.perf_counter_ns() - started) / 1e9
        if self.evidence:
            self._record_call(site, line, module, args, kwargs, output, snapshot)
        self._tick("calls", line)
        return None

    def _record_call(self, site, line, module, args, kwargs, output, snapshot) -> None:
        torch = self.torch
        site.grad_enabled += int(torch.is_grad_enabled())
        site.requires_grad += int(any(t.requires_grad for t in tensors_in(output)))
        site.training += int(bool(module.training))
        dropouts = [m for m in module.modules()
                     if "dropout" in type(m).__name__.lower() and float(getattr(m, "p", 0) or 0) > 0]
        norms = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        site.dropout_active += int(any(m.training for m in dropouts))
        site.mode_sensitive += int(bool(dropouts or norms))
        if self._saved is not None:
            site.saved_bytes += sum(self._saved.values())
        self._saved = None
        if line in self.probe_lines:
            if snapshot is not None and self._buffers_changed(module, snapshot):
                site.bn_changed += 1
            if site.probes < 2:
                site.probes += 1
                if self._outputs_differ(module, args, kwargs):
                    site.outputs_differ += 1

    def _storages_of(self, module) -> set:
        found = set()
        with self._paused():
            for tensor in list(module.parameters()) + list(module.buffers()):
                try:
                    found.add(tensor.untyped_storage().data_ptr())
                except Exception:
                    pass
        return found

    def _pack(self, tensor):
        if self._saved is not None and not self.paused:
            try:
                storage = tensor.untyped_storage()
                key = storage.data_ptr()
                if key not in self._param_storages:
                    self._saved[key] = int(storage.nbytes())
            except Exception:
                pass
        return tensor

    def _buffers_snapshot(self, module):
        with self._paused():
            return {
                name: buf.detach().clone()
                for name, buf in module.named_buffers()
                if buf is not None and ("running" in name or "num_batches_tracked" in name)
            }

    def _buffers_changed(self, module, snapshot) -> bool:
        torch = self.torch
        with self._paused():
            current = dict(module.named_buffers())
            for name, before in snapshot.items():
                after = current.get(name)
                if after is not None and after.shape == before.shape and not torch.equal(after.detach(), before):
                    return True
        return False

    def _outputs_differ(self, module, args, kwargs) -> bool:
        """Run a deep copy of `module` twice on the same inputs (no_grad, RNG state restored after):
        do the outputs differ? Dropout in training mode makes them differ."""
        torch = self.torch
        with self._paused():
            cpu_state = torch.get_rng_state()
            cuda_state = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
            try:
                clone = copy.deepcopy(module)
                with torch.no_grad():
                    first = tensors_in(clone(*args, **(kwargs or {})))
                    second = tensors_in(clone(*args, **(kwargs or {})))
                if len(first) != len(second):
                    return True
                return any(not torch.equal(a, b) for a, b in zip(first, second))
            except Exception:
                return False
            finally:
                torch.set_rng_state(cpu_state)
                if cuda_state is not None:
                    torch.cuda.set_rng_state_all(cuda_state)

    # --- allocations (evidence) -------------------------------------------------------------

    def on_allocation(self, nbytes: int) -> None:
        line = self._watched_line(2)
        if line is not None:
            entry = self.line_allocs.setdefault(line, [0, 0])
            entry[0] += 1
            entry[1] += nbytes

    def on_peak(self, current: int) -> None:
        if self.active_site is not None:
            site = self.sites.get(self.active_site)
            if site is None:
                site = self.sites[self.active_site] = _Site()
            if current > site.peak_bytes:
                site.peak_bytes = current

    # --- results ----------------------------------------------------------------------------

    def results(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "sites": {str(line): site.to_dict() for line, site in self.sites.items()},
            "batches": self.batches,
            "optimizer_steps": self.optimizer_steps,
            "decided": self.decided,
            "unreached": self.given_up_on,
        }
        if self.evidence:
            out["optimizers"] = self.optimizers
            out["line_counts"] = {str(k): v for k, v in self.line_counts.items()}
            out["line_allocs"] = {str(k): v for k, v in self.line_allocs.items()}
            if self.tracker is not None:
                out["peak_bytes"] = self.tracker.peak
                out["allocations"] = self.tracker.allocations
            out["allocator_peak"] = self.device.allocator_peak()
        return out


# --- running the target ----------------------------------------------------------------------


def _load_entry(entry: str):
    target, _, function = entry.rpartition(":")
    if not target or not function:
        raise ValueError(f"--entry must be module:function or path.py:function, not `{entry}`")
    if target.endswith(".py"):
        path = target if os.path.isabs(target) else os.path.join(os.getcwd(), target)
        module = runpy.run_path(path, run_name="__mllint_entry__")
        fn = module.get(function)
    else:
        module = importlib.import_module(target)
        fn = getattr(module, function, None)
    if not callable(fn):
        raise ValueError(f"--entry: `{function}` is not a function of `{target}`")
    return fn


def run_target(spec: Dict[str, Any]) -> None:
    script = spec["script"]
    entry = spec.get("entry")
    saved_argv = sys.argv
    sys.argv = [script]
    try:
        if entry:
            _load_entry(entry)()
        else:
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code not in (None, 0):
            raise RuntimeError(f"the script exited with status {code}") from None
    finally:
        sys.argv = saved_argv


def _prepare(spec: Dict[str, Any]) -> None:
    import torch

    torch.set_num_threads(int(spec.get("threads") or 1))
    script_dir = os.path.dirname(os.path.abspath(spec["script"]))
    if script_dir not in sys.path:
        sys.path.insert(0, script_dir)
    if os.getcwd() not in sys.path:
        sys.path.insert(1, os.getcwd())


def evidence_main(spec: Dict[str, Any]) -> int:
    _prepare(spec)
    instrument = Instrument(spec, evidence=True)
    result: Dict[str, Any] = {"ok": True}
    started = time.perf_counter()
    _seed_all()
    instrument.install()
    try:
        run_target(spec)
    except StopRun:
        pass
    except BaseException as exc:  # the user's code failed: report why, never crash
        result = {"ok": False, "error": _short_error(exc), "where": _user_frame(exc),
                  "traceback": traceback.format_exc(limit=-3)}
    finally:
        instrument.uninstall()
    result["seconds"] = time.perf_counter() - started
    result.update(instrument.results())
    with open(spec["out"], "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return 0


def worker_main(spec: Dict[str, Any]) -> int:
    """Timing worker: one JSON line per `run` command, on the original stdout."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    log = open(spec.get("log") or os.devnull, "a", encoding="utf-8")
    os.dup2(log.fileno(), 1)
    sys.stdout = log
    _prepare(spec)
    instrument = Instrument(spec, evidence=False)
    instrument.install()
    proto.write(json.dumps({"ready": True}) + "\n")
    for command in sys.stdin:
        if command.strip() != "run":
            break
        instrument.new_run()
        _seed_all()
        reply: Dict[str, Any] = {"ok": True}
        try:
            with instrument.device.timed() as timing:
                run_target(spec)
        except StopRun:
            pass
        except BaseException as exc:
            reply = {"ok": False, "error": _short_error(exc), "where": _user_frame(exc)}
        if reply["ok"]:
            reply["seconds"] = timing.seconds
            reply["sites"] = {str(k): v.forward_seconds for k, v in instrument.sites.items()}
        proto.write(json.dumps(reply) + "\n")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0], encoding="utf-8") as handle:
        spec = json.load(handle)
    if spec.get("mode") == "worker":
        return worker_main(spec)
    return evidence_main(spec)


if __name__ == "__main__":
    sys.exit(main())
