"""The per-file pipeline: read bytes, prefilter, parse once, build the model once, run rules, noqa.

``lint_source`` is the pure core (Python text in, findings out); ``lint_text`` is the
one entry for a file's text (files and stdin): a ``.ipynb`` path is read as a notebook
(its code cells as one program, findings placed in their cells; see mllint/notebook.py),
anything else as Python; ``lint_file`` adds reading and decoding; ``lint_paths`` runs
many files (process pool, cache).
"""

from __future__ import annotations

import ast
import dataclasses
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

import libcst as cst

from mllint import noqa
from mllint import screen as _screen
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
        # A cookie naming a codec this interpreter does not have (``future_fstrings``, a
        # codec a package registers at import time) still marks a UTF-8 file: read it as
        # such, as those codecs' own files are. A BOM that contradicts the cookie is bad.
        if "unknown encoding" not in str(exc):
            raise UnreadableFile(f"bad coding declaration: {exc}") from None
        encoding = "utf-8"
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


_CST_POSITION = re.compile(r"error at (\d+):(\d+):\s*")


def _libcst_parses(source: str) -> bool:
    try:
        cst.parse_module(source)
    except Exception:
        return False
    return True


def compile_error(source: str, path: str) -> bool:
    """Whether CPython itself rejects the source."""
    try:
        compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    return False


def syntax_error(source: str, path: str, exc: Optional[cst.ParserSyntaxError] = None) -> Optional[Finding]:
    """ML000 for a source that does not parse, or None when it parses.

    CPython's own parser gives the clearest message and position (and is fast enough to
    check every file, also those no rule needs to parse); LibCST's error is the fallback
    for code that CPython accepts but LibCST does not."""
    try:
        compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as err:
        if exc is None and _libcst_parses(source):
            return None  # newer syntax than the running Python knows (LibCST has its own grammar)
        return file_error(path, f"SyntaxError: {err.msg}", err.lineno or 1, max(err.offset or 1, 1))
    except (ValueError, RecursionError, MemoryError) as err:
        return file_error(path, f"could not parse: {type(err).__name__}: {err}")
    if exc is None:
        return None
    text = str(exc.message).strip().splitlines()[0] if str(exc.message).strip() else "invalid syntax"
    match = _CST_POSITION.search(text)
    line, column = exc.raw_line, exc.raw_column + 1
    if match:
        line, column = int(match.group(1)), int(match.group(2)) + 1
        text = text[match.end():]
    return file_error(path, f"SyntaxError (LibCST): {text}", line, column)


