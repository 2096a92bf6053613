#!/usr/bin/env python
"""The project model's budgets (issue 22), measured with the real command in subprocesses.

1. One file of a ~2,000-file project (a copy of the installed torch package's ``.py`` files,
   made a project by a ``pyproject.toml``), linted as pre-commit would (that file alone on the
   command line): cold (no cache: every file's facts are read) and warm (the facts and the
   result cache are current). Budget: warm under 0.5 s.
2. A cold run over a whole source tree (``--tree DIR``, e.g. timm's ``timm/`` folder) with this
   build and, given ``--base-python PY`` (an interpreter with the build to compare against, e.g.
   main before the project model), with that one, interleaved. Budget: no more than 10% slower.
3. Peak resident memory of every mllint process (the command and its workers, as
   ``getrusage(RUSAGE_CHILDREN).ru_maxrss``) on the torch package. Budget: under 1 GiB.

    python tests/benchmarks/bench_project.py --tree /path/to/timm --base-python /path/to/old/venv/bin/python

Prints a table and writes JSON (``--out``, default tests/benchmarks/results/project.json).
Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent
DEFAULT_JSON = HERE / "results" / "project.json"


def run(python: str, args: List[str], cwd: Path, cache: Optional[Path]) -> Dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLLINT_")}
    if cache is not None:
        env["MLLINT_CACHE_DIR"] = str(cache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([python, "-m", "mllint", "--exit-zero", "-q", *args], cwd=str(cwd), env=env,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"bench_project: mllint failed ({proc.returncode}): {proc.stderr.strip()[:400]}")
    return {"seconds": elapsed, "cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
            "maxrss_mib": after.ru_maxrss / 1024}


def torch_copy(dest: Path) -> Path:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("bench_project: torch is not installed (pip install torch==2.13.0)")
    src = Path(list(spec.submodule_search_locations)[0])
    project = dest / "torchproject"
    for path in src.rglob("*.py"):
        target = project / "torch" / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    (project / "pyproject.toml").write_text("[project]\nname = 'copy'\n")
    return project


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", help="a source tree for the cold whole-tree run (e.g. timm's timm/)")
    parser.add_argument("--base-python", help="interpreter with the build to compare the cold tree run against")
    parser.add_argument("--file", default="torch/nn/modules/module.py", help="the one file, relative to the torch copy")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default=str(DEFAULT_JSON))
    args = parser.parse_args(argv)
    result: Dict[str, object] = {"python": sys.version.split()[0], "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="mllint-bench-project-") as tmp:
        tmp_path = Path(tmp)
        project = torch_copy(tmp_path)
        files = sum(1 for _ in project.rglob("*.py"))
        cache = tmp_path / "cache"
        cold = run(sys.executable, ["--no-cache", args.file], project, None)
        first = run(sys.executable, [args.file], project, cache)  # fills the facts and result caches
        warm = [run(sys.executable, [args.file], project, cache) for _ in range(args.repeat)]
        whole = run(sys.executable, ["--no-cache", "torch"], project, None)
        result["torch_project"] = {
            "files": files, "file": args.file,
            "one_file_cold_s": round(cold["seconds"], 3), "one_file_first_cached_s": round(first["seconds"], 3),
            "one_file_warm_s": [round(w["seconds"], 3) for w in warm],
            "one_file_warm_median_s": round(statistics.median(w["seconds"] for w in warm), 3),
            "whole_package_cold_s": round(whole["seconds"], 2),
            "max_rss_mib": round(max(cold["maxrss_mib"], first["maxrss_mib"], whole["maxrss_mib"],
                                     *(w["maxrss_mib"] for w in warm)), 1),
        }
        if args.tree:
            tree = Path(args.tree).resolve()
            rounds: Dict[str, List[float]] = {"this": [], "base": []}
            for _ in range(max(1, args.repeat // 2 + 1)):
                rounds["this"].append(run(sys.executable, ["--no-cache", str(tree)], tree.parent, None)["seconds"])
                if args.base_python:
                    rounds["base"].append(run(args.base_python, ["--no-cache", str(tree)], tree.parent, None)["seconds"])
            tree_result = {"tree": str(tree), "this_s": [round(x, 2) for x in rounds["this"]],
                           "this_median_s": round(statistics.median(rounds["this"]), 2)}
            if rounds["base"]:
                tree_result["base_s"] = [round(x, 2) for x in rounds["base"]]
                tree_result["base_median_s"] = round(statistics.median(rounds["base"]), 2)
                tree_result["slowdown"] = round(tree_result["this_median_s"] / tree_result["base_median_s"] - 1, 3)
            result["tree"] = tree_result
    print(json.dumps(result, indent=2))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
