"""Shared by test_cli.py, test_config.py and test_files.py: run the real `mllint` command."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, Optional, Sequence

# The canonical ML001 case: backward + step in a loop, nothing clears the gradients.
BAD = textwrap.dedent(
    """\
    import torch
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
    """
)

GOOD = textwrap.dedent(
    """\
    import torch
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
    """
)

# What --fix turns BAD into.
FIXED = GOOD

# A training loop (something the rules would parse anyway) that does not parse.
SYNTAX_ERROR = BAD + "def broken(:\n    pass\n"

# Test-only rules, registered by a wrapper around the real entry point (see run(extra_rules=True)):
# ML901 has an unsafe fix, ML902 a fix that breaks the syntax (rejected by fixing.py), ML903 crashes.
_EXTRA_RULES = textwrap.dedent(
    '''
    import sys, types
    import mllint.rules
    from mllint.findings import Applicability, Edit, Finding, Fix

    def _module(name, code, word, check, fix):
        mod = types.ModuleType("mllint.rules." + name)
        mod.__doc__ = "Test rule %s." % code
        mod.CODE, mod.NAME, mod.MESSAGE = code, "test-" + name, "test finding " + code
        mod.TRIGGERS, mod.DEFAULT_ENABLED, mod.FIX = (word,), True, fix
        mod.check = check
        sys.modules[mod.__name__] = mod
        mllint.rules.RULE_MODULES.append(name)

    def _finder(code, word, replacement, applicability):
        def check(model):
            for number, line in enumerate(model.source.splitlines(), 1):
                col = line.find(word)
                if col >= 0:
                    fix = None
                    if replacement is not None:
                        edit = Edit(number, col + 1, number, col + 1 + len(word), replacement)
                        fix = Fix(applicability, (edit,), "replace " + word)
                    yield Finding(model.path, number, col + 1, number, col + 1 + len(word), code,
                                  "test-" + code, "test finding " + code, fix=fix)
        return check

    def _crash(model):
        raise KeyError("boom")

    _module("zz_unsafe", "ML901", "UNSAFE_ME", _finder("ML901", "UNSAFE_ME", "SAFE_NOW", Applicability.UNSAFE), "unsafe")
    _module("zz_broken", "ML902", "BREAK_ME", _finder("ML902", "BREAK_ME", "(((", Applicability.SAFE), "safe")
    _module("zz_crash", "ML903", "CRASH_ME", _crash, None)

    from mllint.cli import main
    main(sys.argv[1:])
    '''
)


def clean_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLLINT_")}
    env["NO_COLOR"] = "1"
    env.pop("FORCE_COLOR", None)
    env.update(extra or {})
    return env


def run(
    args: Sequence[str],
    cwd: Path,
    *,
    env: Optional[Dict[str, str]] = None,
    extra_rules: bool = False,
) -> subprocess.CompletedProcess:
    """`python -m mllint ARGS` in `cwd` (or the wrapper that adds the test-only rules)."""
    if extra_rules:
        command = [sys.executable, "-c", _EXTRA_RULES, *args]
    else:
        command = [sys.executable, "-m", "mllint", *args]
    return subprocess.run(
        command, cwd=str(cwd), env=clean_env(env), capture_output=True, text=True, timeout=120
    )


def run_verify(args: Sequence[str], cwd: Path, env: Optional[Dict[str, str]] = None,
               timeout: float = 600) -> subprocess.CompletedProcess:
    """`python -m mllint --no-cache ARGS` in `cwd`, for the --verify tests (which run torch code)."""
    return subprocess.run([sys.executable, "-m", "mllint", "--no-cache", *args], cwd=str(cwd),
                          env=env or clean_env(), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def snapshot(directory: Path) -> dict:
    """Every file under `directory`: its hash and modification time (to show nothing was written)."""
    return {str(p.relative_to(directory)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(directory.rglob("*")) if p.is_file()}


def assert_user_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit 2, exactly one line on stderr starting with "mllint: error:", no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("mllint: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def write(path: Path, text: str = BAD, data: Optional[bytes] = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if data is not None:
        path.write_bytes(data)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def reported_paths(proc: subprocess.CompletedProcess) -> list:
    """Paths of the findings in `--format concise`/text output, in order."""
    out = []
    for line in proc.stdout.splitlines():
        if ": ML" in line and line[:1] not in (" ", "|"):
            out.append(line.split(":", 1)[0])
    return out


def read_terminal(fd: int) -> bytes:
    """Everything written to the pseudo-terminal whose controlling side is `fd`, until the child
    closes it (EOF, or EIO on Linux)."""
    chunks = []
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks)
