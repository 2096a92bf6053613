"""``--baseline FILE``: record today's findings so that CI fails only on new ones.

The file is JSON::

    {
      "version": 1,
      "tool": "mllint",
      "findings": [
        {"path": "src/train.py", "code": "ML001", "source": "loss.backward()",
         "occurrence": 0, "line": 42},
        ...
      ]
    }

``path`` is relative to the baseline file's directory (forward slashes), so the file works
from any working directory. A finding is identified by its path, its code, the stripped
text of its source line and its ``occurrence`` (the index among findings of the same path,
code and text, in line order), never by its line number: inserting or removing lines
above a baselined finding keeps it baselined, a second identical finding is new, and a
fixed finding simply disappears. ``line`` is only for the reader.

If FILE does not exist it is written (exit 0); otherwise findings found in it are dropped
before reporting. ``--update-baseline`` rewrites it from the current findings, keeping the
entries of files not linted in this run that still exist.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from typing import Dict, List, Optional, Set, Tuple

import click

from mllint.config import ConfigError
from mllint.findings import Finding, split_lines

VERSION = 1

Key = Tuple[str, str, str, int]


def _relative(path: str, base_dir: str) -> str:
    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute, base_dir)
    except ValueError:  # another drive on Windows
        rel = absolute
    return rel.replace(os.sep, "/")


def _line_text(lines: List[str], line: int) -> str:
    if 1 <= line <= len(lines):
        return lines[line - 1].strip()
    return ""


def keyed(results, base_dir: str) -> List[Tuple[Key, Finding]]:
    """(key, finding) for every finding of `results` (engine.FileResult), keys as above."""
    out: List[Tuple[Key, Finding]] = []
    for result in results:
        lines = split_lines(result.source) if result.source is not None else []
        cells = _notebook_cells(result)
        rel = _relative(result.path, base_dir)
        seen: Dict[Tuple[str, str, str], int] = defaultdict(int)
        for finding in sorted(result.findings, key=Finding.sort_key):
            cell = getattr(finding, "cell", None)
            if cell is not None:  # a notebook: the line of its cell (cell numbers are not kept)
                text = _line_text(cells.get(cell, []), finding.line)
            else:
                text = _line_text(lines, finding.line)
            group = (rel, finding.code, text)
            out.append(((rel, finding.code, text, seen[group]), finding))
            seen[group] += 1
    return out


def _notebook_cells(result) -> Dict[int, List[str]]:
    """{cell number: its lines} of a notebook result; {} for anything else."""
    from mllint import notebook

    if result.source is None or not notebook.is_notebook(result.path):
        return {}
    try:
        nb = notebook.load(result.source)
    except notebook.NotebookError:
        return {}
    return {cell.number: split_lines(cell.text) for cell in nb.cells}


def _entry(key: Key, finding: Finding) -> dict:
    path, code, text, occurrence = key
    return {"path": path, "code": code, "source": text, "occurrence": occurrence, "line": finding.line}


def _entry_key(entry: dict) -> Key:
    return (entry["path"], entry["code"], entry["source"], entry["occurrence"])


def _sort_key(entry: dict):
    return (entry["path"], entry["line"], entry["code"], entry["source"], entry["occurrence"])


def load(path: str) -> List[dict]:
    """The entries of a baseline file; ConfigError (one line) when it is malformed."""
    where = f"baseline {path}"
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read: {exc.strerror or exc}") from None
    try:
        document = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(document, dict) or "findings" not in document:
        raise ConfigError(f'{where}: not an mllint baseline (expected an object with "version" and "findings")')
    if document.get("version") != VERSION:
        raise ConfigError(f"{where}: unsupported version {document.get('version')!r} (this mllint reads version {VERSION})")
    entries = document["findings"]
    if not isinstance(entries, list):
        raise ConfigError(f'{where}: "findings" must be a list')
    for index, entry in enumerate(entries):
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("path"), str)
            and isinstance(entry.get("code"), str)
            and isinstance(entry.get("source"), str)
            and isinstance(entry.get("occurrence"), int)
            and not isinstance(entry.get("occurrence"), bool)
            and entry["occurrence"] >= 0
        ):
            raise ConfigError(
                f"{where}: finding {index} must have a string path, code and source and a"
                " non-negative integer occurrence"
            )
        if not isinstance(entry.get("line"), int) or isinstance(entry.get("line"), bool):
            entry["line"] = 0
    return entries


def dumps(entries: List[dict]) -> str:
    unique = {_entry_key(e): e for e in entries}
    document = {"version": VERSION, "tool": "mllint", "findings": sorted(unique.values(), key=_sort_key)}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _write(path: str, entries: List[dict]) -> None:
    from mllint.fixing import write_atomic

    try:
        write_atomic(path, dumps(entries), "utf-8")
    except OSError as exc:
        raise ConfigError(f"baseline {path}: cannot write: {exc.strerror or exc}") from None


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def use_baseline(results, path: str, update: bool) -> Optional[int]:
    """Apply ``--baseline``. Writes the file (when missing, or with `update`) and returns the
    exit status 0; otherwise drops the baselined findings from `results` and returns None."""
    base_dir = os.path.dirname(os.path.abspath(path))
    current = keyed(results, base_dir)
    exists = os.path.exists(path)
    if not exists or update:
        entries = [_entry(key, finding) for key, finding in current]
        if exists:
            linted = {_relative(r.path, base_dir) for r in results}
            entries += [
                e for e in load(path)
                if e["path"] not in linted and os.path.exists(os.path.join(base_dir, e["path"]))
            ]
        _write(path, entries)
        verb = "updated" if exists else "wrote"
        click.echo(f"mllint: {verb} baseline {path} ({_plural(len(entries), 'finding')})", err=True)
        return 0
    baselined: Set[Key] = {_entry_key(e) for e in load(path)}
    hidden: Set[int] = set()
    for key, finding in current:
        if key in baselined:
            hidden.add(id(finding))
    for result in results:
        result.findings = [f for f in result.findings if id(f) not in hidden]
    click.echo(f"mllint: {_plural(len(hidden), 'baselined finding')} not shown (baseline {path})", err=True)
    return None
