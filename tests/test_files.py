"""File discovery: .gitignore, default and configured excludes, explicit paths, symlinks, order."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cli_helpers import BAD, GOOD, assert_user_error, reported_paths, run, write
from mllint.config import ConfigError, load_settings
from mllint.files import DiscoveryError, discover


def tree(root: Path, names, text: str = "x = 1\n") -> Path:
    for name in names:
        write(root / name, text)
    return root


def found(root: Path, paths=(".",), overrides=None, config: str = "") -> list:
    """discover() run from `root` (as the CLI does: paths relative to the cwd)."""
    if config:
        write(root / "pyproject.toml", config)
    old = os.getcwd()
    os.chdir(root)
    try:
        settings = load_settings(list(paths), overrides or {})
        return discover(list(paths), settings)
    finally:
        os.chdir(old)


def p(*parts: str) -> str:
    return os.path.join(*parts)


def test_python_files_sorted_recursively(tmp_path):
    tree(tmp_path, ["b.py", "a.py", "pkg/z.py", "pkg/sub/c.py", "notes.txt", "data.json", "stub.pyi", "nb.ipynb",
                    "pkg/sub/lab.ipynb"])
    assert found(tmp_path) == ["a.py", "b.py", "nb.ipynb", p("pkg", "sub", "c.py"), p("pkg", "sub", "lab.ipynb"),
                               p("pkg", "z.py")]


def test_notebooks_switch_leaves_them_out(tmp_path):
    tree(tmp_path, ["a.py", "nb.ipynb", "pkg/lab.ipynb"])
    assert found(tmp_path, ["nb.ipynb", "a.py"]) == ["a.py", "nb.ipynb"]
    assert found(tmp_path, config="[tool.mllint]\nnotebooks = false\n") == ["a.py"]
    assert found(tmp_path, ["nb.ipynb", "a.py"]) == ["a.py"]
    with pytest.raises(ConfigError, match="`notebooks` must be true or false"):
        found(tmp_path, config="[tool.mllint]\nnotebooks = \"no\"\n")


def test_deterministic_order_across_argument_order(tmp_path):
    tree(tmp_path, ["a/x.py", "b/y.py", "c.py"])
    assert found(tmp_path, ["b", "c.py", "a"]) == found(tmp_path, ["a", "b", "c.py"])


@pytest.mark.parametrize(
    "directory",
    [".git", ".venv", "venv", "__pycache__", "build", "dist", "node_modules", ".tox", ".mypy_cache",
     "site-packages", ".mllint_cache", ".eggs", ".nox"],
)
def test_default_excludes(tmp_path, directory):
    tree(tmp_path, ["keep.py", f"{directory}/skip.py", f"pkg/{directory}/skip.py"])
    assert found(tmp_path) == ["keep.py"]


def test_explicit_path_in_excluded_dir_is_linted_unless_force_exclude(tmp_path):
    tree(tmp_path, ["keep.py", ".venv/lib/mod.py", "build/gen.py"])
    assert found(tmp_path, [".venv/lib/mod.py"]) == [p(".venv", "lib", "mod.py")]
    assert found(tmp_path, ["build"]) == [p("build", "gen.py")]
    assert found(tmp_path, [".venv/lib/mod.py", "keep.py"], {"force_exclude": True}) == ["keep.py"]
    assert found(tmp_path, ["build"], {"force_exclude": True}) == []


def test_explicit_file_any_extension(tmp_path):
    tree(tmp_path, ["bin/tool", "script.txt"])
    assert found(tmp_path, ["bin/tool"]) == [p("bin", "tool")]


def test_explicit_notebook_is_linted_without_warning(tmp_path):
    tree(tmp_path, ["nb.ipynb", "a.py"])
    warnings = []
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        files = discover(["nb.ipynb", "a.py"], load_settings(["."]), on_warning=warnings.append)
    finally:
        os.chdir(old)
    assert files == ["a.py", "nb.ipynb"]
    assert warnings == []


def test_gitignore_root_and_nested(tmp_path):
    tree(tmp_path, ["a.py", "gen/g.py", "pkg/b.py", "pkg/local.py", "pkg/deep/c.py", "pkg/deep/local.py",
                    "logs/x.py", "secret.py"])
    write(tmp_path / ".gitignore", "gen/\n/secret.py\n*.log\nlogs\n")
    write(tmp_path / "pkg" / ".gitignore", "local.py\n")
    assert found(tmp_path) == ["a.py", p("pkg", "b.py"), p("pkg", "deep", "c.py")]


def test_gitignore_negation_and_deeper_file_wins(tmp_path):
    tree(tmp_path, ["gen_a.py", "gen_keep.py", "pkg/gen_b.py", "pkg/gen_c.py"])
    write(tmp_path / ".gitignore", "gen_*.py\n!gen_keep.py\n")
    write(tmp_path / "pkg" / ".gitignore", "!gen_c.py\n")
    assert found(tmp_path) == ["gen_keep.py", p("pkg", "gen_c.py")]


def test_gitignore_of_parent_applies_when_walking_subdirectory(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    tree(tmp_path, ["src/pkg/a.py", "src/pkg/gen.py", "src/pkg/sub/gen.py"])
    write(tmp_path / ".gitignore", "gen.py\n")
    assert found(tmp_path, ["src/pkg"]) == [p("src", "pkg", "a.py")]
    assert found(tmp_path / "src" / "pkg") == ["a.py"]


def test_gitignore_of_walked_directory_outside_project(tmp_path):
    tree(tmp_path, ["proj/a.py", "other/b.py", "other/gen.py"])
    write(tmp_path / "other" / ".gitignore", "gen.py\n")
    assert found(tmp_path / "proj", [str(tmp_path / "other")]) == [str(tmp_path / "other" / "b.py")]


def test_git_info_exclude(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    tree(tmp_path, ["a.py", "scratch.py"])
    write(tmp_path / ".git" / "info" / "exclude", "scratch.py\n")
    assert found(tmp_path) == ["a.py"]


def test_explicit_gitignored_file(tmp_path):
    tree(tmp_path, ["a.py", "ignored.py"])
    write(tmp_path / ".gitignore", "ignored.py\n")
    assert found(tmp_path, ["ignored.py"]) == ["ignored.py"]
    assert found(tmp_path, ["ignored.py"], {"force_exclude": True}) == []


def test_exclude_and_extend_exclude_patterns(tmp_path):
    tree(tmp_path, ["a.py", "gen/x.py", "migrations/0001.py", "pkg/migrations/0002.py", "pkg/tests/t.py",
                    "build/b.py"])
    config = '[tool.mllint]\nextend-exclude = ["migrations", "pkg/tests/"]\n'
    assert found(tmp_path, config=config) == ["a.py", p("gen", "x.py")]
    config = '[tool.mllint]\nexclude = ["gen", "*.py.bak"]\n'
    assert found(tmp_path, config=config) == [
        "a.py", p("build", "b.py"), p("migrations", "0001.py"), p("pkg", "migrations", "0002.py"),
        p("pkg", "tests", "t.py"),
    ]


def test_exclude_is_relative_to_project_root(tmp_path):
    tree(tmp_path, ["pkg/a.py", "pkg/skip/b.py", "other/skip/c.py"])
    write(tmp_path / "pyproject.toml", '[tool.mllint]\nextend-exclude = ["/pkg/skip"]\n')
    assert found(tmp_path / "pkg") == ["a.py"]
    assert found(tmp_path) == [p("other", "skip", "c.py"), p("pkg", "a.py")]


def test_missing_path(tmp_path):
    with pytest.raises(DiscoveryError, match="path does not exist: nope"):
        found(tmp_path, ["nope"])


def test_broken_symlink_and_symlink_loop(tmp_path):
    tree(tmp_path, ["pkg/a.py"])
    os.symlink(tmp_path / "pkg", tmp_path / "pkg" / "loop")  # pkg/loop -> pkg
    os.symlink(tmp_path, tmp_path / "pkg" / "up")  # pkg/up -> project root
    os.symlink(tmp_path / "missing.py", tmp_path / "dangling.py")
    os.symlink(tmp_path / "self1", tmp_path / "self2")
    os.symlink(tmp_path / "self2", tmp_path / "self1")
    assert found(tmp_path) == [p("pkg", "a.py")]


def test_symlinked_file_and_directory_counted_once(tmp_path):
    tree(tmp_path, ["real/a.py"])
    os.symlink(tmp_path / "real", tmp_path / "alias")
    os.symlink(tmp_path / "real" / "a.py", tmp_path / "b.py")
    assert found(tmp_path) == [p("alias", "a.py")]  # one path per file; the smallest name wins
    assert found(tmp_path, ["real", "real/a.py", "./real/a.py"]) == [p("real", "a.py")]


def test_absolute_paths_stay_absolute(tmp_path):
    tree(tmp_path, ["a.py"])
    assert found(tmp_path, [str(tmp_path)]) == [str(tmp_path / "a.py")]


# --- through the command ---------------------------------------------------------------


def test_cli_honours_gitignore_and_excludes(tmp_path):
    write(tmp_path / "train.py", BAD)
    write(tmp_path / "ignored" / "train.py", BAD)
    write(tmp_path / ".venv" / "lib" / "train.py", BAD)
    write(tmp_path / "node_modules" / "x.py", BAD)
    write(tmp_path / ".gitignore", "ignored/\n")
    proc = run(["--format", "concise"], tmp_path)
    assert proc.returncode == 1
    assert reported_paths(proc) == ["train.py"]


def test_cli_missing_path_is_one_line(tmp_path):
    write(tmp_path / "a.py", GOOD)
    assert_user_error(run(["a.py", "gone"], tmp_path), "path does not exist: gone")


def test_cli_symlink_loop_finishes(tmp_path):
    write(tmp_path / "pkg" / "train.py", BAD)
    os.symlink(tmp_path, tmp_path / "pkg" / "root")
    proc = run([], tmp_path)
    assert proc.returncode == 1
    assert reported_paths(proc) == [p("pkg", "train.py")]
