"""The ``mllint`` command.

    mllint [OPTIONS] [PATHS]...     lint (default: the current directory)
    mllint check [OPTIONS] [PATHS]  the same (as ``ruff check``)
    mllint rules [--format json]    the rule catalogue
    mllint explain CODE             one rule's documentation and an example (CODE or name; alone: the list)
    mllint version                  the version (as ``--version``)
    mllint memory TARGET [...]      predicted peak memory of a training step / inference
    mllint server                   the language server (LSP on stdio; needs the [server] extra)

How subcommands and paths share the command line: ``check``, ``rules``, ``explain``, ``version``,
``memory`` and ``server`` are subcommands only as the very first argument, spelled exactly so.
Anything else is the lint command, so ``mllint src/`` and ``mllint --fix rules/`` lint paths, and a
directory literally named ``check``, ``rules``, ``explain``, ``version``, ``memory`` or ``server`` is linted with
``mllint ./rules`` or ``mllint -- rules``. No other word is reserved.

Exit codes: 0 no findings, 1 findings remain (or ``--diff`` would change files),
2 a usage, configuration or internal error. Errors are one line on stderr, never a
traceback (set MLLINT_DEBUG=1 to see the traceback of an internal error).
"""

from __future__ import annotations

import os
import sys
from typing import List, Optional, Sequence

import click

from mllint import __version__

FORMATS = ("text", "full", "concise", "grouped", "json", "json-lines", "junit", "gitlab", "sarif", "github")
HUMAN_FORMATS = ("text", "full", "concise", "grouped")  # formats a person reads (progress, --show-fixes inline)
EDIT_FORMATS = ("json", "json-lines", "sarif")  # formats that carry each fix's edits
EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

_EPILOG = """\b
Commands (only as the first argument):
  mllint check [OPTIONS] PATHS   the same as `mllint [OPTIONS] PATHS` (as `ruff check`)
  mllint rules [--format json]   list the rules
  mllint explain CODE            explain a rule (a code or a name; alone: list the rules)
  mllint version                 print the version
  mllint memory TARGET [...]     predict peak training / inference memory (needs torch)
  mllint server                  language server for editors, on stdio (needs the [server] extra)
To lint a directory named `check`, `rules`, `explain`, `version`, `memory` or `server`, write `mllint ./rules` or `mllint -- rules`.

\b
Exit status: 0 no problems, 1 problems found, 2 usage, configuration or internal error.
"""


def _warn(message: str) -> None:
    click.echo(f"mllint: warning: {message}", err=True)


def _debug(enabled: bool, message: str) -> None:
    if enabled:
        click.echo(f"mllint: debug: {message}", err=True)


@click.command(
    name="mllint",
    epilog=_EPILOG,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--select", multiple=True, metavar="CODES",
              help="Comma-separated rule codes or prefixes to enable (replaces the configured set); ALL for every rule.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Comma-separated rule codes or prefixes to disable.")
@click.option("--extend-select", multiple=True, metavar="CODES",
              help="Comma-separated rule codes or prefixes to enable on top of the configured set.")
@click.option("--fix", is_flag=True, help="Apply safe fixes to the files, then report what remains.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply unsafe fixes with --fix (--diff always shows them).")
@click.option("--diff", is_flag=True,
              help="Print a unified diff of what --fix would change; write nothing. Exit 1 if there are changes.")
@click.option("--format", "--output-format", "output_format", type=click.Choice(FORMATS), default="text",
              show_default=True,
              help="Output format: text (full: with code frames), concise, grouped (by file), json, json-lines,"
                   " junit (JUnit XML), gitlab (GitLab Code Quality), sarif (code scanning), github (annotations).")
@click.option("--show-source", is_flag=True, help="Show the source code around each finding.")
@click.option("--statistics", is_flag=True,
              help="Show the number of findings per rule instead of each finding (json: [{code, name, count,"
                   " fixable_count}]; github: one notice per rule; sarif: run properties, results kept).")
