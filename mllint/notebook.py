"""Jupyter notebooks (``.ipynb``) as one Python program, and back.

Read with the standard ``json`` module only (no nbformat or Jupyter at run time),
following nbformat 4's published schema: a top-level object with ``nbformat`` (4),
``metadata`` and ``cells``; each cell has ``cell_type`` (``code``, ``markdown``,
``raw``) and ``source`` (a string, or a list of strings that are joined).

- **One program.** The code cells, in order, are joined into one Python program, so a
  model trained in cell 3 and evaluated in cell 7 is one flow. ``Notebook.locate`` maps
  a program line back to (cell number, line in the cell, line of the raw ``.ipynb`` file).
  Cell numbers are 1-based indexes among *all* cells (markdown included), as Jupyter's
  order and Ruff show them.
- **Other languages are skipped**: a notebook whose kernel language
  (``metadata.kernelspec.language`` or ``metadata.language_info.name``) is not Python,
  and cells whose VS Code ``metadata.vscode.languageId`` is not Python.
- **IPython syntax is masked without moving anything**: each masked piece is replaced
  by Python of exactly the same width, so lines and columns stay those of the cell and
  the program parses in any indentation context. Line magics (``%matplotlib inline``),
  shell escapes (``!pip install x``, ``files = !ls``, ``x: list = !ls``) and help (``?obj``,
  ``obj??``, ``np.*load*?``) become ``0`` followed by spaces; a magic or shell escape
  continued over lines by trailing backslashes keeps its backslashes and its continuation
  lines become blanks (a backslash on a cell's last line joins nothing); a magic that runs Python (``%time model(x)``,
  ``%timeit -n 3 f()``) keeps its Python: only the ``%time `` prefix becomes ``(0);``
  plus spaces. A cell magic that runs Python (``%%time``, ``%%capture``...) masks its
  first line only; any other (``%%bash``, ``%%writefile``, ``%%html``, ``%%sql``...)
  turns the whole cell into comments. As in IPython, blank lines before a cell magic
  do not count.
- **Rewriting** (``Notebook.rewrite``) replaces only the ``source`` values of changed
  cells in the original JSON text: everything else (outputs, metadata, key order,
  indentation, escapes, line endings) stays byte for byte; unchanged list items keep
  their raw text; a string source stays a string and a list a list.

A notebook that cannot be read this way raises ``NotebookError`` (one line, with the
JSON position when there is one).
"""

from __future__ import annotations

import ast
import bisect
import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from mllint.files import is_notebook  # noqa: F401  (re-exported: the one test of a notebook path)
from mllint.findings import Edit, Finding, Fix, split_lines

# Magics whose argument (line magics) or body (cell magics) is Python run by IPython.
PYTHON_LINE_MAGICS = {"time", "timeit", "prun", "debug", "memit", "mprun", "lprun"}
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug", "memit", "python", "python3", "ipython"}
# Options of those magics that take a value (``%timeit -n 10 -r 3 f()``).
_OPTIONS_WITH_VALUE = {"-n", "-r", "-p", "-s", "-l", "-T", "-D", "-m", "-f"}


class NotebookError(Exception):
    """The file is not a notebook mllint can read; ``line``/``column`` locate it in the JSON text."""

    def __init__(self, message: str, line: int = 1, column: int = 1):
        super().__init__(message)
        self.line = line
        self.column = column


# --------------------------------------------------------------------------- JSON with positions

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = (("true", True), ("false", False), ("null", None), ("NaN", None), ("Infinity", None),
             ("-Infinity", None))


@dataclass
class _Node:
    start: int
    end: int
    value: Any = None  # the Python value for scalars
    items: Any = None  # dict key -> _Node (objects) or list of _Node (arrays)


