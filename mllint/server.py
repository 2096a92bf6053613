"""``mllint server``: a language server (LSP over stdio) built on pygls, an optional extra.

    pip install pygls lsprotocol      # or, from a clone of mllint: pip install -e '.[server]'
    mllint server

What it does:

- diagnostics on ``didOpen``, ``didChange`` and ``didSave``, from the editor's text (not the
  file on disk), linted with the settings of the document's path (nearest ``[tool.mllint]``,
  per-file-ignores); cleared on ``didClose``;
- code actions: a quick fix per finding that has a fix (unsafe ones say so in the title; a safe
  fix that ``mllint --fix`` would refuse is not offered),
  "Disable MLxxx for this line" (adds or extends a ``# noqa`` comment), and
  ``source.fixAll.mllint``, which applies every safe fix through ``fixing.fix_source``,
  validated exactly as ``mllint --fix`` validates them.

Positions: mllint's are 1-based lines and 1-based code-point columns; LSP's are 0-based lines
and columns in the negotiated encoding (UTF-16 unless the client offers another). Lines are
split at ``\\n``, ``\\r\\n`` and ``\\r`` only, as both LSP and mllint do.

Notebook documents (``notebookDocument/*``) are not supported: a notebook is linted with
``mllint nb.ipynb`` or ``mllint --stdin-filename nb.ipynb``.

pygls and lsprotocol are imported only when the server starts, never on the lint path.
"""

from __future__ import annotations

import io
import os
import tokenize
from typing import List, Optional, Sequence, Tuple

import click

from mllint import __version__
from mllint.findings import Applicability, Finding, Severity, split_lines

SOURCE = "mllint"
FIX_ALL_KIND = "source.fixAll.mllint"
INSTALL = "pip install pygls lsprotocol (from a clone of mllint: pip install -e '.[server]')"


# --- positions ------------------------------------------------------------------------------


class Positions:
    """Converts mllint positions of one text to LSP positions (0-based lines, client units)."""

    def __init__(self, text: str, units):
        self.text = text
        self.lines = split_lines(text)
        self.units = units  # str -> number of client code units

    def line_text(self, index: int) -> str:
        return self.lines[index].rstrip("\r\n") if 0 <= index < len(self.lines) else ""

    def lsp(self, line: int, column: int) -> Tuple[int, int]:
        """(line, character) of a 1-based line and 1-based code-point column."""
        index = line - 1
        if index >= len(self.lines):
            return self.end()
        index = max(index, 0)
        text = self.line_text(index)
        return index, self.units(text[: max(column - 1, 0)])

    def end(self) -> Tuple[int, int]:
        """The position just past the last character of the text."""
        if not self.lines:
            return 0, 0
        last = self.lines[-1]
        if last.endswith(("\n", "\r")):
            return len(self.lines), 0
        return len(self.lines) - 1, self.units(last)


def _with_newline(content: str, newline: str) -> str:
    if newline == "\n" or "\n" not in content:
        return content
    return content.replace("\r\n", "\n").replace("\n", newline)


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


# --- what the editor sees ---------------------------------------------------------------------


def replacement(old: str, new: str) -> Optional[Tuple[int, int, str]]:
    """The smallest whole-line range of `old` to replace to get `new`:
    (first line index, end line index (exclusive), new text), or None when equal."""
    if old == new:
        return None
    a, b = split_lines(old), split_lines(new)
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a -= 1
        end_b -= 1
    return start, end_a, "".join(b[start:end_b])


