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
    proc = subprocess.run(
        mllint_command() + ["--no-cache", "fixtures/"],
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = backward_line(ML001 / "bad_train.py")
    expected = re.compile(r"^fixtures[/\\]ml001[/\\]bad_train\.py:%d:\d+: ML001\b" % line, re.MULTILINE)
    assert expected.search(proc.stdout), proc.stdout
    assert "good_train.py" not in proc.stdout
    assert "Traceback" not in proc.stderr


def test_mllint_json_lists_exactly_one_ml001_finding_in_fixtures():
    proc = subprocess.run(
        mllint_command() + ["--no-cache", "--format", "json", "fixtures/"],
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    findings = json.loads(proc.stdout)
    assert [(Path(f["path"]).name, f["code"], f["line"]) for f in findings] == [
        ("bad_train.py", "ML001", backward_line(ML001 / "bad_train.py"))
    ]


def test_each_fixture_alone():
    """Linted one at a time: the bad script fails, the good script passes."""
    bad = subprocess.run(
        mllint_command() + ["--no-cache", str(ML001 / "bad_train.py")],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "ML001" in bad.stdout
    good = subprocess.run(
        mllint_command() + ["--no-cache", str(ML001 / "good_train.py")],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert good.returncode == 0, good.stdout + good.stderr
    assert "ML001" not in good.stdout