def _parse_spans(text: str) -> _Node:
    """A JSON value with the [start, end) offset of every value (the text is valid JSON)."""
    from json.decoder import scanstring

    def value(pos: int) -> _Node:
        pos = _WS.match(text, pos).end()
        char = text[pos]
        if char == '"':
            string, end = scanstring(text, pos + 1, True)
            return _Node(pos, end, string)
        if char == "{":
            items: Dict[str, _Node] = {}
            cur = _WS.match(text, pos + 1).end()
            if text[cur] == "}":
                return _Node(pos, cur + 1, None, items)
            while True:
                cur = _WS.match(text, cur).end()
                key, cur = scanstring(text, cur + 1, True)
                cur = _WS.match(text, cur).end() + 1  # the colon
                node = value(cur)
                items[key] = node
                cur = _WS.match(text, node.end).end()
                if text[cur] == "}":
                    return _Node(pos, cur + 1, None, items)
                cur += 1  # the comma
        if char == "[":
            elements: List[_Node] = []
            cur = _WS.match(text, pos + 1).end()
            if text[cur] == "]":
                return _Node(pos, cur + 1, None, elements)
            while True:
                node = value(cur)
                elements.append(node)
                cur = _WS.match(text, node.end).end()
                if text[cur] == "]":
                    return _Node(pos, cur + 1, None, elements)
                cur += 1
        for word, literal in _LITERALS:
            if text.startswith(word, pos):
                return _Node(pos, pos + len(word), literal)
        match = _NUMBER.match(text, pos)
        return _Node(pos, match.end(), None)

    return value(0)


# --------------------------------------------------------------------------- masking

# a top-level ``def name(`` / ``async def name(`` / ``class Name`` line of a cell that does not parse
_TOP_DEFINITION = re.compile(r"^(?:async\s+)?(def|class)\s+([A-Za-z_]\w*)\b")


def _definition_stubs(lines: List[str]) -> Dict[int, str]:
    """For a cell that does not parse: each top-level ``def``/``class`` whose header line is
    complete stays as written and the first line of its body becomes ``...``
    (the rest of the line a comment, so every line keeps its length): what the cell defines
    stays known, its body unseen (``train_model(model, ...)`` in a later cell calls a
    function, not a model). {line number in the cell: its text in the program}."""
    stubs: Dict[int, str] = {}
    for number, line in enumerate(lines, 1):
        body = line.rstrip("\r\n")
        if not _TOP_DEFINITION.match(body):
            continue
        try:
            ast.parse(body + "\n    ...\n")
        except (SyntaxError, ValueError):
            continue  # a header over several lines, or a broken one
        following = next((n for n in range(number + 1, len(lines) + 1) if lines[n - 1].strip()), None)
        if following is None:
            continue
        nxt = lines[following - 1].rstrip("\r\n")
        indent = len(nxt) - len(nxt.lstrip())
        spare = len(nxt) - indent - 3
        if indent == 0 or spare < 0:
            continue
        stubs[number] = body  # (a class keeps its bases: ``class CharRNN(nn.Module):`` says what it is)
        stubs[following] = nxt[:indent] + "..." + (" #" + "-" * (spare - 2) if spare >= 2 else " " * spare)
    return stubs


@dataclass
class Mask:
    """A masked piece of one cell: ``masked`` stands in the program where ``original`` was."""

    line: int  # 1-based line in the cell
    column: int  # 0-based column where the piece starts
    original: str
    masked: str
    whole: bool  # the rest of the line (a magic line, a shell escape); False: a prefix only


_NAME = re.compile(r"%+([A-Za-z_][\w.]*)")
# ``?obj``, ``obj??``, ``obj.attr?``, ``f()?``, wildcard searches (``np.*load*?``, ``?np.*load*``);
# a line that starts with ``?`` is IPython's help escape whatever follows (``?df.plot.bar()``):
# no Python line starts so
_HELP = re.compile(r"^(?:\?{1,2}\S.*|[\w.%*]+(?:\(\))?\?{1,2})\s*$")
# ``files = !ls``, ``a, b = !cmd``, ``self.out = %sx cmd``, ``d["k"] = !cmd``, ``x: list = !ls``
_TARGET = r"[A-Za-z_][\w.]*(?:\[[^\]=\n]*\])*"
_ASSIGN_ESCAPE = re.compile(
    rf"^({_TARGET}(?:\s*,\s*{_TARGET})*(?:\s*:\s*[^=\n]+?)?\s*=\s*)([!%].*)$"
)


def _filler(width: int) -> str:
    return "0" + " " * (width - 1) if width > 0 else ""


def _python_magic_prefix(content: str) -> Optional[int]:
    """For ``%time f(x)`` / ``%timeit -n 3 f(x)``: the width of the part before the Python."""
    match = _NAME.match(content)
    if not match or content.startswith("%%") or match.group(1) not in PYTHON_LINE_MAGICS:
        return None
    pos = match.end()
    while True:
        gap = re.compile(r"\s+").match(content, pos)
        if gap is None:
            return None
        pos = gap.end()
        option = re.compile(r"-\w+").match(content, pos)
        if option is None or not content[pos:].startswith("-"):
            break
        pos = option.end()
        if option.group(0) in _OPTIONS_WITH_VALUE:
            value = re.compile(r"\s+\S+").match(content, pos)
            if value is None:
                return None
            pos = value.end()
    if pos >= len(content.rstrip()) or pos < 4:
        return None
    if re.match(r"(?:for|while|if|with|def|class|try|async|match)\b", content[pos:]):
        return None  # a compound statement cannot follow `(0);`: mask the whole line
    return pos


