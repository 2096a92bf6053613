"""The text and concise formats, on hand-made findings."""

from __future__ import annotations

import io
import re

import pytest

from mllint.engine import FileResult
from mllint.findings import Applicability, Edit, Finding, Fix, Severity
from mllint.registry import Rule
from mllint.report import REPORTERS, ReportOptions
from mllint.report.text import code_frame, render_line
from mllint.report._common import Style, split_lines


def finding(path="train.py", line=1, column=1, end_line=None, end_column=None, code="ML001",
            name="missing-zero-grad", message="gradients accumulate", fix=None, severity=Severity.ERROR):
    return Finding(path, line, column, line if end_line is None else end_line,
                   column + 1 if end_column is None else end_column, code, name, message, severity, fix)


SAFE = Fix(Applicability.SAFE, (Edit(1, 1, 1, 1, "x"),), "Insert `optimizer.zero_grad()`")
UNSAFE = Fix(Applicability.UNSAFE, (Edit(1, 1, 1, 1, "x"),), "Add `weights_only=True`")


def rule(code, name, doc="Summary line.\n\nMore text."):
    return Rule(code, name, "message", (), True, None, doc, lambda model: [], (), (), "tests.fake")


RULES = {"ML001": rule("ML001", "missing-zero-grad"), "ML010": rule("ML010", "unsafe-torch-load")}


def render(results, fmt="text", **options):
    options.setdefault("rules", RULES)
    options.setdefault("color", False)
    out = io.StringIO()
    REPORTERS[fmt](results, ReportOptions(**options), out)
    return out.getvalue()


# ---------------------------------------------------------------- listing and summary


def test_listing_is_sorted_marks_safe_fixes_and_ends_with_a_summary():
    results = [
        FileResult("b.py", [finding("b.py", 3, 5)], source=None),
        FileResult("a.py", [finding("a.py", 10, 1, fix=UNSAFE, code="ML010", message="unsafe load"),
                            finding("a.py", 2, 9, fix=SAFE), finding("a.py", 2, 3)], source=None),
    ]
    assert render(results) == (
        "a.py:2:3: ML001 gradients accumulate\n"
        "a.py:2:9: ML001 [*] gradients accumulate\n"
        "a.py:10:1: ML010 unsafe load\n"
        "b.py:3:5: ML001 gradients accumulate\n"
        "\n"
        "Found 4 problems (1 fixable with --fix).\n"
    )


def test_summary_wording():
    assert render([FileResult("a.py", [])]) == "All checks passed!\n"
    assert render([]) == "All checks passed!\n"
    assert render([FileResult("a.py", [finding()])]).endswith("\n\nFound 1 problem.\n")
    assert render([FileResult("a.py", [finding(fix=SAFE)])]).endswith("Found 1 problem (1 fixable with --fix).\n")
    two = [FileResult("a.py", [finding(line=1), finding(line=2)])]
    assert render(two).endswith("\n\nFound 2 problems.\n")


def test_hidden_unsafe_fixes_line():
    one = render([FileResult("a.py", [finding(fix=UNSAFE)])], unsafe_hidden=1)
    assert one.endswith("Found 1 problem.\n1 hidden fix can be enabled with the --unsafe-fixes option.\n")
    assert "[*]" not in one
    many = render([FileResult("a.py", [finding(line=1, fix=UNSAFE), finding(line=2, fix=UNSAFE)])], unsafe_hidden=2)
    assert many.endswith("2 hidden fixes can be enabled with the --unsafe-fixes option.\n")


def test_unsafe_fixes_count_as_fixable_when_enabled():
    text = render([FileResult("a.py", [finding("a.py", fix=UNSAFE)])], unsafe_fixes=True)
    assert text == "a.py:1:1: ML001 [*] gradients accumulate\n\nFound 1 problem (1 fixable with --fix).\n"


def test_after_a_fix_run():
    assert render([FileResult("a.py", [])], fix_applied=3) == "Fixed 3 problems.\nAll checks passed!\n"
    assert render([FileResult("a.py", [finding("a.py")])], fix_applied=1) == (
        "a.py:1:1: ML001 gradients accumulate\n\nFixed 1 problem.\nFound 1 problem.\n"
    )


def test_parse_errors_render_like_any_finding():
    bad = finding("broken.py", 3, 8, 3, 8, code="ML000", name="syntax-error", message="SyntaxError: invalid syntax")
    assert render([FileResult("broken.py", [bad])]) == (
        "broken.py:3:8: ML000 SyntaxError: invalid syntax\n\nFound 1 problem.\n"
    )


