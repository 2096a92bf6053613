"""The flake8 plugin, exercised by running flake8 for real (`python -m flake8 --select ML ...`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import BAD, GOOD, SYNTAX_ERROR, clean_env, write

pytest.importorskip("flake8")


def flake8(args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", *args], cwd=str(cwd), env=clean_env(),
        capture_output=True, text=True, timeout=120,
    )


def test_plugin_is_registered():
    proc = subprocess.run([sys.executable, "-m", "flake8", "--version"], capture_output=True, text=True, timeout=60)
    assert "mllint-pitfalls" in proc.stdout, proc.stdout


def test_select_ml_reports_findings_at_mllint_positions(tmp_path):
    write(tmp_path / "train.py", BAD)
    proc = flake8(["--select", "ML", "train.py"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    # mllint says 6:5 for this finding; flake8 prints the same 1-based column.
    assert lines[0].startswith("train.py:6:5: ML001 gradients accumulate"), lines[0]
    assert proc.stderr == ""


def test_non_ascii_text_before_a_finding_keeps_the_column(tmp_path):
    line = "    _ = '\U0001f600\u00e9'; loss.backward()"
    write(tmp_path / "train.py", BAD.replace("    loss.backward()", line))
    proc = flake8(["--select", "ML", "train.py"], tmp_path)
    # `loss.backward()` starts at code point 15 of line 6 (the emoji counts once, é once).
    assert line.index("loss") + 1 == 15
    assert [out.split(" ")[0] for out in proc.stdout.splitlines()] == ["train.py:6:15:"], proc.stdout


def test_ignore_drops_them_and_a_clean_file_prints_nothing(tmp_path):
    write(tmp_path / "train.py", BAD)
    write(tmp_path / "good.py", GOOD)
    ignored = flake8(["--select", "ML", "--extend-ignore", "ML001", "train.py"], tmp_path)
    assert (ignored.returncode, ignored.stdout) == (0, "")
    clean = flake8(["--select", "ML", "good.py"], tmp_path)
    assert (clean.returncode, clean.stdout, clean.stderr) == (0, "", "")


def test_mllint_configuration_decides_the_rules(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.mllint]\nper-file-ignores = { "scripts/*.py" = ["ML001"] }\n')
    write(tmp_path / "scripts" / "train.py", BAD)
    write(tmp_path / "src" / "train.py", BAD)
    proc = flake8(["--select", "ML", "scripts", "src"], tmp_path)
    assert [line.split(" ")[0] for line in proc.stdout.splitlines()] == ["src/train.py:6:5:"], proc.stdout


def test_noqa_and_syntax_errors(tmp_path):
    write(tmp_path / "quiet.py", BAD.replace("loss.backward()", "loss.backward()  # noqa: ML001"))
    write(tmp_path / "broken.py", SYNTAX_ERROR)
    proc = flake8(["--select", "ML,E999", "quiet.py", "broken.py"], tmp_path)
    assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("broken.py:8:") and " E999 SyntaxError" in lines[0], proc.stdout


def test_flake8_and_pygls_are_not_imported_on_the_lint_path(tmp_path):
    write(tmp_path / "train.py", BAD)
    code = (
        "import sys\nfrom mllint.cli import run\nstatus = run(['--no-cache', 'train.py'])\n"
        "heavy = ('flake8', 'pygls', 'lsprotocol', 'torch')\n"
        "editor = ('mllint.server', 'mllint.stdin', 'mllint.flake8_plugin')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in editor))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), env=clean_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout + proc.stderr
