#!/usr/bin/env python
"""Speed of mllint against Ruff and TorchFix on pinned real codebases, plus worst-case files.

Run by hand (pytest does not collect it, and nothing here asserts a time):

    python tests/benchmarks/bench_speed.py                    # everything, 3 rounds
    python tests/benchmarks/bench_speed.py --repeat 5 --corpus timm
    python tests/benchmarks/bench_speed.py --skip-worst --torchfix-on all

What it does:

- Corpora, downloaded once into a cache folder outside the repository
  (``~/.cache/mllint-bench``, or ``$MLLINT_BENCH_CACHE``), only their ``.py`` files:
  the wheels of pinned releases of timm and torchtune from the package index (a wheel
  holds the sources), optionally transformers' ``models/`` folder, and pytorch/examples
  at a pinned commit from the local bare mirror (``$MLLINT_BENCH_MIRROR``, default
  ``/work/.mirror``). Nothing third-party is ever written into the repository.
- Tools: Ruff and TorchFix at pinned versions in a virtualenv of their own under the
  cache folder (created once); mllint is the ``mllint`` of the interpreter running this
  script (the current checkout when installed with ``pip install -e .``).
- Runs, each one a subprocess measured on its own: wall time; CPU time (user + system of
  the process and every descendant it waited for, from ``os.wait4``); peak memory
  (``ru_maxrss`` of the same ``wait4``: the largest resident set of any ONE process of
  the tree, e.g. the biggest worker, not their sum). Each command runs under a small
  wrapper process that does the ``wait4`` (see WRAPPER: why this script cannot). Per case the tools run interleaved on
  the same files: every round runs each variant once, in a new random order, and the
  table gives the median wall and CPU time and the highest peak memory over the rounds.
  A run that exceeds ``--timeout`` is killed (its whole process group) and shown as
  "timeout"; its variant is not run again in that case.
- mllint variants: cold (``--no-cache``), cold cache (the cache folder, in a temporary
  directory via MLLINT_CACHE_DIR, removed first) immediately followed by warm (the same
  command again), and ``--no-cache --jobs 1`` when ``mllint --help`` offers ``--jobs``.
- Findings check (untimed): the JSON findings of --no-cache, cold cache, warm cache, a
  warm JSON run after a text run filled the cache, ``--jobs 1``/``--jobs 2`` and
  ``--no-screen`` (the last three when the flags exist) must be equal, order included.
- Per corpus: files and lines; files and lines that pass the old trigger words
  (``Rule.triggered_by`` of the default-enabled rules) and the ``ast`` screen
  (``mllint.screen``, "n/a" when this checkout has none).
- Worst cases: a one-file run (interpreter start included), a generated 400-line file
  with 100 loops missing ``zero_grad``, d2l-en's ``d2l/torch.py`` at a pinned commit, and
  two generated ~5 MB torch files: every tenth function a training loop, with
  ``zero_grad`` (no findings) or without (findings), the others plain Python.

Prints Markdown tables (with the machine and tool versions) and writes JSON to
``tests/benchmarks/results/speed-<time>.json`` (ignored by git) or ``--json PATH``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Callable, Dict, List, NoReturn, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_lint import mllint_command  # noqa: E402  (the `mllint` of this interpreter: one lookup for both scripts)
ROOT = HERE.parent.parent
RESULTS = HERE / "results"
ONE_FILE = ROOT / "fixtures" / "ml001" / "bad_train.py"

# Pinned versions and commits: change them together with the numbers in mllint/docs/speed.md.
RUFF = "0.17.6"
TORCHFIX = "0.7.0"
WHEELS = {  # corpus name -> (distribution, version, folder inside the wheel to keep or None)
    "timm": ("timm", "1.0.31", None),
    "torchtune": ("torchtune", "0.6.1", None),
    "transformers-models": ("transformers", "5.23.0", "transformers/models/"),
}
MIRRORS = {  # corpus name -> (mirror owner+name, commit)
    "pytorch-examples": ("pytorch+examples", "77f55b912142e11fcfdf5b530231fb9c52f181e8"),
}
D2L = ("d2l-ai+d2l-en", "23d7a5aecceee57d1292c56e90cce307f183bb0a", "d2l/torch.py")
DEFAULT_CORPORA = ["timm", "torchtune", "pytorch-examples"]

CACHE = Path(os.environ.get("MLLINT_BENCH_CACHE", Path.home() / ".cache" / "mllint-bench"))
MIRROR = Path(os.environ.get("MLLINT_BENCH_MIRROR", "/work/.mirror"))


def log(message: str) -> None:
    print(f"bench_speed: {message}", file=sys.stderr, flush=True)


def fail(message: str) -> NoReturn:
    sys.exit(f"bench_speed: {message}")


# ---------------------------------------------------------------------------------------
# Corpora


def pip(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        fail(f"pip {' '.join(args)} failed:\n{proc.stderr.strip()[-2000:]}")


def wheel_corpus(name: str) -> Path:
    dist, version, keep = WHEELS[name]
    target = CACHE / "src" / f"{name}-{version}"
    if (target / ".complete").exists():
        return target
    downloads = CACHE / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    wheels = list(downloads.glob(f"{dist}-{version}-*.whl"))
    if not wheels:
        log(f"downloading {dist}=={version}")
        pip("download", "--no-deps", "--only-binary", ":all:", "--dest", str(downloads), f"{dist}=={version}")
        wheels = list(downloads.glob(f"{dist}-{version}-*.whl"))
        if not wheels:
            fail(f"pip download {dist}=={version} gave no wheel in {downloads}")
    shutil.rmtree(target, ignore_errors=True)
    with zipfile.ZipFile(wheels[0]) as archive:
        names = [n for n in archive.namelist() if n.endswith(".py") and (keep is None or n.startswith(keep))]
        archive.extractall(target, names)
    (target / ".complete").write_text(f"{dist}=={version}\n")
    return target


def mirror_files(repo: str, sha: str, paths: Sequence[str], target: Path) -> None:
    """Write `paths` of `repo` at `sha` under `target` (one `git cat-file --batch`)."""
    git_dir = MIRROR / repo / "repo"
    query = "".join(f"{sha}:{p}\n" for p in paths).encode()
    proc = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "--batch"], input=query,
                          capture_output=True)
    if proc.returncode != 0:
        fail(f"git cat-file in {git_dir} failed: {proc.stderr.decode(errors='replace').strip()}")
    out, pos = proc.stdout, 0
    for path in paths:
        end = out.index(b"\n", pos)
        header = out[pos:end].decode().split()
        if len(header) != 3 or header[1] != "blob":
            fail(f"{repo}@{sha[:10]}: {path}: {' '.join(header)}")
        size = int(header[2])
        data = out[end + 1:end + 1 + size]
        pos = end + 1 + size + 1
        dest = target / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)


def mirror_corpus(name: str) -> Path:
    repo, sha = MIRRORS[name]
    target = CACHE / "src" / f"{name}-{sha[:12]}"
    if (target / ".complete").exists():
        return target
    git_dir = MIRROR / repo / "repo"
    if not git_dir.exists():
        fail(f"no mirror {git_dir} (set MLLINT_BENCH_MIRROR)")
    listing = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", sha],
                             capture_output=True, text=True)
    if listing.returncode != 0:
        fail(f"{repo}: commit {sha} not found: {listing.stderr.strip()}")
    shutil.rmtree(target, ignore_errors=True)
    mirror_files(repo, sha, [p for p in listing.stdout.splitlines() if p.endswith(".py")], target)
    (target / ".complete").write_text(f"{repo}@{sha}\n")
    return target


def corpus_folder(name: str) -> Path:
    if name in WHEELS:
        return wheel_corpus(name)
    if name in MIRRORS:
        return mirror_corpus(name)
    folder = Path(name)
    if not folder.is_dir():
        fail(f"--corpus {name}: neither a known corpus ({', '.join(list(WHEELS) + list(MIRRORS))}) nor a folder")
    return folder


def corpus_label(name: str) -> str:
    if name in WHEELS:
        return f"{WHEELS[name][0]} {WHEELS[name][1]}" + (" (models/)" if WHEELS[name][2] else "")
    if name in MIRRORS:
        return f"{MIRRORS[name][0].split('+')[1]} @{MIRRORS[name][1][:7]}" if name != "pytorch-examples" \
            else f"pytorch/examples @{MIRRORS[name][1][:7]}"
    return name


# ---------------------------------------------------------------------------------------
# Worst-case files

ZERO_GRAD_LOOP = '''\
def train_{i}(model, loader, opt, loss_fn):
    for x, y in loader:
        loss = loss_fn(model(x), y); loss.backward()
        opt.step()
'''

PLAIN_BLOCK = '''\
def parse_record_{i}(line, sep=","):
    fields = [part.strip() for part in line.split(sep)]
    if not fields or fields[0].startswith("#"):
        return None
    record = {{"name": fields[0], "values": []}}
    for field in fields[1:]:
        try:
            record["values"].append(float(field))
        except ValueError:
            record["values"].append(field)
    return record


class Accumulator{i}:
    def __init__(self, start=0):
        self.total = start
        self.count = 0

    def add(self, value):
        self.total += value
        self.count += 1
        return self

    def mean(self):
        return self.total / self.count if self.count else 0.0


'''

BAD_BLOCK = '''\
def fit_{i}(model, loader, optimizer, loss_fn):
    for inputs, targets in loader:
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()


'''


GOOD_BLOCK = '''\
def fit_{i}(model, loader, optimizer, loss_fn):
    model.train()
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()


'''


def make_worst_cases(folder: Path, large_bytes: int) -> Dict[str, Path]:
    cases = {}
    loops = folder / "zero_grad_100.py"
    loops.write_text("".join(ZERO_GRAD_LOOP.format(i=i) for i in range(100)))
    cases["100 missing-zero_grad loops (400 lines)"] = loops

    d2l = folder / "d2l"
    mirror_files(D2L[0], D2L[1], [D2L[2]], d2l)
    cases[f"d2l-en d2l/torch.py @{D2L[1][:7]}"] = d2l / D2L[2]

    for label, loop in (("no findings", GOOD_BLOCK), ("findings", BAD_BLOCK)):
        # torch code: every rule's words are there, so the whole file is parsed and analysed
        parts: List[str] = ['"""Generated."""\nimport torch\n\n\n']
        size, i = len(parts[0]), 0
        while size < large_bytes:
            block = (loop if i % 10 == 0 else PLAIN_BLOCK).format(i=i)
            parts.append(block)
            size += len(block)
            i += 1
        path = folder / f"large_{'bad' if loop is BAD_BLOCK else 'good'}.py"
        path.write_text("".join(parts))
        cases[f"{large_bytes / 1e6:g} MB generated torch code, {label}"] = path
    return cases


# ---------------------------------------------------------------------------------------
# Tools


def tools_venv(no_torchfix: bool) -> Dict[str, List[str]]:
    venv = CACHE / f"tools-ruff{RUFF}-torchfix{TORCHFIX}"
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    if not (venv / ".complete").exists():
        log(f"creating {venv} (ruff=={RUFF}, torchfix=={TORCHFIX})")
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        proc = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "--disable-pip-version-check",
                               "-q", f"ruff=={RUFF}", f"torchfix=={TORCHFIX}"], capture_output=True, text=True)
        if proc.returncode != 0:
            fail(f"installing ruff/torchfix failed:\n{proc.stderr.strip()[-2000:]}")
        (venv / ".complete").write_text("ok\n")
    tools = {"ruff": [str(bin_dir / "ruff")]}
    if not no_torchfix:
        tools["torchfix"] = [str(bin_dir / "torchfix")]
    return tools


def compile_mllint() -> None:
    """Byte-compile the measured mllint's own modules first, as ``pip install`` does for a
    user: with PYTHONDONTWRITEBYTECODE set (as on some machines) an editable checkout
    would otherwise be recompiled on every run, and start-up would look slower than it is."""
    import importlib.util

    folders = []
    for name in ("mllint", "mllint.rules"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            folders.extend(spec.submodule_search_locations)
    if folders:
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([sys.executable, "-m", "compileall", "-q", *folders], env=env, capture_output=True)


def tool_version(cmd: List[str]) -> str:
    proc = subprocess.run(cmd + ["--version"], capture_output=True, text=True)
    return (proc.stdout.strip() or proc.stderr.strip()).splitlines()[0] if proc.returncode == 0 else "?"


# ---------------------------------------------------------------------------------------
# One measured run


class Run(dict):
    """wall_s, cpu_s, maxrss_mib, returncode, timeout, stdout (text), stderr (text)."""


# The measuring wrapper: a small fresh process that spawns the command and reports the
# os.wait4 figures of its process tree. It is needed because Linux carries the RSS of the
# process image an exec replaces into the new program's ru_maxrss: a command forked from
# this (large) script would report at least this script's size. The wrapper's own size
# (a few MiB; `measure_floor`) is then the floor of every peak.
WRAPPER = """\
import os, sys, time
result, cmd = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
pid = os.posix_spawnp(cmd[0], cmd, os.environ)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
with open(result, "w") as handle:
    handle.write(f"{wall!r} {usage.ru_utime + usage.ru_stime!r} {usage.ru_maxrss} {os.waitstatus_to_exitcode(status)}")
