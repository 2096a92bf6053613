"""Replaying a training step (or an inference pass) with a tracker that sorts every live storage
into a category, under FakeTensorMode (the prediction) or on real tensors (the measurement).

Both use the same code, so a prediction and a measurement differ only in whether the tensors
have storage. Categories:

- ``parameters``, ``buffers``, ``inputs``: storages that exist before the step;
- ``other``: anything else the TARGET function made and kept alive (a target tensor captured by a
  loss function, a cached mask);
- ``gradients``: storages that end up as ``param.grad``;
- ``optimizer``: storages that end up in ``optimizer.state`` (moments, momentum, step counters);
- ``activations``: storages saved for backward (``saved_tensors_hooks``) during the forward pass;
- ``transient``: everything else (outputs, temporaries of backward and of the optimizer step).

A storage's category is decided by what it becomes (a gradient is first an op output in backward,
then becomes ``param.grad``); the snapshot of live storages taken at each phase's peak keeps the
same record objects, so the breakdown at the peak uses the final categories.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

import torch
from torch.utils._pytree import tree_map_only

from mllint.config import ConfigError
from mllint.runtime.tracker import LiveTensorTracker, storage_of, tensors_in

from .target import Built, InputSpec, Settings, Target, describe_exception, normalise
from .validate import OUTPUT_FIX_OPS, InputCheck, check_batch, check_call, phase_label

CATEGORIES = ("parameters", "buffers", "inputs", "other", "gradients", "optimizer", "activations", "transient")
STATE_CATEGORIES = ("parameters", "buffers", "gradients", "optimizer")
CUDA_BLOCK = 512  # the CUDA caching allocator rounds every block up to a multiple of 512 B

_TORCH_DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64,
    "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8,
    "uint8": torch.uint8, "bool": torch.bool,
}


class Rec:
    """What the tracker remembers about one storage."""

    __slots__ = ("category", "module")

    def __init__(self, category: str, module: Optional[str] = None) -> None:
        self.category = category
        self.module = module


def rounded(nbytes: int) -> int:
    return 0 if nbytes <= 0 else -(-nbytes // CUDA_BLOCK) * CUDA_BLOCK


class CategoryTracker(LiveTensorTracker):
    """A ``LiveTensorTracker`` that records categories, the module that allocated each storage, the
    peak of each phase and the live set at that peak."""

    def __init__(self) -> None:
        super().__init__()
        self.phase = "build"
        self.modules: List[str] = []
        self.phase_order: List[str] = []
        self.phase_peak: Dict[str, int] = {}
        self.phase_snapshot: Dict[str, List[Tuple[Rec, int]]] = {}
        self._pending: set = set()
        self.rounded_current = 0
        self.rounded_peak = 0
        self.notes: set = set()
        # allocator level (scratch.py): every op call of the measured steps, when asked for
        self.op_log: Optional[List[Tuple[str, int, int, str]]] = None  # (call key, live before, live after, phase)
        self.op_calls: Dict[str, Any] = {}  # call key -> scratch.Call
        self._recording = False
        self.check = None

    # --- LiveTensorTracker hooks -------------------------------------------------------

    def tag_for(self, storage, nbytes: int, func) -> Rec:
        return Rec("transient", self.modules[-1] if self.modules else None)

    def on_alloc(self, nbytes: int, tag: object) -> None:
        self.rounded_current += rounded(nbytes)
        if self.rounded_current > self.rounded_peak:
            self.rounded_peak = self.rounded_current
        if self.current > self.phase_peak.get(self.phase, -1):
            self.phase_peak[self.phase] = self.current
            self._pending.add(self.phase)

    def on_free(self, nbytes: int, tag: object) -> None:
        self.rounded_current -= rounded(nbytes)
        if self._pending:
            # The live set is about to shrink: the peak of each pending phase is the live set as it
            # was just before this free (nothing else was freed since that peak was reached).
            snapshot = self._live_records()
            if isinstance(tag, Rec) and not any(rec is tag for rec, _ in snapshot):
                snapshot.append((tag, nbytes))
            for phase in self._pending:
                self.phase_snapshot[phase] = snapshot
            self._pending.clear()

    # --- phases --------------------------------------------------------------------------

    def _live_records(self) -> List[Tuple[Rec, int]]:
        return [(entry[2], entry[1]) for entry in self._live.values() if isinstance(entry[2], Rec)]

    def flush(self) -> None:
        if self._pending:
            snapshot = self._live_records()
            for phase in self._pending:
                self.phase_snapshot[phase] = snapshot
            self._pending.clear()

    def set_phase(self, phase: str) -> None:
        self.flush()
        self.phase = phase
        if phase not in self.phase_peak:
            self.phase_order.append(phase)
        self.phase_peak[phase] = self.current
        self.phase_snapshot[phase] = self._live_records()

    def begin(self) -> None:
        """Start measuring: what is live now is the starting point, the build's peak is forgotten."""
        self._recording = self.op_log is not None
        self.flush()
        self.reset_peak()
        self.rounded_peak = self.rounded_current
        self.phase_order.clear()
        self.phase_peak.clear()
        self.phase_snapshot.clear()

    # --- categories ------------------------------------------------------------------------

    def record_of(self, tensor) -> Optional[Rec]:
        tag = self.tag_of(tensor)
        return tag if isinstance(tag, Rec) else None

    def categorise(self, tensor, category: str, only_from: Iterable[str] = ()) -> None:
        """Set the category of `tensor`'s storage (tracking it first if it was never seen)."""
        if not isinstance(tensor, torch.Tensor):
            return
        rec = self.record_of(tensor)
        if rec is None:
            if not self.tracked(tensor):
                self.track([tensor], Rec(category))
            return
        if not only_from or rec.category in only_from:
            rec.category = category

    def live_by_category(self) -> Dict[str, int]:
        return sum_by_category(self._live_records())

    # --- corrections for fake kernels that report the wrong size -------------------------

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self._recording and getattr(func, "namespace", "") not in _NOT_MEASURED:
            return self._logged(func, types, args, kwargs)
        return self._checked(func, types, args, kwargs)

    def _checked(self, func, types, args=(), kwargs=None):
        if self.check is not None:  # validate.InputCheck: what real kernels reject, fake ones do not
            return self.check.dispatch(self._dispatch, func, types, args, kwargs or {})
        return self._dispatch(func, types, args, kwargs)

    def _dispatch(self, func, types, args=(), kwargs=None):
        fix = _OUTPUT_FIXES.get(func)
        if fix is None:
            return super().__torch_dispatch__(func, types, args, kwargs)

        def fixed(*a, **k):
            return fix(self, a, func(*a, **k))

        return super().__torch_dispatch__(fixed, types, args, kwargs)

    def _logged(self, func, types, args, kwargs):
        """The op, with its call and the live bytes around it in ``op_log`` (allocator level)."""
        from .scratch import call_of

        try:
            call = call_of(func, args, kwargs)
        except Exception:  # an argument it cannot describe: the op runs, unlogged (no scratch counted)
            return self._checked(func, types, args, kwargs)
        call = self.op_calls.setdefault(call.key, call)
        before = self.current
        out = self._checked(func, types, args, kwargs)
        self.op_log.append((call.key, before, self.current, self.phase))
        call.out_bytes = max(call.out_bytes, self.current - before)
        return out


