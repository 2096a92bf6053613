"""The sealed precision set (tests/realworld/sealed/snapshot/) is well formed, and `bench.py precision
--part sealed` never prints a row of it. The assertions name no sealed project, file or line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "tests" / "realworld" / "bench.py"
SEALED = ROOT / "tests" / "realworld" / "sealed" / "snapshot"
HEADER = "path\tline\trule\tverdict\treason\tsource"


def _tables():
    for tsv in sorted(SEALED.glob("*.tsv")):
        lines = tsv.read_text(encoding="utf-8").splitlines()
        yield lines[0], lines[1], [line.split("\t") for line in lines[2:] if line.strip()]


def test_sealed_snapshots_are_judged_and_well_formed():
    tables = list(_tables())
    assert len(tables) >= 12
    for first, header, rows in tables:
        meta = dict(part.split("=", 1) for part in first.lstrip("# ").split() if "=" in part)
        assert first.startswith("# repo=") and len(meta["commit"]) == 40 and meta["include"]
        assert header == HEADER
        for row in rows:
            assert len(row) == 6 and row[2].startswith("ML") and row[4].strip()
            assert row[3] in ("true", "false", "arguable")  # nothing waits for a verdict
            cell, _, line = row[1].rpartition(":")
            assert line.isdigit() and (cell == "") == (not row[0].endswith(".ipynb"))


def test_sealed_precision_prints_no_row(tmp_path):
    """Without mirrors it counts the projects as not run and names none of them."""
    proc = subprocess.run([sys.executable, str(BENCH), "precision", "--part", "sealed"], capture_output=True,
                          text=True, env={"MLLINT_MIRRORS": str(tmp_path), "PATH": "/usr/bin:/bin",
                                          "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-300:]
    assert "sealed projects have no mirror" in proc.stderr and "Traceback" not in proc.stderr
    out = proc.stdout + proc.stderr
    for first, _, rows in _tables():
        repo = first.split("repo=", 1)[1].split()[0]
        assert repo not in out and repo.replace("/", "+") not in out
        assert not any(row[0] in out for row in rows)
    refused = subprocess.run([sys.executable, str(BENCH), "precision", "--part", "sealed", "--update"],
                             capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert refused.returncode == 2 and not refused.stdout
