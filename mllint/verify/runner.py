"""The parent side of ``mllint --verify``: for each finding with a fix in a runnable target, run the
original and the fixed variant (each in its own process, from a temporary copy, with a timeout),
then judge the finding from what the runs measured.

Order of work per file: build the variants (the original; one fixed variant per finding, with only
that finding's fix applied); one evidence run per variant (``harness.py`` in evidence mode:
deterministic witnesses and a tensor-level memory tracker, a fresh process each); then timing:
persistent worker processes (the original twice, for the A/A control, and each fixed variant)
re-run the script on command, in a random order each round. The user's tree is only read.
"""

from __future__ import annotations

import difflib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from mllint.findings import Finding, apply_edits, split_lines
from mllint.verify import judge
from mllint.verify.judge import Verification
from mllint.verify.stats import paired_ratio

RUNTIME_RULES = ("ML001", "ML002", "ML004", "ML005")
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".mllint_cache", "node_modules", ".tox", ".nox",
             ".mypy_cache", ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints"}
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_TREE_BYTES = 512 * 1024 * 1024
MAX_TREE_FILES = 20_000
_MAIN_GUARD = re.compile(r"^if\s+(\(\s*)?__name__\s*==\s*['\"]__main__['\"]", re.MULTILINE)


@dataclass
class VerifyOptions:
    device: str = "cpu"
    steps: int = 5
    timeout: float = 120.0
    entry: Optional[str] = None
    rounds: int = 20
    threads: int = 1
    timing_budget: float = 60.0


# --- progress ------------------------------------------------------------------------------


class Progress:
    """One line per step on stderr; on a terminal the line is rewritten in place."""

    def __init__(self, stream=None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._width = 0

    def __call__(self, message: str, final: bool = False, transient: bool = False) -> None:
        """`transient` messages (round counters) are shown only on a terminal."""
        if transient and not self.tty:
            return
        text = f"mllint: verify: {message}"
        if self.tty:
            pad = max(0, self._width - len(text))
            self.stream.write("\r" + text + " " * pad + ("\n" if final else ""))
            self._width = 0 if final else len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def done(self) -> None:
        if self.tty and self._width:
            self.stream.write("\n")
            self.stream.flush()
            self._width = 0


# --- variants and line maps --------------------------------------------------------------------


def line_map(old: str, new: str) -> Dict[int, int]:
    """Old line number -> new line number, matching lines by their stripped text (a fix that wraps
    code in a block re-indents it), and by position inside a replaced block."""
    a = [line.strip() for line in split_lines(old)]
    b = [line.strip() for line in split_lines(new)]
    mapping: Dict[int, int] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                mapping[i1 + k + 1] = j1 + k + 1
        elif tag == "replace" and j2 > j1:
            for k in range(i2 - i1):
                mapping[i1 + k + 1] = j1 + min(k, j2 - j1 - 1) + 1
    return mapping


def _fragment(source: str, finding: Finding) -> str:
    """The flagged expression's text on its first line."""
    lines = split_lines(source)
    if not 0 < finding.line <= len(lines):
        return ""
    first = lines[finding.line - 1]
    end = finding.end_column - 1 if finding.end_line == finding.line else len(first.rstrip("\r\n"))
    return first[finding.column - 1:end].strip()


def lines_for(finding: Finding, original: str, variant: Optional[str] = None) -> List[int]:
    """The lines where `finding`'s effect is measured: in the original (`variant` None) the
    finding's own lines; in a fixed variant those lines mapped through the fix. For ML004 also
    every line holding the flagged expression, so that the allocation is found where the fix
    hoisted it."""
    own = judge.site_lines(finding)
    if variant is None:
        found = set(own)
    else:
        mapping = line_map(original, variant)
        found = {mapping[line] for line in own if line in mapping}
    if finding.code == "ML004":
        fragment = _fragment(original, finding)
        if fragment:
            text = original if variant is None else variant
            found |= {number for number, line in enumerate(split_lines(text), 1) if fragment in line}
    return sorted(found)


def is_runnable(source: str) -> bool:
    return bool(_MAIN_GUARD.search(source))


@dataclass
class Target:
    """One flagged file and the variants to run."""

    path: str
    source: str
    findings: List[Finding]
    fixed: Dict[Tuple, str] = field(default_factory=dict)  # finding key -> fixed source


# --- sandbox -------------------------------------------------------------------------------


def _copy_root(path: str) -> str:
    """The directory copied into the sandbox: the working directory when the file is inside it
    (scripts are usually run from the project root, relative data paths included), else the
    file's own directory; the file's directory when the working directory is too large."""
    cwd = os.getcwd()
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.commonpath([cwd, directory]) == cwd and _tree_size(cwd, MAX_TREE_BYTES) <= MAX_TREE_BYTES:
        return cwd
    return directory


def _skipped(directory: str, name: str) -> bool:
    """Left out of the sandbox copy: VCS and cache folders, virtualenvs, files over MAX_FILE_BYTES."""
    full = os.path.join(directory, name)
    if name in SKIP_DIRS:
        return True
    if os.path.isdir(full):
        return os.path.exists(os.path.join(full, "pyvenv.cfg"))
    if os.path.isfile(full) and not os.path.islink(full):
        try:
            return os.path.getsize(full) > MAX_FILE_BYTES
        except OSError:
            return True
    return False


def _tree_size(root: str, limit: int) -> int:
    """Bytes the copy of `root` would take, counted until `limit` (more than MAX_TREE_FILES files
    counts as over the limit)."""
    total = 0
    files_seen = 0
    for current, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not _skipped(current, d)]
        files_seen += len(files)
        if files_seen > MAX_TREE_FILES:
            return limit + 1
        for name in files:
            if _skipped(current, name):
                continue
            try:
                total += os.path.getsize(os.path.join(current, name))
            except OSError:
                continue
            if total > limit:
                return total
    return total


