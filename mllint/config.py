"""Settings: the nearest ``mllint.toml`` or ``[tool.mllint]`` in pyproject.toml, and the command line.

Each file is linted with the settings of the nearest configuration file in its directory or
above (`Resolver`): in each directory ``mllint.toml`` (keys at the top level) is looked for
first, then a ``pyproject.toml`` with a ``[tool.mllint]`` table. The file's directory is the
root of those settings: ``exclude``, ``per-file-ignores`` patterns and ``cache-dir`` are
relative to it. Files with no configuration above them get the defaults, rooted at the
nearest ``pyproject.toml``'s directory, else the current directory. ``--config`` names one
file for every path; ``--isolated`` uses no file at all. Command-line flags apply on top of
every configuration.

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

from mllint.findings import PARSE_ERROR_CODE

CONFIG_FILE = "pyproject.toml"
CONFIG_FILES = ("mllint.toml", CONFIG_FILE)  # looked for in this order in each directory
SECTION = ("tool", "mllint")
DEFAULT_CACHE_DIR = ".mllint_cache"
# Python files larger than this are not parsed (a notebook: its code cells). LibCST's tree takes
# 0.6-0.7 GiB per MB of dense code, so the default keeps one process under 1 GiB: a generated
# 1.43 MiB file of 6,500 training functions takes 24 s and 966 MiB (`-j 1`, every rule). The
# largest hand-written files seen are 1.31 MiB (torch's common_methods_invocations.py: 6.8 s,
# 813 MiB) and 0.6 MB (in the 237 mirrored ML projects); above come generated tables and data.
DEFAULT_MAX_FILE_SIZE = 3 * 1024 * 1024 // 2

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
    "max-file-size",
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
    torch_version_source: Optional[str] = None  # where an inferred torch-version was read ("setup.py: torch>=2.6")
    cache_dir: Path = Path(DEFAULT_CACHE_DIR)
    force_exclude: bool = False
    notebooks: bool = True  # lint *.ipynb files (`notebooks = false` leaves them out)
    max_file_size: int = DEFAULT_MAX_FILE_SIZE  # bytes; larger files are skipped with a warning
    _pfi_specs: Optional[list] = field(default=None, init=False, repr=False, compare=False)

    def settings_for(self, path: str) -> "Settings":
        """These settings (the interface of `Resolver`, for a run with one configuration)."""
        return self

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
            "max_file_size": self.max_file_size,
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


# --- validating values -------------------------------------------------------------------


def _string_list(where: str, key: str, value: Any, example: str = "ML001") -> List[str]:
    """`value` as a list of strings, or a ConfigError whose example fits the key (a rule code for
    the rule selections, a path pattern for the excludes)."""
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, e.g. {key} = [\"{example}\"]")
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


@dataclass
class CommandLine:
    """The command-line settings, validated once and applied on top of every configuration."""

    layer: Layer = field(default_factory=Layer)
    exclude: Optional[Tuple[str, ...]] = None  # --exclude: replaces the configured `exclude`
    extend_exclude: Tuple[str, ...] = ()  # --extend-exclude: added to the configured ones
    per_file_ignores: Optional[Tuple[Tuple[str, FrozenSet[str]], ...]] = None  # replaces
    extend_per_file_ignores: Tuple[Tuple[str, FrozenSet[str]], ...] = ()  # added
    config: Optional[Path] = None  # --config: this file for everything
    isolated: bool = False  # --isolated: no configuration file at all
    force_exclude: bool = False
    max_file_size: Optional[int] = None  # --max-file-size: replaces the configured one


_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(b|kb|kib|mb|mib|gb|gib)?\s*$", re.IGNORECASE)
_SIZE_UNITS = {None: 1, "b": 1, "kb": 1000, "kib": 1024, "mb": 1000 ** 2, "mib": 1024 ** 2,
               "gb": 1000 ** 3, "gib": 1024 ** 3}


def parse_size(value: Any, where: str) -> int:
    """A size in bytes: an integer, or a string with a unit (``512KiB``, ``2 MiB``, ``1.5MB``)."""
    size = None
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    elif isinstance(value, str):
        match = _SIZE.match(value)
        if match:
            size = int(float(match.group(1)) * _SIZE_UNITS[(match.group(2) or "b").lower()])
    if size is None or size < 1:
        name = where if where.startswith("--") else f"{where}: `max-file-size`"
        raise ConfigError(f"{name} must be a positive size in bytes, or with a unit"
                          f' (KiB, MiB, kB, MB), e.g. "2MiB"; got {value!r}')
    return size


def split_patterns(value: Optional[Sequence[str]]) -> Optional[List[str]]:
    """--exclude/--extend-exclude values: repeatable, comma-separated."""
    if value is None:
        return None
    return [part.strip() for item in value for part in item.split(",") if part.strip()]


def parse_per_file_ignores(values: Sequence[str], known: Sequence[str], option: str):
    """Ruff's ``PATTERN:CODE`` pairs, comma-separated and repeatable; a bare code after a pair
    adds to that pair's pattern (``"tests/*:ML001,ML002"``)."""
    pairs: List[Tuple[str, List[str]]] = []
    for value in values:
        for item in value.split(","):
            item = item.strip()
            if not item:
                continue
            pattern, colon, code = item.rpartition(":")
            if not colon:
                if not pairs:
                    raise ConfigError(f"{option}: expected PATTERN:CODES (e.g. \"tests/*:ML001\"), got {value!r}")
                pairs[-1][1].append(item)
                continue
            if not pattern.strip() or not code.strip():
                raise ConfigError(f"{option}: expected PATTERN:CODES (e.g. \"tests/*:ML001\"), got {value!r}")
            pairs.append((pattern.strip(), [code]))
    out = [(pattern, frozenset(normalize_selectors(codes, known, option))) for pattern, codes in pairs]
    _check_patterns(option, None, [pattern for pattern, _ in out])
    return tuple(out)