# ---------------------------------------------------------------- statistics


def test_statistics_one_row_per_code_most_frequent_first():
    findings = [finding(line=n) for n in range(1, 4)]
    findings += [finding(line=9, code="ML010", name="unsafe-torch-load", fix=SAFE)]
    findings += [finding(line=20, code="ML000", name="syntax-error", message="SyntaxError: x")]
    findings += [finding(line=30, code="ML010", name="unsafe-torch-load")]
    text = render([FileResult("a.py", findings)], statistics=True)
    assert text == (
        "3  ML001  [ ] missing-zero-grad\n"
        "2  ML010  [*] unsafe-torch-load\n"
        "1  ML000  [ ] syntax-error\n"
        "\n"
        "Found 6 problems (1 fixable with --fix).\n"
    )


def test_statistics_without_fixes_has_no_markers_and_aligns_counts():
    findings = [finding(line=n) for n in range(1, 12)] + [finding(line=40, code="ML000", name="syntax-error")]
    text = render([FileResult("a.py", findings)], statistics=True)
    assert text.splitlines()[:2] == ["11  ML001  missing-zero-grad", " 1  ML000  syntax-error"]


def test_statistics_with_no_findings():
    assert render([FileResult("a.py", [])], statistics=True) == "All checks passed!\n"


# ---------------------------------------------------------------- code frames

SOURCE = (
    "import torch\n"
    "\n"
    "for x, y in loader:\n"
    "    loss = crit(model(x), y)\n"
    "    loss.backward()\n"
    "    opt.step()\n"
    "print('done')\n"
    "x = 1\n"
)


def test_show_source_frame():
    f = finding(line=5, column=5, end_column=20, fix=SAFE)
    text = render([FileResult("train.py", [f], source=SOURCE)], show_source=True)
    assert text == (
        "train.py:5:5: ML001 [*] gradients accumulate\n"
        "  |\n"
        "3 | for x, y in loader:\n"
        "4 |     loss = crit(model(x), y)\n"
        "5 |     loss.backward()\n"
        "  |     ^^^^^^^^^^^^^^^ ML001\n"
        "6 |     opt.step()\n"
        "7 | print('done')\n"
        "  |\n"
        "  = help: Insert `optimizer.zero_grad()`\n"
        "\n"
        "Found 1 problem (1 fixable with --fix).\n"
    )


def test_frame_at_the_top_of_the_file_and_zero_width_span():
    f = finding(line=1, column=8, end_line=1, end_column=8, code="ML000", name="syntax-error")
    rows = code_frame(SOURCE.splitlines(), f, Style(False))
    assert rows == [
        "  |",
        "1 | import torch",
        "  |        ^ ML000",
        "2 |",
        "3 | for x, y in loader:",
        "  |",
    ]


def test_frame_expands_tabs_and_aligns_carets():
    source = "for b in loader:\n\tloss.backward()\n"
    f = finding(line=2, column=2, end_column=17)
    rows = code_frame(source.splitlines(), f, Style(False))
    assert rows[2:4] == ["2 |     loss.backward()", "  |     ^^^^^^^^^^^^^^^ ML001"]
    # a tab in the middle of a line expands to the next stop
    assert render_line("a\tb") == ("a   b", [0, 1, 4, 5])


def test_frame_counts_wide_characters_twice_and_hides_control_characters():
    shown, starts = render_line("s = '日本' + x")
    assert shown == "s = '日本' + x"
    assert starts[-1] == len(shown) + 2
    f = finding(line=1, column=12, end_column=13)
    rows = code_frame(["s = '日本' + x"], f, Style(False))
    assert rows[2] == "  |" + " " * 14 + "^ ML001"
    shown, _ = render_line("a\x1b[31mb\u202ec")
    assert "\x1b" not in shown and "\u202e" not in shown
    assert shown == "a\ufffd[31mb\ufffdc"


def test_frame_underlines_every_line_of_a_multiline_span():
    source = "x = f(\n    a,\n\n    b)\ny = 2\n"
    f = finding(line=1, column=5, end_line=4, end_column=7)
    rows = code_frame(source.splitlines(), f, Style(False))
    assert rows == [
        "  |",
        "1 | x = f(",
        "  |     ^^",
        "2 |     a,",
        "  |     ^^",
        "3 |",
        "4 |     b)",
        "  |     ^^ ML001",
        "5 | y = 2",
        "  |",
    ]


