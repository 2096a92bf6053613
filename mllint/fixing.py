"""Applying fixes: lint, apply, re-parse, re-lint, and write the file atomically.

``fix_source`` is the pure core (Python text in, text and accounting out);
``fix_text`` is the one entry for a file's text (files and stdin; a ``.ipynb`` path is
fixed as a notebook, see mllint/notebook.py); ``fix_file`` adds reading, decoding and
the atomic write; ``unified_diff`` renders ``--diff`` (cell by cell for a notebook).

A fix is kept only if, after applying it, the text still parses, the finding it
was made for is gone, and no finding appears that was not there before. Findings
are matched by code and message, as multisets, preferring the same position
(old positions are mapped through the edits, so line shifts do not matter); a
finding of the fixed kind at the fixed finding's own place means it is still
there. Otherwise the fix is dropped, with a reason, and the text reverts to what
it was before. Fixes whose edits do not overlap are tried as one batch; if the
batch fails, ever smaller leading parts of it are tried, down to a single fix,
so a rejection always names the fix that caused it. A fix that brings out findings with
applicable fixes of their own is applied together with them (``_try``, at most CHAIN_MAX
further steps), and the whole is checked as one: the finding it was made for is gone and
nothing new remains.

Since every kept round removes at least one finding and adds none, the loop
ends by itself; ``MAX_ITERATIONS`` (Ruff's bound) is a second guard, and a fix
that would bring back an earlier text is refused.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import stat
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from mllint import engine
from mllint.findings import map_offset  # noqa: F401  (used below; notebooks use it from findings)
from mllint.findings import Applicability, Edit, Finding, split_lines

# Like Ruff: after this many lint -> fix rounds we stop and report what is left.
MAX_ITERATIONS = 100


@dataclass
class FixOutcome:
    source: str  # the fixed text (the input text when nothing was applied)
    applied: List[Finding] = field(default_factory=list)
    rejected: List[Tuple[Finding, str]] = field(default_factory=list)
    remaining: List[Finding] = field(default_factory=list)  # findings of the fixed text
    kept: List[Finding] = field(default_factory=list)  # the input's findings that remain, placed in the input
    initial: List[Finding] = field(default_factory=list)  # findings of the input text
    iterations: int = 0
    hit_limit: bool = False  # stopped by the iteration bound with applicable fixes left

    @property
    def changed(self) -> bool:
        return bool(self.applied)

    @property
    def fixed(self) -> List[Finding]:
        """The input's findings that the fixes removed (by their own fix or by another's: one
        ``@torch.no_grad()`` fixes every forward of its function), placed in the input."""
        return _unmatched(self.initial, self.kept)


@dataclass
class FileFixResult:
    path: str
    old: Optional[str]  # decoded text as read (None if the file could not be read)
    new: Optional[str]  # text after fixing (== old when nothing changed)
    outcome: FixOutcome
    encoding: str = "utf-8"
    written: bool = False
    error: Optional[str] = None  # a one-line message when reading or writing failed

    @property
    def changed(self) -> bool:
        return self.old is not None and self.new is not None and self.old != self.new

    def file_result(self) -> engine.FileResult:
        """The file's findings after fixing, in the shape reporters take."""
        source = self.new if self.new is not None else self.old
        return engine.FileResult(self.path, list(self.outcome.remaining), source, self.encoding)


# --- positions -------------------------------------------------------------------------

class _Text:
    """Offsets of a text, with lines split exactly as ``findings.apply_edits`` splits them."""

    def __init__(self, text: str):
        self.text = text
        self.lines = split_lines(text)
        starts = [0]
        for line in self.lines:
            starts.append(starts[-1] + len(line))
        self.starts = starts

    def offset(self, line: int, column: int) -> Optional[int]:
        """Offset of a 1-based position, or None if it is not inside (or just past) the text."""
        if line < 1 or column < 1:
            return None
        if line - 1 >= len(self.lines):
            # apply_edits maps any line past the end to the end of the text; accept only
            # the position right after the last line (what whole-line edits produce).
            return len(self.text) if line == len(self.lines) + 1 and column == 1 else None
        if column - 1 > len(self.lines[line - 1]):
            return None
        return self.starts[line - 1] + column - 1

    def clamped_offset(self, line: int, column: int) -> int:
        if line - 1 >= len(self.lines):
            return len(self.text)
        line = max(line, 1)
        return self.starts[line - 1] + min(max(column, 1) - 1, len(self.lines[line - 1]))


