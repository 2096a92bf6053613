"""ML017 (sampler-epoch-not-set): the runnable fixture pair shows the frozen order, and
mllint reports the bad script only."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from test_fixtures import run_script  # the fixtures' runner, shared

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "ml017"


def _run(path: Path) -> str:
    done = run_script(path)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _distinct(out: str) -> int:
    match = re.search(r"distinct orders: (\d+)/5", out)
    assert match, out
    return int(match.group(1))


def test_fixture_pair_shows_the_frozen_order():
    pytest.importorskip("torch")
    bad, good = _run(FIXTURES / "bad_train.py"), _run(FIXTURES / "good_train.py")
    assert _distinct(bad) == 1  # every epoch the same order
    assert _distinct(good) == 5  # a new order each epoch
    assert "epochs with the same order as epoch 0: 5/5" in bad


def test_mllint_reports_the_bad_fixture_only():
    done = subprocess.run(
        [sys.executable, "-m", "mllint", "--no-cache", "--format", "json", "--select", "ML017", "fixtures/ml017"],
        cwd=str(ROOT), capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)
    assert [(Path(f["path"]).name, f["code"]) for f in findings] == [("bad_train.py", "ML017")]
    (finding,) = findings
    assert finding["line"] == 28  # the epoch loop
    assert finding["fix"] is not None and finding["fix"]["applicability"] == "safe"
    assert "sampler.set_epoch(epoch)" in "".join(e["content"] for e in finding["fix"]["edits"])