def command_line(overrides: Optional[Mapping[str, Any]] = None) -> CommandLine:
    """Validate command-line values (see `load_settings` for the keys)."""
    from mllint.registry import catalogue

    overrides = dict(overrides or {})
    known = sorted(set(catalogue()) | {PARSE_ERROR_CODE})
    cli_select = split_codes(overrides.get("select"))
    layer = Layer(
        select=normalize_selectors(cli_select, known, "--select") if cli_select is not None else None,
        extend_select=normalize_selectors(split_codes(overrides.get("extend_select")) or [], known, "--extend-select"),
        ignore=normalize_selectors(split_codes(overrides.get("ignore")) or [], known, "--ignore"),
    )
    exclude = split_patterns(overrides.get("exclude"))
    extend_exclude = split_patterns(overrides.get("extend_exclude")) or []
    _check_patterns("--exclude", None, exclude or [])
    _check_patterns("--extend-exclude", None, extend_exclude)
    per_file = overrides.get("per_file_ignores")
    config = overrides.get("config")
    isolated = bool(overrides.get("isolated", False))
    if config and isolated:
        raise ConfigError("--config and --isolated cannot be used together")
    config_path = None
    if config:
        config_path = Path(os.path.normpath(str(Path(config).absolute())))
        if not config_path.is_file():
            raise ConfigError(f"config file does not exist: {config}")
    return CommandLine(
        layer=layer,
        exclude=tuple(exclude) if exclude is not None else None,
        extend_exclude=tuple(extend_exclude),
        per_file_ignores=parse_per_file_ignores(per_file, known, "--per-file-ignores") if per_file else None,
        extend_per_file_ignores=parse_per_file_ignores(
            overrides.get("extend_per_file_ignores") or [], known, "--extend-per-file-ignores"),
        config=config_path,
        isolated=isolated,
        force_exclude=bool(overrides.get("force_exclude", False)),
        max_file_size=(parse_size(overrides["max_file_size"], "--max-file-size")
                       if overrides.get("max_file_size") is not None else None),
    )


def _config_table(path: Path) -> Optional[Mapping[str, Any]]:
    """The mllint table of a configuration file: ``[tool.mllint]`` of a pyproject.toml (None
    when absent); the top level of any other file (``mllint.toml``), or its ``[tool.mllint]``
    table when that is all it holds."""
    document = _load_toml(path)
    if path.name == CONFIG_FILE:
        return _section(document, path)
    if set(document) == {SECTION[0]} and isinstance(document[SECTION[0]], dict) and SECTION[1] in document[SECTION[0]]:
        return _section(document, path) or {}
    return document


