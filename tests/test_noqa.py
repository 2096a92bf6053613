"""noqa.py (directives, the line map for lines that cannot carry a comment) and the pure
half of --add-noqa (adoption.add_noqa_to_source)."""

from __future__ import annotations

import textwrap

import pytest

from cli_helpers import BAD
from mllint import noqa
from mllint.adoption import add_noqa_to_source, unknown_noqa_codes
from mllint.engine import lint_source
from mllint.findings import Finding
from mllint.registry import all_rules

RULES = list(all_rules().values())


def finding(line: int, code: str = "ML001") -> Finding:
    return Finding("x.py", line, 1, line, 2, code, "n", "m")


def src(text: str) -> str:
    return textwrap.dedent(text)


# --- scanning --------------------------------------------------------------------------


def test_scan_directive_positions_and_codes():
    s = noqa.scan("x = 1  # reason  # noqa: ML001,E501 more\n")
    d = s.directives[1]
    assert d.codes == ("ML001", "E501")
    assert (d.comment_column, d.column) == (8, 18)
    assert "x = 1  # reason  # noqa: ML001,E501 more"[d.codes_column - 1:d.codes_end_column - 1] == "ML001,E501"
    assert s.suppresses(1, "ML001") and s.suppresses(1, "E501") and not s.suppresses(1, "ML002")


def test_scan_is_case_insensitive():
    s = noqa.scan("x = 1  # NOQA:ml001\ny = 2  # NoQA\n")
    assert s.suppresses(1, "ML001") and not s.suppresses(1, "ML002")
    assert s.suppresses(2, "ML005")


def test_noqa_in_a_string_is_not_a_directive():
    assert noqa.scan('x = "# noqa: ML001"\n').directives == {}


@pytest.mark.parametrize(
    "text,expected",
    [
        # the lines of a multi-line string map to the line where it ends
        ('x = f(1, """\na\nb""")\ny = 2\n', {1: 3, 2: 3}),
        # backslash continuations map to the line where the continuation ends
        ("x = a + \\\n    b + \\\n    c\n", {1: 3, 2: 3}),
        # a string ending on a backslash-continued line: follow both
        ('x = f("""\n""") + \\\n    1\n', {1: 3, 2: 3}),
        # an f-string spanning lines
        ('x = f"""{a}\n{b}"""\n', {1: 2}),
        # an f-string whose replacement field spans lines (FSTRING_* tokens on 3.12+)
        ('x = f"""{a\n}b\n"""  # noqa: ML001\n', {1: 3, 2: 3}),
        # brackets do not block a comment
        ("x = f(\n    1,\n)\n", {}),
        # a comment ending with a backslash is not a continuation
        ("x = 1  # a \\\ny = 2\n", {}),
    ],
)
def test_line_map(text, expected):
    assert noqa.line_map(text) == expected


def test_directive_on_the_last_line_covers_a_finding_inside_a_multiline_string():
    s = noqa.scan('x = f(1, """\na\n""")  # noqa: ML001\n')
    assert s.suppresses(1, "ML001") and s.suppresses(2, "ML001") and s.suppresses(3, "ML001")
    assert not s.suppresses(4, "ML001")


# --- add_noqa_to_source ----------------------------------------------------------------


def test_add_noqa_appends_sorted_merged_directive():
    text, added = add_noqa_to_source("a = 1   \nb = 2\n", [finding(1, "ML005"), finding(1, "ML002"), finding(2)])
    assert text == "a = 1  # noqa: ML002, ML005\nb = 2  # noqa: ML001\n"
    assert added == 2


def test_add_noqa_extends_an_existing_directive_and_keeps_its_text():
    text, added = add_noqa_to_source("a = 1  # noqa: E501 why\n", [finding(1, "ML002"), finding(1, "ML001")])
    assert text == "a = 1  # noqa: E501, ML001, ML002 why\n"
    assert added == 1


def test_add_noqa_leaves_covered_lines_alone():
    source = "a = 1  # noqa\nb = 2  # noqa: ML001\n"
    assert add_noqa_to_source(source, [finding(1), finding(2)]) == (source, 0)


def test_add_noqa_after_an_ordinary_comment():
    text, _ = add_noqa_to_source("a = 1  # a comment\n", [finding(1)])
    assert text == "a = 1  # a comment  # noqa: ML001\n"
    assert noqa.scan(text).suppresses(1, "ML001")


def test_add_noqa_keeps_line_endings_and_a_missing_final_newline():
    text, _ = add_noqa_to_source("a = 1\r\nb = 2\r\nc = 3", [finding(2), finding(3)])
    assert text == "a = 1\r\nb = 2  # noqa: ML001\r\nc = 3  # noqa: ML001"


def test_add_noqa_never_marks_ml000():
    assert add_noqa_to_source("def f(:\n", [finding(1, "ML000")]) == ("def f(:\n", 0)


def test_add_noqa_inside_multiline_string_and_continuation():
    source = 'x = f(1, """\na\n""")\ny = g(2) + \\\n    3\n'
    text, added = add_noqa_to_source(source, [finding(1), finding(2, "ML002"), finding(4, "ML005")])
    assert text == 'x = f(1, """\na\n""")  # noqa: ML001, ML002\ny = g(2) + \\\n    3  # noqa: ML005\n'
    assert added == 2
    s = noqa.scan(text)
    assert s.suppresses(1, "ML001") and s.suppresses(2, "ML002") and s.suppresses(4, "ML005")


# --- through the engine ----------------------------------------------------------------

EVAL_MULTILINE = src(
    '''\
    import torch
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))
    model.load_state_dict(torch.load("w.pt", weights_only=True))
    for x in test_loader:
        preds = model(x, """
        a note""")
        print(preds)
    '''
)

EVAL_CONTINUATION = src(
    '''\
    import torch
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))
    model.load_state_dict(torch.load("w.pt", weights_only=True))
    for x in test_loader:
        preds = model(x) + \\
            0
        print(preds)
    '''
)


@pytest.mark.parametrize("source", [EVAL_MULTILINE, EVAL_CONTINUATION])
def test_engine_findings_on_unmarkable_lines_are_suppressed_where_marked(source):
    before = lint_source(source, "e.py", RULES)
    assert {(f.line, f.code) for f in before} == {(5, "ML002"), (5, "ML005")}
    text, added = add_noqa_to_source(source, before)
    assert added == 1
    assert text.splitlines()[5].endswith("# noqa: ML002, ML005")
    assert lint_source(text, "e.py", RULES) == []


def test_unknown_noqa_codes_only_ml_codes_once_per_line():
    source = "a = 1  # noqa: ML999, E501, ML998, ML999, ML001, TOR102\nb = 2  # noqa\n"
    assert unknown_noqa_codes(source, {"ML001"}) == [(1, ["ML999", "ML998"])]


@pytest.mark.parametrize("comment,left", [
    ("# mllint: noqa", []),
    ("# mllint: noqa: ML001", []),
    ("#mllint:noqa: ml001, ML002", []),
    ("# mllint: noqa: ML002", ["ML001"]),
    ("# a note: mllint: noqa", ["ML001"]),  # not a directive as a whole comment
])
def test_file_level_noqa(comment, left):
    """`# mllint: noqa` (as Ruff's `# ruff: noqa`) on a line of its own anywhere in the file
    suppresses every finding of the file, or those of the codes it names."""
    for source in (comment + "\n" + BAD, BAD + comment + "\n"):
        assert [f.code for f in lint_source(source, "t.py", list(all_rules().values()))] == left
