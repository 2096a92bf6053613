"""Adoption in an existing project, end to end: --add-noqa, unknown noqa codes, ML100."""

from __future__ import annotations

import json
import textwrap

import pytest

from cli_helpers import BAD, GOOD, SYNTAX_ERROR, assert_user_error, run, write

EVAL = textwrap.dedent(
    """\
    import torch
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))
    model.load_state_dict(torch.load("w.pt", weights_only=True))
    for x in test_loader:
        preds = model(x, '''
        a note''')
        print(preds)
    """
)


@pytest.fixture
def project(tmp_path):
    write(tmp_path / "pyproject.toml", "[project]\nname = 'demo'\n")
    write(tmp_path / "train.py", BAD)
    write(tmp_path / "clean.py", GOOD)
    write(tmp_path / "evaluate.py", EVAL)
    return tmp_path


# --- --add-noqa --------------------------------------------------------------------------


def test_add_noqa_marks_every_finding_and_a_second_run_is_clean(project):
    assert run(["--no-cache"], project).returncode == 1
    proc = run(["--add-noqa"], project)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "Added 2 noqa directives."
    assert proc.stdout == ""
    train = (project / "train.py").read_text()
    assert "    loss.backward()  # noqa: ML001\n" in train
    # the finding's line ends inside a multi-line string: marked where the string ends
    assert "    a note''')  # noqa: ML002, ML005\n" in (project / "evaluate.py").read_text()
    assert (project / "clean.py").read_text() == GOOD
    again = run([], project)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.strip() == "All checks passed!"
    # and nothing left to add
    assert run(["--add-noqa"], project).stderr.strip() == "Added 0 noqa directives."


def test_add_noqa_with_select_marks_one_rule(project):
    proc = run(["--add-noqa", "--select", "ML005", "evaluate.py", "train.py"], project)
    assert proc.returncode == 0
    assert proc.stderr.strip() == "Added 1 noqa directive."
    assert "  # noqa: ML005\n" in (project / "evaluate.py").read_text()
    assert (project / "train.py").read_text() == BAD
    left = run(["--format", "json", "evaluate.py"], project)
    assert [f["code"] for f in json.loads(left.stdout)] == ["ML002"]


def test_add_noqa_extends_existing_directive(project):
    write(project / "evaluate.py", EVAL.replace("a note''')", "a note''')  # noqa: E501"))
    assert run(["--add-noqa", "evaluate.py"], project).returncode == 0
    assert "a note''')  # noqa: E501, ML002, ML005\n" in (project / "evaluate.py").read_text()
    assert run(["evaluate.py"], project).returncode == 0


def test_add_noqa_keeps_encoding_and_crlf(project):
    data = ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + BAD).replace("\n", "\r\n").encode("latin-1")
    path = write(project / "legacy.py", data=data)
    proc = run(["--add-noqa", "legacy.py"], project)
    assert proc.returncode == 0 and "Added 1 noqa directive." in proc.stderr
    expected = data.replace(b"loss.backward()\r\n", b"loss.backward()  # noqa: ML001\r\n")
    assert path.read_bytes() == expected
    assert run(["legacy.py"], project).returncode == 0


def test_add_noqa_does_not_mark_unparsable_files(project):
    write(project / "broken.py", SYNTAX_ERROR)
    proc = run(["--add-noqa", "broken.py"], project)
    assert proc.returncode == 0
    assert proc.stderr.strip() == "Added 0 noqa directives."
    assert (project / "broken.py").read_text() == SYNTAX_ERROR


@pytest.mark.parametrize("other", [["--fix"], ["--diff"], ["--baseline", "b.json"]])
def test_add_noqa_conflicts(project, other):
    assert_user_error(run(["--add-noqa", *other], project), "--add-noqa cannot be combined with")
    assert (project / "train.py").read_text() == BAD
    assert not (project / "b.json").exists()


# --- unknown codes ----------------------------------------------------------------------


