"""The kernels a CUDA GPU would run, for a replay on fake CPU tensors (``--device cuda``).

A CPU-only torch cannot make fake CUDA tensors, so the replay runs on fake CPU tensors and torch picks
CPU kernels. For most ops the tensors they allocate and save are the same on both devices; two that
matter are not:

- ``F.scaled_dot_product_attention``: on CPU, attention with dropout runs the math path, which saves
  the L x L attention matrix and a dropout mask of that size for backward. On CUDA torch's dispatcher
  picks flash or memory-efficient attention, which save only the output, the log-sum-exp
  (fp32, B x H x L; padded to a multiple of 32 for memory-efficient attention) and the RNG state.
- ``F.dropout`` in training: CPU multiplies by a noise tensor of the input's dtype, which is saved;
  CUDA runs the fused ``native_dropout`` and saves a 1-byte bool mask.

``CudaKernels`` is a ``TorchFunctionMode`` active during a fake replay for ``--device cuda``: it
catches those two calls (from any import path: ``F.scaled_dot_product_attention``, ``torch.dropout``,
``nn.Dropout``, and the two inside ``F.multi_head_attention_forward``) and runs what the CUDA
composite in ``aten/src/ATen/native/transformers/attention.cpp`` runs: the backend chosen as
``sdp_utils.cpp``'s ``select_sdp_backend`` would choose it, then torch's own fused op
(``aten._scaled_dot_product_flash_attention`` / ``_scaled_dot_product_efficient_attention``), whose
meta kernels give the outputs and whose autograd formulas decide what is saved for backward.

Assumptions, listed in the report: an sm80/sm90 GPU (A100, H100), for which flash needs fp16/bf16
and memory-efficient attention takes fp32 too (on sm86/89, RTX 30xx/40xx, torch also refuses flash
for training with head dims in (192, 224], or up to 256 with dropout); torch's default backend order (flash,
memory-efficient, math), or the one set with ``torch.nn.attention.sdpa_kernel``. On H100/B200 with
cuDNN > 9.15 torch puts cuDNN attention first: it too keeps no L x L matrix (its saved statistics are
B x H x L fp32), so the estimate changes by at most a few bytes per token.

Nothing here can run on a GPU on the machine this was written on: the backend choice is tested by
reading it back from the report, and the memory it implies through the fake replay.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

ASSUMED_GPU = ("an sm80/sm90 GPU (A100, H100) with torch's default attention backend order; RTX 30xx/40xx "
               "differ only in training with head dims over 192")

BACKENDS = {
    "flash": "flash attention",
    "efficient": "memory-efficient attention",
    "math": "math (composite: keeps the L x L attention matrix)",
    "fast_path": "fused inference fast path (its CPU kernel replayed)",
}
SAVES = {
    "flash": "output, log-sum-exp (fp32, B x H x L) and RNG state",
    "efficient": "output, log-sum-exp (fp32, B x H x ceil(L/32)*32) and RNG state",
    "math": "the L x L attention matrix (and its dropout mask)",
    "fast_path": "nothing (inference only); the CPU kernel holds the L x L weights while it runs",
}

_HALF = (torch.float16, torch.bfloat16)
_SDPA = F.scaled_dot_product_attention
_DROPOUTS = (F.dropout, torch.dropout)
# The fused inference paths of nn.MultiheadAttention / nn.TransformerEncoderLayer, and where their mask is.
_FAST_PATHS = {getattr(torch, name): index for name, index in
               (("_native_multi_head_attention", 9), ("_transformer_encoder_layer_fwd", 18)) if hasattr(torch, name)}
# torch.backends.cuda's SDPBackend numbers, as torch._C._get_sdp_priority_order() gives them.
_ORDER_NAMES = {0: "math", 1: "flash", 2: "efficient"}


def _sdpa_args(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    return query, key, value, attn_mask, float(dropout_p), bool(is_causal), scale, bool(enable_gqa)


def _dropout_args(input, p=0.5, training=True, inplace=False):  # noqa: A002 (F.dropout's own names)
    return input, p, training, inplace


def _torch_dropout_args(input, p, train):  # noqa: A002 (torch.dropout's own names)
    return input, p, train, False


def _dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def _priority() -> List[str]:
    try:
        order = list(torch._C._get_sdp_priority_order())
    except (AttributeError, RuntimeError):
        order = [1, 2, 0]
    return [_ORDER_NAMES[n] for n in order if n in _ORDER_NAMES]


def _enabled(backend: str) -> bool:
    cuda = torch.backends.cuda
    return {"flash": cuda.flash_sdp_enabled, "efficient": cuda.mem_efficient_sdp_enabled,
            "math": cuda.math_sdp_enabled}[backend]()


def _dense_checks(q, k, v, enable_gqa: bool) -> Optional[str]:
    """The checks flash and memory-efficient attention share (dense inputs)."""
    if not (q.dim() == k.dim() == v.dim() == 4):
        return f"needs 4-D query/key/value (got {q.dim()}-D)"
    if q.size(0) != k.size(0) or q.size(0) != v.size(0):
        return "needs the same batch size for query, key and value"
    qh, kh, vh = q.size(1), k.size(1), v.size(1)
    if not (qh == kh == vh):
        if not (enable_gqa and kh == vh and kh > 0 and qh % kh == 0):
            return "needs the same number of heads for query, key and value (or enable_gqa)"
    if q.size(-2) == 0 or k.size(-2) == 0:
        return "does not take a zero sequence length"
    return None


def _flash_rejects(q, k, v, mask, dropout_p, is_causal, enable_gqa) -> Optional[str]:
    """Why flash attention would not run, following sdp_utils.cpp's can_use_flash_attention."""
    if not _enabled("flash"):
        return "flash attention is disabled (torch.backends.cuda / sdpa_kernel)"
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        return f"flash needs 4-D query/key/value (got {q.dim()}-D)"
    if mask is not None:
        return "flash takes no attn_mask"
    d = q.size(-1)
    if not (d == k.size(-1) == v.size(-1)) or d > 256:
        return f"flash needs equal head dims of at most 256 (got {q.size(-1)}/{k.size(-1)}/{v.size(-1)})"
    if is_causal and q.size(-2) != k.size(-2):
        return "flash takes is_causal only with equal query and key lengths"
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in _HALF:
        return f"flash needs fp16/bf16 (got {_dtype_name(q.dtype)})"
    why = _dense_checks(q, k, v, enable_gqa)
    if why is not None:
        return "flash " + why
    if any(t.stride(-1) != 1 and t.size(-1) != 1 for t in (q, k, v)):
        return "flash needs the last dim of query/key/value to have stride 1"
    return None


