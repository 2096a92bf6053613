"""The parent side of ``mllint --verify``: for each finding with a fix in a runnable target, run the
original and the fixed variant (each in its own process, from a temporary copy, with a timeout),
then judge the finding from what the runs measured.

Per file: ``prepare`` builds the variants (the original; one fixed variant per finding, with only
that finding's fix applied; in each, the loops that drive flagged code capped, ``caps.py``) and the
clocks that say when each finding's witness is decided; ``run_job`` runs one evidence run per
variant (``harness.py`` in evidence mode, a fresh process each, ended once its clocks are reached),
then, when asked or when a short calibration says this host's timing noise can show the effect,
timing: persistent worker processes (the original twice, for the A/A control, and each fixed
variant) re-run the script on command, in a random order each round; ``judge_job`` turns the runs
into verdicts. ``run_job`` runs here or, through ``launch.py``, as a job on a cluster. The user's
tree is only read.
"""

from __future__ import annotations

import ast
import difflib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from mllint.findings import Finding, apply_edits, split_lines
from mllint.verify import judge
from mllint.verify.caps import cap_loops
from mllint.verify.judge import Verification
from mllint.verify.stats import paired_ratio

RUNTIME_RULES = ("ML001", "ML002", "ML004", "ML005")
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".mllint_cache", "node_modules", ".tox", ".nox",
             ".mypy_cache", ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints"}
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_TREE_BYTES = 512 * 1024 * 1024
MAX_TREE_FILES = 20_000
_MAIN_GUARD = re.compile(r"^if\s+(\(\s*)?__name__\s*==\s*['\"]__main__['\"]", re.MULTILINE)

# The time effect a fix is expected to show, as a fraction (ML002: no autograd graph; ML005: no
# dropout masks or batch statistics). Timing runs without --timing only when the host's calibrated
# noise is below half of it. ML001 and ML004 fixes are not expected to change time measurably.
EXPECTED_TIME_EFFECT = {"ML002": 0.10, "ML005": 0.10}


@dataclass
class VerifyOptions:
    device: str = "cpu"
    steps: int = 5
    timeout: float = 120.0
    entry: Optional[str] = None
    rounds: int = 20
    timing: Optional[bool] = None  # True: --timing; None: when the host's timing noise allows it
    threads: int = 1
    timing_budget: float = 60.0
    launcher: Optional[str] = None  # None: run here; "local" or "submitit": as jobs (launch.py)
    partition: Optional[str] = None  # Slurm, --launcher submitit
    gpus: Optional[int] = None
    time_limit: Optional[int] = None  # minutes a job may take
    scheduler_output: bool = False  # -v: what sbatch and sacct print, and submitit's log, reach stderr


# --- progress ------------------------------------------------------------------------------


class Progress:
    """Progress on a terminal (stderr): one line per phase, rewritten in place, and a line per
    verdict. Nothing when stderr is not a terminal (piped, CI), so logs hold only the report."""

    def __init__(self, stream=None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._width = 0

    def __call__(self, message: str, final: bool = False) -> None:
        """`final` lines stay; the others are replaced by the next message."""
        if not self.tty:
            return
        text = f"mllint: verify: {message}"
        pad = max(0, self._width - len(text))
        self.stream.write("\r" + text + " " * pad + ("\n" if final else ""))
        self._width = 0 if final else len(text)
        self.stream.flush()

    def done(self) -> None:
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
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
    """Does running the file as a script run anything? A main guard, or any top-level statement
    other than imports, definitions, a docstring and assignments that call nothing (a tutorial's
    top-level training loop counts; a module of functions does not)."""
    if _MAIN_GUARD.search(source):
        return True
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return True  # let the run report it
    quiet = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for statement in tree.body:
        if isinstance(statement, quiet):
            continue
        if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)):
            if not any(isinstance(node, (ast.Call, ast.Await)) for node in ast.walk(statement)):
                continue  # a constant, a docstring
        return True
    return False


@dataclass
class Target:
    """One flagged file and the variants to run."""

    path: str
    source: str
    findings: List[Finding]
    fixed: Dict[Tuple, str] = field(default_factory=dict)  # finding key -> fixed source