class _Scanner:
    """Just enough of Python's lexical structure to tell where a logical line starts:
    open brackets, strings (triple-quoted ones span lines), comments, backslashes."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote: Optional[str] = None  # an open triple-quoted string
        self.continued = False

    @property
    def at_statement_start(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.continued

    def feed(self, line: str) -> None:
        i, n = 0, len(line)
        self.continued = False
        while i < n:
            if self.quote is not None:
                end = line.find(self.quote, i)
                while end > 0 and _escaped(line, end):
                    end = line.find(self.quote, end + 1)
                if end < 0:
                    return
                i = end + 3
                self.quote = None
                continue
            char = line[i]
            if char == "#":
                return
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            elif char in "'\"":
                if line.startswith(char * 3, i):
                    self.quote = char * 3
                    i += 3
                    continue
                j = i + 1
                while j < n and line[j] != char:
                    j += 2 if line[j] == "\\" else 1
                i = j + 1
                continue
            elif char == "\\" and line[i + 1:].strip() == "":
                self.continued = True
                return
            i += 1


def _escaped(line: str, index: int) -> bool:
    count = 0
    while index - count - 1 >= 0 and line[index - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def leading_indent(text: str) -> Tuple[str, List[int]]:
    """IPython's ``leading_indent`` transform: when the cell's first non-blank line is
    indented, that indentation is removed from every line that starts with it (a cell
    pasted with a leading space runs in Jupyter). The text, and the width removed per line."""
    lines = split_lines(text)
    first = next((line for line in lines if line.strip()), None)
    if first is None:
        return text, [0] * len(lines)
    prefix = first[:len(first) - len(first.lstrip(" \t"))]
    if not prefix:
        return text, [0] * len(lines)
    out, shifts = [], []
    for line in lines:
        if line.startswith(prefix):
            out.append(line[len(prefix):])
            shifts.append(len(prefix))
        else:
            out.append(line)
            shifts.append(0)
    return "".join(out), shifts


def mask_cell(text: str) -> Tuple[str, List[Mask]]:
    """The cell's text with IPython syntax masked (same length, same lines), and the masks."""
    lines = split_lines(text)
    if not lines:
        return text, []
    masks: List[Mask] = []
    out: List[str] = []
    # IPython drops leading blank lines before it looks for a cell magic
    first_number = next((n for n, line in enumerate(lines) if line.strip()), 0)
    first = lines[first_number].lstrip()
    if first.startswith("%%"):
        match = _NAME.match(first)
        name = match.group(1) if match else ""
        if name not in PYTHON_CELL_MAGICS:
            for number, line in enumerate(lines, 1):
                body = line.rstrip("\r\n")
                ending = line[len(body):]
                indent = len(body) - len(body.lstrip())
                if body.strip():
                    masked = body[:indent] + "#" + body[indent + 1:]
                    masks.append(Mask(number, indent, body[indent:] + ending, masked[indent:] + ending, True))
                    out.append(masked + ending)
                else:
                    out.append(line)
            return "".join(out), masks
    scanner = _Scanner()
    continued = False  # the previous line was masked whole and ends in a backslash
    for number, line in enumerate(lines, 1):
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        indent = len(body) - len(body.lstrip())
        content = body[indent:]
        if continued:
            # IPython joins a magic or shell escape with the lines its backslashes continue:
            # blanks here (keeping the backslash while it goes on), the same width.
            continued = _continues(body, number, lines)
            if content:
                masked = " " * (len(content) - 1) + ("\\" if continued else " ")
                masks.append(Mask(number, indent, content + ending, masked + ending, True))
                out.append(body[:indent] + masked + ending)
            else:
                out.append(line)
            continue
        replaced = None
        if scanner.at_statement_start and content:
            if content.startswith("%%") and number == first_number + 1:  # a Python cell magic: its line only
                replaced = (indent, content, True)
            elif content.startswith("%"):
                prefix = _python_magic_prefix(content)
                if prefix is not None:
                    replaced = (indent, content[:prefix], False)
                else:
                    replaced = (indent, content, True)
            elif content.startswith("!") and not content.startswith("!="):
                replaced = (indent, content, True)
            elif _HELP.match(content):
                replaced = (indent, content.rstrip(), True)
            else:
                assign = _ASSIGN_ESCAPE.match(content)
                if assign:
                    replaced = (indent + len(assign.group(1)), assign.group(2), True)
        if replaced is None:
            scanner.feed(body)
            out.append(line)
            continue
        column, original, whole = replaced
        if whole:
            continued = _continues(body, number, lines) and column + len(original) == len(body)
            masked = _filler(len(original) - 1) + "\\" if continued else _filler(len(original))
            masks.append(Mask(number, column, original + ending, masked + ending, True))
            new_body = body[:column] + masked + body[column + len(original):]
        else:
            masked = "(0);" + " " * (len(original) - 4)
            masks.append(Mask(number, column, original, masked, False))
            new_body = body[:column] + masked + body[column + len(original):]
            scanner.feed(new_body)
        out.append(new_body + ending)
    return "".join(out), masks


