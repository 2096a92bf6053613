"""The project's files and their facts, cached by content hash.

``load_facts(root, paths, cache_dir)`` returns ``{relative path: FileFacts}`` for the given
files of one project. A file whose size and modification time match the cached entry is not
read at all (as git's index does); one that changed is read and hashed, and only when its
content hash differs is it parsed again. The cache is one pickle per project root under the
cache directory (``<cache-dir>/project/<digest of the root>.pickle``), written atomically;
without a cache directory everything is computed in memory.
"""

from __future__ import annotations

import ast
import hashlib
import os
import pickle
import tempfile
from collections import OrderedDict
from collections.abc import Mapping
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, Optional, Tuple

from mllint.project.facts import EMPTY, FACTS_VERSION, FileFacts, facts_of_source, parse_source

# rel path -> (size, mtime_ns, sha256 hex, header, pickled FileFacts). The header (the file's
# imports and frameworks, and the screen's verdict) is what every run needs of every file; the
# rest is unpickled only for the files a lint asks about (see LazyFacts).
Header = Tuple[Tuple[Tuple[str, str], ...], FrozenSet[str], Optional[tuple]]
Entry = Tuple[int, int, str, Header, bytes]

# What the layer above (the engine) computes from the same parse, once per file: given the
# file's ``ast`` tree and its text, a small picklable verdict (the rule screen's outcome), kept in
# the header so that linting the file later needs no second CPython parse. Set by ``set_screen``;
# a module-level function, so that it travels to worker processes by name.
ScreenHook = Callable[[ast.Module, str], Optional[tuple]]
_SCREEN: Optional[ScreenHook] = None
_PREPARE: Optional[Callable[[], None]] = None


def set_screen(hook: Optional[ScreenHook], prepare: Optional[Callable[[], None]] = None) -> None:
    """Install the screen hook; `prepare`, when given, loads what the hook needs (the rules)
    and is called in this process before worker processes are forked to run the hook, so that
    each of them inherits it instead of loading it again."""
    global _SCREEN, _PREPARE
    _SCREEN = hook
    _PREPARE = prepare


def prepare_screen() -> None:
    if _SCREEN is not None and _PREPARE is not None:
        _PREPARE()


def screen_hook() -> Optional[ScreenHook]:
    return _SCREEN


class LazyFacts(Mapping):
    """{relative path: FileFacts}, each file's facts unpickled on first use; ``header(rel)``
    without unpickling anything."""

    # Decoded facts kept at once. A project whose pickled facts take at most KEEP_ALL_BYTES (timm's
    # source: 284 files, 5 MiB) stays decoded: who calls a file's functions is answered from the
    # facts of every file that imports it, again for each file linted (0.5 CPU-seconds of timm's
    # run went to decoding them again). A larger project keeps the KEEP most recently used: a
    # whole-package run would otherwise hold every file's facts (the torch package: 2,285 files,
    # over the 1 GiB a process may take).
    KEEP = 64
    KEEP_ALL_BYTES = 8 * 1024 * 1024

    def __init__(self, headers: Dict[str, Header], blobs: Dict[str, object]) -> None:
        self._headers = headers
        self._blobs = blobs  # pickled facts (or, for facts computed here, the objects)
        self._decoded: "OrderedDict[str, FileFacts]" = OrderedDict()
        size = sum(len(blob) for blob in blobs.values() if isinstance(blob, bytes))
        self._keep = len(blobs) if size <= self.KEEP_ALL_BYTES else self.KEEP

    def header(self, rel: str) -> Header:
        return self._headers[rel]

    def __getitem__(self, rel: str) -> FileFacts:
        value = self._blobs[rel]
        if not isinstance(value, bytes):
            return value  # type: ignore[return-value]
        found = self._decoded.get(rel)
        if found is None:
            found = self._decoded[rel] = pickle.loads(value)
            if len(self._decoded) > self._keep:
                self._decoded.popitem(last=False)
        else:
            self._decoded.move_to_end(rel)
        return found

    def __contains__(self, rel) -> bool:
        return rel in self._headers

    def __iter__(self) -> Iterator[str]:
        return iter(self._headers)

    def __len__(self) -> int:
        return len(self._headers)


def header_of(facts: FileFacts, screen: Optional[tuple] = None) -> Header:
    return facts.imports, facts.frameworks, screen


def in_memory(facts: Dict[str, FileFacts]) -> LazyFacts:
    return LazyFacts({rel: header_of(f) for rel, f in facts.items()}, dict(facts))

MAX_FACTS_BYTES = 1024 * 1024  # a larger file (data tables, generated code) gives no facts (its parse alone
# would take hundreds of MiB)


def _version() -> str:
    """The facts' format and the code that reads them (mllint's sources, as the result cache
    keys on them; computed once per process): a store written by another mllint is read afresh."""
    from mllint.cache import code_digest

    return f"{FACTS_VERSION}:{code_digest()}"


def _store_path(cache_dir: str, root: str) -> str:
    digest = hashlib.sha256(os.path.abspath(root).encode()).hexdigest()[:20]
    return os.path.join(cache_dir, "project", f"{digest}.pickle")


def _read_store(path: Optional[str]) -> dict:
    if path is None:
        return {}
    try:
        with open(path, "rb") as handle:
            data = pickle.load(handle)
    except Exception:  # missing, truncated, from another version: start afresh
        return {}
    if not isinstance(data, dict) or data.get("version") != _version():
        return {}
    return data


