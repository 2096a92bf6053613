"""SARIF 2.1.0, as GitHub code scanning reads it.

One run. ``tool.driver`` names mllint and its version and lists, as ``rules``, every
rule that appears in the results (sorted by code; ``ruleIndex`` points into this
list), with short and full descriptions and help text taken from the rule's
documentation (ML000 has a built-in one). Each result has the rule, a level
(``error``/``warning``), the message, one physical location whose URI is relative to
``%SRCROOT%`` (the working directory, given in ``originalUriBaseIds``) with forward
slashes and percent-encoding, a region in 1-based lines and columns counted in Unicode
code points (``columnKind``), ``partialFingerprints`` and, when the finding has a
fix, ``fixes`` with the replacements. A path outside the working directory becomes
an absolute ``file:`` URI instead.

A finding in a notebook points at the ``.ipynb`` file: its region is the line of the
raw JSON text that holds the reported source line (``startLine`` only), and
``properties`` holds ``cell``, ``cellLine``, ``cellColumn``, ``cellEndLine`` and
``cellEndColumn``; it has no ``fixes`` (their positions are in the cell, not the file).

The fingerprint (key ``mllintLineHash/v1``; GitHub's own ``primaryLocationLineHash``
is left for GitHub to compute) hashes the code, the path and the text of the reported
line with all whitespace removed, plus a counter for identical lines in the same file,
so an alert keeps its identity when code above it moves or is re-indented.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import textwrap
from pathlib import Path
from typing import Dict, List, Optional, TextIO, Tuple
from urllib.parse import quote

import mllint
from mllint.findings import Applicability, Finding

from ._common import ReportOptions, RuleInfo, SourceCache, all_findings, rule_info, severity_level

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
INFORMATION_URI = "https://pypi.org/project/mllint-pitfalls/"
SRCROOT = "%SRCROOT%"
FINGERPRINT_KEY = "mllintLineHash/v1"


def report(results, opts: ReportOptions, out: TextIO) -> None:
    out.write(json.dumps(build_log(results, opts), indent=2, ensure_ascii=True) + "\n")


def build_log(results, opts: ReportOptions, cwd: Optional[str] = None) -> dict:
    cwd = os.path.abspath(cwd or os.getcwd())
    pairs = all_findings(results)
    codes = sorted({finding.code for _, finding in pairs})
    first_of: Dict[str, Finding] = {}
    for _, finding in pairs:
        first_of.setdefault(finding.code, finding)
    rule_index = {code: index for index, code in enumerate(codes)}
    rules = [reporting_descriptor(rule_info(code, opts, first_of[code]), first_of[code]) for code in codes]

    sources = SourceCache()
    seen: Dict[Tuple[str, str], int] = {}
    sarif_results = []
    for result, finding in pairs:
        location = artifact_location(finding.path, cwd)
        line_text = sources.line_for(result, finding)
        digest = fingerprint(finding.code, location["uri"], line_text)
        seen[(location["uri"], digest)] = seen.get((location["uri"], digest), 0) + 1
        entry = {
            "ruleId": finding.code,
            "ruleIndex": rule_index[finding.code],
            "level": severity_level(finding),
            "message": {"text": finding.message},
            "locations": [{"physicalLocation": {"artifactLocation": location, "region": region(finding)}}],
            "partialFingerprints": {FINGERPRINT_KEY: f"{digest}:{seen[(location['uri'], digest)]}"},
        }
        if finding.fix is not None and finding.fix.edits and finding.cell is None:
            entry["fixes"] = [sarif_fix(finding, location)]
        if finding.cell is not None:  # a notebook: the region is the raw .ipynb line
            entry["properties"] = {"cell": finding.cell, "cellLine": finding.line, "cellColumn": finding.column,
                                   "cellEndLine": finding.end_line, "cellEndColumn": finding.end_column}
        verification = opts.verification(finding)
        if verification is not None:
            entry.setdefault("properties", {})["verification"] = verification.to_dict()
        sarif_results.append(entry)

    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "mllint",
                        "informationUri": INFORMATION_URI,
                        "version": mllint.__version__,
                        "semanticVersion": mllint.__version__,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {SRCROOT: {"uri": _directory_uri(cwd)}},
                "columnKind": "unicodeCodePoints",
                "results": sarif_results,
            }
        ],
    }


# ---------------------------------------------------------------- rules


def reporting_descriptor(info: RuleInfo, sample: Finding) -> dict:
    level = severity_level(sample)
    full = _full_description(info)
    descriptor = {
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": full},
        "help": {"text": _plain(info.doc), "markdown": doc_to_markdown(info)},
        "defaultConfiguration": {"level": level},
        "properties": {"tags": _tags(info)},
    }
    if info.help_uri:
        descriptor["helpUri"] = info.help_uri
    return descriptor


def _paragraphs(doc: str) -> List[str]:
    return [p for p in re.split(r"\n\s*\n", textwrap.dedent(doc).strip()) if p.strip()]


def _plain(text: str) -> str:
    return text.replace("``", "`")


def _join(paragraph: str) -> str:
    return " ".join(line.strip() for line in paragraph.splitlines() if line.strip())


def _full_description(info: RuleInfo) -> str:
    """The summary and the first paragraph of explanation (without its section heading)."""
    paragraphs = _paragraphs(info.doc)
    parts = [info.summary]
    for paragraph in paragraphs[1:2]:
        lines = paragraph.splitlines()
        if len(lines) > 1 and lines[0].strip() and not lines[0].startswith((" ", "\t")) and lines[1].startswith((" ", "\t")):
            lines = lines[1:]  # "Why it matters" followed by an indented body
        parts.append(_join("\n".join(lines)))
    return _plain(" ".join(p for p in parts if p))


def doc_to_markdown(info: RuleInfo) -> str:
    """Rule docstrings are written like NumPy/Fixit docstrings: a summary, then sections
    whose heading is a line at the margin followed by an indented body. Headings become
    bold lines, bodies are dedented (Markdown would take them for code), ``x`` becomes `x`."""
    lines = textwrap.dedent(info.doc).strip().splitlines()
    out: List[str] = [f"**{info.code}** ({info.name})", ""]
    index = 0
    while index < len(lines):
        line = lines[index]
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if line.strip() and not line[:1].isspace() and following[:1].isspace() and following.strip():
            body = []
            index += 1
            while index < len(lines) and (lines[index][:1].isspace() or not lines[index].strip()):
                body.append(lines[index])
                index += 1
            out.extend([f"**{line.strip()}**", ""])
            out.extend(textwrap.dedent("\n".join(body)).strip("\n").splitlines())
            out.append("")
            continue
        out.append(line)
        index += 1
    text = "\n".join(out).strip() + "\n"
    return re.sub(r"``(.+?)``", r"`\1`", text)


def _tags(info: RuleInfo) -> List[str]:
    tags = ["ml"]
    explicit = [t for t in info.tags if t]
    if explicit:
        tags.extend(explicit)
    else:  # inferred from the documentation, not from knowledge of particular rules
        lowered = info.doc.lower()
        if "torch" in lowered:
            tags.append("pytorch")
        if "sklearn" in lowered or "scikit-learn" in lowered:
            tags.append("scikit-learn")
    seen = []
    for tag in tags:
        if tag not in seen:
            seen.append(tag)
    return seen


# ---------------------------------------------------------------- locations


def _directory_uri(path: str) -> str:
    uri = Path(path).as_uri()
    return uri if uri.endswith("/") else uri + "/"


def artifact_location(path: str, cwd: str) -> dict:
    """A location relative to %SRCROOT% (the working directory) when the file is inside it,
    else an absolute file URI."""
    absolute = os.path.normpath(os.path.join(cwd, path))
    try:
        relative = os.path.relpath(absolute, cwd)
    except ValueError:  # another drive on Windows
        relative = None
    if relative is not None and relative != os.pardir and not relative.startswith(os.pardir + os.sep):
        posix = posixpath.normpath(relative.replace(os.sep, "/"))
        return {"uri": quote(os.fsencode(posix), safe="/"), "uriBaseId": SRCROOT}
    return {"uri": Path(absolute).as_uri()}


def region(finding: Finding) -> dict:
    if finding.cell is not None:
        # Notebook: the line of the .ipynb file holding the source line (columns of the
        # cell do not apply to the JSON text; the cell position is in the properties).
        return {"startLine": max(1, finding.json_line or 1)}
    start_line = max(1, finding.line)
    start_column = max(1, finding.column)
    end_line = max(start_line, finding.end_line)
    end_column = finding.end_column
    if end_line == start_line:
        end_column = max(end_column, start_column)
    return {
        "startLine": start_line,
        "startColumn": start_column,
        "endLine": end_line,
        "endColumn": max(1, end_column),
    }


def fingerprint(code: str, uri: str, line_text: str) -> str:
    normalized = "".join(line_text.split())
    data = "\0".join((code, uri, normalized)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:32]


def sarif_fix(finding: Finding, location: dict) -> dict:
    fix = finding.fix
    assert fix is not None
    replacements = []
    for edit in sorted(fix.edits, key=lambda e: (e.line, e.column)):
        replacement = {
            "deletedRegion": {
                "startLine": edit.line,
                "startColumn": edit.column,
                "endLine": edit.end_line,
                "endColumn": edit.end_column,
            }
        }
        if edit.content:
            replacement["insertedContent"] = {"text": edit.content}
        replacements.append(replacement)
    description = fix.description or "Apply mllint's fix"
    if fix.applicability is not Applicability.SAFE:
        description += " (unsafe: review before applying)"
    return {
        "description": {"text": description},
        "artifactChanges": [{"artifactLocation": dict(location), "replacements": replacements}],
        "properties": {"applicability": fix.applicability.value},
    }