# Op namespaces whose calls are not run again for the allocator level: record_function markers
# (no memory) and collectives (they need the process group of a real distributed run).
_NOT_MEASURED = frozenset({"profiler", "c10d", "_c10d_functional", "_c10d_functional_autograd", "_dtensor"})


def _fix_mkldnn_lstm_workspace(tracker: "CategoryTracker", args, out):
    """The fake (meta) kernel of ``aten.mkldnn_rnn_layer`` (what an ``nn.LSTM`` runs on CPU) returns an
    empty workspace; the real one returns a oneDNN workspace of roughly 64 B x T x B x hidden, which is
    saved for backward. Its exact size is read from the real kernel run on zeros of the same shapes
    (cached) when that is cheap, else the approximation is used."""
    from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

    workspace = out[3]
    if not isinstance(workspace, FakeTensor) or workspace.numel() != 0:
        return out
    x = args[0]
    shapes = tuple(tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args[:7])
    key = (shapes, tuple(a for a in args[7:] if not isinstance(a, (list, torch.Tensor))), x.dtype)
    size = _WORKSPACE_CACHE.get(key)
    if size is None:
        hidden = args[10] if len(args) > 10 else args[2].shape[1]
        work = x.numel() * 4 * hidden + x.shape[0] * x.shape[1] * hidden * hidden * 4
        if work <= 4e9:  # about a second of CPU time at most
            with unset_fake_temporarily():
                real = [torch.zeros(a.shape, dtype=a.dtype) if isinstance(a, torch.Tensor) else a for a in args]
                real_ws = torch.ops.aten.mkldnn_rnn_layer.default(*real)[3]
                size = int(real_ws.untyped_storage().nbytes()) if isinstance(real_ws, torch.Tensor) else 0
                del real, real_ws
            tracker.notes.add("nn.LSTM on CPU: the oneDNN workspace (saved for backward) was sized by running the "
                              "real kernel on zeros, since the fake kernel reports it empty")
        else:
            training = bool(args[15]) if len(args) > 15 else True
            size = 16 * x.shape[0] * x.shape[1] * hidden * x.element_size() if training else 0
            tracker.notes.add("nn.LSTM on CPU: the oneDNN workspace (saved for backward) is approximated as "
                              "16 x T x B x hidden elements (the fake kernel reports it empty)")
        _WORKSPACE_CACHE[key] = size
    replaced = torch.empty((size,), dtype=workspace.dtype, device=workspace.device)
    return tuple(out[:3]) + (replaced,) + tuple(out[4:])