@click.option("-o", "--output-file", metavar="FILE", type=click.Path(dir_okay=False, path_type=str),
              help="Write the report to FILE instead of standard output (errors still go to stderr).")
@click.option("-q", "--quiet", count=True,
              help="Print the findings only, no summary; -qq (or --silent) prints nothing, the exit status tells.")
@click.option("--silent", is_flag=True, help="Print nothing on standard output (same as -qq).")
@click.option("--show-fixes", is_flag=True, help="After --fix, list what was fixed, per file and rule.")
@click.option("--exit-zero", is_flag=True, help="Exit with status 0 even when problems are found.")
@click.option("-j", "--jobs", type=click.IntRange(1, None), default=None, metavar="N",
              help="Lint in N processes (1: in this one). [default: the number of CPUs]")
@click.option("--max-file-size", metavar="SIZE", default=None,
              help="Skip (with a warning) Python files larger than SIZE, e.g. 4MiB, 500kB or bytes"
                   " (a notebook: its code). [default: 1.5MiB; config: max-file-size]")
@click.option("--no-cache", is_flag=True, envvar="MLLINT_NO_CACHE",
              help="Neither read nor write the result cache (.mllint_cache/). [env: MLLINT_NO_CACHE]")
@click.option("--no-screen", is_flag=True,
              help="Debugging aid: parse every file a rule's words trigger, without the cheap ast screen "
                   "(same findings, slower; compare with --no-cache).")
@click.option("--config", "config_path", metavar="PATH", type=click.Path(dir_okay=False, path_type=str),
              help="Use this configuration file (pyproject.toml or mllint.toml) for every file instead of the"
                   " nearest one of each.")
@click.option("--isolated", is_flag=True, help="Ignore every configuration file (defaults plus the command line).")
@click.option("--exclude", multiple=True, metavar="PATTERNS",
              help="Comma-separated gitignore-style patterns to exclude (replaces the configured `exclude`).")
@click.option("--extend-exclude", multiple=True, metavar="PATTERNS",
              help="Comma-separated gitignore-style patterns to exclude in addition to the configured ones.")
@click.option("--per-file-ignores", multiple=True, metavar="PATTERN:CODES",
              help='Rules to ignore in files matching a pattern, e.g. "tests/*:ML001" (replaces the configured ones).')
@click.option("--extend-per-file-ignores", multiple=True, metavar="PATTERN:CODES",
              help="Like --per-file-ignores, in addition to the configured ones.")
@click.option("--show-settings", metavar="FILE", type=click.Path(path_type=str), default=None,
              help="Print the settings FILE would be linted with (configuration file, rules, excludes) and exit.")
@click.option("--stdin-filename", metavar="PATH", default=None,
              help="Lint standard input as if it were the file PATH (its settings; PATH in the output)."
                   " With --fix the fixed source goes to stdout. `-` as the only path reads stdin too.")
@click.option("--force-exclude", is_flag=True,
              help="Apply exclude patterns and .gitignore even to files named on the command line (for pre-commit).")
@click.option("--add-noqa", is_flag=True,
              help="Add `# noqa: CODE` to the line of every current finding (adopting mllint in an existing project).")
@click.option("--baseline", "baseline_path", metavar="FILE", type=click.Path(dir_okay=False, path_type=str),
              help="Report only findings not recorded in FILE; if FILE does not exist, record the current findings in it.")
@click.option("--update-baseline", is_flag=True, help="With --baseline: rewrite FILE from the current findings.")
@click.option("-v", "--verbose", is_flag=True, help="Print debug information (configuration, files, cache use) on stderr.")
@click.option("--verify", is_flag=True,
              help="Run each flagged script, original against fixed, and confirm findings with measured evidence"
                   " (needs torch; runs your code in a temporary copy).")
@click.option("--device", type=click.Choice(("auto", "cpu", "cuda"), case_sensitive=False), default=None,
              help="--verify: where to run (default auto: cuda when present).")
