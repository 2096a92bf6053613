"""The project model: the layer between the files and the per-file semantic model.

    files -> facts (cached) -> project model -> per-file model -> rules -> findings

``find_root(path)`` is the nearest folder above a file holding ``pyproject.toml``,
``setup.cfg``, ``setup.py`` or ``.git``. ``project_for(root, settings)`` reads every Python
file and notebook of that project that the settings do not exclude (``.gitignore`` honoured,
as discovery does), with facts cached by content hash (store.py), and returns a ``Project``
(index.py); ``key_for(path, ...)`` names the ``ProjectView`` one file asks (view.py),
which ``view_from_key`` gives wherever the project was built or installed. A file with
no project root (one file in a temporary folder, stdin) gets no view: every rule then judges
the file alone, as before.
"""

from __future__ import annotations

import functools
import os
from typing import Dict, Optional, Tuple

from mllint.project.index import Project
from mllint.project.view import ProjectView

ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")
MAX_PROJECT_FILES = 20000  # a "project" larger than this (a home folder with a .git) is not read
# Up to this many files to read, this process loads the rules before forking the facts workers, so
# that each inherits them (about 0.3 CPU-seconds a worker, a third of timm's facts phase); a larger
# project's run takes minutes, and this process, which holds every file's facts, stays smaller
# without LibCST and the rules (the torch package: 1,028 against 1,000 MiB).
PRELOAD_MAX_FILES = 1000

_PROJECTS: Dict[Tuple[str, Optional[str]], Optional[Project]] = {}


def find_root(path: str) -> Optional[str]:
    """The nearest folder above `path` (a file or folder) with a project marker, or None."""
    current = os.path.abspath(path)
    return _root_of(current if os.path.isdir(current) else os.path.dirname(current))


@functools.lru_cache(maxsize=4096)
def _root_of(directory: str) -> Optional[str]:
    """`find_root` of a folder, remembered (every file of a run asks for its folder's root)."""
    for marker in ROOT_MARKERS:
        if os.path.exists(os.path.join(directory, marker)):
            return directory
    parent = os.path.dirname(directory)
    return None if parent == directory else _root_of(parent)


def _project_files(root: str, settings) -> Optional[list]:
    from mllint.files import DiscoveryError, discover

    try:
        found = discover([root], settings)
    except (DiscoveryError, OSError, RecursionError):
        return None
    if len(found) > MAX_PROJECT_FILES:
        return None
    out = []
    for path in found:
        rel = os.path.relpath(os.path.abspath(path), root)
        if not rel.startswith(".."):
            out.append(rel.replace(os.sep, "/"))
    return out


def project_for(root: str, settings, cache_dir: Optional[str]) -> Optional[Project]:
    """The project at `root` (built once per process and cache directory)."""
    key = (root, cache_dir)
    if key not in _PROJECTS:
        from mllint.project.store import load_facts, save_graph

        rels = _project_files(root, settings)
        if rels is None:
            _PROJECTS[key] = None
        else:
            facts, hashes, graph = load_facts(root, rels, cache_dir, _compute_in_pool if len(rels) > 64 else None)
            project = Project(root, facts, hashes, graph)
            if graph is None and cache_dir:
                save_graph(root, cache_dir, project.graph())
            _PROJECTS[key] = project
    return _PROJECTS[key]


def _compute_in_pool(items):
    """The (header, pickled facts, digest) of many files (``(rel, full path, screen hook)``
    each), in worker processes when there are enough of them to pay."""
    from mllint.project.store import facts_entry_of_file

    workers = min(os.cpu_count() or 1, 8)
    if workers < 2 or len(items) < 64:
        return [facts_entry_of_file(*item) for item in items]
    try:
        from concurrent.futures import ProcessPoolExecutor

        from mllint.project.store import prepare_screen

        if len(items) <= PRELOAD_MAX_FILES:
            prepare_screen()  # (the workers, forked, inherit what the screen needs)
        with ProcessPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(_facts_item, items, chunksize=max(1, len(items) // (workers * 8))))
    except (OSError, NotImplementedError, PermissionError, RuntimeError):
        return [facts_entry_of_file(*item) for item in items]


def _facts_item(item):
    from mllint.project.store import facts_entry_of_file

    return facts_entry_of_file(*item)


def install(projects: Dict[Tuple[str, Optional[str]], Optional[Project]]) -> None:
    """Make projects built in another process known here (worker processes of the pool)."""
    _PROJECTS.update(projects)


def built() -> Dict[Tuple[str, Optional[str]], Optional[Project]]:
    return dict(_PROJECTS)


def forget() -> None:
    """Drop the projects built so far (a long-lived process: the language server, tests)."""
    _PROJECTS.clear()
    _root_of.cache_clear()


def key_for(path: str, settings, cache_dir: Optional[str]) -> Optional[Tuple[str, Optional[str], str]]:
    """(root, cache dir, relative path) of file `path`'s project, building the project (once per
    process); None without a project. The key travels to worker processes (``ModelOptions.project``);
    ``view_from_key`` turns it back into a view where the project was built or installed."""
    root = find_root(path)
    if root is None or project_for(root, settings, cache_dir) is None:
        return None
    return root, cache_dir, os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")


def view_from_key(key: Optional[Tuple[str, Optional[str], str]]) -> Optional[ProjectView]:
    """The view a ``key_for`` key names (None for no key, or a project not built here)."""
    if key is None:
        return None
    project = _PROJECTS.get((key[0], key[1]))
    return ProjectView(project, key[2]) if project is not None else None


__all__ = ["Project", "ProjectView", "find_root", "project_for", "install", "built", "forget", "key_for", "view_from_key"]
