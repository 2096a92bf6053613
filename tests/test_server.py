"""`mllint server`: a real LSP exchange over stdio with the server as a subprocess.

The client here is a small JSON-RPC client (Content-Length framing) written for the test,
so the test speaks the protocol as an editor does, independently of pygls.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from cli_helpers import BAD, FIXED, assert_user_error, clean_env, write

pytest.importorskip("pygls")
pytest.importorskip("lsprotocol")

# A hang guard for reads from the server (never reached when the server works).
WAIT = 60

EMOJI_LINE = "    _ = '\U0001f600'; loss.backward()"  # a non-BMP character before the finding
TRAIN = BAD.replace("    loss.backward()", EMOJI_LINE)
TRAIN_FIXED = FIXED.replace("    loss.backward()", EMOJI_LINE)
LEAKY = (
    "from sklearn.model_selection import train_test_split\n"
    "from sklearn.preprocessing import StandardScaler\n"
    "scaler = StandardScaler()\n"
    "X_scaled = scaler.fit_transform(X)\n"
    "X_train, X_test, y_train, y_test = train_test_split(X_scaled, y, test_size=0.2)\n"
    "model.fit(X_train, y_train)\n"
    "print(model.score(X_test, y_test))\n"
)


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class Client:
    def __init__(self, cwd: Path):
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mllint", "server"], cwd=str(cwd), env=clean_env(),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
        )
        self.messages: "queue.Queue" = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    self.messages.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii").partition(":")
                headers[name.strip().lower()] = value.strip()
            self.messages.put(json.loads(out.read(int(headers["content-length"])).decode("utf-8")))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self.send({"method": method, "params": params})

    def receive(self) -> dict:
        message = self.messages.get(timeout=WAIT)
        assert message is not None, "the server closed its output: " + self.error_output()
        if "id" in message and "method" in message:  # a request from the server: answer it
            self.send({"id": message["id"], "result": None})
        return message

    def request(self, method: str, params) -> dict:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        while True:
            message = self.receive()
            if message.get("id") == self.next_id and "method" not in message:
                assert "error" not in message, message
                return message["result"]

    def diagnostics(self, uri: str) -> list:
        while True:
            message = self.receive()
            if message.get("method") == "textDocument/publishDiagnostics" and message["params"]["uri"] == uri:
                return message["params"]["diagnostics"]

    def error_output(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")


def apply(text: str, edits: list) -> str:
    """Apply LSP TextEdits (0-based lines, UTF-16 columns) to `text`, as an editor does."""
    lines = text.splitlines(True)

    def offset(position: dict) -> int:
        line = position["line"]
        if line >= len(lines):
            return len(text)
        before = sum(len(x) for x in lines[:line])
        units, chars = 0, 0
        for ch in lines[line]:
            if units >= position["character"]:
                break
            units += utf16(ch)
            chars += 1
        return before + chars

    spans = sorted(((offset(e["range"]["start"]), offset(e["range"]["end"]), e["newText"]) for e in edits),
                   reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def action_edits(action: dict, uri: str) -> list:
    return action["edit"]["changes"][uri]


@pytest.fixture
def project(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.mllint]\nper-file-ignores = { "scripts/*.py" = ["ML001"] }\n')
    return tmp_path


def test_lsp_exchange(project):
    client = Client(project)
    try:
        _exchange(client, project)
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
    assert client.proc.returncode == 0, client.error_output()


def _exchange(client: Client, root: Path) -> None:
    result = client.request("initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}})
    assert result["serverInfo"]["name"] == "mllint"
    kinds = result["capabilities"]["codeActionProvider"]["codeActionKinds"]
    assert "quickfix" in kinds and "source.fixAll.mllint" in kinds
    client.notify("initialized", {})

    uri = (root / "train.py").as_uri()  # never written to disk: the editor's text is what counts
    client.notify("textDocument/didOpen",
                  {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": TRAIN}})
    [diag] = client.diagnostics(uri)
    assert (diag["code"], diag["source"], diag["severity"]) == ("ML001", "mllint", 1)
    assert "gradients accumulate" in diag["message"]
    # 0-based line 5; the column counts the emoji as two UTF-16 units (mllint says column 14).
    start = EMOJI_LINE.index("loss")
    assert utf16(EMOJI_LINE[:start]) == start + 1
    assert diag["range"] == {"start": {"line": 5, "character": start + 1},
                             "end": {"line": 5, "character": utf16(EMOJI_LINE)}}

    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": diag["range"], "context": {"diagnostics": [diag]}})
    titles = [a["title"] for a in actions]
    fix = next(a for a in actions if a["title"].startswith("Fix ML001: "))
    assert fix["kind"] == "quickfix" and fix["isPreferred"] is True
    assert apply(TRAIN, action_edits(fix, uri)) == TRAIN_FIXED
    disable = next(a for a in actions if a["title"] == "Disable ML001 for this line")
    assert apply(TRAIN, action_edits(disable, uri)) == TRAIN.replace(EMOJI_LINE, EMOJI_LINE + "  # noqa: ML001")
    fix_all = next(a for a in actions if a["kind"] == "source.fixAll.mllint")
    assert apply(TRAIN, action_edits(fix_all, uri)) == TRAIN_FIXED
    assert len(actions) == 3, titles

    # An editor asking for fix-all on save gets only that.
    only = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": [], "only": ["source.fixAll"]}})
    assert [a["kind"] for a in only] == ["source.fixAll.mllint"]
    # Nothing to offer on a line without findings.
    assert client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 3}},
        "context": {"diagnostics": [], "only": ["quickfix"]}}) == []

    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": TRAIN_FIXED}]})
    assert client.diagnostics(uri) == []
    # An incremental change that brings the bug back (deletes the zero_grad() line).
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [
        {"range": {"start": {"line": 4, "character": 0}, "end": {"line": 5, "character": 0}}, "text": ""}]})
    assert [d["code"] for d in client.diagnostics(uri)] == ["ML001"]

    # An unsafe fix says so, and fix-all (safe fixes only) leaves it alone.
    leaky = (root / "leaky.py").as_uri()
    client.notify("textDocument/didOpen",
                  {"textDocument": {"uri": leaky, "languageId": "python", "version": 1, "text": LEAKY}})
    [leak] = client.diagnostics(leaky)
    assert leak["code"] == "ML003"
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": leaky}, "range": leak["range"], "context": {"diagnostics": [leak]}})
    unsafe = next(a for a in actions if a["title"].startswith("Fix ML003 (unsafe fix): "))
    assert unsafe["isPreferred"] is False
    assert "X_test = scaler.transform(X_test)" in apply(LEAKY, action_edits(unsafe, leaky))
    assert not any(a.get("kind") == "source.fixAll.mllint" for a in actions)

    # The settings of the document's path: per-file-ignores of scripts/*.py.
    script = (root / "scripts" / "run.py").as_uri()
    client.notify("textDocument/didOpen",
                  {"textDocument": {"uri": script, "languageId": "python", "version": 1, "text": BAD}})
    assert client.diagnostics(script) == []

    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert [d["code"] for d in client.diagnostics(uri)] == ["ML001"]
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []

    assert client.request("shutdown", None) is None
    client.notify("exit", None)
    client.proc.wait(timeout=WAIT)


def test_missing_pygls_is_a_one_line_error(tmp_path):
    code = "import sys\nsys.modules['pygls'] = None\nfrom mllint.cli import main\nmain(['server'])\n"
    proc = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), env=clean_env(),
                          capture_output=True, text=True, timeout=120)
    assert_user_error(proc, "pip install pygls lsprotocol")


def test_positions_follow_the_negotiated_encoding(tmp_path):
    client = Client(tmp_path)
    try:
        result = client.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(),
                                               "capabilities": {"general": {"positionEncodings": ["utf-8"]}}})
        encoding = result["capabilities"].get("positionEncoding", "utf-16")
        client.notify("initialized", {})
        uri = (tmp_path / "train.py").as_uri()
        client.notify("textDocument/didOpen",
                      {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": TRAIN}})
        [diag] = client.diagnostics(uri)
        prefix = EMOJI_LINE[: EMOJI_LINE.index("loss")]
        units = {"utf-8": len(prefix.encode("utf-8")), "utf-16": utf16(prefix), "utf-32": len(prefix)}[encoding]
        assert diag["range"]["start"] == {"line": 5, "character": units}, encoding
        assert client.request("shutdown", None) is None
        client.notify("exit", None)
        client.proc.wait(timeout=WAIT)
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
    assert client.proc.returncode == 0, client.error_output()


def _finding(line: int, code: str = "ML001"):
    from mllint.findings import Finding

    return Finding("x.py", line, 1, line, 2, code, "test", "test")


@pytest.mark.parametrize(
    "source, line, expected",
    [
        ("a = 1\nb = f(a)   \n", 2, "a = 1\nb = f(a)  # noqa: ML001   \n"),
        ("b = f(a)  # noqa: ML002\n", 1, "b = f(a)  # noqa: ML002, ML001\n"),
        ("b = f(a)  # a note\n", 1, "b = f(a)  # a note  # noqa: ML001\n"),
        ("b = f(a)  # noqa\n", 1, None),  # already silenced
        ('x = f("""a\nb""")\n', 1, None),  # the line ends inside a string
        ("x = f(a) + \\\n    g(b)\n", 1, None),  # a backslash continuation
        ("x = (\n  1,\n)\n", 1, "x = (  # noqa: ML001\n  1,\n)\n"),
    ],
)
def test_noqa_edit(source, line, expected):
    from mllint import noqa
    from mllint.server import noqa_edit

    edit = noqa_edit(source, _finding(line))
    if expected is None:
        assert edit is None
        return
    index, column, insert = edit
    lines = source.splitlines(True)
    lines[index] = lines[index][:column] + insert + lines[index][column:]
    assert "".join(lines) == expected
    assert noqa.scan(expected).suppresses(line, "ML001")


def test_a_quick_fix_that_fix_would_refuse_is_not_offered():
    """The editor's quick fixes are what `mllint --fix` applies: a safe fix that its dry run
    refuses (here: one that does not remove its finding) is not offered; the other is."""
    from mllint.server import Document

    from test_fixing import STEP, STUBBORN

    doc = Document("step()\nbar(1)\n", "t.py", [STEP, STUBBORN], len)
    assert sorted((f.code, f.fix is not None) for f in doc.findings) == [("TST005", True), ("TST010", True)]
    assert sorted((f.code, f.fix is not None) for f in doc.settled()) == [("TST005", False), ("TST010", True)]
    assert doc.fix_all() == "zero()\nstep()\nbar(1)\n"