@click.option("--steps", type=click.IntRange(1, 10_000), default=None,
              help="--verify: batches per pass over a DataLoader, and iterations of the loops that drive"
                   " flagged code (caps training). [default: 5]")
@click.option("--timeout", type=click.FloatRange(1, None), default=None,
              help="--verify: seconds one run of the original or of a fixed version may take. [default: 120]")
@click.option("--entry", metavar="MODULE:FUNCTION", default=None,
              help="--verify: call this function (module or path.py) instead of running files as __main__.")
@click.option("--rounds", type=click.IntRange(0, 1000), default=None,
              help="--verify: interleaved timing rounds; 0 skips timing (deterministic evidence only). [default: 20]")
@click.option("--timing", is_flag=True, default=None,
              help="--verify: always run the timing rounds (by default only when a short calibration finds"
                   " this host quiet enough to confirm the expected effect).")
@click.option("--launcher", type=click.Choice(("local", "submitit"), case_sensitive=False), default=None,
              help="--verify: run each file's verification as a job through submitit: `local` (a local"
                   " process) or `submitit` (Slurm).")
@click.option("--partition", metavar="NAME", default=None, help="--launcher submitit: the Slurm partition.")
@click.option("--gpus", type=click.IntRange(0, 64), default=None,
              help="--launcher submitit: GPUs per job (--gpus-per-node). [default: 0]")
@click.option("--time", "time_limit", type=click.IntRange(1, 60 * 24 * 30), default=None, metavar="MINUTES",
              help="--launcher: minutes a job may take (Slurm --time). [default: 60]")
