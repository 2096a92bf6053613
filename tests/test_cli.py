"""The `mllint` command end to end: options, formats, exit codes, fixes, cache, bad input."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from cli_helpers import BAD, FIXED, GOOD, SYNTAX_ERROR, assert_user_error, clean_env, reported_paths, run, write

ML001_LINE = "train.py:6:5: ML001 [*] "


@pytest.fixture
def project(tmp_path):
    """A project with one bad training script and one clean file."""
    write(tmp_path / "pyproject.toml", "[project]\nname = 'demo'\n")
    write(tmp_path / "train.py", BAD)
    write(tmp_path / "clean.py", GOOD)
    return tmp_path


# --- basics and exit codes --------------------------------------------------------------


def test_finding_exit_1_text_format_and_summary(project):
    proc = run([], project)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith(ML001_LINE)
    assert "Found 1 problem (1 fixable with --fix)." in proc.stdout
    assert proc.stderr == ""


def test_clean_exit_0(project):
    proc = run(["clean.py"], project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "All checks passed!"


def test_default_path_is_current_directory(project):
    assert run([], project).stdout == run(["."], project).stdout


def test_directory_and_file_arguments(project):
    write(project / "src" / "pkg" / "loop.py", BAD)
    proc = run(["src", "clean.py"], project)
    assert proc.returncode == 1
    assert reported_paths(proc) == [os.path.join("src", "pkg", "loop.py")]


def test_exit_zero(project):
    proc = run(["--exit-zero"], project)
    assert proc.returncode == 0
    assert ML001_LINE in proc.stdout


def test_version_and_python_dash_m(project):
    proc = run(["--version"], project)
    assert proc.returncode == 0
    from mllint import __version__

    assert proc.stdout.strip() == f"mllint {__version__}"


def test_installed_console_script(project):
    script = shutil.which("mllint", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    if script is None:
        pytest.skip("the mllint console script is not installed")
    proc = subprocess.run([script, "train.py"], cwd=project, capture_output=True, text=True, env=clean_env())
    assert proc.returncode == 1
    assert ML001_LINE in proc.stdout


def test_help_lists_options_and_commands(project):
    proc = run(["--help"], project)
    assert proc.returncode == 0
    for option in ("--select", "--ignore", "--extend-select", "--fix", "--unsafe-fixes", "--diff", "--format",
                   "--output-format", "--show-source", "--statistics", "--exit-zero", "--no-cache", "--config",
                   "--force-exclude", "--version", "mllint rules", "mllint explain", "./rules"):
        assert option in proc.stdout, option


def test_unknown_option_is_one_line_usage_error(project):
    assert_user_error(run(["--frobnicate"], project), "--frobnicate")


def test_bad_format_value(project):
    assert_user_error(run(["--format", "xml"], project), "xml")


# --- selection -------------------------------------------------------------------------


@pytest.mark.parametrize("selector", ["ML001", "ML00", "ML", "ALL", "ml001"])
def test_select_codes_and_prefixes(project, selector):
    proc = run(["--select", selector, "train.py"], project)
    assert proc.returncode == 1
    assert ML001_LINE in proc.stdout


def test_ignore(project):
    proc = run(["--ignore", "ML001"], project)
    assert proc.returncode == 0, proc.stdout
    assert "All checks passed!" in proc.stdout


def test_comma_separated_and_repeated_codes(project):
    assert run(["--ignore", "ML000,ML001"], project).returncode == 0
    assert run(["--select", "ML000", "--select", "ML001"], project).returncode == 1


def test_select_then_ignore_most_specific_wins(project):
    # --select ML001 --ignore ML: the more specific ML001 wins (as in Ruff).
    assert run(["--select", "ML001", "--ignore", "ML"], project).returncode == 1
    assert run(["--select", "ML", "--ignore", "ML001"], project).returncode == 0


def test_extend_select_after_narrow_select(project):
    proc = run(["--select", "ML000", "--extend-select", "ML001"], project)
    assert proc.returncode == 1
    assert ML001_LINE in proc.stdout


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_unknown_rule_code_on_command_line(project, option):
    line = assert_user_error(run([option, "ML999"], project), "ML999", option)
    assert "unknown rule code" in line


def test_ml000_cannot_be_turned_off(project):
    # With every rule off nothing is parsed, but an unreadable file is still reported.
    write(project / "blob.py", data=b"\x00\x01binary")
    proc = run(["--ignore", "ML000,ML001"], project)
    assert proc.returncode == 1
    assert reported_paths(proc) == ["blob.py"]
    assert "ML000" in proc.stdout


# --- output formats --------------------------------------------------------------------


def test_json_format(project):
    proc = run(["--format", "json"], project)
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert len(data) == 1
    item = data[0]
    assert set(item) == {"path", "line", "column", "end_line", "end_column", "code", "name", "message",
                         "detail", "severity", "fix", "cell", "json_line", "basis"}
    assert item["cell"] is None and item["json_line"] is None  # a .py file
    assert (item["path"], item["line"], item["column"], item["code"]) == ("train.py", 6, 5, "ML001")
    assert item["fix"]["applicability"] == "safe"


def test_json_format_clean_is_empty_array(project):
    proc = run(["--format", "json", "clean.py"], project)
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == []


def test_output_format_alias(project):
    assert run(["--output-format", "json"], project).stdout == run(["--format", "json"], project).stdout


def test_concise_format(project):
    proc = run(["--format", "concise"], project)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0].startswith("train.py:6:5: ML001 ")


def test_sarif_format(project):
    proc = run(["--format", "sarif"], project)
    assert proc.returncode == 1
    sarif = json.loads(proc.stdout)
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["ML001"]


def test_github_format(project):
    proc = run(["--format", "github"], project)
    assert proc.returncode == 1
    assert proc.stdout.startswith("::error ")
    assert "file=train.py,line=6,col=5" in proc.stdout


def test_show_source(project):
    proc = run(["--show-source"], project)
    assert proc.returncode == 1
    assert "6 |     loss.backward()" in proc.stdout
    assert "^^^" in proc.stdout


def test_statistics(project):
    write(project / "second.py", BAD)
    proc = run(["--statistics"], project)
    assert proc.returncode == 1
    first = proc.stdout.splitlines()[0].split()
    assert first[:2] == ["2", "ML001"]
    assert "missing-zero-grad" in proc.stdout
    assert ML001_LINE not in proc.stdout


# --- fixes -----------------------------------------------------------------------------


def test_fix_writes_and_second_fix_changes_nothing(project):
    proc = run(["--fix"], project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Fixed 1 problem." in proc.stdout
    assert "All checks passed!" in proc.stdout
    assert (project / "train.py").read_text() == FIXED
    before = {p.name: p.read_bytes() for p in project.glob("*.py")}

    again = run(["--fix"], project)
    assert again.returncode == 0
    assert "Fixed" not in again.stdout
    assert {p.name: p.read_bytes() for p in project.glob("*.py")} == before


def test_fix_reports_remaining_findings(project):
    write(project / "broken.py", SYNTAX_ERROR)
    proc = run(["--fix"], project)
    assert proc.returncode == 1
    assert "Fixed 1 problem." in proc.stdout
    assert reported_paths(proc) == ["broken.py"]
    assert (project / "train.py").read_text() == FIXED


def test_fix_keeps_crlf_and_mode(project):
    target = project / "train.py"
    target.write_bytes(BAD.replace("\n", "\r\n").encode())
    os.chmod(target, 0o750)
    assert run(["--fix"], project).returncode == 0
    assert target.read_bytes() == FIXED.replace("\n", "\r\n").encode()
    assert os.stat(target).st_mode & 0o777 == 0o750


def test_diff_prints_and_writes_nothing(project):
    before = (project / "train.py").read_bytes()
    proc = run(["--diff"], project)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("--- a/train.py\n+++ b/train.py\n")
    assert "+    optimizer.zero_grad()\n" in proc.stdout
    assert "Would fix 1 problem." in proc.stderr
    assert (project / "train.py").read_bytes() == before


def test_diff_with_nothing_to_fix_exits_0(project):
    proc = run(["--diff", "clean.py"], project)
    assert proc.returncode == 0
    assert proc.stdout == ""


def test_diff_wins_over_fix(project):
    before = (project / "train.py").read_bytes()
    assert run(["--fix", "--diff"], project).returncode == 1
    assert (project / "train.py").read_bytes() == before


def test_unsafe_fixes_are_hidden_unless_enabled(tmp_path):
    write(tmp_path / "u.py", "UNSAFE_ME = 1\n")
    proc = run(["--no-cache"], tmp_path, extra_rules=True)
    assert proc.returncode == 1
    assert "u.py:1:1: ML901 test finding ML901" in proc.stdout  # no [*]: not fixable by --fix alone
    assert "1 hidden fix can be enabled with the --unsafe-fixes option." in proc.stdout

    proc = run(["--no-cache", "--fix"], tmp_path, extra_rules=True)
    assert proc.returncode == 1
    assert (tmp_path / "u.py").read_text() == "UNSAFE_ME = 1\n"
    assert "1 hidden fix" in proc.stdout

    # --diff shows unsafe fixes too (as suggested rewrites), and says they need --unsafe-fixes
    proc = run(["--no-cache", "--diff"], tmp_path, extra_rules=True)
    assert proc.returncode == 1 and "+SAFE_NOW = 1" in proc.stdout
    assert "1 by unsafe fix, applied only with --fix --unsafe-fixes" in proc.stderr
    assert (tmp_path / "u.py").read_text() == "UNSAFE_ME = 1\n"

    proc = run(["--no-cache", "--fix", "--unsafe-fixes"], tmp_path, extra_rules=True)
    assert proc.returncode == 0, proc.stdout
    assert "Fixed 1 problem." in proc.stdout
    assert (tmp_path / "u.py").read_text() == "SAFE_NOW = 1\n"


def test_rejected_fix_is_a_one_line_warning(tmp_path):
    write(tmp_path / "b.py", "x = BREAK_ME\n")
    proc = run(["--no-cache", "--fix"], tmp_path, extra_rules=True)
    assert proc.returncode == 1
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("mllint: warning:")]
    assert len(warnings) == 1 and "b.py:1:5: ML902 fix not applied" in warnings[0], proc.stderr
    assert (tmp_path / "b.py").read_text() == "x = BREAK_ME\n"
    assert "b.py:1:5: ML902" in proc.stdout


# --- bad input -------------------------------------------------------------------------


def test_syntax_error_is_ml000_and_run_continues(project):
    write(project / "broken.py", SYNTAX_ERROR)
    proc = run([], project)
    assert proc.returncode == 1
    assert reported_paths(proc) == ["broken.py", "train.py"]
    line = proc.stdout.splitlines()[0]
    assert line.startswith("broken.py:") and " ML000 SyntaxError" in line
    assert "Traceback" not in proc.stdout + proc.stderr


def test_syntax_error_in_file_no_rule_needs(project):
    write(project / "plain.py", "def f(:\n    pass\n")
    proc = run(["--ignore", "ML001"], project)
    assert proc.returncode == 1
    assert reported_paths(proc) == ["plain.py"]
    line = proc.stdout.splitlines()[0]
    assert line.startswith("plain.py:1:") and " ML000 SyntaxError" in line


def test_only_syntax_error_exits_1(tmp_path):
    write(tmp_path / "broken.py", SYNTAX_ERROR)
    assert run([], tmp_path).returncode == 1
    assert run(["--exit-zero"], tmp_path).returncode == 0


def test_binary_file(project):
    write(project / "blob.py", data=b"\x00\x01\x02backward\xff\xfe")
    proc = run([], project)
    assert proc.returncode == 1
    assert reported_paths(proc) == ["blob.py", "train.py"]
    assert "binary" in proc.stdout


def test_non_utf8_file_with_coding_cookie(tmp_path):
    source = "# -*- coding: latin-1 -*-\n# café\n" + BAD
    target = write(tmp_path / "train.py", data=source.encode("latin-1"))
    proc = run([], tmp_path)
    assert proc.returncode == 1, proc.stdout
    assert "train.py:8:5: ML001" in proc.stdout
    assert run(["--fix"], tmp_path).returncode == 0
    assert target.read_bytes() == ("# -*- coding: latin-1 -*-\n# café\n" + FIXED).encode("latin-1")


def test_unknown_codec_in_coding_cookie_reads_as_utf8(tmp_path):
    # ``future_fstrings`` registers its codec at import time: the interpreter running mllint
    # does not know it, but the file is UTF-8 text and is linted (and fixed) as such.
    source = "# -*- coding: future_fstrings -*-\n# caf\u00e9\n" + BAD
    target = write(tmp_path / "train.py", data=source.encode("utf-8"))
    proc = run([], tmp_path)
    assert proc.returncode == 1, proc.stdout
    assert "ML000" not in proc.stdout and "train.py:8:5: ML001" in proc.stdout
    assert run(["--fix"], tmp_path).returncode == 0
    assert target.read_bytes() == ("# -*- coding: future_fstrings -*-\n# caf\u00e9\n" + FIXED).encode("utf-8")


def test_coding_cookie_contradicting_a_bom_is_ml000(tmp_path):
    write(tmp_path / "train.py", data=b"\xef\xbb\xbf# -*- coding: latin-1 -*-\n" + BAD.encode())
    proc = run([], tmp_path)
    assert "train.py:1:1: ML000" in proc.stdout and "coding" in proc.stdout


def test_undecodable_file_is_ml000(tmp_path):
    write(tmp_path / "bad.py", data=b"x = '\xff\xfe'\nloss.backward()\n")
    proc = run([], tmp_path)
    assert proc.returncode == 1
    assert "bad.py:1:1: ML000" in proc.stdout


def test_empty_file(tmp_path):
    write(tmp_path / "empty.py", "")
    proc = run([], tmp_path)
    assert proc.returncode == 0
    assert "All checks passed!" in proc.stdout


def test_missing_path(project):
    assert_user_error(run(["train.py", "nope/missing.py"], project), "path does not exist: nope/missing.py")


def test_no_python_files_warns_and_exits_0(tmp_path):
    write(tmp_path / "notes.txt", "hello")
    proc = run([], tmp_path)
    assert proc.returncode == 0
    assert "no Python files found" in proc.stderr


def test_internal_error_is_one_line(tmp_path):
    write(tmp_path / "c.py", "CRASH_ME = 1\n")
    proc = run(["--no-cache"], tmp_path, extra_rules=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("mllint: internal error: while linting c.py: KeyError")
    assert lines[0].endswith("(please report)")


def test_internal_error_traceback_with_mllint_debug(tmp_path):
    write(tmp_path / "c.py", "CRASH_ME = 1\n")
    proc = run(["--no-cache"], tmp_path, extra_rules=True, env={"MLLINT_DEBUG": "1"})
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr and "KeyError" in proc.stderr


# --- subcommands -----------------------------------------------------------------------


def test_rules_table(tmp_path):
    proc = run(["rules"], tmp_path)
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["CODE", "NAME", "DEFAULT", "FIX"]
    assert ["ML001", "missing-zero-grad", "on", "safe"] in [line.split() for line in lines]  # columns fit the longest name
    assert any(line.startswith("ML000") for line in lines)


def test_rules_json(tmp_path):
    proc = run(["rules", "--format", "json"], tmp_path)
    assert proc.returncode == 0
    rows = {row["code"]: row for row in json.loads(proc.stdout)}
    assert rows["ML001"]["name"] == "missing-zero-grad"
    assert rows["ML001"]["default_enabled"] is True
    assert rows["ML001"]["fix"] == "safe"


def test_explain(tmp_path):
    proc = run(["explain", "ML001"], tmp_path)
    assert proc.returncode == 0
    out = proc.stdout
    assert out.startswith("ML001 (missing-zero-grad)")
    assert "Example (flagged):" in out and "Fixed:" in out
    assert out.index("Example (flagged):") < out.index("Fixed:")
    assert "    optimizer.zero_grad()" in out.split("Fixed:")[1]
    assert run(["explain", "ml001"], tmp_path).stdout == out
    assert run(["explain", "missing-zero-grad"], tmp_path).stdout == out  # the name, as Ruff takes


def test_explain_ml000(tmp_path):
    for name in ("ML000", "syntax-error"):
        proc = run(["explain", name], tmp_path)
        assert proc.returncode == 0 and proc.stdout.startswith("ML000 (syntax-error)")


def test_explain_unknown_code(tmp_path):
    assert_user_error(run(["explain", "ML999"], tmp_path), "unknown rule `ML999`", "names")


def test_explain_without_code_lists_the_rules(tmp_path):
    proc = run(["explain"], tmp_path)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and "ML001  missing-zero-grad" in lines and "ML014  scheduler-before-optimizer-step" in lines


def test_version_subcommand(tmp_path):
    assert run(["version"], tmp_path).stdout == run(["--version"], tmp_path).stdout
    assert run(["version"], tmp_path).stdout.startswith("mllint ")


def test_directory_named_rules_is_lintable(tmp_path):
    write(tmp_path / "rules" / "loop.py", BAD)
    expected = os.path.join("rules", "loop.py")
    for args in (["./rules"], ["--", "rules"], ["rules/"], ["--no-cache", "rules"]):
        proc = run(args, tmp_path)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert reported_paths(proc) == [expected], args
    # As the first argument it is the subcommand.
    assert run(["rules"], tmp_path).stdout.startswith("CODE")


# --- cache -----------------------------------------------------------------------------


def test_cache_second_run_hits(project):
    first = run(["-v"], project)
    assert "2 files: 0 from cache, 2 linted" in first.stderr
    cache_dir = project / ".mllint_cache"
    assert (cache_dir / ".gitignore").read_text().strip().splitlines()[-1] == "*"
    assert list(cache_dir.glob("*.json"))

    second = run(["-v"], project)
    assert "2 files: 2 from cache, 0 linted" in second.stderr
    assert second.stdout == first.stdout
    assert second.returncode == 1

    write(project / "train.py", GOOD)  # changed content: linted again
    third = run(["-v"], project)
    assert "2 files: 1 from cache, 1 linted" in third.stderr
    assert third.returncode == 0


def test_cached_findings_keep_source_and_fixes(project):
    run([], project)
    proc = run(["--show-source", "--format", "text"], project)
    assert "6 |     loss.backward()" in proc.stdout
    assert run(["--fix"], project).returncode == 0
    assert (project / "train.py").read_text() == FIXED


def test_report_runs_cache_settled_fixes_that_serve_every_later_report(project):
    """A report run builds the fixes and settles them (a dry run of --fix on each file with a
    fixable finding: only what --fix fixes is marked `[*]`) and caches that: a JSON run, which
    shows the edits, then lints nothing again, nor does the next text run."""
    text = run(["-v"], project)
    assert "2 files: 0 from cache, 2 linted" in text.stderr and "[*]" in text.stdout
    first_json = run(["-v", "--format", "json"], project)
    assert "2 files: 2 from cache, 0 linted" in first_json.stderr
    fix = json.loads(first_json.stdout)[0]["fix"]
    assert fix["edits"] and "zero_grad()" in fix["edits"][0]["content"] and "deferred" not in fix
    again = run(["-v"], project)
    assert "2 files: 2 from cache, 0 linted" in again.stderr and again.stdout == text.stdout


def test_a_fix_run_caches_unsettled_results_that_a_report_lints_again(project):
    """--fix (or --diff) runs the fixes for real and caches what it linted without settling
    them (its fixes deferred): a report run after it lints those files again."""
    run(["-v", "--diff"], project)
    report = run(["-v"], project)
    assert "2 files: 0 from cache, 2 linted" in report.stderr and "[*]" in report.stdout


def test_corrupt_cache_is_ignored(project):
    run([], project)
    for entry in (project / ".mllint_cache").glob("*.json"):
        entry.write_text("{not json")
    proc = run(["-v"], project)
    assert proc.returncode == 1
    assert "0 from cache" in proc.stderr
    assert ML001_LINE in proc.stdout
    assert "2 files: 2 from cache" in run(["-v"], project).stderr  # rewritten


def test_corrupt_cache_entry_is_ignored(project):
    run([], project)
    [entry] = (project / ".mllint_cache").glob("*.json")
    data = json.loads(entry.read_text())
    for item in data["files"].values():
        item["findings"] = [{"line": "x"}]
    entry.write_text(json.dumps(data))
    proc = run(["-v"], project)
    assert proc.returncode == 1 and ML001_LINE in proc.stdout


def test_cache_is_invalidated_by_settings(project):
    run([], project)
    proc = run(["-v", "--ignore", "ML001"], project)
    assert "0 from cache" in proc.stderr
    assert proc.returncode == 0


def test_concurrent_runs_keep_each_others_cache_entries(tmp_path):
    from mllint.cache import Cache
    from mllint.findings import Finding

    a, b = write(tmp_path / "a.py", GOOD), write(tmp_path / "b.py", BAD)
    first, second = Cache(tmp_path / "cache", "fp"), Cache(tmp_path / "cache", "fp")  # both start empty
    finding = Finding("b.py", 6, 5, 6, 20, "ML001", "missing-zero-grad", "msg")
    first.put(str(a), "hash-a", [])
    second.put(str(b), "hash-b", [finding])
    assert first.save() and second.save()
    reread = Cache(tmp_path / "cache", "fp")
    assert reread.get(str(a), "hash-a", "a.py") == []
    assert reread.get(str(b), "hash-b", "shown/b.py") == [dataclasses.replace(finding, path="shown/b.py")]
    assert reread.get(str(b), "other-hash", "b.py") is None


def test_no_cache(project):
    proc = run(["--no-cache", "-v"], project)
    assert proc.returncode == 1
    assert "cache: disabled" in proc.stderr
    assert not (project / ".mllint_cache").exists()
    proc = run(["-v"], project, env={"MLLINT_NO_CACHE": "1"})
    assert not (project / ".mllint_cache").exists()
    # --fix and --diff lint again through the project model: its facts are not cached either
    for args in (["--no-cache", "--diff"], ["--no-cache", "--fix"]):
        run(args, project)
        assert not (project / ".mllint_cache").exists(), args


def test_no_screen_same_findings(project):
    """--no-screen parses every triggered file for every triggered rule: the same report."""
    screened = run(["--no-cache", "--format", "json"], project)
    unscreened = run(["--no-cache", "--no-screen", "--format", "json"], project)
    assert screened.returncode == unscreened.returncode == 1
    assert screened.stdout == unscreened.stdout and '"ML001"' in screened.stdout
    assert "--no-screen" in run(["--help"], project).stdout


def test_unwritable_cache_dir_does_not_fail(project):
    (project / ".mllint_cache").write_text("a file where the directory should be")
    proc = run(["-v"], project)
    assert proc.returncode == 1
    assert "not writable" in proc.stderr
    assert ML001_LINE in proc.stdout
    # without -v too, a warning says so (the next runs would be as slow, silently)
    quiet = run([], project)
    assert "warning: cache directory" in quiet.stderr and "cannot be written" in quiet.stderr


def test_fix_with_update_baseline_says_what_it_fixed(project):
    proc = run(["--fix", "--update-baseline", "--baseline", "base.json"], project)
    assert proc.returncode == 0 and "Fixed 1 problem." in proc.stdout and "baseline base.json" in proc.stderr


def test_config_type_errors_give_an_example_that_fits_the_key(tmp_path):
    for key, example in (("exclude", 'exclude = ["build/"]'), ("extend-exclude", 'extend-exclude = ["build/"]'),
                         ("select", 'select = ["ML001"]')):
        write(tmp_path / "pyproject.toml", f'[tool.mllint]\n{key} = "x"\n')
        assert_user_error(run(["."], tmp_path), f"`{key}` must be a list of strings, e.g. {example}")


def test_many_files_use_the_process_pool(tmp_path):
    for index in range(12):
        write(tmp_path / "pkg" / f"m{index:02d}.py", BAD if index % 2 else GOOD)
    proc = run(["-v", "--no-cache", "--format", "json"], tmp_path)
    assert proc.returncode == 1
    found = sorted(item["path"] for item in json.loads(proc.stdout))
    assert found == [os.path.join("pkg", f"m{i:02d}.py") for i in range(1, 12, 2)]
    workers = int(re.search(r"12 files: 0 from cache, 12 linted in (\d+) process", proc.stderr).group(1))
    assert workers == min(os.cpu_count() or 1, 12)
    few = run(["-v", "--no-cache", "pkg/m01.py", "pkg/m03.py"], tmp_path)
    assert "in 1 process(es)" in few.stderr


# --- --config and --force-exclude ------------------------------------------------------


def test_explicit_config(project):
    write(project / "configs" / "strict.toml", '[tool.mllint]\nignore = ["ML001"]\n')
    proc = run(["--config", "configs/strict.toml", "train.py"], project)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_explicit_config_missing(project):
    assert_user_error(run(["--config", "nope.toml"], project), "nope.toml")


def test_force_exclude(project):
    write(project / "build" / "gen.py", BAD)
    assert run(["build/gen.py"], project).returncode == 1  # named explicitly: linted
    proc = run(["--force-exclude", "build/gen.py"], project)
    assert proc.returncode == 0
    assert "All checks passed!" in proc.stdout
    assert run([], project).stdout.count("ML001") == 1  # not found by walking


def test_valid_python_with_a_tab_in_its_indentation_is_linted_not_reported_unparsable(tmp_path):
    # CPython reads the tab as 8 columns; LibCST refuses the mix. mllint lints it (no fixes there)
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "def train(model, loader, optimizer):\n"
        "    for x, y in loader:\n"
        "        if x is not None:\n"
        "\t        loss = model(x, y)\n"
        "        else:\n"
        "            loss = model(y, y)\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
    )
    before = script.read_bytes()
    proc = run(["--no-cache", "--select", "ML000,ML001", "--fix", str(script)], tmp_path)
    assert "ML000" not in proc.stdout, proc.stdout
    assert "ML001" in proc.stdout  # the rules ran
    assert script.read_bytes() == before  # no fix applied through expanded positions
