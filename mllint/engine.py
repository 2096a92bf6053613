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
import hashlib
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence

from mllint import noqa
from mllint import screen as _screen
from mllint.files import is_notebook  # noqa: F401  (engine.is_notebook: used here and by callers)
from mllint.sources import MAX_FILE_BYTES, Decoded, UnreadableFile, decode, decode_file  # noqa: F401  (engine.*: callers)
from mllint.legacy_syntax import compile_error, legacy_async  # noqa: F401  (engine.compile_error: fixing.py)
from mllint.findings import PARSE_ERROR_CODE, PARSE_ERROR_NAME, Finding, Severity
from mllint.frameworks import OTHER as OTHER_FRAMEWORK, TORCH, framework_of
from mllint.registry import Rule


class _LazyLibCST:
    """``libcst``, imported on first use: a run that parses nothing (a warm cache, a file
    without trigger words, ``--version``) does not pay for importing it."""

    def __getattr__(self, name):
        import libcst

        return getattr(libcst, name)


cst = _LazyLibCST()


@dataclass
class FileResult:
    path: str
    findings: List[Finding] = field(default_factory=list)
    source: Optional[str] = None  # decoded text, kept for --show-source and fixes
    encoding: str = "utf-8"
    cached: bool = False
    skipped: Optional[str] = None  # why the file was not linted (over max-file-size): a warning, not a finding


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
    # The noqa scan tokenizes the file: done first only when a `# mllint: skip-file` may be
    # there, else only once there are findings to suppress (or a rule about the directives).
    suppressions = _NOT_SCANNED
    if "mllint:" in source:
        suppressions = noqa.scan(source)
        if suppressions is not None and suppressions.skip_file:
            return []
    from mllint.project import view_from_key

    view = view_from_key(getattr(options, "project", None))
    if screen is None:
        screen = getattr(options, "screen", True)
    verdict = _verdict_for(view, source) if screen else None
    implied = frozenset()
    if view is not None and not _runs_for_no_implied_words(verdict, source, rules):
        implied = view.implied_words()
    active = [rule for rule in rules if rule.check_noqa is None and rule.triggered_by(source, implied)]
    parsed_source = source  # what is parsed: the source, or a same-width stand-in for it
    renamed = None
    stored = _stored_screen(verdict, implied, active)
    if stored is not None:
        # The project's facts were read from this very text: it parses, and the screen's verdict
        # was computed from that parse (screen_verdict). Parse again only for a rule that runs.
        framework, passing = stored
        if active and framework == OTHER_FRAMEWORK:
            rules = without_torch_rules(rules)
            active = without_torch_rules(active)
        active = [rule for rule in active if rule.screen is None or rule.code in passing]
        if not active:
            return _suppress([], source, path, rules, suppressions)
        tree = None  # the model parses for statement positions only if a rule asks for one
    else:
        try:  # CPython's parser: the syntax check of every file, and the screen's facts
            tree = _screen.parse(source, path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
        if tree is None and "async" in source:
            renamed = legacy_async(source, path)
            if renamed is not None:  # pre-3.7 code with `async` as a name: lint it renamed
                parsed_source = renamed.source
                tree = _screen.parse(parsed_source, path)
        if tree is None and not active:
            error = _parse_error(source, path)
            return [error] if error else _suppress([], source, path, rules, suppressions)
    if stored is None and tree is not None and active:
        facts = _screen.facts_of(tree)
        facts.torch_project = "torch" in implied
        facts.project_words = implied
        if framework_of(facts) == OTHER_FRAMEWORK:  # TensorFlow, Keras, JAX: no torch rules
            rules = without_torch_rules(rules)
            active = without_torch_rules(active)
        if screen:
            active = _screen.screened(facts, active)
        facts = None
    starts = _screen.statement_starts(tree) if tree is not None and active else None  # for the model's positions
    tree = None  # not kept alive through the LibCST parse
    if not active:
        return _suppress([], source, path, rules, suppressions)
    from mllint.semantics.tree import parse_module

    try:
        module = parse_module(parsed_source)
    except cst.ParserSyntaxError as exc:
        if "\t" not in parsed_source or compile_error(parsed_source, path):
            error = _parse_error(source, path, exc)
            return [error] if error else []
        # CPython accepts it and LibCST does not: tabs mixed into an indentation of spaces,
        # which CPython reads as 8 columns. Lint the same lines with those tabs expanded.
        parsed_source = _expand_indent_tabs(parsed_source)
        try:
            module = parse_module(parsed_source)
        except (cst.ParserSyntaxError, RecursionError, MemoryError):
            error = _parse_error(source, path, exc)
            return [error] if error else []
    except (RecursionError, MemoryError) as exc:  # pathological nesting
        return [file_error(path, f"could not parse: {type(exc).__name__}")]

    from mllint.semantics import build_model

    model = build_model(module, parsed_source, path, options)
    model.ast_starts = starts
    model.enabled = frozenset(rule.code for rule in rules)
    findings: List[Finding] = []
    for rule in active:
        findings.extend(rule.check(model))
    if parsed_source is not source:
        # Positions past an expanded tab are not the file's, and a fix's text would carry a
        # renamed `async` into the file (which would still not parse): report, never rewrite.
        findings = [dataclasses.replace(f, fix=None) for f in findings]
    if renamed is not None:
        findings = [dataclasses.replace(f, message=renamed.restore(f.message), detail=renamed.restore(f.detail))
                    for f in findings]
    return _suppress(findings, source, path, rules, suppressions)


def _parse_error(source: str, path: str, exc=None) -> Optional[Finding]:
    """``syntax_error``; for a file that also uses ``async`` as a name (pre-3.7 code), the
    first error past those names, which is the one to fix (the positions are the same)."""
    error = syntax_error(source, path, exc)
    if error is None or "async" not in source:
        return error
    from mllint.legacy_syntax import rename_async_names

    renamed = rename_async_names(source)
    later = syntax_error(renamed.source, path) if renamed is not None else None
    if later is None:
        return error
    return dataclasses.replace(later, message=renamed.restore(later.message))


def _text_digest(source: str) -> bytes:
    return hashlib.blake2b(source.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def screen_verdict(tree: ast.Module, source: str) -> Optional[tuple]:
    """The project store's screen hook (``store.set_screen``): from the ``ast`` the project's
    facts were read from, what ``lint_source``'s screen would decide for this text, for every
    set of words the project may imply (``view.IMPLIED_WORDS``): (digest of the text, framework,
    the codes of the screened rules that pass for each set of implied words (indexed by the
    set's bits), the codes screened). A file then needs no second CPython parse unless a rule
    goes on to run on it. None when a screen fails (the file is then screened as before)."""
    from mllint.project.view import IMPLIED_WORDS
    from mllint.registry import all_rules

    rules = list(all_rules().values())
    screened = [rule for rule in rules if rule.screen is not None]
    everything = frozenset(IMPLIED_WORDS)  # a rule whose words are missing even so never runs here
    candidates = [rule for rule in screened if rule.triggered_by(source, everything)]
    known = frozenset(rule.code for rule in screened)
    if not candidates and not any(rule.triggered_by(source, everything) for rule in rules):
        # no rule can run on this text: it is linted for its syntax alone (the framework is moot)
        return _text_digest(source), None, (frozenset(),) * (1 << len(IMPLIED_WORDS)), known
    facts = _screen.facts_of(tree)
    framework = framework_of(facts)
    passing = []
    try:
        for bits in range(1 << len(IMPLIED_WORDS)):
            implied = frozenset(w for i, w in enumerate(IMPLIED_WORDS) if bits >> i & 1)
            facts.torch_project = "torch" in implied
            facts.project_words = implied
            facts.implied_read = False
            passing.append(frozenset(rule.code for rule in candidates if rule.screen(facts)))
            if bits == 0 and not facts.implied_read:  # no screen asked: the same for every set
                passing *= 1 << len(IMPLIED_WORDS)
                break
    except Exception:  # a screen that cannot judge this tree: screen the file when it is linted
        return None
    return _text_digest(source), framework, tuple(passing), known


def _verdict_for(view, source: str) -> Optional[tuple]:
    """The verdict ``screen_verdict`` stored with the project's facts, when it was computed from
    this exact text (None: no project, another text)."""
    verdict = view.screen_verdict() if view is not None else None
    if verdict is None or verdict[0] != _text_digest(source):
        return None
    return verdict


def _stored_screen(verdict: Optional[tuple], implied: frozenset, active: Sequence[Rule]):
    """(framework, codes passing the screen) of a stored verdict (`_verdict_for`) for the words
    the project implies, or None (no verdict, a rule it did not screen)."""
    from mllint.project.view import IMPLIED_WORDS

    if verdict is None or not implied.issubset(IMPLIED_WORDS):
        return None
    digest, framework, passing, known = verdict
    if any(rule.screen is not None and rule.code not in known for rule in active):
        return None
    bits = sum(1 << i for i, word in enumerate(IMPLIED_WORDS) if word in implied)
    return framework, passing[bits]


def _runs_for_no_implied_words(verdict: Optional[tuple], source: str, rules: Sequence[Rule]) -> bool:
    """Whether a stored verdict (`_verdict_for`) says that no rule runs on this text, whatever
    words the project implies: then the project is not asked which words it implies (the
    callers of every function of the file, the classes it imports), for most files of a
    large project."""
    from mllint.project.view import IMPLIED_WORDS

    if verdict is None:
        return False
    _, framework, passing, known = verdict
    everything = frozenset(IMPLIED_WORDS)
    possible = [rule for rule in rules if rule.check_noqa is None and rule.triggered_by(source, everything)]
    if framework == OTHER_FRAMEWORK:
        possible = without_torch_rules(possible)
    if any(rule.screen is None or rule.code not in known for rule in possible):
        return False
    ever_passing = frozenset().union(*passing)
    return not any(rule.code in ever_passing for rule in possible)


def without_torch_rules(rules: Sequence[Rule]) -> List[Rule]:
    """The rules that are not about PyTorch (``Rule.framework``), for a file that
    ``frameworks.framework_of`` finds written for another framework."""
    return [rule for rule in rules if rule.framework != TORCH]


def _expand_indent_tabs(source: str) -> str:
    """The source with the tabs of each line's leading whitespace expanded to 8 columns."""
    out = []
    for line in source.splitlines(keepends=True):
        body = line.lstrip(" \t")
        indent = line[: len(line) - len(body)]
        out.append(indent.expandtabs(8) + body if "\t" in indent else line)
    return "".join(out)


_NOT_SCANNED = object()  # lint_source: the file's noqa directives are not read yet


def _suppress(findings, source, path, rules, suppressions) -> List[Finding]:
    """Drop the findings ``# noqa`` suppresses; then run the rules about the directives
    themselves (ML100, unused noqa), which need to know what suppressed what."""
    if suppressions is _NOT_SCANNED:
        needed = findings or any(rule.check_noqa is not None for rule in rules)
        suppressions = noqa.scan(source) if needed else None
    if suppressions is not None:
        findings, used = suppressions.apply(findings)
        enabled = {rule.code for rule in rules}
        for rule in rules:
            if rule.check_noqa is not None and rule.triggered_by(source):
                from mllint.registry import all_rules  # (the catalogue's codes: a rule does not import it)

                extra = rule.check_noqa(path, source, suppressions, used, enabled, frozenset(all_rules()))
                findings.extend(f for f in extra if not suppressions.suppresses(f.line, f.code))
    return sorted(set(findings), key=Finding.sort_key)


def format_size(size: int) -> str:
    """A byte count for people, exact when it is a whole number or tenth of a unit (``2 MiB``,
    ``1.5 MiB``, ``500 kB``, ``812 bytes``), else to a tenth (``2.9 KiB``)."""
    for unit, scale in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024),
                        ("GB", 1000 ** 3), ("MB", 1000 ** 2), ("kB", 1000)):
        if size >= scale and (size * 10) % scale == 0:
            return f"{size / scale:g} {unit}"
    if size < 1024:
        return f"{size} bytes"
    for unit, scale in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"  # pragma: no cover