@click.version_option(__version__, "--version", prog_name="mllint", message="%(prog)s %(version)s")
def lint_command(
    paths: Sequence[str],
    select: Sequence[str],
    ignore: Sequence[str],
    extend_select: Sequence[str],
    fix: bool,
    unsafe_fixes: bool,
    diff: bool,
    output_format: str,
    show_source: bool,
    statistics: bool,
    exit_zero: bool,
    no_cache: bool,
    config_path: Optional[str],
    isolated: bool,
    exclude: Sequence[str],
    extend_exclude: Sequence[str],
    per_file_ignores: Sequence[str],
    extend_per_file_ignores: Sequence[str],
    show_settings: Optional[str],
    stdin_filename: Optional[str],
    force_exclude: bool,
    add_noqa: bool,
    baseline_path: Optional[str],
    update_baseline: bool,
    verbose: bool,
    verify: bool,
    device: Optional[str],
    steps: Optional[int],
    timeout: Optional[float],
    entry: Optional[str],
    rounds: Optional[int],
    timing: Optional[bool] = None,
    launcher: Optional[str] = None,
    partition: Optional[str] = None,
    gpus: Optional[int] = None,
    time_limit: Optional[int] = None,
    no_screen: bool = False,
    output_file: Optional[str] = None,
    quiet: int = 0,
    silent: bool = False,
    show_fixes: bool = False,
    jobs: Optional[int] = None,
    max_file_size: Optional[str] = None,
) -> int:
    """Find silent ML bugs (PyTorch, scikit-learn) in Python files and Jupyter notebooks under PATHS (default: .)."""
    from mllint import engine
    from mllint.config import Resolver
    from mllint.files import discover

    from_stdin = None  # the display path when linting standard input (mllint/stdin.py)
    if stdin_filename is not None or "-" in paths:
        from mllint.stdin import stdin_path

        from_stdin = stdin_path(paths, stdin_filename)
    if from_stdin is not None:
        if verify:
            raise click.UsageError("--verify runs files and cannot read standard input")
        paths = [stdin_filename or "."]
    paths = list(paths) or ["."]
    _adoption_options(add_noqa, baseline_path, update_baseline, fix, diff, verify)
    verify_options = _verify_options(verify, fix, diff, device, steps, timeout, entry, rounds,
                                      timing, launcher, partition, gpus, time_limit, paths)
    settings = Resolver(
        {
            "config": config_path,
            "isolated": isolated,
            "select": list(select) if select else None,
            "ignore": list(ignore),
            "extend_select": list(extend_select),
            "exclude": list(exclude) if exclude else None,
            "extend_exclude": list(extend_exclude),
            "per_file_ignores": list(per_file_ignores) if per_file_ignores else None,
            "extend_per_file_ignores": list(extend_per_file_ignores),
            "force_exclude": force_exclude,
            "max_file_size": max_file_size,
        },
    )
    if show_settings is not None:
        from mllint.show_settings import render

        click.echo(render(settings, show_settings), nl=False)
        return EXIT_CLEAN
    for given in paths:  # errors in the configurations of the given paths come first
        settings.settings_for_dir(given if os.path.isdir(given) else os.path.dirname(os.path.abspath(given)))
    if from_stdin is not None:
        from mllint import stdin

        return stdin.run(from_stdin, settings, fix=fix, unsafe_fixes=unsafe_fixes, diff=diff,
                         output_format=output_format, show_source=show_source, statistics=statistics,
                         exit_zero=exit_zero)
    files = discover(paths, settings, on_warning=_warn)
    for used in settings.used():
        _debug(verbose, f"config: {used.config_path or 'none'}; root: {used.root};"
               f" rules: {', '.join(sorted(used.select))}")
    if not files:
        _warn("no Python files found under the given path(s)")
    use_cache = not no_cache
    stats: dict = {}
    from mllint.output import Progress

    # A report builds the fixes (settle_fixable below runs them); --fix and --diff re-lint the
    # files that have one, so a deferred fix is enough for them to pick the files, unless the
    # format shows the edits.
    wants_edits = output_format in EDIT_FORMATS or bool(verify_options)
    # progress on stderr, never with -q/--silent nor beside a machine format going to a pipe
    machine_to_pipe = output_format not in HUMAN_FORMATS and not output_file and not sys.stdout.isatty()
    with Progress(enabled=not (silent or quiet or machine_to_pipe)) as progress:
        # a report marks fixable only what --fix fixes: each file with a fixable finding gets a
        # dry run of the fixes (--fix and --diff run them for real instead)
        from mllint.fixing import settle_fixable

        settle = None if (fix or diff or add_noqa) else settle_fixable
        results = engine.lint_paths(files, settings, use_cache=use_cache, jobs=jobs, stats=stats,
                                    progress=progress.update, fixes=wants_edits or settle is not None,
                                    screen=not no_screen, settle=settle)
    for result in results:
        if result.skipped:
            _warn(f"{result.path}: {result.skipped}")
    cached = sum(1 for r in results if r.cached)
    _debug(verbose, f"{len(files)} files: {cached} from cache, {len(files) - cached} linted"
           f" in {stats.get('workers', 1)} process(es)")
    if use_cache:
        cache_dirs = ", ".join(sorted({str(used.cache_dir) for used in settings.used()}))
        _debug(verbose, f"cache: {cache_dirs}" + ("" if stats.get("cache_written") else " (not writable)"))
        if not stats.get("cache_written"):  # said once: the next runs will be as slow as this one
            _warn(f"cache directory {cache_dirs} cannot be written: results are not cached (set `cache-dir`"
                  " in [tool.mllint] or MLLINT_CACHE_DIR to a writable folder, or pass --no-cache)")
    else:
        _debug(verbose, "cache: disabled")

    from mllint.adoption import warn_unknown_noqa

    warn_unknown_noqa(results, _warn)
    if add_noqa:
        from mllint.adoption import add_noqa as mark

        added = mark(results, settings, _warn)
        click.echo(f"Added {added} noqa {'directive' if added == 1 else 'directives'}.", err=True)
        return EXIT_CLEAN
    if diff:
        return _diff(results, settings, exit_zero, use_cache)

    fixed_findings: list = []
    fixed = _fix(results, settings, unsafe_fixes, fixed_findings, use_cache) if fix else 0
    if baseline_path:  # baselined findings are neither verified nor reported
        from mllint.baseline import use_baseline

        if use_baseline(results, baseline_path, update_baseline) is not None:
            if fix and not (silent or quiet):
                click.echo(f"Fixed {fixed} problem{'' if fixed == 1 else 's'}.")
            return EXIT_CLEAN
    verifications = _verify(results, verify_options, verbose) if verify_options else None

    from mllint.report import REPORTERS, ReportOptions

    findings = [f for r in results for f in r.findings]
    options = ReportOptions(
        show_source=show_source,
        statistics=statistics,
        fix_applied=fixed,
        unsafe_hidden=0 if unsafe_fixes else _unsafe_fix_count(results),
        unsafe_fixes=unsafe_fixes,
        verifications=verifications,
        quiet=quiet > 0 or silent,
        show_fixes=show_fixes and fix,
        fixed=fixed_findings,
        skipped=sum(1 for r in results if r.skipped),
    )
    from mllint.output import show_fixes_on_stderr, write_report

    if options.show_fixes and output_format not in HUMAN_FORMATS and not (silent or quiet > 1):
        show_fixes_on_stderr(options)
    write_report(REPORTERS[output_format], results, options, output_file, silent=silent or quiet > 1)
    if findings and not exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _verify_options(verify, fix, diff, device, steps, timeout, entry, rounds, timing=None, launcher=None,
                    partition=None, gpus=None, time_limit=None, paths=()):
    """The --verify settings, or None; verify-only options without --verify are usage errors, and
    --entry is resolved here, before anything is linted or run."""
    given = [name for name, value in (("--device", device), ("--steps", steps), ("--timeout", timeout),
                                      ("--entry", entry), ("--rounds", rounds), ("--timing", timing or None),
                                      ("--launcher", launcher), ("--partition", partition), ("--gpus", gpus),
                                      ("--time", time_limit)) if value is not None]
    if not verify:
        if given:
            raise click.UsageError(f"{given[0]} only applies to --verify")
        return None
    if fix or diff:
        raise click.UsageError("--verify cannot be combined with --fix or --diff (it never changes files)")
    if timing and rounds == 0:
        raise click.UsageError("--timing cannot be combined with --rounds 0")
    launcher = launcher.lower() if launcher else None
    if launcher != "submitit":
        slurm_only = next((name for name, value in (("--partition", partition), ("--gpus", gpus)) if value is not None),
                          None)
        if slurm_only:
            raise click.UsageError(f"{slurm_only} only applies to --launcher submitit")
    if time_limit is not None and not launcher:
        raise click.UsageError("--time only applies to --launcher (a job's time limit; --timeout limits each run)")
    from mllint.verify.runner import EntryError, VerifyOptions, resolve_entry

    if entry is not None:
        try:
            entry = resolve_entry(entry, paths)
        except EntryError as exc:
            raise click.BadParameter(str(exc), param_hint="--entry") from None
    defaults = VerifyOptions()
    return VerifyOptions(
        device=(device or "auto").lower(),
        steps=steps or defaults.steps,
        timeout=timeout or defaults.timeout,
        entry=entry,
        rounds=defaults.rounds if rounds is None else rounds,
        timing=timing,
        launcher=launcher,
        partition=partition,
        gpus=gpus,
        time_limit=time_limit,
    )