_WORKSPACE_CACHE: Dict[tuple, int] = {}
_OUTPUT_FIXES = dict.fromkeys(OUTPUT_FIX_OPS, _fix_mkldnn_lstm_workspace)  # validate.py names the ops


def sum_by_category(snapshot: List[Tuple[Rec, int]]) -> Dict[str, int]:
    out = {c: 0 for c in CATEGORIES}
    for rec, nbytes in snapshot:
        out[rec.category] = out.get(rec.category, 0) + nbytes
    return out


def unique_bytes(tensors: Iterable[Any]) -> Tuple[int, int]:
    """(bytes, count) of the distinct storages behind `tensors` (tied weights and views once)."""
    seen: Dict[int, int] = {}
    keep = []
    for tensor in tensors:
        if isinstance(tensor, torch.Tensor):
            storage = storage_of(tensor)
            if storage is not None:
                keep.append(storage)
                seen[id(storage)] = int(storage.nbytes())
    return sum(seen.values()), len(seen)


# --- results ---------------------------------------------------------------------------------


@dataclass
class PhasePeak:
    phase: str  # forward, backward, optimizer step, end of step
    step: int
    peak: int
    breakdown: Dict[str, int]


@dataclass
class RunResult:
    mode: str
    batch: Optional[int]
    fake: bool
    peak: int = 0
    peak_phase: str = ""
    peak_step: int = 1
    breakdown: Dict[str, int] = field(default_factory=dict)
    phases: List[PhasePeak] = field(default_factory=list)
    parameters_bytes: int = 0
    parameter_tensors: int = 0
    n_params: int = 0
    trainable_params: int = 0
    buffers_bytes: int = 0
    inputs_bytes: int = 0
    other_bytes: int = 0
    gradients_bytes: int = 0
    optimizer_bytes: int = 0
    optimizer_tensors: int = 0
    optimizer_state_names: List[str] = field(default_factory=list)
    activations_bytes: int = 0
    modules: Dict[str, int] = field(default_factory=dict)  # module -> activation bytes
    rounded_peak: int = 0
    natural_batch: Optional[int] = None  # the batch of the inputs as TARGET / --input gave them
    peak_live_sizes: List[int] = field(default_factory=list)  # storage sizes live at the peak (CUDA model)
    seconds: float = 0.0
    loss: str = "default"
    notes: List[str] = field(default_factory=list)
    allocator: Optional[Any] = None  # scratch.AllocatorPeak: the allocator-level peak, when computed
    op_log: Optional[List[Tuple[str, int, int, str]]] = field(default=None, repr=False)  # fake replay with allocator=
    op_calls: Optional[Dict[str, Any]] = field(default=None, repr=False)
    cuda_kernels: Optional[dict] = None  # --device cuda: attention backends and dropout as CUDA runs them


