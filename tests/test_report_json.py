"""The JSON format: exactly Finding.to_dict() objects in a stable order."""

from __future__ import annotations

import io
import json

from mllint.engine import FileResult
from mllint.findings import Applicability, Edit, Finding, Fix, Severity
from mllint.report import REPORTERS, ReportOptions

FIELDS = ["path", "line", "column", "end_line", "end_column", "code", "name", "message", "detail", "severity", "fix",
          "cell", "json_line", "basis"]


def render(results):
    out = io.StringIO()
    REPORTERS["json"](results, ReportOptions(rules={}), out)
    return out.getvalue()


def test_empty_run_is_an_empty_array():
    assert render([]) == "[]\n"
    assert render([FileResult("a.py", [])]) == "[]\n"


def test_objects_have_exactly_the_documented_fields_in_order():
    fix = Fix(Applicability.SAFE, (Edit(3, 5, 3, 5, "optimizer.zero_grad()\n    "),), "Insert `optimizer.zero_grad()`")
    results = [
        FileResult("src/b.py", [Finding("src/b.py", 7, 9, 7, 24, "ML001", "missing-zero-grad", "grads", fix=fix)]),
        FileResult("src/a.py", [
            Finding("src/a.py", 2, 1, 2, 1, "ML000", "syntax-error", "SyntaxError: oops"),
            Finding("src/a.py", 1, 4, 1, 9, "ML007", "host-sync", "sync", Severity.WARNING),
        ]),
    ]
    text = render(results)
    data = json.loads(text)
    assert [list(item) for item in data] == [FIELDS] * 3
    assert [(d["path"], d["line"]) for d in data] == [("src/a.py", 1), ("src/a.py", 2), ("src/b.py", 7)]
    assert data[0]["severity"] == "warning" and data[0]["fix"] is None
    assert data[2]["fix"] == {
        "applicability": "safe",
        "message": "Insert `optimizer.zero_grad()`",
        "edits": [{"line": 3, "column": 5, "end_line": 3, "end_column": 5, "content": "optimizer.zero_grad()\n    "}],
    }
    assert list(data[2]["fix"]["edits"][0]) == ["line", "column", "end_line", "end_column", "content"]
    # pretty-printed with an indent of 2, newline at the end, same as to_dict()
    assert text == json.dumps([f.to_dict() for f in sorted(
        [f for r in results for f in r.findings], key=Finding.sort_key)], indent=2) + "\n"
    assert text.startswith('[\n  {\n    "path": "src/a.py",\n')


def test_paths_are_kept_as_given_and_text_is_ascii_safe():
    f = Finding("./données/ä b.py", 1, 1, 1, 2, "ML001", "missing-zero-grad", "μ «quoted»")
    text = render([FileResult(f.path, [f])])
    assert text.isascii()
    assert json.loads(text)[0]["path"] == "./données/ä b.py"
    assert json.loads(text)[0]["message"] == "μ «quoted»"


def test_output_is_stable():
    results = [FileResult("a.py", [Finding("a.py", n, 1, n, 2, "ML001", "x", "m") for n in (3, 1, 2)])]
    assert render(results) == render(list(reversed(results)))
    assert [d["line"] for d in json.loads(render(results))] == [1, 2, 3]