def too_large(size: int, max_size: Optional[int], what: str = "file") -> Optional[str]:
    """The warning for a file (or a notebook's code) over `max-file-size`, or None."""
    if max_size is None or size <= max_size:
        return None
    return (f"{what} is {format_size(size)}, over max-file-size ({format_size(max_size)}): not linted"
            " (raise the limit with --max-file-size or `max-file-size` in [tool.mllint])")


def _utf8_size(text: str, max_size: Optional[int]) -> int:
    """The UTF-8 length of `text`, computed only when it matters for the limit."""
    if max_size is None or len(text) > max_size or 4 * len(text) <= max_size:
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def lint_text(text: str, path: str, rules: Sequence[Rule], options=None, max_size: Optional[int] = None) -> FileResult:
    """Lint the text of one file: a notebook (JSON) when `path` ends in ``.ipynb``, else Python.

    A notebook that cannot be read is one ML000 finding (at its JSON position). Python text
    over `max_size` bytes (a notebook: its code cells) is not parsed: the result has no
    findings and says why in ``skipped``."""
    if not is_notebook(path):
        skipped = too_large(_utf8_size(text, max_size), max_size)
        if skipped:
            return FileResult(path, [], text, skipped=skipped)
        return FileResult(path, lint_source(text, path, rules, options), text)
    from mllint import notebook

    try:
        nb = notebook.load(text)
    except notebook.NotebookError as exc:
        return FileResult(path, [file_error(path, str(exc), exc.line, exc.column)], text)
    if not nb.program.strip():
        return FileResult(path, [], text)
    skipped = too_large(_utf8_size(nb.program, max_size), max_size, "the code of this notebook")
    if skipped:
        return FileResult(path, [], text, skipped=skipped)
    findings = [nb.map_finding(f) for f in lint_source(nb.program, path, rules, options)] + nb.cell_errors(path)
    return FileResult(path, sorted(set(findings), key=Finding.sort_key), text)


