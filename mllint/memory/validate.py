"""Rejecting what real torch rejects, during the FakeTensorMode replay.

Fake (meta) kernels compute output shapes and dtypes; many skip the checks the real CPU kernels make.
On torch 2.13, for example, ``F.linear`` on an int64 input with float32 weights, a float64 input into
a float32 ``nn.Linear`` or ``nn.Conv2d`` without bias, a float64 input into ``nn.LayerNorm`` and an
int32 target for ``cross_entropy`` all run under fake tensors and raise on real ones. Without a check
the estimator reports the peak memory of a step that cannot run.

``InputCheck`` runs around every op the tracker sees during a fake replay (``CategoryTracker``
calls ``InputCheck.dispatch``):

- before a watched op (matrix products, convolutions, normalisations, losses, float-only
  activations) whose tensor operands disagree in dtype, or hold a dtype the op may not support, the
  real CPU kernel is run once on zero tensors of the same shapes, strides and dtypes
  (cached by op and dtypes); if it raises, so would the user's step;
- when a fake kernel raises (a shape mismatch, say), the real kernel is run the same way: if it
  raises too, the error is real torch's own, with the user's shapes (not those of a smaller real run
  at a reduced batch); if it does not, the fake error is a limitation of fake tensors and goes on to
  the estimator's fallback to real runs;
- an ``nn.Embedding`` fed an ``--input`` whose ids reach HIGH-1 >= the number of rows raises the
  ``IndexError`` real torch raises (fake tensors have no values to check).

A rejection is a ``ConfigError`` (one line, exit 2) naming the input involved (``--input 2 (...)`` or
TARGET's input), the module, the aten op and the phase. Real kernels are only run when operands total
at most ``VERIFY_CAP`` bytes; above it, only the dtype rule of matrix products and convolutions (the
two matrices, or input and weight, share a dtype on CPU and CUDA alike) rejects without running a
kernel. With ``--device cuda`` the model is still replayed with CPU kernels, so only the checks that
hold on CUDA as well apply (that rule, token ids, and errors the fake kernels raise themselves).

Errors raised before dispatch (torch's own checks in C++ such as a convolution's bias dtype, the
model's Python code) are not seen here: they go to the estimator's fallback as before, and
``InputCheck.locate`` names the module whose forward raised and the user's input it was given, from
the traceback. Also checked up front: inputs that do not fit ``model.forward``'s signature
(``check_call``) and a zero-sized batch in TARGET's inputs (``check_batch``).
"""

from __future__ import annotations

import weakref
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch.utils._pytree import tree_flatten, tree_map_only

from mllint.config import ConfigError
from mllint.runtime.tracker import tensors_in

from .target import InputSpec, one_line

# Ops whose fake kernel's output the replay corrects by running the real CPU kernel itself
# (replay._OUTPUT_FIXES): the LSTM workspace of ``aten.mkldnn_rnn_layer``.
OUTPUT_FIX_OPS = (torch.ops.aten.mkldnn_rnn_layer.default,) if hasattr(torch.ops.aten, "mkldnn_rnn_layer") else ()


def phase_label(phase: str) -> str:
    """A replay phase as a person reads it (``forward/2`` -> ``forward, step 2``)."""
    if "/" in phase:
        name, step = phase.split("/")
        return f"{name}, step {step}"
    return "the TARGET function" if phase == "build" else phase

VERIFY_CAP = 256 << 20  # bytes of operands a verifying real kernel may allocate

_aten = torch.ops.aten


def _packets(*names: str) -> frozenset:
    return frozenset(getattr(_aten, n) for n in names if hasattr(_aten, n))


# The two matrices (or input and weight) must have the same dtype, on CPU and CUDA alike (fake
# kernels do not check it); on CPU the added term (bias) too, which is left to the real kernel.
SAME_DTYPE = _packets("mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot", "addr",
                      "_addmm_activation", "convolution", "_convolution")
_ADDED_TERM_FIRST = _packets("addmm", "baddbmm", "addbmm", "addmv", "addr", "_addmm_activation")
# Mixed dtypes are sometimes allowed (bf16 input with fp32 weights); the real CPU kernel decides.
MIXED_CPU = _packets("native_layer_norm", "native_batch_norm", "_native_batch_norm_legit",
                     "_native_batch_norm_legit_no_training", "_native_batch_norm_legit_functional",
                     "native_group_norm", "nll_loss_forward", "nll_loss2d_forward")
# Float-only kernels: an integer or bool input is checked against the real CPU kernel.
FLOAT_ONLY_CPU = _packets("_softmax", "_log_softmax", "gelu", "silu", "mish", "elu", "hardswish", "softplus",
                          "_scaled_dot_product_flash_attention_for_cpu", "upsample_bilinear2d", "upsample_bicubic2d")
