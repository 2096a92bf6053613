"""The run as a process: --jobs, max-file-size, progress on a terminal, what start-up imports."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap

import pytest

from cli_helpers import BAD, GOOD, assert_user_error, clean_env, run, write

from mllint import engine
from mllint.config import ConfigError, parse_size
from mllint.output import Progress


@pytest.fixture
def many(tmp_path):
    """A project with more files than engine.POOL_MIN_FILES, half of them with a finding."""
    for index in range(engine.POOL_MIN_FILES + 4):
        write(tmp_path / f"m{index:02}.py", BAD if index % 2 else GOOD)
    return tmp_path


# --- --jobs ------------------------------------------------------------------------------------


def test_jobs_gives_the_same_report_in_the_same_order(many):
    one = run(["--no-cache", "-v", "--jobs", "1", "."], many)
    two = run(["--no-cache", "-v", "-j", "2", "."], many)
    assert one.returncode == two.returncode == 1
    assert one.stdout == two.stdout and one.stdout.count("ML001") == (engine.POOL_MIN_FILES + 4) // 2
    assert "in 1 process(es)" in one.stderr
    assert "in 2 process(es)" in two.stderr


def test_large_files_go_first_and_the_report_keeps_its_order(many):
    """A pool lints the large files first (largest first), the others in their order; the
    report is in the order of the files all the same."""
    padding = "# " + "x" * 78 + "\n"
    write(many / "m03.py", BAD + padding * (engine.LARGE_FIRST_BYTES // len(padding) + 1))
    write(many / "m05.py", BAD + padding * (2 * engine.LARGE_FIRST_BYTES // len(padding)))
    paths = [str(path) for path in sorted(many.glob("m*.py"))]
    assert engine._large_files_first(paths)[:2] == [5, 3]
    assert engine._large_files_first(paths)[2:] == [i for i in range(len(paths)) if i not in (3, 5)]
    one = run(["--no-cache", "--jobs", "1", "."], many)
    two = run(["--no-cache", "-j", "2", "."], many)
    assert one.stdout == two.stdout and one.stdout.index("m03.py") < one.stdout.index("m05.py")


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_bad_jobs_is_a_usage_error(many, value):
    assert_user_error(run(["--jobs", value, "."], many), "--jobs")


def test_jobs_in_help(many):
    out = run(["--help"], many).stdout
    assert "--jobs N" in out and "--max-file-size SIZE" in out


# --- max-file-size -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1000, 1000), ("1000", 1000), ("2MiB", 2 * 1024 ** 2), ("500 kB", 500_000), ("1.5MB", 1_500_000),
     ("64KiB", 65536), ("3mib", 3 * 1024 ** 2), ("10b", 10)],
)
def test_parse_size(value, expected):
    assert parse_size(value, "--max-file-size") == expected


@pytest.mark.parametrize("value", [0, "0", "-5", "2XB", "MiB", "", True, 1.5, [1]])
def test_parse_size_rejects(value):
    with pytest.raises(ConfigError, match="max-file-size"):
        parse_size(value, "pyproject.toml")


def _big_bad(path, size):
    """BAD (an ML001 finding) padded with plain code to at least `size` bytes."""
    lines = [BAD]
    index = 0
    while sum(map(len, lines)) < size:
        lines.append(f"value_{index} = {index}\n")
        index += 1
    write(path, "".join(lines))


def test_file_over_the_limit_is_skipped_with_a_warning(tmp_path):
    _big_bad(tmp_path / "big.py", 3000)
    write(tmp_path / "small.py", BAD)
    proc = run(["--max-file-size", "2kB", "."], tmp_path)
    assert proc.returncode == 1  # small.py's finding; big.py's is not looked for
    assert "small.py" in proc.stdout and "big.py" not in proc.stdout
    warning = [line for line in proc.stderr.splitlines() if "big.py" in line]
    assert len(warning) == 1 and warning[0].startswith("mllint: warning: big.py: file is ")
    assert "over max-file-size (2 kB)" in warning[0] and "--max-file-size" in warning[0]
    again = run(["--max-file-size", "2kB", "."], tmp_path)  # not cached: warned on every run
    assert again.stderr.count("big.py") == 1
    raised = run(["--max-file-size", "1MiB", "."], tmp_path)
    assert "big.py" in raised.stdout and "big.py" not in raised.stderr
    assert "not linted" in proc.stdout and "not linted" not in raised.stdout


def test_a_run_whose_only_file_is_skipped_does_not_say_all_checks_passed(tmp_path):
    _big_bad(tmp_path / "big.py", 3000)
    proc = run(["--max-file-size", "2kB", "big.py"], tmp_path)
    assert proc.returncode == 0 and "All checks passed!" not in proc.stdout
    assert proc.stdout.splitlines() == ["No problems found in the files linted.",
                                        "1 file not linted: over `max-file-size` (see the warning above)."]
    piped = subprocess.run([sys.executable, "-m", "mllint", "--max-file-size", "2kB", "--stdin-filename", "big.py", "-"],
                           cwd=str(tmp_path), input=(tmp_path / "big.py").read_text(), capture_output=True, text=True,
                           env=clean_env())
    assert "1 file not linted" in piped.stdout and "All checks passed!" not in piped.stdout


def test_limit_from_the_configuration_and_machine_formats(tmp_path):
    _big_bad(tmp_path / "big.py", 5000)
    write(tmp_path / "pyproject.toml", '[tool.mllint]\nmax-file-size = "4KiB"\n')
    proc = run(["--format", "json", "."], tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout) == []
    assert "big.py: file is" in proc.stderr and "(4 KiB)" in proc.stderr
    assert run(["--format", "json", "--max-file-size", "1MB", "."], tmp_path).returncode == 1  # flag wins
    assert "max-file-size" in run(["--show-settings", "big.py"], tmp_path).stdout


def test_bad_limit_in_the_configuration(tmp_path):
    write(tmp_path / "a.py", GOOD)
    write(tmp_path / "pyproject.toml", '[tool.mllint]\nmax-file-size = "lots"\n')
    assert_user_error(run(["."], tmp_path), "max-file-size", "lots")
    assert_user_error(run(["--isolated", "--max-file-size", "-3", "."], tmp_path), "--max-file-size")


def test_notebook_is_measured_by_its_code_not_its_outputs(tmp_path):
    source = BAD.splitlines(keepends=True)
    cell = {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": source,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": ["x" * 20000]}]}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    write(tmp_path / "nb.ipynb", json.dumps(nb))
    proc = run(["--max-file-size", "2KiB", "nb.ipynb"], tmp_path)
    assert proc.returncode == 1 and "ML001" in proc.stdout, proc.stderr
    small = run(["--max-file-size", "100", "nb.ipynb"], tmp_path)
    assert small.returncode == 0 and "the code of this notebook is" in small.stderr


def test_stdin_over_the_limit(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mllint", "--max-file-size", "100", "-"], input=BAD,
                          capture_output=True, text=True, cwd=str(tmp_path), env=clean_env())
    assert proc.returncode == 0 and "standard input is" in proc.stderr


def test_lint_text_keeps_the_limit_in_bytes():
    text = "x = 'é'\n" * 10  # 90 bytes in UTF-8, 80 characters
    assert engine.lint_text(text, "a.py", [], max_size=85).skipped
    assert engine.lint_text(text, "a.py", [], max_size=90).skipped is None


# --- progress ----------------------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self):
        return True


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_progress_shown_on_a_terminal_after_the_delay_and_erased():
    stream, clock = _Terminal(), _Clock()
    with Progress(stream=stream, clock=clock) as progress:
        progress.update(1, 10)
        assert stream.getvalue() == ""  # the first 1.5 s: nothing
        clock.now = 2.0
        progress.update(2, 10)
        clock.now = 2.01
        progress.update(3, 10)  # too soon after the last one
        clock.now = 2.5
        progress.update(10, 10)
    out = stream.getvalue()
    assert out == "\r\x1b[2Kmllint: 2/10 files\r\x1b[2Kmllint: 10/10 files\r\x1b[2K"


@pytest.mark.parametrize("enabled,stream", [(True, io.StringIO()), (False, _Terminal())])
def test_no_progress_when_piped_or_disabled(enabled, stream):
    clock = _Clock()
    with Progress(enabled=enabled, stream=stream, clock=clock) as progress:
        clock.now = 5.0
        progress.update(1, 2)
    assert stream.getvalue() == ""


_NO_DELAY = textwrap.dedent(
    """
    import sys
    import mllint.output
    mllint.output.Progress.DELAY = 0
    mllint.output.Progress.REFRESH = 0
    from mllint.cli import main
    main(sys.argv[1:])
    """
)


def _with_progress(args, cwd, stderr_on_terminal):
    """The real command (progress shown at once), its stderr on a pseudo-terminal or a pipe."""
    if not stderr_on_terminal:
        return subprocess.run([sys.executable, "-c", _NO_DELAY, *args], cwd=str(cwd), env=clean_env(),
                              capture_output=True, text=True, timeout=120).stderr
    import pty

    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-c", _NO_DELAY, *args], cwd=str(cwd), env=clean_env(),
                              stdout=subprocess.PIPE, stderr=follower, timeout=120)
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the writer is gone
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert proc.returncode == 1
        return b"".join(chunks).decode()
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminal")
def test_progress_on_a_terminal_and_not_in_a_pipe(many):
    shown = _with_progress(["--no-cache", "-j", "1", "."], many, stderr_on_terminal=True)
    total = engine.POOL_MIN_FILES + 4
    assert f"mllint: {total}/{total} files" in shown and shown.endswith("\r\x1b[2K")
    assert "files" not in _with_progress(["--no-cache", "-j", "1", "."], many, stderr_on_terminal=False)
    assert "files" not in _with_progress(["--no-cache", "-q", "."], many, stderr_on_terminal=True)
    # a machine format going to a pipe: nothing either (stdout is a pipe here)
    assert "files" not in _with_progress(["--no-cache", "--format", "json", "."], many, stderr_on_terminal=True)


# --- start-up ----------------------------------------------------------------------------------

_IMPORTED = textwrap.dedent(
    """
    import atexit, sys
    atexit.register(lambda: sys.stderr.write("IMPORTED: " + " ".join(
        name for name in ("libcst", "mllint.semantics.model", "mllint.rules.ml001_missing_zero_grad",
                          "mllint.notebook") if name in sys.modules) + "\\n"))
    from mllint.cli import main
    main(sys.argv[1:])
    """
)


def _imported(args, cwd):
    proc = subprocess.run([sys.executable, "-c", _IMPORTED, *args], cwd=str(cwd), env=clean_env(),
                          capture_output=True, text=True, timeout=120)
    line = [line for line in proc.stderr.splitlines() if line.startswith("IMPORTED:")]
    assert line, proc.stderr
    return set(line[-1].split()[1:])


def test_warm_run_and_version_import_no_libcst(tmp_path):
    write(tmp_path / "train.py", BAD)
    write(tmp_path / "eval.py", GOOD)
    assert "libcst" in _imported(["-j", "1", "."], tmp_path)  # cold: parsed in this process
    assert _imported(["-j", "1", "."], tmp_path) == set()  # warm: nothing of the analysis
    assert _imported(["--version"], tmp_path) == set()
    # a text run builds and settles the fixes (fixing.settle_fixable): JSON runs are warm too
    assert _imported(["--format", "json", "."], tmp_path) == set()
    assert _imported(["-j", "1", "."], tmp_path) == set()
    # --diff runs the fixes (parsing), and leaves the settled entries as they were
    assert "libcst" in _imported(["--diff", "."], tmp_path)
    assert _imported(["--format", "json", "."], tmp_path) == set()


def test_catalogue_agrees_with_the_rule_modules():
    from mllint.registry import all_rules, catalogue

    assert catalogue() == {code: rule.default_enabled for code, rule in all_rules().items()}
    assert all(rule.code == code for code, rule in all_rules().items())  # the code in the module's name


def test_rules_for_imports_only_the_rules_asked_for():
    code = "import sys; from mllint.registry import rules_for; rules_for(['ML010']);" \
           " print(sorted(m for m in sys.modules if m.startswith('mllint.rules.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env()).stdout
    assert out.strip() == "['mllint.rules.ml010_unsafe_torch_load']"


# --- memory ------------------------------------------------------------------------------------

_MEMORY = textwrap.dedent(
    """
    import sys
    from mllint import engine
    from mllint.registry import rules_for

    def resident():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024

    engine.lint_file(sys.argv[1], rules_for(["ML001"]))
    before = resident()
    engine.release_memory()
    print(before, resident())
    """
)


@pytest.mark.skipif(not os.path.exists("/proc/self/status") or not sys.platform.startswith("linux"),
                    reason="glibc and /proc")
def test_memory_of_a_large_file_is_given_back(tmp_path):
    """A file of data tables: the freed syntax tree stays in the process until released."""
    rows = ",\n".join(f'    {{"k{i}": [{i}, {i}.5, "v{i}"], "step": {i}}}' for i in range(3000))
    table = write(tmp_path / "table.py", f"import torch\nfor x in data:\n    loss.backward()\n    opt.step()\nTABLE = [\n{rows}\n]\n")
    proc = subprocess.run([sys.executable, "-c", _MEMORY, str(table)], capture_output=True, text=True,
                          timeout=300, env=clean_env())
    before, after = map(int, proc.stdout.split())  # (the loop makes the screen pass ML001: a LibCST parse)
    assert before > 100 and after < before / 2, (before, after)  # MiB: ~150 held, ~35 after
