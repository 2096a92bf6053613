"""The oldest PyTorch a project declares it runs with, read from its packaging metadata.

``torch-version`` in ``[tool.mllint]`` tells the rules which defaults the code runs with (ML010:
``torch.load`` loads weights only by default from 2.6). When it is not set, the project's own
requirement on torch is used instead, as Ruff infers ``target-version`` from ``requires-python``.
The files read, all in the settings root (the directory of the nearest ``pyproject.toml``):

- ``pyproject.toml``: ``[project]`` dependencies and optional dependencies, ``[dependency-groups]``,
  and Poetry's ``[tool.poetry.dependencies]`` / ``[tool.poetry.group.*.dependencies]``;
- ``setup.cfg``: ``install_requires`` and ``extras_require``;
- ``setup.py``: every string literal that parses as a requirement on torch (``"torch>=2.6"`` in
  ``install_requires``, in an extras table or in a dependency list the script builds);
- ``requirements*.txt`` and ``requirements/**/*.txt`` (Lightning keeps its floor in
  ``requirements/pytorch/base.txt`` and a newer pin for type checking in ``requirements/typing.txt``).

Each requirement that bounds torch from below (``>=``, ``>``, ``==``, ``~=``, Poetry's ``^``/``~``)
gives a floor; an unversioned ``torch`` or one bounded only from above gives none. The declared
floor is the *lowest* floor found, so a project that somewhere allows an older torch (a pinned CI
file, an old extra) keeps every finding that older torch would justify. Files that cannot be read
or parsed are passed over: this is a hint for the rules, never an error for the user.
"""

from __future__ import annotations

import ast
import configparser
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, List, Optional, Tuple

_TORCH_NAMES = {"torch", "pytorch"}
_FLOOR_OPS = {">=", ">", "==", "~=", "==="}
_MAX_BYTES = 1 << 20  # a metadata file bigger than this is not metadata
_MAX_FILES = 100  # requirements/**/*.txt read at most


@dataclass(frozen=True)
class DeclaredTorch:
    version: str  # "2.6"
    source: str  # "setup.py: torch>=2.6"


def declared_torch_floor(root: Path) -> Optional[DeclaredTorch]:
    """The lowest torch version the project in `root` declares, with where it was read."""
    best: Optional[Tuple[Tuple[int, ...], str, str]] = None
    for filename, requirement in _requirements(root):
        floor = _floor(requirement)
        if floor is None:
            continue
        key = _key(floor)
        if best is None or key < best[0]:
            best = (key, floor, f"{filename}: {requirement.strip()}")
    if best is None:
        return None
    return DeclaredTorch(best[1], best[2])


# --- floors ---------------------------------------------------------------------------------


def _floor(requirement: str) -> Optional[str]:
    """The lowest version `requirement` (PEP 508, or a Poetry constraint) allows, if torch."""
    text = requirement.strip()
    if "torch" not in text.lower():  # no torch name in it: not worth importing packaging (50 ms)
        return None
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        parsed = Requirement(text)
    except InvalidRequirement:
        return None
    if parsed.name.lower() not in _TORCH_NAMES:
        return None
    floors = [spec.version for spec in parsed.specifier if spec.operator in _FLOOR_OPS]
    floors = [_clean(v) for v in floors]
    floors = [v for v in floors if v]
    return max(floors, key=_key) if floors else None


def _poetry_floor(constraint: Any) -> Optional[str]:
    """The floor of a Poetry constraint: ``"^2.6"``, ``">=2.6,<3"``, ``{version = "~2.6"}``."""
    if isinstance(constraint, dict):
        constraint = constraint.get("version")
    if not isinstance(constraint, str):
        return None
    floors = []
    for part in constraint.split(","):
        part = part.strip()
        match = re.match(r"^(\^|~=|~|>=|>|==|=)?\s*v?(\d+(?:\.\d+)*)", part)
        if match:
            cleaned = _clean(match.group(2))
            if cleaned:
                floors.append(cleaned)
    return max(floors, key=_key) if floors else None


def _clean(version: str) -> Optional[str]:
    match = re.match(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?", version.strip())
    if not match:
        return None
    return ".".join(part for part in match.groups() if part is not None)


def _key(version: str) -> Tuple[int, ...]:
    parts = tuple(int(p) for p in version.split("."))
    return parts + (0,) * (3 - len(parts))


# --- reading the files ----------------------------------------------------------------------


def _requirements(root: Path) -> Iterator[Tuple[str, str]]:
    """(file name, requirement text) for every declared requirement on torch in `root`."""
    yield from _from_pyproject(root / "pyproject.toml")
    yield from _from_setup_cfg(root / "setup.cfg")
    yield from _from_setup_py(root / "setup.py")
    files = sorted(root.glob("requirements*.txt")) + sorted((root / "requirements").rglob("*.txt"))[:_MAX_FILES]
    for path in files:
        yield from _from_requirements_txt(path, root)


def _read(path: Path) -> Optional[str]:
    try:
        if not path.is_file() or path.stat().st_size > _MAX_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _from_pyproject(path: Path) -> Iterator[Tuple[str, str]]:
    text = _read(path)
    if text is None:
        return
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on old Pythons only
        import tomli as tomllib
    try:
        doc = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return
    project = _table(doc, "project")
    lists: List[Any] = [project.get("dependencies")]
    lists += list(_table(project, "optional-dependencies").values())
    lists += list(_table(doc, "dependency-groups").values())
    for values in lists:
        for value in values if isinstance(values, list) else ():
            if isinstance(value, str):
                yield path.name, value
    poetry = _table(_table(doc, "tool"), "poetry")
    tables = [_table(poetry, "dependencies"), _table(poetry, "dev-dependencies")]
    tables += [_table(group, "dependencies") for group in _table(poetry, "group").values() if isinstance(group, dict)]
    for table in tables:
        for name, constraint in table.items():
            if str(name).lower() in _TORCH_NAMES:
                floor = _poetry_floor(constraint)
                if floor is not None:
                    yield path.name, f"{name}>={floor}"


def _table(doc: Any, key: str) -> dict:
    value = doc.get(key) if isinstance(doc, dict) else None
    return value if isinstance(value, dict) else {}


def _from_setup_cfg(path: Path) -> Iterator[Tuple[str, str]]:
    text = _read(path)
    if text is None:
        return
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return
    values: List[str] = []
    if parser.has_option("options", "install_requires"):
        values.append(parser.get("options", "install_requires"))
    if parser.has_section("options.extras_require"):
        values.extend(v for _, v in parser.items("options.extras_require"))
    for value in values:
        yield from ((path.name, line) for line in _lines(value.splitlines()))


def _from_setup_py(path: Path) -> Iterator[Tuple[str, str]]:
    text = _read(path)
    if text is None:
        return
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "torch" in node.value.lower():
            if len(node.value) < 200 and "\n" not in node.value.strip():
                yield path.name, node.value


def _from_requirements_txt(path: Path, root: Path) -> Iterator[Tuple[str, str]]:
    text = _read(path)
    if text is None:
        return
    name = path.relative_to(root).as_posix()
    yield from ((name, line) for line in _lines(text.splitlines()))


def _lines(lines: Iterable[str]) -> Iterator[str]:
    """Requirement lines without comments, options (``-r``, ``--index-url``) or blanks."""
    for line in lines:
        line = line.split(" #", 1)[0].strip()
        if line and not line.startswith(("#", "-")):
            yield line