# --- --entry ------------------------------------------------------------------------------------


class EntryError(Exception):
    """--entry names nothing that can be called (one line for the user, about the --entry value)."""


def _defines(source: str, name: str) -> bool:
    """Is `name` bound at the top level of `source` (def, class, assignment or import)?"""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and statement.name == name:
            return True
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            if any((alias.asname or alias.name.split(".")[0]) == name for alias in statement.names):
                return True
        targets = (statement.targets if isinstance(statement, ast.Assign)
                   else [statement.target] if isinstance(statement, ast.AnnAssign) else [])
        if any(isinstance(node, ast.Name) and node.id == name for target in targets for node in ast.walk(target)):
            return True
    return False


def _module_file(module: str, roots: Sequence[str]) -> Optional[str]:
    """The source file of `module` (dotted) under one of `roots`, else where Python would import it
    from; found without running it."""
    relative = module.replace(".", os.sep)
    for root in roots:
        for candidate in (relative + ".py", os.path.join(relative, "__init__.py")):
            path = os.path.join(root, candidate)
            if os.path.isfile(path):
                return path
    import importlib.util

    top, _, rest = module.partition(".")
    try:
        spec = importlib.util.find_spec(top)  # a top-level name: nothing is executed
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if not rest:
        return spec.origin
    for location in spec.submodule_search_locations or ():
        found = _module_file(rest, [location])
        if found:
            return found
    return None


def resolve_entry(entry: str, paths: Sequence[str]) -> str:
    """Check --entry before anything runs: the module or file exists and defines the function.
    Returns the entry with a file path made absolute. Raises EntryError."""
    target, _, function = entry.rpartition(":")
    if not target or not function or not function.isidentifier():
        raise EntryError(f"`{entry}` is not MODULE:FUNCTION (e.g. train:main or scripts/train.py:main)")
    if target.endswith(".py"):
        path = os.path.abspath(target)
        if not os.path.isfile(path):
            raise EntryError(f"no file `{target}`")
        shown = target
    else:
        if not all(part.isidentifier() for part in target.split(".")):
            raise EntryError(f"`{target}` is not a module name or a path ending in .py")
        roots = []
        for given in paths:
            directory = given if os.path.isdir(given) else os.path.dirname(given) or "."
            roots.append(os.path.abspath(directory))
        roots.append(os.getcwd())
        path = _module_file(target, roots)
        if path is None:
            raise EntryError(f"no module `{target}` next to the files checked, in the working"
                             " directory or installed")
        shown = f"module `{target}` ({os.path.relpath(path)})" if os.path.isabs(path) else f"module `{target}`"
        if not path.endswith(".py"):
            return entry  # a compiled module: its functions cannot be read without importing it
    try:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise EntryError(f"cannot read {shown}: {exc}") from None
    if not _defines(source, function):
        raise EntryError(f"`{function}` is not defined at the top level of {shown}")
    return f"{path}:{function}" if target.endswith(".py") else entry


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
    """Copy `root` to `destination` and write `source` as `relpath` inside it; returns its path.
    A destination inside `root` (a job folder, ``$MLLINT_JOB_DIR``, under the project) is not
    copied into itself."""
    inside = os.path.realpath(destination)

    def ignore(directory: str, names: Sequence[str]) -> List[str]:
        skipped = _ignore(directory, names)
        real = os.path.realpath(directory)
        return skipped + [name for name in names if name not in skipped
                          and (inside == os.path.join(real, name) or inside.startswith(os.path.join(real, name) + os.sep))]

    shutil.copytree(root, destination, ignore=ignore, symlinks=True)
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
    env["MPLBACKEND"] = "Agg"  # never open a plot window (plt.show() would wait for it to close)
    env.pop("MLLINT_DEBUG", None)
    from mllint.runtime import QUIET_TORCH_IMPORT  # torch without numpy: no warning on every run

    quiet = f"ignore:{QUIET_TORCH_IMPORT}"
    env["PYTHONWARNINGS"] = quiet + ("," + env["PYTHONWARNINGS"] if env.get("PYTHONWARNINGS") else "")
    # The harness imports mllint from where this process found it, whatever the copy contains.
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@dataclass
class Variant:
    name: str  # "original" or "fixed<N>"
    label: str  # for messages: "the original" / "the fixed version (ML002, line 23)"
    root: str  # the sandbox copy
    script: str  # the flagged file inside the copy: run as __main__ (or imported by --entry), and watched
    relpath: str  # the flagged file, relative to the copy (and to the copied directory of the user's tree)
    site_lines: List[int]  # every line the harness watches
    probe_lines: List[int]
    finding_lines: Dict[Tuple, List[int]] = field(default_factory=dict)  # per finding, its lines here
    own_lines: Dict[Tuple, List[int]] = field(default_factory=dict)  # per finding, its own lines here
    clocks: List[dict] = field(default_factory=list)  # when its witnesses are decided (harness.py)
    back: Dict[int, int] = field(default_factory=dict)  # a line of this variant -> the user's line
    entry: Optional[str] = None  # --entry, as the copy sees it
    evidence: Optional[dict] = None
    error: Optional[str] = None
    seconds: float = 0.0