_FAKE_LIMITS = (
    "DataDependentOutputException", "DynamicOutputShapeException", "UnsupportedOperatorException",
    "GuardOnDataDependentSymNode", "UnsupportedFakeTensorException", "MetadataMismatchError",
)
_SKIPPED = object()
# (op, operand dtypes) the real kernel accepted: accepting dtypes does not depend on shapes, so a
# --gpu-memory search or a second estimate runs the kernel once.
_ACCEPTED: set = set()


class Rejected(ConfigError):
    """Real torch would reject the step: a one-line error for the user."""


def _tensors(args, kwargs) -> List[torch.Tensor]:
    return [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]


def _shape(tensor: torch.Tensor) -> str:
    return "x".join(str(int(d)) for d in tensor.shape) or "scalar"


def _dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def _storage_key(tensor: torch.Tensor) -> Optional[int]:
    try:
        return id(tensor.untyped_storage())
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def real_kernel_error(func, args, kwargs, cap: int = VERIFY_CAP):
    """Run `func` for real on CPU tensors shaped like the fake operands (zeros: valid indices,
    probabilities and sizes, deterministic). Returns the exception it raised, None when it ran, or
    _SKIPPED when the operands are too large or not on the CPU."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    tensors = _tensors(args, kwargs)
    total = 0
    for t in tensors:
        if t.device.type not in ("cpu", "meta") or t.layout != torch.strided:
            return _SKIPPED
        total += _extent(t) * t.element_size()
    if total > cap:
        return _SKIPPED

    def real(t: torch.Tensor) -> torch.Tensor:
        return torch.zeros(_extent(t), dtype=t.dtype).as_strided(tuple(t.shape), tuple(t.stride()),
                                                                   t.storage_offset())

    with unset_fake_temporarily():
        try:
            real_args, real_kwargs = tree_map_only(torch.Tensor, real, (args, kwargs or {}))
        except Exception:  # noqa: BLE001 - symbolic shapes or exotic tensors: not checked
            return _SKIPPED
        try:
            func(*real_args, **real_kwargs)
        except Exception as exc:  # noqa: BLE001 - the real kernel's verdict
            return exc
    return None


def _extent(t: torch.Tensor) -> int:
    """Elements of storage the tensor's view reaches (offset + the last element + 1)."""
    if t.numel() == 0:
        return t.storage_offset()
    return t.storage_offset() + sum((int(s) - 1) * int(st) for s, st in zip(t.shape, t.stride())) + 1


