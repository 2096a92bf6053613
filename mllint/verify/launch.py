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

import os
import shutil
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
        submitted = [executor.submit(run_in_job, job) for job in jobs]
        started = time.monotonic()
        try:
            while not all(item.done() for item in submitted):
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
            if item.exception() is None:
                returned = item.result()
            if returned is None:
                keep = True
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
