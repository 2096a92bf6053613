"""The runnable fixtures: they train for real, and mllint tells the bad one from the good one."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
ML001 = FIXTURES / "ml001"
ML003 = FIXTURES / "ml003"
ML004 = FIXTURES / "ml004"
ML002 = FIXTURES / "ml002"
ML005 = FIXTURES / "ml005"
ML011 = FIXTURES / "ml011"

HAS_TORCH = importlib.util.find_spec("torch") is not None


def mllint_command() -> list:
    """The installed `mllint` console script next to this interpreter (else on PATH)."""
    script = Path(sys.executable).parent / ("mllint.exe" if os.name == "nt" else "mllint")
    if script.exists():
        return [str(script)]
    found = shutil.which("mllint")
    if found:
        return [found]
    pytest.fail("the `mllint` command is not installed: pip install -e '.[dev]'")


def run_mllint(*args: str) -> subprocess.CompletedProcess:
    """The real mllint command, without the cache, from the repository root."""
    return subprocess.run(
        mllint_command() + ["--no-cache", *args],
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def run_script(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(path)],
        cwd=str(path.parent),
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )


def final_loss(stdout: str) -> float:
    match = re.search(r"^final loss (\S+)$", stdout, re.MULTILINE)
    assert match, f"no 'final loss' line in:\n{stdout}"
    return float(match.group(1))


def backward_line(path: Path) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    hits = [number for number, text in enumerate(lines, 1) if text.strip() == "loss.backward()"]
    assert len(hits) == 1, hits
    return hits[0]


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (pip install torch==2.13.0)")
def test_ml001_scripts_run_and_the_bad_one_trains_worse():
    good = run_script(ML001 / "good_train.py")
    assert good.returncode == 0, good.stderr
    bad = run_script(ML001 / "bad_train.py")
    assert bad.returncode == 0, bad.stderr

    good_loss = final_loss(good.stdout)
    bad_loss = final_loss(bad.stdout)
    assert math.isfinite(good_loss)
    # Accumulated gradients make the bad script overshoot: it ends far worse (or diverges).
    assert math.isnan(bad_loss) or bad_loss > 10 * good_loss, (good_loss, bad_loss)


def test_mllint_reports_ml001_on_the_bad_fixture_only():
    proc = run_mllint("fixtures/")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = backward_line(ML001 / "bad_train.py")
    expected = re.compile(r"^fixtures[/\\]ml001[/\\]bad_train\.py:%d:\d+: ML001\b" % line, re.MULTILINE)
    assert expected.search(proc.stdout), proc.stdout
    assert "good_train.py" not in proc.stdout
    assert "Traceback" not in proc.stderr


def test_mllint_json_lists_exactly_one_ml001_finding_in_fixtures():
    proc = run_mllint("--format", "json", "fixtures/")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    findings = json.loads(proc.stdout)
    assert [(Path(f["path"]).name, f["code"], f["line"]) for f in findings if f["code"] == "ML001"] == [
        ("bad_train.py", "ML001", backward_line(ML001 / "bad_train.py"))
    ]
    assert all(Path(f["path"]).name.startswith("bad_") for f in findings), findings


def test_each_fixture_alone():
    """Linted one at a time: the bad script fails, the good script passes."""
    bad = run_mllint(str(ML001 / "bad_train.py"))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "ML001" in bad.stdout
    good = run_mllint(str(ML001 / "good_train.py"))
    assert good.returncode == 0, good.stdout + good.stderr
    assert "ML001" not in good.stdout


# --- ML004 -------------------------------------------------------------------------------------


def constant_tensors(stdout: str) -> int:
    match = re.search(r"^constant tensors built per epoch (\d+) ", stdout, re.MULTILINE)
    assert match, f"no 'constant tensors' line in:\n{stdout}"
    return int(match.group(1))


def allocation_lines(path: Path) -> list:
    """Lines of the three per-batch constructor calls in the bad script's loop."""
    lines = path.read_text(encoding="utf-8").splitlines()
    wanted = ("torch.ones(SEQ_LEN", "torch.arange(SEQ_LEN", "torch.tensor([2.0]")
    return [number for number, text in enumerate(lines, 1) if text.startswith("        ") and any(w in text for w in wanted)]


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (pip install torch==2.13.0)")
def test_ml004_scripts_run_alike_and_the_bad_one_builds_more_tensors():
    good = run_script(ML004 / "good_train.py")
    assert good.returncode == 0, good.stderr
    bad = run_script(ML004 / "bad_train.py")
    assert bad.returncode == 0, bad.stderr
    # Hoisting changes the work, not the results.
    assert re.search(r"^final loss (\S+)$", bad.stdout, re.MULTILINE).group(1) == re.search(
        r"^final loss (\S+)$", good.stdout, re.MULTILINE
    ).group(1)
    batches = int(re.search(r"\((\d+) batches\)", bad.stdout).group(1))
    # Three constant tensors per batch against three per epoch.
    assert constant_tensors(bad.stdout) - constant_tensors(good.stdout) == 3 * (batches - 1), (bad.stdout, good.stdout)


