"""GitHub Actions workflow commands: one annotation per finding.

    ::error title=mllint (ML001),file=train.py,line=12,col=9,endLine=12,endColumn=24::ML001 message

Warnings use ``::warning``. Data (the text after ``::``) escapes ``%``, ``\\r`` and
``\\n``; property values also escape ``:`` and ``,`` (GitHub's rules, as in
actions/toolkit). GitHub accepts ``col``/``endColumn`` only on a single-line
annotation, so a finding that spans lines gets ``line``/``endLine`` only. Paths use
forward slashes; nothing else is printed (no summary). A finding in a notebook gets
``line=`` the line of the raw ``.ipynb`` file that holds its source line, and a message
starting ``ML005 cell 7, line 3, col 5:``.
"""

from __future__ import annotations

from typing import TextIO

from mllint.findings import Finding

from ._common import ReportOptions, all_findings, severity_level


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding, verification=None) -> str:
    if finding.cell is not None:
        return _notebook_annotation(finding, verification)
    line = max(1, finding.line)
    end_line = max(line, finding.end_line)
    props = [
        ("title", f"mllint ({finding.code})"),
        ("file", finding.path.replace("\\", "/")),
        ("line", str(line)),
    ]
    if end_line == line:
        column = max(1, finding.column)
        props.append(("col", str(column)))
        props.append(("endLine", str(end_line)))
        props.append(("endColumn", str(max(column, finding.end_column))))
    else:
        props.append(("endLine", str(end_line)))
    rendered = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    text = f"{finding.code} {finding.message}"
    if verification is not None:
        text += f" [verify: {verification.summary}]"
    return f"::{severity_level(finding)} {rendered}::{escape_data(text)}"


def _notebook_annotation(finding: Finding, verification=None) -> str:
    """In a notebook: ``line`` is the line of the raw .ipynb file that holds the source line
    (what GitHub can annotate); the message names the cell, line and column."""
    props = [
        ("title", f"mllint ({finding.code})"),
        ("file", finding.path.replace("\\", "/")),
        ("line", str(max(1, finding.json_line or 1))),
    ]
    rendered = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    text = f"{finding.code} cell {finding.cell}, line {finding.line}, col {finding.column}: {finding.message}"
    if verification is not None:
        text += f" [verify: {verification.summary}]"
    return f"::{severity_level(finding)} {rendered}::{escape_data(text)}"


def report(results, opts: ReportOptions, out: TextIO) -> None:
    for _, finding in all_findings(results):
        out.write(annotation(finding, opts.verification(finding)) + "\n")