# --- helpers --------------------------------------------------------------------------------


def default_loss(output: Any) -> "torch.Tensor":
    """The default training loss: the sum over every floating-point output tensor that requires grad
    of its mean in fp32 (``out.float().mean()``). Like a real loss, its gradient with respect to each
    output is a full tensor of the output's size."""
    total = None
    for tensor in tensors_in(output):
        if tensor.is_floating_point() and tensor.requires_grad:
            term = tensor.float().mean()
            total = term if total is None else total + term
    if total is None:
        raise ConfigError(
            "the model's output has no floating-point tensor that requires grad, so there is nothing to "
            "train (use --mode inference, or return a loss function as the third item)"
        )
    return total


def call_model(model, inputs):
    if isinstance(inputs, dict):
        return model(**inputs)
    if isinstance(inputs, (tuple, list)):
        return model(*inputs)
    return model(inputs)


def batch_of(inputs: Any) -> Optional[int]:
    """The batch size: the most common size of dim 0 among the input tensors."""
    sizes = [t.shape[0] for t in tensors_in(inputs) if t.dim() >= 1]
    if not sizes:
        return None
    return max(set(sizes), key=lambda s: (sizes.count(s), s))


def resize_batch(inputs: Any, batch: int) -> Any:
    """The inputs with dim 0 (the batch) resized to `batch`; rows are repeated from the original, so
    integer inputs keep valid values (token ids, class labels)."""
    old = batch_of(inputs)
    if old is None or old == batch:
        return inputs
    if old == 0:
        raise ConfigError("cannot resize inputs with an empty batch dimension")

    def resize(value: "torch.Tensor") -> "torch.Tensor":
        if value.dim() >= 1 and value.shape[0] == old:
            return value[torch.arange(batch, device=value.device) % old]
        return value

    return tree_map_only(torch.Tensor, resize, inputs)


def inputs_from_specs(specs: List[InputSpec], batch: Optional[int]) -> tuple:
    out = []
    for spec in specs:
        if batch is not None:
            spec = spec.with_batch(batch)
        dtype = _TORCH_DTYPES[spec.dtype]
        if dtype.is_floating_point:
            out.append(torch.randn(spec.shape, dtype=dtype))
        elif dtype == torch.bool:
            out.append(torch.zeros(spec.shape, dtype=dtype))
        else:
            out.append(torch.randint(0, spec.high or 1, spec.shape, dtype=dtype))
    return tuple(out)


def move_inputs(inputs: Any, device: str) -> Any:
    return cast_inputs(inputs, None, device)


def cast_inputs(inputs: Any, dtype, device: Optional[str] = None) -> Any:
    """The inputs moved to `device`, or with their floating tensors cast to `dtype`."""
    def cast(value: "torch.Tensor") -> "torch.Tensor":
        if device is not None:
            return value.to(device)
        return value.to(dtype) if value.is_floating_point() else value

    return tree_map_only(torch.Tensor, cast, inputs)