def test_mllint_reports_ml004_at_each_per_batch_allocation_of_the_bad_fixture_only():
    proc = run_mllint("--format", "json", str(ML004))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    findings = json.loads(proc.stdout)
    lines = allocation_lines(ML004 / "bad_train.py")
    assert len(lines) == 3
    assert sorted((Path(f["path"]).name, f["code"], f["line"]) for f in findings) == [
        ("bad_train.py", "ML004", line) for line in lines
    ]
    assert all(f["fix"] is not None and f["fix"]["applicability"] == "safe" for f in findings)


# --- ML003 -------------------------------------------------------------------------------------

HAS_SKLEARN = importlib.util.find_spec("sklearn") is not None


def cv_accuracy(stdout: str) -> float:
    match = re.search(r"^cv accuracy (\S+)$", stdout, re.MULTILINE)
    assert match, f"no 'cv accuracy' line in:\n{stdout}"
    return float(match.group(1))


@pytest.mark.skipif(not HAS_SKLEARN, reason="scikit-learn is not installed")
def test_ml003_scripts_run_and_the_leaky_one_scores_far_above_chance():
    good = run_script(ML003 / "good_train.py")
    assert good.returncode == 0, good.stderr
    bad = run_script(ML003 / "bad_train.py")
    assert bad.returncode == 0, bad.stderr
    # Random labels: chance is 0.5. Selecting features on all rows before cross-validation
    # lets the test folds pick the features, and the score comes out far above chance.
    assert abs(cv_accuracy(good.stdout) - 0.5) < 0.1, good.stdout
    assert cv_accuracy(bad.stdout) > 0.7, bad.stdout


def test_mllint_reports_ml003_at_the_leaking_fit_of_the_bad_fixture_only():
    proc = run_mllint("--format", "json", str(ML003))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    findings = json.loads(proc.stdout)
    lines = (ML003 / "bad_train.py").read_text(encoding="utf-8").splitlines()
    fit_line = next(n for n, text in enumerate(lines, 1) if ".fit_transform(X, y)" in text)
    assert [(Path(f["path"]).name, f["code"], f["line"]) for f in findings] == [("bad_train.py", "ML003", fit_line)]
    assert findings[0]["fix"]["applicability"] == "unsafe"


# --- ML002 and ML005 -----------------------------------------------------------------------------


def line_containing(path: Path, text: str) -> int:
    hits = [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if text in line]
    assert len(hits) == 1, (path, text, hits)
    return hits[0]