def _efficient_rejects(q, k, v, mask, dropout_p, is_causal, enable_gqa) -> Optional[str]:
    """Why memory-efficient attention would not run (can_use_mem_efficient_attention, sm80+)."""
    if not _enabled("efficient"):
        return "memory-efficient attention is disabled (torch.backends.cuda / sdpa_kernel)"
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        return f"memory-efficient attention needs 4-D query/key/value (got {q.dim()}-D)"
    align = 8 if q.dtype in _HALF else 4  # minimum_gemm_alignment on sm80+
    if q.size(-1) != k.size(-1) or q.size(-1) % align or v.size(-1) % align or q.size(-1) == 0 or v.size(-1) == 0:
        return f"memory-efficient attention needs head dims divisible by {align} (got {q.size(-1)}/{v.size(-1)})"
    if any(t.numel() and t.storage_offset() % align for t in (q, k, v)):
        return f"memory-efficient attention needs storage offsets aligned to {align} elements"
    why = _dense_checks(q, k, v, enable_gqa)
    if why is not None:
        return "memory-efficient attention " + why
    if any(t.stride(-1) != 1 for t in (q, k, v)) or (mask is not None and mask.stride(-1) != 1):
        return "memory-efficient attention needs the last dim of its inputs to have stride 1"
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in (torch.float16, torch.float32, torch.bfloat16):
        return f"memory-efficient attention needs fp16/bf16/fp32 (got {_dtype_name(q.dtype)})"
    return None


def choose_backend(q, k, v, mask, dropout_p, is_causal, enable_gqa) -> Tuple[str, List[str]]:
    """The backend torch's CUDA dispatcher would pick, and why the ones before it were skipped."""
    skipped = []
    for backend in _priority():
        if backend == "flash":
            why = _flash_rejects(q, k, v, mask, dropout_p, is_causal, enable_gqa)
        elif backend == "efficient":
            why = _efficient_rejects(q, k, v, mask, dropout_p, is_causal, enable_gqa)
        else:
            why = None if _enabled("math") else "math attention is disabled"
        if why is None:
            return backend, skipped
        skipped.append(why)
    raise RuntimeError("No available kernel. Aborting execution. (" + "; ".join(skipped) + ")")


# --- the CUDA composite of scaled_dot_product_attention --------------------------------------


def _bool_mask_to_float(mask, dtype):
    """attention.cpp's convert_boolean_attn_mask: True takes part (0), False is -inf."""
    if mask is None or mask.dtype != torch.bool:
        return mask
    zero = torch.scalar_tensor(0.0, dtype=dtype, device=mask.device)
    neg = torch.scalar_tensor(-math.inf, dtype=dtype, device=mask.device)
    return torch.where(mask, zero, neg)


def _pad_last_dim(t, alignment: int):
    rem = t.size(-1) % alignment
    return t if rem == 0 else F.pad(t, (0, alignment - rem))


