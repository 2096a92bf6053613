"""Tests for mllint/fixing.py, with tiny test-only rules so they do not depend on the real ones."""

from __future__ import annotations

import os
import re
import stat
import sys

import pytest

from mllint import engine, fixing
from mllint.findings import Applicability, Edit, Finding, Fix
from mllint.registry import Rule


# --- test-only rules -------------------------------------------------------------------

def _pos(source: str, offset: int):
    line = source.count("\n", 0, offset) + 1
    column = offset - (source.rfind("\n", 0, offset) + 1) + 1
    return line, column


def _finding(model, code, message, start, end, fix=None):
    line, column = _pos(model.source, start)
    end_line, end_column = _pos(model.source, end)
    return Finding(model.path, line, column, end_line, end_column, code, "test-" + code.lower(), message, fix=fix)


def _replace(model, start, end, content, applicability=Applicability.SAFE):
    line, column = _pos(model.source, start)
    end_line, end_column = _pos(model.source, end)
    return Fix(applicability, (Edit(line, column, end_line, end_column, content),), "test fix")


def make_rule(code, check, *, triggers=(), fix=Applicability.SAFE):
    return Rule(
        code=code,
        name="test-" + code.lower(),
        message="test rule",
        triggers=tuple(triggers),
        default_enabled=True,
        fix=fix,
        doc="",
        check=check,
        valid=(),
        invalid=(),
        module=__name__,
    )


def _regex_rule(code, pattern, replacement, message, *, applicability=Applicability.SAFE, first_only=False):
    """Flags every match of ``pattern`` (group 1 is what gets replaced) and offers ``replacement``."""
    regex = re.compile(pattern)

    def check(model):
        for match in regex.finditer(model.source):
            fix = _replace(model, match.start(1), match.end(1), replacement, applicability)
            yield _finding(model, code, message, match.start(), match.end(), fix)
            if first_only:
                return

    return make_rule(code, check, fix=applicability)


# print(...) -> log(...): a good safe fix.
PRINT = _regex_rule("TST001", r"\b(print)\(", "log", "print call")


def _wide_check(model):
    """Flags every print( with a fix that rewrites the file from its start up to the call:
    all such fixes overlap, so only one can be applied per round."""
    for match in re.finditer(r"\bprint\(", model.source):
        content = model.source[: match.start()] + "log"
        fix = _replace(model, 0, match.start() + len("print"), content)
        yield _finding(model, "TST002", "print call (wide fix)", match.start(), match.end(), fix)


WIDE = make_rule("TST002", _wide_check)
# Only the first print( in the file: fixing it makes the next one appear, a new finding.
FIRST_PRINT = _regex_rule("TST012", r"\b(print)\(", "log", "first print call", first_only=True)
# breakme( -> breakme(( : a fix that breaks the syntax.
BREAKS = _regex_rule("TST003", r"\b(breakme)\(", "breakme((", "breakme call")
# foo(1) -> (foo() + foo)(1) : moves its finding and adds one more of its own kind.
DOUBLES = _regex_rule("TST004", r"\b(foo)\(", "(foo() + foo)", "foo call")
# bar( -> bar (  : the rule still flags it (a fix that keeps reappearing).
STUBBORN = _regex_rule("TST005", r"\b(bar)\s*\(", "bar ", "bar call")
# same( -> same( : a fix that changes nothing.
NOOP = _regex_rule("TST006", r"\b(same)\(", "same", "same call")
# eval( -> safe_eval( : an unsafe fix.
UNSAFE = _regex_rule("TST007", r"(?<![\w.])(eval)\(", "safe_eval", "eval call", applicability=Applicability.UNSAFE)
# quux( -> print( : the fix is fine by itself but makes PRINT fire.
TO_PRINT = _regex_rule("TST008", r"\b(quux)\(", "print", "quux call")
# café( -> caf\u00e9 is fine, but the fix writes a character latin-1 cannot hold.
EURO = _regex_rule("TST009", r"\b(money)\(", "money_\u20ac", "money call")


def _step_check(model):
    """step() not preceded by a line `zero()`: insert one before it (a whole-line insertion)."""
    lines = model.source.splitlines(keepends=True)
    for number, text in enumerate(lines, 1):
        stripped = text.strip()
        if stripped.startswith("step()") and (number == 1 or lines[number - 2].strip() != "zero()"):
            indent = text[: len(text) - len(text.lstrip())]
            fix = Fix(Applicability.SAFE, (Edit(number, 1, number, 1, indent + "zero()\n"),), "insert zero()")
            col = len(indent) + 1
            yield Finding(model.path, number, col, number, col + 6, "TST010", "test-step", "step without zero", fix=fix)