def printed(stdout: str, label: str) -> str:
    match = re.search(r"^%s:? (\S+)$" % re.escape(label), stdout, re.MULTILINE)
    assert match, f"no {label!r} line in:\n{stdout}"
    return match.group(1)


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (pip install torch==2.13.0)")
def test_ml002_scripts_run_and_the_bad_one_keeps_graphs_alive():
    good = run_script(ML002 / "good_eval.py")
    assert good.returncode == 0, good.stderr
    bad = run_script(ML002 / "bad_eval.py")
    assert bad.returncode == 0, bad.stderr
    assert printed(good.stdout, "outputs require grad") == "False"
    assert int(printed(good.stdout, "bytes saved for backward during evaluation")) == 0
    assert printed(bad.stdout, "outputs require grad") == "True"
    assert int(printed(bad.stdout, "bytes saved for backward during evaluation")) > 0
    # no_grad changes what is kept, not the predictions.
    assert printed(bad.stdout, "test accuracy") == printed(good.stdout, "test accuracy")


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (pip install torch==2.13.0)")
def test_ml005_scripts_run_and_the_bad_one_evaluates_in_training_mode():
    good = run_script(ML005 / "good_eval.py")
    assert good.returncode == 0, good.stderr
    bad = run_script(ML005 / "bad_eval.py")
    assert bad.returncode == 0, bad.stderr
    # Eval mode: deterministic, and evaluating leaves the model alone.
    assert printed(good.stdout, "two evaluations agree") == "True"
    assert printed(good.stdout, "evaluation changed the batch-norm running mean") == "False"
    # Training mode: dropout makes two identical evaluations differ; batch norm learns from the test batch.
    assert printed(bad.stdout, "two evaluations agree") == "False"
    assert printed(bad.stdout, "evaluation changed the batch-norm running mean") == "True"


@pytest.mark.parametrize(
    "folder,code,forward",
    [(ML002, "ML002", "outputs.append(model(xb))"), (ML005, "ML005", "    return model(x)")],
)
def test_mllint_reports_ml002_and_ml005_at_the_forward_of_the_bad_fixture_only(folder, code, forward):
    proc = run_mllint("--format", "json", str(folder))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    findings = json.loads(proc.stdout)
    line = line_containing(folder / "bad_eval.py", forward)
    assert [(Path(f["path"]).name, f["code"], f["line"]) for f in findings] == [("bad_eval.py", code, line)]
    assert findings[0]["fix"]["applicability"] == "safe"


# --- ML011 -------------------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_ml011_forward_skips_the_hook_and_the_call_runs_it():
    bad = run_script(ML011 / "bad_features.py")
    assert bad.returncode == 0, bad.stderr
    good = run_script(ML011 / "good_features.py")
    assert good.returncode == 0, good.stderr
    assert "hook calls 0" in bad.stdout and "hook calls 21" in good.stdout
    mean = lambda out: float(re.search(r"output mean (\S+)", out).group(1))
    assert abs(mean(good.stdout)) < 0.01 and mean(bad.stdout) > 1.0, (bad.stdout, good.stdout)


def test_mllint_reports_ml011_on_the_bad_fixture_only_with_a_safe_fix():
    proc = run_mllint("--format", "json", "--select", "ML011", str(ML011))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    findings = json.loads(proc.stdout)
    lines = [i for i, line in enumerate((ML011 / "bad_features.py").read_text().splitlines(), 1) if "model.forward(x)" in line and not line.lstrip().startswith(("\"", "A", "e"))]
    assert sorted((Path(f["path"]).name, f["code"], f["line"]) for f in findings) == [("bad_features.py", "ML011", n) for n in lines]
    assert all(f["fix"] is not None and f["fix"]["applicability"] == "safe" for f in findings)


ML010 = FIXTURES / "ml010"


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (pip install torch==2.13.0)")
def test_ml010_crafted_checkpoint_runs_code_only_without_weights_only():
    bad = run_script(ML010 / "bad_load.py")
    assert bad.returncode == 0, bad.stderr
    assert "code executed while loading: True" in bad.stdout
    good = run_script(ML010 / "good_load.py")
    assert good.returncode == 0, good.stderr
    assert "crafted checkpoint refused: True" in good.stdout
    assert "code executed while loading: False" in good.stdout
    assert "state_dict loaded: True" in good.stdout


def test_ml010_mllint_reports_only_the_bad_fixture():
    result = run_mllint("--select", "ML010", "--output-format", "json", str(ML010))
    found = [(Path(f["path"]).name, f["code"]) for f in json.loads(result.stdout)]
    assert found == [("bad_load.py", "ML010")], result.stdout


# --- ML009 -------------------------------------------------------------------------------------