def _ignore(directory: str, names: Sequence[str]) -> List[str]:
    return [name for name in names if _skipped(directory, name)]


def make_copy(root: str, destination: str, relpath: str, source: str) -> str:
    """Copy `root` to `destination` and write `source` as `relpath` inside it; returns its path."""
    shutil.copytree(root, destination, ignore=_ignore, symlinks=True)
    target = os.path.join(destination, relpath)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.islink(target):
        os.unlink(target)
    with open(target, "w", encoding="utf-8", newline="") as handle:
        handle.write(source)
    return target


# --- running -------------------------------------------------------------------------------


def _child_env() -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONHASHSEED"] = "0"
    env.setdefault("OMP_NUM_THREADS", "1")
    env.pop("MLLINT_DEBUG", None)
    # The harness imports mllint from where this process found it, whatever the copy contains.
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@dataclass
class Variant:
    name: str  # "original" or a finding key rendered
    root: str  # the sandbox copy
    script: str  # the flagged file inside the copy: run as __main__ (or imported by --entry), and watched
    site_lines: List[int]  # every line the harness watches
    probe_lines: List[int]
    finding_lines: Dict[Tuple, List[int]] = field(default_factory=dict)  # per finding, its lines here
    stop_after_steps: Optional[int] = None  # end the run after this many optimizer steps
    evidence: Optional[dict] = None
    error: Optional[str] = None


def _spec(variant: Variant, options: VerifyOptions, mode: str, out: str, log: str) -> str:
    spec = {
        "mode": mode,
        "script": variant.script,
        "entry": options.entry,
        "watch": variant.script,
        "site_lines": variant.site_lines,
        "probe_lines": variant.probe_lines,
        "steps": options.steps,
        "device": options.device,
        "threads": options.threads,
        "stop_after_steps": variant.stop_after_steps,
        "out": out,
        "log": log,
    }
    path = out + f".{mode}.spec.json"
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(spec, handle)
    return path


def run_evidence(variant: Variant, options: VerifyOptions, scratch: str) -> None:
    out = os.path.join(scratch, f"{variant.name}.evidence.json")
    log = os.path.join(scratch, f"{variant.name}.log")
    spec = _spec(variant, options, "evidence", out, log)
    with open(log, "w", encoding="utf-8") as log_handle:
        try:
            completed = subprocess.run(
                [sys.executable, "-m", "mllint.verify.harness", spec],
                cwd=variant.root, env=_child_env(), stdin=subprocess.DEVNULL,
                stdout=log_handle, stderr=subprocess.STDOUT, timeout=options.timeout,
            )
        except subprocess.TimeoutExpired:
            variant.error = f"timed out after {options.timeout:g} s (raise --timeout or lower --steps)"
            return
    if not os.path.exists(out):
        variant.error = f"the harness failed (exit {completed.returncode}): {_last_line(log)}"
        return
    with open(out, encoding="utf-8") as handle:
        variant.evidence = json.load(handle)
    if not variant.evidence.get("ok"):
        variant.error = variant.evidence.get("error") or "failed"


def _last_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = [line.strip() for line in handle if line.strip()]
    except OSError:
        return "no output"
    return lines[-1][:300] if lines else "no output"


