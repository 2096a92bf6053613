"""[tool.mllint] in pyproject.toml: every key, precedence, discovery of the file, errors."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from cli_helpers import BAD, GOOD, assert_user_error, reported_paths, run, write
from mllint.config import ConfigError, Layer, load_settings, resolve_codes


def project(tmp_path: Path, config: str, files=None) -> Path:
    write(tmp_path / "pyproject.toml", "[project]\nname = 'demo'\n\n" + textwrap.dedent(config))
    for name, text in (files or {"train.py": BAD}).items():
        write(tmp_path / name, text)
    return tmp_path


# --- each key --------------------------------------------------------------------------


def test_select(tmp_path):
    root = project(tmp_path, '[tool.mllint]\nselect = ["ML002"]\n')
    assert run([], root).returncode == 0
    root = project(tmp_path, '[tool.mllint]\nselect = ["ML0"]\n')
    assert run([], root).returncode == 1


def test_ignore(tmp_path):
    root = project(tmp_path, '[tool.mllint]\nignore = ["ML001"]\n')
    proc = run([], root)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_extend_select(tmp_path):
    root = project(tmp_path, '[tool.mllint]\nselect = ["ML000"]\nextend-select = ["ML001"]\n')
    assert run([], root).returncode == 1


def test_per_file_ignores(tmp_path):
    root = project(
        tmp_path,
        """\
        [tool.mllint.per-file-ignores]
        "tests/*.py" = ["ML001"]
        "legacy.py" = ["ML"]
        """,
        {"train.py": BAD, "tests/test_loop.py": BAD, "pkg/legacy.py": BAD, "tests/deep/test_x.py": BAD},
    )
    proc = run([], root)
    assert proc.returncode == 1
    # "tests/*.py" is anchored to the config directory and does not descend; "legacy.py" matches anywhere.
    assert reported_paths(proc) == [os.path.join("tests", "deep", "test_x.py"), "train.py"]


def test_per_file_ignores_relative_to_config_dir_when_run_elsewhere(tmp_path):
    root = project(tmp_path, '[tool.mllint.per-file-ignores]\n"sub/*.py" = ["ML001"]\n',
                   {"sub/a.py": BAD, "sub/inner/b.py": BAD})
    proc = run(["a.py", "inner"], root / "sub")
    assert reported_paths(proc) == [os.path.join("inner", "b.py")]


def test_exclude_replaces_defaults(tmp_path):
    root = project(tmp_path, '[tool.mllint]\nexclude = ["generated"]\n',
                   {"train.py": GOOD, "generated/x.py": BAD, "build/y.py": BAD})
    proc = run([], root)
    assert reported_paths(proc) == [os.path.join("build", "y.py")]


def test_extend_exclude_keeps_defaults(tmp_path):
    root = project(tmp_path, '[tool.mllint]\nextend-exclude = ["generated", "scripts/*.py"]\n',
                   {"train.py": GOOD, "generated/x.py": BAD, "build/y.py": BAD, "scripts/s.py": BAD,
                    "scripts/keep/k.py": BAD})
    proc = run([], root)
    assert reported_paths(proc) == [os.path.join("scripts", "keep", "k.py")]


@pytest.mark.parametrize("version", ["2.6", "2.13", "1.13.1"])
def test_torch_version_valid(tmp_path, version):
    root = project(tmp_path, f'[tool.mllint]\ntorch-version = "{version}"\n')
    assert run([], root).returncode == 1


@pytest.mark.parametrize("value", ['"latest"', "2.6", '"2"', '"v2.6"'])
def test_torch_version_invalid(tmp_path, value):
    root = project(tmp_path, f"[tool.mllint]\ntorch-version = {value}\n")
    assert_user_error(run([], root), "torch-version", "pyproject.toml")


def test_cache_dir(tmp_path):
    root = project(tmp_path, '[tool.mllint]\ncache-dir = "var/lint-cache"\n')
    proc = run(["-v"], root)
    assert proc.returncode == 1
    cache = root / "var" / "lint-cache"
    assert (cache / ".gitignore").exists() and list(cache.glob("*.json"))
    assert not (root / ".mllint_cache").exists()
    assert "1 from cache" in run(["-v"], root).stderr


def test_cache_dir_from_environment(tmp_path):
    root = project(tmp_path, "")
    run([], root, env={"MLLINT_CACHE_DIR": str(tmp_path / "elsewhere")})
    assert list((tmp_path / "elsewhere").glob("*.json"))
    assert not (root / ".mllint_cache").exists()


def test_default_cache_location_is_project_root(tmp_path):
    root = project(tmp_path, "[tool.mllint]\n", {"src/pkg/train.py": BAD})
    run(["train.py"], root / "src" / "pkg")
    assert (root / ".mllint_cache" / ".gitignore").exists()
    assert not (root / "src" / "pkg" / ".mllint_cache").exists()


# --- errors ----------------------------------------------------------------------------


def test_unknown_key(tmp_path):
    root = project(tmp_path, '[tool.mllint]\nselct = ["ML001"]\n')
    line = assert_user_error(run([], root), "selct", "pyproject.toml")
    for key in ("select", "ignore", "extend-select", "per-file-ignores", "exclude", "extend-exclude",
                "torch-version", "cache-dir"):
        assert key in line


def test_unknown_code_in_config(tmp_path):
    root = project(tmp_path, '[tool.mllint]\nignore = ["ML042"]\n')
    assert_user_error(run([], root), "ML042", "unknown rule code")


def test_unknown_code_in_per_file_ignores(tmp_path):
    root = project(tmp_path, '[tool.mllint.per-file-ignores]\n"*.py" = ["XYZ1"]\n')
    assert_user_error(run([], root), "XYZ1")


def test_bad_toml_names_file_and_line(tmp_path):
    root = project(tmp_path, '[tool.mllint]\nselect = = ["ML001"]\n')  # line 5 of the file
    line = assert_user_error(run([], root), "invalid TOML")
    assert f"{root / 'pyproject.toml'}:5: invalid TOML: " in line


@pytest.mark.parametrize(
    "config, needle",
    [
        ('select = "ML001"', "`select` must be a list"),
        ("ignore = [1]", "`ignore` must be a list"),
        ('per-file-ignores = ["x"]', "`per-file-ignores` must be a table"),
        ('exclude = "build"', "`exclude` must be a list"),
        ("cache-dir = 3", "`cache-dir`"),
    ],
)
def test_wrong_value_types(tmp_path, config, needle):
    root = project(tmp_path, f"[tool.mllint]\n{config}\n")
    assert_user_error(run([], root), needle)


def test_tool_mllint_not_a_table(tmp_path):
    root = project(tmp_path, '[tool]\nmllint = "yes"\n')
    assert_user_error(run([], root), "must be a table")


# --- precedence ------------------------------------------------------------------------


def test_cli_select_overrides_config_ignore(tmp_path):
    # As in Ruff: a --select on the command line starts afresh from what it names.
    root = project(tmp_path, '[tool.mllint]\nignore = ["ML001"]\n')
    assert run([], root).returncode == 0
    assert run(["--select", "ML001"], root).returncode == 1


def test_cli_ignore_over_config_select(tmp_path):
    root = project(tmp_path, '[tool.mllint]\nselect = ["ML001", "ML002"]\n')
    assert run(["--ignore", "ML001"], root).returncode == 0


def test_cli_extend_select_over_config_ignore(tmp_path):
    root = project(tmp_path, '[tool.mllint]\nignore = ["ML001"]\n')
    assert run(["--extend-select", "ML001"], root).returncode == 1


def test_per_file_ignores_apply_to_cli_selection(tmp_path):
    root = project(tmp_path, '[tool.mllint.per-file-ignores]\n"train.py" = ["ML001"]\n')
    assert run(["--select", "ALL"], root).returncode == 0


# --- finding the file ------------------------------------------------------------------


def test_nearest_pyproject_with_section_wins(tmp_path):
    project(tmp_path, '[tool.mllint]\nignore = ["ML001"]\n', {"pkg/train.py": BAD})
    # A nested pyproject.toml without [tool.mllint] is skipped...
    write(tmp_path / "pkg" / "pyproject.toml", "[project]\nname = 'inner'\n")
    assert run(["pkg"], tmp_path).returncode == 0
    assert run(["train.py"], tmp_path / "pkg").returncode == 0
    # ...one with the section is used.
    write(tmp_path / "pkg" / "pyproject.toml", '[tool.mllint]\nselect = ["ML001"]\n')
    assert run(["train.py"], tmp_path / "pkg").returncode == 1


def test_search_starts_at_first_path(tmp_path):
    project(tmp_path / "proj", '[tool.mllint]\nignore = ["ML001"]\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert run([str(tmp_path / "proj" / "train.py")], elsewhere).returncode == 0


def test_no_config_uses_defaults(tmp_path):
    write(tmp_path / "train.py", BAD)
    proc = run(["-v"], tmp_path)
    assert proc.returncode == 1
    assert "config: none" in proc.stderr


def test_explicit_config_overrides_search(tmp_path):
    root = project(tmp_path, '[tool.mllint]\nignore = ["ML001"]\n')
    write(root / "ci" / "pyproject.toml", '[tool.mllint]\nselect = ["ML001"]\n')
    assert run([], root).returncode == 0
    assert run(["--config", "ci/pyproject.toml"], root).returncode == 1


def test_explicit_config_with_bad_key(tmp_path):
    write(tmp_path / "x.toml", "[tool.mllint]\nfoo = 1\n")
    write(tmp_path / "train.py", BAD)
    assert_user_error(run(["--config", "x.toml"], tmp_path), "foo", "x.toml")


# --- in-process: the selection algorithm -------------------------------------------------


RULES = {"ML001": True, "ML002": True, "ML010": False, "ML011": True, "ML000": True}


@pytest.mark.parametrize(
    "layers, expected",
    [
        ([], {"ML000", "ML001", "ML002", "ML011"}),
        ([Layer(select=["ALL"])], set(RULES)),
        ([Layer(select=["ML01"])], {"ML000", "ML010", "ML011"}),
        ([Layer(select=["ML01"], ignore=["ML011"])], {"ML000", "ML010"}),
        ([Layer(select=["ML011"], ignore=["ML01"])], {"ML000", "ML011"}),
        ([Layer(select=["ML001"], ignore=["ML001"])], {"ML000"}),
        ([Layer(extend_select=["ML010"])], {"ML000", "ML001", "ML002", "ML010", "ML011"}),
        ([Layer(ignore=["ML00"]), Layer(select=["ML001"])], {"ML000", "ML001"}),
        ([Layer(ignore=["ML00"]), Layer(extend_select=["ML002"])], {"ML000", "ML002", "ML011"}),
        ([Layer(select=["ML002"]), Layer(ignore=["ML002"])], {"ML000"}),
    ],
)
def test_resolve_codes(layers, expected):
    assert resolve_codes(layers, RULES) == frozenset(expected)


def test_settings_interface(tmp_path):
    project(tmp_path, '[tool.mllint]\ntorch-version = "2.6"\n[tool.mllint.per-file-ignores]\n"t/*.py" = ["ML001"]\n')
    settings = load_settings([str(tmp_path)])
    assert settings.root == tmp_path.resolve() or settings.root == tmp_path
    assert settings.config_path.name == "pyproject.toml"
    assert settings.torch_version == "2.6"
    assert settings.cache_dir == settings.root / ".mllint_cache"
    assert "ML001" in settings.select and "ML000" in settings.select
    assert "ML001" not in settings.codes_for(str(tmp_path / "t" / "a.py"))
    assert "ML000" in settings.codes_for(str(tmp_path / "t" / "a.py"))
    assert "ML001" in settings.codes_for(str(tmp_path / "a.py"))
    assert settings.fingerprint() == load_settings([str(tmp_path)]).fingerprint()
    assert settings.fingerprint() != load_settings([str(tmp_path)], {"ignore": ["ML001"]}).fingerprint()
    with pytest.raises(ConfigError):
        load_settings([str(tmp_path)], {"select": ["NOPE"]})
