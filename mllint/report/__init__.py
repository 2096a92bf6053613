"""Output formats, one module each; ``REPORTERS[name](results, opts, out)`` writes a report.

Every reporter takes ``results: list[FileResult]``, a ``ReportOptions`` and a text
stream, and knows nothing about particular rules.
"""

from __future__ import annotations

from . import concise, github, gitlab, grouped, json, junit, sarif, text
from ._common import ReportOptions

REPORTERS = {
    "text": text.report,
    "full": text.report_full,
    "concise": concise.report,
    "grouped": grouped.report,
    "json": json.report,
    "json-lines": json.report_lines,
    "junit": junit.report,
    "gitlab": gitlab.report,
    "sarif": sarif.report,
    "github": github.report,
}
__all__ = ["REPORTERS", "ReportOptions"]
