"""`mllint memory` as a user runs it: the real entry point (mllint.cli.run, what the `mllint` script
calls) in-process, and the installed command in a subprocess for the end-to-end checks (each
subprocess pays ~6 s of torch and torch._dynamo imports, so there are only two)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from cli_helpers import read_terminal  # noqa: E402
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
    # mlp_model_only takes 64 features: the fake kernel fails, the real kernel on the same shapes
    # fails too -> real torch's error, at the user's batch size.
    proc = subprocess_run(f"{MODELS}:mlp_model_only", "--input", "16x32")
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "RuntimeError: mat1 and mat2 shapes cannot be multiplied (16x32 and 64x128)" in err
    assert "--input 1 (16x32:float32)" in err and "forward, step 1" in err


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


# --- inputs real torch rejects (mllint/memory/validate.py) -------------------------------------------

TARGETS = '''
import torch
import torch.nn as nn


def norm_first():
    return nn.Sequential(nn.LayerNorm(16), nn.Linear(16, 4))


def empty_batch():
    return nn.Sequential(nn.Linear(8, 4)), torch.randn(0, 8)


class Checked(nn.Module):
    """Raises its own error (in Python, not in a kernel) on a wrong width."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 4)

    def forward(self, x):
        if x.shape[1] != 64:
            raise ValueError(f"expected 64 features, got an input of shape {tuple(x.shape)}")
        return self.fc(x)


def checked():
    return Checked()


class OneHot(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 4)

    def forward(self, y):
        return self.fc(nn.functional.one_hot(y, 10).float())


def one_hot(batch_size=8):
    return OneHot(), torch.randint(0, 10, (batch_size,))


def int32_target(batch_size=8):
    model = nn.Linear(16, 5)
    target = torch.zeros(batch_size, dtype=torch.int32)
    return model, torch.randn(batch_size, 16), lambda out: nn.functional.cross_entropy(out, target)
