"""GitHub workflow-command annotations."""

from __future__ import annotations

import io

from mllint.engine import FileResult
from mllint.findings import Finding, Severity
from mllint.report import REPORTERS, ReportOptions
from mllint.report.github import escape_data, escape_property


def render(results):
    out = io.StringIO()
    REPORTERS["github"](results, ReportOptions(rules={}), out)
    return out.getvalue()


def test_one_annotation_per_finding_sorted_and_nothing_else():
    results = [
        FileResult("src/train.py", [Finding("src/train.py", 12, 9, 12, 24, "ML001", "missing-zero-grad",
                                            "gradients accumulate across optimizer steps")]),
        FileResult("a.py", [Finding("a.py", 1, 1, 1, 1, "ML000", "syntax-error", "SyntaxError: bad", Severity.ERROR)]),
    ]
    assert render(results) == (
        "::error title=mllint (ML000),file=a.py,line=1,col=1,endLine=1,endColumn=1::ML000 SyntaxError: bad\n"
        "::error title=mllint (ML001),file=src/train.py,line=12,col=9,endLine=12,endColumn=24"
        "::ML001 gradients accumulate across optimizer steps\n"
    )
    assert render([]) == ""


def test_warnings_and_multiline_findings():
    f = Finding("a.py", 3, 5, 6, 2, "ML007", "host-sync", "sync", Severity.WARNING)
    # GitHub rejects col/endColumn when the annotation spans lines
    assert render([FileResult("a.py", [f])]) == "::warning title=mllint (ML007),file=a.py,line=3,endLine=6::ML007 sync\n"


def test_escaping():
    assert escape_data("50% done\r\nnext: a,b") == "50%25 done%0D%0Anext: a,b"
    assert escape_property("dir:x,y/100%.py\n") == "dir%3Ax%2Cy/100%25.py%0A"
    f = Finding("we,ird:dir/100%.py", 1, 1, 1, 3, "ML001", "x", "line one\nline two: 100%")
    line = render([FileResult(f.path, [f])])
    assert line == (
        "::error title=mllint (ML001),file=we%2Cird%3Adir/100%25.py,line=1,col=1,endLine=1,endColumn=3"
        "::ML001 line one%0Aline two: 100%25\n"
    )
    assert line.count("\n") == 1