_Span = Tuple[int, int, str]  # start offset, end offset, replacement


def _spans(text: _Text, edits: Sequence[Edit]) -> Optional[List[_Span]]:
    spans = []
    for edit in edits:
        start = text.offset(edit.line, edit.column)
        end = text.offset(edit.end_line, edit.end_column)
        if start is None or end is None or end < start:
            return None
        spans.append((start, end, edit.content))
    spans.sort(key=lambda s: (s[0], s[1]))
    for (s1, e1, _), (s2, _e2, _) in zip(spans, spans[1:]):
        if s2 < e1 or (s1 == s2 and s1 == e1):  # overlapping, or two insertions at one point
            return None
    return spans


def _newline_of(text: str) -> str:
    # The same choice engine.decode makes.
    return "\r\n" if "\r\n" in text else "\n"


def _with_newline(content: str, newline: str) -> str:
    if newline == "\n" or "\n" not in content:
        return content
    return content.replace("\r\n", "\n").replace("\n", newline)


def _key(finding: Finding) -> Tuple[str, str, str]:
    # the detail too: messages are short, the detail tells two findings of one kind apart. Their
    # numbers are not compared: they name lines ("then cross-validated (line 9)", "`scaler.unscale_`
    # at line 6") that move when a fix inserts a line above them
    return (finding.code, _NUMBERS.sub("0", finding.message), _NUMBERS.sub("0", finding.detail or ""))


_NUMBERS = re.compile(r"\d+")


def _parses(text: str) -> Optional[str]:
    """None if the text parses, else a one-line reason. CPython's parser first (many times
    cheaper; the re-lint parses with LibCST anyway); LibCST decides only when CPython
    refuses (syntax newer than the running Python)."""
    if not engine.compile_error(text, "<fixed>"):
        return None
    try:
        import libcst as cst  # (only here: a warm run imports this module and never parses)

        cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        first = str(exc.message).strip().splitlines()
        return f"fix produced invalid syntax (line {exc.raw_line}: {first[0] if first else 'invalid syntax'})"
    except (RecursionError, MemoryError) as exc:
        return f"fix produced a file that cannot be parsed ({type(exc).__name__})"
    return None


def _describe(finding: Finding) -> str:
    return f"{finding.code} at {finding.line}:{finding.column} ({finding.message})"


# --- the fix loop ----------------------------------------------------------------------

class _Candidate:
    def __init__(self, finding: Finding, spans: List[_Span]):
        self.finding = finding
        self.spans = spans


def _applicable(finding: Finding, unsafe: bool) -> bool:
    fix = finding.fix
    if fix is None or not fix.edits:
        return False
    if fix.applicability is Applicability.SAFE:
        return True
    return unsafe and fix.applicability is Applicability.UNSAFE


def _fix_spans(finding: Finding, index: _Text, newline: str) -> Optional[List[_Span]]:
    """The spans of `finding`'s fix in the text of `index` (inserted lines in the text's own
    newline style), or None when its positions are impossible or overlap."""
    edits = [Edit(e.line, e.column, e.end_line, e.end_column, _with_newline(e.content, newline))
             for e in finding.fix.edits]
    return _spans(index, edits)


def _apply(text: str, spans: Sequence[_Span]) -> str:
    out = []
    last = 0
    for start, end, content in sorted(spans, key=lambda s: (s[0], s[1])):
        out.append(text[last:start])
        out.append(content)
        last = end
    out.append(text[last:])
    return "".join(out)