'''


@pytest.fixture(scope="module")
def targets(tmp_path_factory):
    path = tmp_path_factory.mktemp("targets") / "rejected_targets.py"
    path.write_text(TARGETS)
    return str(path)


def one_line_error(code, out, err):
    assert code == 2, (out, err)
    err = err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "internal error" not in err, err
    assert out == ""
    return err


@pytest.mark.parametrize("args,needles", [
    # An int64 / float64 / bf16 input into a float32 nn.Linear: fake kernels accept it, real ones do not.
    (("--input", "64x64:int64"), ["--input 1 (64x64:int64)", "module `0` (Linear)",
                                  "same dtype, but got Long and Float"]),
    (("--input", "64x64:float64", "--mode", "inference"), ["--input 1 (64x64:float64)", "Double and Float"]),
    (("--input", "64x64:bf16"), ["--input 1 (64x64:bfloat16)", "BFloat16 and Float"]),
    # A wrong width, reported with the user's batch (64), not a reduced one of a real run.
    (("--input", "64x32"), ["--input 1 (64x32:float32)", "(64x32 and 64x128)", "during forward, step 1"]),
    (("--input", "0x64"), ["--input 1 `0x64`", "zero-sized batch"]),
    (("--input", "16x64", "--input", "16x64"), ["2 --input options given, but Sequential.forward(input)",
                                                "too many positional arguments"]),
    (("--input", "16x64", "--input", "0x3"), ["--input 2 `0x3`", "zero-sized batch"]),
])
def test_inputs_real_torch_rejects_are_one_line_errors(capsys, args, needles):
    err = one_line_error(*cli(capsys, f"{MODELS}:mlp_model_only", *args))
    for needle in needles:
        assert needle in err, err
    for probe in ("8x32", "2x32"):  # the batch sizes of the fallback's real runs
        assert probe not in err


def test_inputs_naming_the_input_and_module(capsys, targets):
    # Token ids into nn.Embedding are right; float ids are not; ids beyond the vocabulary are not.
    code, out, err = cli(capsys, f"{MODELS}:seq2seq", "--input", "2x12:int64:200", "--input", "2x10:int64:200",
                         "--mode", "inference", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["batch_size"] == 2
    err = one_line_error(*cli(capsys, f"{MODELS}:seq2seq", "--input", "2x12:int64"))
    assert "1 --input option given, but Seq2Seq.forward(src, tgt)" in err and "'tgt'" in err
    err = one_line_error(*cli(capsys, f"{MODELS}:seq2seq", "--input", "2x12:int64", "--input", "2x10"))
    assert "--input 2 (2x10:float32)" in err and "module `embed` (Embedding)" in err and "indices" in err
    err = one_line_error(*cli(capsys, f"{MODELS}:lstm", "--input", "6x20:int64:501"))
    assert "--input 1 (6x20:int64:501)" in err and "IndexError: index out of range" in err
    assert "500 rows" in err
    # A sequence longer than the context: positions from torch.arange(128) into 64 rows.
    err = one_line_error(*cli(capsys, f"{MODELS}:gpt", "--input", "2x128:int64:1000"))
    assert "module `pos` (Embedding)" in err and "ids up to 127 from torch.arange(128), for an embedding of 64" in err
    # A uint8 image into a float32 convolution without bias.
    err = one_line_error(*cli(capsys, f"{MODELS}:cnn", "--input", "4x3x32x32:uint8"))
    assert "--input 1 (4x3x32x32:uint8)" in err and "module `stem.0` (Conv2d)" in err
    assert "aten.convolution" in err
    # float64 into a float32 nn.LayerNorm (mixed dtypes that the CPU kernel refuses).
    err = one_line_error(*cli(capsys, f"{targets}:norm_first", "--input", "4x16:float64"))
    assert "module `0` (LayerNorm)" in err and "mixed dtype" in err
    # TARGET's own tensors: an int32 class target for cross_entropy.
    err = one_line_error(*cli(capsys, f"{targets}:int32_target"))
    assert err.startswith(f"mllint: error: TARGET `{targets}:int32_target`: real torch rejects it")
    assert "expected target dtype to be Long or Byte, but got Int" in err
    # A zero-sized batch in the inputs TARGET returns.
    err = one_line_error(*cli(capsys, f"{targets}:empty_batch"))
    assert "zero-sized batch" in err


def test_model_own_error_shows_the_users_batch(capsys, targets):
    # The fake replay raises, a real run at a reduced batch confirms it: the message is the fake
    # replay's, at the user's batch 64 (the real run's was at 8).
    err = one_line_error(*cli(capsys, f"{targets}:checked", "--input", "64x32"))
    assert "ValueError: expected 64 features, got an input of shape (64, 32)" in err
    assert "in the top-level module (Checked), given --input 1 (64x32:float32)" in err
    # torch's own check before dispatch (a convolution's bias dtype): located by the traceback.
    err = one_line_error(*cli(capsys, f"{MODELS}:vit", "--input", "2x3x32x32:float64"))
    assert "Input type (double) and bias type (float) should be the same" in err
    assert "in module `embed` (Conv2d), given --input 1 (2x3x32x32:float64)" in err
    # Code that a --dtype cast breaks (a float32 tensor made in forward into a bfloat16 layer).
    err = one_line_error(*cli(capsys, f"{targets}:one_hot", "--dtype", "bf16"))
    assert "real torch rejects it in module `fc` (Linear)" in err and "Float and BFloat16" in err
    assert "--dtype bf16 cast the model" in err


# --- progress on a terminal --------------------------------------------------------------------------


def run_with_terminal_stderr(*args):
    """The installed command with standard error on a pseudo-terminal and standard output on a pipe:
    (exit code, stdout, everything written to the terminal)."""
    import fcntl
    import os
    import pty
    import struct
    import termios
    import threading

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 200, 0, 0))  # 200 columns: no truncation
    env = dict(os.environ, TERM="xterm")
    proc = subprocess.Popen([sys.executable, "-m", "mllint", "memory", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    written = []
    reader = threading.Thread(target=lambda: written.append(read_terminal(master)))
    reader.start()
    out, _ = proc.communicate(timeout=300)
    reader.join(timeout=30)
    os.close(master)
    return proc.returncode, out.decode(), b"".join(written).decode("utf-8", "replace")


def test_progress_on_a_terminal_and_none_when_piped():
    args = (f"{MODELS}:mlp", "--gpu-memory", "3GiB")
    code, out, term = run_with_terminal_stderr(*args)
    assert code == 0, term
    assert "Largest batch size that fits" in out
    assert "mllint memory: --gpu-memory: trying batch 1: fake-tensor replay of the train step at batch 1" in term
    assert "mllint memory: --gpu-memory: 1 fits, trying batch 2: fake-tensor replay of the train step" in term
    assert term.endswith("\r\x1b[2K")  # the status line is erased: nothing of it stays
    assert "\x1b" not in out
    # JSON to a pipe: nothing on the terminal either.
    code, out, term = run_with_terminal_stderr(*args, "--format", "json")
    assert code == 0 and json.loads(out)["gpu_memory"]["largest_batch_size"] > 0
    assert term == ""
    # Standard error piped: nothing.
    proc = subprocess_run(*args)
    assert proc.returncode == 0 and proc.stderr == ""


def test_progress_names_real_runs_and_the_measurement():
    # masked: fake tensors cannot run it (a boolean mask), so it is run for real at reduced batches.
    code, out, term = run_with_terminal_stderr(f"{MODELS}:masked", "--measure")
    assert code == 0, term
    assert "Predicted vs measured" in out
    assert "mllint memory: fake-tensor replay of the train step at TARGET's batch" in term
    assert "mllint memory: real run of the train step at batch 2 (fake tensors cannot run this model)" in term
    assert "mllint memory: --measure: running the train step for real at batch 16 on cpu" in term
    assert term.endswith("\r\x1b[2K")
