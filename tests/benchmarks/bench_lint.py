#!/usr/bin/env python
"""Benchmark mllint's lint speed: startup, one file, and whole corpora, cold and warm cache.

Rerunnable and self-contained: every measurement runs the real installed `mllint`
command in a subprocess (as a user or pre-commit would), on copies of the corpora in a
temporary directory, with the cache in a temporary directory of its own
(MLLINT_CACHE_DIR), so nothing in the repository or in the user's cache is touched.

    python tests/benchmarks/bench_lint.py                       # generated + torch corpora
    python tests/benchmarks/bench_lint.py --corpus generated --generated-files 1000
    python tests/benchmarks/bench_lint.py --corpus path/to/src --repeat 5

Prints a table and writes JSON (default: tests/benchmarks/results/latest.json).
This is not a test: pytest does not collect it (its name does not match test_*.py),
and nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DEFAULT_JSON = HERE / "results" / "latest.json"
ONE_FILE = ROOT / "fixtures" / "ml001" / "bad_train.py"


def mllint_command() -> List[str]:
    script = Path(sys.executable).parent / ("mllint.exe" if os.name == "nt" else "mllint")
    if script.exists():
        return [str(script)]
    found = shutil.which("mllint")
    if found:
        return [found]
    sys.exit("bench_lint: the `mllint` command is not installed (pip install -e .)")


def run(args: List[str], env: Dict[str, str], cwd: Optional[Path] = None) -> tuple:
    """Run mllint once; return (seconds, CompletedProcess). Exit 0 and 1 are both normal."""
    start = time.perf_counter()
    proc = subprocess.run(
        mllint_command() + args, cwd=str(cwd) if cwd else None, env=env,
        capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"bench_lint: mllint {' '.join(args)} exited {proc.returncode}:\n{proc.stderr.strip()}")
    return seconds, proc


def summary(times: List[float]) -> Dict[str, float]:
    return {
        "runs": len(times),
        "min_s": min(times),
        "median_s": statistics.median(times),
        "max_s": max(times),
    }


# ---------------------------------------------------------------------------------------
# Corpora


def copy_python_files(source: Path, target: Path, limit: Optional[int]) -> int:
    files = sorted(p for p in source.rglob("*.py") if p.is_file())
    if limit:
        files = files[:limit]
    for path in files:
        dest = target / path.relative_to(source)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    return len(files)


TRAIN_GOOD = '''\
"""Training script {i} (generated, correct)."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Net{i}(nn.Module):
    def __init__(self, width={width}):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, width), nn.ReLU(), nn.Dropout(0.1), nn.Linear(width, 1))

    def forward(self, x):
        return self.body(x)


def evaluate(model, loader, loss_fn):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += loss_fn(model(x), y).item()
    return total / len(loader)


def train(model, loader, val_loader, epochs={epochs}):
    optimizer = torch.optim.{opt}(model.parameters(), lr={lr})
    loss_fn = nn.MSELoss()
    for epoch in range(epochs):
        model.train()
        for step, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        print(epoch, evaluate(model, val_loader, loss_fn))
    return model
'''

TRAIN_BAD = '''\
"""Training script {i} (generated, ML001: zero_grad once before the loop)."""
import torch
from torch import nn


def train(model, loader, epochs={epochs}):
    optimizer = torch.optim.{opt}(model.parameters(), lr={lr})
    loss_fn = nn.CrossEntropyLoss()
    optimizer.zero_grad()
    for epoch in range(epochs):
        for inputs, targets in loader:
            outputs = model(inputs)
            loss = loss_fn(outputs, targets)
            loss.backward()
            optimizer.step()
    return model
'''

TRAIN_ACCUMULATE = '''\
"""Training script {i} (generated, gradient accumulation: correct)."""
import torch