class Worker:
    """A persistent process that re-runs one variant on each `run` command."""

    def __init__(self, variant: Variant, options: VerifyOptions, scratch: str, label: str) -> None:
        out = os.path.join(scratch, f"{label}.worker")
        self.log = out + ".log"
        spec = _spec(variant, options, "worker", out, self.log)
        self.timeout = options.timeout
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mllint.verify.harness", spec],
            cwd=variant.root, env=_child_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=open(self.log + ".err", "w", encoding="utf-8"), text=True, bufsize=1,
        )
        self.ready = False

    def _read(self) -> Optional[dict]:
        import selectors

        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        try:
            if not selector.select(self.timeout):
                return None
        finally:
            selector.close()
        line = self.process.stdout.readline()
        return json.loads(line) if line.strip() else None

    def run(self) -> dict:
        try:
            if not self.ready:
                hello = self._read()
                if not hello or not hello.get("ready"):
                    return {"ok": False, "error": f"worker did not start: {_last_line(self.log + '.err')}"}
                self.ready = True
            self.process.stdin.write("run\n")
            self.process.stdin.flush()
            reply = self._read()
        except (OSError, ValueError) as exc:
            return {"ok": False, "error": f"worker failed: {exc}"}
        if reply is None:
            self.close()
            return {"ok": False, "error": f"timed out after {self.timeout:g} s"}
        return reply

    def close(self) -> None:
        try:
            if self.process.stdin:
                self.process.stdin.close()
            self.process.wait(timeout=5)
        except Exception:
            self.process.kill()


def timing_metric(reply: dict, lines: Sequence[int]) -> Optional[float]:
    """Seconds spent in forward calls made from `lines`, or None when none ran there."""
    sites = reply.get("sites") or {}
    total = sum(sites.get(str(line), 0.0) for line in lines)
    return total if total > 0 else None


def run_timing(original: Variant, fixed: Dict[Tuple, Variant], findings: Dict[Tuple, Finding],
               options: VerifyOptions, scratch: str, progress: Callable[[str], None]) -> Dict[Tuple, dict]:
    """Interleaved rounds over the original (twice: A and the A/A control) and every fixed variant.
    Returns, per finding key, {"ab": Ratio|None, "aa": Ratio|None, "metric": str, "error": str|None}."""
    workers = {"A": Worker(original, options, scratch, "timing-A"),
               "A2": Worker(original, options, scratch, "timing-A2")}
    for index, key in enumerate(fixed):
        workers[key] = Worker(fixed[key], options, scratch, f"timing-B{index}")
    replies: Dict[object, List[dict]] = {name: [] for name in workers}
    failed: Dict[object, str] = {}
    started = time.monotonic()
    try:
        for name, worker in workers.items():  # warm-up run each, discarded
            reply = worker.run()
            if not reply.get("ok"):
                failed[name] = reply.get("error", "failed")
        rounds = 0
        rng = random.Random(0)
        while rounds < options.rounds and "A" not in failed and "A2" not in failed:
            order = [name for name in workers if name not in failed]
            rng.shuffle(order)
            for name in order:
                reply = workers[name].run()
                if not reply.get("ok"):
                    failed[name] = reply.get("error", "failed")
                else:
                    replies[name].append(reply)
            rounds += 1
            progress(f"timing round {rounds}/{options.rounds}", transient=True)
            if rounds >= min(8, options.rounds) and time.monotonic() - started > options.timing_budget:
                break
    finally:
        for worker in workers.values():
            worker.close()
    out: Dict[Tuple, dict] = {}
    for key in fixed:
        finding = findings[key]
        if "A" in failed or "A2" in failed or key in failed:
            out[key] = {"error": failed.get("A") or failed.get("A2") or failed.get(key)}
            continue
        n = min(len(replies["A"]), len(replies["A2"]), len(replies[key]))
        a, a2, b = replies["A"][:n], replies["A2"][:n], replies[key][:n]
        metric = "run time"
        series = None
        if finding.code in ("ML002", "ML005"):
            orig_lines = original.finding_lines[key]
            fixed_lines = fixed[key].finding_lines[key]
            sa = [timing_metric(r, orig_lines) for r in a]
            sa2 = [timing_metric(r, orig_lines) for r in a2]
            sb = [timing_metric(r, fixed_lines) for r in b]
            if all(v is not None for v in sa + sa2 + sb) and n:
                series = (sa, sa2, sb)
                metric = f"forward time at line {finding.line}"
        if series is None:
            series = ([r["seconds"] for r in a], [r["seconds"] for r in a2], [r["seconds"] for r in b])
        sa, sa2, sb = series
        out[key] = {"ab": paired_ratio(sa, sb), "aa": paired_ratio(sa2, sa), "metric": metric, "error": None}
    return out


# --- the whole verification ------------------------------------------------------------------


