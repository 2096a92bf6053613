"""Settings: ``[tool.mllint]`` in the nearest pyproject.toml, merged with command-line flags.

The configuration file is the nearest ``pyproject.toml`` with a ``[tool.mllint]`` table,
searched upwards from the first path given on the command line (or the current directory),
unless ``--config`` names one. Its directory is the project root: ``exclude``,
``per-file-ignores`` patterns and ``cache-dir`` are relative to it. Without any such file
the root is the directory of the nearest ``pyproject.toml``, else the current directory.

Rule selection follows Ruff: the configuration file and then the command line each form a
layer; a layer with ``select`` starts afresh from it, ``extend-select`` adds, ``ignore``
removes, and within a layer the most specific selector wins (``ML001`` beats ``ML``,
which beats ``ALL``). Without any ``select`` the rules that are on by default are enabled.
ML000 (a file that cannot be read or parsed) is always reported.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from mllint.registry import PARSE_ERROR_CODE

CONFIG_FILE = "pyproject.toml"
SECTION = ("tool", "mllint")
DEFAULT_CACHE_DIR = ".mllint_cache"

# Directories and files never linted unless named on the command line (Ruff's list, plus ours).
DEFAULT_EXCLUDE: Tuple[str, ...] = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".git-rewrite",
    ".hg",
    ".ipynb_checkpoints",
    ".mllint_cache",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pyenv",
    ".pytest_cache",
    ".pytype",
    ".ruff_cache",
    ".svn",
    ".tox",
    ".venv",
    ".vscode",
    "__pycache__",
    "__pypackages__",
    "_build",
    "buck-out",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
)

KNOWN_KEYS = (
    "select",
    "ignore",
    "extend-select",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "torch-version",
    "cache-dir",
    "notebooks",
)

_TORCH_VERSION = re.compile(r"^[0-9]+\.[0-9]+(\.[0-9]+)?$")
ALL_SELECTOR = "ALL"


class ConfigError(Exception):
    """A user error in the configuration or the command line; the message is one line."""


@dataclass
class Settings:
    select: FrozenSet[str]
    root: Path
    config_path: Optional[Path] = None
    exclude: Tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: Tuple[str, ...] = ()
    per_file_ignores: Tuple[Tuple[str, FrozenSet[str]], ...] = ()
    torch_version: Optional[str] = None
    cache_dir: Path = Path(DEFAULT_CACHE_DIR)
    force_exclude: bool = False
    notebooks: bool = True  # lint *.ipynb files (`notebooks = false` leaves them out)
    _pfi_specs: Optional[list] = field(default=None, init=False, repr=False, compare=False)

    def codes_for(self, path: str) -> FrozenSet[str]:
        """The rule codes enabled for one file, after per-file-ignores."""
        if not self.per_file_ignores:
            return self.select
        rel = relative_to_root(path, self.root)
        if rel is None:
            return self.select
        if self._pfi_specs is None:
            self._pfi_specs = [(compile_patterns([pattern]), codes) for pattern, codes in self.per_file_ignores]
        ignored: set = set()
        for spec, codes in self._pfi_specs:
            if spec.match_file(rel):
                ignored |= codes
        if not ignored:
            return self.select
        return frozenset(c for c in self.select if c == PARSE_ERROR_CODE or not _matches_any(c, ignored))

    def fingerprint(self) -> str:
        """A stable digest of everything that changes the findings of a file (for the cache key)."""
        data = {
            "select": sorted(self.select),
            "root": str(self.root),
            "per_file_ignores": [[p, sorted(c)] for p, c in self.per_file_ignores],
            "torch_version": self.torch_version,
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:32]


def relative_to_root(path: str, root: Path) -> Optional[str]:
    """`path` relative to `root` with forward slashes, or None when it lies outside."""
    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute, str(root))
    except ValueError:  # another drive on Windows
        return None
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return rel.replace(os.sep, "/")


def compile_patterns(patterns: Sequence[str]):
    """A gitignore-style matcher for `patterns` (pathspec is imported only when needed)."""
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(list(patterns))


def _matches_any(code: str, selectors) -> bool:
    return any(_specificity(sel, code) is not None for sel in selectors)


def _specificity(selector: str, code: str) -> Optional[int]:
    if selector == ALL_SELECTOR:
        return 0
    if code.startswith(selector):
        return len(selector)
    return None


# --- reading the file --------------------------------------------------------------------


def _load_toml(path: Path) -> Dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on old Pythons only
        import tomli as tomllib
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc).splitlines()[0] if str(exc) else "invalid TOML"
        line = getattr(exc, "lineno", None)
        if line is None:
            found = re.search(r"\(at line (\d+)", message)
            line = int(found.group(1)) if found else None
        message = re.sub(r"\s*\(at line \d+, column \d+\)$", "", message)
        where = f"{path}:{line}" if line else str(path)
        raise ConfigError(f"{where}: invalid TOML: {message}") from None


def _section(document: Mapping[str, Any], path: Path) -> Optional[Mapping[str, Any]]:
    tool = document.get(SECTION[0])
    if not isinstance(tool, dict) or SECTION[1] not in tool:
        return None
    section = tool[SECTION[1]]
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.mllint] must be a table")
    return section


def find_config(start: Path) -> Tuple[Optional[Path], Optional[Mapping[str, Any]], Path]:
    """(config file, its [tool.mllint] table, project root), searching upwards from `start`."""
    nearest_project: Optional[Path] = None
    directory = start
    while True:
        candidate = directory / CONFIG_FILE
        if candidate.is_file():
            section = _section(_load_toml(candidate), candidate)
            if section is not None:
                return candidate, section, directory
            if nearest_project is None:
                nearest_project = directory
        if directory.parent == directory:
            break
        directory = directory.parent
    return None, None, nearest_project or Path.cwd()


# --- validating values -------------------------------------------------------------------


def _string_list(where: str, key: str, value: Any) -> List[str]:
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, e.g. {key} = [\"ML001\"]")
    return list(value)


def normalize_selectors(selectors: Sequence[str], known: Sequence[str], where: str) -> List[str]:
    """Validate rule codes / prefixes / ALL; one-line error for anything matching no rule."""
    out = []
    for raw in selectors:
        selector = raw.strip().upper()
        if not selector:
            continue
        if selector != ALL_SELECTOR and not any(code.startswith(selector) for code in known):
            raise ConfigError(
                f"{where}: unknown rule code or prefix `{raw.strip()}` (known codes: {', '.join(known)}; "
                "see `mllint rules`)"
            )
        out.append(selector)
    return out


def split_codes(value: Optional[Sequence[str]]) -> Optional[List[str]]:
    """Command-line values: each option may be repeated and may hold comma-separated codes."""
    if value is None:
        return None
    return [part for item in value for part in item.split(",") if part.strip()]


@dataclass
class Layer:
    select: Optional[List[str]] = None
    extend_select: List[str] = field(default_factory=list)
    ignore: List[str] = field(default_factory=list)


def resolve_codes(layers: Sequence[Layer], all_codes: Mapping[str, bool]) -> FrozenSet[str]:
    """Apply selection layers in order; `all_codes` maps each rule code to its default_enabled."""
    enabled = {code for code, on in all_codes.items() if on}
    for layer in layers:
        chosen = set()
        on = (layer.select or []) + layer.extend_select
        for code in all_codes:
            best_on = max((s for s in (_specificity(x, code) for x in on) if s is not None), default=None)
            best_off = max((s for s in (_specificity(x, code) for x in layer.ignore) if s is not None), default=None)
            if best_on is not None and (best_off is None or best_on > best_off):
                chosen.add(code)
            elif best_off is not None:
                continue
            elif layer.select is None and code in enabled:
                chosen.add(code)
        enabled = chosen
    return frozenset(enabled | {PARSE_ERROR_CODE})


def load_settings(paths: Sequence[str], overrides: Optional[Mapping[str, Any]] = None) -> Settings:
    """Settings for a run over `paths`.

    `overrides` holds command-line values: ``config`` (path of a pyproject.toml),
    ``select``/``ignore``/``extend_select`` (lists of codes, None when not given),
    ``force_exclude`` (bool).
    """
    from mllint.registry import all_rules

    overrides = dict(overrides or {})
    explicit = overrides.get("config")
    if explicit:
        config_path = Path(explicit).absolute()
        if not config_path.is_file():
            raise ConfigError(f"config file does not exist: {explicit}")
        section = _section(_load_toml(config_path), config_path) or {}
        root = config_path.parent
    else:
        first = Path(paths[0]) if paths else Path(".")
        start = first.absolute()
        if not start.is_dir():
            start = start.parent
        config_path, section, root = find_config(start)
        section = section or {}
    root = Path(os.path.normpath(str(root.absolute())))
    where = str(config_path) if config_path else "config"

    unknown = [key for key in section if key not in KNOWN_KEYS]
    if unknown:
        raise ConfigError(
            f"{where}: unknown key `{unknown[0]}` in [tool.mllint] (allowed keys: {', '.join(KNOWN_KEYS)})"
        )

    rules = all_rules()
    known = sorted(set(rules) | {PARSE_ERROR_CODE})

    def codes(key: str) -> List[str]:
        return normalize_selectors(_string_list(where, key, section[key]), known, where) if key in section else []

    file_layer = Layer(
        select=codes("select") if "select" in section else None,
        extend_select=codes("extend-select"),
        ignore=codes("ignore"),
    )
    cli_select = split_codes(overrides.get("select"))
    cli_layer = Layer(
        select=normalize_selectors(cli_select, known, "--select") if cli_select is not None else None,
        extend_select=normalize_selectors(split_codes(overrides.get("extend_select")) or [], known, "--extend-select"),
        ignore=normalize_selectors(split_codes(overrides.get("ignore")) or [], known, "--ignore"),
    )
    select = resolve_codes([file_layer, cli_layer], {code: rule.default_enabled for code, rule in rules.items()})

    per_file: List[Tuple[str, FrozenSet[str]]] = []
    if "per-file-ignores" in section:
        table = section["per-file-ignores"]
        if not isinstance(table, dict):
            raise ConfigError(f'{where}: `per-file-ignores` must be a table, e.g. "tests/*.py" = ["ML001"]')
        for pattern, value in table.items():
            per_file.append((pattern, frozenset(normalize_selectors(
                _string_list(where, f"per-file-ignores.{pattern!r}", value), known, where))))
        _check_patterns(where, "per-file-ignores", [p for p, _ in per_file])

    exclude = DEFAULT_EXCLUDE
    if "exclude" in section:
        exclude = tuple(_string_list(where, "exclude", section["exclude"]))
        _check_patterns(where, "exclude", exclude)
    extend_exclude = tuple(_string_list(where, "extend-exclude", section.get("extend-exclude", [])))
    _check_patterns(where, "extend-exclude", extend_exclude)

    torch_version = section.get("torch-version")
    if torch_version is not None:
        if not isinstance(torch_version, str) or not _TORCH_VERSION.match(torch_version):
            raise ConfigError(f'{where}: `torch-version` must be a version string like "2.6", got {torch_version!r}')

    cache_dir_value = os.environ.get("MLLINT_CACHE_DIR") or section.get("cache-dir", DEFAULT_CACHE_DIR)
    if not isinstance(cache_dir_value, str) or not cache_dir_value.strip():
        raise ConfigError(f'{where}: `cache-dir` must be a path string, e.g. cache-dir = ".mllint_cache"')
    cache_dir = Path(os.path.expanduser(cache_dir_value))
    if not cache_dir.is_absolute():
        cache_dir = root / cache_dir

    notebooks = section.get("notebooks", True)
    if not isinstance(notebooks, bool):
        raise ConfigError(f"{where}: `notebooks` must be true or false, got {notebooks!r}")

    return Settings(
        notebooks=notebooks,
        select=select,
        root=root,
        config_path=config_path,
        exclude=exclude,
        extend_exclude=extend_exclude,
        per_file_ignores=tuple(per_file),
        torch_version=torch_version,
        cache_dir=cache_dir,
        force_exclude=bool(overrides.get("force_exclude", False)),
    )


def _check_patterns(where: str, key: str, patterns: Sequence[str]) -> None:
    for pattern in patterns:
        try:
            compile_patterns([pattern])
        except Exception as exc:  # pathspec raises several types for malformed patterns
            raise ConfigError(f"{where}: bad pattern {pattern!r} in `{key}`: {exc}") from None
