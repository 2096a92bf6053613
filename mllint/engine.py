"""The per-file pipeline: read bytes, prefilter, parse once, build the model once, run rules, noqa.

``lint_source`` is the pure core (text in, findings out); ``lint_file`` adds reading
and decoding; ``lint_paths`` runs many files (process pool, cache).
"""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

import libcst as cst

from mllint import noqa
from mllint.findings import Finding, Severity
from mllint.registry import PARSE_ERROR_CODE, PARSE_ERROR_NAME, Rule

MAX_FILE_BYTES = 10 * 1024 * 1024


@dataclass
class Decoded:
    text: str
    encoding: str
    newline: str


@dataclass
class FileResult:
    path: str
    findings: List[Finding] = field(default_factory=list)
    source: Optional[str] = None  # decoded text, kept for --show-source and fixes
    encoding: str = "utf-8"
    cached: bool = False


class UnreadableFile(Exception):
    """A file that cannot be linted as Python text (binary, undecodable, too large)."""


def decode(data: bytes) -> Decoded:
    if b"\x00" in data:
        raise UnreadableFile("binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise UnreadableFile(f"bad coding declaration: {exc}") from None
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise UnreadableFile(f"cannot decode as {encoding}: {exc.reason if hasattr(exc, 'reason') else exc}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
        encoding = "utf-8-sig"
    newline = "\r\n" if "\r\n" in text else "\n"
    return Decoded(text, encoding, newline)


def file_error(path: str, message: str, line: int = 1, column: int = 1) -> Finding:
    return Finding(
        path=path,
        line=line,
        column=column,
        end_line=line,
        end_column=column,
        code=PARSE_ERROR_CODE,
        name=PARSE_ERROR_NAME,
        message=message,
        severity=Severity.ERROR,
    )


def _syntax_error(path: str, exc: cst.ParserSyntaxError) -> Finding:
    first = str(exc.message).strip().splitlines()[0] if str(exc.message).strip() else "invalid syntax"
    return file_error(path, f"SyntaxError: {first}", exc.raw_line, exc.raw_column + 1)


def lint_source(source: str, path: str, rules: Sequence[Rule]) -> List[Finding]:
    """Lint Python source text with the given rules. Never raises for bad user code."""
    suppressions = noqa.scan(source)
    if suppressions is not None and suppressions.skip_file:
        return []
    active = [rule for rule in rules if rule.triggered_by(source)]
    if not active:
        return []
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        return [_syntax_error(path, exc)]
    except (RecursionError, MemoryError) as exc:  # pathological nesting
        return [file_error(path, f"could not parse: {type(exc).__name__}")]

    from mllint.semantics import build_model

    model = build_model(module, source, path)
    findings: List[Finding] = []
    for rule in active:
        findings.extend(rule.check(model))
    if suppressions is not None:
        findings = [f for f in findings if not suppressions.suppresses(f.line, f.code)]
    return sorted(set(findings), key=Finding.sort_key)


def lint_file(path: str, rules: Sequence[Rule]) -> FileResult:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return FileResult(path, [file_error(path, f"cannot read file: {exc.strerror or exc}")])
    if len(data) > MAX_FILE_BYTES:
        return FileResult(path, [file_error(path, f"file larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; skipped")])
    try:
        decoded = decode(data)
    except UnreadableFile as exc:
        return FileResult(path, [file_error(path, str(exc))])
    findings = lint_source(decoded.text, path, rules)
    return FileResult(path, findings, decoded.text, decoded.encoding)
