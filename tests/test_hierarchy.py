"""Hierarchical configuration: each file gets the settings of the nearest mllint.toml or
[tool.mllint] above it; command-line configuration flags; --show-settings; `mllint check`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cli_helpers import BAD, GOOD, assert_user_error, reported_paths, run, write
from mllint import config as config_module
from mllint.config import ConfigError, Resolver

SUB_X = os.path.join("sub", "x.py")


def findings(proc) -> list:
    """(path, line, code) of every finding in `--format json` output."""
    assert proc.returncode in (0, 1), proc.stderr
    return sorted((f["path"], f["line"], f["code"]) for f in json.loads(proc.stdout))


@pytest.fixture
def nested(tmp_path: Path) -> Path:
    """The issue's case: the root config ignores ML001, a sub-folder's config selects it."""
    write(tmp_path / "pyproject.toml", "[project]\nname = 'demo'\n\n[tool.mllint]\nignore = [\"ML001\"]\n")
    write(tmp_path / "sub" / "pyproject.toml", '[tool.mllint]\nselect = ["ML001"]\n')
    write(tmp_path / "x.py", BAD)
    write(tmp_path / "sub" / "x.py", BAD)
    return tmp_path


# --- the two scenarios of the issue --------------------------------------------------------


def test_argument_order_does_not_change_findings(nested):
    one = run(["--no-cache", "--format", "json", SUB_X, "x.py"], nested)
    two = run(["--no-cache", "--format", "json", "x.py", SUB_X], nested)
    assert findings(one) == findings(two) == [(SUB_X, 6, "ML001")]


def test_a_file_gets_the_same_findings_alone_and_with_the_whole_tree(nested):
    # pre-commit runs the hook on the staged files (alone) and on `--all-files` (every file):
    # both must block the file in sub/ and pass the one at the root.
    hook = ["--force-exclude", "--no-cache", "--format", "json"]
    every = run(hook + ["x.py", SUB_X], nested)
    assert every.returncode == 1
    assert findings(every) == [(SUB_X, 6, "ML001")]
    alone = run(hook + [SUB_X], nested)
    assert alone.returncode == 1 and findings(alone) == [(SUB_X, 6, "ML001")]
    root_alone = run(hook + ["x.py"], nested)
    assert root_alone.returncode == 0 and findings(root_alone) == []
    # ... and so does walking the tree from the root, from sub/ and from elsewhere.
    assert findings(run(["--no-cache", "--format", "json"], nested)) == [(SUB_X, 6, "ML001")]
    assert findings(run(["--no-cache", "--format", "json", "x.py"], nested / "sub")) == [("x.py", 6, "ML001")]
    assert findings(run(["--no-cache", "--format", "json", str(nested / "x.py")], nested / "sub")) == []


def test_the_cache_keys_on_each_files_own_settings(nested):
    # Cache on: run alone, then the tree, then alone again, in both orders; nothing leaks.
    first = run(["--format", "json", "x.py"], nested)
    tree = run(["--format", "json", "-v"], nested)
    again = run(["--format", "json", "-v", SUB_X, "x.py"], nested)
    assert findings(first) == []
    assert findings(tree) == findings(again) == [(SUB_X, 6, "ML001")]
    assert "2 from cache" in again.stderr
    # One cache per configuration, in its own root.
    assert list((nested / ".mllint_cache").glob("*.json"))
    assert list((nested / "sub" / ".mllint_cache").glob("*.json"))
    # Editing the sub-folder's configuration re-lints its files only.
    write(nested / "sub" / "pyproject.toml", '[tool.mllint]\nselect = ["ML002"]\n')
    proc = run(["--format", "json", "-v"], nested)
    assert findings(proc) == [] and "1 from cache, 1 linted" in proc.stderr


# --- which file is the configuration ------------------------------------------------------


def test_mllint_toml_wins_over_pyproject_in_the_same_directory(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.mllint]\nignore = ["ML001"]\n')
    write(tmp_path / "mllint.toml", 'select = ["ML001"]\n')  # keys at the top level
    write(tmp_path / "train.py", BAD)
    assert run(["--no-cache"], tmp_path).returncode == 1
    (tmp_path / "mllint.toml").unlink()
    assert run(["--no-cache"], tmp_path).returncode == 0


def test_nearest_wins_and_configurations_are_not_merged(tmp_path):
    write(tmp_path / "mllint.toml", 'ignore = ["ML001"]\ntorch-version = "2.6"\n')
    write(tmp_path / "pkg" / "mllint.toml", 'torch-version = "2.1"\n')  # says nothing about ML001
    write(tmp_path / "pkg" / "deep" / "train.py", BAD)
    proc = run(["--no-cache", "--format", "json"], tmp_path)
    assert findings(proc) == [(os.path.join("pkg", "deep", "train.py"), 6, "ML001")]


def test_pyproject_without_section_is_passed_over(tmp_path):
    write(tmp_path / "mllint.toml", 'ignore = ["ML001"]\n')
    write(tmp_path / "pkg" / "pyproject.toml", "[project]\nname = 'inner'\n")
    write(tmp_path / "pkg" / "train.py", BAD)
    assert run(["--no-cache", os.path.join("pkg", "train.py")], tmp_path).returncode == 0


def test_errors_in_mllint_toml_name_the_file(tmp_path):
    write(tmp_path / "sub" / "mllint.toml", 'selct = ["ML001"]\n')
    write(tmp_path / "sub" / "train.py", BAD)
    line = assert_user_error(run([], tmp_path), "selct", "mllint.toml")
    assert "[tool.mllint]" not in line


def test_sub_folder_excludes_govern_their_folder(tmp_path):
    write(tmp_path / "mllint.toml", 'extend-exclude = ["sub/gen", "skipped"]\n')
    write(tmp_path / "sub" / "mllint.toml", 'extend-exclude = ["local"]\n')
    for name in ("a.py", "skipped/b.py", "sub/gen/c.py", "sub/local/d.py", "sub/e.py"):
        write(tmp_path / name, BAD)
    proc = run(["--no-cache", "--format", "concise"], tmp_path)
    # sub/ has its own configuration: its `local` applies inside it, the root's "sub/gen" does not.
    expected = ["a.py", os.path.join("sub", "e.py"), os.path.join("sub", "gen", "c.py")]
    assert reported_paths(proc) == expected
    # --force-exclude judges a named file the same way the walk does.
    named = ["--no-cache", "--format", "concise", "--force-exclude", "skipped/b.py", "sub/gen/c.py", "sub/local/d.py"]
    assert reported_paths(run(named, tmp_path)) == [os.path.join("sub", "gen", "c.py")]


def test_relative_settings_are_relative_to_their_configuration(tmp_path):
    write(tmp_path / "mllint.toml", "")
    write(tmp_path / "sub" / "mllint.toml",
          'cache-dir = "var/cache"\n[per-file-ignores]\n"tests/*.py" = ["ML001"]\n')
    for name in ("tests/t.py", "sub/tests/t.py", "sub/x.py"):
        write(tmp_path / name, BAD)
    proc = run(["--format", "concise"], tmp_path)
    assert reported_paths(proc) == [os.path.join("sub", "x.py"), os.path.join("tests", "t.py")]
    assert list((tmp_path / "sub" / "var" / "cache").glob("*.json"))
    assert list((tmp_path / ".mllint_cache").glob("*.json"))


def test_explicit_config_is_used_for_every_file(nested):
    write(nested / "ci.toml", 'select = ["ML002"]\n')
    assert findings(run(["--no-cache", "--format", "json", "--config", "ci.toml"], nested)) == []
    write(nested / "ci.toml", 'select = ["ML001"]\n')
    proc = run(["--no-cache", "--format", "json", "--config", "ci.toml"], nested)
    assert findings(proc) == [(SUB_X, 6, "ML001"), ("x.py", 6, "ML001")]


def test_isolated_ignores_every_configuration_file(nested):
    proc = run(["--no-cache", "--format", "json", "--isolated"], nested)
    assert findings(proc) == [(SUB_X, 6, "ML001"), ("x.py", 6, "ML001")]
    write(nested / "bad" / "mllint.toml", "this is not toml")
    write(nested / "bad" / "y.py", GOOD)
    assert run(["--no-cache", "--isolated"], nested).returncode == 1
    assert_user_error(run(["--no-cache"], nested), "invalid TOML")
    assert_user_error(run(["--isolated", "--config", "pyproject.toml"], nested), "--isolated")


# --- command-line flags apply on top of every configuration -------------------------------


def test_command_line_selection_applies_on_top_of_every_configuration(nested):
    proc = run(["--no-cache", "--format", "json", "--extend-select", "ML001"], nested)
    assert findings(proc) == [(SUB_X, 6, "ML001"), ("x.py", 6, "ML001")]
    proc = run(["--no-cache", "--format", "json", "--ignore", "ML001", "--extend-select", "ML002"], nested)
    assert findings(proc) == []


def test_exclude_and_extend_exclude_flags(tmp_path):
    for name in ("a.py", "gen/b.py", "build/c.py", "old/d.py"):
        write(tmp_path / name, BAD)
    concise = ["--no-cache", "--format", "concise"]
    assert reported_paths(run(concise + ["--extend-exclude", "gen,old/*.py"], tmp_path)) == ["a.py"]
    # --exclude replaces the defaults (build/ is linted again), repeatable.
    proc = run(concise + ["--exclude", "gen", "--exclude", "old"], tmp_path)
    assert reported_paths(proc) == ["a.py", os.path.join("build", "c.py")]
    # They replace / extend what the configuration says.
    write(tmp_path / "mllint.toml", 'extend-exclude = ["gen"]\n')
    assert reported_paths(run(concise + ["--extend-exclude", "old"], tmp_path)) == ["a.py"]


def test_per_file_ignores_flag(tmp_path):
    for name in ("a.py", "tests/t.py", "tests/u.py"):
        write(tmp_path / name, BAD)
    concise = ["--no-cache", "--format", "concise"]
    proc = run(concise + ["--per-file-ignores", "tests/*:ML001"], tmp_path)
    assert reported_paths(proc) == ["a.py"]
    proc = run(concise + ["--per-file-ignores", "tests/t.py:ML002,ML001", "--per-file-ignores", "a.py:ML0"], tmp_path)
    assert reported_paths(proc) == [os.path.join("tests", "u.py")]
    # Replaces the configured per-file-ignores; --extend-per-file-ignores adds to them.
    write(tmp_path / "mllint.toml", '[per-file-ignores]\n"a.py" = ["ML001"]\n')
    proc = run(concise + ["--per-file-ignores", "tests/*:ML001"], tmp_path)
    assert reported_paths(proc) == ["a.py"]
    proc = run(concise + ["--extend-per-file-ignores", "tests/*:ML001"], tmp_path)
    assert proc.returncode == 0 and reported_paths(proc) == []


@pytest.mark.parametrize(
    "args, needles",
    [
        (["--per-file-ignores", "tests"], ["--per-file-ignores", "PATTERN:CODES"]),
        (["--per-file-ignores", "tests/*:"], ["--per-file-ignores", "PATTERN:CODES"]),
        (["--per-file-ignores", "tests/*:ML999"], ["ML999", "unknown rule code"]),
        (["--extend-per-file-ignores", "!:ML001"], ["--extend-per-file-ignores", "bad pattern"]),
        (["--exclude", "!"], ["--exclude", "bad pattern"]),
        (["--extend-exclude", "ok,\\"], ["--extend-exclude", "bad pattern"]),
        (["--config", "missing.toml"], ["missing.toml"]),
    ],
)
def test_bad_flag_values_are_one_line_errors(tmp_path, args, needles):
    write(tmp_path / "a.py", BAD)
    assert_user_error(run(args, tmp_path), *needles)


# --- an empty selection ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, config",
    [
        (["--select", "ML001", "--ignore", "ML001"], None),
        (["--select", "ML000"], None),
        ([], 'ignore = ["ML"]\n'),
        ([], 'select = ["ML000"]\n'),
        (["--ignore", "ALL"], 'select = ["ML001"]\n'),
    ],
)
def test_empty_selection_is_an_error(tmp_path, args, config):
    write(tmp_path / "a.py", GOOD)
    if config is not None:
        write(tmp_path / "mllint.toml", config)
    line = assert_user_error(run(args, tmp_path), "no rules are selected")
    assert "ML000" in line and "All checks passed" not in line


def test_empty_selection_in_a_sub_folder_is_reported_when_it_is_linted(tmp_path):
    write(tmp_path / "a.py", GOOD)
    write(tmp_path / "sub" / "mllint.toml", 'ignore = ["ALL"]\n')
    write(tmp_path / "sub" / "b.py", GOOD)
    assert run(["a.py"], tmp_path).returncode == 0
    assert_user_error(run([], tmp_path), "no rules are selected", "sub")


def test_per_file_ignores_may_empty_one_files_rules(tmp_path):
    write(tmp_path / "a.py", BAD)
    write(tmp_path / "mllint.toml", '[per-file-ignores]\n"a.py" = ["ALL"]\n')
    proc = run(["--no-cache"], tmp_path)
    assert proc.returncode == 0 and "All checks passed!" in proc.stdout


# --- --show-settings ------------------------------------------------------------------------


def test_show_settings(nested):
    write(nested / "sub" / "pyproject.toml",
          '[tool.mllint]\nselect = ["ML001", "ML002"]\ntorch-version = "2.6"\nextend-exclude = ["gen"]\n'
          '[tool.mllint.per-file-ignores]\n"x.py" = ["ML002"]\n')
    proc = run(["--show-settings", SUB_X], nested)
    assert proc.returncode == 0, proc.stderr
    fields = dict(line.split(":", 1) for line in proc.stdout.splitlines())
    fields = {k: v.strip() for k, v in fields.items()}
    assert fields["config file"] == str((nested / "sub" / "pyproject.toml").resolve())
    assert fields["project root"] == str((nested / "sub").resolve())
    assert fields["enabled rules"] == "ML000, ML001"
    assert fields["ignored here"] == "ML002 (per-file-ignores)"
    assert fields["extend-exclude"] == "gen"
    assert fields["per-file-ignores"] == "x.py = ML002"
    assert fields["cache dir"] == str((nested / "sub" / ".mllint_cache").resolve())
    assert fields["torch-version"] == "2.6"
    assert fields["exclude"].startswith("(defaults) .bzr")
    # Command-line flags show up; a file with no configuration shows the defaults.
    proc = run(["--show-settings", "x.py", "--extend-select", "ML001", "--exclude", "gen"], nested)
    assert "ML001" in proc.stdout and "exclude:          gen" in proc.stdout
    assert "config file:      none (--isolated)" in run(["--show-settings", "x.py", "--isolated"], nested).stdout
    write(nested.parent / "loose" / "y.py", GOOD)
    assert "none (defaults)" in run(["--show-settings", str(nested.parent / "loose" / "y.py")], nested).stdout
    assert not (nested / ".mllint_cache").exists()  # nothing was linted


def test_show_settings_unknown_file(tmp_path):
    assert_user_error(run(["--show-settings", "nope.py"], tmp_path), "nope.py", "does not exist")


# --- mllint check -------------------------------------------------------------------------


def test_check_is_the_lint_command(nested):
    proc = run(["check", "--no-cache", "--format", "json", "--extend-select", "ML001", "x.py"], nested)
    assert proc.returncode == 1 and findings(proc) == [("x.py", 6, "ML001")]
    assert run(["check", "--no-cache", "x.py"], nested).returncode == 0
    assert run(["check", "--no-cache"], nested).returncode == 1  # default path: .
    helped = run(["check", "--help"], nested)
    assert helped.returncode == 0 and "mllint check" in helped.stdout and "--per-file-ignores" in helped.stdout
    write(nested / "check" / "z.py", BAD)  # a directory named `check` (under the root config)
    proc = run(["--no-cache", "--format", "json", "--extend-select", "ML001", "--", "check"], nested)
    assert findings(proc) == [(os.path.join("check", "z.py"), 6, "ML001")]


# --- in-process: the resolver ---------------------------------------------------------------


def test_resolver_reads_each_configuration_once(nested, monkeypatch):
    reads = []
    real = config_module._load_toml
    monkeypatch.setattr(config_module, "_load_toml", lambda path: reads.append(path) or real(path))
    for name in ("a", "b", "c/d"):
        write(nested / "sub" / name / "f.py", GOOD)
    resolver = Resolver()
    for _ in range(3):
        for name in ("x.py", "sub/x.py", "sub/a/f.py", "sub/b/f.py", "sub/c/d/f.py"):
            resolver.settings_for(str(nested / name))
    assert sorted(reads) == sorted([nested / "pyproject.toml", nested / "sub" / "pyproject.toml"])
    assert resolver.settings_for(str(nested / "sub" / "c" / "d" / "f.py")) is resolver.settings_for(
        str(nested / "sub" / "x.py"))
    assert "ML001" in resolver.codes_for(str(nested / "sub" / "x.py"))
    assert "ML001" not in resolver.codes_for(str(nested / "x.py"))
    assert len(resolver.used()) == 2


def test_resolver_errors_and_single(tmp_path):
    write(tmp_path / "mllint.toml", 'ignore = ["ML"]\n')
    with pytest.raises(ConfigError, match="no rules are selected"):
        Resolver().settings_for(str(tmp_path / "a.py"))
    settings = Resolver({"isolated": True}).settings_for(str(tmp_path / "a.py"))
    single = Resolver.single(settings)
    assert single.settings_for("/anywhere/else.py") is settings


def test_fix_uses_each_files_own_settings(nested):
    proc = run(["--no-cache", "--fix"], nested)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (nested / "sub" / "x.py").read_text() == GOOD
    assert (nested / "x.py").read_text() == BAD  # ML001 is ignored at the root: not fixed either


def test_a_file_with_no_configuration_above_gets_the_defaults(tmp_path):
    # Not the configuration of the current directory (Ruff would use it): the result of a
    # file does not depend on where the command runs.
    write(tmp_path / "proj" / "mllint.toml", 'ignore = ["ML001"]\n')
    outside = write(tmp_path / "outside" / "train.py", BAD)
    assert run(["--no-cache", str(outside)], tmp_path / "proj").returncode == 1
    assert run(["--no-cache", str(outside)], tmp_path).returncode == 1