def clocks_for(finding: Finding, lines: List[int], own: List[int], steps: int) -> List[dict]:
    """When `finding`'s witness is decided, as events the original and the fixed variant count alike,
    from the first time the finding's own line runs: optimizer steps (ML001; ML005 when the fix
    switches the model back to training mode: the steps after its `eval()`), forward calls at its
    lines (ML002, ML005), executions of its line (ML004). A capped loop runs on until the flagged lines
    it runs have run (harness.py)."""
    if not own:
        return []
    after = own[:1]  # counted from the first execution of the finding's own line
    if finding.code == "ML001" or (finding.code == "ML005" and judge.trains_back(finding)):
        return [{"kind": "steps", "lines": [], "count": 2 * steps + 2, "after": after}]
    if finding.code in ("ML002", "ML005") and lines:
        return [{"kind": "calls", "lines": lines, "count": steps, "after": after}]
    if finding.code == "ML004":
        return [{"kind": "line", "lines": after, "count": max(2, steps), "after": after}]
    return []


def _spec(variant: Variant, options: VerifyOptions, mode: str, out: str, log: str) -> str:
    spec = {
        "mode": mode,
        "script": variant.script,
        "entry": variant.entry,
        "watch": variant.script,
        "site_lines": variant.site_lines,
        "probe_lines": variant.probe_lines,
        "clocks": variant.clocks,
        "steps": options.steps,
        "device": options.device,
        "threads": options.threads,
        "out": out,
        "log": log,
    }
    path = out + f".{mode}.spec.json"
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(spec, handle)
    return path


def _failure(variant: Variant, error: str, where: Optional[dict]) -> str:
    """`error` with the user's line it happened at: the flagged file's lines of a fixed variant are
    mapped back to the user's file."""
    text = error
    if where:
        line = where.get("line")
        if where.get("file") == variant.relpath and variant.back:
            if line in variant.back:
                text += f" at {variant.relpath}:{variant.back[line]}"
            else:
                text += f" at line {line} of the fixed {variant.relpath} (a line the fix added)"
        else:
            text += f" at {where.get('file')}:{line}"
        if where.get("text"):
            code = where["text"] if len(where["text"]) <= 80 else where["text"][:77] + "..."
            text += f" (`{code}`)"
    return text