def lint_file(path: str, rules: Sequence[Rule], options=None, max_size: Optional[int] = None) -> FileResult:
    """Lint one file. A Python file over `max_size` bytes (``max-file-size``) is not even
    decoded; a notebook is read whole (its outputs do not count) and its code measured."""
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0  # not a regular file (a pipe): the read below says what is wrong
    if not is_notebook(path):
        skipped = too_large(size, max_size)
        if skipped:
            return FileResult(path, [], skipped=skipped)
    cap = _read_cap(max_size)
    try:
        with open(path, "rb") as handle:
            data = handle.read(cap + 1)
    except OSError as exc:
        return FileResult(path, [file_error(path, f"cannot read file: {exc.strerror or exc}")])
    if len(data) > cap:
        return FileResult(path, [], skipped=f"file is over {format_size(cap)}, more than mllint reads: not linted")
    try:
        decoded = decode_file(path, data)
    except UnreadableFile as exc:
        return FileResult(path, [file_error(path, str(exc))])
    result = lint_text(decoded.text, path, rules, options, max_size)
    result.encoding = decoded.encoding
    return result


# --- many files: cache and process pool (Helper A) ----------------------------------------

POOL_MIN_FILES = 8  # below this many uncached files, a process pool costs more than it saves


class InternalError(Exception):
    """A bug in mllint itself while linting one file (the message names the file)."""