def _continues(body: str, number: int, lines: List[str]) -> bool:
    """Whether the line `body` (line `number` of `lines`) goes on with the next line of the
    cell: it ends with a backslash (as IPython reads a continued magic or shell escape)."""
    return body.endswith("\\") and number < len(lines)


# --------------------------------------------------------------------------- the notebook

@dataclass
class CodeCell:
    number: int  # 1-based among all cells
    source_node: _Node  # the ``source`` value in the raw JSON
    text: str  # the cell's source, joined
    masked: str  # with IPython syntax masked (same length)
    masks: List[Mask]
    start_line: int = 0  # first program line (1-based)
    line_count: int = 0
    added_newline: bool = False  # the program adds a line break after the cell's last line
    error: Optional[Tuple[int, int, str]] = None  # (line, column, message): the cell does not parse; left out
    dedented: str = ""  # the source as IPython runs it (common leading indentation removed)
    shifts: List[int] = field(default_factory=list)  # per line: the width removed from its start
    json_lines: List[int] = field(default_factory=list)  # raw .ipynb line of each cell line

    def shift(self, line: int) -> int:
        return self.shifts[line - 1] if 0 < line <= len(self.shifts) else 0


def _syntax_error(source: str) -> Optional[Tuple[int, int, str]]:
    """(line, column, message) when `source` does not compile, else None."""
    import ast

    flags = ast.PyCF_ONLY_AST | getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
    try:
        compile(source, "<cell>", "exec", flags=flags, dont_inherit=True)
    except SyntaxError as err:
        if _libcst_parses(source):
            return None  # newer syntax than the running Python knows (LibCST has its own grammar)
        from mllint.legacy_syntax import legacy_async

        if legacy_async(source) is not None:
            return None  # pre-3.7 code with `async` as a name: the engine lints it renamed
        return err.lineno or 1, max(err.offset or 1, 1), f"SyntaxError: {err.msg}"
    except (ValueError, RecursionError, MemoryError) as err:
        return 1, 1, f"could not parse: {type(err).__name__}"
    return None


def _libcst_parses(source: str) -> bool:
    import libcst

    try:
        libcst.parse_module(source)
    except Exception:
        return False
    return True


def _language_of(metadata: Any) -> Optional[str]:
    if not isinstance(metadata, dict):
        return None
    kernelspec = metadata.get("kernelspec")
    if isinstance(kernelspec, dict) and isinstance(kernelspec.get("language"), str):
        return kernelspec["language"].strip().lower()
    info = metadata.get("language_info")
    if isinstance(info, dict) and isinstance(info.get("name"), str):
        return info["name"].strip().lower()
    return None


def _is_python(language: Optional[str]) -> bool:
    return language is None or language in ("python", "python3", "python2", "ipython", "ipython3")


def _json_kind(value: Any) -> str:
    """How JSON names what `value` is: "a number", "a string", "an object"..."""
    if isinstance(value, bool) or value is None:
        return "`" + json.dumps(value) + "`"
    return {str: "a string", dict: "an object", list: "a list"}.get(type(value), "a number")


def _source_text(node: _Node) -> Optional[str]:
    if isinstance(node.value, str):
        return node.value
    if isinstance(node.items, list) and all(isinstance(item.value, str) for item in node.items):
        return "".join(item.value for item in node.items)
    return None