def _adoption_options(add_noqa, baseline_path, update_baseline, fix, diff, verify) -> None:
    """--add-noqa and --baseline are runs of their own: usage errors for what they cannot go with."""
    if update_baseline and not baseline_path:
        raise click.UsageError("--update-baseline needs --baseline FILE")
    if add_noqa:
        clash = next((name for name, on in (("--fix", fix), ("--diff", diff), ("--verify", verify),
                                            ("--baseline", baseline_path)) if on), None)
        if clash:
            raise click.UsageError(f"--add-noqa cannot be combined with {clash}")
    if baseline_path and diff:
        raise click.UsageError("--baseline cannot be combined with --diff")


def _verify(results, options, verbose: int = 0):
    """Run the verifier; a missing torch or an unusable device is a one-line error (exit 2)."""
    from mllint.config import ConfigError
    from mllint.runtime.device import DeviceError, require_torch, select

    if options.launcher:  # torch and the device are the job's: checked where it runs
        from mllint.verify.launch import LaunchError, check_launcher

        try:
            check_launcher(options)
        except LaunchError as exc:
            raise ConfigError(str(exc)) from None
    else:
        try:
            require_torch("--verify")
            options.device = select(options.device).name
        except DeviceError as exc:
            raise ConfigError(str(exc)) from None
    from mllint.verify.launch import LaunchError, quiet_submitit, verify

    if options.launcher:
        quiet_submitit(verbose=bool(verbose))
        options.scheduler_output = bool(verbose)
    try:
        return verify(results, options)
    except LaunchError as exc:  # the scheduler refused the job: the user's to change
        raise ConfigError(str(exc)) from None