STEP = make_rule("TST010", _step_check)


def _bad_position_check(model):
    if "badpos(" in model.source:
        fix = Fix(Applicability.SAFE, (Edit(999, 1, 999, 5, "x"),), "broken edit")
        yield Finding(model.path, 1, 1, 1, 2, "TST011", "test-badpos", "bad position", fix=fix)


BAD_POSITION = make_rule("TST011", _bad_position_check)


def codes(findings):
    return sorted(f.code for f in findings)


# --- fix_source --------------------------------------------------------------------------

def test_safe_fixes_are_applied_and_remaining_is_clean():
    src = "x = 1\nprint(x)\nif x:\n    print(x, x)\n"
    out = fixing.fix_source(src, "t.py", [PRINT])
    assert out.source == "x = 1\nlog(x)\nif x:\n    log(x, x)\n"
    assert codes(out.applied) == ["TST001", "TST001"]
    assert out.rejected == []
    assert out.remaining == []
    assert codes(out.initial) == ["TST001", "TST001"]
    assert out.changed


def test_nothing_to_fix_returns_the_same_text():
    src = "x = 1\n"
    out = fixing.fix_source(src, "t.py", [PRINT])
    assert out.source is src or out.source == src
    assert out.applied == [] and out.rejected == [] and out.remaining == []
    assert not out.changed


def test_fix_that_breaks_syntax_is_rejected_and_reverted():
    src = "breakme(1)\nprint(2)\n"
    out = fixing.fix_source(src, "t.py", [PRINT, BREAKS])
    assert out.source == "breakme(1)\nlog(2)\n"
    assert codes(out.applied) == ["TST001"]
    assert [(f.code, f.line) for f, _ in out.rejected] == [("TST003", 1)]
    assert "invalid syntax" in out.rejected[0][1]
    assert codes(out.remaining) == ["TST003"]


def test_fix_that_adds_a_finding_of_its_own_kind_is_rejected():
    out = fixing.fix_source("foo(1)\n", "t.py", [DOUBLES])
    assert out.source == "foo(1)\n"
    assert out.applied == []
    [(finding, reason)] = out.rejected
    assert finding.code == "TST004"
    assert reason.startswith("fix introduced a new finding: TST004 at 1:2")


def test_fix_that_leaves_its_finding_in_place_is_rejected():
    # foo(1) -> foo() + foo(1): one new foo call, but the flagged one is still there.
    rule = _regex_rule("TST004", r"\b(foo)\(", "foo() + foo", "foo call")
    out = fixing.fix_source("foo(1)\n", "t.py", [rule])
    [(finding, reason)] = out.rejected
    assert reason == "fix did not remove its finding (TST004 is still reported at 1:1)"


def test_fix_that_brings_out_a_fixable_finding_is_applied_with_its_fix():
    # quux( -> print( makes TST001 fire, whose fix applies: both are kept, as one round.
    out = fixing.fix_source("quux(1)\n", "t.py", [PRINT, TO_PRINT])
    assert out.source == "log(1)\n"
    assert codes(out.applied) == ["TST008"] and out.rejected == [] and out.remaining == []
    assert out.iterations == 1


def test_fix_that_brings_out_a_finding_without_an_applicable_fix_is_rejected():
    # the finding it brings out has only an unsafe fix: without --unsafe-fixes nothing changes
    unsafe_print = _regex_rule("TST001", r"\b(print)\(", "log", "print call", applicability=Applicability.UNSAFE)
    out = fixing.fix_source("quux(1)\n", "t.py", [unsafe_print, TO_PRINT])
    assert out.source == "quux(1)\n"
    [(finding, reason)] = out.rejected
    assert finding.code == "TST008"
    assert "new finding: TST001 at 1:1 (print call)" in reason
    assert codes(out.remaining) == ["TST008"]
    assert fixing.fix_source("quux(1)\n", "t.py", [unsafe_print, TO_PRINT], unsafe=True).source == "log(1)\n"


