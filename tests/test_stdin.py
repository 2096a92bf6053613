"""`mllint - --stdin-filename PATH`: standard input linted, fixed and diffed as the file PATH (real command)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import BAD, FIXED, GOOD, _EXTRA_RULES, assert_user_error, clean_env, write


def run_stdin(args, cwd: Path, data: bytes, extra_rules: bool = False) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", _EXTRA_RULES] if extra_rules else [sys.executable, "-m", "mllint"]
    return subprocess.run(
        [*command, *args], cwd=str(cwd), env=clean_env(), input=data, capture_output=True, timeout=120
    )


def out(proc) -> str:
    return proc.stdout.decode("utf-8")


def err(proc) -> str:
    return proc.stderr.decode("utf-8")


def test_dash_alone_lints_stdin_and_shows_dash(tmp_path):
    proc = run_stdin(["-", "--format", "concise"], tmp_path, BAD.encode())
    assert proc.returncode == 1, err(proc)
    assert out(proc).startswith("-:6:5: ML001 "), out(proc)
    assert run_stdin(["-"], tmp_path, GOOD.encode()).returncode == 0


def test_stdin_filename_is_the_path_shown_and_implies_stdin(tmp_path):
    proc = run_stdin(["--stdin-filename", "src/train.py", "--format", "json"], tmp_path, BAD.encode())
    assert proc.returncode == 1, err(proc)
    [finding] = json.loads(out(proc))
    assert (finding["path"], finding["line"], finding["column"], finding["code"]) == ("src/train.py", 6, 5, "ML001")
    # `-` together with --stdin-filename is the same thing.
    same = run_stdin(["-", "--stdin-filename", "src/train.py", "--format", "json"], tmp_path, BAD.encode())
    assert json.loads(out(same)) == [finding]
    assert not (tmp_path / "src").exists()


def test_settings_and_per_file_ignores_of_the_named_path(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.mllint]\nper-file-ignores = { "scripts/*.py" = ["ML001"] }\n')
    write(tmp_path / "lib" / "pyproject.toml", '[tool.mllint]\nignore = ["ML001"]\n')
    ignored = run_stdin(["-", "--stdin-filename", "scripts/run.py"], tmp_path, BAD.encode())
    assert ignored.returncode == 0, out(ignored) + err(ignored)
    assert "ML001" not in out(ignored)
    # The nearest configuration of the named path, not the one of the working directory.
    assert run_stdin(["--stdin-filename", "lib/model.py"], tmp_path, BAD.encode()).returncode == 0
    reported = run_stdin(["--stdin-filename", "src/run.py"], tmp_path, BAD.encode())
    assert reported.returncode == 1 and "src/run.py:6:5: ML001" in out(reported)


def test_fix_prints_the_fixed_source_and_writes_nothing(tmp_path):
    target = write(tmp_path / "train.py", "# the file on disk is not touched\n")
    proc = run_stdin(["--fix", "--stdin-filename", "train.py"], tmp_path, BAD.encode())
    assert proc.returncode == 0, err(proc)
    assert out(proc) == FIXED
    assert "Fixed 1 problem." in err(proc)
    assert target.read_text() == "# the file on disk is not touched\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


def test_fix_prints_unchanged_source_and_remaining_findings_go_to_stderr(tmp_path):
    source = "import torch\nvalue = UNSAFE_ME\n"
    proc = run_stdin(["--fix", "--stdin-filename", "a.py", "--format", "concise"], tmp_path, source.encode(),
                     extra_rules=True)
    assert proc.returncode == 1
    assert out(proc) == source  # unchanged, but printed, so `mllint --fix -` can sit in a pipe
    assert "a.py:2:9: ML901" in err(proc)
    # With --unsafe-fixes the fix is applied and nothing remains.
    fixed = run_stdin(["--fix", "--unsafe-fixes", "-"], tmp_path, source.encode(), extra_rules=True)
    assert fixed.returncode == 0, err(fixed)
    assert out(fixed) == "import torch\nvalue = SAFE_NOW\n"
    clean = run_stdin(["--fix", "-"], tmp_path, GOOD.encode())
    assert clean.returncode == 0 and out(clean) == GOOD


def test_diff_goes_to_stdout(tmp_path):
    proc = run_stdin(["--diff", "--stdin-filename", "pkg/train.py"], tmp_path, BAD.encode())
    assert proc.returncode == 1
    assert out(proc).startswith("--- a/pkg/train.py\n+++ b/pkg/train.py\n")
    assert "+    optimizer.zero_grad()\n" in out(proc)
    assert "Would fix 1 problem." in err(proc)
    none = run_stdin(["--diff", "-"], tmp_path, GOOD.encode())
    assert none.returncode == 0 and out(none) == ""


@pytest.mark.parametrize(
    "data, encoding",
    [
        ("# -*- coding: latin-1 -*-\n# caf\u00e9\n".encode("latin-1") + BAD.encode(), "latin-1"),
        (b"\xef\xbb\xbf" + "# caf\u00e9\n".encode() + BAD.encode(), "utf-8-sig"),
        (("# caf\u00e9\n" + BAD).replace("\n", "\r\n").encode(), "utf-8"),
    ],
    ids=["coding-cookie", "bom", "crlf"],
)
def test_fix_keeps_the_encoding_bom_and_line_endings(tmp_path, data, encoding):
    proc = run_stdin(["--fix", "-"], tmp_path, data)
    assert proc.returncode == 0, err(proc)
    expected = data.decode(encoding)
    newline = "\r\n" if "\r\n" in expected else "\n"
    expected = expected.replace("    loss = ((", "    optimizer.zero_grad()" + newline + "    loss = ((", 1)
    assert proc.stdout == expected.encode(encoding)
    if encoding == "utf-8-sig":
        assert proc.stdout.startswith(b"\xef\xbb\xbf")


def test_undecodable_input_is_one_finding_and_fix_echoes_the_bytes(tmp_path):
    data = b"x = 1\n\x00\x01"
    proc = run_stdin(["--stdin-filename", "blob.py", "--format", "concise"], tmp_path, data)
    assert proc.returncode == 1
    assert out(proc).startswith("blob.py:1:1: ML000 binary file")
    fixed = run_stdin(["--fix", "-"], tmp_path, data)
    assert fixed.returncode == 1 and fixed.stdout == data
    assert "ML000" in err(fixed)


@pytest.mark.parametrize(
    "args, needle",
    [
        (["-", "train.py"], "`-` (standard input) cannot be combined"),
        (["--stdin-filename", "a.py", "train.py"], "--stdin-filename names standard input"),
        (["-", "-"], "only once"),
        (["--stdin-filename", "", "-"], "--stdin-filename"),
        (["--verify", "-"], "--verify"),
    ],
)
def test_usage_errors(tmp_path, args, needle):
    write(tmp_path / "train.py")
    proc = run_stdin(args, tmp_path, BAD.encode())
    proc = subprocess.CompletedProcess(proc.args, proc.returncode, out(proc), err(proc))
    assert_user_error(proc, needle)


def _notebook() -> str:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]},
        {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [],
         "source": ["import torch\n", "%matplotlib inline\n", "model = torch.nn.Linear(4, 1)\n",
                    "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)"]},
        {"cell_type": "code", "execution_count": 2, "metadata": {},
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["ok\n"]}],
         "source": ["for x, y in loader:\n", "    loss = ((model(x) - y) ** 2).mean()\n", "    loss.backward()\n",
                    "    optimizer.step()"]},
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def test_notebook_on_stdin_is_linted_and_fixed_cell_by_cell(tmp_path):
    source = _notebook()
    proc = run_stdin(["--stdin-filename", "nb.ipynb", "--format", "json"], tmp_path, source.encode())
    assert proc.returncode == 1, err(proc)
    [finding] = json.loads(out(proc))
    assert (finding["path"], finding["cell"], finding["line"], finding["column"]) == ("nb.ipynb", 3, 3, 5)

    fixed = run_stdin(["--fix", "--stdin-filename", "nb.ipynb"], tmp_path, source.encode())
    assert fixed.returncode == 0, err(fixed)
    old_lines, new_lines = source.splitlines(True), out(fixed).splitlines(True)
    added = [line for line in new_lines if line not in old_lines]
    assert added == ['    "    optimizer.zero_grad()\\n",\n'], added
    assert len(new_lines) == len(old_lines) + 1  # outputs, counts and formatting kept
    assert json.loads(out(fixed))["cells"][2]["outputs"] == json.loads(source)["cells"][2]["outputs"]

    diff = run_stdin(["--diff", "--stdin-filename", "nb.ipynb"], tmp_path, source.encode())
    assert diff.returncode == 1 and "+    optimizer.zero_grad()\n" in out(diff)

    broken = run_stdin(["--stdin-filename", "nb.ipynb", "--format", "concise"], tmp_path, b'{"cells": 3')
    assert broken.returncode == 1 and "nb.ipynb:" in out(broken) and "ML000" in out(broken)
    # Named .py, the same bytes are Python (one dict literal): the training loop is not seen.
    as_python = run_stdin(["--stdin-filename", "nb.py", "--format", "concise"], tmp_path, source.encode())
    assert "ML001" not in out(as_python), out(as_python)
