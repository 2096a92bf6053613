#!/usr/bin/env python
"""Held-out precision/recall for ML013 (extension), ML015, ML016, ML017 and ML018.

    python tests/benchmarks/bench_heldout24.py           # heldout24b, aggregate numbers only
    python tests/benchmarks/bench_heldout24.py --set dev24 --show   # the opened first set, every case
    python tests/benchmarks/bench_heldout24.py --json out.json   # aggregate numbers as JSON
    python tests/benchmarks/bench_heldout24.py --dir PATH         # a corpus folder anywhere (files/, labels.json)
    python tests/benchmarks/bench_heldout24.py --dry-run          # load labels, print counts only

The default corpus (tests/benchmarks/heldout24b/) was written blind, without reading the rules'
implementation, and it is HELD OUT: the people tuning these rules must not read its files or
labels, nor run it with --show. By default this script prints only aggregate numbers (per rule:
TP, FP, FN, precision, recall), never a file name or a line. `--show` prints every case; use it
only on a set that is deliberately moved to development. dev24 (first written as heldout24) was
opened that way after one scoring; its README says what it scored.

Matching: each expected label (code, line, optional alt_codes and alt_lines) is matched to at most
one finding of the same code (or one of its alt_codes) whose line is within 3 lines of `line` or of
any alt_line; closest pairs are matched first. A finding that matches no label is a false positive,
except an ML004 finding (ML004 is an older rule, run only because it shares lines with ML018),
which is ignored unless a label names ML004. An unmatched label is a false negative.
Not a test: pytest does not collect it, and it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_SET = "heldout24b"
CORPUS = HERE / DEFAULT_SET
FILES = CORPUS / "files"
LABELS = CORPUS / "labels.json"
RULES = ["ML013", "ML015", "ML016", "ML017", "ML018"]
SELECT = ["ML004"] + RULES
TOLERANCE = 3


def use_corpus(corpus: Path) -> None:
    """Point FILES and LABELS at corpus/files and corpus/labels.json."""
    global CORPUS, FILES, LABELS
    CORPUS = corpus.resolve()
    FILES = CORPUS / "files"
    LABELS = CORPUS / "labels.json"
    if not FILES.is_dir() or not LABELS.is_file():
        sys.exit(f"bench_heldout24: {CORPUS} has no files/ folder or no labels.json")


def run_mllint() -> list:
    cmd = [sys.executable, "-m", "mllint", "--no-cache", "--isolated", "--select", ",".join(SELECT),
           "--format", "json", "--exit-zero", str(FILES)]
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        sys.exit(f"bench_heldout24: mllint exited {proc.returncode}:\n{proc.stderr.strip()[-2000:]}")
    try:
        findings = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError as exc:
        sys.exit(f"bench_heldout24: could not read mllint's JSON output ({exc})")
    for f in findings:
        f["file"] = Path(f["path"]).name
    return findings


def labels_by_file() -> dict:
    data = json.loads(LABELS.read_text(encoding="utf-8"))
    return {name: entries for name, entries in data.items() if not name.startswith("_")}


def match(labels: dict, findings: list):
    """Return (matched pairs, unmatched labels, unmatched findings), each item tagged with its file."""
    by_file = defaultdict(list)
    for f in findings:
        by_file[f["file"]].append(f)
    pairs, missed, extra = [], [], []
    for name in sorted(set(labels) | set(by_file)):
        exp = labels.get(name, [])
        got = by_file.get(name, [])
        options = []  # per label: the findings it may match, closest (then same code) first
        for lab in exp:
            codes = {lab["code"], *lab.get("alt_codes", [])}
            lines = [lab["line"], *lab.get("alt_lines", [])]
            near = []
            for j, f in enumerate(got):
                if f["code"] in codes:
                    dist = min(abs(f["line"] - line) for line in lines)
                    if dist <= TOLERANCE:
                        near.append((dist, f["code"] != lab["code"], j))
            options.append([j for _, _, j in sorted(near)])
        owner = {}  # finding index -> label index; maximum matching by augmenting paths

        def augment(i, seen):
            for j in options[i]:
                if j in seen:
                    continue
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
            return False

        for i in sorted(range(len(exp)), key=lambda i: len(options[i])):
            augment(i, set())
        used_l = set(owner.values())
        used_f = set(owner)
        pairs += [(name, exp[i], got[j]) for j, i in sorted(owner.items())]
        missed += [(name, lab) for i, lab in enumerate(exp) if i not in used_l]
        extra += [(name, f) for j, f in enumerate(got) if j not in used_f]
    return pairs, missed, extra


def is_counted_fp(finding: dict, labelled_codes: set) -> bool:
    if finding["code"] == "ML004" and "ML004" not in labelled_codes:
        return False
    return True


def table(pairs, missed, extra, labelled_codes) -> dict:
    stats = {r: {"tp": 0, "fp": 0, "fn": 0} for r in RULES}
    if "ML004" in labelled_codes:
        stats["ML004"] = {"tp": 0, "fp": 0, "fn": 0}
    for _, lab, _ in pairs:
        stats.setdefault(lab["code"], {"tp": 0, "fp": 0, "fn": 0})["tp"] += 1
    for _, lab in missed:
        stats.setdefault(lab["code"], {"tp": 0, "fp": 0, "fn": 0})["fn"] += 1
    for _, f in extra:
        if is_counted_fp(f, labelled_codes):
            stats.setdefault(f["code"], {"tp": 0, "fp": 0, "fn": 0})["fp"] += 1
    total = {k: sum(s[k] for s in stats.values()) for k in ("tp", "fp", "fn")}
    for s in list(stats.values()) + [total]:
        s["precision"] = s["tp"] / (s["tp"] + s["fp"]) if s["tp"] + s["fp"] else None
        s["recall"] = s["tp"] / (s["tp"] + s["fn"]) if s["tp"] + s["fn"] else None
    stats["overall"] = total
    return stats


def fmt(x):
    return "-" if x is None else f"{x:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--show", action="store_true",
                    help="print every case (file, line, code): only for moving a case to the dev set")
    ap.add_argument("--json", metavar="PATH", help="also write the aggregate numbers as JSON")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--set", default=DEFAULT_SET, metavar="NAME",
                       help=f"held-out set: a folder next to this script (default {DEFAULT_SET}; dev24 is the opened first set)")
    where.add_argument("--dir", metavar="PATH", help="held-out set folder anywhere (holding files/ and labels.json)")
    ap.add_argument("--dry-run", action="store_true",
                    help="load the labels and print the counts only; do not run mllint")
    args = ap.parse_args()
    use_corpus(Path(args.dir) if args.dir else HERE / args.set)

    labels = labels_by_file()
    per_rule_labels = defaultdict(int)
    for entries in labels.values():
        for lab in entries:
            per_rule_labels[lab["code"]] += 1
    n_clean = sum(1 for entries in labels.values() if not entries)
    print(f"held-out corpus {CORPUS.name}: {len(labels)} files ({n_clean} without a label), "
          f"{sum(per_rule_labels.values())} labels: "
          + ", ".join(f"{c} {per_rule_labels[c]}" for c in sorted(per_rule_labels)))
    on_disk = {p.name for p in FILES.glob("*.py")}
    if on_disk != set(labels):
        print(f"warning: files without labels entry: {sorted(on_disk - set(labels))}; "
              f"labels without file: {sorted(set(labels) - on_disk)}")
    if args.dry_run:
        return 0

    labelled_codes = {lab["code"] for entries in labels.values() for lab in entries}
    findings = run_mllint()
    pairs, missed, extra = match(labels, findings)
    stats = table(pairs, missed, extra, labelled_codes)
    ignored = sum(1 for _, f in extra if not is_counted_fp(f, labelled_codes))
    if ignored:
        print(f"({ignored} unmatched ML004 finding(s) ignored)")
    print()
    print("| rule | TP | FP | FN | precision | recall |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for rule, s in stats.items():
        name = "**overall**" if rule == "overall" else rule
        print(f"| {name} | {s['tp']} | {s['fp']} | {s['fn']} | {fmt(s['precision'])} | {fmt(s['recall'])} |")

    if args.json:
        Path(args.json).write_text(json.dumps({"labels": dict(per_rule_labels), "files": len(labels),
                                               "stats": stats}, indent=2) + "\n", encoding="utf-8")
    if args.show:
        print("\n-- per case (HELD-OUT DETAIL: do not show to people tuning the rules) --")
        for name, lab, f in pairs:
            print(f"TP {lab['code']} {name}:{lab['line']} -> {f['code']} at {f['line']}: {lab.get('why', '')}")
        for name, lab in missed:
            print(f"FN {lab['code']} {name}:{lab['line']}: {lab.get('why', '')}")
        for name, f in extra:
            tag = "FP" if is_counted_fp(f, labelled_codes) else "ignored"
            print(f"{tag} {f['code']} {name}:{f['line']}: {f.get('message', '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