def _unsafe_fix_count(results) -> int:
    """Findings whose fix only --unsafe-fixes applies ("N hidden fixes")."""
    from mllint.findings import Applicability

    return sum(
        1 for r in results for f in r.findings if f.fix is not None and f.fix.applicability is Applicability.UNSAFE
    )


def _fixable(result, unsafe: bool) -> bool:
    from mllint.findings import Applicability

    return any(
        f.fix is not None and (unsafe or f.fix.applicability is Applicability.SAFE) for f in result.findings
    )


def _run_fixes(results, settings, unsafe: bool, write: bool, use_cache: bool = True):
    """Fix every file that has an applicable fix; yields (result, FileFixResult). Its project's
    facts are cached only when `use_cache` (not under --no-cache)."""
    from mllint.fixing import fix_file
    from mllint.registry import rules_for

    for result in results:
        if not _fixable(result, unsafe):
            continue
        from mllint.semantics.options import ModelOptions

        options = ModelOptions.for_file(settings.settings_for(result.path), result.path, settings, use_cache)
        outcome = fix_file(result.path, rules_for(settings.codes_for(result.path)), unsafe=unsafe, write=write,
                           options=options)
        for finding, reason in outcome.outcome.rejected:
            cell = f"cell {finding.cell}:line " if finding.cell is not None else ""  # a notebook
            _warn(f"{finding.path}:{cell}{finding.line}:{finding.column}: {finding.code} fix not applied: {reason}")
        if outcome.error:
            _warn(f"{result.path}: {outcome.error}")
        yield result, outcome


def _fix(results, settings, unsafe: bool, applied: Optional[list] = None, use_cache: bool = True) -> int:
    """Apply fixes in place; the results then hold the findings that remain. Returns the number
    fixed (and adds the fixed findings to `applied`, for --show-fixes)."""
    fixed = 0
    for result, outcome in _run_fixes(results, settings, unsafe, write=True, use_cache=use_cache):
        gone = outcome.outcome.fixed
        fixed += len(gone)
        if applied is not None:
            applied.extend(gone)
        result.findings = sorted(outcome.outcome.remaining, key=lambda f: f.sort_key())
        if outcome.new is not None:
            result.source = outcome.new
    return fixed


def _diff(results, settings, exit_zero: bool, use_cache: bool = True) -> int:
    """Show every fix as a unified diff, unsafe ones included (DESIGN: "applied by
    --unsafe-fixes, shown by --diff"): an unsafe fix is a suggested rewrite to read."""
    from mllint.findings import Applicability
    from mllint.fixing import unified_diff

    would_fix = 0
    unsafe = 0
    changed = 0
    for _, outcome in _run_fixes(results, settings, True, write=False, use_cache=use_cache):
        if outcome.old is None or outcome.new is None or outcome.old == outcome.new:
            continue
        click.echo(unified_diff(outcome.path, outcome.old, outcome.new), nl=False)
        applied = outcome.outcome.applied
        would_fix += len(outcome.outcome.fixed)
        unsafe += sum(1 for f in applied if f.fix is not None and f.fix.applicability is Applicability.UNSAFE)
        changed += 1
    if changed:
        noun = "problem" if would_fix == 1 else "problems"
        note = ""
        if unsafe:
            note = f" ({unsafe} by unsafe {'fix' if unsafe == 1 else 'fixes'}, applied only with --fix --unsafe-fixes)"
        click.echo(f"Would fix {would_fix} {noun}{note}.", err=True)
    else:
        click.echo("No fixes available.", err=True)
    return EXIT_FINDINGS if changed and not exit_zero else EXIT_CLEAN