def _check(
    old: _Text,
    old_findings: Sequence[Finding],
    batch: Sequence[_Candidate],
    new_text: str,
    new_findings: Sequence[Finding],
    steps: Sequence[Sequence[_Span]],
) -> Tuple[Optional[str], List[Finding], List[Tuple[Finding, Finding]]]:
    """(None, [], matches) if the batch's fixes are all good, else (a one-line reason, the
    findings the fixes brought out when that is the reason, []). The matches pair each new
    finding with the old finding it continues.

    `steps` are the spans of each edit made since `old` (the batch's own, then those of the
    fixes of what it brought out, see `_try`). Every finding of the new text must be matched
    to a finding of the old text, other than the ones being fixed, with the same code and
    message: first one at the same position (old positions mapped through the edits), then
    any left over (a rule may report at a spot that moved in other ways). Whatever cannot be
    matched is new, or, if it sits where a fixed finding was, that finding was not removed.
    """
    new_index = _Text(new_text)

    def mapped(offset: int) -> int:
        for spans in steps:
            offset = map_offset(offset, spans)
        return offset

    def old_at(f: Finding) -> Tuple[Tuple[str, str, str], int]:
        return (_key(f), mapped(old.clamped_offset(f.line, f.column)))

    def new_at(f: Finding) -> Tuple[Tuple[str, str, str], int]:
        return (_key(f), new_index.clamped_offset(f.line, f.column))

    fixed_ids = {id(c.finding) for c in batch}
    # At each fixed finding's place, the count of findings of its kind must drop (another
    # finding of the same kind at the same place, e.g. for a second optimizer, may stay).
    count_before = Counter(old_at(f) for f in old_findings)
    count_after = Counter(new_at(f) for f in new_findings)
    for where in {old_at(c.finding) for c in batch}:
        if count_after[where] >= count_before[where]:
            f = next(f for f in new_findings if new_at(f) == where)
            return f"fix did not remove its finding ({f.code} is still reported at {f.line}:{f.column})", [], []

    # the old findings each new one continues (by identity), the same place first, then the kind
    by_place: Dict[Tuple[Tuple[str, str, str], int], List[Finding]] = {}
    by_key: Dict[Tuple[str, str, str], List[Finding]] = {}
    for f in old_findings:
        if id(f) not in fixed_ids:
            by_place.setdefault(old_at(f), []).append(f)
            by_key.setdefault(_key(f), []).append(f)
    matches: List[Tuple[Finding, Finding]] = []
    unmatched = []
    for f in new_findings:
        same_place = by_place.get(new_at(f))
        if same_place:
            old_finding = same_place.pop(0)
            by_key[_key(f)].remove(old_finding)
            matches.append((f, old_finding))
        else:
            unmatched.append(f)
    new = []
    for f in unmatched:
        same_kind = by_key.get(_key(f))
        if same_kind:
            matches.append((f, same_kind.pop(0)))
        else:
            new.append(f)
    if new:
        return f"fix introduced a new finding: {_describe(new[0])}", new, []
    return None, [], matches


def _mark(finding: Finding, index: _Text) -> Tuple[tuple, int]:
    """What identifies a rejected fix across later changes: its code, message and edits'
    texts (old and new), and the finding's offset (mapped through every later change)."""
    edits = tuple(
        (index.text[index.clamped_offset(e.line, e.column):index.clamped_offset(e.end_line, e.end_column)], e.content)
        for e in finding.fix.edits
    )
    return ((_key(finding), edits), index.clamped_offset(finding.line, finding.column))


def _spans_overlap(a: Sequence[_Span], b: Sequence[_Span]) -> bool:
    for s1, e1, _ in a:
        for s2, e2, _ in b:
            if s1 < e2 and s2 < e1:
                return True
            if s1 == s2:  # two insertions (or an insertion and a replacement) at one point
                return True
    return False