def noqa_edit(text: str, finding: Finding) -> Optional[Tuple[int, int, str]]:
    """(line index, code-point column, insertion) that adds ``# noqa: CODE`` to the finding's
    line, or None when a comment cannot go there (the line ends inside a string, or with a
    backslash continuation, or the text does not tokenize)."""
    lines = split_lines(text)
    index = finding.line - 1
    if not 0 <= index < len(lines):
        return None
    line = lines[index].rstrip("\r\n")
    if line.rstrip().endswith("\\"):
        return None
    comment: Optional[tokenize.TokenInfo] = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.start[0] <= finding.line < tok.end[0] and tok.type not in (tokenize.NL, tokenize.NEWLINE):
                return None  # a multi-line string (or f-string) continues past this line
            if tok.type == tokenize.COMMENT and tok.start[0] == finding.line:
                comment = tok
            if tok.start[0] > finding.line:
                break
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    if comment is not None:
        from mllint.noqa import _NOQA

        match = _NOQA.search(comment.string)
        if match and match.group("codes"):
            return index, comment.start[1] + match.end("codes"), f", {finding.code}"
        if match:  # a bare `# noqa` already silences everything on the line
            return None
        return index, len(line), f"  # noqa: {finding.code}"
    return index, len(line.rstrip()), f"  # noqa: {finding.code}"


class Document:
    """One text as the server lints it: findings plus the settings used for them."""

    def __init__(self, text: str, path: str, rules, units, options=None):
        from mllint.engine import lint_source

        self.text = text
        self.path = path
        self.rules = rules
        self.options = options
        self.positions = Positions(text, units)
        self.findings: List[Finding] = lint_source(text, path, rules, options)
        self._settled: Optional[List[Finding]] = None

    def settled(self) -> List[Finding]:
        """The findings with a safe fix kept only where ``mllint --fix`` applies it (a dry run,
        fixing.settle_fixable), so that no quick fix is offered that ``--fix`` would refuse
        (one that brings out a finding with no safe fix). Asked for by code actions, not on
        every keystroke."""
        if self._settled is None:
            from mllint.engine import FileResult
            from mllint.fixing import settle_fixable

            result = FileResult(self.path, list(self.findings), source=self.text)
            self._settled = settle_fixable(result, self.rules, self.options).findings
        return self._settled

    def range(self, finding: Finding):
        start = self.positions.lsp(finding.line, finding.column)
        end = self.positions.lsp(finding.end_line, finding.end_column)
        if end < start:
            end = start
        return start, end

    def fix_all(self) -> Optional[str]:
        from mllint.fixing import fix_source

        outcome = fix_source(self.text, self.path, self.rules, unsafe=False, options=self.options)
        return outcome.source if outcome.source != self.text else None


# --- the server --------------------------------------------------------------------------------


def _require_pygls() -> None:
    from mllint.config import ConfigError

    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError:
        raise ConfigError(f"`mllint server` needs pygls and lsprotocol: {INSTALL}") from None