def _write_store(path: str, files: Dict[str, Entry], graph=None) -> None:
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".pickle")
        with os.fdopen(fd, "wb") as handle:
            pickle.dump({"version": _version(), "files": files, "graph": graph}, handle,
                        protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:
        pass  # a cache that cannot be written is only slower


def source_of(path: str, data: bytes) -> Optional[str]:
    """The Python text of a project file (a notebook: its code cells as one program)."""
    if path.lower().endswith(".ipynb"):
        try:
            from mllint import notebook

            return notebook.load(data.decode("utf-8-sig")).program
        except Exception:
            return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        try:
            return data.decode("latin-1")
        except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes anything
            return None


def facts_of_file(path: str, data: bytes, screen: Optional[ScreenHook] = None) -> Tuple[FileFacts, Optional[tuple]]:
    """(facts, the `screen` hook's verdict or None) of a file's bytes, from one parse."""
    if len(data) > MAX_FACTS_BYTES or b"\x00" in data:
        return EMPTY, None
    source = source_of(path, data)
    if source is None:
        return EMPTY, None
    if screen is None:
        return facts_of_source(source, path), None
    tree = parse_source(source, path)
    if tree is None:
        return EMPTY, None
    facts = facts_of_source(source, path, tree)
    try:
        verdict = screen(tree, source)
    except RecursionError:
        verdict = None
    return facts, verdict


def facts_entry(rel: str, data: bytes, screen: Optional[ScreenHook] = None) -> Tuple[Header, bytes]:
    """(header, pickled facts) of one file: what the store keeps (computed in a worker process,
    only these bytes travel back, so the whole project's facts are never objects at once)."""
    facts, verdict = facts_of_file(rel, data, screen)
    return header_of(facts, verdict), pickle.dumps(facts, pickle.HIGHEST_PROTOCOL)


def facts_entry_of_file(rel: str, full: str, screen: Optional[ScreenHook] = None) -> Tuple[Header, bytes, str]:
    """`facts_entry` of the file at `full` (read here; a file gone meanwhile has no facts), and
    the digest of the bytes read (where a worker computes them, the file is read once)."""
    try:
        with open(full, "rb") as handle:
            data = handle.read(MAX_FACTS_BYTES + 1)
    except OSError:
        data = b""
    return (*facts_entry(rel, data, screen), hashlib.sha256(data).hexdigest())


def load_facts(root: str, relpaths: Iterable[str], cache_dir: Optional[str],
               compute=None) -> Tuple[LazyFacts, Dict[str, str], Optional[object]]:
    """(facts, {relpath: content hash}, the import graph stored with them or None) of the files,
    reusing the cache where it is current. The stored graph is returned only when no file was
    added, removed or changed since it was stored.

    `compute`, when given, computes the facts of many files at once (``[(rel, full path, hook)] ->
    [(header, pickled facts, digest of the bytes read)]``, as `facts_entry_of_file` does, e.g. in
    worker processes); by
    default they are computed here."""
    store_path = _store_path(cache_dir, root) if cache_dir else None
    stored = _read_store(store_path)
    cached: Dict[str, Entry] = stored.get("files", {})
    fresh: Dict[str, Entry] = {}
    hashes: Dict[str, str] = {}
    todo = []  # (rel, size, mtime, digest)
    changed = False
    for rel in relpaths:
        full = os.path.join(root, rel)
        try:
            info = os.stat(full)
        except OSError:
            continue
        entry = cached.get(rel)
        if entry is not None and entry[0] == info.st_size and entry[1] == info.st_mtime_ns:
            fresh[rel] = entry
            hashes[rel] = entry[2]
            continue
        changed = True
        if entry is None:  # read and hashed where its facts are computed
            todo.append((rel, info.st_size, info.st_mtime_ns))
            continue
        try:
            with open(full, "rb") as handle:
                data = handle.read(MAX_FACTS_BYTES + 1)
        except OSError:
            continue
        digest = hashlib.sha256(data).hexdigest()
        del data  # read again where the facts are computed: this process never holds every file
        if entry[2] == digest:  # touched, not changed
            hashes[rel] = digest
            fresh[rel] = (info.st_size, info.st_mtime_ns, digest, entry[3], entry[4])
            continue
        todo.append((rel, info.st_size, info.st_mtime_ns))
    if todo:
        hook = _SCREEN
        items = [(rel, os.path.join(root, rel), hook) for rel, _, _ in todo]
        computed = compute(items) if compute is not None else [facts_entry_of_file(*item) for item in items]
        for (rel, size, mtime), (header, blob, digest) in zip(todo, computed):
            hashes[rel] = digest
            fresh[rel] = (size, mtime, digest, header, blob)
        del todo, computed
    changed = changed or len(fresh) != len(cached)
    graph = None if changed else stored.get("graph")
    if store_path is not None and changed:
        _write_store(store_path, fresh)
    lazy = LazyFacts({rel: e[3] for rel, e in fresh.items()}, {rel: e[4] for rel, e in fresh.items()})
    return lazy, hashes, graph


def save_graph(root: str, cache_dir: Optional[str], graph) -> None:
    """Store the project's import graph beside the facts it was computed from."""
    if not cache_dir:
        return
    path = _store_path(cache_dir, root)
    stored = _read_store(path)
    if stored.get("files"):
        _write_store(path, stored["files"], graph)