def plan(results, options: VerifyOptions) -> Tuple[List[Target], Dict[Tuple, Verification]]:
    """Targets to run, and the verdicts known without running anything."""
    targets: List[Target] = []
    verdicts: Dict[Tuple, Verification] = {}
    for result in results:
        findings = [f for f in result.findings if f.code != "ML000"]
        if not findings:
            continue
        if any(getattr(f, "cell", None) is not None for f in findings):
            for finding in findings:
                verdicts[finding.sort_key()] = Verification(
                    "could-not-run", "could not run: notebooks are not run by --verify (export the cells to a script)")
            continue
        source = getattr(result, "source", None)
        if source is None:
            try:
                with open(result.path, encoding="utf-8") as handle:
                    source = handle.read()
            except (OSError, UnicodeDecodeError) as exc:
                for finding in findings:
                    verdicts[finding.sort_key()] = Verification("could-not-run", f"could not read the file: {exc}")
                continue
        runnable = options.entry is not None or is_runnable(source)
        target = Target(result.path, source, [])
        for finding in findings:
            key = finding.sort_key()
            if finding.code not in RUNTIME_RULES:
                verdicts[key] = Verification(
                    "not-verifiable", f"{finding.code} has no runtime witness the verifier can measure")
            elif finding.fix is None:
                verdicts[key] = Verification("not-verifiable", "no fix to compare the original with")
            elif not runnable:
                verdicts[key] = Verification(
                    "could-not-run",
                    "could not run: not a runnable script (no `if __name__ == \"__main__\":` block);"
                    " name a function to call with --entry module:function")
            else:
                fixed = apply_edits(source, finding.fix.edits)
                target.findings.append(finding)
                target.fixed[key] = fixed
        if target.findings:
            targets.append(target)
    return targets, verdicts


def verify(results, options: VerifyOptions, progress: Optional[Progress] = None) -> Dict[Tuple, Verification]:
    progress = progress or Progress()
    targets, verdicts = plan(results, options)
    total = sum(len(t.findings) for t in targets)
    if total:
        progress(f"{total} finding{'s' if total != 1 else ''} to verify in {len(targets)} file"
                 f"{'s' if len(targets) != 1 else ''} on {options.device}, --steps {options.steps}")
    for number, target in enumerate(targets, 1):
        scratch = tempfile.mkdtemp(prefix="mllint-verify-")
        try:
            verdicts.update(_verify_target(target, options, scratch, progress, f"[{number}/{len(targets)}]"))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    progress.done()
    return verdicts


def _verify_target(target: Target, options: VerifyOptions, scratch: str, progress: Progress,
                   counter: str) -> Dict[Tuple, Verification]:
    root = _copy_root(target.path)
    relpath = os.path.relpath(os.path.abspath(target.path), root)
    original_dir = os.path.join(scratch, "original")
    watch = make_copy(root, original_dir, relpath, target.source)
    findings = {f.sort_key(): f for f in target.findings}
    original_lines = {key: lines_for(f, target.source) for key, f in findings.items()}
    original = Variant("original", original_dir, watch,
                       sorted({line for lines in original_lines.values() for line in lines}),
                       sorted({line for key, lines in original_lines.items() if findings[key].code == "ML005"
                               for line in lines}),
                       original_lines)
    variants: Dict[Tuple, Variant] = {}
    for index, (key, finding) in enumerate(findings.items()):
        source = target.fixed[key]
        directory = os.path.join(scratch, f"fixed{index}")
        path = make_copy(root, directory, relpath, source)
        lines = lines_for(finding, target.source, source)
        variant = Variant(f"fixed{index}", directory, path, lines,
                          lines if finding.code == "ML005" else [], {key: lines})
        variants[key] = variant
    if all(f.code == "ML001" for f in target.findings):  # its evidence is complete after a few steps
        for variant in [original, *variants.values()]:
            variant.stop_after_steps = 4 * options.steps + 2
    progress(f"{counter} {target.path}: running the original and {len(variants)} fixed variant"
             f"{'s' if len(variants) != 1 else ''} (evidence)")
    everything = [original] + list(variants.values())
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda v: run_evidence(v, options, scratch), everything))

    verdicts: Dict[Tuple, Verification] = {}
    if original.error:
        for key in variants:
            verdicts[key] = Verification("could-not-run", f"could not run: {original.error}")
        return verdicts
    runnable = {key: v for key, v in variants.items() if not v.error}
    for key, variant in variants.items():
        if variant.error:
            verdicts[key] = Verification("could-not-run", f"could not run the fixed version: {variant.error}")
    timing: Dict[Tuple, dict] = {}
    if runnable and options.rounds > 0:
        progress(f"{counter} {target.path}: timing, interleaved A/B/A rounds")
        timing = run_timing(original, runnable, findings, options, scratch,
                            lambda message, **kw: progress(f"{counter} {target.path}: {message}", **kw))
    for key, variant in runnable.items():
        verdicts[key] = judge.judge(findings[key], original, variant, timing.get(key))
    return verdicts