def test_unknown_ml_codes_warn_once_per_line(project):
    write(project / "clean.py", GOOD + "x = 1  # noqa: ML999, E501, ML998, TOR102\ny = 2  # noqa: F401\n")
    proc = run(["clean.py"], project)
    assert proc.returncode == 0
    assert proc.stderr.splitlines() == ["mllint: warning: clean.py:9: # noqa names unknown rule codes ML999, ML998"]


# --- ML100 -----------------------------------------------------------------------------


def test_ml100_listed_and_explained(project):
    rules = json.loads(run(["rules", "--format", "json"], project).stdout)
    row = next(r for r in rules if r["code"] == "ML100")
    assert row["name"] == "unused-noqa" and row["default_enabled"] is False and row["fix"] == "safe"
    explain = run(["explain", "ML100"], project)
    assert explain.returncode == 0 and "unused-noqa" in explain.stdout and "Off by default" in explain.stdout


def test_ml100_off_by_default_then_reported_and_fixed(project):
    stale = GOOD.replace("loss.backward()\n", "loss.backward()  # noqa: ML001, E501  # flaky\n")
    write(project / "clean.py", stale)
    assert run(["clean.py"], project).returncode == 0
    proc = run(["--extend-select", "ML100", "clean.py"], project)
    assert proc.returncode == 1
    assert "clean.py:7:22: ML100 [*] unused `noqa` directive (unused: ML001)" in proc.stdout
    fixed = run(["--extend-select", "ML100", "--fix", "clean.py"], project)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert (project / "clean.py").read_text() == GOOD.replace(
        "loss.backward()\n", "loss.backward()  # noqa: E501  # flaky\n")


def test_ml100_keeps_used_codes_and_respects_noqa_and_ignores(project):
    write(project / "train.py", BAD.replace("loss.backward()\n", "loss.backward()  # noqa: ML001, ML004\n"))
    proc = run(["--select", "ALL", "--format", "json", "train.py"], project)
    found = json.loads(proc.stdout)
    assert [(f["code"], f["message"]) for f in found] == [("ML100", "unused `noqa` directive (unused: ML004)")]
    # a disabled rule's code is not judged
    assert run(["--select", "ML001,ML100", "train.py"], project).returncode == 0
    # `# noqa: ML100` keeps the directive
    write(project / "train.py", BAD.replace("loss.backward()\n", "loss.backward()  # noqa: ML001, ML004, ML100\n"))
    assert run(["--select", "ALL", "train.py"], project).returncode == 0


def test_ml100_per_file_ignores(project):
    write(project / "pyproject.toml", '[tool.mllint]\nextend-select = ["ML100"]\n'
          '[tool.mllint.per-file-ignores]\n"legacy/*" = ["ML100"]\n')
    write(project / "legacy" / "a.py", "x = 1  # noqa: ML002\n")
    write(project / "b.py", "x = 1  # noqa: ML002\n")
    proc = run(["--format", "concise", "legacy", "b.py"], project)
    assert proc.returncode == 1
    assert [line.split(":")[0] for line in proc.stdout.splitlines() if ": ML100" in line] == ["b.py"]


def test_add_noqa_then_ml100_is_clean(project):
    assert run(["--add-noqa", "--select", "ALL"], project).returncode == 0
    proc = run(["--select", "ALL"], project)
    assert proc.returncode == 0, proc.stdout


# --- notebooks (through i10-nb's notebook support) ---------------------------------------

SETUP_CELL = "import torch\n%matplotlib inline\nmodel = torch.nn.Linear(4, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)"
LOOP_CELL = "for x, y in loader:\n    loss = ((model(x) - y) ** 2).mean()\n    loss.backward()\n    optimizer.step()"


