"""GitLab Code Quality: a JSON array of issues, the format GitLab's merge requests show
(``artifacts: reports: codequality``), as Ruff's ``gitlab`` format. Each issue has
``description`` (``CODE message``), ``check_name`` (the code), ``fingerprint`` (an MD5 of the
path, the code, the message and the text of the flagged line, with a counter for repeats:
stable when unrelated lines move), ``severity`` (``major`` for errors, ``minor`` for warnings)
and ``location: {path, lines: {begin, end}}`` (in a notebook, the lines of the raw ``.ipynb``
text). Paths are relative to the current folder, with forward slashes, as GitLab wants them.

With --statistics: the same issues (Code Quality has no other shape).
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TextIO

from mllint.findings import Severity

from ._common import ReportOptions, SourceCache, all_findings


def _relative(path: str) -> str:
    relative = os.path.relpath(path) if os.path.isabs(path) else os.path.normpath(path)
    return relative.replace(os.sep, "/")


def report(results, opts: ReportOptions, out: TextIO) -> None:
    sources = SourceCache()
    seen: dict = {}
    issues = []
    for result, finding in all_findings(results):
        path = _relative(finding.path)
        lines = sources.lines_for(result, finding)
        text = lines[finding.line - 1].strip() if lines and 0 < finding.line <= len(lines) else ""
        key = "\0".join((path, finding.code, finding.message, text))
        seen[key] = seen.get(key, 0) + 1
        fingerprint = hashlib.md5(f"{key}\0{seen[key]}".encode("utf-8")).hexdigest()
        begin = finding.json_line or finding.line
        end = begin + (finding.end_line - finding.line) if finding.json_line is None else begin
        issues.append({
            "description": f"{finding.code} {finding.message}",
            "check_name": finding.code,
            "fingerprint": fingerprint,
            "severity": "minor" if finding.severity is Severity.WARNING else "major",
            "location": {"path": path, "lines": {"begin": begin, "end": max(begin, end)}},
        })
    out.write(json.dumps(issues, indent=2, ensure_ascii=True) + "\n")