def lint_source(source: str, path: str, rules: Sequence[Rule], options=None, screen: Optional[bool] = None) -> List[Finding]:
    """Lint Python source text with the given rules. Never raises for bad user code.

    `options` (a ``semantics.options.ModelOptions``, e.g. from the file's settings) tells
    the model what the settings say about the environment (``torch-version``). `screen`
    (default: ``options.screen``, else True) keeps only the rules whose cheap ``ast``
    screen passes (mllint/screen.py) before the LibCST parse; off, every triggered rule
    runs (the same findings, slower: a debugging aid)."""
    suppressions = noqa.scan(source)
    if suppressions is not None and suppressions.skip_file:
        return []
    active = [rule for rule in rules if rule.check_noqa is None and rule.triggered_by(source)]
    try:  # CPython's parser: the syntax check of every file, and the screen's facts
        tree = _screen.parse(source, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    if tree is None and not active:
        error = syntax_error(source, path)
        return [error] if error else _suppress([], source, path, rules, suppressions)
    if screen is None:
        screen = getattr(options, "screen", True)
    if tree is not None and active and screen:
        active = _screen.screened(_screen.facts_of(tree), active)
    tree = None  # not kept alive through the LibCST parse
    if not active:
        return _suppress([], source, path, rules, suppressions)
    parsed_source = source
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        if "\t" not in source or compile_error(source, path):
            error = syntax_error(source, path, exc)
            return [error] if error else []
        # CPython accepts it and LibCST does not: tabs mixed into an indentation of spaces,
        # which CPython reads as 8 columns. Lint the same lines with those tabs expanded.
        parsed_source = _expand_indent_tabs(source)
        try:
            module = cst.parse_module(parsed_source)
        except (cst.ParserSyntaxError, RecursionError, MemoryError):
            error = syntax_error(source, path, exc)
            return [error] if error else []
    except (RecursionError, MemoryError) as exc:  # pathological nesting
        return [file_error(path, f"could not parse: {type(exc).__name__}")]

    from mllint.semantics import build_model

    model = build_model(module, parsed_source, path, options)
    findings: List[Finding] = []
    for rule in active:
        findings.extend(rule.check(model))
    if parsed_source is not source:
        # positions past an expanded tab are not the file's: report, never rewrite
        findings = [dataclasses.replace(f, fix=None) for f in findings]
    return _suppress(findings, source, path, rules, suppressions)


def _expand_indent_tabs(source: str) -> str:
    """The source with the tabs of each line's leading whitespace expanded to 8 columns."""
    out = []
    for line in source.splitlines(keepends=True):
        body = line.lstrip(" \t")
        indent = line[: len(line) - len(body)]
        out.append(indent.expandtabs(8) + body if "\t" in indent else line)
    return "".join(out)


def _suppress(findings, source, path, rules, suppressions) -> List[Finding]:
    """Drop the findings ``# noqa`` suppresses; then run the rules about the directives
    themselves (ML100, unused noqa), which need to know what suppressed what."""
    if suppressions is not None:
        findings, used = suppressions.apply(findings)
        enabled = {rule.code for rule in rules}
        for rule in rules:
            if rule.check_noqa is not None and rule.triggered_by(source):
                extra = rule.check_noqa(path, source, suppressions, used, enabled)
                findings.extend(f for f in extra if not suppressions.suppresses(f.line, f.code))
    return sorted(set(findings), key=Finding.sort_key)


def lint_text(text: str, path: str, rules: Sequence[Rule], options=None) -> FileResult:
    """Lint the text of one file: a notebook (JSON) when `path` ends in ``.ipynb``, else Python.

    A notebook that cannot be read is one ML000 finding (at its JSON position)."""
    from mllint import notebook

    if not notebook.is_notebook(path):
        return FileResult(path, lint_source(text, path, rules, options), text)
    try:
        nb = notebook.load(text)
    except notebook.NotebookError as exc:
        return FileResult(path, [file_error(path, str(exc), exc.line, exc.column)], text)
    if not nb.program.strip():
        return FileResult(path, [], text)
    findings = [nb.map_finding(f) for f in lint_source(nb.program, path, rules, options)] + nb.cell_errors(path)
    return FileResult(path, sorted(set(findings), key=Finding.sort_key), text)


def decode_file(path: str, data: bytes) -> Decoded:
    """`decode`, except that a notebook is JSON: UTF-8 (a BOM is allowed), no coding cookie."""
    from mllint.notebook import is_notebook

    if not is_notebook(path):
        return decode(data)
    if b"\x00" in data:
        raise UnreadableFile("binary file (contains NUL bytes)")
    encoding = "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"cannot decode as utf-8: {exc.reason}") from None
    return Decoded(text, encoding, "\r\n" if "\r\n" in text else "\n")


def lint_file(path: str, rules: Sequence[Rule], options=None) -> FileResult:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return FileResult(path, [file_error(path, f"cannot read file: {exc.strerror or exc}")])
    if len(data) > MAX_FILE_BYTES:
        return FileResult(path, [file_error(path, f"file larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; skipped")])
    try:
        decoded = decode_file(path, data)
    except UnreadableFile as exc:
        return FileResult(path, [file_error(path, str(exc))])
    result = lint_text(decoded.text, path, rules, options)
    result.encoding = decoded.encoding
    return result


# --- many files: cache and process pool (Helper A) ----------------------------------------

POOL_MIN_FILES = 8  # below this many uncached files, a process pool costs more than it saves


class InternalError(Exception):
    """A bug in mllint itself while linting one file (the message names the file)."""


def _lint_one(item):
    path, codes, options = item
    from mllint.registry import rules_for

    try:
        return lint_file(path, rules_for(codes), options)
    except Exception as exc:  # a rule or the model crashed: name the file for the bug report
        raise InternalError(f"while linting {path}: {type(exc).__name__}: {exc}") from exc


def _read_for_cache(path: str):
    """(bytes, sha256) of a file, or None when it cannot be read or is too large to lint."""
    from mllint.cache import content_hash

    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_FILE_BYTES:
        return None
    return data, content_hash(data)


def lint_paths(
    files, settings, *, use_cache: bool = True, jobs: Optional[int] = None, stats: Optional[dict] = None,
    screen: bool = True,
) -> List[FileResult]:
    """Lint `files` (display paths) with the rules `settings` enables for each of them.

    `settings` is a `config.Resolver` (each file gets the settings of its own configuration)
    or one `config.Settings`. Results come back in the order of `files`. Cached results (same
    bytes, mllint version, rule sources and the file's own settings) are reused and marked
    ``cached``; there is one cache per configuration. The remaining files are
    linted in a process pool when there are more than POOL_MIN_FILES of them and more than
    one CPU (or `jobs` allows it), otherwise in this process. `stats`, when given, receives
    ``workers`` (processes used for linting; 1 = in this process) and ``cache_written``.
    `screen` False lints without the rule screen (mllint/screen.py): the same findings, slower.
    """
    import os

    caches = {}  # (cache dir, settings fingerprint) -> Cache

    def cache_for(own):
        if not use_cache:
            return None
        key = (str(own.cache_dir), own.fingerprint())
        if key not in caches:
            from mllint.cache import Cache

            caches[key] = Cache(own.cache_dir, key[1])
        return caches[key]

    results: List[Optional[FileResult]] = [None] * len(files)
    from mllint.semantics.options import ModelOptions

    pending = []  # (index, path, codes, options, digest, cache)
    for index, path in enumerate(files):
        own = settings.settings_for(path)
        codes = tuple(sorted(own.codes_for(path)))
        options = ModelOptions.from_settings(own)
        if not screen:  # --no-screen: every triggered rule is parsed for (same findings, slower)
            options = dataclasses.replace(options, screen=False)
        cache = cache_for(own)
        digest = None
        if cache is not None:
            read = _read_for_cache(path)
            if read is not None:
                data, digest = read
                findings = cache.get(os.path.abspath(path), digest, path)
                if findings is not None:
                    results[index] = _cached_result(path, data, findings)
                    continue
        pending.append((index, path, codes, options, digest, cache))

    items = [(path, codes, options) for _, path, codes, options, _, _ in pending]
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    linted = None
    used = 1
    if len(items) > POOL_MIN_FILES and workers > 1:
        used = min(workers, len(items))
        linted = _lint_in_pool(items, used)
    if linted is None:
        used = 1
        linted = [_lint_one(item) for item in items]

    for (index, path, _, _, digest, cache), result in zip(pending, linted):
        results[index] = result
        if cache is not None and digest is not None:
            cache.put(os.path.abspath(path), digest, result.findings)
    written = all([cache.save() for cache in caches.values()]) if use_cache else False
    if stats is not None:
        stats.update(workers=used, cache_written=written)
    return results  # type: ignore[return-value]


def _cached_result(path: str, data: bytes, findings: List[Finding]) -> FileResult:
    try:
        decoded = decode_file(path, data)
    except UnreadableFile:
        return FileResult(path, findings, cached=True)
    return FileResult(path, findings, decoded.text, decoded.encoding, cached=True)


def _lint_in_pool(items, workers: int):
    """Lint in worker processes; None when a pool cannot be used here (the caller goes serial)."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    chunksize = max(1, len(items) // (workers * 4))
    try:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(_lint_one, items, chunksize=chunksize))
    except (BrokenProcessPool, OSError, NotImplementedError, PermissionError):
        return None