def test_fix_that_keeps_bringing_out_findings_is_rejected_after_the_chain_bound():
    # foo( -> (foo() + foo)( brings out two more foo calls at every step: never done
    out = fixing.fix_source("foo(1)\n", "t.py", [DOUBLES])
    assert out.source == "foo(1)\n" and out.applied == []
    [(_, reason)] = out.rejected
    assert reason.startswith("fix introduced a new finding: TST004")


def test_fix_whose_finding_keeps_reappearing_is_rejected_once_and_loop_ends():
    out = fixing.fix_source("bar(1)\n", "t.py", [STUBBORN])
    assert out.source == "bar(1)\n"
    [(finding, reason)] = out.rejected
    assert "did not remove its finding" in reason
    assert out.iterations == 0  # rounds that only reject do not count
    assert not out.hit_limit


def test_fix_that_changes_nothing_is_rejected():
    out = fixing.fix_source("same(1)\n", "t.py", [NOOP])
    [(finding, reason)] = out.rejected
    assert reason == "fix changes nothing"
    assert codes(out.remaining) == ["TST006"]


def test_fix_with_impossible_positions_is_rejected():
    out = fixing.fix_source("badpos(1)\n", "t.py", [BAD_POSITION])
    [(finding, reason)] = out.rejected
    assert "invalid" in reason
    assert out.source == "badpos(1)\n"


def test_unsafe_fixes_only_with_unsafe():
    src = "eval('1')\nprint(2)\n"
    safe = fixing.fix_source(src, "t.py", [PRINT, UNSAFE])
    assert safe.source == "eval('1')\nlog(2)\n"
    assert codes(safe.remaining) == ["TST007"]
    both = fixing.fix_source(src, "t.py", [PRINT, UNSAFE], unsafe=True)
    assert both.source == "safe_eval('1')\nlog(2)\n"
    assert both.remaining == []


def test_failed_batch_falls_back_to_single_fixes_with_correct_attribution():
    # Good and bad fixes interleaved: every batch containing breakme fails, yet every
    # print is fixed and only the breakme fixes are rejected.
    src = "print(1)\nbreakme(2)\nprint(3)\nbreakme(4)\nprint(5)\n"
    out = fixing.fix_source(src, "t.py", [PRINT, BREAKS])
    assert out.source == "log(1)\nbreakme(2)\nlog(3)\nbreakme(4)\nlog(5)\n"
    assert sorted((f.code, f.line) for f in out.applied) == [("TST001", 1), ("TST001", 3), ("TST001", 5)]
    assert sorted((f.code, f.line) for f, _ in out.rejected) == [("TST003", 2), ("TST003", 4)]
    assert codes(out.remaining) == ["TST003", "TST003"]


def test_many_good_fixes_and_one_bad_fix_take_few_rounds():
    src = "".join(f"print({i})\n" for i in range(40)) + "breakme(1)\n"
    out = fixing.fix_source(src, "t.py", [PRINT, BREAKS])
    assert out.source.count("log(") == 40
    assert [f.code for f, _ in out.rejected] == ["TST003"]
    assert len(out.applied) == 40
    assert out.iterations <= 8  # halving the batch, not one fix per round


def test_rejections_do_not_use_up_the_iteration_bound():
    src = "".join(f"breakme({i})\n" for i in range(30)) + "print(1)\n"
    out = fixing.fix_source(src, "t.py", [PRINT, BREAKS], max_iterations=3)
    assert len(out.rejected) == 30
    assert out.source.endswith("log(1)\n")
    assert not out.hit_limit


def test_suppressed_findings_are_not_fixed():
    src = "print(1)  # noqa: TST001\nprint(2)\n"
    out = fixing.fix_source(src, "t.py", [PRINT])
    assert out.source == "print(1)  # noqa: TST001\nlog(2)\n"


def test_line_inserting_fix_and_line_shifts():
    src = "def f():\n    step()\n    x = 1\n    step()\n"
    out = fixing.fix_source(src, "t.py", [STEP])
    assert out.source == "def f():\n    zero()\n    step()\n    x = 1\n    zero()\n    step()\n"
    assert len(out.applied) == 2 and out.remaining == []


def test_unparsable_source_is_left_alone():
    src = "print(1\n"
    out = fixing.fix_source(src, "t.py", [PRINT])
    assert out.source == src
    assert codes(out.remaining) == ["ML000"]
    assert out.applied == []


