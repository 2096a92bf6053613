"""ML015 (accumulation-without-loss-scaling): the runnable fixture pair shows the accumulated
gradient is N batch gradients, and mllint reports the bad script only, with an unsafe fix
that divides the loss at the backward pass."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from test_fixtures import run_script  # the fixtures' runner, shared

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "ml015"


def _run(path: Path) -> str:
    done = run_script(path)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _number(out: str, label: str) -> float:
    match = re.search(rf"{re.escape(label)}: (\S+)", out)
    assert match, out
    return float(match.group(1))


def test_fixture_pair_shows_the_sum_of_batch_gradients():
    pytest.importorskip("torch")
    bad, good = _run(FIXTURES / "bad_accumulation.py"), _run(FIXTURES / "good_accumulation.py")
    ratio = "gradient norm ratio (accumulated / large batch)"
    assert _number(bad, ratio) == pytest.approx(4.0, abs=0.05)  # the sum of 4 batch gradients
    assert _number(good, ratio) == pytest.approx(1.0, abs=0.05)  # the large batch's gradient
    large = _number(bad, "final loss with large batches")
    assert _number(good, "final loss with large batches") == pytest.approx(large, rel=1e-6)
    assert _number(good, "final loss with accumulation") == pytest.approx(large, rel=0.05)
    assert _number(bad, "final loss with accumulation") > 1000 * large  # SGD's step 4x too large: diverges


def test_mllint_reports_the_bad_fixture_only():
    done = subprocess.run(
        [sys.executable, "-m", "mllint", "--no-cache", "--format", "json", "--select", "ML015", "fixtures/ml015"],
        cwd=str(ROOT), capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)
    assert [(Path(f["path"]).name, f["code"]) for f in findings] == [("bad_accumulation.py", "ML015")]
    (finding,) = findings
    source = (FIXTURES / "bad_accumulation.py").read_text().splitlines()
    assert source[finding["line"] - 1].strip() == "loss.backward()"
    assert "`accum_steps`" in finding["message"] and "add up" in finding["message"]
    assert finding["fix"] is not None and finding["fix"]["applicability"] == "unsafe"
    assert "(loss / accum_steps).backward()" in "".join(e["content"] for e in finding["fix"]["edits"])


def test_unsafe_fix_gives_the_good_training(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text((FIXTURES / "bad_accumulation.py").read_text())
    done = subprocess.run(
        [sys.executable, "-m", "mllint", "--no-cache", "--select", "ML015", "--fix", "--unsafe-fixes", str(script)],
        cwd=str(ROOT), capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(loss / accum_steps).backward()" in script.read_text()
    out = _run(script)
    assert _number(out, "gradient norm ratio (accumulated / large batch)") == pytest.approx(1.0, abs=0.05)
