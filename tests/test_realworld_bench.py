"""The notebook parts of tests/realworld/bench.py that need no git mirror.

The benchmark itself is run by hand (it reads public repositories from mirrors); these check the
pieces it scores notebooks with: `CELL:LINE` positions, a cell's lines, the finding of the row's cell,
and the check that `--fix` changed nothing but code cells' sources.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent / "realworld" / "bench.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("realworld_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def notebook(*sources: str, outputs=None) -> bytes:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# title\n"]}]
    for i, src in enumerate(sources, 1):
        cells.append({"cell_type": "code", "execution_count": i, "metadata": {},
                      "outputs": list(outputs or []), "source": src.splitlines(keepends=True)})
    nb = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(nb, indent=1) + "\n").encode()


BAD_LOOP = ("import torch\n",
            "def train(model, loader, opt: torch.optim.Optimizer, loss_fn):\n"
            "    for x, y in loader:\n"
            "        loss_fn(model(x), y).backward()\n"
            "        opt.step()\n")


def test_positions_of_py_files_and_notebooks(bench):
    assert bench.parse_position("40") == (None, 40)
    assert bench.parse_position("16:40") == (16, 40)
    assert bench.position({"line": 7, "cell": None}) == "7"
    assert bench.position({"line": 7, "cell": 3}) == "3:7"
    assert sorted(["3:10", "12:1", "3:2"], key=bench.position_key) == ["3:2", "3:10", "12:1"]


def test_source_lines_reads_one_cell_counted_among_all_cells(bench, tmp_path):
    path = tmp_path / "nb.ipynb"
    path.write_bytes(notebook(*BAD_LOOP))
    assert bench.source_lines(path, 3)[2] == "        loss_fn(model(x), y).backward()"
    assert bench.source_lines(path, 1) == ["# title"]  # markdown cells count
    assert bench.source_lines(path, 9) == []


def test_a_notebook_row_is_scored_in_its_cell(bench, tmp_path):
    """The installed mllint reports the row's cell and in-cell line, as the fix_commits rows give them."""
    root = tmp_path / "t"
    root.mkdir()
    (root / "nb.ipynb").write_bytes(notebook(*BAD_LOOP))
    findings = bench.run_mllint(root, ["ML001"])
    assert [bench.position(f) for f in findings] == ["3:3"]  # cell 3 (after the markdown), line 3


def test_notebook_fix_problem(bench):
    before = notebook(*BAD_LOOP, outputs=[{"name": "stdout", "output_type": "stream", "text": ["x\n"]}])
    nb = json.loads(before)
    nb["cells"][2]["source"].insert(2, "        opt.zero_grad()\n")
    assert bench.notebook_fix_problem(before, json.dumps(nb, indent=1).encode()) is None
    nb["cells"][2]["outputs"] = []
    assert "more than code cells' sources" in bench.notebook_fix_problem(before, json.dumps(nb).encode())
    assert bench.notebook_fix_problem(before, b"{not json").startswith("not JSON")
    broken = json.loads(before)
    broken["cells"][2]["source"] = ["def f(:\n"]
    assert "cell 3 not parsing" in bench.notebook_fix_problem(before, json.dumps(broken).encode())


def test_fix_commit_rows_are_well_formed(bench):
    """Every row parses; notebook rows give CELL:LINE and .py rows a plain line."""
    rows = bench.load_fix_rows()
    notebook_rows = [r for r in rows if r.cell is not None]
    assert notebook_rows and all(r.path.endswith(".ipynb") for r in notebook_rows)
    assert all(len(r.fix) == 40 and len(r.parent) == 40 for r in rows)


def test_bench_runs_without_mirrors(tmp_path):
    """With no mirrors the run names them and counts the rows as not run (no traceback)."""
    proc = subprocess.run([sys.executable, str(BENCH), "fixes", "--rule", "ML001"], capture_output=True, text=True,
                          env={"MLLINT_MIRRORS": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert "no mirror for" in proc.stderr and "Traceback" not in proc.stderr
    assert "not-run" in proc.stdout