def is_fake_limitation(exc: BaseException) -> bool:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if type(exc).__name__ in _FAKE_LIMITS:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class InputCheck:
    """See the module docstring. `tracker` gives the module running and the phase; `cuda`: the step
    is modelled for CUDA (only the checks that hold on CUDA too)."""

    def __init__(self, tracker, target_text: str, cuda: bool = False, cast: Optional[str] = None) -> None:
        self.tracker = tracker
        self.target_text = target_text
        self.cuda = cuda
        self.cast = cast  # "bf16" / "fp16": --dtype cast the model (said in the error)
        self.labels: Dict[int, Tuple[str, Optional[InputSpec]]] = {}
        self._keep: List[Any] = []  # the labelled storages, so that their ids stay theirs
        self.classes: Dict[str, str] = {}
        self._names: Dict[int, str] = {}  # id(module) -> its label
        # id(storage) -> (weak reference, largest value, what made it): values known without data
        self._ranges: Dict[int, Tuple[Any, int, str]] = {}

    # --- what the user gave ---------------------------------------------------------------

    def label_inputs(self, inputs: Any, specs: List[InputSpec], model=None) -> None:
        """Name each input tensor as the user knows it: ``--input 2 (8x128:int64)`` or TARGET's input."""
        if specs:
            items = [(f"--input {i + 1}", t, specs[i] if i < len(specs) else None)
                     for i, t in enumerate(inputs if isinstance(inputs, (tuple, list)) else (inputs,))]
        elif isinstance(inputs, dict):
            items = [(f"TARGET's input `{k}`", v, None) for k, v in inputs.items()]
        elif isinstance(inputs, (tuple, list)):
            items = [(f"TARGET's input {i + 1}", v, None) for i, v in enumerate(inputs)]
        else:
            items = [("TARGET's input", inputs, None)]
        for name, value, spec in items:
            for t in tensors_in(value):
                key = _storage_key(t)
                if key is None:
                    continue
                # As the user wrote it (a --dtype cast changes the tensor's dtype, not the option).
                text = f"{_shape(t)}:{spec.dtype if spec is not None else _dtype_name(t.dtype)}"
                if spec is not None and spec.high is not None:
                    text += f":{spec.high}"
                self.labels[key] = (f"{name} ({text})", spec)
                self._keep.append(t.untyped_storage())
        if model is not None:
            for name, module in model.named_modules():
                label = name or f"({type(module).__name__} top level)"
                self.classes[label] = type(module).__name__
                self._names[id(module)] = label
            self._keep.append(model)

    # --- the dispatch ---------------------------------------------------------------------------

    def dispatch(self, run, func, types, args, kwargs):
        """`run(func, types, args, kwargs)` (the tracker's dispatch) with the checks around it: called
        by the tracker rather than stacked as a dispatch mode of its own, which would cost a Python
        dispatch layer per op (~10% of a fake replay)."""
        packet = func.overloadpacket
        if getattr(func, "_overloadname", None) != "default":
            pass  # out=, out_dtype= variants: not checked
        elif packet in SAME_DTYPE or (not self.cuda and (packet in MIXED_CPU or packet in FLOAT_ONLY_CPU)):
            self._check_dtypes(func, packet, args, kwargs)
        elif packet is _aten.embedding:
            self._check_ids(func, args)
        try:
            out = run(func, types, args, kwargs)
        except Exception as exc:
            # An op the tracker corrects runs a real CPU kernel itself: its error is not the fake
            # kernel's verdict (an fp16 nn.LSTM has no oneDNN kernel on CPU but runs on CUDA).
            if isinstance(exc, ConfigError) or is_fake_limitation(exc) or not _has_fake(args, kwargs) \
                    or func in OUTPUT_FIX_OPS:
                raise
            verdict = real_kernel_error(func, args, kwargs)
            if verdict is None or verdict is _SKIPPED:
                raise
            self._reject(func, args, kwargs, verdict)
        if packet is _aten.arange:
            self._note_arange(func, args, kwargs, out)
        return out

    def _check_dtypes(self, func, packet, args, kwargs) -> None:
        tensors = _tensors(args, kwargs)
        if not tensors or not _has_fake(args, kwargs):
            return
        dtypes = tuple(t.dtype for t in tensors)
        if packet in FLOAT_ONLY_CPU:
            suspicious = not (tensors[0].is_floating_point() or tensors[0].is_complex())
        elif packet in (_aten.nll_loss_forward, _aten.nll_loss2d_forward):
            suspicious = (len(tensors) > 1 and tensors[1].dtype not in (torch.int64, torch.uint8)) or \
                len({t.dtype for t in tensors if t is not tensors[1]}) > 1
        else:
            core = _core_dtypes(packet, args)
            suspicious = len(set(core if self.cuda else dtypes)) > 1
        if not suspicious:
            return
        key = (func, dtypes)
        if key in _ACCEPTED:
            return
        verdict = real_kernel_error(func, args, kwargs)
        if verdict is _SKIPPED:
            core = _core_dtypes(packet, args) if packet in SAME_DTYPE else ()
            if len(set(core)) <= 1:
                return  # cannot tell without the kernel: not rejected
            names = " and ".join(_dtype_name(d) for d in core)
            verdict = RuntimeError(f"{packet.__name__} needs the same dtype for both operands, got {names}")
        if verdict is None:
            _ACCEPTED.add(key)
            return
        self._reject(func, args, kwargs, verdict)

    def _check_ids(self, func, args) -> None:
        """Token ids known without values: an --input's HIGH, or positions made by torch.arange."""
        weight, indices = args[0], args[1]
        rows = int(weight.shape[0])
        key = _storage_key(indices)
        label = self.labels.get(key)
        if label is not None and label[1] is not None and label[1].high is not None and label[1].high > rows:
            self._reject(func, args, {}, IndexError(
                f"index out of range in self (ids up to {label[1].high - 1} for an embedding of {rows} rows)"),
                input_label=label[0])
        known = self._ranges.get(key)
        if known is not None and known[0]() is not None and known[1] >= rows:
            self._reject(func, args, {}, IndexError(
                f"index out of range in self (ids up to {known[1]} from {known[2]}, for an embedding of {rows} rows)"))

    def _note_arange(self, func, args, kwargs, out) -> None:
        """Remember the largest value of an integer torch.arange (positions: ``pos_emb(arange(T))``)."""
        if not isinstance(out, torch.Tensor) or out.is_floating_point() or out.numel() == 0 or out.dim() != 1:
            return
        values = list(args[:3])
        start, step = (values[0], values[2] if len(values) > 2 else 1) if len(values) >= 2 else (0, 1)
        try:
            highest = int(start) + int(step) * (int(out.numel()) - 1) if step > 0 else int(start)
        except (TypeError, ValueError):
            return
        storage = out.untyped_storage()
        try:
            ref = weakref.ref(storage)
        except TypeError:
            return
        shown = ", ".join(str(v) for v in values)
        self._ranges[id(storage)] = (ref, highest, f"torch.arange({shown})")

    def locate(self, exc: BaseException) -> Optional[str]:
        """Where an error raised outside the kernels the replay sees came from (torch's own checks
        before dispatch, the model's Python code): the innermost module whose forward was running,
        and the input it was given when that is one of the user's inputs."""
        frames = []
        tb = exc.__traceback__
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
        for frame in reversed(frames):
            if frame.f_code.co_name != "forward":
                continue
            label = self._names.get(id(frame.f_locals.get("self")))
            if label is None:
                continue
            where = self._module_text(label)
            for value in frame.f_locals.values():
                for t in tensors_in(value) if isinstance(value, (torch.Tensor, tuple, list, dict)) else ():
                    named = self.labels.get(_storage_key(t))
                    if named is not None:
                        return f"{where}, given {named[0]}"
            return where
        return None

    # --- the message -------------------------------------------------------------------------

    def _module_text(self, label: str) -> str:
        cls = self.classes.get(label)
        if label.startswith("(") and cls:
            return f"in the top-level module ({cls})"
        return f"in module `{label}`" + (f" ({cls})" if cls else "")

    def _reject(self, func, args, kwargs, exc: BaseException, input_label: Optional[str] = None) -> None:
        if input_label is None:
            for t in _tensors(args, kwargs):
                label = self.labels.get(_storage_key(t))
                if label is not None:
                    input_label = label[0]
                    break
        module = self.tracker.modules[-1] if self.tracker.modules else None
        where = [f"aten.{func.overloadpacket.__name__}", f"during {phase_label(self.tracker.phase)}"]
        if module is not None:
            where.insert(0, self._module_text(module))
        message = f"{type(exc).__name__}: {one_line(exc)}"
        if self.cast is not None:
            message += f" (--dtype {self.cast} cast the model's floating-point weights and inputs)"
        subject = input_label if input_label is not None else f"TARGET `{self.target_text}`"
        raise Rejected(f"{subject}: real torch rejects it {', '.join(where)}: {message}") from None