def run_evidence(variant: Variant, options: VerifyOptions, scratch: str) -> None:
    out = os.path.join(scratch, f"{variant.name}.evidence.json")
    log = os.path.join(scratch, f"{variant.name}.log")
    spec = _spec(variant, options, "evidence", out, log)
    started = time.monotonic()
    with open(log, "w", encoding="utf-8") as log_handle:
        try:
            completed = subprocess.run(
                [sys.executable, "-m", "mllint.verify.harness", spec],
                cwd=variant.root, env=_child_env(), stdin=subprocess.DEVNULL,
                stdout=log_handle, stderr=subprocess.STDOUT, timeout=options.timeout,
            )
        except subprocess.TimeoutExpired:
            variant.seconds = time.monotonic() - started
            variant.error = (f"{variant.label} timed out after {options.timeout:g} s in its evidence run"
                             " (raise --timeout or lower --steps)")
            return
    variant.seconds = time.monotonic() - started
    if not os.path.exists(out):
        variant.error = f"{variant.label} failed: the harness exited {completed.returncode}: {_last_line(log)}"
        return
    with open(out, encoding="utf-8") as handle:
        variant.evidence = json.load(handle)
    if not variant.evidence.get("ok"):
        error = variant.evidence.get("error") or "failed"
        if "the script exited with status" in error:  # argparse and the like say why on stderr
            error += f" ({_last_line(log)})"
        variant.error = f"{variant.label} failed: " + _failure(variant, error, variant.evidence.get("where"))


def _last_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = [line.strip() for line in handle if line.strip()]
    except OSError:
        return "no output"
    return lines[-1][:300] if lines else "no output"


class Worker:
    """A persistent process that re-runs one variant on each `run` command."""

    def __init__(self, variant: Variant, options: VerifyOptions, scratch: str, name: str, label: str) -> None:
        out = os.path.join(scratch, f"{name}.worker")
        self.variant = variant
        self.label = label
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

    def run(self, phase: str) -> dict:
        """One run of the variant; `phase` names it in a timeout message."""
        try:
            if not self.ready:
                hello = self._read()
                if not hello or not hello.get("ready"):
                    return {"ok": False, "error": f"{self.label} did not start its timing runs:"
                                                  f" {_last_line(self.log + '.err')}"}
                self.ready = True
            self.process.stdin.write("run\n")
            self.process.stdin.flush()
            reply = self._read()
        except (OSError, ValueError) as exc:
            return {"ok": False, "error": f"{self.label} failed in {phase}: {exc}"}
        if reply is None:
            self.close()
            return {"ok": False, "error": f"{self.label} timed out after {self.timeout:g} s in {phase}"}
        if not reply.get("ok"):
            reply["error"] = f"{self.label} failed in {phase}: " + _failure(
                self.variant, reply.get("error") or "failed", reply.get("where"))
        return reply

    def close(self) -> None:
        try:
            if self.process.stdin:
                self.process.stdin.close()
            self.process.wait(timeout=5)
        except Exception:
            self.process.kill()
            self.process.wait()


def timing_metric(reply: dict, lines: Sequence[int]) -> Optional[float]:
    """Seconds spent in forward calls made from `lines`, or None when none ran there."""
    sites = reply.get("sites") or {}
    total = sum(sites.get(str(line), 0.0) for line in lines)
    return total if total > 0 else None


def host_noise(samples: int = 20) -> float:
    """This host's timing noise, as the A/A spread (stats.Ratio.spread) of a fixed pure-Python
    workload timed in interleaved pairs: a quick calibration (about 0.15 s) that says whether
    timing rounds could confirm an effect of a given size here."""
    def work() -> float:
        started = time.perf_counter()
        total = 0
        for number in range(40_000):
            total += number * number
        return time.perf_counter() - started

    work()
    first: List[float] = []
    second: List[float] = []
    rng = random.Random(0)
    for _ in range(samples):
        pair = [first, second]
        rng.shuffle(pair)
        for series in pair:
            series.append(work())
    ratio = paired_ratio(first, second)
    return ratio.spread() if ratio is not None else 1.0


def timing_plan(findings: Sequence[Finding], options: VerifyOptions) -> Tuple[bool, Optional[str]]:
    """Whether to time, and if not, why (a detail of the report; None when nothing needs saying)."""
    if options.rounds <= 0:
        return False, None
    if options.timing:
        return True, None
    effects = [EXPECTED_TIME_EFFECT[f.code] for f in findings if f.code in EXPECTED_TIME_EFFECT]
    if not effects:
        return False, None
    noise = host_noise()
    effect = max(effects)
    if noise < effect / 2:
        return True, None
    return False, (f"time not measured: this host's timing noise (±{noise * 100:.0f}% in a calibration) is too"
                   f" high to confirm the ~{effect * 100:.0f}% effect expected; --timing measures it anyway")


