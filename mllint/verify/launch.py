"""``mllint --verify --launcher local|submitit``: each flagged file's verification runs as a job of
the `submitit` library, on this machine (``local``: submitit's LocalExecutor, a separate process)
or on a Slurm cluster (``submitit``: its SlurmExecutor, ``sbatch``), and the verdicts come back
into the same report.

What a job runs is ``runner.run_job`` (the evidence runs, the timing calibration and rounds), on a
``runner.Job`` prepared here: the sandbox copies are made in the job folder, which the job uses as
its working directory, so the folder must be visible to the cluster's nodes (it is under
``~/.cache/mllint/verify-jobs`` unless ``$MLLINT_JOB_DIR`` names another; home directories are
shared on most clusters). The job's Python is this one (``sys.executable``), with this mllint and
torch: the same environment must exist on the nodes. Judging happens here, from what the job
returns (submitit pickles it back). Slurm options passed: ``--job-name mllint-verify``,
``--time`` (``--time``, default 60 minutes), ``--cpus-per-task 2``, ``--partition`` and
``--gpus-per-node`` when given.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Tuple

from mllint.verify.judge import Verification
from mllint.verify.runner import Job, Progress, Target, VerifyOptions, judge_job, plan, prepare, report_verdicts, run_job

DEFAULT_TIME_MINUTES = 60
POLL_SECONDS = 1.0


class LaunchError(Exception):
    """The launcher cannot be used here (one line for the user)."""


def job_root() -> str:
    return os.environ.get("MLLINT_JOB_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "mllint",
                                                            "verify-jobs")


def check_launcher(options: VerifyOptions) -> None:
    """Before anything runs: submitit is installed, the job folder can be written, and for Slurm
    `sbatch` is on PATH."""
    try:
        import submitit  # noqa: F401
    except ImportError:
        raise LaunchError(f"--launcher {options.launcher} needs the submitit library: pip install submitit"
                          " (from a clone of mllint: pip install -e '.[cluster]')") from None
    root = job_root()
    try:
        os.makedirs(root, exist_ok=True)
        probe = tempfile.mkdtemp(prefix="check-", dir=root)
        os.rmdir(probe)
    except OSError as exc:
        raise LaunchError(f"--launcher: cannot use the job folder {root} ({exc.strerror or exc}); point"
                          " $MLLINT_JOB_DIR at a writable folder the nodes can see") from None
    if options.launcher == "submitit" and shutil.which("sbatch") is None:
        raise LaunchError("--launcher submitit submits to Slurm, but `sbatch` is not on PATH here (run mllint on"
                          " the cluster's login node, or use --launcher local)")


def make_executor(options: VerifyOptions, folder: str):
    """The submitit executor for `options`, with its parameters set."""
    import submitit

    minutes = options.time_limit or DEFAULT_TIME_MINUTES
    if options.launcher == "local":
        executor = submitit.LocalExecutor(folder=folder)
        executor.update_parameters(timeout_min=minutes)
        return executor
    executor = submitit.SlurmExecutor(folder=folder)
    parameters = {"job_name": "mllint-verify", "time": minutes, "cpus_per_task": 2}
    if options.partition:
        parameters["partition"] = options.partition
    if options.gpus:
        parameters["gpus_per_node"] = options.gpus
    executor.update_parameters(**parameters)
    return executor


def run_in_job(job: Job) -> Job:
    """The job's body: the sandbox folder is its working directory."""
    os.chdir(job.scratch)
    return run_job(job)


@contextlib.contextmanager
def _stderr_kept(into: Optional[List[str]] = None, show: bool = False):
    """What the scheduler's commands (`sbatch`, `sacct`, run by submitit with this process's
    stderr) write to stderr is kept in `into` (or dropped) instead of reaching the terminal: a
    refusal is said once, in mllint's own line; a cluster without accounting does not complain
    on every poll. ``show`` (`-v`) lets what is not kept through."""
    if show and into is None:
        yield
        return
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to redirect
        yield
        return
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            if into is not None:
                sink.seek(0)
                into.append(sink.read().decode("utf-8", "replace"))


def _submit(executor, job: Job, options: VerifyOptions):
    """Submit one job; a job the scheduler refuses (`sbatch` exits with an error: no such
    partition, more GPUs or time than allowed) is the user's to change, said in one line."""
    import submitit

    said_there: List[str] = []
    try:
        with _stderr_kept(said_there):
            return executor.submit(run_in_job, job)
    except (submitit.core.utils.FailedJobError, OSError) as exc:
        said = [line.strip() for line in ("".join(said_there) + "\n" + str(exc)).splitlines() if line.strip()]
        why = next((line for line in said if "error" in line.lower()), said[-1] if said else type(exc).__name__)
        asked = ", ".join(f"{name} {value}" for name, value in (("--partition", options.partition),
                                                                ("--gpus", options.gpus),
                                                                ("--time", options.time_limit)) if value)
        raise LaunchError(f"Slurm refused the job: {why[:300]}" + (f" (asked for: {asked})" if asked else "")
                          + "; change --partition, --gpus or --time, or use --launcher local") from None