def build_settings(
    config_path: Optional[Path], section: Mapping[str, Any], root: Path, cli: CommandLine
) -> Settings:
    """Settings from one configuration table (empty: the defaults) and the command line."""
    from mllint.registry import catalogue

    root = Path(os.path.normpath(str(root.absolute())))
    where = str(config_path) if config_path else "config"
    table = "[tool.mllint]" if config_path is None or config_path.name == CONFIG_FILE else "the configuration"

    unknown = [key for key in section if key not in KNOWN_KEYS]
    if unknown:
        raise ConfigError(
            f"{where}: unknown key `{unknown[0]}` in {table} (allowed keys: {', '.join(KNOWN_KEYS)})"
        )

    defaults = catalogue()  # code -> on by default
    known = sorted(set(defaults) | {PARSE_ERROR_CODE})

    def codes(key: str) -> List[str]:
        return normalize_selectors(_string_list(where, key, section[key]), known, where) if key in section else []

    file_layer = Layer(
        select=codes("select") if "select" in section else None,
        extend_select=codes("extend-select"),
        ignore=codes("ignore"),
    )
    select = resolve_codes([file_layer, cli.layer], defaults)
    if not select - {PARSE_ERROR_CODE}:
        if cli.layer.select is not None or config_path is None:
            source = "the command line"
        elif cli.layer.ignore:
            source = f"{where} with the command line"
        else:
            source = where
        raise ConfigError(f"no rules are selected: {source} enables none (ML000, always on, does not count)")

    per_file: List[Tuple[str, FrozenSet[str]]] = []
    if "per-file-ignores" in section:
        pfi = section["per-file-ignores"]
        if not isinstance(pfi, dict):
            raise ConfigError(f'{where}: `per-file-ignores` must be a table, e.g. "tests/*.py" = ["ML001"]')
        for pattern, value in pfi.items():
            per_file.append((pattern, frozenset(normalize_selectors(
                _string_list(where, f"per-file-ignores.{pattern!r}", value), known, where))))
        _check_patterns(where, "per-file-ignores", [p for p, _ in per_file])
    if cli.per_file_ignores is not None:
        per_file = list(cli.per_file_ignores)
    per_file.extend(cli.extend_per_file_ignores)

    exclude = DEFAULT_EXCLUDE
    if "exclude" in section:
        exclude = tuple(_string_list(where, "exclude", section["exclude"], "build/"))
        _check_patterns(where, "exclude", exclude)
    if cli.exclude is not None:
        exclude = cli.exclude
    extend_exclude = tuple(_string_list(where, "extend-exclude", section.get("extend-exclude", []), "build/"))
    _check_patterns(where, "extend-exclude", extend_exclude)
    extend_exclude += cli.extend_exclude

    torch_version = section.get("torch-version")
    if torch_version is not None:
        if not isinstance(torch_version, str) or not _TORCH_VERSION.match(torch_version):
            raise ConfigError(f'{where}: `torch-version` must be a version string like "2.6", got {torch_version!r}')
    torch_version_source = None
    if torch_version is None and not cli.isolated:
        from mllint.declared import declared_torch_floor

        declared = declared_torch_floor(root)
        if declared is not None:
            torch_version, torch_version_source = declared.version, declared.source

    cache_dir_value = os.environ.get("MLLINT_CACHE_DIR") or section.get("cache-dir", DEFAULT_CACHE_DIR)
    if not isinstance(cache_dir_value, str) or not cache_dir_value.strip():
        raise ConfigError(f'{where}: `cache-dir` must be a path string, e.g. cache-dir = ".mllint_cache"')
    cache_dir = Path(os.path.expanduser(cache_dir_value))
    if not cache_dir.is_absolute():
        cache_dir = root / cache_dir

    notebooks = section.get("notebooks", True)
    if not isinstance(notebooks, bool):
        raise ConfigError(f"{where}: `notebooks` must be true or false, got {notebooks!r}")

    max_file_size = DEFAULT_MAX_FILE_SIZE
    if "max-file-size" in section:
        max_file_size = parse_size(section["max-file-size"], where)
    if cli.max_file_size is not None:
        max_file_size = cli.max_file_size

    return Settings(
        notebooks=notebooks,
        max_file_size=max_file_size,
        select=select,
        root=root,
        config_path=config_path,
        exclude=exclude,
        extend_exclude=extend_exclude,
        per_file_ignores=tuple(per_file),
        torch_version=torch_version,
        torch_version_source=torch_version_source,
        cache_dir=cache_dir,
        force_exclude=cli.force_exclude,
    )


