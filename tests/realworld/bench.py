#!/usr/bin/env python3
"""The real-code benchmark: mllint on public projects and on their bug-fix history.

Run by hand, not by CI (it needs the repositories' git mirrors):

    python tests/realworld/bench.py fixes       # score the fix commits in fix_commits/*.tsv
    python tests/realworld/bench.py precision   # compare findings with the reviewed snapshot/
    python tests/realworld/bench.py precision --update   # rewrite snapshot/ (new findings get verdict '?')
    python tests/realworld/bench.py fixes --show missed   # list the rows that were not detected
    python tests/realworld/bench.py fixes --part sealed --out sealed.json   # held-out rows: aggregates only

--part dev (default) reads fix_commits/*.tsv, --part sealed reads sealed/fix_commits/*.tsv: the sealed rows
are never printed (no --show, no per-row notes, no repository names in messages). --tree lints each row's
file inside its repository's whole tree at that commit, from the tree's root (the default for the sealed
part); --alone extracts the file with the top-level metadata files only (the default for the dev part).

Nothing third-party is stored here: each row names a repository, commits and a path, and the files are
read from bare git mirrors at run time (``$MLLINT_MIRRORS/<owner>+<name>/repo``, default /work/.mirror;
a mirror that is missing is reported with the repository to fetch, and its rows are counted as not run).

fixes: for each row, the file at the parent commit (buggy) and at the fix commit (fixed) is linted with
the row's rule. A row for a notebook (``.ipynb``) gives its position as ``CELL:LINE``: the cell (1-based
among all the notebook's cells, markdown included, as mllint reports it) and the line in that cell; a
finding is at the site when it is in that cell and within WINDOW lines of that line. detected = a finding of the rule within WINDOW lines of the row's line on the buggy file,
and fewer findings of the rule on the fixed file than on the buggy one (the site's finding went away);
fired-both = the site is reported but the fixed file keeps as many findings; missed = no finding at the
site.

precision: each snapshot/<owner>+<name>.tsv starts with ``# repo=... commit=... kind=... include=...``
and lists every finding with a hand verdict (true / false / arguable) and a reason. The run extracts the
project's files under ``include`` at ``commit`` (``.py``, or the suffixes in ``ext=``: a notebook
snapshot has ``ext=.ipynb``), lints them, and joins the findings with the rows by
(path, line, rule), falling back to (path, rule, source text) when a report moved. Precision per rule is
true / (true + false); findings with no row are 'unreviewed' and listed. --check-fixes also applies
``--fix`` to a copy of every project and checks that each rewritten file still compiles (a notebook: that
it is still JSON, that nothing but code cells' sources changed, and that its program still compiles).
In a notebook snapshot ``line`` is ``CELL:LINE`` and ``source`` is that line of the cell.
A *sweep* snapshot (``kind=sweep``) has ``rules=ML006,...``: only those rules were reviewed on that
project, so only they are run there (the rules that fire rarely, judged on many more projects).
``precision --part sealed`` reads sealed/snapshot/ instead (projects nobody tuning the rules has read,
judged on the default rules) and prints only the aggregate table and counts, never a row; a judge lists
the new findings with sealed/review.py, which writes them outside the repository.

screen: the soundness and the yield of the ast screen (mllint/screen.py). Every file of the snapshot
projects (``--project`` to choose; ``--dir DIR`` adds any folder, ``--each DIR`` each folder in DIR,
e.g. trees extracted from other mirrors; ``--no-projects`` only those) is linted in this process's mllint with the screen on and off
(``--jobs`` worker processes, default 2), with the default rules (``--select ALL`` or codes to
change). It reports per project the files and lines, how many pass the trigger words (parsed with
LibCST before the screen) and how many pass the screen (parsed now), the CPU seconds of both runs,
and EVERY file whose findings differ (a soundness bug of a rule's SCREEN predicate; exit 1).

    python tests/realworld/bench.py screen --project pytorch/examples
    python tests/realworld/bench.py screen --no-projects --each /tmp/sweep --jobs 2
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
FIX_DIR = HERE / "fix_commits"
SEALED_FIX_DIR = HERE / "sealed" / "fix_commits"
SEALED_REFUSAL = ("bench: sealed rows are not shown (to look at a row, move it to fix_commits/ "
                  "and mine a replacement for sealed/)")
# --tree: the files of a repository that are materialised (everything a project model may read:
# sources, notebooks, settings and requirement files), each under TREE_MAX_BYTES
TREE_SUFFIXES = (".py", ".pyi", ".ipynb", ".toml", ".cfg", ".ini", ".txt", ".yaml", ".yml", ".json")
TREE_NAMES = ("setup.py", "setup.cfg", "pyproject.toml", ".gitignore", "MANIFEST.in")
TREE_MAX_BYTES = 2 * 1024 * 1024
SNAPSHOT_DIR = HERE / "snapshot"
CORE = ["ML001", "ML002", "ML003", "ML004", "ML005"]
WINDOW = 15
VERDICTS = ("true", "false", "arguable", "?")
SNAPSHOT_HEADER = ["path", "line", "rule", "verdict", "reason", "source"]


def is_notebook(path: str) -> bool:
    return path.lower().endswith(".ipynb")


def parse_position(text: str) -> Tuple[Optional[int], int]:
    """``LINE`` (a .py file) or ``CELL:LINE`` (a notebook) -> (cell or None, line)."""
    if ":" in text:
        cell, line = text.split(":", 1)
        return int(cell), int(line)
    return None, int(text)


def position(finding: dict) -> str:
    """A finding's position as the TSV files write it: ``LINE``, or ``CELL:LINE`` in a notebook."""
    cell = finding.get("cell")
    return f"{cell}:{finding['line']}" if cell is not None else str(finding["line"])


def position_key(text: str) -> Tuple[int, int]:
    cell, line = parse_position(text)
    return (cell or 0, line)


