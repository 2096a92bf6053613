"""The project's files and their facts, cached by content hash.

``load_facts(root, paths, cache_dir)`` returns ``{relative path: FileFacts}`` for the given
files of one project. A file whose size and modification time match the cached entry is not
read at all (as git's index does); one that changed is read and hashed, and only when its
content hash differs is it parsed again. The cache is one pickle per project root under the
cache directory (``<cache-dir>/project/<digest of the root>.pickle``), written atomically;
without a cache directory everything is computed in memory.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from typing import Dict, Iterable, Optional, Tuple

from mllint.project.facts import EMPTY, FACTS_VERSION, FileFacts, facts_of_source

# rel path -> (size, mtime_ns, sha256 hex, facts)
Entry = Tuple[int, int, str, FileFacts]

MAX_FACTS_BYTES = 4 * 1024 * 1024  # a larger file (data tables, generated code) gives no facts


def _store_path(cache_dir: str, root: str) -> str:
    digest = hashlib.sha256(os.path.abspath(root).encode()).hexdigest()[:20]
    return os.path.join(cache_dir, "project", f"{digest}.pickle")


def _read_store(path: Optional[str]) -> Dict[str, Entry]:
    if path is None:
        return {}
    try:
        with open(path, "rb") as handle:
            data = pickle.load(handle)
    except Exception:  # missing, truncated, from another version: start afresh
        return {}
    if not isinstance(data, dict) or data.get("version") != FACTS_VERSION:
        return {}
    return data.get("files", {})


def _write_store(path: str, files: Dict[str, Entry]) -> None:
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".pickle")
        with os.fdopen(fd, "wb") as handle:
            pickle.dump({"version": FACTS_VERSION, "files": files}, handle, protocol=pickle.HIGHEST_PROTOCOL)
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


def facts_of_file(path: str, data: bytes) -> FileFacts:
    if len(data) > MAX_FACTS_BYTES or b"\x00" in data:
        return EMPTY
    source = source_of(path, data)
    return EMPTY if source is None else facts_of_source(source, path)


def load_facts(root: str, relpaths: Iterable[str], cache_dir: Optional[str],
               known: Optional[Dict[str, Tuple[str, FileFacts]]] = None) -> Tuple[Dict[str, FileFacts], Dict[str, str]]:
    """({relpath: facts}, {relpath: content hash}) of the files, reusing the cache where it is current.

    `known` gives facts already computed in this process (relpath -> (hash, facts))."""
    store_path = _store_path(cache_dir, root) if cache_dir else None
    cached = _read_store(store_path)
    out: Dict[str, FileFacts] = {}
    hashes: Dict[str, str] = {}
    fresh: Dict[str, Entry] = {}
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
            out[rel], hashes[rel] = entry[3], entry[2]
            continue
        try:
            with open(full, "rb") as handle:
                data = handle.read(MAX_FACTS_BYTES + 1)
        except OSError:
            continue
        digest = hashlib.sha256(data).hexdigest()
        if entry is not None and entry[2] == digest:
            facts = entry[3]
        elif known is not None and rel in known and known[rel][0] == digest:
            facts = known[rel][1]
        else:
            facts = facts_of_file(rel, data)
        changed = True
        fresh[rel] = (info.st_size, info.st_mtime_ns, digest, facts)
        out[rel], hashes[rel] = facts, digest
    if store_path is not None and (changed or len(fresh) != len(cached)):
        _write_store(store_path, fresh)
    return out, hashes
