#!/usr/bin/env python3
"""For a JUDGE of the sealed precision set, not for whoever tunes the rules: list the findings the
installed mllint reports on the sealed projects that have no verdict yet, outside the repository.

    python tests/realworld/sealed/review.py            # lint, write the review files, print counts only
    python tests/realworld/sealed/review.py --apply    # copy the judged files back into sealed/snapshot/

Run it with the interpreter whose mllint is to be judged (as bench.py). Nothing that names a project,
a file, a line or a piece of code is printed: everything goes to OUT (``--out``, or
``$MLLINT_SEALED_REVIEW``, default /work/notes/sealed-review), which must lie outside the repository:

- ``pending/<owner>+<name>.tsv``: the project's snapshot as this mllint reports it (the rows still
  reported keep their verdicts, new findings have verdict ``?``), in the format of sealed/snapshot/;
- ``new.txt``: every new finding with its message and the lines around it, to read before judging
  (open the file and follow the names it uses into the project, as for the first review);
- ``gone.tsv``: judged rows this mllint no longer reports (a lost true finding is a recall loss);
- ``missing.txt``: sealed projects with no mirror (``fetch github:<owner>/<name>``).

Judging: replace each ``?`` in pending/ by true / false / arguable and a one-line reason (RULES.md is
the specification), then ``--apply``, which refuses while any ``?`` is left, and commit sealed/.
``bench.py precision --part sealed`` then counts them (aggregates only).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import bench  # noqa: E402  (tests/realworld/bench.py)

CONTEXT = 8


def out_dir(arg: str | None) -> Path:
    out = Path(arg or os.environ.get("MLLINT_SEALED_REVIEW", "/work/notes/sealed-review")).resolve()
    repo = HERE.parents[2]
    if out == repo or repo in out.parents:
        sys.exit("review: OUT must lie outside the repository (the rows are sealed)")
    return out


def review(out: Path, select) -> int:
    projects = bench.load_projects(None, bench.SEALED_SNAPSHOT_DIR)
    pending = out / "pending"
    shutil.rmtree(pending, ignore_errors=True)
    pending.mkdir(parents=True)
    work = Path(tempfile.mkdtemp(prefix="mllint-sealed-review-"))
    missing, n_new, n_gone = [], 0, 0
    try:
        with (out / "new.txt").open("w", encoding="utf-8") as new_fh, \
                (out / "gone.tsv").open("w", encoding="utf-8") as gone_fh:
            gone_fh.write("repo\tpath\tline\trule\tverdict\treason\tsource\n")
            for project in projects:
                root = work / project.repo.replace("/", "+")
                if not bench.extract_project(project, root):
                    missing.append(project.repo)
                    continue
                rules = select or bench.default_rules()
                if project.rules is not None:
                    rules = [r for r in project.rules if bench.selected(r, rules)]
                findings = bench.run_mllint(root, rules)
                chosen = dataclasses.replace(project, rows=[r for r in project.rows if bench.selected(r["rule"], rules)])
                others = [r for r in project.rows if not bench.selected(r["rule"], rules)]
                matched, new, gone = bench.join_snapshot(chosen, findings, root, {})
                bench.write_snapshot(dataclasses.replace(project, file=pending / project.file.name), matched, new, others)
                for cur in new:
                    n_new += 1
                    cell, line = bench.parse_position(cur["line"])
                    lines = bench.source_lines(root / cur["path"], cell)
                    new_fh.write(f"=== {project.repo} {cur['path']}:{cur['line']} {cur['rule']} {cur['message']}\n")
                    for n in range(max(1, line - CONTEXT), min(len(lines), line + 2) + 1):
                        new_fh.write(f"{'>>' if n == line else '  '}{n:5} {lines[n - 1]}\n")
                for r in gone:
                    n_gone += 1
                    gone_fh.write("\t".join([project.repo] + [r.get(k, "") for k in
                                                              ("path", "line", "rule", "verdict", "reason", "source")]) + "\n")
        (out / "missing.txt").write_text("".join(r + "\n" for r in missing), encoding="utf-8")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"sealed review: {len(projects) - len(missing)} projects linted, {len(missing)} without a mirror; "
          f"{n_new} new findings to judge, {n_gone} judged rows no longer reported; files in {out}")
    return 0


def apply(out: Path) -> int:
    files = sorted((out / "pending").glob("*.tsv"))
    if not files:
        sys.exit("review: nothing in pending/ (run review.py first)")
    waiting = sum(1 for f in files for r in bench.read_tsv(f)[1] if r["verdict"] not in ("true", "false", "arguable"))
    if waiting:
        sys.exit(f"review: {waiting} rows in pending/ still have no verdict (true / false / arguable)")
    for f in files:
        shutil.copyfile(f, bench.SEALED_SNAPSHOT_DIR / f.name)
    print(f"review: {len(files)} sealed snapshot files updated; commit tests/realworld/sealed/snapshot/")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="where the review files go (outside the repository)")
    parser.add_argument("--select", type=lambda s: s.split(","), help="rules (default: the rules on by default)")
    parser.add_argument("--apply", action="store_true", help="copy the judged pending/ files into sealed/snapshot/")
    args = parser.parse_args()
    out = out_dir(args.out)
    return apply(out) if args.apply else review(out, args.select)


if __name__ == "__main__":
    sys.exit(main())