def source_lines(path: Path, cell: Optional[int]) -> List[str]:
    """The lines of a .py file, or of one cell of a notebook (1-based among all cells)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if cell is None:
        return text.splitlines()
    try:
        cells = json.loads(text).get("cells") or []
        source = cells[cell - 1].get("source", "")
    except (ValueError, AttributeError, IndexError, TypeError):
        return []
    return ("".join(source) if isinstance(source, list) else str(source)).splitlines()


def mirrors_root() -> Path:
    return Path(os.environ.get("MLLINT_MIRRORS", "/work/.mirror"))


def git_dir(repo: str) -> Optional[Path]:
    base = mirrors_root() / repo.replace("/", "+") / "repo"
    for candidate in (base / ".git", base):
        if (candidate / "HEAD").is_file():
            return candidate
    return None


def git(gdir: Path, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(gdir), *args], check=True, capture_output=True).stdout


def blob(gdir: Path, commit: str, path: str) -> Optional[bytes]:
    proc = subprocess.run(["git", "--git-dir", str(gdir), "show", f"{commit}:{path}"], capture_output=True)
    return proc.stdout if proc.returncode == 0 else None


def write(root: Path, rel: str, data: bytes) -> Path:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


def run_mllint(root: Path, select: Iterable[str], *extra: str) -> List[dict]:
    """Lint a tree with the installed mllint (the interpreter running this script) and return its JSON."""
    cmd = [sys.executable, "-m", "mllint", "--no-cache", "--exit-zero", "--format", "json",
           "--select", ",".join(sorted(set(select))), *extra, str(root)]
    # Run outside any checkout: ``python -m`` puts the working directory first on sys.path,
    # which would measure the mllint of the current directory instead of the installed one.
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root.parent)
    if proc.returncode != 0:
        sys.exit(f"bench: mllint failed ({proc.returncode}): {proc.stderr.strip()[:500]}")
    return json.loads(proc.stdout or "[]")


def by_file(findings: List[dict], root: Path) -> Dict[str, List[dict]]:
    out: Dict[str, List[dict]] = collections.defaultdict(list)
    for f in findings:
        out[Path(f["path"]).resolve().relative_to(root.resolve()).as_posix()].append(f)
    return out


def read_tsv(path: Path) -> Tuple[List[str], List[Dict[str, str]]]:
    comments, rows = [], []
    with path.open(newline="", encoding="utf-8") as fh:
        lines = [ln for ln in fh if ln.strip()]
    comments = [ln.rstrip("\n") for ln in lines if ln.startswith("#")]
    body = [ln for ln in lines if not ln.startswith("#")]
    for row in csv.DictReader(body, delimiter="\t", quoting=csv.QUOTE_NONE):
        rows.append({k: (v or "").strip() for k, v in row.items()})
    return comments, rows


# ---------------------------------------------------------------------------------------------- fixes

@dataclass
class FixRow:
    repo: str
    fix: str
    parent: str
    path: str
    line: int
    rule: str
    reason: str
    source: str  # the tsv file the row came from
    cell: Optional[int] = None  # notebooks: the cell (1-based among all cells) holding ``line``
    outcome: str = "not-run"
    note: str = ""
    fix_check: str = ""  # fixes --check-fixes: what --fix did to the buggy notebook

    @property
    def where(self) -> str:
        return f"{self.path}:cell {self.cell}:{self.line}" if self.cell is not None else f"{self.path}:{self.line}"


def load_fix_rows(directory: Path = FIX_DIR) -> List[FixRow]:
    rows = []
    for tsv in sorted(directory.glob("*.tsv")):
        for r in read_tsv(tsv)[1]:
            cell, line = parse_position(r["line"])
            if (cell is not None) != is_notebook(r["path"]):
                where = "a sealed row" if directory == SEALED_FIX_DIR else r["path"]
                sys.exit(f"bench: {tsv.name}: {where}: a notebook's line is CELL:LINE, a .py file's is LINE")
            rows.append(FixRow(r["repo"], r["fix_commit"], r["parent_commit"], r["path"], line,
                               r["rule"], r["reason"], tsv.name, cell))
    return rows


def score_fixes(rows: List[FixRow], work: Path) -> None:
    missing_repos = set()
    placed: List[Tuple[FixRow, str, str]] = []
    for i, row in enumerate(rows):
        gdir = git_dir(row.repo)
        if gdir is None:
            missing_repos.add(row.repo)
            row.note = "no mirror"
            continue
        buggy, fixed = blob(gdir, row.parent, row.path), blob(gdir, row.fix, row.path)
        if buggy is None or fixed is None:
            row.note = "file missing at " + ("parent" if buggy is None else "fix")
            continue
        # Keep the file's own path: file and directory names are evidence some rules read.
        b_rel, f_rel = f"{i:03d}/buggy/{row.path}", f"{i:03d}/fixed/{row.path}"
        write(work, b_rel, buggy)
        write(work, f_rel, fixed)
        write_metadata(gdir, row.parent, work / f"{i:03d}/buggy")
        write_metadata(gdir, row.fix, work / f"{i:03d}/fixed")
        placed.append((row, b_rel, f_rel))
    if missing_repos:
        print("bench: no mirror for " + ", ".join(sorted(missing_repos))
              + f" (fetch them into {mirrors_root()}); their rows are not run", file=sys.stderr)
    findings = by_file(run_mllint(work, {r.rule for r, _, _ in placed} or CORE), work)
    for row, b_rel, f_rel in placed:
        judge(row, findings.get(b_rel, []), findings.get(f_rel, []))


def judge(row: FixRow, buggy: List[dict], fixed: List[dict]) -> None:
    """The row's outcome from the findings on its buggy and its fixed file (any rules)."""
    on_buggy = [f for f in buggy if f["code"] == row.rule]
    on_fixed = [f for f in fixed if f["code"] == row.rule]
    at_site = [f for f in on_buggy
               if f.get("cell") == row.cell and abs(f["line"] - row.line) <= WINDOW]
    if not at_site:
        row.outcome = "missed"
        row.note = f"{len(on_buggy)} elsewhere" if on_buggy else ""
    elif len(on_fixed) >= len(on_buggy):
        row.outcome = "fired-both"
        row.note = "fixed file still: " + ", ".join(position(f) for f in on_fixed)
    else:
        row.outcome = "detected"