def test_overlapping_fixes_take_one_round_each():
    src = "".join(f"print({i})\n" for i in range(12))
    out = fixing.fix_source(src, "t.py", [WIDE])
    assert not out.hit_limit and out.iterations == 12
    assert out.source == src.replace("print(", "log(")
    assert len(out.applied) == 12 and out.remaining == []


def test_iteration_bound_stops_the_loop():
    src = "".join(f"print({i})\n" for i in range(12))
    out = fixing.fix_source(src, "t.py", [WIDE], max_iterations=5)
    assert out.hit_limit
    assert out.iterations == 5
    assert len(out.applied) == 5
    assert out.source.count("log(") == 5 and out.source.count("print(") == 7
    assert codes(out.remaining) == ["TST002"] * 7


def test_fix_that_uncovers_a_finding_of_the_same_kind_is_fixed_with_it():
    # A rule that reports only the first print: fixing it makes the second one appear,
    # whose fix applies too; both go in one round.
    out = fixing.fix_source("print(1)\nprint(2)\n", "t.py", [FIRST_PRINT])
    assert out.source == "log(1)\nlog(2)\n"
    assert out.rejected == [] and out.remaining == [] and out.iterations == 1


def test_fixed_and_refused_findings_are_placed_in_the_input_text():
    # zero() is inserted above step() first; bar(1) moves down a line before its fix is refused:
    # the refusal (and what was fixed) is placed where the input had it
    out = fixing.fix_source("step()\nbar(1)\n", "t.py", [STEP, STUBBORN])
    assert out.source == "zero()\nstep()\nbar(1)\n"
    [(finding, reason)] = out.rejected
    assert (finding.code, finding.line, finding.column) == ("TST005", 2, 1) and "did not remove" in reason
    assert [(f.code, f.line) for f in out.applied] == [("TST010", 1)]
    # ... and what remains is placed in the fixed text, without a fix --fix would refuse again
    [left] = out.remaining
    assert (left.code, left.line, left.fix) == ("TST005", 3, None)


def _line_ref_check(model):
    """marker() with its own line number in the message and the detail (no fix)."""
    for number, text in enumerate(model.source.splitlines(), 1):
        if text.strip() == "marker()":
            yield Finding(model.path, number, 1, number, 9, "TST013", "test-marker", f"marker (line {number})",
                          detail=f"the marker of line {number}")


LINE_REF = make_rule("TST013", _line_ref_check, fix=None)


def test_a_finding_that_names_its_moved_line_is_the_same_finding():
    # zero() is inserted above: marker() moves to line 3 and says so; that is no new finding
    out = fixing.fix_source("step()\nmarker()\n", "t.py", [STEP, LINE_REF])
    assert out.source == "zero()\nstep()\nmarker()\n" and out.rejected == []
    assert [f.message for f in out.remaining] == ["marker (line 3)"]


def test_default_iteration_bound_is_like_ruffs():
    assert fixing.MAX_ITERATIONS == 100


def test_fixing_twice_changes_nothing_the_second_time():
    src = "print(1)\nbreakme(2)\ndef f():\n    step()\n"
    rules = [PRINT, BREAKS, STEP]
    first = fixing.fix_source(src, "t.py", rules)
    assert first.changed
    second = fixing.fix_source(first.source, "t.py", rules)
    assert second.source == first.source
    assert second.applied == []


def test_crlf_source_gets_crlf_in_inserted_lines():
    src = "def f():\r\n    step()\r\n"
    out = fixing.fix_source(src, "t.py", [STEP])
    assert out.source == "def f():\r\n    zero()\r\n    step()\r\n"


# --- unified_diff ---------------------------------------------------------------------------

def test_unified_diff_format():
    old = "".join(f"line{i}\n" for i in range(10))
    new = old.replace("line5\n", "LINE5\n")
    diff = fixing.unified_diff("pkg/m.py", old, new)
    assert diff == (
        "--- a/pkg/m.py\n"
        "+++ b/pkg/m.py\n"
        "@@ -3,7 +3,7 @@\n"
        " line2\n line3\n line4\n-line5\n+LINE5\n line6\n line7\n line8\n"
    )
    assert fixing.unified_diff("m.py", old, old) == ""
    assert fixing.unified_diff("./m.py", "a\n", "b\n").startswith("--- a/m.py\n+++ b/m.py\n")


