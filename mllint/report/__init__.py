"""Output formats, one module each; ``REPORTERS[name](results, opts, out)`` writes a report.

Every reporter takes ``results: list[FileResult]``, a ``ReportOptions`` and a text
stream, and knows nothing about particular rules.
"""

from __future__ import annotations

from . import concise, github, json, sarif, text
from ._common import ReportOptions

REPORTERS = {
    "text": text.report,
    "concise": concise.report,
    "json": json.report,
    "sarif": sarif.report,
    "github": github.report,
}

__all__ = ["REPORTERS", "ReportOptions"]