def notebook_text(*sources: str) -> str:
    """A notebook as Jupyter writes it (indent=1, sorted keys), a markdown cell first,
    each code cell with an output and an execution count."""
    cells = [{"cell_type": "markdown", "id": "m", "metadata": {}, "source": ["# Title\n", "text"]}]
    for index, source in enumerate(sources):
        cells.append({"cell_type": "code", "execution_count": index + 1, "id": f"c{index}", "metadata": {},
                      "outputs": [{"name": "stdout", "output_type": "stream", "text": ["résultat\n"]}],
                      "source": source.splitlines(True)})
    document = {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                            "name": "python3"}},
                "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def test_add_noqa_marks_a_notebook_cell_and_keeps_the_rest(tmp_path):
    original = notebook_text(SETUP_CELL, LOOP_CELL)
    path = write(tmp_path / "nb.ipynb", original)
    before = run(["--format", "json", "nb.ipynb"], tmp_path)
    assert [(f["cell"], f["line"], f["code"]) for f in json.loads(before.stdout)] == [(3, 3, "ML001")]
    proc = run(["--add-noqa", "nb.ipynb"], tmp_path)
    assert proc.returncode == 0 and proc.stderr.strip() == "Added 1 noqa directive."
    new = path.read_text(encoding="utf-8")
    assert new == original.replace('"    loss.backward()\\n"', '"    loss.backward()  # noqa: ML001\\n"')
    assert run(["nb.ipynb"], tmp_path).returncode == 0


def test_unknown_code_in_a_notebook_names_the_cell(tmp_path):
    write(tmp_path / "nb.ipynb", notebook_text(SETUP_CELL, "x = 1\ny = 2  # noqa: ML777"))
    proc = run(["nb.ipynb"], tmp_path)
    assert proc.stderr.splitlines() == ["mllint: warning: nb.ipynb:cell 3:line 2: # noqa names unknown rule code ML777"]


def test_baseline_in_a_notebook_survives_a_new_cell_above(tmp_path):
    write(tmp_path / "nb.ipynb", notebook_text(SETUP_CELL, LOOP_CELL))
    assert run(["--baseline", "b.json"], tmp_path).returncode == 0
    entry = json.loads((tmp_path / "b.json").read_text())["findings"][0]
    assert (entry["path"], entry["source"], entry["code"]) == ("nb.ipynb", "loss.backward()", "ML001")
    write(tmp_path / "nb.ipynb", notebook_text(SETUP_CELL, "print('new cell')\nprint(2)", LOOP_CELL))
    proc = run(["--baseline", "b.json"], tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert "1 baselined finding not shown" in proc.stderr


def test_ml100_in_a_notebook_is_reported_in_its_cell_and_fixed(tmp_path):
    original = notebook_text(SETUP_CELL, "x = 1  # noqa: ML004\nprint(x)")
    path = write(tmp_path / "nb.ipynb", original)
    proc = run(["--extend-select", "ML100", "--format", "json", "nb.ipynb"], tmp_path)
    assert [(f["cell"], f["line"], f["code"]) for f in json.loads(proc.stdout)] == [(3, 1, "ML100")]
    assert run(["--extend-select", "ML100", "--fix", "nb.ipynb"], tmp_path).returncode == 0
    assert path.read_text(encoding="utf-8") == original.replace('"x = 1  # noqa: ML004\\n"', '"x = 1\\n"')


def test_add_noqa_leaves_a_cell_the_notebook_writer_refuses_and_says_so(tmp_path):
    indented = "\n".join("    " + line for line in LOOP_CELL.splitlines())  # indented as a whole
    original = notebook_text(SETUP_CELL, LOOP_CELL, indented)
    path = write(tmp_path / "nb.ipynb", original)
    before = json.loads(run(["--format", "json", "nb.ipynb"], tmp_path).stdout)
    assert [(f["cell"], f["code"]) for f in before] == [(3, "ML001"), (4, "ML001")]
    proc = run(["--add-noqa", "nb.ipynb"], tmp_path)
    assert proc.returncode == 0
    assert proc.stderr.splitlines() == [
        "mllint: warning: nb.ipynb:cell 4:line 3:9: ML001 could not be marked with # noqa",
        "Added 1 noqa directive.",
    ]
    assert path.read_text(encoding="utf-8") == original.replace(
        '"    loss.backward()\\n"', '"    loss.backward()  # noqa: ML001\\n"', 1)