def run_timing(original: Variant, fixed: Dict[Tuple, Variant], findings: Dict[Tuple, Finding],
               options: VerifyOptions, scratch: str, progress: Callable[..., None]) -> Dict[Tuple, dict]:
    """Interleaved rounds over the original (twice: A and the A/A control) and every fixed variant.
    Returns, per finding key, {"ab": Ratio|None, "aa": Ratio|None, "metric": str, "error": str|None}."""
    workers = {"A": Worker(original, options, scratch, "timing-A", original.label),
               "A2": Worker(original, options, scratch, "timing-A2", f"{original.label} (A/A control)")}
    for index, key in enumerate(fixed):
        workers[key] = Worker(fixed[key], options, scratch, f"timing-B{index}", fixed[key].label)
    replies: Dict[object, List[dict]] = {name: [] for name in workers}
    failed: Dict[object, str] = {}
    started = time.monotonic()
    try:
        for name, worker in workers.items():  # warm-up run each, discarded
            reply = worker.run("the warm-up run")
            if not reply.get("ok"):
                failed[name] = reply.get("error", "failed")
        rounds = 0
        rng = random.Random(0)
        while rounds < options.rounds and "A" not in failed and "A2" not in failed:
            order = [name for name in workers if name not in failed]
            rng.shuffle(order)
            for name in order:
                reply = workers[name].run(f"timing round {rounds + 1}")
                if not reply.get("ok"):
                    failed[name] = reply.get("error", "failed")
                else:
                    replies[name].append(reply)
            rounds += 1
            progress(f"timing round {rounds}/{options.rounds}")
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
                    "could not run: running the file runs nothing (it only defines functions, classes and"
                    " constants); name the function to call with --entry module:function")
            else:
                fixed = apply_edits(source, finding.fix.edits)
                target.findings.append(finding)
                target.fixed[key] = fixed
        if target.findings:
            targets.append(target)
    return targets, verdicts


@dataclass
class Job:
    """Everything one file's verification runs (picklable: it may run as a cluster job)."""

    path: str  # as the user named it
    options: VerifyOptions
    scratch: str
    findings: Dict[Tuple, Finding]
    original: Variant
    variants: Dict[Tuple, Variant]  # finding key -> its fixed variant
    timing: Dict[Tuple, dict] = field(default_factory=dict)
    timing_note: Optional[str] = None
    error: Optional[str] = None  # the job itself could not run (device, launcher)


def _label(finding: Finding) -> str:
    return f"the fixed version ({finding.code}, line {finding.line})"


def prepare(target: Target, options: VerifyOptions, scratch: str) -> Job:
    """Copy the tree once per variant into `scratch` and describe the runs. Every variant watches
    every finding's lines (mapped through its fix) and counts every finding's clock, so that the
    original and each fixed variant stop at the same point and do the same work: the whole-run
    memory and the timing compare like with like."""
    root = _copy_root(target.path)
    relpath = os.path.relpath(os.path.abspath(target.path), root)
    findings = {f.sort_key(): f for f in target.findings}
    entry = _entry_in_copy(options.entry, root)

    def variant(name: str, label: str, source: Optional[str], probed: Sequence[Tuple]) -> Variant:
        mapping = line_map(target.source, source) if source is not None else None
        lines = {key: lines_for(f, target.source, source) for key, f in findings.items()}
        own = {key: [line if mapping is None else mapping[line] for line in judge.site_lines(f)
                     if mapping is None or line in mapping] for key, f in findings.items()}
        watched = sorted({line for found in lines.values() for line in found})
        capped, _ = cap_loops(target.source if source is None else source, [found[0] for found in own.values() if found])
        directory = os.path.join(scratch, name)
        clocks = [clock for key, f in findings.items() for clock in clocks_for(f, lines[key], own[key], options.steps)]
        return Variant(name, label, directory, make_copy(root, directory, relpath, capped), relpath, watched,
                       sorted({line for key in probed for line in lines[key]}), lines, own, clocks,
                       {} if mapping is None else {new: old for old, new in mapping.items()}, entry)

    ml005 = [key for key, f in findings.items() if f.code == "ML005"]
    original = variant("original", "the original", None, ml005)
    variants = {key: variant(f"fixed{index}", _label(finding), target.fixed[key], [key] if key in ml005 else [])
                for index, (key, finding) in enumerate(findings.items())}
    if any(len(v.clocks) != len(original.clocks) for v in variants.values()):
        for each in (original, *variants.values()):  # a fix removed a counted line: the caps alone end the runs
            each.clocks = []
    return Job(target.path, options, scratch, findings, original, variants)


