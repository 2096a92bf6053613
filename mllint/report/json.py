"""JSON: an array of Finding.to_dict() objects, sorted by path, line, column, code.

Each object has exactly ``path, line, column, end_line, end_column, code, name,
message, detail, severity, fix, cell, json_line, basis`` (``detail``: null or the rest of the explanation
for this case, which the one-line ``message`` leaves out; ``basis``: what an evaluation finding of
ML002/ML005 rests on, ``"structure"`` or ``"name"``, else null) (and, with --verify, ``verification``: ``{verdict, summary,
evidence: [{metric, original, fixed, ratio, interval}], details}``); ``fix`` is null or ``{applicability, message, edits:
[{line, column, end_line, end_column, content}]}``. ``cell`` is null for a .py file; in a
notebook it is the cell (1-based among all cells), line and column (and the edits') are
in that cell, and ``json_line`` is the line of the raw .ipynb text holding the source
line (null for .py). Paths are as the CLI gave them.
Pretty-printed with an indent of 2 and a final newline; non-ASCII text is escaped
so that the output is the same bytes whatever the stream's encoding.

With --statistics: an array of ``{code, name, count, fixable_count}``, one per code,
most frequent first, instead of the findings.

``json-lines`` (``report_lines``): the same objects, one per line, unindented (the statistics
too), for tools that read a stream.
"""

from __future__ import annotations

import json
from typing import TextIO

from ._common import ReportOptions, all_findings, statistics


def _objects(results, opts: ReportOptions) -> list:
    if opts.statistics:  # one object per code instead: {code, name, count, fixable_count}
        return statistics([finding for _, finding in all_findings(results)], opts)
    data = []
    for _, finding in all_findings(results):
        item = finding.to_dict()
        if opts.verifications is not None:
            verification = opts.verification(finding)
            item["verification"] = verification.to_dict() if verification is not None else None
        data.append(item)
    return data


def report(results, opts: ReportOptions, out: TextIO) -> None:
    out.write(json.dumps(_objects(results, opts), indent=2, ensure_ascii=True) + "\n")


def report_lines(results, opts: ReportOptions, out: TextIO) -> None:
    for item in _objects(results, opts):
        out.write(json.dumps(item, ensure_ascii=True) + "\n")
