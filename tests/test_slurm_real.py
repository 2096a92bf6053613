"""mllint --verify --launcher submitit against a real single-node Slurm that this module starts and
stops (munged, slurmctld and slurmd, as root, with their configuration, key, state and logs in a
temporary folder, on ports of their own: nothing of the machine's own Slurm or munge is used).

What tests/fake_slurm stands in for, checked on the real thing: the fixtures' ML002 and ML005
findings are confirmed by jobs that Slurm schedules and runs, the clean fixtures stay clean, a job
Slurm refuses (no such partition) is a one-line error (exit 2), and the cluster having no
accounting (`sacct` fails on every poll) does not reach the user.

Skipped, with the reason, where the Slurm and munge daemons are not installed
(`apt-get install slurmctld slurmd munge` on Debian/Ubuntu; .ci/run tries that) or not run as root.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from cli_helpers import assert_user_error, clean_env, run_verify as run, snapshot as tree
from test_verify_scripts import verdicts

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "sinfo", "squeue", "scontrol", "scancel")
STARTUP_SECONDS = 60  # until the node is idle
INSTALL = "apt-get install slurmctld slurmd munge"


def _free_ports(count: int) -> list:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _node_line(node: str) -> str:
    """This machine as `slurmd -C` sees it (CPUs, sockets, cores, memory), so that slurmd does not
    drain the node for a mismatch; at least 2 CPUs, as mllint's jobs ask for 2 (--cpus-per-task)."""
    fields = {}
    try:
        probe = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, timeout=30)
        first = probe.stdout.splitlines()[0] if probe.stdout.strip() else ""
        fields = dict(item.split("=", 1) for item in first.split() if "=" in item)
    except (OSError, subprocess.SubprocessError):
        pass
    keep = ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore", "RealMemory")
    hardware = {key: fields[key] for key in keep if key in fields}
    if int(hardware.get("CPUs", "0")) < 2:  # claim 2 CPUs (slurmd told to trust the configuration)
        hardware = {"CPUs": "2", "RealMemory": hardware.get("RealMemory", "1000")}
    return f"NodeName={node} NodeAddr=127.0.0.1 " + " ".join(f"{k}={v}" for k, v in hardware.items())


def _slurm_conf(folder: Path, node: str, munge_socket: Path) -> str:
    ctld_port, slurmd_port = _free_ports(2)
    node_line = _node_line(node)
    overrides = "SlurmdParameters=config_overrides\n" if " CPUs=2 RealMemory" in node_line else ""
    return (
        f"ClusterName=mllinttest\n"
        f"SlurmctldHost={node}(127.0.0.1)\n"
        f"SlurmctldPort={ctld_port}\n"
        f"SlurmdPort={slurmd_port}\n"
        f"SlurmUser=root\n"
        f"SlurmdUser=root\n"
        f"AuthType=auth/munge\n"
        f"AuthInfo=socket={munge_socket}\n"
        f"CredType=cred/munge\n"
        f"StateSaveLocation={folder / 'state'}\n"
        f"SlurmdSpoolDir={folder / 'spool'}\n"
        f"SlurmctldPidFile={folder / 'slurmctld.pid'}\n"
        f"SlurmdPidFile={folder / 'slurmd.pid'}\n"
        f"SlurmctldLogFile={folder / 'slurmctld.log'}\n"
        f"SlurmdLogFile={folder / 'slurmd.log'}\n"
        f"PlugStackConfig={folder / 'plugstack.conf'}\n"
        f"MailProg=/bin/true\n"
        f"ProctrackType=proctrack/linuxproc\n"
        f"TaskPlugin=task/none\n"
        f"MpiDefault=none\n"
        f"SelectType=select/cons_tres\n"
        f"SelectTypeParameters=CR_Core\n"
        f"SchedulerType=sched/builtin\n"
        f"AccountingStorageType=accounting_storage/none\n"  # no accounting: sacct fails, as on
        f"JobAcctGatherType=jobacct_gather/none\n"  # clusters without slurmdbd
        f"JobCompType=jobcomp/none\n"
        f"ReturnToService=2\n"
        f"{overrides}"
        f"{node_line} State=UNKNOWN\n"
        f"PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP\n"
    )


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"--- {path.name}: (none)"
    return f"--- {path.name}:\n" + "\n".join(text[-lines:])


