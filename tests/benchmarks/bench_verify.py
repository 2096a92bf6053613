#!/usr/bin/env python
"""Held-out benchmark for ``mllint --verify`` (issue 14). A script, not a pytest test.

    python tests/benchmarks/bench_verify.py                        # every script, table + JSON
    python tests/benchmarks/bench_verify.py --out plain.json
    python tests/benchmarks/bench_verify.py --out local.json -- --launcher local
    python tests/benchmarks/bench_verify.py --compare plain.json local.json
    python tests/benchmarks/bench_verify.py --scripts ml004 ok_saliency   # a subset (substrings)

For every script of ``verify_scripts/`` (listed with its expectation in
``verify_scripts/manifest.json``) it runs the real command, in a subprocess, with the
mllint of the interpreter that runs this file::

    python -m mllint --verify --rounds 0 --format json --select ML001,ML002,ML004,ML005 [EXTRA...] SCRIPT

EXTRA is whatever follows ``--`` on this command line, passed through untouched. The
command runs with the scripts' folder as working directory (the tree --verify copies)
and the result cache in a temporary folder; the folder's files are hashed before and
after each run and must be byte-identical, with nothing added or removed.

What counts (exit status 1 when any of it fails):

- a script that holds a bug: every finding of its rule must be ``confirmed``; a script
  whose bug the linter does not report is a *linter miss*, shown and counted but not
  failed (nothing there for --verify to judge); findings of other rules on it are
  shown as *extra* and not judged;
- a correct script: no finding may be ``confirmed`` (a finding there is a false alarm
  that --verify must not endorse);
- every command must end within ``--limit`` seconds (default 30, issue 14's target
  with ``--rounds 0``), with exit status 0 or 1 and JSON on stdout; a command past
  ``--timeout`` (default 600 s) is killed with its process group.

``--compare A.json B.json`` reads two result files of this script and reports every
finding whose verdict differs (and findings present in only one); exit status 1 when
there is any difference. Times are shown side by side, not judged.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import hashlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS_DIR = HERE / "verify_scripts"
REPO = HERE.parent.parent
RULES = "ML001,ML002,ML004,ML005"


# ----------------------------------------------------------------------------- running


def tree_digest(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` (relative path -> digest)."""
    digests = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digests[path.relative_to(folder).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def tree_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    changes = [f"added {p}" for p in sorted(after.keys() - before.keys())]
    changes += [f"removed {p}" for p in sorted(before.keys() - after.keys())]
    changes += [f"changed {p}" for p in sorted(before.keys() & after.keys()) if before[p] != after[p]]
    return changes


def run_command(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float):
    """Run ``cmd``; return (exit status or None on timeout, stdout, stderr, wall seconds)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        status = None
    return status, out, err, time.perf_counter() - start


def judge(entry: dict, findings: list[dict]) -> tuple[list[dict], list[str], bool]:
    """Give each finding its role; return (findings, problems, linter_miss)."""
    expect = entry["expect"]
    problems = []
    judged = []
    for f in findings:
        ver = f.get("verification") or {}
        verdict = ver.get("verdict", "none")
        if expect == "correct":
            role = "false-alarm"
        elif f["code"] == expect:
            role = "bug"
        else:
            role = "extra"
        row = {
            "code": f["code"],
            "line": f["line"],
            "column": f["column"],
            "message": f.get("message", ""),
            "verdict": verdict,
            "summary": ver.get("summary", ""),
            "role": role,
            "at_bug_line": entry.get("bug_line") == f["line"],
        }
        judged.append(row)
        where = f"{f['code']} line {f['line']}"
        if role == "bug" and verdict != "confirmed":
            problems.append(f"{where} not confirmed ({verdict})")
        if role == "false-alarm" and verdict == "confirmed":
            problems.append(f"{where} on a correct script confirmed")
    miss = expect != "correct" and not any(r["role"] == "bug" for r in judged)
    return judged, problems, miss


def bench_one(name: str, entry: dict, args, extra: list[str], env: dict[str, str]) -> dict:
    cmd = [sys.executable, "-m", "mllint", "--verify", "--rounds", "0", "--format", "json",
           "--select", RULES, *extra, name]
    before = tree_digest(args.dir)
    status, out, err, seconds = run_command(cmd, args.dir, env, args.timeout)
    changes = tree_changes(before, tree_digest(args.dir))
    problems: list[str] = []
    findings: list[dict] = []
    miss = False
    if status is None:
        problems.append(f"killed after {args.timeout:.0f} s (--timeout)")
    elif status not in (0, 1):
        problems.append(f"mllint exited with status {status}")
    if status in (0, 1):
        try:
            raw = json.loads(out) if out.strip() else []
        except json.JSONDecodeError as exc:
            problems.append(f"stdout is not JSON ({exc})")
            raw = []
        findings, judged_problems, miss = judge(entry, raw)
        problems += judged_problems
    if seconds > args.limit:
        problems.append(f"{seconds:.1f} s > {args.limit:.0f} s")
    if changes:
        problems.append("tree changed: " + ", ".join(changes[:5]))
    return {
        "script": name,
        "expect": entry["expect"],
        "bug_line": entry.get("bug_line"),
        "command": cmd[1:],
        "exit_status": status,
        "seconds": round(seconds, 2),
        "findings": findings,
        "linter_miss": miss,
        "tree_unchanged": not changes,
        "problems": problems,
        "ok": not problems,
        "stderr_tail": err.strip().splitlines()[-6:],
    }


def totals(results: list[dict], limit: float) -> dict:
    bug = [f for r in results for f in r["findings"] if f["role"] == "bug"]
    alarms = [f for r in results for f in r["findings"] if f["role"] == "false-alarm"]
    extra = [f for r in results for f in r["findings"] if f["role"] == "extra"]
    seconds = sorted(r["seconds"] for r in results)
    return {
        "scripts": len(results),
        "buggy_scripts": sum(r["expect"] != "correct" for r in results),
        "correct_scripts": sum(r["expect"] == "correct" for r in results),
        "bug_findings": len(bug),
        "bug_findings_confirmed": sum(f["verdict"] == "confirmed" for f in bug),
        "bug_findings_at_bug_line": sum(f["at_bug_line"] for f in bug),
        "linter_misses": [r["script"] for r in results if r["linter_miss"]],
        "correct_script_findings": len(alarms),
        "correct_script_findings_confirmed": sum(f["verdict"] == "confirmed" for f in alarms),
        "extra_findings": len(extra),
        "verdicts": dict(collections.Counter(f["verdict"] for r in results for f in r["findings"])),
        "scripts_over_limit": [r["script"] for r in results if r["seconds"] > limit],
        "seconds_total": round(sum(seconds), 1),
        "seconds_median": seconds[len(seconds) // 2] if seconds else None,
        "seconds_max": seconds[-1] if seconds else None,
        "failed_scripts": [r["script"] for r in results if not r["ok"]],
    }


def short_verdict(verdict: str) -> str:
    return {"confirmed": "CONF", "not-confirmed": "not-conf", "could-not-run": "no-run",
            "not-verifiable": "n/a"}.get(verdict, verdict)


def print_table(results: list[dict], tot: dict, limit: float) -> None:
    rows = [("script", "expected", "findings", "verdicts", "s", "result")]
    for r in results:
        found = ", ".join(f"{f['code']}:{f['line']}" + ("" if f["role"] != "extra" else "(extra)")
                          for f in r["findings"]) or "-"
        verdicts = ", ".join(short_verdict(f["verdict"]) for f in r["findings"]) or "-"
        if r["ok"]:
            result = "ok" + (" (linter miss)" if r["linter_miss"] else "")
        else:
            result = "FAIL: " + "; ".join(r["problems"])
        rows.append((r["script"], r["expect"], found, verdicts, f"{r['seconds']:.1f}", result))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for i, row in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row[:5], widths)) + "  " + row[5])
        if i == 0:
            print("  ".join("-" * w for w in widths) + "  ------")
    print()
    print(f"buggy-script findings confirmed:   {tot['bug_findings_confirmed']}/{tot['bug_findings']}"
          f" ({tot['bug_findings_at_bug_line']} at the manifest's bug line)")
    print(f"correct-script findings confirmed: {tot['correct_script_findings_confirmed']}"
          f"/{tot['correct_script_findings']} (must be 0)")
    print(f"linter misses:                     {len(tot['linter_misses'])}"
          + (f" ({', '.join(tot['linter_misses'])})" if tot["linter_misses"] else ""))
    print("verdicts:                          "
          + (", ".join(f"{k} {v}" for k, v in sorted(tot["verdicts"].items())) or "-"))
    print(f"scripts over {limit:.0f} s:                 {len(tot['scripts_over_limit'])}"
          + (f" ({', '.join(tot['scripts_over_limit'])})" if tot["scripts_over_limit"] else ""))
    print(f"wall time:                         total {tot['seconds_total']} s, "
          f"median {tot['seconds_median']} s, max {tot['seconds_max']} s")
    print(f"scripts failing:                   {len(tot['failed_scripts'])}/{tot['scripts']}")


def git_commit() -> str | None:
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "mllint"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty(mllint/)" if dirty else "")


def run_bench(args, extra: list[str]) -> int:
    manifest = json.loads((args.dir / "manifest.json").read_text())["scripts"]
    names = sorted(manifest)
    if args.scripts:
        names = [n for n in names if any(s in n for s in args.scripts)]
        if not names:
            sys.exit(f"no script matches {args.scripts}")
    on_disk = {p.name for p in args.dir.glob("*.py")}
    unlisted = sorted(on_disk - set(manifest))
    if unlisted:
        print(f"note: scripts without a manifest entry, not run: {', '.join(unlisted)}", file=sys.stderr)
    version = subprocess.run([sys.executable, "-m", "mllint", "--version"], capture_output=True,
                             text=True).stdout.strip()
    results = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-verify-cache-") as cache:
        env = dict(os.environ, MLLINT_CACHE_DIR=cache)
        env.pop("MLLINT_NO_CACHE", None)
        for i, name in enumerate(names, 1):
            print(f"[{i}/{len(names)}] {name} ...", end=" ", file=sys.stderr, flush=True)
            result = bench_one(name, manifest[name], args, extra, env)
            verdicts = ", ".join(f["verdict"] for f in result["findings"]) or "no findings"
            print(f"{result['seconds']:.1f} s, {verdicts}" + ("" if result["ok"] else "  FAIL"),
                  file=sys.stderr, flush=True)
            results.append(result)
    tot = totals(results, args.limit)
    print_table(results, tot, args.limit)
    report = {
        "meta": {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "mllint": version,
            "commit": git_commit(),
            "command": ["python", "-m", "mllint", "--verify", "--rounds", "0", "--format", "json",
                        "--select", RULES, *extra, "SCRIPT"],
            "extra_args": extra,
            "limit_seconds": args.limit,
            "timeout_seconds": args.timeout,
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "totals": tot,
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nresults written to {args.out}")
    return 0 if not tot["failed_scripts"] else 1


# ----------------------------------------------------------------------------- comparing


def compare(path_a: Path, path_b: Path) -> int:
    a, b = (json.loads(Path(p).read_text()) for p in (path_a, path_b))
    print(f"A: {path_a} (extra args {a['meta'].get('extra_args')}, {a['meta'].get('commit')})")
    print(f"B: {path_b} (extra args {b['meta'].get('extra_args')}, {b['meta'].get('commit')})")
    by_a = {r["script"]: r for r in a["results"]}
    by_b = {r["script"]: r for r in b["results"]}
    differences = []
    rows = [("script", "finding", "verdict A", "verdict B", "s A", "s B")]
    for script in sorted(by_a.keys() | by_b.keys()):
        ra, rb = by_a.get(script), by_b.get(script)
        if ra is None or rb is None:
            differences.append(f"{script}: only in {'A' if rb is None else 'B'}")
            continue
        fa = {(f["code"], f["line"], f["column"]): f for f in ra["findings"]}
        fb = {(f["code"], f["line"], f["column"]): f for f in rb["findings"]}
        keys = sorted(fa.keys() | fb.keys()) or [None]
        for key in keys:
            va = fa[key]["verdict"] if key in fa else ("-" if key is None else "absent")
            vb = fb[key]["verdict"] if key in fb else ("-" if key is None else "absent")
            label = "-" if key is None else f"{key[0]}:{key[1]}"
            rows.append((script, label, va, vb, f"{ra['seconds']:.1f}", f"{rb['seconds']:.1f}"))
            if va != vb:
                differences.append(f"{script} {label}: {va} -> {vb}")
                for side, f in (("A", fa.get(key)), ("B", fb.get(key))):
                    if f is not None:
                        differences.append(f"    {side}: {f['summary']}")
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print()
    if differences:
        print(f"{sum(not d.startswith('    ') for d in differences)} difference(s):")
        print("\n".join(differences))
        return 1
    print("same findings and verdicts")
    return 0


# ----------------------------------------------------------------------------- main


def main(argv: list[str]) -> int:
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     usage="%(prog)s [options] [-- EXTRA MLLINT ARGS]  |  %(prog)s --compare A.json B.json")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON result file (default tests/benchmarks/results/verify-<time>.json)")
    parser.add_argument("--dir", type=Path, default=SCRIPTS_DIR, help="the corpus folder (with manifest.json)")
    parser.add_argument("--scripts", nargs="+", metavar="SUBSTRING", help="only scripts whose name contains one of these")
    parser.add_argument("--limit", type=float, default=30.0, help="seconds a verdict may take (default 30)")
    parser.add_argument("--timeout", type=float, default=600.0, help="kill a command after this many seconds")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A.json", "B.json"),
                        help="report verdict differences between two result files, run nothing")
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    args.dir = args.dir.resolve()
    if args.out is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        args.out = HERE / "results" / f"verify-{stamp}.json"
    return run_bench(args, extra)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