"""


def measure(cmd: List[str], env: Dict[str, str], timeout: float, cwd: Optional[Path] = None) -> Run:
    """Run `cmd` under the wrapper: wall time, CPU time (user + system of the process and
    every descendant it waited for) and peak RSS (the largest one process of that tree)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryDirectory(prefix="mllint-bench-run-") as scratch:
        result_file = Path(scratch) / "result"
        proc = subprocess.Popen([sys.executable, "-S", "-I", "-c", WRAPPER, str(result_file), *cmd],
                                stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
                                cwd=str(cwd) if cwd else None, start_new_session=True)
        try:
            proc.wait(timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the wrapper and everything under it
            except ProcessLookupError:
                pass
            proc.wait()
            timed_out = True
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
        if timed_out:
            return Run(wall_s=timeout, cpu_s=None, maxrss_mib=None, returncode=None, timeout=True,
                       stdout=stdout, stderr=stderr)
        if proc.returncode != 0 or not result_file.exists():
            fail(f"the measuring wrapper failed for `{' '.join(cmd)}` (exit {proc.returncode}):\n"
                 f"{stderr.strip()[-2000:]}")
        wall, cpu, maxrss_kib, code = result_file.read_text().split()
        return Run(
            wall_s=float(wall),
            cpu_s=float(cpu),
            maxrss_mib=int(maxrss_kib) / 1024,  # KiB on Linux
            returncode=int(code),
            timeout=False,
            stdout=stdout,
            stderr=stderr,
        )


def measure_floor(env: Dict[str, str]) -> float:
    """Peak RSS reported for `true`: the wrapper's part in every peak, in MiB."""
    true = shutil.which("true") or "/bin/true"
    return max(measure([true], env, 30)["maxrss_mib"] for _ in range(3))


def count_findings(tool: str, stdout: str) -> Optional[int]:
    if tool == "ruff":
        match = re.search(r"Found (\d+) errors?", stdout)
        return int(match.group(1)) if match else (0 if "All checks passed" in stdout else None)
    if tool == "torchfix":
        return len(re.findall(r"^\S.*:\d+:\d+: TOR\d+ ", stdout, re.M))
    match = re.search(r"Found (\d+) problems?", stdout)
    return int(match.group(1)) if match else (0 if stdout.strip() == "" or "All checks passed" in stdout
                                              or "No problems" in stdout else None)


# ---------------------------------------------------------------------------------------
# A case: several variants measured interleaved


class Variant:
    """A named sequence of commands measured one after another as one unit of a round
    (the cold-cache run and the warm run after it are one unit)."""

    def __init__(self, names: Sequence[str], tool: str, commands: Sequence[List[str]],
                 before: Optional[Callable[[], None]] = None, ok_codes=(0,)):
        self.names, self.tool, self.commands, self.before, self.ok_codes = list(names), tool, commands, before, ok_codes


def run_case(case: str, variants: Sequence[Variant], env: Dict[str, str], rounds: int, timeout: float,
             seed: int, cwd: Optional[Path] = None) -> Dict[str, Dict]:
    runs: Dict[str, List[Run]] = {name: [] for v in variants for name in v.names}
    dead = set()  # variants that timed out: not run again
    rng = random.Random(f"{seed}:{case}")
    for number in range(rounds):
        order = list(variants)
        rng.shuffle(order)
        log(f"{case}: round {number + 1}/{rounds}: {', '.join(v.names[0] for v in order if v.names[0] not in dead)}")
        for variant in order:
            if variant.names[0] in dead:
                continue
            if variant.before:
                variant.before()
            for name, cmd in zip(variant.names, variant.commands):
                run = measure(cmd, env, timeout, cwd)
                if run["timeout"]:
                    runs[name].append(run)
                    dead.add(variant.names[0])
                    break
                if run["returncode"] not in variant.ok_codes:
                    fail(f"{case}: {name}: `{' '.join(cmd)}` exited {run['returncode']}:\n"
                         f"{run['stderr'].strip()[-2000:]}")
                runs[name].append(run)
    return {name: summarize(variant_tool(variants, name), rs) for name, rs in runs.items()}


def variant_tool(variants: Sequence[Variant], name: str) -> str:
    return next(v.tool for v in variants if name in v.names)


def summarize(tool: str, runs: List[Run]) -> Dict:
    done = [r for r in runs if not r["timeout"]]
    summary: Dict = {"tool": tool, "runs": len(runs), "timeouts": len(runs) - len(done)}
    if len(done) < len(runs):
        summary["timeout_after_s"] = max(r["wall_s"] for r in runs if r["timeout"])
    if not done:
        summary["all_timeout"] = True
        return summary
    summary.update(
        wall_s=statistics.median(r["wall_s"] for r in done),
        wall_all_s=[round(r["wall_s"], 3) for r in done],
        cpu_s=statistics.median(r["cpu_s"] for r in done),
        cpu_all_s=[round(r["cpu_s"], 3) for r in done],
        peak_mib=max(r["maxrss_mib"] for r in done),
        findings=count_findings(tool, done[-1]["stdout"]),
        skipped=tool == "mllint" and "over max-file-size" in done[-1]["stdout"] + done[-1]["stderr"],
        same_output=len({hashlib.sha256(r["stdout"].encode()).hexdigest() for r in done}) == 1,
    )
    return summary


# ---------------------------------------------------------------------------------------
# mllint specifics


class Mllint:
    def __init__(self, cache: Path, help_text: str):
        self.cmd = mllint_command()
        self.cache = cache
        self.has_jobs = "--jobs" in help_text
        self.has_no_screen = "--no-screen" in help_text
        self.has_max_file_size = "--max-file-size" in help_text

    def clear_cache(self) -> None:
        shutil.rmtree(self.cache, ignore_errors=True)

    def variants(self, target: str) -> List[Variant]:
        base = self.cmd + ["--exit-zero"]
        out = [
            Variant(["mllint cold (--no-cache)"], "mllint", [base + ["--no-cache", target]]),
            Variant(["mllint cold cache", "mllint warm cache"], "mllint",
                    [base + [target], base + [target]], before=self.clear_cache),
        ]
        if self.has_jobs:
            out.append(Variant(["mllint cold --jobs 1"], "mllint", [base + ["--no-cache", "--jobs", "1", target]]))
        return out

    def findings_check(self, target: str, env: Dict[str, str], timeout: float, cwd: Path) -> Dict:
        """The JSON findings of every way of running mllint, compared (order included)."""
        json_args = self.cmd + ["--exit-zero", "--format", "json"]
        outputs: Dict[str, object] = {}

        def get(name: str, extra: List[str]) -> None:
            run = measure(json_args + extra + [target], env, timeout, cwd)
            if run["timeout"]:
                outputs[name] = "timeout"
            elif run["returncode"] != 0:
                outputs[name] = f"exit {run['returncode']}: {run['stderr'].strip()[-300:]}"
            else:
                outputs[name] = json.loads(run["stdout"] or "[]")

        get("--no-cache", ["--no-cache"])
        self.clear_cache()
        get("cold cache", [])
        get("warm cache", [])
        self.clear_cache()
        measure(self.cmd + ["--exit-zero", target], env, timeout, cwd)  # fill the cache with a text run
        get("warm after text run", [])
        if self.has_jobs:
            get("--jobs 1", ["--no-cache", "--jobs", "1"])
            get("--jobs 2", ["--no-cache", "--jobs", "2"])
        if self.has_no_screen:
            get("--no-screen", ["--no-cache", "--no-screen"])
        reference = outputs["--no-cache"]
        differ = [name for name, found in outputs.items() if found != reference]
        codes: Dict[str, int] = {}
        if isinstance(reference, list):
            for finding in reference:
                codes[finding["code"]] = codes.get(finding["code"], 0) + 1
        return {
            "compared": list(outputs),
            "identical": not differ,
            "differ": differ,
            "findings": len(reference) if isinstance(reference, list) else None,
            "by_code": dict(sorted(codes.items())),
        }


def prefilter_counts(folder: Path) -> Dict:
    """Files and lines of the corpus, and those passing the trigger words and the screen."""
    from mllint import registry

    try:
        from mllint import screen
        passing = getattr(screen, "passing", None)
    except ImportError:
        passing = None
    rules = [r for r in registry.all_rules().values() if r.default_enabled and r.check_noqa is None]
    counts = {"files": 0, "lines": 0, "trigger_files": 0, "trigger_lines": 0,
              "screen_files": None, "screen_lines": None}
    if passing is not None:
        counts["screen_files"] = counts["screen_lines"] = 0
    for path in sorted(folder.rglob("*.py")):
        source = path.read_text(encoding="utf-8", errors="replace")
        lines = source.count("\n") + (0 if source.endswith("\n") or not source else 1)
        counts["files"] += 1
        counts["lines"] += lines
        triggered = [r for r in rules if r.triggered_by(source)]
        if triggered:
            counts["trigger_files"] += 1
            counts["trigger_lines"] += lines
            if passing is not None and passing(source, triggered, str(path)):
                counts["screen_files"] += 1
                counts["screen_lines"] += lines
    return counts


# ---------------------------------------------------------------------------------------
# Machine


def machine() -> Dict:
    info: Dict = {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["ram_gib"] = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return info


def load_average() -> Optional[Tuple[float, float, float]]:
    try:
        return tuple(round(x, 2) for x in os.getloadavg())
    except OSError:
        return None


def git_commit() -> Optional[str]:
    """The commit of the checkout the measured mllint comes from (+dirty: with changes)."""
    try:
        import mllint
        root = Path(mllint.__file__).resolve().parent.parent
    except ImportError:
        root = ROOT
    proc = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=str(root), capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "mllint", "rules"],
                           cwd=str(root), capture_output=True, text=True).stdout.strip()
    return (proc.stdout.strip() + ("+dirty" if dirty else "")) or None