def test_unified_diff_without_trailing_newline():
    diff = fixing.unified_diff("m.py", "a\nb", "a\nc")
    assert diff.endswith("-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n")


# --- write_atomic ----------------------------------------------------------------------------

def _write(tmp_path, name, data: bytes, mode=None):
    path = tmp_path / name
    path.write_bytes(data)
    if mode is not None:
        os.chmod(path, mode)
    return str(path)


def test_write_atomic_replaces_content_and_leaves_no_temp_files(tmp_path):
    path = _write(tmp_path, "m.py", b"print(1)\n")
    assert fixing.write_atomic(path, "log(1)\n", "utf-8") is True
    assert open(path, "rb").read() == b"log(1)\n"
    assert os.listdir(tmp_path) == ["m.py"]


def test_write_atomic_does_not_write_unchanged_text(tmp_path):
    path = _write(tmp_path, "m.py", b"x = 1\n")
    before = os.stat(path)
    os.utime(path, ns=(before.st_atime_ns, 1_000_000_000))
    inode = os.stat(path).st_ino
    assert fixing.write_atomic(path, "x = 1\n", "utf-8") is False
    after = os.stat(path)
    assert after.st_mtime_ns == 1_000_000_000 and after.st_ino == inode


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_write_atomic_keeps_mode(tmp_path):
    path = _write(tmp_path, "tool.py", b"#!/usr/bin/env python\nprint(1)\n", mode=0o755)
    assert fixing.write_atomic(path, "#!/usr/bin/env python\nlog(1)\n", "utf-8")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o755
    path2 = _write(tmp_path, "private.py", b"print(1)\n", mode=0o600)
    assert fixing.write_atomic(path2, "log(1)\n", "utf-8")
    assert stat.S_IMODE(os.stat(path2).st_mode) == 0o600


def test_write_atomic_crlf_file_stays_crlf(tmp_path):
    path = _write(tmp_path, "m.py", b"a = 1\r\nprint(a)\r\n")
    assert fixing.write_atomic(path, "a = 1\r\nlog(a)\nb = 2\n", "utf-8")
    assert open(path, "rb").read() == b"a = 1\r\nlog(a)\r\nb = 2\r\n"


def test_write_atomic_failure_leaves_original(tmp_path):
    path = _write(tmp_path, "m.py", b"x = 1\n")
    with pytest.raises(UnicodeEncodeError):
        fixing.write_atomic(path, "x = '\u20ac'\n", "latin-1")
    assert open(path, "rb").read() == b"x = 1\n"
    assert os.listdir(tmp_path) == ["m.py"]


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="needs POSIX permissions, not root")
def test_write_atomic_in_read_only_directory_raises_and_leaves_file(tmp_path):
    directory = tmp_path / "ro"
    directory.mkdir()
    path = _write(directory, "m.py", b"print(1)\n")
    os.chmod(directory, 0o555)
    try:
        with pytest.raises(OSError):
            fixing.write_atomic(path, "log(1)\n", "utf-8")
        assert open(path, "rb").read() == b"print(1)\n"
        assert os.listdir(directory) == ["m.py"]
    finally:
        os.chmod(directory, 0o755)


def test_write_atomic_follows_symlink(tmp_path):
    real = _write(tmp_path, "real.py", b"print(1)\n")
    link = tmp_path / "link.py"
    link.symlink_to("real.py")
    assert fixing.write_atomic(str(link), "log(1)\n", "utf-8")
    assert link.is_symlink()
    assert open(real, "rb").read() == b"log(1)\n"


# --- fix_file ----------------------------------------------------------------------------------

def test_fix_file_writes_fixed_text(tmp_path):
    path = _write(tmp_path, "m.py", b"x = 1\nprint(x)\n")
    result = fixing.fix_file(path, [PRINT])
    assert result.written and result.changed and result.error is None
    assert result.old == "x = 1\nprint(x)\n" and result.new == "x = 1\nlog(x)\n"
    assert open(path, "rb").read() == b"x = 1\nlog(x)\n"
    assert codes(result.outcome.applied) == ["TST001"]
    fr = result.file_result()
    assert fr.path == path and fr.findings == [] and fr.source == result.new


