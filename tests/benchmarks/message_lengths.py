"""How long mllint's finding messages are: count, median, 90th percentile and maximum.

A script, not a test (pytest does not collect it). Messages are gathered from

- every INVALID example of every rule (rules/ml00*.py),
- the files under fixtures/,
- any folder given with ``--path`` (linted as the CLI lints it), and
- any bare git mirror given with ``--mirror DIR`` (its ``*.py`` files at HEAD are
  extracted with ``git show`` into a temporary folder and linted there).

    python tests/benchmarks/message_lengths.py
    python tests/benchmarks/message_lengths.py --mirror /work/.mirror/MorvanZhou+PyTorch-Tutorial/repo
    python tests/benchmarks/message_lengths.py --longest 10 --json

Lengths count the message only (not ``path:line:col: CODE``). The targets of issue 10
are a median of at most 80 characters and a maximum of at most 110.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mllint.config import load_settings  # noqa: E402
from mllint.engine import lint_file, lint_source  # noqa: E402
from mllint.files import discover  # noqa: E402
from mllint.registry import all_rules, rules_for  # noqa: E402

Sample = Tuple[str, str, str]  # (source label, code, message)


def from_examples() -> List[Sample]:
    out = []
    rules = all_rules()
    for code, rule in rules.items():
        for index, example in enumerate(rule.invalid):
            for finding in lint_source(example.code, f"{code}-invalid-{index}.py", [rule]):
                out.append((f"{code} INVALID[{index}]", finding.code, finding.message))
    return out


def from_folder(folder: Path, label: str) -> List[Sample]:
    settings = load_settings([str(folder)], {"select": ["ALL"]})
    rules = rules_for(settings.select)
    out = []
    for path in discover([str(folder)], settings, on_warning=lambda message: None):
        for finding in lint_file(path, rules).findings:
            out.append((f"{label}:{os.path.relpath(path, folder)}:{finding.line}", finding.code, finding.message))
    return out


def from_mirror(git_dir: Path, scratch: Path) -> List[Sample]:
    names = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", "HEAD"],
                           capture_output=True, text=True, check=True).stdout.splitlines()
    target = scratch / git_dir.parent.name
    for name in names:
        if not name.endswith(".py"):
            continue
        data = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"HEAD:{name}"],
                              capture_output=True, check=False).stdout
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return from_folder(target, git_dir.parent.name) if target.exists() else []


def describe(lengths: List[int]) -> Dict[str, float]:
    if not lengths:
        return {"count": 0}
    ordered = sorted(lengths)
    return {
        "count": len(ordered),
        "median": statistics.median(ordered),
        "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
        "max": ordered[-1],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", action="append", default=[], help="also lint this folder")
    parser.add_argument("--mirror", action="append", default=[], help="also lint the *.py files of this bare git mirror")
    parser.add_argument("--no-fixtures", action="store_true")
    parser.add_argument("--longest", type=int, default=5, help="print the N longest messages")
    parser.add_argument("--json", action="store_true", help="print the statistics as JSON")
    args = parser.parse_args(argv)

    groups: Dict[str, List[Sample]] = {"examples": from_examples()}
    if not args.no_fixtures:
        groups["fixtures"] = from_folder(ROOT / "fixtures", "fixtures")
    for folder in args.path:
        groups[folder] = from_folder(Path(folder), Path(folder).name)
    with tempfile.TemporaryDirectory() as scratch:
        for mirror in args.mirror:
            groups[Path(mirror).parent.name] = from_mirror(Path(mirror), Path(scratch))

    everything = [sample for samples in groups.values() for sample in samples]
    table = {name: describe([len(m) for _, _, m in samples]) for name, samples in groups.items()}
    table["all"] = describe([len(m) for _, _, m in everything])
    by_code: Dict[str, List[int]] = {}
    for _, code, message in everything:
        by_code.setdefault(code, []).append(len(message))
    for code, lengths in sorted(by_code.items()):
        table[code] = describe(lengths)
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    print(f"{'source':<40} {'count':>6} {'median':>7} {'p90':>5} {'max':>5}")
    for name, row in table.items():
        if row["count"]:
            print(f"{name:<40} {row['count']:>6} {row['median']:>7} {row['p90']:>5} {row['max']:>5}")
        else:
            print(f"{name:<40} {0:>6}")
    if args.longest:
        print(f"\nlongest {args.longest}:")
        for where, code, message in sorted(everything, key=lambda s: -len(s[2]))[: args.longest]:
            print(f"  {len(message):>4}  {code}  {where}\n        {message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