def _lint_one(item):
    path, codes, options, max_size, settle = item
    from mllint.registry import rules_for

    try:
        rules = rules_for(codes)
        result = lint_file(path, rules, options, max_size)
        return settle(result, rules, options) if settle is not None else result
    except Exception as exc:  # a rule or the model crashed: name the file for the bug report
        raise InternalError(f"while linting {path}: {type(exc).__name__}: {exc}") from exc
    finally:
        release_memory()


_TRIM_ABOVE = 128 * 1024 * 1024  # resident bytes above which freed heap is handed back
_malloc_trim = None


def release_memory() -> None:
    """Give the memory freed by the last file back to the system (glibc only).

    A file's syntax tree and model are freed when the file is done (no cache holds them),
    but glibc keeps the freed heap for the process: after a 500 KB file of data tables a
    worker stays at 600+ MiB, and a long run grows with every large file to several GiB.
    ``malloc_trim(0)`` returns it (600 MiB -> 50 MiB); it runs only when the process is
    large, so small files pay nothing."""
    global _malloc_trim
    if _malloc_trim is None:
        _malloc_trim = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                _malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim
            except (OSError, AttributeError):
                pass
    if not _malloc_trim:
        return
    try:
        with open("/proc/self/statm", "rb") as handle:
            resident = int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return
    if resident > _TRIM_ABOVE:
        _malloc_trim(0)