# --tree: each row's file is linted inside its whole project, as pre-commit would lint it there.

def materialise(gdir: Path, commit: str, dest: Path, keep: Iterable[str] = ()) -> bool:
    """Write the repository's tree at `commit` into `dest`: every file with a suffix or name of
    TREE_SUFFIXES/TREE_NAMES under TREE_MAX_BYTES (no data, no binaries, no symbolic links, no
    submodules; the files in `keep`, the rows' own, whatever their size), and an empty ``.git``
    folder, so that `dest` is the project root mllint finds (nearest pyproject.toml / setup.cfg /
    setup.py / .git) and the .gitignore files apply as in a checkout. False when the commit is not
    in the mirror."""
    keep = set(keep)
    proc = subprocess.run(["git", "--git-dir", str(gdir), "ls-tree", "-r", "-l", "-z", commit],
                          capture_output=True)
    if proc.returncode != 0:
        return False
    wanted = []
    for entry in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if "\t" not in entry:
            continue
        meta, name = entry.split("\t", 1)
        mode, kind, sha, size = meta.split()
        if kind != "blob" or mode == "120000":
            continue
        if name in keep:
            wanted.append((sha, name))
            continue
        if not size.isdigit() or int(size) > TREE_MAX_BYTES:
            continue
        base = name.rsplit("/", 1)[-1]
        if base in TREE_NAMES or base.lower().endswith(TREE_SUFFIXES):
            wanted.append((sha, name))
    dest.mkdir(parents=True, exist_ok=True)
    (dest / ".git").mkdir(exist_ok=True)
    if wanted:
        cat = subprocess.run(["git", "--git-dir", str(gdir), "cat-file", "--batch"],
                             input="".join(sha + "\n" for sha, _ in wanted).encode(), capture_output=True)
        data, pos = cat.stdout, 0
        for sha, name in wanted:
            header_end = data.index(b"\n", pos)
            header = data[pos:header_end].split()
            pos = header_end + 1
            if len(header) < 3 or header[1] == b"missing":
                continue  # files of 4 MiB and more are absent from the mirrors
            size = int(header[2])
            try:
                write(dest, name, data[pos:pos + size])
            except OSError:
                pass  # a name this file system refuses
            pos += size + 1
    return True


def lint_in_tree(root: Path, paths: List[str], select: Iterable[str]) -> Tuple[Optional[Dict[str, List[dict]]], str]:
    """mllint run from the tree's root on the given files (relative paths, as pre-commit passes
    them): findings by relative path, or None and mllint's error when it failed."""
    # -I: the tree's own directory must not shadow the installed mllint on sys.path
    cmd = [sys.executable, "-I", "-m", "mllint", "--no-cache", "--exit-zero", "--format", "json",
           "--select", ",".join(sorted(set(select))), "--", *paths]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root)
    if proc.returncode != 0:
        return None, proc.stderr.strip()[-500:]
    out: Dict[str, List[dict]] = collections.defaultdict(list)
    for f in json.loads(proc.stdout or "[]"):
        path = Path(f["path"])
        path = path if path.is_absolute() else root / path
        out[os.path.relpath(os.path.abspath(path), os.path.abspath(root)).replace(os.sep, "/")].append(f)
    return out, ""


def score_fixes_tree(rows: List[FixRow], work: Path, sealed: bool) -> None:
    """Each row's file at the parent and at the fix commit, linted inside the repository's whole
    tree at that commit (one tree and one mllint run per repository and commit)."""
    missing_repos, failures = set(), []
    by_tree: Dict[Tuple[str, str], List[FixRow]] = collections.defaultdict(list)
    for row in rows:
        if git_dir(row.repo) is None:
            missing_repos.add(row.repo)
            row.note = "no mirror"
            continue
        by_tree[(row.repo, row.parent)].append(row)
        by_tree[(row.repo, row.fix)].append(row)
    found: Dict[Tuple[str, str], Dict[str, List[dict]]] = {}
    linted: Dict[Tuple[str, str], set] = {}
    for n, ((repo, commit), tree_rows) in enumerate(sorted(by_tree.items())):
        root = work / "trees" / f"{n:04d}"
        wanted = {r.path for r in tree_rows}
        if not materialise(git_dir(repo), commit, root, wanted):
            continue
        paths = sorted(p for p in wanted if (root / p).is_file())
        if paths:
            result, error = lint_in_tree(root, paths, {r.rule for r in tree_rows})
            if result is None:
                failures.append(f"{repo} {commit[:10]}: {error}")
            else:
                found[(repo, commit)] = result
                linted[(repo, commit)] = set(paths)
        shutil.rmtree(root, ignore_errors=True)
    for row in rows:
        if row.note == "no mirror":
            continue
        buggy, fixed = found.get((row.repo, row.parent)), found.get((row.repo, row.fix))
        if (buggy is None or fixed is None or row.path not in linted[(row.repo, row.parent)]
                or row.path not in linted[(row.repo, row.fix)]):
            row.note = "not linted (commit or file missing, or mllint failed)"
            continue
        judge(row, buggy.get(row.path, []), fixed.get(row.path, []))
    if sealed:
        if missing_repos:
            print(f"bench: {len(missing_repos)} repositories of the sealed part have no mirror in "
                  f"{mirrors_root()}; their rows count as not run "
                  "(`bench.py mirrors --part sealed` lists them for a fetch script)", file=sys.stderr)
        if failures:
            print(f"bench: mllint failed (non-zero exit) on {len(failures)} sealed trees; "
                  "their rows count as not run", file=sys.stderr)
        return
    if missing_repos:
        print("bench: no mirror for " + ", ".join(sorted(missing_repos))
              + f" (fetch them into {mirrors_root()}); their rows are not run", file=sys.stderr)
    for failure in failures:
        print(f"bench: mllint failed in the tree of {failure}", file=sys.stderr)