def libcst_version() -> str:
    try:
        from importlib.metadata import version
        return version("libcst")
    except Exception:
        return "?"


# ---------------------------------------------------------------------------------------
# Output


def fmt_s(summary: Dict, key: str) -> str:
    if summary.get("all_timeout"):
        return f"timeout (> {summary['timeout_after_s']:.0f} s)"
    value = summary[key]
    text = f"{value:.2f}" if value < 100 else f"{value:.0f}"
    return text + (f" ({summary['timeouts']} timeout)" if summary.get("timeouts") else "")


def fmt_count(files, lines) -> str:
    return "n/a" if files is None else f"{files} / {lines:,}"


def ratio_text(value: float) -> str:
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}" if value >= 1 else f"{value:.2f}"


def markdown(report: Dict) -> str:
    m, v = report["machine"], report["versions"]
    out = [
        f"Machine: {m.get('cpu', '?')}, {m['cpus']} cores, {m.get('ram_gib', '?')} GiB RAM, Python {m['python']}, "
        f"{m['platform']}; load average {report['load_before']} before, {report['load_after']} after "
        f"(shared machine). Versions: {v['mllint']} (commit {v['commit']}, libcst {v['libcst']}), "
        f"{v.get('ruff', 'ruff ?')}, TorchFix {v.get('torchfix', 'n/a')}. {report['rounds']} interleaved rounds; "
        f"median wall and CPU seconds (CPU: user+sys of the whole process tree), peak: largest RSS of one "
        f"process of the tree in MiB (max over rounds; the measuring wrapper alone reads "
        f"{report['peak_floor_mib']:.0f} MiB). `--jobs` flag: {'yes' if report['mllint_jobs'] else 'no'}.",
        "",
    ]
    if report["corpora"]:
        out += ["| corpus | files / lines | passing trigger words | passing screen | mllint findings identical "
                "(cold, warm, jobs, screen) |",
                "| --- | --- | --- | --- | --- |"]
        for c in report["corpora"]:
            p, check = c["prefilter"], c["findings_check"]
            if check is None:
                same = "not checked"
            else:
                same = ("yes" if check["identical"] else "NO: " + ", ".join(check["differ"])) + \
                    f" ({len(check['compared'])} ways, {check['findings']} findings)"
            out.append(f"| {c['label']} | {fmt_count(p['files'], p['lines'])} | "
                       f"{fmt_count(p['trigger_files'], p['trigger_lines'])} | "
                       f"{fmt_count(p['screen_files'], p['screen_lines'])} | {same} |")
        out.append("")
    rows = [(c["label"], c["runs"]) for c in report["corpora"]] + [(w["label"], w["runs"]) for w in report["worst"]]
    if rows:
        out += ["| case | run | wall s | CPU s | peak MiB | findings | wall ÷ Ruff's | TorchFix's wall ÷ this |",
                "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for label, runs in rows:
            ruff = runs.get("ruff")
            ruff_wall = None if not ruff or ruff.get("all_timeout") else ruff["wall_s"]
            torchfix = runs.get("torchfix")
            torchfix_wall = None if not torchfix or torchfix.get("all_timeout") else torchfix["wall_s"]
            for name, s in runs.items():
                ratio = "" if ruff_wall is None or s.get("all_timeout") or name in ("ruff", "mllint --version") \
                    else ratio_text(s['wall_s'] / ruff_wall)
                ratio_tf = "" if torchfix_wall is None or s.get("all_timeout") or not name.startswith("mllint") \
                    else ratio_text(torchfix_wall / s['wall_s'])
                peak = "" if s.get("all_timeout") else f"{s['peak_mib']:.0f}"
                found = "" if s.get("all_timeout") or s.get("findings") is None else f"{s['findings']:,}"
                if s.get("skipped"):
                    found = "file skipped (size limit)"
                out.append(f"| {label} | {name} | {fmt_s(s, 'wall_s')} | {fmt_s(s, 'cpu_s') if not s.get('all_timeout') else ''} "
                           f"| {peak} | {found} | {ratio} | {ratio_tf} |")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", action="append",
                        help=f"a known corpus ({', '.join(list(WHEELS) + list(MIRRORS))}) or a folder; repeatable "
                             f"(default: {', '.join(DEFAULT_CORPORA)})")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds per case (default 3)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds one run may take (default 120)")
    parser.add_argument("--torchfix-on", default="pytorch-examples",
                        help="corpora TorchFix runs on, comma-separated, or 'all' (on this 2-core machine TorchFix "
                             "takes about 3 minutes on torchtune and 5 on timm); default pytorch-examples")
    parser.add_argument("--no-torchfix", action="store_true", help="do not install or run TorchFix")
    parser.add_argument("--skip-corpora", action="store_true", help="only the one-file run and worst cases")
    parser.add_argument("--skip-worst", action="store_true", help="no one-file run or worst cases")
    parser.add_argument("--large-mb", type=float, default=5, help="size of the generated large files (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random order of each round")
    parser.add_argument("--json", type=Path, default=None, help="JSON output (default tests/benchmarks/results/)")
    args = parser.parse_args(argv)
    corpora = [] if args.skip_corpora else (args.corpus or DEFAULT_CORPORA)
    torchfix_on = set(args.torchfix_on.split(","))

    tools = tools_venv(args.no_torchfix)
    compile_mllint()
    help_text = subprocess.run(mllint_command() + ["--help"], capture_output=True, text=True).stdout
    report: Dict = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine(),
        "load_before": load_average(),
        "rounds": args.repeat,
        "timeout_s": args.timeout,
        "versions": {"mllint": tool_version(mllint_command()), "commit": git_commit(), "libcst": libcst_version(),
                     **{t: tool_version(cmd) for t, cmd in tools.items()}},
        "pins": {"ruff": RUFF, "torchfix": TORCHFIX, "wheels": WHEELS, "mirrors": MIRRORS, "d2l": D2L},
        "corpora": [],
        "worst": [],
    }

    with tempfile.TemporaryDirectory(prefix="mllint-bench-") as tmp:
        tmp_path = Path(tmp)
        cache = tmp_path / "mllint-cache"
        env = dict(os.environ, MLLINT_CACHE_DIR=str(cache), NO_COLOR="1")
        env.pop("MLLINT_NO_CACHE", None)
        mllint = Mllint(cache, help_text)
        report["peak_floor_mib"] = measure_floor(env)
        report["mllint_jobs"] = mllint.has_jobs
        report["mllint_no_screen"] = mllint.has_no_screen

        def external(name: str, target: str) -> List[Variant]:
            out = [Variant(["ruff"], "ruff", [tools["ruff"] + ["check", "--no-cache", "--select", "ALL",
                                                                "--exit-zero", target]])]
            if "torchfix" in tools and ("all" in torchfix_on or name in torchfix_on):
                # TorchFix exits 1 when it reports something
                out.append(Variant(["torchfix"], "torchfix", [tools["torchfix"] + ["--select", "ALL", target]],
                                   ok_codes=(0, 1)))
            return out

        for name in corpora:
            folder = corpus_folder(name)
            label = corpus_label(name)
            log(f"{label}: counting files, lines, prefilter")
            entry = {"name": name, "label": label, "folder": str(folder), "prefilter": prefilter_counts(folder)}
            variants = external(name, ".") + mllint.variants(".")
            entry["runs"] = run_case(label, variants, env, args.repeat, args.timeout, args.seed, cwd=folder)
            log(f"{label}: findings check")
            entry["findings_check"] = mllint.findings_check(".", env, args.timeout, folder)
            report["corpora"].append(entry)
            for tool in ("ruff", "torchfix"):
                s = entry["runs"].get(tool)
                if s and not s.get("all_timeout") and not s.get("findings"):
                    log(f"WARNING: {label}: {tool} reported no findings: is it really analysing?")

        if not args.skip_worst:
            worst_dir = tmp_path / "worst"
            worst_dir.mkdir()
            cases = {"one file (fixtures/ml001/bad_train.py)": ONE_FILE}
            cases.update(make_worst_cases(worst_dir, int(args.large_mb * 1e6)))
            for label, path in cases.items():
                text = path.read_text()
                entry = {"label": label, "lines": text.count("\n"), "bytes": len(text.encode())}
                variants = [Variant(["ruff"], "ruff", [tools["ruff"] + ["check", "--no-cache", "--select", "ALL",
                                                                         "--exit-zero", str(path)]]),
                            Variant(["mllint --no-cache"], "mllint",
                                    [mllint.cmd + ["--exit-zero", "--no-cache", str(path)]])]
                if mllint.has_max_file_size and entry["bytes"] > 1_000_000:
                    # over the default size limit the file is skipped: lint it too with the limit raised
                    variants.append(Variant(["mllint --no-cache --max-file-size 64MiB"], "mllint",
                                            [mllint.cmd + ["--exit-zero", "--no-cache", "--max-file-size", "64MiB",
                                                           str(path)]]))
                if path == ONE_FILE:
                    variants.append(Variant(["mllint --version"], "mllint-version", [mllint.cmd + ["--version"]]))
                entry["runs"] = run_case(label, variants, env, args.repeat, args.timeout, args.seed)
                report["worst"].append(entry)

    report["load_after"] = load_average()
    table = markdown(report)
    print(table)
    report["markdown"] = table
    target = args.json or RESULTS / f"speed-{time.strftime('%Y%m%d-%H%M%S')}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"\nJSON written to {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