def _read_cap(max_size: Optional[int]) -> int:
    """How much of a file is read at most: a notebook's JSON (outputs included) may be far
    larger than `max_size`, which counts its code; never less than MAX_FILE_BYTES."""
    return max(MAX_FILE_BYTES, max_size or 0)


def _read_for_cache(path: str, max_size: Optional[int]):
    """(bytes, sha256) of a file, or None when it cannot be read or is too large to lint."""
    from mllint.cache import content_hash

    limit = _read_cap(max_size) if is_notebook(path) or max_size is None else max_size
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        return None
    return data, content_hash(data)


def lint_paths(
    files, settings, *, use_cache: bool = True, jobs: Optional[int] = None, stats: Optional[dict] = None,
    fixes: bool = True,
    progress: Optional[Callable[[int, int], None]] = None,
    screen: bool = True,
    settle: Optional[Callable] = None,
) -> List[FileResult]:
    """Lint `files` (display paths) with the rules `settings` enables for each of them.

    `settings` is a `config.Resolver` (each file gets the settings of its own configuration)
    or one `config.Settings`. Results come back in the order of `files`. Cached results (same
    bytes, mllint version, rule sources and the file's own settings) are reused and marked
    ``cached``; there is one cache per configuration. The remaining files are
    linted in a process pool when there are more than POOL_MIN_FILES of them and more than
    one CPU (or `jobs` allows it), otherwise in this process. `stats`, when given, receives
    ``workers`` (processes used for linting; 1 = in this process) and ``cache_written``.
    `progress`, when given, is called as ``progress(done, total)`` as files are done.
    Files over their ``max-file-size`` are not linted (``skipped`` says why) nor cached.
    Without `fixes` the findings' fixes are deferred (they say a fix exists; nothing is
    built): what a report that shows no edits needs.
    `screen` False lints without the rule screen (mllint/screen.py): the same findings, slower.
    `settle`, when given, is called as ``settle(result, rules, options)`` on each file linted
    (in the worker that linted it; a module-level function) and returns the result to report
    and cache (``fixing.settle_fixable``: only the fixes --fix applies stay).
    """
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
        options = dataclasses.replace(ModelOptions.for_file(own, path, settings, use_cache), fixes=fixes, screen=screen)
        if not is_notebook(path):  # over the limit: said here, without loading any rule
            try:
                skipped = too_large(os.path.getsize(path), own.max_file_size)
            except OSError:
                skipped = None
            if skipped:
                results[index] = FileResult(path, [], skipped=skipped)
                continue
        cache = cache_for(own)
        digest = None
        if cache is not None:
            read = _read_for_cache(path, own.max_file_size)
            if read is not None:
                data, digest = read
                digest = _with_project(digest, options.project)
                findings = cache.get(os.path.abspath(path), digest, path, fixes=fixes, settled=settle is not None)
                if findings is not None:
                    results[index] = _cached_result(path, data, findings)
                    continue
        pending.append((index, path, codes, options, digest, cache, own.max_file_size))

    items = [(path, codes, options, max_size, settle) for _, path, codes, options, _, _, max_size in pending]
    total = len(files)
    done = total - len(items)

    def counted(linted):
        nonlocal done
        for result in linted:
            done += 1
            if progress is not None:
                progress(done, total)
            yield result

    if progress is not None and done:
        progress(done, total)
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    linted = None
    used = 1
    if len(items) > POOL_MIN_FILES and workers > 1:
        used = min(workers, len(items))
        order = _large_files_first([item[0] for item in items])
        linted = _lint_in_pool([items[i] for i in order], used, counted)
        if linted is not None:
            unsorted: List[FileResult] = [None] * len(items)  # type: ignore[list-item]
            for position, result in zip(order, linted):
                unsorted[position] = result
            linted = unsorted
    if linted is None:
        used = 1
        done = total - len(items)
        linted = list(counted(_lint_one(item) for item in items))

    for (index, path, _, _, digest, cache, _), result in zip(pending, linted):
        results[index] = result
        if cache is not None and digest is not None and result.skipped is None:
            cache.put(os.path.abspath(path), digest, result.findings, settled=settle is not None)
    written = all([cache.save() for cache in caches.values()]) if use_cache else False
    if stats is not None:
        stats.update(workers=used, cache_written=written)
    return results  # type: ignore[return-value]