def test_fix_file_without_write_changes_nothing_on_disk(tmp_path):
    path = _write(tmp_path, "m.py", b"x = 1\nprint(x)\n")
    mtime = os.stat(path).st_mtime_ns
    result = fixing.fix_file(path, [PRINT], write=False)
    assert not result.written and result.changed
    assert result.new == "x = 1\nlog(x)\n"
    assert open(path, "rb").read() == b"x = 1\nprint(x)\n"
    assert os.stat(path).st_mtime_ns == mtime
    assert fixing.unified_diff(path, result.old, result.new).count("\n+log(x)\n") == 1


def test_fix_file_twice_is_idempotent(tmp_path):
    path = _write(tmp_path, "m.py", b"print(1)\nbreakme(2)\ndef f():\n    step()\n")
    rules = [PRINT, BREAKS, STEP]
    first = fixing.fix_file(path, rules)
    assert first.written
    data = open(path, "rb").read()
    mtime = os.stat(path).st_mtime_ns
    second = fixing.fix_file(path, rules)
    assert not second.written and not second.changed
    assert second.outcome.applied == []
    assert open(path, "rb").read() == data
    assert os.stat(path).st_mtime_ns == mtime
    assert codes(second.outcome.remaining) == ["TST003"]


def test_fix_file_crlf_round_trip_is_byte_exact(tmp_path):
    original = b"import os\r\n\r\ndef f():\r\n    step()  # tail   \r\n    print(1)\r\n"
    path = _write(tmp_path, "m.py", original)
    result = fixing.fix_file(path, [PRINT, STEP])
    assert result.written
    assert open(path, "rb").read() == (
        b"import os\r\n\r\ndef f():\r\n    zero()\r\n    step()  # tail   \r\n    log(1)\r\n"
    )


def test_fix_file_keeps_utf8_bom(tmp_path):
    path = _write(tmp_path, "m.py", b"\xef\xbb\xbfs = '\xc3\xa9'\nprint(s)\n")
    result = fixing.fix_file(path, [PRINT])
    assert result.encoding == "utf-8-sig"
    assert open(path, "rb").read() == b"\xef\xbb\xbfs = '\xc3\xa9'\nlog(s)\n"


def test_fix_file_keeps_latin1_with_coding_cookie(tmp_path):
    data = b"# -*- coding: latin-1 -*-\ns = '\xe9t\xe9'\nprint(s)\n"
    path = _write(tmp_path, "m.py", data)
    result = fixing.fix_file(path, [PRINT])
    assert result.written
    assert open(path, "rb").read() == b"# -*- coding: latin-1 -*-\ns = '\xe9t\xe9'\nlog(s)\n"


def test_fix_that_cannot_be_encoded_is_rejected(tmp_path):
    data = b"# -*- coding: latin-1 -*-\nmoney(1)\nprint('\xe9')\n"
    path = _write(tmp_path, "m.py", data)
    result = fixing.fix_file(path, [PRINT, EURO])
    assert open(path, "rb").read() == b"# -*- coding: latin-1 -*-\nmoney(1)\nlog('\xe9')\n"
    [(finding, reason)] = result.outcome.rejected
    assert finding.code == "TST009" and "cannot be encoded" in reason


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_fix_file_keeps_executable_mode(tmp_path):
    path = _write(tmp_path, "tool.py", b"print(1)\n", mode=0o755)
    assert fixing.fix_file(path, [PRINT]).written
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o755


def test_fix_file_unreadable_inputs(tmp_path):
    missing = fixing.fix_file(str(tmp_path / "nope.py"), [PRINT])
    assert codes(missing.outcome.remaining) == ["ML000"] and missing.old is None and not missing.written
    binary = _write(tmp_path, "bin.py", b"print(1)\x00\n")
    result = fixing.fix_file(binary, [PRINT])
    assert codes(result.outcome.remaining) == ["ML000"]
    assert "binary" in result.outcome.remaining[0].message
    assert open(binary, "rb").read() == b"print(1)\x00\n"


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="needs POSIX permissions, not root")
def test_fix_file_write_failure_is_reported_not_raised(tmp_path):
    directory = tmp_path / "ro"
    directory.mkdir()
    path = _write(directory, "m.py", b"print(1)\n")
    os.chmod(directory, 0o555)
    try:
        result = fixing.fix_file(path, [PRINT])
    finally:
        os.chmod(directory, 0o755)
    assert not result.written
    assert result.error and result.error.startswith("cannot write fixed file")
    assert result.new == result.old == "print(1)\n"
    assert codes(result.outcome.remaining) == ["ML000", "TST001"]
    assert result.outcome.applied == []
    assert open(path, "rb").read() == b"print(1)\n"