# A fix that brings out findings with fixes of their own (``model.forward(x)`` -> ``model(x)``
# shows ML002 a forward it now reads as one) is kept with their fixes, applied in up to this many
# further steps; the whole is checked against the text before it (as Ruff does in rounds, but
# never leaving the text with a finding it did not have).
CHAIN_MAX = 8


def _try(
    index: _Text,
    findings: Sequence[Finding],
    batch: Sequence[_Candidate],
    path: str,
    rules,
    encoding: Optional[str],
    options=None,
    unsafe: bool = False,
    guard=None,
):
    """Apply a batch to the text; (new text, its findings, the spans of each step, the findings
    of the text each new finding continues) if it passes, else a reason. When the batch brings
    out new findings, each with an applicable fix, those fixes are applied too (CHAIN_MAX steps
    at most) and the result checked again."""
    steps: List[List[_Span]] = []
    text, step = index, list(batch)
    trial = guard.copy() if guard is not None else None
    newline = _newline_of(index.text)
    first: Optional[str] = None  # the batch's own reason (what a rejection names)
    for depth in range(CHAIN_MAX + 1):
        spans = sorted((s for cand in step for s in cand.spans), key=lambda s: (s[0], s[1]))
        new_text = _apply(text.text, spans)
        if new_text == text.text:
            return first or "fix changes nothing"
        if encoding is not None:
            try:
                new_text.encode(encoding)
            except UnicodeEncodeError:
                return first or f"fix produced text that cannot be encoded as {encoding}"
            except LookupError:
                pass
        reason = _parses(new_text)
        if reason is not None:
            return first or reason
        steps.append(spans)
        new_findings = engine.lint_source(new_text, path, rules, options)
        reason, exposed, matches = _check(index, findings, batch, new_text, new_findings, steps)
        if reason is None:
            return new_text, new_findings, steps, matches
        first = first or reason
        if not exposed or depth == CHAIN_MAX:
            return first
        text = _Text(new_text)
        if trial is not None:
            trial.applied(spans)
        step = []
        for finding in sorted(exposed, key=Finding.sort_key):
            if not _applicable(finding, unsafe):
                return first
            found = _fix_spans(finding, text, newline)
            if found is None or (trial is not None and trial.check(found) is not None):
                return first
            if all(not _spans_overlap(found, other.spans) for other in step):
                step.append(_Candidate(finding, found))
    return first