def check_notebook_fixes(rows: List[FixRow], work: Path) -> None:
    """--fix on a copy of each detected notebook row's buggy notebook (that row's rule only): the
    rewrite may change nothing but code cells' sources, and the site's finding must be gone after it."""
    for i, row in enumerate(rows):
        if row.cell is None or row.outcome != "detected":
            continue
        src = work / f"{i:03d}/buggy/{row.path}"
        copy = work / "fixcheck" / f"{i:03d}" / Path(row.path).name
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(src.read_bytes())
        subprocess.run([sys.executable, "-m", "mllint", "--no-cache", "--fix", "--exit-zero", "--select", row.rule,
                        str(copy)], capture_output=True, cwd=copy.parent)
        after = copy.read_bytes()
        if after == src.read_bytes():
            row.fix_check = "no fix (unsafe or none)"
            continue
        problem = notebook_fix_problem(src.read_bytes(), after)
        left = [f for f in run_mllint(copy.parent, [row.rule])
                if f.get("cell") == row.cell and abs(f["line"] - row.line) <= WINDOW]
        row.fix_check = problem or ("fixed: only sources changed, site clean" if not left
                                    else "fixed, but the site is still reported")


OUTCOMES = ("detected", "fired-both", "missed", "not-run")


def aggregates(rows: List[FixRow], part: str, mode: str) -> dict:
    """What `--out` writes: counts only, nothing that names a repository, a file or a line."""
    table: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for row in rows:
        table[row.rule][row.outcome] += 1
        table["all"][row.outcome] += 1

    def entry(c: collections.Counter) -> dict:
        run = c["detected"] + c["fired-both"] + c["missed"]
        return dict({"rows": sum(c.values())}, **{o: c[o] for o in OUTCOMES},
                    rate=round(c["detected"] / run, 4) if run else None)

    mllint = subprocess.run([sys.executable, "-I", "-c", "import mllint, os; print(os.path.dirname(mllint.__file__))"],
                            capture_output=True, text=True).stdout.strip()
    head = subprocess.run(["git", "-C", mllint, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip() if mllint else ""
    return {"part": part, "mode": mode, "window": WINDOW, "rows": len(rows),
            "repositories": len({r.repo for r in rows}), "notebook_rows": sum(1 for r in rows if r.cell is not None),
            "mllint": {"package": mllint, "commit": head or None},
            "rules": {rule: entry(table[rule]) for rule in sorted(k for k in table if k != "all")},
            "all": entry(table["all"])}


def report_fixes(rows: List[FixRow], show: Optional[str], part: str = "dev", mode: str = "alone") -> None:
    table: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for row in rows:
        table[row.rule][row.outcome] += 1
        table["all"][row.outcome] += 1
    repos = len({r.repo for r in rows})
    notebooks = sum(1 for r in rows if r.cell is not None)
    print(f"fix commits ({part} part, {'each file in its project tree' if mode == 'tree' else 'each file alone'}): "
          f"{len(rows)} rows ({notebooks} in notebooks) from {repos} repositories "
          f"(window +-{WINDOW} lines, in the same cell for a notebook)\n")
    print(f"{'rule':6} {'rows':>5} {'detected':>9} {'fired-both':>11} {'missed':>7} {'not-run':>8} {'rate':>7}")
    for rule in sorted(k for k in table if k != "all") + ["all"]:
        c = table[rule]
        run = c["detected"] + c["fired-both"] + c["missed"]
        rate = f"{c['detected'] / run:.0%}" if run else "-"
        print(f"{rule:6} {sum(c.values()):>5} {c['detected']:>9} {c['fired-both']:>11} {c['missed']:>7} "
              f"{c['not-run']:>8} {rate:>7}")
    checked = [r for r in rows if r.fix_check]
    if checked:
        print(f"\n--fix on the buggy notebooks of the {len(checked)} detected notebook rows:")
        for verdict, n in sorted(collections.Counter(r.fix_check for r in checked).items()):
            print(f"  {n:3} {verdict}")
    if show:
        wanted = {"all": None}.get(show, show)
        print()
        for row in rows:
            if wanted is None or row.outcome == wanted or (wanted == "undetected" and row.outcome != "detected"):
                print(f"{row.outcome:10} {row.rule} {row.repo} {row.fix[:10]} {row.where}"
                      f"{'  (' + row.note + ')' if row.note else ''}"
                      f"{'  [--fix: ' + row.fix_check + ']' if row.fix_check else ''}\n           {row.reason}")


# ------------------------------------------------------------------------------------------ precision

@dataclass
class Project:
    file: Path
    repo: str
    commit: str
    kind: str
    include: List[str]
    rows: List[Dict[str, str]] = field(default_factory=list)
    ext: List[str] = field(default_factory=lambda: [".py"])  # the file suffixes linted
    rules: Optional[List[str]] = None  # ``rules=``: only these rules were reviewed here (a sweep project)


# The sealed part: projects nobody tuning the rules has read, every finding judged by hand. `precision
# --part sealed` prints aggregates only (no repository, path, line or code); a judge lists the new
# findings with sealed/review.py, which writes them outside the repository.
SEALED_SNAPSHOT_DIR = HERE / "sealed" / "snapshot"


def default_rules() -> List[str]:
    """The rules on by default in the installed mllint (the sealed part is judged on these)."""
    from mllint.registry import catalogue

    return sorted(code for code, on in catalogue().items() if on)


def load_projects(only: Optional[List[str]] = None, directory: Path = SNAPSHOT_DIR) -> List[Project]:
    projects = []
    for tsv in sorted(directory.glob("*.tsv")):
        comments, rows = read_tsv(tsv)
        meta = {}
        for comment in comments:
            for part in comment.lstrip("# ").split():
                if "=" in part:
                    key, value = part.split("=", 1)
                    meta[key] = value
        if not {"repo", "commit"} <= meta.keys():
            sys.exit(f"bench: {tsv.name}: first line must be '# repo=... commit=... kind=... include=...'")
        if only and meta["repo"] not in only:
            continue
        include = [p.strip().strip("/") for p in meta.get("include", ".").split(",") if p.strip()]
        ext = [e.strip() for e in meta.get("ext", ".py").split(",") if e.strip()] or [".py"]
        rules = [r.strip() for r in meta["rules"].split(",") if r.strip()] if "rules" in meta else None
        projects.append(Project(tsv, meta["repo"], meta["commit"], meta.get("kind", ""), include or ["."], rows,
                                ext, rules))
    return projects


def _is_metadata(name: str) -> bool:
    """pyproject.toml, setup.py, setup.cfg and requirements files at the top of the repository."""
    parts = name.split("/")
    if len(parts) == 1:
        return name in ("pyproject.toml", "setup.py", "setup.cfg") or (
            name.startswith("requirements") and name.endswith(".txt"))
    return parts[0] == "requirements" and name.endswith(".txt")


def write_metadata(gdir: Path, commit: str, dest: Path, names: Optional[List[str]] = None) -> None:
    """The project's declared torch requirement (mllint/declared.py reads it in the settings root):
    its top-level metadata files at `commit`, and an empty pyproject.toml when it has none, so that
    `dest` is the settings root of the files below it as the repository's top is for its users."""
    if names is None:  # the top level, and requirements/ when there is one
        names = git(gdir, "ls-tree", "-z", "--name-only", commit).decode().split("\0")
        if "requirements" in names:
            names += git(gdir, "ls-tree", "-r", "-z", "--name-only", commit, "requirements/").decode().split("\0")
    for name in names:
        if _is_metadata(name):
            data = blob(gdir, commit, name)
            if data is not None:
                write(dest, name, data)
    if not (dest / "pyproject.toml").exists():
        write(dest, "pyproject.toml", b"")


def extract_project(project: Project, root: Path) -> bool:
    gdir = git_dir(project.repo)
    if gdir is None:
        return False
    entries = [e for e in git(gdir, "ls-tree", "-r", "-z", project.commit).decode().split("\0") if "\t" in e]
    # symbolic links (mode 120000) are left out: their blob is the target path, not code, and
    # the file they point to is linted where it lives
    names = [e.split("\t", 1)[1] for e in entries if not e.startswith("120000 ")]
    write_metadata(gdir, project.commit, root, names)
    for name in names:
        if _is_metadata(name):
            continue
        if not name.lower().endswith(tuple(project.ext)):
            continue
        if "." not in project.include and not any(name == p or name.startswith(p + "/") for p in project.include):
            continue
        data = blob(gdir, project.commit, name)
        if data is not None:  # files of 4 MiB and more are absent from the mirrors
            write(root, name, data)
    return True


def _key_source(text: str) -> str:
    return " ".join(text.split())[:100]


def join_snapshot(project: Project, findings: List[dict], root: Path, sources: Dict[Tuple[str, Optional[int]], List[str]]):
    """Pair the current findings with the reviewed rows; returns (matched, new, gone)."""
    by_pos = {(r["path"], position_key(r["line"]), r["rule"]): r for r in project.rows}
    by_text: Dict[Tuple[str, str, str], List[Dict[str, str]]] = collections.defaultdict(list)
    for r in project.rows:
        by_text[(r["path"], r["rule"], _key_source(r.get("source", "")))].append(r)
    used, matched, new = set(), [], []
    for f in findings:
        rel = Path(f["path"]).resolve().relative_to(root.resolve()).as_posix()
        cell = f.get("cell")
        if (rel, cell) not in sources:
            sources[(rel, cell)] = source_lines(root / rel, cell)
        lines = sources[(rel, cell)]
        text = _key_source(lines[f["line"] - 1]) if 0 < f["line"] <= len(lines) else ""
        row = by_pos.get((rel, position_key(position(f)), f["code"]))
        if row is None or id(row) in used:
            row = next((r for r in by_text.get((rel, f["code"], text), []) if id(r) not in used), None)
        current = {"path": rel, "line": position(f), "rule": f["code"], "source": text,
                   "message": f["message"], "basis": f.get("basis")}
        if row is None:
            new.append(current)
        else:
            used.add(id(row))
            matched.append((current, row))
    gone = [r for r in project.rows if id(r) not in used]
    return matched, new, gone


def selected(rule: str, select: Iterable[str]) -> bool:
    """Is `rule` reported by a run with --select `select` (ML000 always is)?"""
    return rule == "ML000" or any(s == "ALL" or rule.startswith(s) for s in select)


def write_snapshot(project: Project, matched, new, others=()) -> None:
    rows = [dict(cur, verdict=row["verdict"], reason=row["reason"]) for cur, row in matched]
    rows += [dict(cur, verdict="?", reason="") for cur in new]
    rows += [dict(r) for r in others]  # rows of rules the run did not select, kept as they were
    rows.sort(key=lambda r: (r["path"], position_key(r["line"]), r["rule"]))
    ext = "" if project.ext == [".py"] else " ext=" + ",".join(project.ext)
    if project.rules is not None:
        ext += " rules=" + ",".join(project.rules)
    with project.file.open("w", encoding="utf-8", newline="") as fh:
        fh.write(f"# repo={project.repo} commit={project.commit} kind={project.kind} "
                 f"include={','.join(project.include)}{ext}\n")
        fh.write("\t".join(SNAPSHOT_HEADER) + "\n")
        for r in rows:
            fh.write("\t".join(str(r[k]).replace("\t", " ") for k in SNAPSHOT_HEADER) + "\n")


REWRITTEN: collections.Counter = collections.Counter()  # what --check-fixes saw --fix rewrite


def check_fixes(root: Path, select: Iterable[str]) -> List[str]:
    """Apply --fix to a copy of the tree; every rewritten file must still compile."""
    copy = Path(tempfile.mkdtemp(prefix="mllint-fixcheck-"))
    try:
        shutil.copytree(root, copy / "t")
        before = {p: p.read_bytes() for p in (copy / "t").rglob("*") if p.suffix.lower() in (".py", ".ipynb")}
        subprocess.run([sys.executable, "-m", "mllint", "--no-cache", "--fix", "--exit-zero", "--select",
                        ",".join(select), str(copy / "t")], capture_output=True, cwd=copy)
        broken = []
        for path, data in before.items():
            if path.read_bytes() != data:
                REWRITTEN["notebooks" if is_notebook(path.name) else "files"] += 1
                problem = (notebook_fix_problem(data, path.read_bytes()) if is_notebook(path.name)
                           else _compile_problem(path.read_bytes(), str(path)))
                if problem:
                    broken.append(f"{path.relative_to(copy / 't')}: {problem}")
        return broken
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def _compile_problem(source, name: str) -> Optional[str]:
    try:
        compile(source, name, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return str(exc)
    return None


def notebook_fix_problem(before: bytes, after: bytes) -> Optional[str]:
    """What is wrong with a notebook rewritten by --fix: not JSON, something besides code cells'
    sources changed, or its program (code cells, IPython syntax masked by mllint) does not compile."""
    try:
        old, new = json.loads(before), json.loads(after)
    except ValueError as exc:
        return f"not JSON after --fix: {exc}"

    def without_sources(nb: dict) -> dict:
        nb = json.loads(json.dumps(nb))
        for cell in nb.get("cells", []):
            if cell.get("cell_type") == "code":
                cell.pop("source", None)
        return nb

    if without_sources(old) != without_sources(new):
        return "--fix changed more than code cells' sources (outputs, metadata or other cells)"
    from mllint.notebook import NotebookError, load  # the installed mllint's own reading of a notebook

    try:
        old_nb, new_nb = load(before.decode("utf-8")), load(after.decode("utf-8"))
    except (NotebookError, UnicodeDecodeError) as exc:
        return f"mllint cannot read it after --fix: {exc}"
    # mllint comments out the cells that do not parse (one ML000 each): a fix must not add any.
    broken = sorted({c.number for c in new_nb.cells if getattr(c, "error", None)}
                    - {c.number for c in old_nb.cells if getattr(c, "error", None)})
    if broken:
        return "--fix left cell " + ", ".join(map(str, broken)) + " not parsing"
    problem = _compile_problem(new_nb.program, "<notebook program>")
    if problem and _same_problem(problem, _compile_problem(old_nb.program, "<notebook program>")):
        return None  # the program did not compile before either (a `from __future__` in a later cell)
    return problem


def _same_problem(a: str, b: Optional[str]) -> bool:
    return b is not None and re.sub(r"line \d+", "line N", a) == re.sub(r"line \d+", "line N", b)


def precision(args, work: Path) -> int:
    sealed = args.part == "sealed"
    if sealed and (args.update or args.keep or args.check_fixes):
        print("bench: the sealed part shows aggregates only (no --update, --keep or --check-fixes); "
              "a judge runs tests/realworld/sealed/review.py", file=sys.stderr)
        return 2
    args.select = args.select or (default_rules() if sealed else CORE)
    directory = SEALED_SNAPSHOT_DIR if sealed else SNAPSHOT_DIR
    projects = load_projects(args.project, directory)
    if not projects:
        sys.exit("bench: no snapshot files in " + str(directory))
    totals: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    # (rule, what the finding rests on: "name", "structure" or None) -> verdict counts
    bases: Dict[Tuple[str, Optional[str]], collections.Counter] = collections.defaultdict(collections.Counter)
    unreviewed, gone_all, missing, broken = [], [], [], []
    for project in projects:
        select = args.select
        if project.rules is not None:  # a sweep project: only the rules reviewed on it
            select = [r for r in project.rules if selected(r, args.select)]
            if not select:
                continue
        root = work / project.repo.replace("/", "+")
        if not extract_project(project, root):
            missing.append(project.repo)
            continue
        findings = run_mllint(root, select)
        # Rows of rules this run did not select are neither matched nor lost by --update.
        others = [r for r in project.rows if not selected(r["rule"], select)]
        chosen = dataclasses.replace(project, rows=[r for r in project.rows if selected(r["rule"], select)])
        matched, new, gone = join_snapshot(chosen, findings, root, {})
        for cur, row in matched:
            totals[cur["rule"]][row["verdict"]] += 1
            bases[(cur["rule"], cur.get("basis"))][row["verdict"]] += 1
        for cur in new:
            totals[cur["rule"]]["?"] += 1
            bases[(cur["rule"], cur.get("basis"))]["?"] += 1
            unreviewed.append((project.repo, cur))
        gone_all += [(project.repo, r) for r in gone]
        if args.update:
            write_snapshot(project, matched, new, others)
        if args.check_fixes:
            broken += [f"{project.repo}: {b}" for b in check_fixes(root, select)]
    if missing and sealed:
        print(f"bench: {len(missing)} sealed projects have no mirror in {mirrors_root()} (not run); "
              "sealed/review.py names them for a judge", file=sys.stderr)
    elif missing:
        print("bench: no mirror for " + ", ".join(missing) + f" (fetch them into {mirrors_root()})",
              file=sys.stderr)
    run = [p for p in projects if p.repo not in missing]
    print(f"precision {'SEALED part' if sealed else 'snapshot'}: {len(run)} projects\n")
    print(f"{'rule':6} {'findings':>8} {'true':>5} {'false':>6} {'arguable':>9} {'unreviewed':>11} {'precision':>10}")
    grand = collections.Counter()
    for rule in sorted(totals):
        c = totals[rule]
        grand.update(c)
        print(_precision_line(rule, c))
    print(_precision_line("all", grand))
    rests = sorted((rule, basis) for rule, basis in bases if basis is not None)
    if rests:
        print("\nwhat the findings rest on (the rules that tell: ML002, ML005):")
        for rule, basis in rests:
            print(_precision_line(f"{rule} {basis}", bases[(rule, basis)]))
    if sealed:
        print(f"\nunreviewed (new) findings: {len(unreviewed)}; judged rows no longer reported: {len(gone_all)}"
              f" ({sum(1 for _, r in gone_all if r['verdict'] == 'true')} of them true)")
        return 0
    if unreviewed:
        print(f"\nunreviewed findings ({len(unreviewed)}): mark them in snapshot/ after --update")
        for repo, cur in unreviewed:
            print(f"  {repo} {cur['path']}:{cur['line']} {cur['rule']} {cur['message'][:110]}\n"
                  f"      {cur['source'][:110]}")
    if gone_all:
        print(f"\nreviewed rows no longer reported ({len(gone_all)}):")
        for repo, r in gone_all:
            print(f"  [{r['verdict']}] {repo} {r['path']}:{r['line']} {r['rule']} {r['reason'][:100]}")
    if args.check_fixes:
        print(f"\n--fix rewrote {REWRITTEN['files']} .py files and {REWRITTEN['notebooks']} notebooks; "
              f"safe fixes that do not compile (or, in a notebook, touch more than code cells' sources): {len(broken)}")
        for b in broken:
            print("  " + b)
    return 0


def _precision_line(rule: str, c: collections.Counter) -> str:
    judged = c["true"] + c["false"]
    prec = f"{c['true'] / judged:.2f}" if judged else "-"
    return (f"{rule:6} {sum(c.values()):>8} {c['true']:>5} {c['false']:>6} {c['arguable']:>9} "
            f"{c['?']:>11} {prec:>10}")


# ------------------------------------------------------------------------------------------ screen

def _screen_rules(select: str):
    from mllint.registry import all_rules

    rules = [r for r in all_rules().values() if r.check_noqa is None]
    if select == "default":
        return [r for r in rules if r.default_enabled]
    if select.upper() == "ALL":
        return rules
    codes = {c.strip() for c in select.split(",")}
    return [r for r in rules if r.code in codes]


_SCREEN_RULES: list = []


def _screen_init(select: str) -> None:
    _SCREEN_RULES[:] = _screen_rules(select)


def _screen_one(path: str):
    """(path, lines, passes triggers, passes screen, cpu on, cpu off, findings on, findings off) of one file."""
    import time

    from mllint import engine, notebook, screen
    from mllint.semantics.options import ModelOptions

    rules = _SCREEN_RULES
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        decoded = engine.decode_file(path, data)
    except (OSError, engine.UnreadableFile):
        return path, 0, False, False, 0.0, 0.0, [], []
    text = decoded.text
    program = text
    if notebook.is_notebook(path):
        try:
            program = notebook.load(text).program
        except notebook.NotebookError:
            program = ""
    lines = program.count("\n") + (0 if program.endswith("\n") or not program else 1)
    triggered = [r for r in rules if r.triggered_by(program)]
    passing = bool(triggered) and bool(screen.passing(program, triggered, path))
    results = []
    for on in (True, False):
        start = time.process_time()
        try:
            found = engine.lint_text(text, path, rules, ModelOptions(screen=on)).findings
            out = sorted((f.line, f.column, f.code, f.message) for f in found)
        except Exception as exc:  # a crash is a difference worth seeing, not the end of the run
            out = [("crash", type(exc).__name__, str(exc)[:200])]
        results.append((time.process_time() - start, out))
    (cpu_on, found_on), (cpu_off, found_off) = results
    return path, lines, bool(triggered), passing, cpu_on, cpu_off, found_on, found_off


def _screen_files(root: Path, exts=(".py", ".ipynb")) -> List[str]:
    return sorted(str(p) for p in root.rglob("*") if p.suffix.lower() in exts and p.is_file() and not p.is_symlink())


def screen_check(args, work: Path) -> int:
    import multiprocessing

    groups: List[Tuple[str, List[str]]] = []
    if not args.no_projects:
        projects = load_projects(args.project)
        for project in projects:
            root = work / project.repo.replace("/", "+")
            if not extract_project(project, root):
                print(f"bench: no mirror for {project.repo}", file=sys.stderr)
                continue
            groups.append((project.repo, _screen_files(root, tuple(project.ext))))
    for folder in args.dir:
        groups.append((folder, _screen_files(Path(folder))))
    for folder in args.each:
        groups += [(str(d), _screen_files(d)) for d in sorted(Path(folder).iterdir()) if d.is_dir()]
    header = (f"{'project':44} {'files':>6} {'lines':>8} {'trig files':>10} {'trig lines':>10} "
              f"{'scr files':>9} {'scr lines':>9} {'cpu on':>7} {'cpu off':>7} {'diff':>4}")
    print(header)
    total = collections.Counter()
    diffs = []
    _screen_init(args.select)  # imported once here: forked workers all lint with the same code
    ctx = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    with ctx.Pool(max(1, args.jobs), initializer=_screen_init, initargs=(args.select,), maxtasksperchild=200) as pool:
        for name, files in groups:
            c = collections.Counter()
            for path, lines, trig, scr, cpu_on, cpu_off, on, off in pool.imap_unordered(_screen_one, files, chunksize=4):
                c["files"] += 1
                c["lines"] += lines
                c["trig_files"] += trig
                c["trig_lines"] += lines if trig else 0
                c["scr_files"] += scr
                c["scr_lines"] += lines if scr else 0
                c["cpu_on"] += cpu_on
                c["cpu_off"] += cpu_off
                if on != off:
                    c["diff"] += 1
                    diffs.append((path, sorted(set(off) - set(on)), sorted(set(on) - set(off))))
                    print(f"  DIFF {path}: lost {diffs[-1][1]} extra {diffs[-1][2]}", flush=True)
            total.update(c)
            print(_screen_line(name, c), flush=True)
    print(_screen_line("all", total))
    if diffs:
        print(f"\nfiles whose findings differ with the screen ({len(diffs)}): soundness bugs")
        for path, lost, extra in diffs:
            print(f"  {path}")
            for item in lost:
                print(f"    lost:  {item}")
            for item in extra:
                print(f"    extra: {item}")
    return 1 if diffs else 0


def _screen_line(name: str, c: collections.Counter) -> str:
    def pct(part: str, whole: str) -> str:
        return f"{c[part]} ({100 * c[part] / c[whole]:.0f}%)" if c[whole] else "0"

    short = name if len(name) <= 44 else "..." + name[-41:]
    return (f"{short:44} {c['files']:>6} {c['lines']:>8} {pct('trig_files', 'files'):>10} "
            f"{pct('trig_lines', 'lines'):>10} {pct('scr_files', 'files'):>9} {pct('scr_lines', 'lines'):>9} "
            f"{c['cpu_on']:>7.1f} {c['cpu_off']:>7.1f} {c['diff']:>4}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_fix = sub.add_parser("fixes", help="score the fix commits")
    p_fix.add_argument("--rule", action="append", help="only these rules (repeatable)")
    p_fix.add_argument("--check-fixes", action="store_true",
                       help="apply --fix to each detected notebook row's buggy notebook and check the rewrite")
    p_fix.add_argument("--show", choices=["missed", "fired-both", "undetected", "detected", "all"],
                       help="list rows with this outcome (dev part only)")
    p_fix.add_argument("--part", choices=["dev", "sealed"], default="dev",
                       help="dev: fix_commits/*.tsv (default); sealed: sealed/fix_commits/*.tsv, aggregates only")
    mode = p_fix.add_mutually_exclusive_group()
    mode.add_argument("--tree", dest="mode", action="store_const", const="tree",
                      help="lint each file inside its repository's tree at that commit (default for --part sealed)")
    mode.add_argument("--alone", dest="mode", action="store_const", const="alone",
                      help="lint each file extracted alone with the top-level metadata files (default for --part dev)")
    p_fix.add_argument("--out", metavar="FILE", help="also write the aggregates (no rows) as JSON to FILE")
    p_mir = sub.add_parser("mirrors", help="the repositories a part needs, one a line, marked when the mirror is missing")
    p_mir.add_argument("--part", choices=["dev", "sealed"], default="dev")
    p_prec = sub.add_parser("precision", help="compare findings with the reviewed snapshot")
    p_prec.add_argument("--update", action="store_true", help="rewrite snapshot/ with the current findings")
    p_prec.add_argument("--project", action="append", help="only this owner/name (repeatable)")
    p_prec.add_argument("--select", default=None, type=lambda s: s.split(","),
                        help="rules to run (default: the core five; with --part sealed, the default rules)")
    p_prec.add_argument("--check-fixes", action="store_true", help="apply --fix to a copy; rewritten files must compile")
    p_prec.add_argument("--keep", action="store_true", help="keep the extracted trees (path printed)")
    p_prec.add_argument("--part", choices=["dev", "sealed"], default="dev",
                        help="dev: snapshot/ (default); sealed: sealed/snapshot/, aggregate precision only")
    p_scr = sub.add_parser("screen", help="same findings with and without the ast screen; files and lines it passes")
    p_scr.add_argument("--project", action="append", help="only this owner/name (repeatable)")
    p_scr.add_argument("--no-projects", action="store_true", help="no snapshot project, only --dir folders")
    p_scr.add_argument("--dir", action="append", default=[], help="also every .py/.ipynb file under DIR (repeatable)")
    p_scr.add_argument("--each", action="append", default=[], help="like --dir for each folder in DIR, one line each")
    p_scr.add_argument("--select", default="default", help="'default' (the rules on by default), 'ALL', or codes")
    p_scr.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    p_scr.add_argument("--keep", action="store_true", help="keep the extracted trees (path printed)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mllint-realworld-"))
    try:
        if args.command == "mirrors":
            for repo in sorted({r.repo for r in load_fix_rows(SEALED_FIX_DIR if args.part == "sealed" else FIX_DIR)}):
                print(repo + ("" if git_dir(repo) else "\tmissing"))
            return 0
        if args.command == "fixes":
            sealed = args.part == "sealed"
            if sealed and (args.show or args.check_fixes):
                print(SEALED_REFUSAL, file=sys.stderr)
                return 2
            mode = args.mode or ("tree" if sealed else "alone")
            rows = [r for r in load_fix_rows(SEALED_FIX_DIR if sealed else FIX_DIR)
                    if not args.rule or r.rule in args.rule]
            if mode == "tree":
                score_fixes_tree(rows, work, sealed)
            else:
                score_fixes(rows, work)
            if args.check_fixes:
                if mode == "tree":
                    sys.exit("bench: --check-fixes reads the extracted files of --alone; run it without --tree")
                check_notebook_fixes(rows, work)
            report_fixes(rows, None if sealed else args.show, args.part, mode)
            if args.out:
                Path(args.out).write_text(json.dumps(aggregates(rows, args.part, mode), indent=2) + "\n")
            return 0
        if args.command == "screen":
            return screen_check(args, work)
        return precision(args, work)
    finally:
        if getattr(args, "keep", False):
            print(f"\nextracted trees kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
