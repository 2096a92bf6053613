"""The result cache: findings per file, keyed by the file's content.

One JSON file per configuration under ``<cache-dir>/`` (default ``.mllint_cache/`` in the
project root), named by a digest of the mllint version, the settings fingerprint and the
source of mllint and its rules (editing a rule invalidates the cache). It maps each linted
file's absolute path to the SHA-256 of its bytes and its findings. The directory holds a
``.gitignore`` with ``*`` (as Ruff's does) and a ``CACHEDIR.TAG``. Files are written
atomically (temporary file + rename); unreadable or corrupt entries are ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Optional

from mllint import __version__
from mllint.findings import Applicability, Edit, Finding, Fix, Severity

FORMAT = 1
KEEP_CONFIGS = 8  # cache files (one per configuration) kept; older ones are pruned
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by mllint.\n"


@lru_cache(maxsize=None)
def code_digest() -> str:
    """Digest of the mllint package and rule sources, so that editing either invalidates the cache."""
    import importlib.util

    import mllint

    folders = [os.path.dirname(os.path.abspath(mllint.__file__))]
    spec = importlib.util.find_spec("mllint.rules")
    if spec is not None and spec.submodule_search_locations:
        folders.extend(os.path.abspath(p) for p in spec.submodule_search_locations)
    digest = hashlib.sha256(__version__.encode())
    for folder in sorted(set(folders)):
        for directory, subdirs, names in os.walk(folder):
            subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
            for name in sorted(names):
                if name.endswith(".py"):
                    path = os.path.join(directory, name)
                    digest.update(os.path.relpath(path, folder).encode())
                    try:
                        with open(path, "rb") as handle:
                            digest.update(handle.read())
                    except OSError:
                        pass
    return digest.hexdigest()


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def finding_to_json(finding: Finding) -> Dict[str, Any]:
    data = finding.to_dict()
    del data["path"]
    return data


def finding_from_json(data: Dict[str, Any], path: str) -> Finding:
    fix = None
    if data.get("fix"):
        raw = data["fix"]
        fix = Fix(
            applicability=Applicability(raw["applicability"]),
            edits=tuple(
                Edit(e["line"], e["column"], e["end_line"], e["end_column"], e["content"]) for e in raw["edits"]
            ),
            description=raw.get("message") or "",
            deferred=bool(raw.get("deferred")),
        )
    return Finding(
        path=path,
        line=int(data["line"]),
        column=int(data["column"]),
        end_line=int(data["end_line"]),
        end_column=int(data["end_column"]),
        code=str(data["code"]),
        name=str(data["name"]),
        message=str(data["message"]),
        severity=Severity(data["severity"]),
        fix=fix,
        detail=data.get("detail"),
        cell=None if data.get("cell") is None else int(data["cell"]),
        json_line=None if data.get("json_line") is None else int(data["json_line"]),
        basis=data.get("basis"),
    )


class Cache:
    def __init__(self, directory: Path, settings_fingerprint: str):
        self.directory = Path(directory)
        key = hashlib.sha256(f"{FORMAT}|{__version__}|{settings_fingerprint}|{code_digest()}".encode())
        self.path = self.directory / f"{key.hexdigest()[:24]}.json"
        self.entries: Dict[str, Dict[str, Any]] = self._load()
        self.updated: Dict[str, Dict[str, Any]] = {}

    def _load(self) -> Dict[str, Dict[str, Any]]:
        try:
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            return {}
        if isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("files"), dict):
            return data["files"]
        return {}

    def get(self, abspath: str, digest: str, display_path: str, fixes: bool = True,
            settled: bool = False) -> Optional[List[Finding]]:
        """The cached findings, or None. With `fixes`, only an entry whose fixes were
        built (not deferred) will do; without, any entry. With `settled`, only an entry whose
        fixes were settled (``fixing.settle_fixable``: a fix that --fix refuses is dropped)."""
        entry = self.entries.get(abspath)
        if not isinstance(entry, dict) or entry.get("sha256") != digest:
            return None
        if fixes and entry.get("deferred"):
            return None
        if settled and not entry.get("settled"):
            return None
        try:
            return [finding_from_json(item, display_path) for item in entry["findings"]]
        except (KeyError, TypeError, ValueError, AttributeError):
            return None  # a corrupt entry is a miss

    def put(self, abspath: str, digest: str, findings: List[Finding], settled: bool = False) -> None:
        entry: Dict[str, Any] = {"sha256": digest, "findings": [finding_to_json(f) for f in findings]}
        if settled:
            entry["settled"] = True
        if any(f.fix is not None and f.fix.deferred for f in findings):
            entry["deferred"] = True  # its fixes were not built: no use to a run that needs them
        self.entries[abspath] = self.updated[abspath] = entry

    def save(self) -> bool:
        """Write the cache if anything changed; False (and nothing raised) when it cannot be written.

        Entries written meanwhile by another run (pre-commit runs several at once) are kept:
        the file is read again and only this run's entries replace what it holds.
        """
        if not self.updated:
            return True
        try:
            self._prepare_directory()
            merged = self._load()
            merged.update(self.updated)
            # Forget files that no longer exist (moved or deleted since they were cached).
            self.entries = {path: entry for path, entry in merged.items() if os.path.exists(path)}
            import tempfile

            payload = json.dumps({"format": FORMAT, "version": __version__, "files": self.entries})
            handle, temporary = tempfile.mkstemp(dir=str(self.directory), prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    out.write(payload)
                os.replace(temporary, self.path)
            except BaseException:
                try:
                    os.unlink(temporary)
                except OSError:
                    pass
                raise
            self._prune()
        except OSError:
            return False
        self.updated = {}
        return True

    def _prepare_directory(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for name, text in ((".gitignore", "# Automatically created by mllint.\n*\n"), ("CACHEDIR.TAG", _TAG)):
            target = self.directory / name
            if not target.exists():
                target.write_text(text, encoding="utf-8")

    def _prune(self) -> None:
        caches = []
        for entry in os.scandir(self.directory):
            if entry.name.endswith(".json") and not entry.name.startswith(".tmp-"):
                try:
                    caches.append((entry.stat().st_mtime, entry.path))
                except OSError:
                    pass
        for _, path in sorted(caches, reverse=True)[KEEP_CONFIGS:]:
            try:
                os.unlink(path)
            except OSError:
                pass