def train(model, loader, optimizer, accumulation={accum}):
    model.train()
    optimizer.zero_grad()
    for step, batch in enumerate(loader):
        loss = model(**batch).loss / accumulation
        loss.backward()
        if (step + 1) % accumulation == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
'''

UTILITY = '''\
"""Utility module {i} (generated; no ML code, exercises the prefilter)."""
import os
import re
from pathlib import Path

PATTERN = re.compile(r"^(?P<key>[a-z_]+)=(?P<value>.*)$")


def read_settings(path):
    settings = {{}}
    for line in Path(path).read_text().splitlines():
        match = PATTERN.match(line.strip())
        if match:
            settings[match.group("key")] = match.group("value")
    return settings


def find_files(root, suffix=".txt"):
    found = []
    for folder, _dirs, names in os.walk(root):
        found.extend(os.path.join(folder, n) for n in names if n.endswith(suffix))
    return sorted(found)


class Table{i}:
    def __init__(self, rows):
        self.rows = list(rows)

    def column(self, index):
        return [row[index] for row in self.rows]

    def __len__(self):
        return len(self.rows)
'''

TEMPLATES = [TRAIN_GOOD, TRAIN_GOOD, TRAIN_BAD, TRAIN_ACCUMULATE, UTILITY, UTILITY]


def generate_corpus(target: Path, count: int, seed: int = 0) -> int:
    rng = random.Random(seed)
    for i in range(count):
        template = TEMPLATES[i % len(TEMPLATES)]
        text = template.format(
            i=i,
            width=rng.choice([32, 64, 128]),
            epochs=rng.randint(1, 20),
            opt=rng.choice(["SGD", "Adam", "AdamW"]),
            lr=rng.choice(["0.1", "0.01", "1e-3"]),
            accum=rng.choice([2, 4, 8]),
        )
        folder = target / f"pkg{i // 50}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"module_{i}.py").write_text(text, encoding="utf-8")
    return count


def count_lines(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*.py"):
        with open(path, "rb") as handle:
            total += sum(1 for _ in handle)
    return total


# ---------------------------------------------------------------------------------------
# Measurements


def bench_corpus(name: str, folder: Path, env: Dict[str, str], cache: Path, repeat: int) -> Dict:
    files = sum(1 for _ in folder.rglob("*.py"))
    lines = count_lines(folder)
    args = ["--format", "json", "--exit-zero", "."]
    result: Dict = {"corpus": name, "files": files, "lines": lines}

    no_cache = []
    for _ in range(repeat):
        seconds, proc = run(["--no-cache"] + args, env, cwd=folder)
        no_cache.append(seconds)
    findings = json.loads(proc.stdout or "[]")
    result["findings"] = len(findings)
    result["findings_by_code"] = dict(sorted(
        (code, sum(1 for f in findings if f["code"] == code)) for code in {f["code"] for f in findings}
    ))

    cold, warm = [], []
    for _ in range(repeat):
        shutil.rmtree(cache, ignore_errors=True)
        seconds, proc_cold = run(args, env, cwd=folder)
        cold.append(seconds)
        seconds, proc_warm = run(args, env, cwd=folder)
        warm.append(seconds)
        if json.loads(proc_warm.stdout or "[]") != json.loads(proc_cold.stdout or "[]"):
            sys.exit(f"bench_lint: {name}: warm-cache findings differ from cold-cache findings")

    for label, times in (("no_cache", no_cache), ("cold_cache", cold), ("warm_cache", warm)):
        stats = summary(times)
        stats["files_per_s"] = files / stats["median_s"]
        stats["lines_per_s"] = lines / stats["median_s"]
        result[label] = stats
    return result


def git_commit() -> Optional[str]:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=str(ROOT), capture_output=True, text=True)
    except OSError:
        return None
    return out.stdout.strip() or None


def torch_source() -> Optional[Path]:
    """The installed torch package's folder, found without importing torch."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", action="append",
                        help="'generated', 'torch' (the installed torch package's .py files) or a folder; "
                             "repeatable (default: generated and torch)")
    parser.add_argument("--generated-files", type=int, default=600, help="size of the generated corpus")
    parser.add_argument("--limit", type=int, default=None, help="at most this many files per copied corpus")
    parser.add_argument("--repeat", type=int, default=3, help="runs per corpus measurement (median reported)")
    parser.add_argument("--startup-repeat", type=int, default=10, help="runs for startup and one-file timings")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help=f"JSON output (default {DEFAULT_JSON})")
    args = parser.parse_args(argv)
    corpora = args.corpus or ["generated", "torch"]

    version = subprocess.run(mllint_command() + ["--version"], capture_output=True, text=True).stdout.strip()
    report: Dict = {
        "mllint": version,
        "commit": git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "corpora": [],
    }

    with tempfile.TemporaryDirectory(prefix="mllint-bench-") as tmp:
        tmp_path = Path(tmp)
        cache = tmp_path / "cache"
        env = dict(os.environ, MLLINT_CACHE_DIR=str(cache), NO_COLOR="1")

        run(["--version"], env)  # warm the OS file cache before timing
        startup = [run(["--version"], env)[0] for _ in range(args.startup_repeat)]
        report["startup"] = summary(startup)
        one = [run(["--no-cache", str(ONE_FILE)], env)[0] for _ in range(args.startup_repeat)]
        report["one_file"] = dict(summary(one), file=str(ONE_FILE.relative_to(ROOT)))

        for index, corpus in enumerate(corpora):
            folder = tmp_path / f"corpus{index}"
            folder.mkdir()
            if corpus == "generated":
                generate_corpus(folder, args.generated_files)
                name = f"generated ({args.generated_files} scripts)"
            elif corpus == "torch":
                source = torch_source()
                if source is None:
                    print("bench_lint: torch is not installed; skipping the torch corpus", file=sys.stderr)
                    continue
                copy_python_files(source, folder, args.limit)
                name = "torch package"
                try:
                    from importlib.metadata import version as dist_version

                    name = f"torch {dist_version('torch')} package"
                except Exception:
                    pass
            else:
                source = Path(corpus)
                if not source.is_dir():
                    sys.exit(f"bench_lint: --corpus {corpus}: not a folder")
                copy_python_files(source, folder, args.limit)
                name = str(source)
            print(f"bench_lint: {name}: linting...", file=sys.stderr)
            report["corpora"].append(bench_corpus(name, folder, env, cache, args.repeat))

    print_table(report)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nJSON written to {args.json}")
    return 0


def print_table(report: Dict) -> None:
    print(f"{report['mllint']}  commit {str(report['commit'])[:10]}  Python {report['python']}  "
          f"{report['cpus']} CPUs  {report['platform']}")
    print()
    s, o = report["startup"], report["one_file"]
    print(f"{'measurement':<44} {'median s':>9} {'min s':>8} {'files/s':>9} {'lines/s':>10}")
    print("-" * 84)
    print(f"{'startup (mllint --version)':<44} {s['median_s']:>9.3f} {s['min_s']:>8.3f}")
    print(f"{'one file (' + Path(o['file']).name + ', --no-cache)':<44} {o['median_s']:>9.3f} {o['min_s']:>8.3f}")
    for corpus in report["corpora"]:
        print()
        print(f"{corpus['corpus']}: {corpus['files']} files, {corpus['lines']} lines, "
              f"{corpus['findings']} findings {corpus['findings_by_code']}")
        for label, title in (("no_cache", "--no-cache"), ("cold_cache", "cold cache"), ("warm_cache", "warm cache")):
            t = corpus[label]
            print(f"  {title:<42} {t['median_s']:>9.3f} {t['min_s']:>8.3f} "
                  f"{t['files_per_s']:>9.0f} {t['lines_per_s']:>10.0f}")


if __name__ == "__main__":
    sys.exit(main())