def make_optimizer(name: str, params: List["torch.nn.Parameter"], foreach: Optional[bool]):
    kw = {} if foreach is None else {"foreach": foreach}
    optim = torch.optim
    if name == "sgd":
        return optim.SGD(params, lr=0.01, **kw)
    if name == "sgd-momentum":
        return optim.SGD(params, lr=0.01, momentum=0.9, **kw)
    if name == "adam":
        return optim.Adam(params, lr=1e-3, **kw)
    if name == "adamw":
        return optim.AdamW(params, lr=1e-3, **kw)
    if name == "adagrad":
        return optim.Adagrad(params, lr=0.01, **kw)
    if name == "rmsprop":
        return optim.RMSprop(params, lr=0.01, **kw)
    raise ConfigError(f"unknown optimizer `{name}`")


def autocast_context(settings: Settings, device: str = "cpu"):
    if settings.dtype == "amp-bf16":
        return torch.autocast(device, dtype=torch.bfloat16)
    if settings.dtype == "amp-fp16":
        return torch.autocast(device, dtype=torch.float16)
    return contextlib.nullcontext()


def replace_tensors(model, convert, floating_only: bool = True) -> None:
    """Replace the model's parameters and buffers by ``convert(tensor)`` (``Module.to`` swaps tensors
    in place, which fake tensors with weak references refuse); shared (tied) parameters stay shared."""
    done: Dict[int, Any] = {}
    for module in model.modules():
        for name, p in list(module._parameters.items()):
            if p is None or (floating_only and not p.is_floating_point()):
                continue
            if id(p) not in done:
                done[id(p)] = (p, torch.nn.Parameter(convert(p.detach()), requires_grad=p.requires_grad))
            setattr(module, name, done[id(p)][1])  # through __setattr__: nn.LSTM updates _flat_weights
        for name, b in list(module._buffers.items()):
            if b is None or (floating_only and not b.is_floating_point()):
                continue
            if id(b) not in done:
                done[id(b)] = (b, convert(b.detach()))
            setattr(module, name, done[id(b)][1])
    done.clear()


def cast_model(model, dtype) -> None:
    """``model.to(dtype)`` for floating parameters and buffers."""
    replace_tensors(model, lambda t: t.to(dtype))


def refresh_fake_tensors(model) -> None:
    """Give every parameter and buffer a fresh fake tensor. A fake tensor made by ``copy.deepcopy``
    (``nn.TransformerEncoder`` clones its layer that way) gives its views a storage of their own
    (torch 2.13), so each ``weight.t()`` would count as a new allocation; a clone's views share its
    storage, as real tensors' do."""
    replace_tensors(model, lambda t: t.clone(), floating_only=False)


def model_dtype(settings: Settings):
    return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(settings.dtype)


class ModuleHooks:
    """Keeps ``tracker.modules`` as the stack of modules whose forward is running.

    Global module hooks, filtered to this model's modules: a hook registered on a module itself
    turns off PyTorch's fused inference paths (nn.TransformerEncoderLayer checks its modules'
    ``_forward_hooks`` and then runs the slow path, which keeps more tensors), so per-module hooks
    would make the estimate describe code the user never runs."""

    def __init__(self, model, tracker: CategoryTracker) -> None:
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        labels = {id(module): name or f"({type(module).__name__} top level)"
                  for name, module in model.named_modules()}

        def push(module, args):
            label = labels.get(id(module))
            if label is not None:
                tracker.modules.append(label)

        def pop(module, args, output):
            label = labels.get(id(module))
            if label is not None and tracker.modules and tracker.modules[-1] == label:
                tracker.modules.pop()

        self.handles = [register_module_forward_pre_hook(push),
                        register_module_forward_hook(pop, always_call=True)]

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


class StepError(Exception):
    """The TARGET's own code raised during build or replay; `phase` says where."""

    def __init__(self, exc: BaseException, phase: str, where: Optional[str] = None) -> None:
        super().__init__(f"{describe_exception(exc)} (during {phase}{', ' + where if where else ''})")
        self.exc = exc
        self.phase = phase


# --- the replay -------------------------------------------------------------------------


def fake_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode(allow_non_fake_inputs=True)