class Resolver:
    """Which settings govern which file: the nearest configuration file in its directory or above.

    In each directory ``mllint.toml`` (keys at the top level) is looked for first, then a
    ``pyproject.toml`` with a ``[tool.mllint]`` table (one without the table is passed over).
    The directory holding the file found is the root of its settings. Configurations are not
    merged: the nearest one wins, and the command line applies on top of it. A directory with
    no configuration above it gets the defaults, rooted at the nearest ``pyproject.toml``'s
    directory, else the current directory. ``--config`` (one file for every path) and
    ``--isolated`` (no file at all, rooted at the current directory) switch the search off.

    Each directory is looked up once and each configuration file read once per run.
    """

    def __init__(self, overrides: Optional[Mapping[str, Any]] = None, *, cli: Optional[CommandLine] = None,
                 fixed: Optional[Settings] = None):
        self.cli = cli if cli is not None else command_line(overrides)
        self._fixed = fixed
        self._nearest: Dict[str, Tuple[Optional[Path], Path]] = {}  # directory -> (config file, root)
        self._tables: Dict[Path, Optional[Mapping[str, Any]]] = {}
        self._settings: Dict[Tuple[Optional[Path], Path], Settings] = {}
        if fixed is None and self.cli.config is not None:
            config = self.cli.config
            self._fixed = build_settings(config, _config_table(config) or {}, config.parent, self.cli)
        elif fixed is None and self.cli.isolated:
            self._fixed = build_settings(None, {}, Path.cwd(), self.cli)

    @classmethod
    def single(cls, settings: Settings) -> "Resolver":
        """A resolver giving `settings` for every path (for callers holding one Settings)."""
        return cls(cli=CommandLine(force_exclude=settings.force_exclude), fixed=settings)

    @property
    def force_exclude(self) -> bool:
        return self.cli.force_exclude

    @property
    def hierarchical(self) -> bool:
        return self._fixed is None

    def settings_for(self, path: str) -> Settings:
        """The settings of the file `path` (those of its directory)."""
        return self.settings_for_dir(os.path.dirname(os.path.abspath(path)))

    def settings_for_dir(self, directory: str) -> Settings:
        """The settings governing the entries of `directory`."""
        if self._fixed is not None:
            return self._fixed
        config, root = self._lookup(os.path.normpath(os.path.abspath(directory)))
        key = (config, root)
        if key not in self._settings:
            table = self._tables.get(config) if config is not None else None
            self._settings[key] = build_settings(config, table or {}, root, self.cli)
        return self._settings[key]

    def codes_for(self, path: str) -> FrozenSet[str]:
        """The rule codes enabled for one file (its own settings, after per-file-ignores)."""
        return self.settings_for(path).codes_for(path)

    def used(self) -> List[Settings]:
        """The settings resolved so far, in the order they were first needed."""
        return [self._fixed] if self._fixed is not None else list(self._settings.values())

    def top_root(self, directory: str) -> Path:
        """The root of the outermost configuration that encloses `directory` through a chain of
        nested ones (for walking upwards: --force-exclude, .gitignore files outside git)."""
        if self._fixed is not None:
            return self._fixed.root
        config, root = self._lookup(os.path.normpath(os.path.abspath(directory)))
        while config is not None and root.parent != root:
            outer, outer_root = self._lookup(str(root.parent))
            if outer is None:
                break
            config, root = outer, outer_root
        return root

    def _lookup(self, directory: str) -> Tuple[Optional[Path], Path]:
        """(nearest config file, root) for `directory`, memoised for it and every parent walked."""
        walked = []
        current = directory
        found: Optional[Tuple[Optional[Path], Path]] = None
        while True:
            if current in self._nearest:
                found = self._nearest[current]
                break
            walked.append(current)
            own = self._config_in(current)
            if own is not None:
                found = (own, Path(current))
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        if found is None:
            found = (None, Path(os.path.normpath(os.getcwd())))
        # Below no configuration the defaults apply, rooted at the nearest pyproject.toml (or cwd).
        for folder in reversed(walked):
            if found[0] is None and os.path.isfile(os.path.join(folder, CONFIG_FILE)):
                found = (None, Path(folder))
            self._nearest[folder] = found
        return self._nearest[directory]

    def _config_in(self, directory: str) -> Optional[Path]:
        """The configuration file of `directory` itself, or None (read once)."""
        for name in CONFIG_FILES:
            candidate = Path(directory) / name
            if candidate.is_file():
                if candidate not in self._tables:
                    self._tables[candidate] = _config_table(candidate)
                if self._tables[candidate] is not None:
                    return candidate
        return None


def load_settings(paths: Sequence[str], overrides: Optional[Mapping[str, Any]] = None) -> Settings:
    """The settings governing the first of `paths` (or the current directory).

    `overrides` holds command-line values: ``config`` (path of a configuration file),
    ``select``/``ignore``/``extend_select`` (lists of codes, None when not given),
    ``exclude``/``extend_exclude`` (lists of comma-separated patterns; ``exclude`` None when not
    given), ``per_file_ignores``/``extend_per_file_ignores`` (lists of ``PATTERN:CODES``),
    ``isolated`` and ``force_exclude`` (bools). For a run over many paths use `Resolver`.
    """
    resolver = Resolver(overrides)
    first = Path(paths[0]) if paths else Path(".")
    start = first.absolute()
    if not start.is_dir():
        start = start.parent
    return resolver.settings_for_dir(str(start))


def _check_patterns(where: str, key: Optional[str], patterns: Sequence[str]) -> None:
    for pattern in patterns:
        try:
            compile_patterns([pattern])
        except Exception as exc:  # pathspec raises several types for malformed patterns
            inside = f" in `{key}`" if key else ""
            raise ConfigError(f"{where}: bad pattern {pattern!r}{inside}: {exc}") from None