# --- the rule catalogue ----------------------------------------------------------------


def _catalogue() -> List[dict]:
    from mllint.findings import PARSE_ERROR_CODE, PARSE_ERROR_NAME
    from mllint.registry import all_rules

    rows = [{
        "code": PARSE_ERROR_CODE,
        "name": PARSE_ERROR_NAME,
        "default_enabled": True,
        "fix": None,
        "message": "The file could not be read or parsed as Python (always on).",
    }]
    for rule in all_rules().values():
        rows.append({
            "code": rule.code,
            "name": rule.name,
            "default_enabled": rule.default_enabled,
            "fix": rule.fix.value if rule.fix else None,
            "message": rule.message,
        })
    return rows


@click.command(name="rules", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--format", "--output-format", "output_format", type=click.Choice(("text", "json")), default="text",
              show_default=True, help="Output format.")
def rules_command(output_format: str) -> int:
    """List the rules: code, name, on by default, and whether --fix can fix it."""
    rows = _catalogue()
    if output_format == "json":
        import json

        click.echo(json.dumps(rows, indent=2))
        return EXIT_CLEAN
    table = [("CODE", "NAME", "DEFAULT", "FIX")]
    for row in rows:
        table.append((row["code"], row["name"], "on" if row["default_enabled"] else "off", row["fix"] or "no"))
    widths = [max(len(line[i]) for line in table) for i in range(3)]
    for line in table:
        click.echo("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line[:3])) + "  " + line[3])
    return EXIT_CLEAN


@click.command(name="explain", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("code", required=False)
def explain_command(code: Optional[str]) -> int:
    """Print the documentation of rule CODE (a code such as ML001 or a name such as
    missing-zero-grad), with an example and its fix; without CODE, list the rules."""
    from mllint.config import ConfigError
    from mllint.findings import PARSE_ERROR_CODE, PARSE_ERROR_NAME
    from mllint.registry import all_rules

    if code is None:  # as `ruff rule --all` in short: what there is to explain
        for row in _catalogue():
            click.echo(f"{row['code']}  {row['name']}")
        click.echo("\nmllint explain CODE (or NAME) prints one rule's documentation.")
        return EXIT_CLEAN
    wanted = code.strip().upper()
    rules = all_rules()
    by_name = {rule.name: rule.code for rule in rules.values()}
    by_name[PARSE_ERROR_NAME] = PARSE_ERROR_CODE
    wanted = by_name.get(code.strip().lower(), wanted)
    if wanted == PARSE_ERROR_CODE:
        from mllint.report._common import PARSE_ERROR_DOC

        click.echo(f"{PARSE_ERROR_CODE} ({PARSE_ERROR_NAME})\n\nAlways on. No fix.\n\n{PARSE_ERROR_DOC}")
        return EXIT_CLEAN
    rule = rules.get(wanted)
    if rule is None:
        raise ConfigError(f"unknown rule `{code}` (known codes: {', '.join(sorted(rules))}; names as"
                          " `mllint rules` lists them are accepted too)")
    fix = {None: "No fix.", "safe": "Fix: safe (applied by --fix).",
           "unsafe": "Fix: unsafe (applied by --fix --unsafe-fixes)."}[rule.fix.value if rule.fix else None]
    if rule.fix and rule.fix.value == "safe" and any(e.unsafe_fixed and not e.fixed for e in rule.invalid):
        fix = ("Fix: safe (applied by --fix), unsafe in some cases (applied only with --fix --unsafe-fixes;"
               " \"How to fix\" says when).")
    default = "On by default." if rule.default_enabled else "Off by default (enable with --extend-select)."
    parts = [f"{rule.code} ({rule.name})", f"{default} {fix}", f"Message: {rule.message}", rule.doc.strip()]
    example = next((e for e in rule.invalid if e.fixed), rule.invalid[0] if rule.invalid else None)
    if example is not None:
        parts.append("Example (flagged):\n\n" + _indent(example.code))
        fixed = example.fixed or example.unsafe_fixed
        if fixed:
            parts.append(("Fixed:" if example.fixed else "Fixed (unsafe fix):") + "\n\n" + _indent(fixed))
    click.echo("\n\n".join(p for p in parts if p))
    return EXIT_CLEAN


def _indent(code: str) -> str:
    return "\n".join(("    " + line) if line.strip() else "" for line in code.rstrip("\n").splitlines())


def _memory_command():
    from mllint.memory.cli import memory_command  # imports torch lazily, inside the command

    return memory_command


def _server_command():
    from mllint.server import server_command  # imports pygls lazily, inside the command

    return server_command


@click.command(name="version", context_settings={"help_option_names": ["-h", "--help"]})
def version_command() -> int:
    """Print mllint's version (as `mllint --version`)."""
    click.echo(f"mllint {__version__}")
    return EXIT_CLEAN


SUBCOMMANDS = {
    "check": lambda: lint_command,  # as `ruff check`: the lint command itself
    "rules": lambda: rules_command,
    "explain": lambda: explain_command,
    "version": lambda: version_command,
    "memory": _memory_command,
    "server": _server_command,
}


# --- entry point -----------------------------------------------------------------------


def run(argv: Sequence[str]) -> int:
    """Run mllint with the arguments `argv` (without the program name); returns the exit status."""
    args = list(argv)
    if args and args[0] in SUBCOMMANDS:
        command, prog, args = SUBCOMMANDS[args[0]](), f"mllint {args[0]}", args[1:]
    else:
        command, prog = lint_command, "mllint"
    try:
        status = command.main(args, prog_name=prog, standalone_mode=False)
        return status if isinstance(status, int) else EXIT_CLEAN
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("mllint: interrupted", err=True)
        return 130
    except click.ClickException as exc:
        message = " ".join(exc.format_message().split())
        click.echo(f"mllint: error: {message} (see '{prog} --help')", err=True)
        return EXIT_ERROR
    except KeyboardInterrupt:
        click.echo("mllint: interrupted", err=True)
        return 130
    except BrokenPipeError:
        # The reader went away (`mllint | head`): stop quietly.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_FINDINGS
    except Exception as exc:
        from mllint.config import ConfigError

        if isinstance(exc, ConfigError):  # a user error in the configuration or the arguments
            click.echo(f"mllint: error: {exc}", err=True)
            return EXIT_ERROR
        if os.environ.get("MLLINT_DEBUG") == "1":
            raise
        from mllint.engine import InternalError

        detail = " ".join(str(exc).split())
        if not isinstance(exc, InternalError):
            detail = f"{type(exc).__name__}: {detail}"
        click.echo(f"mllint: internal error: {detail} (please report)", err=True)
        return EXIT_ERROR


def main(argv: Optional[Sequence[str]] = None) -> None:
    _tune_gc()
    sys.exit(run(sys.argv[1:] if argv is None else argv))


def _tune_gc() -> None:
    """Collect cycles less often: a LibCST parse allocates millions of objects, none of them
    in cycles, and the default threshold (700) runs the collector over the growing tree all
    along (20% of a large file's time). The command owns its process (and its workers,
    forked from it), so it may set this; the library (server, flake8 plugin) does not."""
    import gc

    gc.set_threshold(100_000, 50, 100)
