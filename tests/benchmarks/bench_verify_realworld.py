#!/usr/bin/env python
"""Run `mllint --verify` on real public scripts and record every verdict (issue 14).

The scripts are not stored here: `verify_realworld.json` lists {repo, commit, path, note}. Each one is
materialised from the local git mirror (`/work/.mirror/<owner>+<name>/repo`, the `fetch` tool's
location; `$MLLINT_MIRRORS` overrides the folder) at that commit, with its whole repository tree
around it (blobs the mirror does not hold are skipped and counted), into a temporary folder. Then

    mllint --verify --rounds 0 --format json --select ML001,ML002,ML004,ML005 <path>

runs with the checkout root as working directory and MPLBACKEND=Agg. Per file: wall time, exit code,
and per finding its code, line, verdict and summary. Not a test: nothing asserts a time or a verdict.

    python tests/benchmarks/bench_verify_realworld.py --out /tmp/results/verify-realworld-before-caps.json
    python tests/benchmarks/bench_verify_realworld.py --only TextCNN --extra --steps 3
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LIST = os.path.join(HERE, "verify_realworld.json")
MIRRORS = os.environ.get("MLLINT_MIRRORS", "/work/.mirror")
SELECT = "ML001,ML002,ML004,ML005"
SLOW = 30.0  # seconds: issue 14's bound per verdict with --rounds 0


def mirror_of(repo):
    """The bare git directory of `repo` ("owner/name") in the mirror folder, or None."""
    base = os.path.join(MIRRORS, repo.replace("/", "+"), "repo")
    for cand in (os.path.join(base, ".git"), base):
        if os.path.isdir(cand) and os.path.exists(os.path.join(cand, "HEAD")):
            return cand
    return None


def git(gitdir, *args, data=None):
    return subprocess.run(["git", "--git-dir", gitdir, *args], input=data, capture_output=True,
                          check=True).stdout


def materialise(gitdir, commit, dest):
    """Write the tree of `commit` into `dest`; return (files written, blobs absent from the mirror)."""
    rows = []
    for entry in git(gitdir, "ls-tree", "-r", "-z", commit).split(b"\0"):
        if not entry:
            continue
        meta, path = entry.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob" and mode != b"120000":  # regular files only (no symlinks, no submodules)
            rows.append((sha.decode(), os.fsdecode(path), mode == b"100755"))
    # one cat-file process for all blobs; absent ones answer "<sha> missing"
    out = git(gitdir, "cat-file", "--batch", data="".join(s + "\n" for s, _, _ in rows).encode())
    pos, written, missing = 0, 0, 0
    for sha, path, executable in rows:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        if header[1] == b"missing":
            missing += 1
            pos = end + 1
            continue
        size = int(header[2])
        body = out[end + 1:end + 1 + size]
        pos = end + 1 + size + 1
        target = os.path.join(dest, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as fh:
            fh.write(body)
        if executable:
            os.chmod(target, 0o755)
        written += 1
    return written, missing


def run_one(item, mllint, extra, timeout):
    rec = {k: item[k] for k in ("repo", "commit", "path")}
    gitdir = mirror_of(item["repo"])
    if gitdir is None:
        rec.update(status="missing", error=f"no mirror under {MIRRORS}: fetch github:{item['repo']} first")
        return rec
    with tempfile.TemporaryDirectory(prefix="mllint-realworld-") as tmp:
        root = os.path.join(tmp, item["repo"].split("/")[1])
        os.makedirs(root)
        try:
            written, absent = materialise(gitdir, item["commit"], root)
        except subprocess.CalledProcessError as exc:
            rec.update(status="missing", error=f"git: {exc.stderr.decode(errors='replace').strip()}")
            return rec
        rec.update(files_written=written, blobs_absent=absent)
        if not os.path.isfile(os.path.join(root, item["path"])):
            rec.update(status="missing", error=f"{item['path']} not in the mirror at {item['commit']}")
            return rec
        cmd = [*mllint, "--verify", "--rounds", "0", "--format", "json", "--select", SELECT,
               "--no-cache", *extra, item["path"]]
        env = dict(os.environ, MPLBACKEND="Agg")
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            rec.update(status="timeout", seconds=round(time.perf_counter() - start, 1),
                       error=f"mllint did not finish in {timeout} s")
            return rec
        rec["seconds"] = round(time.perf_counter() - start, 1)
        rec["exit"] = proc.returncode
        try:
            findings = json.loads(proc.stdout)
        except json.JSONDecodeError:
            rec.update(status="error", error=(proc.stderr.strip() or proc.stdout.strip())[-2000:])
            return rec
        rec["status"] = "ran"
        rec["findings"] = [{
            "code": f["code"], "line": f["line"], "message": f["message"],
            "verdict": (f.get("verification") or {}).get("verdict", "none"),
            "summary": (f.get("verification") or {}).get("summary", ""),
        } for f in findings]
        if proc.stderr.strip():
            rec["stderr_tail"] = proc.stderr.strip()[-1000:]
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", default=LIST, help="JSON list of {repo, commit, path, note}")
    ap.add_argument("--out", help="write the results as JSON here")
    ap.add_argument("--only", help="run only entries whose repo/path contains this text")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per file for the whole mllint run")
    ap.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="more mllint options (last)")
    args = ap.parse_args()
    items = json.load(open(args.list))
    if args.only:
        items = [i for i in items if args.only in i["repo"] + "/" + i["path"]]
    mllint = [sys.executable, "-m", "mllint"]
    results, started = [], time.perf_counter()
    for item in items:
        rec = run_one(item, mllint, args.extra, args.timeout)
        results.append(rec)
        where = f"{rec['repo']}:{rec['path']}"
        if rec["status"] != "ran":
            print(f"{where}  {rec['status'].upper()}  {rec.get('error', '')}", flush=True)
            continue
        print(f"{where}  {rec['seconds']:.1f} s  exit {rec['exit']}", flush=True)
        for f in rec["findings"]:
            print(f"    {f['code']} line {f['line']:<5} {f['verdict']:<14} {f['summary']}", flush=True)
    findings = [f for r in results if r["status"] == "ran" for f in r["findings"]]
    totals = {v: sum(f["verdict"] == v for f in findings)
              for v in ("confirmed", "not-confirmed", "could-not-run", "not-verifiable", "none")}
    times = [r["seconds"] for r in results if "seconds" in r]
    summary = {
        "files": len(results),
        "files_ran": sum(r["status"] == "ran" for r in results),
        "files_missing": sum(r["status"] == "missing" for r in results),
        "files_failed": sum(r["status"] in ("error", "timeout") for r in results),
        "findings": len(findings), **{k: v for k, v in totals.items() if v or k != "none"},
        f"files_over_{int(SLOW)}s": sum(t > SLOW for t in times),
        "max_seconds": max(times, default=None),
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    print("\n" + "  ".join(f"{k}={v}" for k, v in summary.items()))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"mllint": subprocess.run([*mllint, "--version"], capture_output=True, text=True).stdout.strip(),
                       "summary": summary, "results": results}, fh, indent=1)


if __name__ == "__main__":
    main()