ML009 = FIXTURES / "ml009"


def _seconds(stdout: str) -> float:
    return float(re.search(r"^seconds (\S+)$", stdout, re.MULTILINE).group(1))


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (pip install torch==2.13.0)")
def test_ml009_scripts_agree_and_the_loops_are_slower():
    good = run_script(ML009 / "good_scale.py")
    assert good.returncode == 0, good.stderr
    bad = run_script(ML009 / "bad_scale.py")
    assert bad.returncode == 0, bad.stderr
    result = re.compile(r"^result (\S+)$", re.MULTILINE)
    assert result.search(bad.stdout).group(1) == result.search(good.stdout).group(1)
    assert _seconds(bad.stdout) > 10 * _seconds(good.stdout), (bad.stdout, good.stdout)


def test_mllint_reports_ml009_at_both_loops_of_the_bad_fixture_only():
    proc = run_mllint("--format", "json", "--select", "ML009", str(ML009))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    findings = json.loads(proc.stdout)
    lines = [n for n, t in enumerate((ML009 / "bad_scale.py").read_text(encoding="utf-8").splitlines(), 1) if t.startswith("for i in range(")]
    assert sorted((Path(f["path"]).name, f["code"], f["line"]) for f in findings) == [("bad_scale.py", "ML009", l) for l in lines]


# --- ML013 -------------------------------------------------------------------------------------

ML013 = FIXTURES / "ml013"


def accuracy_of(stdout: str) -> float:
    match = re.search(r"^accuracy (\S+)$", stdout, re.MULTILINE)
    assert match, f"no 'accuracy' line in:\n{stdout}"
    return float(match.group(1))


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (pip install torch==2.13.0)")
def test_ml013_scripts_run_and_the_softmax_one_trains_slower():
    good = run_script(ML013 / "good_train.py")
    assert good.returncode == 0, good.stderr
    bad = run_script(ML013 / "bad_train.py")
    assert bad.returncode == 0, bad.stderr
    # Cross-entropy on probabilities cannot get near 0 and learns slowly.
    assert final_loss(bad.stdout) > 10 * final_loss(good.stdout), (bad.stdout, good.stdout)
    assert accuracy_of(bad.stdout) < accuracy_of(good.stdout)


def test_mllint_reports_ml013_at_the_losses_of_the_bad_fixture_only():
    proc = run_mllint("--format", "json", "--select", "ML013", str(ML013))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = (ML013 / "bad_train.py").read_text(encoding="utf-8").splitlines()
    expected = [n for n, text in enumerate(lines, 1) if "criterion(" in text and "=" in text and "nn." not in text]
    findings = json.loads(proc.stdout)
    assert sorted((Path(f["path"]).name, f["line"]) for f in findings) == [("bad_train.py", n) for n in expected]
    assert all(f["fix"] and f["fix"]["applicability"] == "unsafe" for f in findings)


def test_ml013_unsafe_fix_gives_the_good_model(tmp_path):
    copy = tmp_path / "bad_train.py"
    shutil.copy(ML013 / "bad_train.py", copy)
    proc = run_mllint("--select", "ML013", "--fix", "--unsafe-fixes", str(copy))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fixed = copy.read_text(encoding="utf-8")
    compile(fixed, str(copy), "exec")
    assert "        return logits\n" in fixed and "return F.softmax" not in fixed


# --- ML014 -------------------------------------------------------------------------------------

ML014 = FIXTURES / "ml014"


def rates_used(stdout: str) -> list:
    match = re.search(r"^learning rates used (.+)$", stdout, re.MULTILINE)
    assert match, f"no 'learning rates used' line in:\n{stdout}"
    return [float(v) for v in match.group(1).split()]


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (pip install torch==2.13.0)")
def test_ml014_scripts_run_and_the_bad_one_skips_the_first_learning_rate():
    good = run_script(ML014 / "good_train.py")
    assert good.returncode == 0, good.stderr
    bad = run_script(ML014 / "bad_train.py")
    assert bad.returncode == 0, bad.stderr
    good_rates, bad_rates = rates_used(good.stdout), rates_used(bad.stdout)
    assert good_rates[0] == pytest.approx(0.1)  # the starting rate is used
    assert 0.1 not in bad_rates  # ... and never by the bad order
    assert bad_rates[:-1] == pytest.approx(good_rates[1:])  # every rate one epoch early
    final = lambda out: float(re.search(r"^final loss (\S+)$", out, re.MULTILINE).group(1))  # noqa: E731
    assert final(bad.stdout) > final(good.stdout)


