"""The pre-commit hooks, run for real by pre-commit against this repository.

`pre-commit try-repo PATH` installs the hook repository into a fresh virtualenv
(`pip install .`, base dependencies only) and runs the hook. It clones the
repository's HEAD plus *tracked* uncommitted changes, and ignores untracked
files, so these tests first snapshot the working tree as it is on disk (tracked
and untracked files, minus .gitignore'd ones) into a one-commit repository and
point pre-commit at that. In a clean clone (CI) the snapshot equals HEAD.

Each try-repo run builds its own hook environment (try-repo keeps its store in a
temporary directory, whatever PRE_COMMIT_HOME says): about 10 s each here. The
tests that run `pre-commit run` with a .pre-commit-config.yaml share one
PRE_COMMIT_HOME per session, so that environment is built once.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.skipif(
        subprocess.run([sys.executable, "-c", "import pre_commit"], capture_output=True).returncode != 0,
        reason="pre-commit is not installed (pip install -e '.[dev]')",
    ),
]

BAD = """\
import torch


def train(model, loader, optimizer: torch.optim.Optimizer, loss_fn):
    for x, y in loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
"""
BAD_BACKWARD_LINE = 7

GOOD = """\
import torch


def train(model, loader, optimizer: torch.optim.Optimizer, loss_fn):
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
"""


def clean_env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env["PRE_COMMIT_HOME"] = str(home)
    env["PRE_COMMIT_COLOR"] = "never"
    env["NO_COLOR"] = "1"
    env.pop("SKIP", None)
    return env


def git(*args: str, cwd: Path) -> str:
    proc = subprocess.run(
        ["git", "-c", "user.name=mllint tests", "-c", "user.email=tests@mllint.invalid",
         "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=str(cwd), capture_output=True, text=True, env=clean_env(cwd / ".no-home"),
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"git {' '.join(args)} failed:\n{proc.stdout}{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory) -> Path:
    """This repository's working tree as a one-commit git repository."""
    inside = subprocess.run(
        ["git", "rev-parse", "--is-inside-work-tree"], cwd=str(ROOT), capture_output=True, text=True
    )
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        pytest.skip("the package is not in a git work tree")
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT)
    snapshot = tmp_path_factory.mktemp("hook-repo")
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if not source.is_file():  # deleted in the work tree, or a submodule
            continue
        target = snapshot / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    assert (snapshot / ".pre-commit-hooks.yaml").is_file()
    git("init", "-q", cwd=snapshot)
    git("add", "-A", cwd=snapshot)
    git("commit", "-q", "-m", "snapshot of the mllint work tree", cwd=snapshot)
    return snapshot


@pytest.fixture
def project(tmp_path) -> Path:
    """A throwaway git repository with a bad and a good training file, staged."""
    repo = tmp_path / "project"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "bad.py").write_text(BAD, encoding="utf-8")
    (repo / "good.py").write_text(GOOD, encoding="utf-8")
    git("add", "bad.py", "good.py", cwd=repo)
    return repo


def pre_commit(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=str(cwd), capture_output=True, text=True, env=clean_env(home),
        timeout=600, stdin=subprocess.DEVNULL,
    )
    proc.output = proc.stdout + proc.stderr  # type: ignore[attr-defined]
    return proc


def try_repo(hook_repo: Path, hook: str, filename: str, cwd: Path) -> subprocess.CompletedProcess:
    return pre_commit("try-repo", str(hook_repo), hook, "--files", filename,
                      cwd=cwd, home=cwd.parent / "pre-commit-home")


def test_mllint_hook_fails_on_a_bad_file(hook_repo, project):
    proc = try_repo(hook_repo, "mllint", "bad.py", project)
    assert proc.returncode == 1, proc.output
    assert re.search(r"^mllint\.+Failed$", proc.output, re.MULTILINE), proc.output
    assert re.search(r"bad\.py:%d:\d+: ML001" % BAD_BACKWARD_LINE, proc.output), proc.output
    assert "Traceback" not in proc.output
    assert (project / "bad.py").read_text(encoding="utf-8") == BAD  # the check hook never writes


def test_mllint_hook_passes_on_a_good_file(hook_repo, project):
    proc = try_repo(hook_repo, "mllint", "good.py", project)
    assert proc.returncode == 0, proc.output
    assert re.search(r"^mllint\.+Passed$", proc.output, re.MULTILINE), proc.output


