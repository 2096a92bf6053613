"""Pre-3.7 code that uses `async` as a name (`x.cuda(async=True)`, `def f(async=False)`):
linted through a same-width renaming, positions kept, messages restored, no fixes."""

from __future__ import annotations

import json
import textwrap

import pytest

from cli_helpers import run, snapshot, write
from mllint import engine
from mllint.legacy_syntax import rename_async_names
from mllint.registry import rules_for

RULES = rules_for(["ML001", "ML002", "ML004", "ML005", "ML006"])

OLD_LOOP = textwrap.dedent("""\
    import torch

    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


    def to_gpu(batch, async=False):
        return [t.cuda(async=async) for t in batch]


    for x, y in loader:
        x, y = x.cuda(async=True), y.cuda(async=True); mask = torch.ones(4, 4)
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
    """)


def where(findings):
    return [(f.code, f.line, f.column) for f in findings]


# --------------------------------------------------------------------------- the renaming


def test_async_names_are_renamed_in_place_and_keywords_kept():
    source = ("x.cuda(async=True)\ndef f(async=False):\n    async def g():\n        async with a:\n"
              "            async for b in c:\n                pass\n    return async  # async\ns = 'async'\n")
    renamed = rename_async_names(source)
    assert renamed.count == 3 and renamed.name == "asyn_"
    assert renamed.source == source.replace("(async=", "(asyn_=").replace("return async ", "return asyn_ ")
    assert [len(line) for line in renamed.source.splitlines()] == [len(line) for line in source.splitlines()]
    compile(renamed.source, "renamed", "exec")


def test_the_new_name_is_one_the_file_does_not_use():
    renamed = rename_async_names("asyn_ = 1\nx.cuda(async=True)\n")
    assert renamed.name == "_sync" and renamed.source == "asyn_ = 1\nx.cuda(_sync=True)\n"
    assert renamed.restore("`_sync` and `asyn_`") == "`async` and `asyn_`"


@pytest.mark.parametrize("source", [
    "x = 1\n",  # no async at all
    "async def f():\n    await g()\n",  # the keyword only
    "s = 'x.cuda(async=True)'\n",  # in a string
    "x = (\n  'async\n",  # does not tokenize before it
])
def test_nothing_to_rename(source):
    assert rename_async_names(source) is None


# --------------------------------------------------------------------------- linting


def test_old_code_is_linted_with_positions_and_no_parse_error():
    findings = engine.lint_source(OLD_LOOP, "train.py", RULES)
    # ML004 sits after `async=True` on its line: its column is the file's own.
    assert where(findings) == [("ML004", 12, 59), ("ML001", 14, 5)]
    assert OLD_LOOP.splitlines()[11][58:].startswith("torch.ones(4, 4)")
    assert all(f.fix is None for f in findings)  # never rewritten
    assert all("asyn_" not in f.message and "asyn_" not in (f.detail or "") for f in findings)


def test_messages_name_async_again():
    source = textwrap.dedent("""\
        import torch
        model = torch.nn.Linear(4, 1)
        async = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            x = x.cuda(async=True)
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            async.step()
        """)
    [finding] = engine.lint_source(source, "train.py", RULES)
    assert finding.code == "ML001" and "`async`" in finding.message and "asyn_" not in finding.message


def test_other_syntax_errors_are_still_ml000():
    broken = OLD_LOOP + "def broken(:\n    pass\n"
    [finding] = engine.lint_source(broken, "train.py", RULES)
    # the error to fix (the first one past the `async` names), where it is in the file
    assert (finding.code, finding.line, finding.column) == ("ML000", 16, 12)
    assert engine.lint_source("def f(async=1):\n    pass\n", "x.py", RULES) == []
    # and a file with no rule triggered is checked too
    [finding] = engine.lint_source("x.cuda(async=True)\ny = (\n", "train.py", RULES)
    assert (finding.code, finding.line) == ("ML000", 2) and "asyn_" not in finding.message
    assert engine.lint_source("x.cuda(async=True)\n", "train.py", RULES) == []


def test_noqa_works_on_renamed_lines():
    source = OLD_LOOP.replace("loss.backward()", "loss.backward()  # noqa: ML001")
    assert [f.code for f in engine.lint_source(source, "train.py", RULES)] == ["ML004"]


def test_notebook_cells_with_async_names_are_linted():
    from test_notebook import notebook_json

    cells = ["import torch\nmodel = torch.nn.Linear(4, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n",
             "for x, y in loader:\n    x = x.cuda(async=True)\n    loss = ((model(x) - y) ** 2).mean()\n"
             "    loss.backward()\n    optimizer.step()\n"]
    findings = engine.lint_text(notebook_json(cells), "nb.ipynb", RULES).findings
    assert [(f.code, f.cell, f.line, f.column) for f in findings] == [("ML001", 2, 4, 5)]
    assert findings[0].fix is None


def test_cli_reports_old_code_and_fix_leaves_it_alone(tmp_path):
    path = write(tmp_path / "old_train.py", OLD_LOOP)
    proc = run(["--no-cache", "--format", "json", "old_train.py"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert [(f["code"], f["line"], f["column"], f["fix"]) for f in report] == [
        ("ML004", 12, 59, None), ("ML001", 14, 5, None)]
    before = snapshot(tmp_path)
    proc = run(["--no-cache", "--fix", "old_train.py"], tmp_path)
    assert proc.returncode == 1 and "ML000" not in proc.stdout, proc.stdout + proc.stderr
    assert snapshot(tmp_path) == before and path.read_text() == OLD_LOOP