def test_mllint_reports_ml014_at_the_scheduler_step_of_the_bad_fixture_only():
    proc = run_mllint("--format", "json", "--select", "ML014", str(ML014))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    findings = json.loads(proc.stdout)
    line = line_containing(ML014 / "bad_train.py", "    scheduler.step()")
    assert [(Path(f["path"]).name, f["code"], f["line"]) for f in findings] == [("bad_train.py", "ML014", line)]


# --- ML006 -------------------------------------------------------------------------------------

ML006 = FIXTURES / "ml006"


def kept_nodes(stdout: str) -> list:
    return [int(n) for n in re.findall(r"^epoch \d+ graph nodes kept alive (\d+) ", stdout, re.MULTILINE)]


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (pip install torch==2.13.0)")
def test_ml006_scripts_train_alike_and_the_bad_one_keeps_every_batch_graph():
    good = run_script(ML006 / "good_train.py")
    assert good.returncode == 0, good.stderr
    bad = run_script(ML006 / "bad_train.py")
    assert bad.returncode == 0, bad.stderr
    assert final_loss(bad.stdout) == final_loss(good.stdout)
    batches = int(re.search(r"\((\d+) batches\)", bad.stdout).group(1))
    assert kept_nodes(good.stdout) and all(n == 0 for n in kept_nodes(good.stdout))
    # at least one node per batch stays reachable from the running total, on every epoch
    assert all(n >= batches for n in kept_nodes(bad.stdout)), bad.stdout


def test_mllint_reports_ml006_at_the_accumulation_of_the_bad_fixture_only():
    proc = run_mllint("--format", "json", "--select", "ML006", str(ML006))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    findings = json.loads(proc.stdout)
    lines = (ML006 / "bad_train.py").read_text(encoding="utf-8").splitlines()
    line = next(n for n, text in enumerate(lines, 1) if text.strip() == "total_loss += loss")
    assert [(Path(f["path"]).name, f["code"], f["line"]) for f in findings] == [("bad_train.py", "ML006", line)]
    assert findings[0]["fix"]["applicability"] == "safe"


ML012 = FIXTURES / "ml012"


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (pip install torch==2.13.0)")
def test_ml012_scripts_run_and_the_bad_one_clips_by_the_scaled_norm():
    good = run_script(ML012 / "good_train.py")
    assert good.returncode == 0, good.stderr
    bad = run_script(ML012 / "bad_train.py")
    assert bad.returncode == 0, bad.stderr
    pattern = r"^norm seen by the clip (\S+), true norm (\S+)$"
    seen, true = map(float, re.search(pattern, bad.stdout, re.MULTILINE).groups())
    assert seen > 1000 * true, bad.stdout
    seen, true = map(float, re.search(pattern, good.stdout, re.MULTILINE).groups())
    assert math.isclose(seen, true, rel_tol=1e-3), good.stdout
    assert final_loss(bad.stdout) > 10 * final_loss(good.stdout), (bad.stdout, good.stdout)


def test_mllint_reports_ml012_at_the_clip_of_the_bad_fixture_only():
    proc = run_mllint("--format", "json", "--select", "ML012", str(ML012))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    findings = json.loads(proc.stdout)
    lines = (ML012 / "bad_train.py").read_text(encoding="utf-8").splitlines()
    clip = [n for n, text in enumerate(lines, 1) if "clip_grad_norm_" in text and "seen =" in text]
    assert [(Path(f["path"]).name, f["code"], f["line"]) for f in findings] == [("bad_train.py", "ML012", clip[0])]
    assert findings[0]["fix"]["applicability"] == "unsafe"