def _entry_in_copy(entry: Optional[str], root: str) -> Optional[str]:
    """--entry as the sandbox sees it: a file path relative to the copied directory."""
    if not entry:
        return entry
    target, _, function = entry.rpartition(":")
    if not target.endswith(".py"):
        return entry
    relative = os.path.relpath(os.path.abspath(target), root)
    if relative.startswith(os.pardir):
        return entry  # outside the copy: the harness reports the missing file
    return f"{relative}:{function}"


def _parallel() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def run_job(job: Job, progress: Optional[Callable[..., None]] = None) -> Job:
    """Evidence runs, then timing when planned; fills `job` and returns it (also as a cluster job)."""
    say = progress or (lambda *args, **kwargs: None)
    options = job.options
    if options.device == "auto" or options.launcher:
        from mllint.runtime.device import DeviceError, select

        try:
            options.device = select(options.device).name
        except DeviceError as exc:
            job.error = str(exc)
            return job
    everything = [job.original, *job.variants.values()]
    finished: List[str] = []
    started = time.monotonic()
    say(f"{len(everything)} runs (the original and {len(job.variants)} fixed), 0 done")
    with ThreadPoolExecutor(max_workers=min(len(everything), _parallel())) as pool:
        futures = {pool.submit(run_evidence, variant, options, job.scratch): variant for variant in everything}
        pending = set(futures)
        while pending:  # a line a second on a terminal, so a long run shows it is alive
            done, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
            for future in done:
                future.result()
                variant = futures[future]
                shown = variant.label.replace("the fixed version ", "fixed ").replace("the original", "original")
                finished.append(f"{shown} {variant.seconds:.1f} s" + (" failed" if variant.error else ""))
            say(f"{len(everything)} runs, {len(finished)} done" + (f" ({', '.join(finished)})" if finished else "")
                + f", {time.monotonic() - started:.0f} s")
    if job.original.error:
        return job
    runnable = {key: v for key, v in job.variants.items() if not v.error}
    timed, job.timing_note = timing_plan([job.findings[key] for key in runnable], options) if runnable else (False, None)
    if timed:
        say("timing: interleaved rounds of the original, its A/A control and the fixed versions")
        job.timing = run_timing(job.original, runnable, job.findings, options, job.scratch, say)
    return job


def judge_job(job: Job) -> Dict[Tuple, Verification]:
    verdicts: Dict[Tuple, Verification] = {}
    error = job.error or job.original.error  # the job, or the original, could not run: nothing to compare
    if error:
        return {key: Verification("could-not-run", f"could not run: {error}") for key in job.variants}
    for key, variant in job.variants.items():
        if variant.error:
            verdicts[key] = Verification("could-not-run", f"could not run: {variant.error}")
            continue
        timing = job.timing.get(key)
        if timing is None and job.timing_note and job.findings[key].code in EXPECTED_TIME_EFFECT:
            timing = {"skipped": job.timing_note}
        verdicts[key] = judge.judge(job.findings[key], job.original, variant, timing)
    return verdicts


def report_verdicts(progress: Callable[..., None], counter: str, job: Job, found: Dict[Tuple, Verification],
                    seconds: float) -> None:
    """One progress line per finding, with its verdict."""
    for key, verification in found.items():
        finding = job.findings[key]
        progress(f"{counter}:{finding.line}: {finding.code} {verification.verdict} ({seconds:.0f} s)", final=True)
