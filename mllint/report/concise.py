"""One line per finding, ``path:line:col: ML001 message`` (in a notebook
``path:cell N:line L:col C: ML001 message``), then the summary line.

No code frames: a format for grepping and for editors' error parsers. ``[*]`` marks what
``--fix`` fixes, as in Ruff's concise format. ``statistics`` replaces the listing as in the
text format.
"""

from __future__ import annotations

from typing import TextIO

from ._common import ReportOptions, Style, all_findings, summary_lines, use_color
from .text import finding_line, statistics_rows


def report(results, opts: ReportOptions, out: TextIO) -> None:
    style = Style(use_color(out, opts))
    findings = [finding for _, finding in all_findings(results)]
    if opts.statistics:
        for row in statistics_rows(findings, opts, style):
            out.write(row + "\n")
    else:
        for finding in findings:
            line = finding_line(finding, opts, style, fix_marker=True)
            verification = opts.verification(finding)
            if verification is not None:
                line += f" [verify: {verification.summary}]"
            out.write(line + "\n")
    for line in summary_lines(findings, opts):
        out.write(line + "\n")