def test_fix_file_unparsable_file_is_not_written(tmp_path):
    path = _write(tmp_path, "m.py", b"print(1\n")
    result = fixing.fix_file(path, [PRINT])
    assert not result.written
    assert codes(result.outcome.remaining) == ["ML000"]


# --- with the real ML001 rule ----------------------------------------------------------------

def _ml001():
    try:
        from mllint import registry

        return registry.all_rules()["ML001"]
    except Exception as exc:  # the rule is not there yet
        pytest.skip(f"ML001 not available: {exc}")


ML001_BAD = """\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]

for epoch in range(2):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
"""


def test_fix_file_real_ml001_relints_clean(tmp_path):
    rule = _ml001()
    path = _write(tmp_path, "train.py", ML001_BAD.encode())
    assert codes(engine.lint_file(path, [rule]).findings) == ["ML001"]
    result = fixing.fix_file(path, [rule])
    assert result.written, result.outcome.rejected
    assert codes(result.outcome.applied) == ["ML001"]
    assert result.outcome.remaining == []
    assert engine.lint_file(path, [rule]).findings == []
    assert "    for x, y in loader:\n        optimizer.zero_grad()\n        loss = " in result.new
    # And a second --fix changes nothing.
    data = open(path, "rb").read()
    again = fixing.fix_file(path, [rule])
    assert not again.written and open(path, "rb").read() == data


def test_real_ml001_fix_in_crlf_file(tmp_path):
    rule = _ml001()
    path = _write(tmp_path, "train.py", ML001_BAD.replace("\n", "\r\n").encode())
    result = fixing.fix_file(path, [rule])
    assert result.written, result.outcome.rejected
    data = open(path, "rb").read()
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert b"optimizer.zero_grad()\r\n" in data
    assert engine.lint_file(path, [rule]).findings == []


# --- failures in the middle of a write (injected) ---------------------------------------------

def _fail(*args, **kwargs):
    raise OSError(28, "No space left on device")


@pytest.mark.parametrize("where", ["replace", "fsync"])
def test_write_atomic_interrupted_leaves_original_and_no_temp_file(tmp_path, monkeypatch, where):
    path = _write(tmp_path, "m.py", b"print(1)\n")
    monkeypatch.setattr(fixing.os, where, _fail)
    with pytest.raises(OSError):
        fixing.write_atomic(path, "log(1)\n", "utf-8")
    monkeypatch.undo()
    assert open(path, "rb").read() == b"print(1)\n"
    assert os.listdir(tmp_path) == ["m.py"]


def test_fix_file_interrupted_write_is_reported_not_raised(tmp_path, monkeypatch):
    path = _write(tmp_path, "m.py", b"print(1)\n")
    monkeypatch.setattr(fixing.os, "replace", _fail)
    result = fixing.fix_file(path, [PRINT])
    monkeypatch.undo()
    assert not result.written
    assert result.error == "cannot write fixed file: No space left on device"
    assert result.new == result.old == "print(1)\n"
    assert codes(result.outcome.remaining) == ["ML000", "TST001"]
    assert open(path, "rb").read() == b"print(1)\n"
    assert os.listdir(tmp_path) == ["m.py"]


def test_two_findings_at_one_place_fixing_one_keeps_the_other():
    # Two findings of one code at the same spot (say, one per optimizer, as ML001 does):
    # fixing one of them must not be mistaken for "the finding is still there". (Findings
    # equal in code, message and place are one finding: the engine de-duplicates them.)
    def check(model):
        for match in re.finditer(r"^( *)step\(\)$", model.source, re.M):
            indent = match.group(1)
            for name in ("a", "b"):
                if f"{indent}{name}.zero()\n" not in model.source:
                    fix = Fix(Applicability.SAFE, (Edit(1, 1, 1, 1, f"{name}.zero()\n"),), "")
                    yield _finding(model, "TST013", f"step without {name}.zero", match.start(1) + len(indent), match.end(), fix)

    rule = make_rule("TST013", check)
    out = fixing.fix_source("step()\n", "t.py", [rule])
    assert out.rejected == []
    assert len(out.applied) == 2 and out.remaining == []
    assert sorted(out.source.splitlines()) == ["a.zero()", "b.zero()", "step()"]
