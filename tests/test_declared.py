"""The torch floor a project declares in its metadata (mllint/declared.py) and how ML010 uses it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from mllint.declared import declared_torch_floor

UNSAFE = textwrap.dedent(
    """
    import torch
    state = torch.load(args.checkpoint, map_location="cpu")
    other = torch.load(args.other, weights_only=False)
    """
)


def floor(tmp_path):
    found = declared_torch_floor(tmp_path)
    return None if found is None else found.version


@pytest.mark.parametrize(
    "name, text, expected",
    [
        ("pyproject.toml", '[project]\nname = "x"\ndependencies = ["numpy", "torch>=2.6,<3"]\n', "2.6"),
        ("pyproject.toml", '[project]\nname = "x"\n[project.optional-dependencies]\ngpu = ["torch ~= 2.7.1"]\n', "2.7.1"),
        ("pyproject.toml", '[dependency-groups]\ndev = ["torch==2.6.*"]\n', "2.6"),
        ("pyproject.toml", '[tool.poetry.dependencies]\npython = "^3.10"\ntorch = "^2.6"\n', "2.6"),
        ("pyproject.toml", '[tool.poetry.group.gpu.dependencies]\ntorch = {version = ">=2.8", source = "pt"}\n', "2.8"),
        ("pyproject.toml", '[project]\nname = "x"\ndependencies = ["torchvision>=0.21", "torchmetrics>=3"]\n', None),
        ("pyproject.toml", '[project]\nname = "x"\ndependencies = ["torch<2.6"]\n', None),
        ("pyproject.toml", '[project]\nname = "x"\ndependencies = ["torch"]\n', None),
        ("pyproject.toml", "[project\nbroken", None),
        ("setup.cfg", "[options]\ninstall_requires =\n    numpy\n    torch>=2.6  # cpu or cuda\n", "2.6"),
        ("setup.cfg", "[options.extras_require]\ntrain =\n    torch>=2.7\n", "2.7"),
        ("setup.py", 'from setuptools import setup\n_deps = ["numpy>=1", "torch>=2.6"]\nsetup(name="x")\n', "2.6"),
        ("setup.py", 'from setuptools import setup\nsetup(install_requires=["torch >= 1.13.1"])\n', "1.13.1"),
        ("setup.py", "this is not python(", None),
        ("requirements.txt", "-r base.txt\n--extra-index-url https://x\ntorch==2.6.0+cpu\n", "2.6.0"),
        ("requirements-dev.txt", "# torch>=2.9 some day\ntorch>=2.6; sys_platform == 'linux'\n", "2.6"),
        ("requirements.txt", "pytorch-lightning>=2.6\n", None),
    ],
)
def test_each_kind_of_metadata(tmp_path, name, text, expected):
    (tmp_path / name).write_text(text)
    assert floor(tmp_path) == expected


def test_the_lowest_floor_wins_and_says_where_it_was_read(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["torch>=2.6"]\n')
    assert declared_torch_floor(tmp_path).source == "pyproject.toml: torch>=2.6"
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "ci-old.txt").write_text("torch==2.1.2\n")
    found = declared_torch_floor(tmp_path)
    assert (found.version, found.source) == ("2.1.2", "requirements/ci-old.txt: torch==2.1.2")


def test_nothing_declared(tmp_path):
    assert declared_torch_floor(tmp_path) is None
    (tmp_path / "examples").mkdir()  # only the root is read, not the examples' own requirements
    (tmp_path / "examples" / "requirements.txt").write_text("torch>=2.6\n")
    assert declared_torch_floor(tmp_path) is None


def mllint(cwd, *args):
    return subprocess.run([sys.executable, "-m", "mllint", *args], cwd=cwd, capture_output=True, text=True)


def ml010_lines(cwd, *args):
    proc = mllint(cwd, "--select", "ML010", "--format", "json", "--no-cache", *args, "train.py")
    assert proc.returncode in (0, 1), proc.stderr
    return [f["line"] for f in json.loads(proc.stdout)]


def test_a_declared_floor_silences_only_the_missing_argument(tmp_path):
    (tmp_path / "train.py").write_text(UNSAFE)
    assert ml010_lines(tmp_path) == [3, 4]
    (tmp_path / "setup.py").write_text('from setuptools import setup\nsetup(install_requires=["torch>=2.6"])\n')
    assert ml010_lines(tmp_path) == [4]  # the explicit weights_only=False stays
    assert ml010_lines(tmp_path, "--isolated") == [3, 4]  # --isolated reads no project file
    shown = mllint(tmp_path, "--show-settings", "train.py").stdout
    assert "2.6 (inferred from setup.py: torch>=2.6)" in shown


def test_the_configured_torch_version_wins_over_the_declared_one(tmp_path):
    (tmp_path / "train.py").write_text(UNSAFE)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["torch>=2.6"]\n[tool.mllint]\ntorch-version = "2.4"\n')
    assert ml010_lines(tmp_path) == [3, 4]
    assert "torch-version:    2.4\n" in mllint(tmp_path, "--show-settings", "train.py").stdout


def test_nested_requirement_files_count_and_a_tool_pin_does_not_hide_the_floor(tmp_path):
    # Lightning's shape: the floor lives in requirements/pytorch/base.txt, a newer pin for mypy elsewhere
    (tmp_path / "requirements" / "pytorch").mkdir(parents=True)
    (tmp_path / "requirements" / "typing.txt").write_text("mypy==1.11\ntorch==2.9.1\n")
    assert floor(tmp_path) == "2.9.1"
    (tmp_path / "requirements" / "pytorch" / "base.txt").write_text("torch >=2.1.0, <2.10.0\n")
    assert floor(tmp_path) == "2.1.0"
