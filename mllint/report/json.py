"""JSON: an array of Finding.to_dict() objects, sorted by path, line, column, code.

Each object has exactly ``path, line, column, end_line, end_column, code, name,
message, severity, fix``; ``fix`` is null or ``{applicability, message, edits:
[{line, column, end_line, end_column, content}]}``. Paths are as the CLI gave them.
Pretty-printed with an indent of 2 and a final newline; non-ASCII text is escaped
so that the output is the same bytes whatever the stream's encoding.
"""

from __future__ import annotations

import json
from typing import TextIO

from ._common import ReportOptions, all_findings


def report(results, opts: ReportOptions, out: TextIO) -> None:
    data = [finding.to_dict() for _, finding in all_findings(results)]
    out.write(json.dumps(data, indent=2, ensure_ascii=True) + "\n")