def _value_free_trunc_normal(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    return tensor


def _causal_unknown(mask, is_causal=None, size=None):
    return bool(is_causal)


# torch internals that look at tensor values where only shapes matter for memory. Fake tensors have
# no values, so these raise DataDependentOutputException and would force a real run:
# - nn.init.trunc_normal_ redraws out-of-range values in a loop (`if not mask.any()`); under fake
#   mode initial values are irrelevant (ViTs and most timm models call it in __init__);
# - nn.Transformer* compare a given mask with a causal one (`_detect_is_causal_mask`) to decide
#   whether to pass is_causal: under fake mode the hint given by the caller is used (False when
#   none), so the mask is applied as given.
# They are looked up as module globals at call time, so patching the module covers every import.
_FAKE_PATCHES = (
    ("torch.nn.init", "_no_grad_trunc_normal_", _value_free_trunc_normal),
    ("torch.nn.modules.transformer", "_detect_is_causal_mask", _causal_unknown),
)


@contextlib.contextmanager
def value_free_internals():
    import importlib

    saved = []
    try:
        for module_name, attribute, replacement in _FAKE_PATCHES:
            module = importlib.import_module(module_name)
            if hasattr(module, attribute):
                saved.append((module, attribute, getattr(module, attribute)))
                setattr(module, attribute, replacement)
        yield
    finally:
        for module, attribute, original in saved:
            setattr(module, attribute, original)


def replay(target: Target, settings: Settings, batch: Optional[int], fake: bool,
           foreach: Optional[bool] = None, steps: Optional[int] = None, device=None,
           allocator=False) -> RunResult:
    """Build TARGET's model and inputs and replay the step(s), under FakeTensorMode if `fake`.
    `device` (a ``mllint.runtime.device.Device``, real runs only): the model and inputs are moved
    there after the build, and its allocator peak is reset before the step.
    `allocator`: for the allocator level. When `fake`, every op call of the step is logged
    (``result.op_log``/``op_calls``) for ``scratch.allocator_peak``; when real (CPU), the peak is
    measured from the profiler's memory events of the step (``result.allocator``).

    Errors from the TARGET's code (build, forward, loss, backward) are raised as ``StepError``;
    ``ConfigError`` for bad input."""
    steps = steps or settings.steps
    tracker = CategoryTracker()
    if allocator and fake:
        tracker.op_log = []
    probe = None
    if allocator and not fake:  # from before the build: every block the step frees is one it saw allocated
        from .scratch import AllocatorProbe

        probe = AllocatorProbe()
    started = time.perf_counter()
    outer = fake_mode() if fake else contextlib.nullcontext()
    patches = value_free_internals() if fake else contextlib.nullcontext()
    # What real kernels would reject and fake ones let through (validate.py).
    check = InputCheck(tracker, target.text, cuda=settings.device == "cuda",
                       cast=settings.dtype if settings.dtype in ("bf16", "fp16") else None) if fake else None
    hooks = None
    kernels = None
    if fake and settings.device == "cuda":
        from .kernels import CudaKernels

        kernels = CudaKernels(tracker)  # attention and dropout replayed as the CUDA kernels run them
    try:
        tracker.check = check
        with warnings.catch_warnings(), probe or contextlib.nullcontext(), patches, outer, tracker, \
                (kernels or contextlib.nullcontext()):
            # copy.deepcopy of a fake tensor (in the TARGET's own code) reads its data pointer,
            # which torch warns about; nothing the user can act on.
            warnings.filterwarnings("ignore", message="Accessing the data pointer of FakeTensor")
            on = device.name if device is not None else "cpu"
            model, inputs, loss_fn, batch, natural = _build(target, settings, batch, tracker, on, fake)
            if check is not None:
                check.label_inputs(inputs, settings.inputs, model)
                check_call(model, inputs, settings.inputs, target.text)
            if device is not None:
                device.reset_peak()
            result = RunResult(settings.mode, batch, fake, loss="default" if loss_fn is None else "TARGET's loss_fn")
            result.natural_batch = natural
            hooks = ModuleHooks(model, tracker)
            with probe.mark("step") if probe is not None else contextlib.nullcontext():
                if settings.mode == "train":
                    _train(model, inputs, loss_fn, settings, foreach, steps, tracker, result, on)
                else:
                    _inference(model, inputs, settings, tracker, result, on)
            tracker._recording = False
            del inputs, model, loss_fn
    except (ConfigError, StepError):
        raise
    except Exception as exc:
        where = check.locate(exc) if check is not None else None
        raise StepError(exc, phase_label(tracker.phase), where) from exc
    finally:
        if hooks is not None:
            hooks.remove()
    _finish(tracker, result)
    if probe is not None:
        from .scratch import AllocatorPeak

        held = probe.held_peak("step")
        if held is not None:
            result.allocator = AllocatorPeak(max(held, result.peak), how="measured: the CPU allocator's running "
                                             "total (torch.profiler memory events) during the step")
    elif tracker.op_log is not None:  # the caller measures the calls (scratch.allocator_peak)
        result.op_log, result.op_calls = tracker.op_log, tracker.op_calls
        tracker.op_log, tracker.op_calls = None, {}
    if kernels is not None:
        result.cuda_kernels = kernels.summary()
    result.seconds = time.perf_counter() - started
    return result


def _build(target: Target, settings: Settings, batch: Optional[int], tracker: CategoryTracker, on: str = "cpu", fake: bool = False):
    tracker.set_phase("build")
    try:
        raw = target.function(batch_size=batch) if (target.takes_batch_size and batch is not None) else target.function()
    except (Exception, SystemExit) as exc:
        raise StepError(exc, "the TARGET function") from exc
    built: Built = normalise(raw, target)
    del raw
    model = built.model
    if settings.inputs:
        natural = settings.inputs[0].shape[0] if settings.inputs[0].shape else None
        inputs = inputs_from_specs(settings.inputs, batch)
        built.inputs = None
    elif built.inputs is None:
        raise ConfigError(f"TARGET `{target.text}` returned a model without example inputs; pass --input SHAPE")
    else:
        inputs = built.inputs
        built.inputs = None
        check_batch(inputs, target.text)
        natural = target.default_batch if (target.takes_batch_size and batch is not None) else batch_of(inputs)
        if batch is not None and not target.takes_batch_size:
            try:
                inputs = resize_batch(inputs, batch)
            except (IndexError, RuntimeError) as exc:
                raise ConfigError(f"cannot resize the inputs to batch {batch}: {describe_exception(exc)}") from None
    if fake:
        refresh_fake_tensors(model)
    cast = model_dtype(settings)
    if cast is not None:
        cast_model(model, cast)
        inputs = cast_inputs(inputs, cast)
    if on != "cpu":
        model.to(on)
        inputs = move_inputs(inputs, on)
    actual_batch = batch_of(inputs)
    # Classify what is alive before the step.
    for p in model.parameters():
        tracker.categorise(p, "parameters")
    for b in model.buffers():
        tracker.categorise(b, "buffers")
    for t in tensors_in(inputs):
        tracker.categorise(t, "inputs")
    for entry in list(tracker._live.values()):
        if isinstance(entry[2], Rec) and entry[2].category == "transient":
            entry[2].category = "other"
    return model, inputs, built.loss_fn, actual_batch, natural


def _train(model, inputs, loss_fn, settings, foreach, steps, tracker: CategoryTracker, result: RunResult,
           on: str = "cpu") -> None:
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ConfigError("the model has no trainable parameters (use --mode inference)")
    opt = make_optimizer(settings.optimizer, params, foreach)
    _model_state(model, result)
    result.trainable_params = sum(p.numel() for p in params)

    def pack(tensor):
        rec = tracker.record_of(tensor)
        if rec is not None and rec.category == "transient":
            rec.category = "activations"
        return tensor

    tracker.begin()
    _start(tracker, result)
    activations: Dict[str, int] = {}
    for step in range(1, steps + 1):
        tracker.set_phase(f"forward/{step}")
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), autocast_context(settings, on):
            out = call_model(model, inputs)
            loss = loss_fn(out) if loss_fn is not None else default_loss(out)
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not loss.requires_grad:
            raise ConfigError("the loss must be a scalar tensor that requires grad")
        saved = [(rec, n) for rec, n in tracker._live_records() if rec.category == "activations"]
        total = sum(n for _, n in saved)
        if total >= result.activations_bytes:
            result.activations_bytes = total
            activations = {}
            for rec, n in saved:
                key = rec.module or "(outside any module: loss, functional code)"
                activations[key] = activations.get(key, 0) + n
        tracker.set_phase(f"backward/{step}")
        loss.backward()
        for p in params:
            if p.grad is not None:
                tracker.categorise(p.grad, "gradients")
        tracker.set_phase(f"optimizer step/{step}")
        opt.step()
        state = [v for s in opt.state.values() for v in s.values() if isinstance(v, torch.Tensor)]
        for t in state:
            tracker.categorise(t, "optimizer")
        if step == steps:
            result.gradients_bytes, _ = unique_bytes(p.grad for p in params if p.grad is not None)
            result.optimizer_bytes, result.optimizer_tensors = unique_bytes(state)
            names = []
            for s in opt.state.values():
                for k, v in s.items():
                    if isinstance(v, torch.Tensor) and k not in names:
                        names.append(k)
            result.optimizer_state_names = names
        del state
        tracker.set_phase(f"end of step/{step}")
        opt.zero_grad(set_to_none=True)
        del out, loss
    tracker.flush()
    result.modules = activations
    del opt, params


