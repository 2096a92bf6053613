"""Which files to lint: walk the given paths, honouring .gitignore files and excludes.

- A directory is walked recursively for ``*.py`` files and Jupyter notebooks (``*.ipynb``,
  linted as their code cells joined into one program, see mllint/notebook.py; the
  ``notebooks = false`` setting leaves them out). Directories and files matched by
  ``exclude`` (default: Ruff's list of tool and virtualenv directories) or ``extend-exclude``
  (gitignore-style patterns relative to the root of the configuration governing the
  directory they are in: a sub-folder with its own configuration uses its own excludes), or by
  a ``.gitignore`` file (the ones in the walked directories, in their parents up to the git
  root, and ``.git/info/exclude``) are skipped.
- A file named on the command line is always linted, whatever its extension, unless
  ``--force-exclude`` is given and it (or a parent directory) is excluded, or it is a
  notebook and ``notebooks = false``.
- Symbolic links are followed; a directory is entered once, so link loops cannot hang.
- The result is sorted and free of duplicates (two paths to the same file count once).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from mllint.config import ConfigError, Resolver, Settings, compile_patterns, relative_to_root

SOURCE_SUFFIX = ".py"
NOTEBOOK_SUFFIX = ".ipynb"
_BOTH = (SOURCE_SUFFIX, NOTEBOOK_SUFFIX)
_GLOB_CHARS = set("*?[]!/\\")

# (directory, compiled spec) pairs, outermost first.
Chain = Tuple[Tuple[str, object], ...]


class DiscoveryError(ConfigError):
    """A path on the command line that cannot be linted."""


class _Excluder:
    """`exclude` + `extend-exclude` patterns; plain names are matched without pathspec."""

    def __init__(self, settings: Settings):
        patterns = list(settings.exclude) + list(settings.extend_exclude)
        self.names = {p for p in patterns if not (set(p) & _GLOB_CHARS)}
        complex_patterns = [p for p in patterns if p not in self.names]
        self.spec = compile_patterns(complex_patterns) if complex_patterns else None
        self.root = settings.root

    def excluded(self, path: str, is_dir: bool, base: str) -> bool:
        if os.path.basename(path) in self.names:
            return True
        if self.spec is None:
            return False
        rel = relative_to_root(path, self.root)
        if rel is None:  # outside the project: match relative to the walked argument
            rel = os.path.relpath(path, base).replace(os.sep, "/")
        return bool(self.spec.match_file(rel + "/" if is_dir else rel))


class _GitIgnores:
    """Reads and caches .gitignore files; answers "is this path ignored" for a chain of them."""

    def __init__(self, root_for: Callable[[str], Path]) -> None:
        self.root_for = root_for  # directory -> the project root above it
        self._specs: Dict[str, Optional[object]] = {}

    def spec_for(self, directory: str, name: str = ".gitignore") -> Optional[object]:
        key = os.path.join(directory, name)
        if key not in self._specs:
            spec = None
            try:
                with open(key, encoding="utf-8", errors="replace") as handle:
                    lines = handle.read().splitlines()
                if any(line.strip() and not line.startswith("#") for line in lines):
                    spec = compile_patterns(lines)
            except (OSError, ValueError):
                spec = None
            self._specs[key] = spec
        return self._specs[key]

    def chain_to(self, directory: str) -> Chain:
        """The .gitignore specs that apply inside `directory` (its own included), outermost first."""
        directory = os.path.abspath(directory)
        ancestors = []
        current = directory
        git_root = None
        while True:
            ancestors.append(current)
            if os.path.exists(os.path.join(current, ".git")):
                git_root = current
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        if git_root is None:
            # Outside a git repository: the .gitignore files up to the project root apply
            # (only the directory's own one when the directory lies outside the project).
            root = self.root_for(directory)
            ancestors = [a for a in ancestors if a == directory or relative_to_root(a, root) is not None]
        chain: List[Tuple[str, object]] = []
        if git_root is not None:
            info = self.spec_for(os.path.join(git_root, ".git", "info"), "exclude")
            if info is not None:
                chain.append((git_root, info))
        for folder in reversed(ancestors):
            spec = self.spec_for(folder)
            if spec is not None:
                chain.append((folder, spec))
        return tuple(chain)

    def extend(self, chain: Chain, directory: str) -> Chain:
        spec = self.spec_for(directory)
        return chain + ((os.path.abspath(directory), spec),) if spec is not None else chain

    @staticmethod
    def ignored(chain: Chain, path: str, is_dir: bool) -> bool:
        absolute = os.path.abspath(path)
        for folder, spec in reversed(chain):  # the deepest .gitignore decides first
            rel = os.path.relpath(absolute, folder).replace(os.sep, "/")
            if rel.startswith("../"):
                continue
            result = spec.check_file(rel + "/" if is_dir else rel)
            if result.include is not None:
                return bool(result.include)
        return False


def discover(
    paths: Sequence[str],
    settings,
    on_warning: Optional[Callable[[str], None]] = None,
) -> List[str]:
    """The files to lint under `paths`, sorted, without duplicates.

    `settings` is a `Resolver` (each directory's entries are judged by the settings governing
    that directory) or one `Settings` for everything."""
    warn = on_warning or (lambda message: None)
    resolver = Resolver.single(settings) if isinstance(settings, Settings) else settings
    excluders: Dict[int, _Excluder] = {}

    def excluder_for(directory: str) -> _Excluder:
        governing = resolver.settings_for_dir(directory)
        if id(governing) not in excluders:
            excluders[id(governing)] = _Excluder(governing)
        return excluders[id(governing)]

    gitignores = _GitIgnores(resolver.top_root)
    visited_dirs: Set[Tuple[int, int]] = set()
    found: Dict[str, str] = {}  # real path -> display path

    def add(path: str) -> None:
        real = os.path.realpath(path)
        display = os.path.normpath(path)
        if real not in found or display < found[real]:
            found[real] = display

    def force_excluded(path: str, is_dir: bool) -> bool:
        """For --force-exclude: is the path, or a parent below the project root, excluded or gitignored?"""
        current, current_is_dir = os.path.abspath(path), is_dir
        top = resolver.top_root(os.path.dirname(current))
        root = str(top)
        while True:
            parent = os.path.dirname(current)
            if excluder_for(parent).excluded(current, current_is_dir, parent) or gitignores.ignored(
                gitignores.chain_to(parent), current, current_is_dir
            ):
                return True
            if parent == current or parent == root or relative_to_root(parent, top) is None:
                return False
            current, current_is_dir = parent, True

    for given in paths:
        if not os.path.exists(given):
            raise DiscoveryError(f"path does not exist: {given}")
        is_dir = os.path.isdir(given)
        if resolver.force_exclude and force_excluded(given, is_dir):
            continue
        if not is_dir:
            if given.lower().endswith(NOTEBOOK_SUFFIX) and not resolver.settings_for(given).notebooks:
                continue
            add(given)
            continue
        base = os.path.abspath(given)
        # (directory, the .gitignore chain of its parent, or of itself when complete=True)
        stack = [(given, gitignores.chain_to(base), True)]
        while stack:
            directory, chain, complete = stack.pop()
            try:
                info = os.stat(directory)
            except OSError:
                continue
            key = (info.st_dev, info.st_ino)
            if key in visited_dirs:
                continue
            visited_dirs.add(key)
            if not complete:
                chain = gitignores.extend(chain, directory)
            try:
                with os.scandir(directory) as entries:
                    listing = sorted(entries, key=lambda e: e.name)
            except OSError as exc:
                warn(f"cannot read directory {directory}: {exc.strerror or exc}")
                continue
            subdirs = []
            excluder = excluder_for(directory)
            # the settings governing this directory say whether its notebooks are linted
            suffixes = _BOTH if resolver.settings_for_dir(directory).notebooks else (SOURCE_SUFFIX,)
            for entry in listing:
                try:  # both follow symbolic links
                    entry_is_dir = entry.is_dir()
                    if not entry_is_dir and not (entry.name.endswith(suffixes) and entry.is_file()):
                        continue
                except OSError:  # link loop, permission
                    continue
                if excluder.excluded(entry.path, entry_is_dir, base):
                    continue
                if chain and gitignores.ignored(chain, entry.path, entry_is_dir):
                    continue
                if entry_is_dir:
                    subdirs.append((entry.path, chain, False))
                else:
                    add(entry.path)
            stack.extend(reversed(subdirs))
    return sorted(found.values())


__all__ = ["DiscoveryError", "discover"]


def is_notebook(path: str) -> bool:
    """Whether `path` is a Jupyter notebook (``.ipynb``, any case). Here, at the bottom
    of the house (mllint/notebook.py and the engine re-export it), so that a warm run need not
    import the notebook module."""
    return str(path).lower().endswith(".ipynb")