def test_long_spans_are_elided_in_the_middle():
    source = "".join(f"line{n}\n" for n in range(1, 21))
    f = finding(line=3, column=1, end_line=15, end_column=7)
    rows = code_frame(source.splitlines(), f, Style(False))
    numbers = [row.split(" |")[0].strip() for row in rows if row[:2].strip().isdigit()]
    assert numbers == ["1", "2", "3", "4", "5", "13", "14", "15", "16", "17"]
    assert rows[rows.index("...") - 2] == " 5 | line5"


def test_frame_past_the_end_of_the_file():
    f = finding(line=3, column=1, end_line=3, end_column=1, code="ML000", name="syntax-error")
    rows = code_frame(["def f(:", "    pass"], f, Style(False))
    assert rows[-3:] == ["3 |", "  | ^ ML000", "  |"]
    assert code_frame([], finding(line=1, column=1, end_column=1), Style(False)) == [
        "  |", "1 |", "  | ^ ML001", "  |",
    ]


def test_frame_does_not_split_lines_on_form_feeds():
    source = "a = 1\n\x0cb = 2\nc = 3\n"
    f = finding(line=3, column=1, end_column=2)
    rows = code_frame(split_lines(source), f, Style(False))
    assert "3 | c = 3" in rows


def test_cached_results_read_the_file_for_the_frame(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_bytes(b"first\r\nsecond line\r\n")  # write_text(newline=) needs Python 3.10
    f = finding("t.py", 2, 1, 2, 7)
    text = render([FileResult("t.py", [f], source=None, cached=True)], show_source=True)
    assert "2 | second line\n  | ^^^^^^ ML001\n" in text
    assert "\r" not in text


def test_unreadable_sources_get_no_frame(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bin.py").write_bytes(b"\x00\x01binary")
    missing = finding("gone.py", 1, 1, 1, 1, code="ML000", name="syntax-error", message="cannot read file")
    binary = finding("bin.py", 1, 1, 1, 1, code="ML000", name="syntax-error", message="binary file")
    text = render([FileResult("bin.py", [binary]), FileResult("gone.py", [missing])], show_source=True)
    assert text == (
        "bin.py:1:1: ML000 binary file\n\n"
        "gone.py:1:1: ML000 cannot read file\n\n"
        "Found 2 problems.\n"
    )


# ---------------------------------------------------------------- colour


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def _auto(out, monkeypatch, **env):
    for key in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    REPORTERS["text"]([FileResult("a.py", [finding(fix=SAFE)])], ReportOptions(rules=RULES), out)
    return "\x1b[" in out.getvalue()


def test_colour_only_on_a_terminal(monkeypatch):
    assert not _auto(io.StringIO(), monkeypatch)
    assert _auto(FakeTTY(), monkeypatch)


def test_no_color_and_force_color(monkeypatch):
    assert not _auto(FakeTTY(), monkeypatch, NO_COLOR="1")
    assert _auto(FakeTTY(), monkeypatch, NO_COLOR="")  # empty means unset (no-color.org)
    assert _auto(io.StringIO(), monkeypatch, FORCE_COLOR="1")
    assert not _auto(io.StringIO(), monkeypatch, FORCE_COLOR="0")
    assert not _auto(io.StringIO(), monkeypatch, FORCE_COLOR="1", NO_COLOR="1")


def test_coloured_text_has_the_same_words():
    plain = render([FileResult("a.py", [finding(fix=SAFE)], source="x = 1\n")], show_source=True, color=False)
    coloured = render([FileResult("a.py", [finding(fix=SAFE)], source="x = 1\n")], show_source=True, color=True)
    assert "\x1b[" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain


# ---------------------------------------------------------------- concise


def test_concise_format():
    results = [FileResult("b.py", [finding("b.py", 1, 1, fix=SAFE)]), FileResult("a.py", [finding("a.py", 4, 2)])]
    assert render(results, "concise", show_source=True) == (
        "a.py:4:2: ML001 gradients accumulate\n"
        "b.py:1:1: ML001 [*] gradients accumulate\n"  # as Ruff's concise: the fix marker stays
        "Found 2 problems (1 fixable with --fix).\n"
    )
    assert render([], "concise") == "All checks passed!\n"


def test_concise_statistics():
    results = [FileResult("a.py", [finding(line=1), finding(line=2)])]
    assert render(results, "concise", statistics=True) == "2  ML001  missing-zero-grad\nFound 2 problems.\n"


@pytest.mark.parametrize("fmt", ["text", "concise"])
def test_unknown_codes_fall_back_to_the_finding(fmt):
    f = finding(code="ML999", name="from-a-plugin")
    assert "from-a-plugin" in render([FileResult("a.py", [f])], fmt, statistics=True, rules={})