class Notebook:
    """A parsed notebook: its raw text, the code cells that form the program, and maps."""

    def __init__(self, text: str):
        self.text = text
        if not text.strip():
            raise NotebookError("notebook is empty (a .ipynb file holds JSON)")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise NotebookError(f"notebook is not valid JSON: {exc.msg}", exc.lineno, exc.colno) from None
        except (ValueError, RecursionError) as exc:
            raise NotebookError(f"notebook is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise NotebookError("not a Jupyter notebook: the JSON top level is not an object")
        version = data.get("nbformat")
        if version is None:
            raise NotebookError("not a Jupyter notebook: no `nbformat` key (nbformat 4 is required)")
        if version != 4 or isinstance(version, bool):
            what = f"nbformat {version} notebooks are" if isinstance(version, int) else f"`nbformat` {version!r} is"
            raise NotebookError(
                f"{what} not supported (nbformat 4 is required;"
                " convert with `jupyter nbconvert --to notebook --nbformat 4`)"
            )
        cells = data.get("cells")
        if cells is None:
            raise NotebookError("not a Jupyter notebook: no `cells` list (nbformat 4 notebooks have one)")
        if not isinstance(cells, list):
            raise NotebookError(f"notebook's `cells` is {_json_kind(cells)}, not a list")
        try:
            root = _parse_spans(text)
        except (RecursionError, IndexError, ValueError, AttributeError) as exc:  # pragma: no cover - json.loads passed
            raise NotebookError(f"notebook JSON could not be read: {exc}") from None

        def malformed(message: str, offset: int) -> NotebookError:  # at `offset` of the JSON text
            line = text.count("\n", 0, offset) + 1
            return NotebookError(message, line, offset - text.rfind("\n", 0, offset))

        self.cell_count = len(cells)
        self.language = _language_of(data.get("metadata"))
        self.cells: List[CodeCell] = []
        cell_nodes = root.items["cells"].items
        if _is_python(self.language):
            for index, (cell, node) in enumerate(zip(cells, cell_nodes), 1):
                if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                    continue
                if "source" not in node.items:
                    raise malformed(f"cell {index} (code) has no `source`", node.start)
                metadata = cell.get("metadata")
                vscode = metadata.get("vscode") if isinstance(metadata, dict) else None
                if isinstance(vscode, dict) and isinstance(vscode.get("languageId"), str):
                    if not _is_python(vscode["languageId"].strip().lower()):
                        continue
                source_node = node.items["source"]
                source = _source_text(source_node)
                if source is None:
                    raw = cell["source"]
                    kind = _json_kind(raw) if not isinstance(raw, list) else "a list holding " + _json_kind(
                        next(item for item in raw if not isinstance(item, str)))
                    raise malformed(f"cell {index}'s `source` is {kind}, not a string or a list of strings",
                                    source_node.start)
                dedented, shifts = leading_indent(source)
                masked, masks = mask_cell(dedented)
                self.cells.append(CodeCell(index, source_node, source, masked, masks, dedented=dedented,
                                           shifts=shifts))
        self._build_program()
        if _syntax_error(self.program) is not None and len(self.cells) > 1:
            self._skip_broken_cells()

    def _skip_broken_cells(self) -> None:
        """When the program does not parse, the cells that do not parse on their own (an
        unfinished exercise cell, a typo) are left out, commented out in place, and each
        is one ML000 (``CodeCell.error``), so that the other cells are still linted. A
        top-level function or class such a cell defines is kept as an empty stub in its
        place (its name is known, its body is not)."""
        broken = [cell for cell in self.cells if _syntax_error(cell.masked) is not None]
        if not broken or len(broken) == len(self.cells):
            return
        for cell in broken:
            cell.error = _syntax_error(cell.masked)
            lines = split_lines(cell.masked)
            stubs = _definition_stubs(lines)
            masks = []
            out = []
            for number, line in enumerate(lines, 1):
                body = line.rstrip("\r\n")
                ending = line[len(body):]
                indent = len(body) - len(body.lstrip())
                if not body.strip():
                    out.append(line)
                    continue
                original = split_lines(cell.dedented)[number - 1]
                masked_line = stubs.get(number, body[:indent] + "#" + body[indent + 1:])
                if masked_line == body:
                    out.append(line)  # a definition's header, kept
                    continue
                masks.append(Mask(number, indent, original[indent:], masked_line[indent:] + ending, True))
                out.append(masked_line + ending)
            cell.masked = "".join(out)
            cell.masks = masks
        self._build_program()

    # -- the program

    def _build_program(self) -> None:
        newlines = [m.start() for m in re.finditer("\n", self.text)]

        def json_line(offset: int) -> int:
            return bisect.bisect_right(newlines, offset - 1) + 1

        parts: List[str] = []
        self._line_cells: List[int] = []  # program line - 1 -> index into self.cells
        line = 1
        for position, cell in enumerate(self.cells):
            text = cell.masked
            if text and not text.endswith(("\n", "\r")):
                text += "\n"
                cell.added_newline = True
            lines = split_lines(text)
            cell.start_line = line
            cell.line_count = len(lines)
            line += len(lines)
            parts.append(text)
            self._line_cells.extend([position] * len(lines))
            node = cell.source_node
            if isinstance(node.value, str) or not node.items:
                cell.json_lines = [json_line(node.start)] * len(lines)
            else:
                starts, offset = [], 0
                for item in node.items:
                    starts.append(offset)
                    offset += len(item.value)
                cell.json_lines = []
                offset = 0
                for text_line in split_lines(cell.text) or [""]:
                    item = node.items[max(0, bisect.bisect_right(starts, offset) - 1)]
                    cell.json_lines.append(json_line(item.start))
                    offset += len(text_line)
                while len(cell.json_lines) < len(lines):
                    cell.json_lines.append(cell.json_lines[-1] if cell.json_lines else json_line(node.start))
        self.program = "".join(parts)

    def locate(self, line: int) -> Optional[Tuple[CodeCell, int]]:
        """(cell, line in the cell) of a program line, or None past the end."""
        if not self._line_cells:
            return None
        index = min(max(line, 1), len(self._line_cells)) - 1
        cell = self.cells[self._line_cells[index]]
        return cell, min(max(line, 1), cell.start_line + cell.line_count - 1) - cell.start_line + 1

    def cell(self, number: int) -> Optional[CodeCell]:
        for cell in self.cells:
            if cell.number == number:
                return cell
        return None

    # -- findings

    def map_finding(self, finding: Finding) -> Finding:
        """A finding on the program, positioned in its cell (line/column relative to the cell)."""
        where = self.locate(finding.line)
        if where is None:
            return finding
        cell, line = where
        column = finding.column + cell.shift(line)
        end = self.locate(finding.end_line)
        if end is not None and end[0] is cell and finding.end_line <= cell.start_line + cell.line_count - 1:
            end_line, end_column = end[1], finding.end_column + cell.shift(end[1])
        else:  # a span leaving the cell: end it at the end of its start line
            cell_lines = split_lines(cell.text)
            width = len(cell_lines[line - 1].rstrip("\r\n")) if line <= len(cell_lines) else 0
            end_line, end_column = line, max(column, width + 1)
        fix = finding.fix
        if fix is not None and self.fix_refused(fix) is not None:
            fix = None  # --fix would refuse it: not offered (no [*])
        if fix is not None:
            fix = Fix(fix.applicability, tuple(self._map_edit(e) for e in fix.edits), fix.description)
        json_line = cell.json_lines[line - 1] if line - 1 < len(cell.json_lines) else None
        return Finding(
            path=finding.path, line=line, column=column, end_line=end_line, end_column=end_column,
            code=finding.code, name=finding.name, message=self.map_message(finding.message), severity=finding.severity,
            fix=fix, cell=cell.number, json_line=json_line, basis=finding.basis,
        )

    def fix_refused(self, fix: Fix) -> Optional[str]:
        """Why ``FixGuard`` would refuse this fix (edits in program positions), or None."""
        if getattr(self, "_guard", None) is None:
            self._guard = FixGuard(self)
            starts = [0]
            for line in split_lines(self.program):
                starts.append(starts[-1] + len(line))
            self._line_starts = starts

        def offset(line: int, column: int) -> int:
            if line - 1 >= len(self._line_starts) - 1:
                return len(self.program)
            return self._line_starts[max(line, 1) - 1] + max(column, 1) - 1

        spans = [(offset(e.line, e.column), offset(e.end_line, e.end_column), e.content) for e in fix.edits]
        return self._guard.check(spans)

    def map_message(self, message: str) -> str:
        """"line 58" in a message (another place the rule points at) becomes "cell 17, line 8";
        text quoted in backticks is left alone."""
        if "line " not in message or not self._line_cells:
            return message

        def replace(match: "re.Match") -> str:
            number = int(match.group(1))
            if number < 1 or number > len(self._line_cells):
                return match.group(0)
            cell, line = self.locate(number)
            return f"cell {cell.number}, line {line}"

        parts = message.split("`")
        for index in range(0, len(parts), 2):  # outside backticks
            parts[index] = re.sub(r"\bline (\d+)\b", replace, parts[index])
        return "`".join(parts)

    def _map_edit(self, edit: Edit) -> Edit:
        start = self.locate(edit.line)
        end = self.locate(edit.end_line)
        if start is None or end is None:
            return edit
        line = start[1]
        shift = start[0].shift
        if end[0] is start[0]:
            end_line = end[1]
            if edit.end_line > start[0].start_line + start[0].line_count - 1:  # just past the cell's end
                end_line = start[0].line_count + 1
        else:
            end_line = start[0].line_count + 1
        return Edit(line, edit.column + shift(line), end_line, edit.end_column + shift(end_line), edit.content)

    def cell_errors(self, path: str) -> List[Finding]:
        """ML000 for each cell left out because it does not parse on its own."""
        from mllint.findings import PARSE_ERROR_CODE, PARSE_ERROR_NAME

        out = []
        for cell in self.cells:
            if cell.error is None:
                continue
            line, column, message = cell.error
            column += cell.shift(line)
            line = min(max(line, 1), max(1, len(cell.json_lines)))
            out.append(Finding(
                path=path, line=line, column=column, end_line=line, end_column=column, code=PARSE_ERROR_CODE,
                name=PARSE_ERROR_NAME, message=f"{message} (this cell is skipped; the other cells are linted)",
                cell=cell.number, json_line=cell.json_lines[line - 1] if cell.json_lines else None,
            ))
        return out

    def cell_lines(self, number: int) -> Optional[List[str]]:
        cell = self.cell(number)
        return None if cell is None else [line.rstrip("\r\n") for line in split_lines(cell.text)]

    # -- fixes

    def offsets(self) -> Tuple[List[int], List[Tuple[int, int, bool]]]:
        """Program offsets: where each cell starts (plus the end), and each mask's
        (start, length, whole)."""
        starts, masks = [], []
        offset = 0
        for cell in self.cells:
            starts.append(offset)
            lines = split_lines(cell.masked)
            line_starts = [offset]
            for text in lines:
                line_starts.append(line_starts[-1] + len(text))
            for mask in cell.masks:
                masks.append((line_starts[mask.line - 1] + mask.column, len(mask.masked), mask.whole))
            offset += len(cell.masked) + (1 if cell.added_newline else 0)
        starts.append(offset)
        return starts, masks

    def rewrite(self, program: str, cell_starts: Sequence[int], mask_starts: Sequence[int]) -> str:
        """The notebook's JSON text with the cells' sources taken from a (fixed) program.

        ``cell_starts`` (one per code cell, plus the end) and ``mask_starts`` (one per
        mask, in ``offsets()`` order) are where those are in ``program``. Raises
        NotebookError when a masked piece is not where it should be."""
        pieces = list(program)
        position = 0
        for cell in self.cells:
            for mask in cell.masks:
                start = mask_starts[position]
                position += 1
                if program[start:start + len(mask.masked)] != mask.masked:
                    raise NotebookError(f"a fix moved the IPython line {mask.line} of cell {cell.number}")
                pieces[start:start + len(mask.masked)] = list(mask.original)
        restored = "".join(pieces)
        replacements = []
        for index, cell in enumerate(self.cells):
            new = restored[cell_starts[index]:cell_starts[index + 1]]
            if cell.added_newline and new.endswith("\n"):
                new = new[:-1]
            if new == cell.dedented:
                continue
            if any(cell.shifts):  # the guard refuses fixes in such a cell
                raise NotebookError(f"cell {cell.number} is indented as a whole; it is not rewritten")
            if new != cell.text:
                replacements.append((cell.source_node, self._serialize(cell.source_node, new)))
        text = self.text
        for node, raw in sorted(replacements, key=lambda r: r[0].start, reverse=True):
            text = text[:node.start] + raw + text[node.end:]
        return text

    def _ensure_ascii(self) -> bool:
        if re.search(r"[^\x00-\x7f]", self.text):
            return False
        return any(int(code, 16) >= 0x80 for code in re.findall(r"\\u([0-9a-fA-F]{4})", self.text))

    def _serialize(self, node: _Node, new: str) -> str:
        ascii_only = self._ensure_ascii()
        if isinstance(node.value, str):
            return json.dumps(new, ensure_ascii=ascii_only)
        old_items = node.items or []
        old_values = [item.value for item in old_items]
        new_values = split_lines(new)
        import difflib

        raws: List[str] = []
        matcher = difflib.SequenceMatcher(None, old_values, new_values, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                raws.extend(self.text[item.start:item.end] for item in old_items[i1:i2])
            else:
                raws.extend(json.dumps(value, ensure_ascii=ascii_only) for value in new_values[j1:j2])
        if not old_items:
            return "[" + ", ".join(raws) + "]"
        opening = self.text[node.start + 1:old_items[0].start]
        closing = self.text[old_items[-1].end:node.end - 1]
        if len(old_items) > 1:
            separator = self.text[old_items[0].end:old_items[1].start]
        else:
            separator = "," + opening
        if not raws:
            return "[]"
        return "[" + opening + separator.join(raws) + closing + "]"


def load(text: str) -> Notebook:
    return Notebook(text)


def cell_diff(path: str, old: str, new: str) -> Optional[str]:
    """Unified diffs of the cells whose source changed (``--- a/nb.ipynb:cell 3``), or None
    when either text is not a notebook."""
    try:
        old_cells = _all_sources(old)
        new_cells = _all_sources(new)
    except (NotebookError, ValueError, TypeError, AttributeError):
        return None
    if len(old_cells) != len(new_cells):
        return None
    import difflib

    out = []
    for number, (a, b) in enumerate(zip(old_cells, new_cells), 1):
        if a == b:
            continue
        a_lines, b_lines = split_lines(a), split_lines(b)
        for line in difflib.unified_diff(a_lines, b_lines, fromfile=f"a/{path}:cell {number}",
                                         tofile=f"b/{path}:cell {number}", n=3):
            if line.startswith(("---", "+++", "@@")):
                out.append(line if line.endswith("\n") else line + "\n")
            elif line.endswith(("\n", "\r")):
                out.append(line)
            else:
                out.append(line + "\n\\ No newline at end of cell\n")
    return "".join(out)


def _all_sources(text: str) -> List[str]:
    data = json.loads(text)
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        raise NotebookError("no cells")
    out = []
    for cell in cells:
        source = cell.get("source", "") if isinstance(cell, dict) else ""
        out.append("".join(source) if isinstance(source, list) else str(source))
    return out


class FixGuard:
    """Keeps ``fixing.fix_source`` inside the cells of a notebook's program.

    A fix is refused when one of its edits would span two cells or change a masked
    IPython piece (an insertion right before one is fine). The cell starts and mask
    starts are followed through every kept batch of edits, so that the fixed program
    can be cut back into cells (``Notebook.rewrite``)."""

    def __init__(self, nb: Notebook):
        self.nb = nb
        self.cell_starts, masks = nb.offsets()
        self.mask_starts = [start for start, _, _ in masks]
        self.mask_lengths = [length for _, length, _ in masks]
        self.mask_places = [(cell.number, mask.line) for cell in nb.cells for mask in cell.masks]

    def _cell_at(self, offset: int) -> int:
        return max(0, bisect.bisect_right(self.cell_starts[:-1], offset) - 1)

    def check(self, spans) -> Optional[str]:
        for start, end, _ in spans:
            index = self._cell_at(start)
            if any(self.nb.cells[index].shifts):
                return (f"cell {self.nb.cells[index].number} is indented as a whole (IPython removes the"
                        " indentation when it runs it); mllint does not rewrite it")
            if end > self.cell_starts[index + 1]:
                later = self.nb.cells[self._cell_at(end - 1)].number
                return (f"fix would span cells {self.nb.cells[index].number} and {later} of the notebook"
                        " (each cell is rewritten on its own)")
            for mask_start, length, (cell, line) in zip(self.mask_starts, self.mask_lengths, self.mask_places):
                mask_end = mask_start + length
                touches = (start < mask_end and end > mask_start) if start != end else mask_start < start < mask_end
                if touches:
                    return f"fix would change the IPython syntax on line {line} of cell {cell}, which is kept as written"
        return None

    def copy(self) -> "FixGuard":
        """A guard that can be told of trial edits without changing this one."""
        other = copy.copy(self)
        other.cell_starts = list(self.cell_starts)
        other.mask_starts = list(self.mask_starts)
        return other

    def applied(self, spans) -> None:
        from mllint.findings import map_offset

        spans = sorted(spans, key=lambda s: (s[0], s[1]))
        self.cell_starts = [map_offset(offset, spans, boundary=True) for offset in self.cell_starts]
        self.mask_starts = [map_offset(offset, spans) for offset in self.mask_starts]