def build_server():
    """The pygls LanguageServer with mllint's features (imports pygls)."""
    from lsprotocol import types as t
    from pygls.lsp.server import LanguageServer
    from pygls.uris import to_fs_path

    from mllint.config import ConfigError, load_settings
    from mllint.registry import rules_for

    server = LanguageServer("mllint", __version__)
    reported_errors = set()

    def path_of(uri: str) -> str:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        return path or os.path.join(os.getcwd(), "untitled.py")

    def document(uri: str) -> Optional[Document]:
        doc = server.workspace.get_text_document(uri)
        path = path_of(uri)
        if path.endswith(".ipynb"):
            return None
        try:
            settings = load_settings([path])
        except ConfigError as exc:
            message = f"mllint: {exc}"
            if message not in reported_errors:  # once per distinct error, not on every keystroke
                reported_errors.add(message)
                server.window_show_message(t.ShowMessageParams(type=t.MessageType.Error, message=message))
            return None
        rules = rules_for(settings.codes_for(path))
        from mllint.semantics.options import ModelOptions

        from mllint import project

        project.forget()  # other files of the project may have changed since the last request
        return Document(doc.source, path, rules, doc.position_codec.client_num_units,
                        ModelOptions.for_file(settings.settings_for(path), path, settings))

    def lsp_range(start, end) -> "t.Range":
        return t.Range(start=t.Position(line=start[0], character=start[1]),
                       end=t.Position(line=end[0], character=end[1]))

    def diagnostic(doc: Document, finding: Finding) -> "t.Diagnostic":
        severity = t.DiagnosticSeverity.Warning if finding.severity is Severity.WARNING else t.DiagnosticSeverity.Error
        return t.Diagnostic(range=lsp_range(*doc.range(finding)), message=finding.message, severity=severity,
                            code=finding.code, source=SOURCE)

    def publish(uri: str) -> None:
        doc = document(uri)
        diagnostics = [diagnostic(doc, f) for f in doc.findings] if doc is not None else []
        server.text_document_publish_diagnostics(t.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))

    @server.feature(t.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls, params: t.DidOpenTextDocumentParams) -> None:
        publish(params.text_document.uri)

    @server.feature(t.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls, params: t.DidChangeTextDocumentParams) -> None:
        publish(params.text_document.uri)

    @server.feature(t.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls, params: t.DidSaveTextDocumentParams) -> None:
        publish(params.text_document.uri)

    @server.feature(t.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls, params: t.DidCloseTextDocumentParams) -> None:
        server.text_document_publish_diagnostics(
            t.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    def wanted(kind: str, only: Optional[Sequence[str]]) -> bool:
        return not only or any(kind == o or kind.startswith(o + ".") for o in only)

    @server.feature(
        t.TEXT_DOCUMENT_CODE_ACTION,
        t.CodeActionOptions(code_action_kinds=[t.CodeActionKind.QuickFix, FIX_ALL_KIND]),
    )
    def code_action(ls, params: t.CodeActionParams):
        uri = params.text_document.uri
        doc = document(uri)
        if doc is None:
            return []
        only = [str(getattr(k, "value", k)) for k in (params.context.only or [])]
        first = (params.range.start.line, params.range.start.character)
        last = (params.range.end.line, params.range.end.character)
        newline = _newline(doc.text)
        actions = []

        def edit(edits) -> "t.WorkspaceEdit":
            return t.WorkspaceEdit(changes={uri: edits})

        if wanted(t.CodeActionKind.QuickFix.value, only):
            for finding in doc.settled():
                start, end = doc.range(finding)
                if start > last or end < first:
                    continue
                diag = diagnostic(doc, finding)
                fix = finding.fix
                if fix is not None and fix.edits:
                    safe = fix.applicability is Applicability.SAFE
                    what = fix.description or finding.message
                    title = f"Fix {finding.code}: {what}" if safe else f"Fix {finding.code} (unsafe fix): {what}"
                    edits = [
                        t.TextEdit(range=lsp_range(doc.positions.lsp(e.line, e.column),
                                                   doc.positions.lsp(e.end_line, e.end_column)),
                                   new_text=_with_newline(e.content, newline))
                        for e in fix.edits
                    ]
                    actions.append(t.CodeAction(title=title, kind=t.CodeActionKind.QuickFix, diagnostics=[diag],
                                                is_preferred=safe, edit=edit(edits)))
                noqa = noqa_edit(doc.text, finding)
                if noqa is not None:
                    index, column, insert = noqa
                    at = (index, doc.positions.units(doc.positions.line_text(index)[:column]))
                    actions.append(t.CodeAction(
                        title=f"Disable {finding.code} for this line", kind=t.CodeActionKind.QuickFix,
                        diagnostics=[diag], edit=edit([t.TextEdit(range=lsp_range(at, at), new_text=insert)])))

        if wanted(FIX_ALL_KIND, only):
            fixed = doc.fix_all()
            change = replacement(doc.text, fixed) if fixed is not None else None
            if change is not None:
                start_line, end_line, new_text = change
                end = (end_line, 0) if end_line < len(doc.positions.lines) else doc.positions.end()
                actions.append(t.CodeAction(
                    title="mllint: apply all safe fixes", kind=FIX_ALL_KIND,
                    edit=edit([t.TextEdit(range=lsp_range((start_line, 0), end), new_text=new_text)])))
        return actions

    return server


@click.command(name="server", context_settings={"help_option_names": ["-h", "--help"]})
def server_command() -> int:
    """Run the mllint language server on stdin/stdout (for editors; needs the [server] extra)."""
    _require_pygls()
    build_server().start_io()
    return 0
