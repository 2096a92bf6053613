"""Grouped by file, as Ruff's ``grouped`` format: the path, then one indented line per finding
(``  line:col CODE [*] message``; in a notebook ``  cell N:line L:col C CODE ...``), a blank
line between files, then the summary line. ``statistics`` replaces the listing as in the
text format.
"""

from __future__ import annotations

from typing import TextIO

from ._common import ReportOptions, Style, all_findings, is_fixable, summary_lines, use_color
from .text import statistics_rows


def report(results, opts: ReportOptions, out: TextIO) -> None:
    style = Style(use_color(out, opts))
    pairs = all_findings(results)
    findings = [finding for _, finding in pairs]
    if opts.statistics:
        for row in statistics_rows(findings, opts, style):
            out.write(row + "\n")
    else:
        current = None
        for _, finding in pairs:
            if finding.path != current:
                if current is not None:
                    out.write("\n")
                out.write(style(finding.path, "bold") + style(":", "cyan") + "\n")
                current = finding.path
            place = f"{finding.line}:{finding.column}" if finding.cell is None else \
                f"cell {finding.cell}:line {finding.line}:col {finding.column}"
            marker = style("[*]", "cyan") + " " if is_fixable(finding, opts) else ""
            line = f"  {place} {style(finding.code, 'bold_red')} {marker}{finding.message}"
            verification = opts.verification(finding)
            if verification is not None:
                line += f" [verify: {verification.summary}]"
            out.write(line + "\n")
        if findings and not opts.quiet:
            out.write("\n")
    for line in summary_lines(findings, opts):
        out.write(line + "\n")
