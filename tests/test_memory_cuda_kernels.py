"""`--device cuda`: attention and dropout replayed as the CUDA kernels run them (mllint.memory.kernels).

There is no GPU here: these tests check the backend choice against the rules of torch's CUDA
dispatcher (sdp_utils.cpp), what the replay saves for backward under each backend, and what that does
to the estimate of a nanoGPT-like model; the CPU estimate must not change."""

import json
import math

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from mllint.memory.estimate import Estimator  # noqa: E402
from mllint.memory.kernels import CudaKernels, choose_backend  # noqa: E402
from mllint.memory.replay import fake_mode, replay  # noqa: E402
from mllint.memory.target import Settings, load_target  # noqa: E402

MODELS = "tests/memory_models.py"


def qkv(B=2, H=4, L=16, D=8, dtype=torch.float32, Lk=None):
    make = lambda n: torch.randn(B, H, n, D, dtype=dtype)  # noqa: E731
    return make(L), make(Lk or L), make(Lk or L)


@pytest.mark.parametrize("dtype,mask,D,expected", [
    (torch.bfloat16, None, 64, "flash"),
    (torch.float16, None, 256, "flash"),
    (torch.float32, None, 64, "efficient"),  # flash needs fp16/bf16
    (torch.bfloat16, "bool", 64, "efficient"),  # flash takes no mask
    (torch.bfloat16, None, 512, "efficient"),  # flash: head dim <= 256
    (torch.float32, None, 6, "math"),  # efficient: fp32 head dim divisible by 4
    (torch.bfloat16, None, 12, "flash"),  # flash pads the head dim to a multiple of 8 itself
    (torch.float16, "bool", 12, "math"),  # efficient: fp16 head dim divisible by 8
    (torch.float64, None, 64, "math"),
])
def test_backend_follows_the_cuda_dispatcher(dtype, mask, D, expected):
    q, k, v = qkv(D=D, dtype=dtype)
    m = torch.ones(16, 16, dtype=torch.bool).tril() if mask else None
    backend, skipped = choose_backend(q, k, v, m, 0.1, m is None, False)
    assert backend == expected, skipped
    assert len(skipped) == ["flash", "efficient", "math"].index(expected)


def test_backend_respects_sdpa_kernel_and_shapes():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v = qkv(dtype=torch.bfloat16)
    with sdpa_kernel([SDPBackend.MATH]):
        assert choose_backend(q, k, v, None, 0.0, True, False)[0] == "math"
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        assert choose_backend(q, k, v, None, 0.0, True, False)[0] == "efficient"
    # causal with different query and key lengths: not flash
    q, k, v = qkv(dtype=torch.bfloat16, Lk=32)
    assert choose_backend(q, k, v, None, 0.0, True, False)[0] == "efficient"
    # 3-D inputs: math only
    assert choose_backend(q[0], k[0], v[0], None, 0.0, False, False)[0] == "math"


def saved_by_attention(dtype, dropout_p, mask=None, B=2, H=4, L=40, D=8):
    """Run one attention call under fake tensors and the CUDA kernel mode; return the backend and
    the (shape, dtype) of every tensor autograd saves for its backward."""
    saved = []
    with fake_mode(), CudaKernels() as kernels:
        q, k, v = (torch.randn(B, H, L, D, dtype=dtype, requires_grad=True) for _ in range(3))
        with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append((tuple(t.shape), t.dtype)) or t,
                                                      lambda t: t):
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=mask is None)
        out.sum().backward()
        assert q.grad.shape == q.shape
    (entry,) = kernels.summary()["attention"]
    return entry["backend"], saved


@pytest.mark.parametrize("dropout_p", [0.0, 0.2])
def test_flash_saves_output_and_logsumexp_never_the_attention_matrix(dropout_p):
    B, H, L, D = 2, 4, 40, 8
    backend, saved = saved_by_attention(torch.bfloat16, dropout_p, B=B, H=H, L=L, D=D)
    assert backend == "flash"
    assert ((B, H, L), torch.float32) in saved  # the log-sum-exp
    assert sum(1 for s in saved if s == ((B, H, L, D), torch.bfloat16)) == 4  # q, k, v and the output
    assert not any(len(shape) == 4 and shape[-2:] == (L, L) for shape, _ in saved)


def test_flash_pads_the_head_dim_to_8():
    B, H, L, D = 2, 4, 40, 12
    backend, saved = saved_by_attention(torch.float16, 0.1, B=B, H=H, L=L, D=D)
    assert backend == "flash"
    assert sum(1 for s in saved if s == ((B, H, L, 16), torch.float16)) == 4  # padded q, k, v and output


@pytest.mark.parametrize("dropout_p", [0.0, 0.2])
def test_efficient_pads_logsumexp_to_32(dropout_p):
    B, H, L, D = 2, 4, 40, 8
    backend, saved = saved_by_attention(torch.float32, dropout_p, B=B, H=H, L=L, D=D)
    assert backend == "efficient"
    assert ((B, H, 32 * math.ceil(L / 32)), torch.float32) in saved
    assert not any(len(shape) == 4 and shape[-2:] == (L, L) for shape, _ in saved)


def test_math_path_with_dropout_saves_a_bool_mask():
    B, H, L, D = 2, 4, 16, 6  # fp32 head dim 6: neither fused kernel
    backend, saved = saved_by_attention(torch.float32, 0.2, B=B, H=H, L=L, D=D)
    assert backend == "math"
    assert ((B, H, L, L), torch.bool) in saved  # native_dropout's mask, as on CUDA
    assert ((B, H, L, L), torch.float32) in saved  # the attention matrix the math path keeps