def _ours(conf: Path) -> list:
    """Processes still running with this cluster's SLURM_CONF in their environment: job steps
    (slurmstepd daemonizes, away from slurmd) and what they run."""
    marker = f"SLURM_CONF={conf}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if marker not in handle.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat", "rb") as handle:
                if handle.read().rsplit(b")", 1)[1].split()[0] == b"Z":  # a zombie: nothing runs
                    continue
        except (OSError, IndexError):
            continue
        found.append(int(entry))
    return found


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the daemon's process group (slurmctld's slurmscriptd included), then SIGKILL."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        if process.poll() is not None:
            break
        try:
            os.killpg(process.pid, sig)
        except OSError:
            pass
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    try:  # anything left in its group once it is gone
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass


@pytest.fixture(scope="module")
def slurm():
    """A one-node Slurm cluster on this machine; yields the environment its commands need
    (PATH, SLURM_CONF) on top of the tests' usual one. Always stopped afterwards."""
    pytest.importorskip("torch")
    pytest.importorskip("submitit")
    missing = [name for name in DAEMONS + CLIENTS if shutil.which(name) is None]
    if missing:
        pytest.skip(f"real Slurm not found ({', '.join(missing)} not on PATH); to run these tests, install it"
                    f" (Debian/Ubuntu, as root: {INSTALL})")
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("real Slurm: slurmd must run as root to start jobs; run these tests as root")
    # munged wants its socket's folder (and the folders above) open to everyone: not under pytest's 0700
    # temporary folders, and a short path (a Unix socket's is at most 107 bytes).
    folder = Path(tempfile.mkdtemp(prefix="mllint-slurm-", dir="/tmp" if os.path.isdir("/tmp") else None))
    conf, started = folder / "slurm.conf", {}
    try:
        folder.chmod(0o711)
        for name, mode in (("munge", 0o700), ("run", 0o755), ("state", 0o755), ("spool", 0o755)):
            (folder / name).mkdir(mode=mode)
            (folder / name).chmod(mode)
        key = folder / "munge" / "munge.key"
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, os.urandom(1024))
        os.close(fd)
        munge_socket = folder / "run" / "munge.sock"
        node = socket.gethostname().split(".")[0]
        (folder / "plugstack.conf").write_text("")
        conf.write_text(_slurm_conf(folder, node, munge_socket))
        daemon_env = dict(os.environ, SLURM_CONF=str(conf))
        commands = {
            "munged": ["munged", "--foreground", f"--key-file={key}", f"--socket={munge_socket}",
                       f"--pid-file={folder / 'munge' / 'munged.pid'}",
                       f"--seed-file={folder / 'munge' / 'munged.seed'}"],
            "slurmctld": ["slurmctld", "-D", "-f", str(conf)],
            "slurmd": ["slurmd", "-D", "-f", str(conf), "-N", node],
        }

        def logs() -> str:
            return "\n".join([_tail(folder / f"{name}.out") for name in started]
                             + [_tail(folder / "slurmctld.log"), _tail(folder / "slurmd.log")])

        def start(name: str) -> None:
            with open(folder / f"{name}.out", "wb") as out:
                started[name] = subprocess.Popen(commands[name], env=daemon_env, stdin=subprocess.DEVNULL, stdout=out,
                                                 stderr=subprocess.STDOUT, start_new_session=True)

        def cluster(*args: str) -> str:
            proc = subprocess.run(list(args), env=daemon_env, capture_output=True, text=True, timeout=20)
            return proc.stdout.strip()

        deadline = time.monotonic() + STARTUP_SECONDS
        start("munged")
        while not munge_socket.exists():
            if started["munged"].poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"real Slurm: munged did not start\n{logs()}")
            time.sleep(0.1)
        start("slurmctld")
        start("slurmd")
        state = ""
        while state != "idle":
            dead = [name for name, process in started.items() if process.poll() is not None]
            if dead or time.monotonic() > deadline:
                why = f"{', '.join(dead)} exited" if dead else f"node {node} not idle after {STARTUP_SECONDS} s"
                pytest.fail(f"real Slurm did not come up ({why}; last state: {state or 'none'})\n{logs()}")
            time.sleep(0.25)
            state = cluster("sinfo", "-h", "-N", "-n", node, "-o", "%T")
        yield {"SLURM_CONF": str(conf), "PATH": os.environ["PATH"]}
    finally:
        try:
            if "slurmctld" in started and started["slurmctld"].poll() is None:
                jobs = cluster("squeue", "-h", "-o", "%i").split()
                if jobs:
                    cluster("scancel", *jobs)
                until = time.monotonic() + 15
                while cluster("squeue", "-h", "-o", "%i") and time.monotonic() < until:
                    time.sleep(0.25)
        except (OSError, subprocess.SubprocessError):
            pass
        for name in ("slurmd", "slurmctld", "munged"):
            if name in started:
                _stop(started[name])
        for pid in _ours(conf):  # a job step left behind by slurmd
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(folder, ignore_errors=True)


