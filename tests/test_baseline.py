"""--baseline FILE end to end: write, read, stable under line shifts, update, bad files."""

from __future__ import annotations

import json

import pytest

from cli_helpers import BAD, GOOD, assert_user_error, run, write

BACKWARD = "        loss.backward()\n"


@pytest.fixture
def project(tmp_path):
    write(tmp_path / "pyproject.toml", "[project]\nname = 'demo'\n")
    write(tmp_path / "src" / "train.py", BAD)
    write(tmp_path / "src" / "clean.py", GOOD)
    return tmp_path


def two_loops(extra_lines: int = 0, third: bool = False) -> str:
    """Two identical ML001 loops in functions (a third with `third`), `extra_lines` lines on top."""
    loop = (
        "def train{n}(model, loader):\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for x, y in loader:\n"
        "        loss = ((model(x) - y) ** 2).mean()\n"
        + BACKWARD
        + "        optimizer.step()\n\n"
    )
    body = "import torch\n" + "x = 0\n" * extra_lines + "".join(loop.format(n=n) for n in range(3 if third else 2))
    return body


def json_findings(proc):
    return [(f["path"], f["line"], f["code"]) for f in json.loads(proc.stdout)]


def test_first_run_writes_the_baseline_then_only_new_findings_fail(project):
    proc = run(["--baseline", "mllint-baseline.json"], project)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.strip() == "mllint: wrote baseline mllint-baseline.json (1 finding)"
    document = json.loads((project / "mllint-baseline.json").read_text())
    assert document == {
        "version": 1,
        "tool": "mllint",
        "findings": [{"path": "src/train.py", "code": "ML001", "source": "loss.backward()", "occurrence": 0,
                      "line": 6}],
    }
    again = run(["--baseline", "mllint-baseline.json"], project)
    assert again.returncode == 0, again.stdout
    assert "1 baselined finding not shown" in again.stderr
    write(project / "src" / "new.py", BAD)
    new = run(["--baseline", "mllint-baseline.json", "--format", "json"], project)
    assert new.returncode == 1
    assert json_findings(new) == [("src/new.py", 6, "ML001")]


def test_paths_are_relative_to_the_baseline_file(project):
    (project / "ci").mkdir()
    assert run(["--baseline", "ci/base.json", "src"], project).returncode == 0
    assert json.loads((project / "ci" / "base.json").read_text())["findings"][0]["path"] == "../src/train.py"
    # the same baseline from another working directory
    proc = run(["--baseline", "base.json", "../src"], project / "ci")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run(["--baseline", str(project / "ci" / "base.json"), str(project / "src")], project / "src")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_line_shifts_new_identical_findings_and_fixed_findings(project):
    write(project / "src" / "train.py", two_loops())
    assert run(["--baseline", "b.json"], project).returncode == 0
    entries = json.loads((project / "b.json").read_text())["findings"]
    assert [(e["occurrence"], e["line"]) for e in entries] == [(0, 6), (1, 13)]

    # lines inserted above both findings: still baselined
    write(project / "src" / "train.py", two_loops(extra_lines=5))
    shifted = run(["--baseline", "b.json"], project)
    assert shifted.returncode == 0, shifted.stdout
    assert "2 baselined findings not shown" in shifted.stderr

    # a third identical finding (identical line, same code) further down is new
    write(project / "src" / "train.py", two_loops(extra_lines=5, third=True))
    third = run(["--baseline", "b.json", "--format", "json"], project)
    assert third.returncode == 1
    assert json_findings(third) == [("src/train.py", 25, "ML001")]
    assert "2 baselined findings not shown" in third.stderr

    # a fixed finding simply disappears; the other stays baselined
    fixed = two_loops().replace(BACKWARD, "        optimizer.zero_grad()\n" + BACKWARD, 1)
    write(project / "src" / "train.py", fixed)
    proc = run(["--baseline", "b.json"], project)
    assert proc.returncode == 0, proc.stdout
    assert "1 baselined finding not shown" in proc.stderr


def test_update_baseline(project):
    assert run(["--baseline", "b.json"], project).returncode == 0
    write(project / "src" / "new.py", BAD)
    write(project / "other" / "old.py", BAD)
    assert run(["--baseline", "b.json"], project).returncode == 1
    # updating from a run over src/ keeps the entries of files it did not lint
    assert run(["--baseline", "b.json", "--update-baseline", "src", "other"], project).returncode == 0
    write(project / "src" / "train.py", GOOD)
    proc = run(["--baseline", "b.json", "--update-baseline", "src"], project)
    assert proc.returncode == 0
    assert proc.stderr.strip() == "mllint: updated baseline b.json (2 findings)"
    paths = [e["path"] for e in json.loads((project / "b.json").read_text())["findings"]]
    assert paths == ["other/old.py", "src/new.py"]
    assert run(["--baseline", "b.json"], project).returncode == 0


def test_update_baseline_needs_baseline(project):
    assert_user_error(run(["--update-baseline"], project), "--update-baseline needs --baseline")


@pytest.mark.parametrize(
    "content,needle",
    [
        ("{", "not valid JSON"),
        ("[]", "not an mllint baseline"),
        ('{"version": 7, "findings": []}', "unsupported version 7"),
        ('{"version": 1, "findings": {}}', '"findings" must be a list'),
        ('{"version": 1, "findings": [{"path": "a.py", "code": "ML001"}]}', "finding 0 must have"),
    ],
)
def test_malformed_baseline_is_a_one_line_error(project, content, needle):
    write(project / "b.json", content)
    assert_user_error(run(["--baseline", "b.json"], project), "baseline b.json", needle)
    assert (project / "b.json").read_text() == content


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "sarif", "github"])
def test_every_format_gets_only_new_findings(project, fmt):
    assert run(["--baseline", "b.json"], project).returncode == 0
    write(project / "src" / "new.py", BAD)
    proc = run(["--baseline", "b.json", "--format", fmt], project)
    assert proc.returncode == 1
    assert "new.py" in proc.stdout and "train.py" not in proc.stdout


def test_statistics_count_only_new_findings(project):
    assert run(["--baseline", "b.json"], project).returncode == 0
    write(project / "src" / "new.py", BAD)
    write(project / "src" / "new2.py", BAD)
    assert run(["--statistics"], project).stdout.splitlines()[0].split()[:2] == ["3", "ML001"]
    proc = run(["--baseline", "b.json", "--statistics"], project)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0].split()[:2] == ["2", "ML001"]