def _inference(model, inputs, settings, tracker: CategoryTracker, result: RunResult, on: str = "cpu") -> None:
    model.eval()
    _model_state(model, result)
    tracker.begin()
    _start(tracker, result)
    tracker.set_phase("forward/1")
    with torch.no_grad(), autocast_context(settings, on):
        out = call_model(model, inputs)
    tracker.flush()
    del out
    # Activation memory in inference: intermediates live at the peak, by the module that made them.
    snapshot = tracker.phase_snapshot.get("forward/1") or []
    modules: Dict[str, int] = {}
    for rec, n in snapshot:
        if rec.category == "transient":
            key = rec.module or "(outside any module)"
            modules[key] = modules.get(key, 0) + n
    result.modules = modules


def _start(tracker: CategoryTracker, result: RunResult) -> None:
    live = tracker.live_by_category()
    result.inputs_bytes, result.other_bytes = live["inputs"], live["other"]


def _model_state(model, result: RunResult) -> None:
    params = list(model.parameters())
    result.parameters_bytes, result.parameter_tensors = unique_bytes(params)
    seen = {}
    for p in params:
        storage = storage_of(p)
        key = (id(storage), p.storage_offset(), tuple(p.shape)) if storage is not None else id(p)
        seen[key] = p.numel()
    result.n_params = sum(seen.values())
    result.buffers_bytes, _ = unique_bytes(model.buffers())


def _finish(tracker: CategoryTracker, result: RunResult) -> None:
    best = None
    for phase in tracker.phase_order:
        if "/" not in phase:
            continue
        name, step = phase.split("/")
        snapshot = tracker.phase_snapshot.get(phase) or []
        item = PhasePeak(name, int(step), tracker.phase_peak.get(phase, 0), sum_by_category(snapshot))
        result.phases.append(item)
        if best is None or item.peak > best[0].peak:
            best = (item, snapshot)
    result.peak = tracker.peak
    if best is not None:
        item, snapshot = best
        result.peak_phase, result.peak_step, result.breakdown = item.phase, item.step, item.breakdown
        result.peak_live_sizes = [n for _, n in snapshot]
        result.peak = max(result.peak, item.peak)
    if result.mode == "inference":
        result.activations_bytes = result.breakdown.get("transient", 0)
    result.rounded_peak = tracker.rounded_peak
    result.notes = sorted(tracker.notes)