LARGE_FIRST_BYTES = 64 * 1024  # files at least this large are linted first in a pool, largest first


def _large_files_first(paths: List[str]) -> List[int]:
    """The order in which a pool lints `paths` (indices): the large files first, largest first,
    then the others in their order (files of a folder together, as they share facts). A large
    file at the end leaves one worker alone with it while the others wait; early, a worker
    takes it while it holds least, which keeps the largest process smaller (the torch package:
    its 1 MB test table is the largest process's peak)."""
    sizes = []
    for path in paths:
        try:
            sizes.append(os.path.getsize(path))
        except OSError:
            sizes.append(0)
    large = sorted((i for i, size in enumerate(sizes) if size >= LARGE_FIRST_BYTES), key=lambda i: -sizes[i])
    chosen = set(large)
    return large + [i for i in range(len(paths)) if i not in chosen]


def _with_project(digest: str, key) -> str:
    """A file's cache digest with what its findings may depend on in its project (the files it
    imports and the files that import it, see ``ProjectView.digest``)."""
    from mllint.project import view_from_key

    view = view_from_key(key)
    extra = view.digest() if view is not None else ""
    return f"{digest}+{extra}" if extra else digest


def _cached_result(path: str, data: bytes, findings: List[Finding]) -> FileResult:
    try:
        decoded = decode_file(path, data)
    except UnreadableFile:
        return FileResult(path, findings, cached=True)
    return FileResult(path, findings, decoded.text, decoded.encoding, cached=True)


def _lint_in_pool(items, workers: int, counted=lambda results: results):
    """Lint in worker processes (results in the order of `items`, each passed through
    `counted` as it arrives); None when a pool cannot be used here (the caller goes serial).

    Chunks are small (at most CHUNK_MAX files): a large chunk leaves one worker alone with
    the slow files at the end of a run and holds its results until the whole chunk is done."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    chunksize = max(1, min(CHUNK_MAX, len(items) // (workers * 8)))
    try:
        import gc

        from mllint import project

        # the workers collect as this process does (cli._tune_gc), and know the projects built here
        projects = project.built()
        with ProcessPoolExecutor(max_workers=workers, initializer=_init_worker,
                                 initargs=(gc.get_threshold(), projects)) as pool:
            return list(counted(pool.map(_lint_one, items, chunksize=chunksize)))
    except (BrokenProcessPool, OSError, NotImplementedError, PermissionError):
        return None


CHUNK_MAX = 8


def _init_worker(thresholds, projects) -> None:
    import gc

    from mllint import project

    gc.set_threshold(*thresholds)
    project.install(projects)


def _install_screen_hook() -> None:
    from mllint.project.store import set_screen

    set_screen(screen_verdict, _load_rules)


def _load_rules() -> None:
    from mllint.registry import all_rules

    all_rules()


_install_screen_hook()