def dropout_mask_bytes(model, batch):
    """What the dropout layers outside attention save on CUDA: native_dropout's 1-byte mask of each
    input (embedding dropout, then a residual and an MLP dropout per block, each B x T x C)."""
    T, C = model.wpe.weight.shape
    layers = [m for m in model.modules() if isinstance(m, torch.nn.Dropout)]
    assert len(layers) == 1 + 2 * len(model.h)
    return len(layers) * batch * T * C


@pytest.mark.parametrize("dtype", ["fp32", "amp-bf16"])
def test_cuda_estimate_with_attention_dropout_costs_only_the_dropout_masks(dtype):
    from memory_models import NanoGPT  # tests/ is on sys.path

    batch = 4
    cuda = {}
    for name in ("nanogpt", "nanogpt_dropout"):
        cuda[name] = Estimator(load_target(f"{MODELS}:{name}"), Settings(device="cuda", dtype=dtype)).at(batch)
        assert cuda[name].method == "fake"
    with_dropout, without = cuda["nanogpt_dropout"], cuda["nanogpt"]
    model = NanoGPT()
    bound = dropout_mask_bytes(model, batch)  # fused attention saves its RNG state with or without dropout
    diff = with_dropout.run.peak - without.run.peak
    assert 0 < diff <= bound, (diff, bound)
    backend = {"fp32": "efficient", "amp-bf16": "flash"}[dtype]
    for est in (with_dropout, without):
        assert {a["backend"] for a in est.run.cuda_kernels["attention"]} == {backend}
    # On CPU the same dropout takes the math path and keeps B x H x T x T matrices: far beyond the bound.
    cpu = {name: Estimator(load_target(f"{MODELS}:{name}"), Settings(dtype=dtype)).at(batch)
           for name in ("nanogpt", "nanogpt_dropout")}
    assert cpu["nanogpt_dropout"].run.peak - cpu["nanogpt"].run.peak > 2 * bound


@pytest.mark.parametrize("name", ["nanogpt", "nanogpt_dropout"])
def test_cpu_estimate_unchanged_and_exact(name):
    target = load_target(f"{MODELS}:{name}")
    est = Estimator(target, Settings()).at(4)
    assert est.run.cuda_kernels is None
    real = replay(target, Settings(), 4, fake=False)
    assert est.run.peak == real.peak


def test_report_names_the_backend(capsys, monkeypatch):
    from pathlib import Path

    from mllint.cli import run as mllint_run

    monkeypatch.chdir(Path(__file__).resolve().parent.parent)

    def run(*args):
        code = mllint_run(["memory", f"{MODELS}:nanogpt_dropout", "--batch-size", "2", *args])
        return code, capsys.readouterr().out

    code, out = run("--device", "cuda", "--format", "json")
    assert code == 0
    data = json.loads(out)
    attention = data["cuda_kernels"]["attention"]
    assert [a["module"] for a in attention] == ["h.0.attn", "h.1.attn"]
    assert all(a["backend"] == "efficient" and a["dropout_p"] == 0.2 and a["calls"] == 2 for a in attention)
    assert attention[0]["query_shape"] == [2, 4, 64, 16]
    assert "flash needs fp16/bf16" in attention[0]["skipped"][0]
    assert data["cuda_kernels"]["dropout"]["calls"] == 2 * 5  # 5 dropout layers, 2 steps

    code, out = run("--device", "cuda", "--dtype", "amp-bf16")
    assert code == 0
    assert "CUDA kernels replayed" in out
    assert "flash attention" in out and "h.0.attn ... h.1.attn (2 modules)" in out

    code, out = run("--format", "json")  # CPU: nothing about CUDA kernels
    assert "cuda_kernels" not in json.loads(out)


def test_multihead_attention_paths_reach_the_cuda_kernels():
    """nn.TransformerEncoderLayer (MultiheadAttention with need_weights=False: SDPA) and a plain
    nn.MultiheadAttention call (need_weights=True: softmax and dropout inside F.multi_head_attention_forward)."""
    with fake_mode(), CudaKernels() as kernels:
        layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True)
        x = torch.randn(2, 10, 32)
        layer(x).sum().backward()
        mha = torch.nn.MultiheadAttention(32, 4, dropout=0.1, batch_first=True)
        out, weights = mha(x, x, x)
        assert weights.shape == (2, 10, 10)
    summary = kernels.summary()
    assert [a["backend"] for a in summary["attention"]] == ["efficient"]
    # encoder layer: 3 nn.Dropout layers; MultiheadAttention: the dropout of its attention weights
    assert summary["dropout"]["calls"] == 4
    # F's globals are restored after F.multi_head_attention_forward
    assert F.scaled_dot_product_attention is torch._C._nn.scaled_dot_product_attention
    assert F.dropout.__name__ == "dropout" and F.dropout.__module__ == "torch.nn.functional"


def test_inference_fast_paths_are_kept_and_named():
    """Under the mode nn.TransformerEncoderLayer still takes its fused inference path (a function mode
    would otherwise turn it off): the CUDA estimate equals the CPU one and the report names it."""
    target = load_target(f"{MODELS}:encoder")
    cpu = Estimator(target, Settings(mode="inference")).at(4)
    cuda = Estimator(target, Settings(mode="inference", device="cuda")).at(4)
    assert cuda.run.peak == cpu.run.peak
    assert {a["backend"] for a in cuda.run.cuda_kernels["attention"]} == {"fast_path"}
    assert torch.overrides.has_torch_function is torch._C._has_torch_function  # restored