def test_mllint_fix_hook_rewrites_the_bad_file_and_fails(hook_repo, project):
    proc = try_repo(hook_repo, "mllint-fix", "bad.py", project)
    assert proc.returncode == 1, proc.output
    assert re.search(r"^mllint \(fix\)\.+Failed$", proc.output, re.MULTILINE), proc.output
    assert "files were modified by this hook" in proc.output
    fixed = (project / "bad.py").read_text(encoding="utf-8")
    assert fixed != BAD
    body = fixed.split("for x, y in loader:\n", 1)[1]
    assert body.lstrip().startswith("optimizer.zero_grad()"), fixed
    compile(fixed, "bad.py", "exec")



def test_mllint_fix_hook_passes_on_a_good_file(hook_repo, project):
    proc = try_repo(hook_repo, "mllint-fix", "good.py", project)
    assert proc.returncode == 0, proc.output
    assert (project / "good.py").read_text(encoding="utf-8") == GOOD


# ------------------------------------------------------------------------------------- notebooks
# The hooks declare `types_or: [python, jupyter]`, so pre-commit hands them .ipynb files too.

def code_cell(source: str, count: int, outputs: list = ()) -> dict:
    return {"cell_type": "code", "execution_count": count, "id": f"cell-{count}",
            "metadata": {}, "outputs": list(outputs), "source": source.splitlines(keepends=True)}