def _core_dtypes(packet, args) -> tuple:
    """The dtypes of a matrix product's two matrices, or of a convolution's input and weight."""
    pair = args[1:3] if packet in _ADDED_TERM_FIRST else args[0:2]
    return tuple(t.dtype for t in pair if isinstance(t, torch.Tensor))


def _has_fake(args, kwargs) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return any(isinstance(t, FakeTensor) for t in _tensors(args, kwargs))


def check_batch(inputs: Any, target_text: str) -> None:
    """A zero-sized batch in the inputs TARGET returned is rejected up front: there is nothing to
    estimate (``parse_input`` rejects one in ``--input``)."""
    sizes = [int(t.shape[0]) for t in tensors_in(inputs) if t.dim() >= 1]
    if sizes and all(s == 0 for s in sizes):
        raise ConfigError(f"TARGET `{target_text}` returned inputs with a zero-sized batch (dim 0 is 0): there is "
                          "nothing to estimate")


def check_call(model, inputs: Any, specs: List[InputSpec], target_text: str) -> None:
    """The inputs must fit the signature of ``model.forward`` (two ``--input`` into a one-input model,
    a missing one): checked before the replay, which would otherwise fall back to real runs to find
    out. Skipped when forward pre-hooks may change the arguments or the signature is unknown."""
    import inspect

    if getattr(model, "_forward_pre_hooks", None) or type(model).__call__ is not torch.nn.Module.__call__:
        return  # pre-hooks may change the arguments; a __call__ of its own may not call forward
    forward = getattr(model, "forward", None)
    try:
        signature = inspect.signature(forward)
    except (TypeError, ValueError):
        return
    try:
        if isinstance(inputs, dict):
            signature.bind(**inputs)
        elif isinstance(inputs, (tuple, list)):
            signature.bind(*inputs)
        else:
            signature.bind(inputs)
    except TypeError as exc:
        name = f"{type(model).__name__}.forward{signature}"
        if specs:
            given = f"{len(specs)} --input option{'s' if len(specs) != 1 else ''}"
            raise ConfigError(f"{given} given, but {name} does not take them: {one_line(exc)}") from None
        raise ConfigError(f"TARGET `{target_text}`: the inputs it returned do not fit {name}: "
                          f"{one_line(exc)}") from None