def _env(slurm, tmp_path) -> dict:
    env = clean_env()
    env.update(slurm)
    env["MLLINT_JOB_DIR"] = str(tmp_path / "jobs")
    return env


def _finished_jobs(slurm) -> dict:
    """This cluster's finished mllint jobs, id: run time (slurmctld keeps them for MinJobAge, 300 s)."""
    out = subprocess.run(["scontrol", "-o", "show", "job"], env=dict(os.environ, **slurm), capture_output=True,
                         text=True, timeout=20).stdout
    fields = [dict(item.split("=", 1) for item in line.split() if "=" in item) for line in out.splitlines()]
    return {f["JobId"]: f.get("RunTime") for f in fields
            if f.get("JobName") == "mllint-verify" and f.get("JobState") == "COMPLETED"}


def test_real_slurm_jobs_confirm_the_fixtures_findings(slurm, tmp_path):
    """One job per flagged file, scheduled and run by Slurm: ML002 and ML005 confirmed, the clean
    versions have nothing to verify; the missing accounting (sacct fails on each poll, submitit
    warns) stays out of the user's way; the job folder is cleaned, the fixtures left alone."""
    env = _env(slurm, tmp_path)
    files = ["ml002/bad_eval.py", "ml005/bad_eval.py", "ml002/good_eval.py", "ml005/good_eval.py"]
    project = tmp_path / "project"
    for name in files:
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FIXTURES / name, project / name)
    before, jobs_before = tree(project), _finished_jobs(slurm)
    started = time.monotonic()
    proc = run(["--verify", "--rounds", "0", "--format", "json", "--launcher", "submitit", *files], project,
               env=env, timeout=300)
    took = time.monotonic() - started
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    found = {key: verification["verdict"] for key, verification in verdicts(proc).items()}
    assert found == {("ML002", 45): "confirmed", ("ML005", 45): "confirmed"}, (found, proc.stderr)
    paths = {finding["path"] for finding in json.loads(proc.stdout)}
    assert paths == {"ml002/bad_eval.py", "ml005/bad_eval.py"}, paths
    for quiet in ("sacct", "accounting", "WARNING", "Traceback"):
        assert quiet not in proc.stderr, proc.stderr
    deadline = time.monotonic() + 30  # a job whose result is back may still be COMPLETING for a moment
    while True:
        ran = {job: runtime for job, runtime in _finished_jobs(slurm).items() if job not in jobs_before}
        if len(ran) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert len(ran) == 2, ran  # they did run as Slurm jobs, one per file
    assert tree(project) == before
    assert not any((tmp_path / "jobs").iterdir())
    print(f"real Slurm: jobs {', '.join(f'{job} ({runtime})' for job, runtime in sorted(ran.items()))}"
          f" confirmed ML002 and ML005, {took:.1f} s in all")


def test_real_slurm_refusing_the_job_is_a_one_line_error(slurm, tmp_path):
    """sbatch refuses the job (the cluster has no partition `nosuch`): exit 2, one line that says
    what Slurm said and what was asked for, no traceback, nothing left queued."""
    shutil.copyfile(FIXTURES / "ml002" / "bad_eval.py", tmp_path / "bad_eval.py")
    proc = run(["--verify", "--rounds", "0", "--launcher", "submitit", "--partition", "nosuch", "bad_eval.py"],
               tmp_path, env=_env(slurm, tmp_path), timeout=120)
    line = assert_user_error(proc, "Slurm refused the job: sbatch: error: invalid partition specified: nosuch",
                             "--partition nosuch")
    assert "internal error" not in line and "please report" not in line
    queued = subprocess.run(["squeue", "-h"], env=dict(os.environ, **slurm), capture_output=True, text=True,
                            timeout=20).stdout
    assert not queued.strip(), queued