def notebook_text(training_cell: str) -> str:
    """A notebook as Jupyter writes it (indent 1, keys sorted, non-ASCII kept, final newline)."""
    cells = [
        {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Training — a notebook\n"]},
        code_cell("%matplotlib inline\nimport torch\n", 1),
        code_cell(training_cell, 2),
        code_cell('print("defined")\n', 3,
                  [{"name": "stdout", "output_type": "stream", "text": ["defined\n"]}]),
    ]
    nb = {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                      "name": "python3"},
                                       "language_info": {"name": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


NB_BAD_CELL = """\
def train(model, loader, optimizer: torch.optim.Optimizer, loss_fn):
    for x, y in loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()"""
NB_GOOD_CELL = """\
def train(model, loader, optimizer: torch.optim.Optimizer, loss_fn):
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()"""
NB_BAD = notebook_text(NB_BAD_CELL)
NB_GOOD = notebook_text(NB_GOOD_CELL)
NB_BAD_CELL_NUMBER = 3  # the notebook's third cell (the first is markdown)
NB_BAD_BACKWARD_LINE = 4  # line of loss.backward() inside that cell


@pytest.fixture
def nb_project(tmp_path) -> Path:
    """A throwaway git repository with a bad and a good notebook, staged."""
    repo = tmp_path / "nbproject"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "bad.ipynb").write_text(NB_BAD, encoding="utf-8", newline="\n")
    (repo / "good.ipynb").write_text(NB_GOOD, encoding="utf-8", newline="\n")
    git("add", "bad.ipynb", "good.ipynb", cwd=repo)
    return repo


def test_mllint_hook_blocks_a_bad_notebook_at_its_cell(hook_repo, nb_project):
    proc = try_repo(hook_repo, "mllint", "bad.ipynb", nb_project)
    assert proc.returncode == 1, proc.output
    assert re.search(r"^mllint\.+Failed$", proc.output, re.MULTILINE), proc.output
    position = r"bad\.ipynb:cell %d:(?:line )?%d:(?:col )?\d+: ML001" % (NB_BAD_CELL_NUMBER, NB_BAD_BACKWARD_LINE)
    assert re.search(position, proc.output), proc.output
    assert "Traceback" not in proc.output
    assert (nb_project / "bad.ipynb").read_text(encoding="utf-8") == NB_BAD  # the check hook never writes


def test_mllint_hook_passes_a_good_notebook(hook_repo, nb_project):
    proc = try_repo(hook_repo, "mllint", "good.ipynb", nb_project)
    assert proc.returncode == 0, proc.output
    assert re.search(r"^mllint\.+Passed$", proc.output, re.MULTILINE), proc.output
    assert (nb_project / "good.ipynb").read_text(encoding="utf-8") == NB_GOOD


def test_mllint_fix_hook_fixes_a_notebook_changing_only_source_lines(hook_repo, nb_project):
    proc = try_repo(hook_repo, "mllint-fix", "bad.ipynb", nb_project)
    assert proc.returncode == 1, proc.output
    assert re.search(r"^mllint \(fix\)\.+Failed$", proc.output, re.MULTILINE), proc.output
    assert "files were modified by this hook" in proc.output
    fixed_text = (nb_project / "bad.ipynb").read_text(encoding="utf-8")
    fixed, before = json.loads(fixed_text), json.loads(NB_BAD)
    old_src = before["cells"][NB_BAD_CELL_NUMBER - 1]["source"]
    new_src = fixed["cells"][NB_BAD_CELL_NUMBER - 1]["source"]
    # Only lines were added to that cell's source: the zero_grad() call, first in the loop body.
    ops = difflib.SequenceMatcher(None, old_src, new_src, autojunk=False).get_opcodes()
    assert {op[0] for op in ops} == {"equal", "insert"}, ops
    body = "".join(new_src).split("for x, y in loader:\n", 1)[1]
    assert body.lstrip().startswith("optimizer.zero_grad()"), "".join(new_src)
    # Everything else (other cells, outputs, execution counts, metadata, the JSON layout and
    # the final newline) is byte for byte what it was: put the new source into the old notebook.
    before["cells"][NB_BAD_CELL_NUMBER - 1]["source"] = new_src
    assert fixed_text == json.dumps(before, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    again = try_repo(hook_repo, "mllint", "bad.ipynb", nb_project)
    assert again.returncode == 0, again.output  # the fixed notebook passes the check hook


def use_config(project: Path, hook_repo: Path) -> None:
    """A .pre-commit-config.yaml naming both hooks of the snapshot, staged (as pre-commit requires)."""
    rev = git("rev-parse", "HEAD", cwd=hook_repo).strip()
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n-   repo: {hook_repo.as_posix()}\n    rev: {rev}\n    hooks:\n"
        "    -   id: mllint\n    -   id: mllint-fix\n",
        encoding="utf-8",
    )
    git("add", ".pre-commit-config.yaml", cwd=project)


@pytest.fixture(scope="session")
def shared_home(tmp_path_factory) -> Path:
    """One PRE_COMMIT_HOME for the `pre-commit run` tests: the hook environment is built once."""
    return tmp_path_factory.mktemp("pre-commit-home")


def test_fix_then_check_as_configured_in_a_project(hook_repo, project, shared_home):
    """The way users run it (.pre-commit-config.yaml): fix, re-stage, and the check passes."""
    use_config(project, hook_repo)
    fix = pre_commit("run", "mllint-fix", "--files", "bad.py", cwd=project, home=shared_home)
    assert fix.returncode == 1, fix.output
    assert "files were modified by this hook" in fix.output
    git("add", "bad.py", cwd=project)
    check = pre_commit("run", "mllint", "--files", "bad.py", "good.py", cwd=project, home=shared_home)
    assert check.returncode == 0, check.output
    again = pre_commit("run", "mllint-fix", "--files", "bad.py", "good.py", cwd=project, home=shared_home)
    assert again.returncode == 0, again.output  # a second --fix changes nothing


def test_hook_environment_has_no_torch(hook_repo, project, shared_home):
    """The hook environment pre-commit builds holds the base dependencies only."""
    use_config(project, hook_repo)
    proc = pre_commit("run", "mllint", "--files", "bad.py", cwd=project, home=shared_home)
    assert proc.returncode == 1, proc.output
    assert "ML001" in proc.output

    site_packages = list(shared_home.glob("repo*/py_env-*/lib/python*/site-packages"))
    site_packages += list(shared_home.glob("repo*/py_env-*/Lib/site-packages"))  # Windows layout
    assert len(site_packages) == 1, site_packages
    installed = {p.name.split("-")[0].lower() for p in site_packages[0].glob("*.dist-info")}
    assert "mllint_pitfalls" in installed
    assert {"libcst", "click", "pathspec"} <= installed
    assert "torch" not in installed, sorted(installed)
    assert not (site_packages[0] / "torch").exists()


def test_nested_configurations_give_the_same_verdict_for_all_files_and_one_file(hook_repo, project, shared_home):
    """The root config ignores ML001, sub/'s selects it: `--all-files` and the file committed
    alone must both block sub/bad.py (each file uses its nearest configuration)."""
    (project / "pyproject.toml").write_text('[tool.mllint]\nignore = ["ML001"]\n', encoding="utf-8")
    (project / "sub").mkdir()
    (project / "sub" / "pyproject.toml").write_text('[tool.mllint]\nselect = ["ML001"]\n', encoding="utf-8")
    (project / "sub" / "bad.py").write_text(BAD, encoding="utf-8")
    git("add", "-A", cwd=project)
    use_config(project, hook_repo)
    every = pre_commit("run", "mllint", "--all-files", cwd=project, home=shared_home)
    assert every.returncode == 1, every.output
    assert f"sub/bad.py:{BAD_BACKWARD_LINE}" in every.output.replace(os.sep, "/")
    assert re.search(r"(?m)^bad\.py:", every.output) is None  # the root's bad.py: ML001 is ignored there
    alone = pre_commit("run", "mllint", "--files", "sub/bad.py", cwd=project, home=shared_home)
    assert alone.returncode == 1, alone.output
    root_file = pre_commit("run", "mllint", "--files", "bad.py", cwd=project, home=shared_home)
    assert root_file.returncode == 0, root_file.output