def quiet_submitit(verbose: bool = False) -> None:
    """submitit logs a warning on every poll of a cluster without accounting ("Bypassing sacct
    error"): not the user's business unless they ask for it (`-v`), and then on stderr. Its own
    logging configuration also writes to stdout, where the report goes (a JSON or SARIF report
    would no longer parse): that handler is removed."""
    import logging

    import submitit  # noqa: F401  (importing it configures the "submitit" logger)

    logger = logging.getLogger("submitit")
    logger.setLevel(logging.DEBUG if verbose else logging.ERROR)
    for handler in list(logger.handlers):
        stream = getattr(handler, "stream", None)
        if handler.get_name() == "submitit_out" or stream in (sys.stdout, sys.__stdout__):
            logger.removeHandler(handler)
        elif verbose:
            handler.setLevel(logging.DEBUG)


def _failure(submitted, launcher: str) -> str:
    """Why a job returned nothing, in one line, with where its log is."""
    exception = submitted.exception()
    lines = [line.strip() for line in str(exception or "").splitlines() if line.strip()]
    why = next((line for line in reversed(lines) if not line.startswith(("File ", "^", "~"))), "no result")
    if len(why) > 200:
        why = why[:197] + "..."
    return f"the {launcher} job {submitted.job_id} failed: {why} (its log: {submitted.paths.stderr})"


def run_jobs(targets: List[Target], options: VerifyOptions,
             progress: Callable[..., None]) -> Dict[Tuple, Verification]:
    """Prepare every file, submit one job each, wait, and judge what comes back."""
    root = job_root()
    os.makedirs(root, exist_ok=True)
    run_dir = tempfile.mkdtemp(prefix="run-", dir=root)
    keep = False
    verdicts: Dict[Tuple, Verification] = {}
    try:
        jobs: List[Job] = []
        for number, target in enumerate(targets, 1):
            scratch = os.path.join(run_dir, f"file{number}")
            os.makedirs(scratch)
            jobs.append(prepare(target, options, scratch))
        executor = make_executor(options, os.path.join(run_dir, "submitit"))
        submitted = [_submit(executor, job, options) for job in jobs]
        started = time.monotonic()
        try:
            while True:
                with _stderr_kept(show=options.scheduler_output):
                    if all(item.done() for item in submitted):
                        break
                    states = [item.state for item in submitted]
                summary = ", ".join(f"{states.count(state)} {state.lower()}" for state in sorted(set(states)))
                ids = ", ".join(str(item.job_id) for item in submitted[:3]) + (", ..." if len(submitted) > 3 else "")
                progress(f"{options.launcher} job{'s' if len(submitted) != 1 else ''} {ids}: {summary},"
                         f" {time.monotonic() - started:.0f} s")
                time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            for item in submitted:
                item.cancel(check=False)
            raise
        for number, (job, item) in enumerate(zip(jobs, submitted), 1):
            counter = f"[{number}/{len(jobs)}] {job.path}"
            returned: Optional[Job] = None
            with _stderr_kept(show=options.scheduler_output):  # (the scheduler's commands, asked once more)
                if item.exception() is None:
                    returned = item.result()
            if returned is None:
                keep = True
                with _stderr_kept(show=options.scheduler_output):
                    job.error = _failure(item, options.launcher)
                returned = job
            found = judge_job(returned)
            report_verdicts(progress, counter, returned, found, time.monotonic() - started)
            verdicts.update(found)
    finally:
        if not keep:
            shutil.rmtree(run_dir, ignore_errors=True)
    return verdicts


def verify(results, options: VerifyOptions, progress: Optional[Progress] = None) -> Dict[Tuple, Verification]:
    """Verify the findings of `results`: each flagged file's jobs run here, one after another,
    or as submitit jobs (``options.launcher``); returns the verdicts by finding."""
    progress = progress or Progress()
    targets, verdicts = plan(results, options)
    total = sum(len(t.findings) for t in targets)
    if not total:
        return verdicts
    where = f"as {options.launcher} jobs" if options.launcher else f"on {options.device}"
    progress(f"{total} finding{'s' if total != 1 else ''} to verify in {len(targets)} file"
             f"{'s' if len(targets) != 1 else ''} {where}, --steps {options.steps}", final=True)
    if options.launcher:
        verdicts.update(run_jobs(targets, options, progress))
        progress.done()
        return verdicts
    for number, target in enumerate(targets, 1):
        scratch = tempfile.mkdtemp(prefix="mllint-verify-")
        counter = f"[{number}/{len(targets)}] {target.path}"
        started = time.monotonic()
        try:
            job = prepare(target, options, scratch)
            run_job(job, lambda message, **kw: progress(f"{counter}: {message}", **kw))
            found = judge_job(job)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        report_verdicts(progress, counter, job, found, time.monotonic() - started)
        verdicts.update(found)
    progress.done()
    return verdicts
