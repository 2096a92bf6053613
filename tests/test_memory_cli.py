"""`mllint memory` as a user runs it: the real entry point (mllint.cli.run, what the `mllint` script
calls) in-process, and the installed command in a subprocess for the end-to-end checks (each
subprocess pays ~6 s of torch and torch._dynamo imports, so there are only two)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from mllint.cli import run as mllint_run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODELS = "tests/memory_models.py"


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch):
    monkeypatch.chdir(ROOT)


def cli(capsys, *args):
    code = mllint_run(["memory", *args])
    out, err = capsys.readouterr()
    return code, out, err


def subprocess_run(*args):
    return subprocess.run([sys.executable, "-m", "mllint", "memory", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_text_report_end_to_end():
    proc = subprocess_run(f"{MODELS}:gpt")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Peak (tensor level):" in out
    for heading in ("Model states", "Breakdown at the peak", "Peak by phase", "Top modules by saved activations",
                    "not modelled:"):
        assert heading in out
    assert "blocks." in out  # module names of the GPT
    assert proc.stderr == ""


def test_data_dependent_error_is_one_line_end_to_end():
    # mlp_model_only takes 64 features: fake tensors fail, the real run fails too -> the user's error.
    proc = subprocess_run(f"{MODELS}:mlp_model_only", "--input", "16x32")
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "raised RuntimeError" in err and "forward, step 1" in err


def test_json_report_and_cuda_range(capsys):
    code, out, err = cli(capsys, f"{MODELS}:cnn", "--format", "json", "--device", "cuda", "--batch-size", "4")
    assert code == 0, err
    data = json.loads(out)
    for key in ("peak_bytes", "parameters_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
                "phase", "range"):
        assert key in data
    assert data["batch_size"] == 4
    assert data["phase"] in ("forward", "backward", "optimizer step")
    assert data["range"]["low"] > data["peak_bytes"]
    assert data["range"]["high"] > data["range"]["low"]
    names = [t["name"] for t in data["cuda"]["terms"]]
    assert any("context" in n for n in names) and any("cuBLAS" in n for n in names)
    assert sum(data["peak_breakdown"].values()) == data["peak_bytes"]
    code, out, err = cli(capsys, f"{MODELS}:cnn", "--device", "cuda", "--batch-size", "4")
    assert "CUDA range" in out and "CUDA context" in out and "max_memory_reserved" in out


def test_input_option_and_inference(capsys):
    code, out, err = cli(capsys, f"{MODELS}:mlp_model_only", "--input", "16x64", "--mode", "inference",
                         "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["batch_size"] == 16
    assert data["inputs_bytes"] == 16 * 64 * 4
    assert data["gradients_bytes"] == 0 and data["optimizer_bytes"] == 0
    assert data["parameters_bytes"] == 4 * (64 * 128 + 128 + 128 * 4 + 4)


def test_gpu_memory_finds_largest_batch(capsys):
    needs = {}
    for b in (40, 41):
        code, out, err = cli(capsys, f"{MODELS}:mlp", "--device", "cuda", "--batch-size", str(b), "--format", "json")
        needs[b] = json.loads(out)["range"]["high"]
    assert needs[41] > needs[40]
    budget = (needs[40] + needs[41]) // 2
    code, out, err = cli(capsys, f"{MODELS}:mlp", "--gpu-memory", str(budget), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["gpu_memory"]["largest_batch_size"] == 40
    assert data["batch_size"] == 40
    assert {p["batch_size"] for p in data["gpu_memory"]["probes"] if p["fits"]} >= {1, 2, 4, 8, 16, 32, 40}
    code, out, err = cli(capsys, f"{MODELS}:mlp", "--gpu-memory", "1MiB")
    assert code == 0 and "none (batch 1 does not fit)" in out


def test_measure_prints_predicted_and_measured(capsys):
    code, out, err = cli(capsys, f"{MODELS}:lstm", "--measure")
    assert code == 0, err
    assert "Predicted vs measured" in out
    line = next(l for l in out.splitlines() if l.strip().startswith("tensor peak"))
    assert line.rstrip().endswith("exact"), line
    code, out, err = cli(capsys, f"{MODELS}:cnn", "--measure", "--format", "json", "--mode", "inference")
    data = json.loads(out)
    assert data["measured"]["peak"] == data["peak_bytes"]
    # the allocator level beside the tensor level, predicted and measured
    assert data["allocator_peak_bytes"] == data["allocator"]["peak_bytes"] >= data["peak_bytes"]
    assert abs(data["allocator_peak_bytes"] - data["measured"]["allocator_peak"]) <= 0.05 * data["measured"]["allocator_peak"]
    assert "profiler" in data["allocator"]["how"] and data["allocator"]["signatures"] > 0


def test_allocator_level_names_the_ops_with_scratch(capsys):
    # nn.LSTM on CPU: oneDNN's RNN kernel allocates a workspace inside itself, no tensor tracker sees it
    code, out, err = cli(capsys, f"{MODELS}:lstm", "--mode", "inference", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    alloc = data["allocator"]
    assert alloc["over_tensor_peak_bytes"] > 0 and data["allocator_peak_bytes"] > data["peak_bytes"]
    assert alloc["op"] == "aten.mkldnn_rnn_layer.default"
    assert alloc["scratch_ops"][0]["op"] == "aten.mkldnn_rnn_layer.default"
    code, out, err = cli(capsys, f"{MODELS}:lstm", "--mode", "inference")
    line = next(l for l in out.splitlines() if l.startswith("Peak (allocator):"))
    assert "inside mkldnn_rnn_layer" in line and "USDT" not in err
    # modelling CUDA without a GPU: the CPU kernels' scratch is not the GPU's, so none is claimed
    code, out, err = cli(capsys, f"{MODELS}:lstm", "--device", "cuda", "--format", "json")
    data = json.loads(out)
    assert data["allocator_peak_bytes"] is None and "not measured" in data["allocator"]["how"]


@pytest.mark.parametrize("args,needle", [
    ((f"{MODELS}:nope",), "has no function"),
    (("missing_file.py:f",), "no such file"),
    ((f"{MODELS}",), "expected path/to/file.py:function"),
    ((f"{MODELS}:raises",), "ValueError: this model cannot be built"),
    ((f"{MODELS}:not_a_model",), "returned int"),
    ((f"{MODELS}:mlp_model_only",), "--input"),
    ((f"{MODELS}:mlp_model_only", "--input", "16xq"), "shape"),
    ((f"{MODELS}:mlp_model_only", "--input", "16x64:float99"), "unknown dtype"),
    ((f"{MODELS}:mlp", "--dtype", "fp8"), "fp8"),
    ((f"{MODELS}:mlp", "--gpu-memory", "lots"), "--gpu-memory"),
    ((f"{MODELS}:mlp", "--measure", "--device", "cuda"), "--device cuda"),
])
def test_bad_input_is_one_line_exit_2(capsys, args, needle):
    code, out, err = cli(capsys, *args)
    assert code == 2, (out, err)
    err = err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err and "internal error" not in err
    assert needle in err


def test_real_run_fallback_measures_the_allocator(capsys):
    # fake tensors cannot run boolean-mask indexing: the estimate is a real run, whose allocator
    # peak is measured (profiler memory events), the same as --measure reads it
    code, out, err = cli(capsys, f"{MODELS}:masked", "--format", "json", "--measure")
    assert code == 0, err
    data = json.loads(out)
    assert data["method"] == "real"
    assert data["allocator_peak_bytes"] >= data["peak_bytes"] > 0
    assert data["allocator"]["how"].startswith("measured")
    assert abs(data["allocator_peak_bytes"] - data["measured"]["allocator_peak"]) <= 0.05 * data["measured"]["allocator_peak"]