def fix_source(
    source: str,
    path: str,
    rules,
    *,
    unsafe: bool = False,
    encoding: Optional[str] = None,
    max_iterations: int = MAX_ITERATIONS,
    guard=None,
    options=None,
    findings: Optional[Sequence[Finding]] = None,
) -> FixOutcome:
    """Apply the applicable fixes of ``rules`` to ``source`` (see the module docstring).

    ``findings``, when given, are the findings of ``source`` (with their fixes built), linted
    by the caller with the same rules and options: they are not linted again.

    ``unsafe`` also applies fixes marked unsafe. With ``encoding``, a fix whose result
    cannot be encoded in it is rejected. Stops after ``max_iterations`` rounds.
    ``guard`` (used for notebooks) may refuse a fix: ``guard.check(spans)`` returns a
    reason or None for a fix's (start, end, replacement) offsets in the current text,
    and ``guard.applied(spans)`` is told the spans of every batch that was kept.
    """
    rules = list(rules)
    newline = _newline_of(source)
    text = source
    findings = list(findings) if findings is not None else engine.lint_source(text, path, rules, options)
    outcome = FixOutcome(source=source, initial=list(findings))
    # each current finding's finding in the input text (every finding a kept round leaves is
    # one the input had), so that what is reported as fixed or refused is placed in the input
    origin: Dict[int, Tuple[Finding, Finding]] = {id(f): (f, f) for f in findings}

    def first(finding: Finding) -> Finding:
        return origin[id(finding)][1] if id(finding) in origin else finding

    rejected_marks: List[Tuple[tuple, int]] = []
    seen_texts = {text}

    iterations = 0
    while True:
        index = _Text(text)
        candidates: List[_Candidate] = []
        for finding in findings:
            if not _applicable(finding, unsafe):
                continue
            mark = _mark(finding, index)
            if mark in rejected_marks:
                continue
            spans = _fix_spans(finding, index, newline)
            if spans is None:
                outcome.rejected.append((first(finding), "fix has invalid or overlapping edit positions"))
                rejected_marks.append(mark)
                continue
            reason = guard.check(spans) if guard is not None else None
            if reason is not None:
                outcome.rejected.append((first(finding), reason))
                rejected_marks.append(mark)
                continue
            candidates.append(_Candidate(finding, spans))
        if not candidates:
            break
        if iterations >= max_iterations:
            outcome.hit_limit = True
            break

        # A batch of fixes whose edits do not overlap, in source order. If it fails the
        # check, its first half is tried, and so on down to a single fix, which is then
        # rejected on its own account; what was not tried comes back next round.
        batch: List[_Candidate] = []
        for cand in sorted(candidates, key=lambda c: (c.spans[0][0], c.finding.sort_key())):
            if all(not _spans_overlap(cand.spans, other.spans) for other in batch):
                batch.append(cand)
        while True:
            result = _try(index, findings, batch, path, rules, encoding, options, unsafe, guard)
            if not isinstance(result, str) and result[0] in seen_texts:
                result = "fix returns the file to an earlier state"  # never cycle
            if not isinstance(result, str) or len(batch) == 1:
                break
            batch = batch[: len(batch) // 2]
        if isinstance(result, str):
            # The text is unchanged, so this round does not count towards the bound.
            outcome.rejected.append((first(batch[0].finding), result))
            rejected_marks.append(_mark(batch[0].finding, index))
            continue
        iterations += 1
        new_text, new_findings, steps, matches = result
        for spans in steps:
            if guard is not None:
                guard.applied(spans)
            rejected_marks = [(m, map_offset(o, spans)) for m, o in rejected_marks]
        seen_texts.add(new_text)
        outcome.applied.extend(first(c.finding) for c in batch)
        origin = {id(f): (f, first(old)) for f, old in matches}
        text, findings = new_text, new_findings

    outcome.source = text
    outcome.kept = [first(f) for f in findings]
    # a finding whose fix was refused keeps no fix: no report marks it fixable
    final = _Text(text)
    outcome.remaining = [
        dataclasses.replace(f, fix=None) if _applicable(f, unsafe) and _mark(f, final) in rejected_marks else f
        for f in findings
    ]
    outcome.iterations = iterations
    return outcome


def fix_text(
    text: str,
    path: str,
    rules,
    unsafe: bool = False,
    *,
    encoding: Optional[str] = None,
    max_iterations: int = MAX_ITERATIONS,
    options=None,
) -> Tuple[str, FixOutcome]:
    """Fix the text of one file (a file's or stdin's): (new text, outcome).

    Dispatches as ``engine.lint_text`` does: a ``.ipynb`` path is a notebook (JSON).
    Its code cells are fixed as one program (``fix_source``, with a guard that refuses
    edits spanning cells or changing masked IPython syntax), then only the changed
    cells' ``source`` values are rewritten in the original JSON text. The outcome's
    findings are placed in their cells, and ``outcome.source`` is the new text.
    """
    from mllint import notebook

    rules = list(rules)
    if not notebook.is_notebook(path):
        outcome = fix_source(text, path, rules, unsafe=unsafe, encoding=encoding, max_iterations=max_iterations,
                             options=options)
        return outcome.source, outcome
    try:
        nb = notebook.load(text)
    except notebook.NotebookError as exc:
        error = engine.file_error(path, str(exc), exc.line, exc.column)
        return text, FixOutcome(source=text, remaining=[error], initial=[error], kept=[error])
    if not nb.program.strip():
        return text, FixOutcome(source=text)
    guard = notebook.FixGuard(nb)
    outcome = fix_source(nb.program, path, rules, unsafe=unsafe, max_iterations=max_iterations, guard=guard,
                         options=options)
    initial = [nb.map_finding(f) for f in outcome.initial] + nb.cell_errors(path)
    new_text, new_nb = text, nb
    if outcome.applied:
        try:
            new_text = nb.rewrite(outcome.source, guard.cell_starts, guard.mask_starts)
            new_nb = notebook.load(new_text)
        except notebook.NotebookError as exc:  # a bug: keep the notebook as it was
            error = engine.file_error(path, f"could not write the fixes back into the notebook: {exc}")
            return text, FixOutcome(source=text, remaining=initial + [error], initial=initial, kept=initial)
    mapped = FixOutcome(
        source=new_text,
        applied=[nb.map_finding(f) for f in outcome.applied],
        rejected=[(nb.map_finding(f), reason) for f, reason in outcome.rejected],
        remaining=[new_nb.map_finding(f) for f in outcome.remaining] + new_nb.cell_errors(path),
        kept=[nb.map_finding(f) for f in outcome.kept] + nb.cell_errors(path),
        initial=initial,
        iterations=outcome.iterations,
        hit_limit=outcome.hit_limit,
    )
    return new_text, mapped


def settle_fixable(result: "engine.FileResult", rules, options=None) -> "engine.FileResult":
    """`result` with a safe fix left only on the findings that ``--fix`` fixes.

    A file with a finding marked fixable gets a dry run of ``--fix`` (`fix_text`, nothing
    written): a finding that it leaves in place (its fix is refused: it would change a
    notebook's IPython syntax, bring out a finding that cannot be fixed, ...) loses its fix, so
    that no report marks it ``[*]`` or counts it fixable, run after run. A finding another fix
    removes (two forwards of one function, one ``@torch.no_grad()``) stays fixable. Unsafe
    fixes are left as they are."""
    if result.source is None or result.skipped or not any(f.fixable for f in result.findings):
        return result
    if options is not None:
        options = dataclasses.replace(options, fixes=True)
    built = not any(f.fix is not None and f.fix.deferred for f in result.findings)
    if built and not engine.is_notebook(result.path):  # the findings at hand will do: no second lint
        outcome = fix_source(result.source, result.path, rules, unsafe=False, encoding=result.encoding,
                             options=options, findings=result.findings)
    else:
        _, outcome = fix_text(result.source, result.path, rules, unsafe=False, encoding=result.encoding,
                              options=options)
    still = {id(f) for f in _unmatched(result.findings, outcome.fixed)}  # there after --fix: not fixable
    result.findings = [dataclasses.replace(f, fix=None) if f.fixable and id(f) in still else f
                       for f in result.findings]
    return result


def _place(finding: Finding) -> tuple:
    return (finding.code, finding.cell, finding.line, finding.column, finding.message)


def _unmatched(findings: Sequence[Finding], others: Sequence[Finding]) -> List[Finding]:
    """The findings of `findings` that no finding of `others` stands for at the same place (each
    of `others` stands for one): a difference of multisets."""
    left = Counter(_place(f) for f in others)
    out = []
    for finding in findings:
        if left[_place(finding)] > 0:
            left[_place(finding)] -= 1
        else:
            out.append(finding)
    return out


# --- writing ---------------------------------------------------------------------------

def _pure_crlf(data: bytes) -> bool:
    return b"\r\n" in data and data.count(b"\n") == data.count(b"\r\n")


def _to_crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def write_atomic(path: str, text: str, encoding: str) -> bool:
    """Write ``text`` to ``path`` in ``encoding``, atomically; True if the file changed.

    The bytes go to a temporary file in the same directory, which is fsynced, given
    the original file's permission bits (and owner, where allowed) and then renamed
    over the original, so a reader sees the old file or the new one, never a mix.
    If the original file used CRLF line endings throughout, lone LF in ``text``
    become CRLF. ``utf-8-sig`` writes a BOM. Nothing is written if the bytes would
    not change. A symlink is followed: its target is replaced, the link stays.
    Raises OSError (the original is untouched) or UnicodeEncodeError (nothing written).
    """
    target = os.path.realpath(path)
    try:
        st: Optional[os.stat_result] = os.stat(target)
        with open(target, "rb") as handle:
            original: Optional[bytes] = handle.read()
    except FileNotFoundError:
        st, original = None, None
    if original is not None and _pure_crlf(original):
        text = _to_crlf(text)
    data = text.encode(encoding)
    if data == original:
        return False

    directory = os.path.dirname(target) or "."
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(target) + ".", suffix=".mllint-tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
            if hasattr(os, "chown"):
                tst = os.stat(tmp)
                if (tst.st_uid, tst.st_gid) != (st.st_uid, st.st_gid):
                    try:
                        os.chown(tmp, st.st_uid, st.st_gid)
                    except OSError:
                        pass
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_directory(directory)
    return True


def _fsync_directory(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --- --diff ----------------------------------------------------------------------------

def unified_diff(path: str, old: str, new: str) -> str:
    """A unified diff (``--- a/path`` / ``+++ b/path``, 3 lines of context); "" if equal."""
    if old == new:
        return ""
    name = path.replace(os.sep, "/")
    while name.startswith("./"):
        name = name[2:]
    name = name.lstrip("/")
    from mllint import notebook

    if notebook.is_notebook(path):  # the cells that change, not the JSON
        cells = notebook.cell_diff(name, old, new)
        if cells is not None:
            return cells
    out = []
    for line in difflib.unified_diff(
        split_lines(old),
        split_lines(new),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
        n=3,
    ):
        if line.startswith(("---", "+++", "@@")):
            out.append(line if line.endswith("\n") else line + "\n")
        elif line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


# --- one file --------------------------------------------------------------------------

def fix_file(path: str, rules, *, unsafe: bool = False, write: bool = True, max_iterations: int = MAX_ITERATIONS,
             options=None) -> FileFixResult:
    """Read, fix and (if ``write`` and the text changed) atomically rewrite one file.

    Never raises for a bad file: an unreadable file gives an ML000 finding, a failed
    write gives ``error`` (and an ML000 finding) with the file left as it was.
    """
    rules = list(rules)
    try:
        with open(path, "rb") as handle:
            data = handle.read(engine.MAX_FILE_BYTES + 1)
    except OSError as exc:
        return _unreadable(path, f"cannot read file: {exc.strerror or exc}")
    if len(data) > engine.MAX_FILE_BYTES:
        return _unreadable(path, f"file larger than {engine.MAX_FILE_BYTES // (1024 * 1024)} MiB; skipped")
    try:
        decoded = engine.decode_file(path, data)
    except engine.UnreadableFile as exc:
        return _unreadable(path, str(exc))

    new_text, outcome = fix_text(
        decoded.text, path, rules, unsafe, encoding=decoded.encoding, max_iterations=max_iterations, options=options
    )
    result = FileFixResult(path, decoded.text, new_text, outcome, decoded.encoding)
    if write and outcome.source != decoded.text:
        try:
            result.written = write_atomic(path, outcome.source, decoded.encoding)
        except (OSError, UnicodeError) as exc:
            message = f"cannot write fixed file: {getattr(exc, 'strerror', None) or exc}"
            result.error = message
            result.new = decoded.text
            result.outcome = FixOutcome(
                source=decoded.text,
                applied=[],
                rejected=[],
                remaining=list(outcome.initial) + [engine.file_error(path, message)],
                kept=list(outcome.initial),
                initial=list(outcome.initial),
                iterations=outcome.iterations,
            )
    return result


def _unreadable(path: str, message: str) -> FileFixResult:
    finding = engine.file_error(path, message)
    outcome = FixOutcome(source="", remaining=[finding], initial=[finding], kept=[finding])
    return FileFixResult(path, None, None, outcome, error=None)