def _efficient_mask(mask, q, k):
    """attention.cpp's preprocess_mask: expand to 4-D, pad the last dim to a multiple of 16."""
    mask = mask.expand(q.size(0), q.size(1), q.size(2), k.size(2))
    last = mask.size(-1)
    if last % 16:
        return F.pad(mask, (0, 16 - last % 16))[..., :last]
    if mask.stride(0) % 16 or mask.stride(1) % 16 or mask.stride(2) % 16:
        return mask.contiguous()
    return mask


def _math_with_cuda_dropout(q, k, v, mask, dropout_p, is_causal, scale, enable_gqa):
    """``_scaled_dot_product_attention_math`` as written in attention.cpp, with ``at::dropout`` as CUDA
    runs it (``native_dropout``: a bool mask) rather than the CPU noise tensor."""
    origin = q.dtype
    promote = not torch.backends.cuda.fp16_bf16_reduction_math_sdp_allowed()
    q, k, v = ((t.float() if promote and t.dtype in _HALF else t) for t in (q, k, v))
    negative = scale is not None and scale < 0
    factor = math.sqrt(abs(scale) if negative else (scale if scale is not None else 1.0 / math.sqrt(q.size(-1))))
    query = q * (-factor if negative else factor)
    if is_causal:
        if mask is not None:
            raise RuntimeError(
                "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
        mask = _bool_mask_to_float(torch.ones(query.size(-2), k.size(-2), dtype=torch.bool).tril(), query.dtype)
    if enable_gqa and k.dim() >= 3 and q.size(-3) != k.size(-3):
        k = k.repeat_interleave(q.size(-3) // k.size(-3), -3)
        v = v.repeat_interleave(q.size(-3) // v.size(-3), -3)
    attn = torch.matmul(query, k.transpose(-2, -1) * factor)
    if mask is not None:
        attn.add_(mask)
    attn = torch.ops.aten._safe_softmax(attn, -1)
    attn = torch.ops.aten.native_dropout(attn, dropout_p, True)[0]
    out = torch.matmul(attn, v).to(origin)
    weights = attn.to(origin)  # the composite's second output, computed and dropped
    del weights
    return out


def _autocast_inputs(tensors):
    """CUDA autocast runs scaled_dot_product_attention in the autocast dtype (lower_precision_fp
    list); the replay models CUDA autocast with CPU autocast."""
    if not torch.is_autocast_enabled("cpu"):
        return tensors, False
    dtype = torch.get_autocast_dtype("cpu")

    def cast(t):
        if isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != torch.float64 and t.dtype != dtype:
            return t.to(dtype)
        return t

    return [cast(t) for t in tensors], True


def _check_inputs(q, k, v, mask) -> None:
    """The dtype checks of attention.cpp's validate_sdpa_input, which runs before any backend."""
    if not (q.dtype == k.dtype == v.dtype):
        raise RuntimeError(
            f"Expected query, key, and value to have the same dtype, but got query.dtype: {q.dtype} "
            f"key.dtype: {k.dtype} and value.dtype: {v.dtype} instead.")
    if mask is not None and mask.dtype != torch.bool and mask.dtype != q.dtype:
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {mask.dtype} and query.dtype: {q.dtype} instead.")
    if q.dim() < 2 or k.dim() < 2 or v.dim() < 2:
        raise RuntimeError("Expected query, key, and value to all be at least 2 dimensional")


class CudaKernels(TorchFunctionMode):
    """Replays attention and dropout as CUDA runs them (see the module docstring); records the
    backend of every attention call, by the module that made it."""

    def __init__(self, tracker=None) -> None:
        super().__init__()
        self.tracker = tracker
        self.calls: Dict[tuple, int] = {}
        self.dropout_calls = 0

    # --- the mode ----------------------------------------------------------------------------

    def __enter__(self):
        # nn.MultiheadAttention, nn.TransformerEncoderLayer and nn.TransformerEncoder take their fused
        # inference fast paths only when no tensor "has_torch_function", which any active function
        # mode makes true: answer as if this mode were not there, so the same path is taken as
        # without it (those fused CPU kernels are then replayed as they are).
        self._has_torch_function = torch.overrides.has_torch_function
        torch.overrides.has_torch_function = _ignoring_this_mode(self._has_torch_function, self)
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            torch.overrides.has_torch_function = self._has_torch_function

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is _SDPA:
            return self.attention(*args, **kwargs)
        if func in _DROPOUTS:
            return self.dropout(func, args, kwargs)
        if func in _FAST_PATHS:
            x, index = args[0], _FAST_PATHS[func]
            mask = kwargs.get("mask", args[index] if len(args) > index else None)
            self._record("fast_path", [], x, x, mask, 0.0, False)
            return func(*args, **kwargs)
        if func is F.multi_head_attention_forward:
            # Its body calls F's own globals while this mode is off (a mode is popped while its
            # handler runs): point those two at the CUDA versions for the call.
            with _functional_globals(scaled_dot_product_attention=self.attention,
                                     dropout=lambda *a, **k: self.dropout(F.dropout, a, k)):
                return func(*args, **kwargs)
        return func(*args, **kwargs)

    # --- attention ----------------------------------------------------------------------------

    def attention(self, *args, **kwargs):
        q, k, v, mask, dropout_p, is_causal, scale, enable_gqa = _sdpa_args(*args, **kwargs)
        (q, k, v, mask), autocast = _autocast_inputs([q, k, v, mask])
        _check_inputs(q, k, v, mask)
        if autocast:
            with torch.autocast("cpu", enabled=False):
                return self._attention(q, k, v, mask, dropout_p, is_causal, scale, enable_gqa)
        return self._attention(q, k, v, mask, dropout_p, is_causal, scale, enable_gqa)

    def _attention(self, q, k, v, mask, dropout_p, is_causal, scale, enable_gqa):
        backend, skipped = choose_backend(q, k, v, mask, dropout_p, is_causal, enable_gqa)
        self._record(backend, skipped, q, k, mask, dropout_p, is_causal)
        if backend == "flash":
            size = q.size(-1)
            padded = [_pad_last_dim(t, 8) for t in (q, k, v)]
            og_scale = scale if scale is not None else 1.0 / math.sqrt(size)
            out = torch.ops.aten._scaled_dot_product_flash_attention(
                *padded, dropout_p, is_causal, False, scale=og_scale)[0]
            return out if out.size(-1) == size else out[..., :size]
        mask = _bool_mask_to_float(mask, q.dtype)
        if backend == "efficient":
            compute_lse = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)
            if mask is not None:
                mask = _efficient_mask(mask, q, k)
            return torch.ops.aten._scaled_dot_product_efficient_attention(
                q, k, v, mask, compute_lse, dropout_p, is_causal, scale=scale)[0]
        if dropout_p > 0.0:
            return _math_with_cuda_dropout(q, k, v, mask, dropout_p, is_causal, scale, enable_gqa)
        return torch.ops.aten._scaled_dot_product_attention_math(
            q, k, v, mask, 0.0, is_causal, None, scale=scale, enable_gqa=enable_gqa)[0]

    def _record(self, backend, skipped, q, k, mask, dropout_p, is_causal) -> None:
        module = None
        if self.tracker is not None and getattr(self.tracker, "modules", None):
            module = self.tracker.modules[-1]
        mask_text = None if mask is None else _dtype_name(mask.dtype)
        key = (module or "(outside any module)", backend, tuple(q.shape), tuple(k.shape),
               _dtype_name(q.dtype), dropout_p, is_causal, mask_text, tuple(skipped))
        self.calls[key] = self.calls.get(key, 0) + 1

    # --- dropout ------------------------------------------------------------------------------

    def dropout(self, func, args, kwargs):
        parse = _torch_dropout_args if func is torch.dropout else _dropout_args
        input, p, train, inplace = parse(*args, **kwargs)  # noqa: A001
        if p < 0.0 or p > 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        # aten's dropout(): the fused kernel when is_fused_kernel_acceptable (a CUDA input, 0 < p < 1,
        # not empty); the in-place variant and p in {0, 1} run the same code on both devices.
        if train and not inplace and 0.0 < p < 1.0 and input.numel() > 0:
            self.dropout_calls += 1
            return torch.ops.aten.native_dropout(input, float(p), True)[0]
        return func(*args, **kwargs)

    # --- summary ------------------------------------------------------------------------------

    def summary(self) -> dict:
        attention = []
        for key, calls in self.calls.items():
            module, backend, q_shape, k_shape, dtype, dropout_p, is_causal, mask, skipped = key
            attention.append({
                "module": module, "backend": backend, "kernel": BACKENDS[backend], "calls": calls,
                "query_shape": list(q_shape), "key_shape": list(k_shape), "dtype": dtype,
                "dropout_p": dropout_p, "is_causal": is_causal, "attn_mask": mask,
                "saved_for_backward": SAVES[backend], "skipped": list(skipped),
            })
        return {
            "assumed": ASSUMED_GPU,
            "attention": attention,
            "dropout": {"kernel": "native_dropout (1-byte bool mask saved)", "calls": self.dropout_calls},
        }


def _ignoring_this_mode(has_torch_function, mode):
    def check(args):
        if torch.overrides._get_current_function_mode() is not mode:
            return has_torch_function(args)  # inside the mode's handler: it is off already
        with torch.overrides._pop_mode_temporarily():
            return has_torch_function(args)

    return check


@contextmanager
def _functional_globals(**replacements: Any):
    saved = {name: getattr(F, name) for name in replacements}
    try:
        for name, value in replacements.items():
            setattr(F, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(F, name, value)
