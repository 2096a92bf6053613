"""JUnit XML, as Ruff's ``junit`` format, for CI systems that show test reports (GitLab,
Jenkins, Azure): one ``<testsuite>`` per file with findings, one ``<testcase>`` per finding
(``name`` the rule code and name, ``classname`` the path, ``line``/``file`` attributes), each with
a ``<failure>`` whose ``message`` is the finding's message and whose text is
``path:line:col: CODE message``. No findings: one empty suite named ``mllint`` (0 tests).

With --statistics: the same document (a report of findings has no other shape here).
"""

from __future__ import annotations

from typing import TextIO
from xml.etree import ElementTree as ET

from ._common import ReportOptions, all_findings, rule_info


def report(results, opts: ReportOptions, out: TextIO) -> None:
    pairs = all_findings(results)
    by_path: dict = {}
    for _, finding in pairs:
        by_path.setdefault(finding.path, []).append(finding)
    root = ET.Element("testsuites", name="mllint", tests=str(len(pairs)), failures=str(len(pairs)), errors="0")
    if not by_path:
        ET.SubElement(root, "testsuite", name="mllint", tests="0", failures="0", errors="0", skipped="0")
    for path, findings in by_path.items():
        suite = ET.SubElement(root, "testsuite", name=path, tests=str(len(findings)), failures=str(len(findings)),
                              errors="0", skipped="0")
        for finding in findings:
            where = f"{finding.line}:{finding.column}" if finding.cell is None else \
                f"cell {finding.cell}:line {finding.line}:col {finding.column}"
            case = ET.SubElement(suite, "testcase", name=f"{finding.code} ({rule_info(finding.code, opts, finding).name})",
                                 classname=path, file=path, line=str(finding.json_line or finding.line))
            failure = ET.SubElement(case, "failure", message=finding.message, type=finding.code)
            failure.text = f"{path}:{where}: {finding.code} {finding.message}"
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode") + "\n")
