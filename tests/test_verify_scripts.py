"""mllint --verify on scripts as people write them: top-level tutorials, loops that would run for a
long time or forever, early and precise errors, progress on a terminal, and the submitit launchers.

The end-to-end tests run the real command (subprocesses, torch, CPU, --rounds 0 unless timing is the
point); the loop caps and the timing gate are also checked as functions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cli_helpers import assert_user_error, clean_env, read_terminal, run_verify as run, snapshot as tree
from mllint.verify.caps import cap_loops

# A tutorial: no main guard, no function, 300 epochs; gradients never cleared (ML001) and an
# evaluation pass without no_grad or eval() (ML002, ML005).
TOP_LEVEL = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    X = torch.randn(256, 10)
    y = (X[:, 0] > 0).long()
    train_loader = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)
    val_loader = DataLoader(TensorDataset(X[:64], y[:64]), batch_size=16)

    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(300):
        model.train()
        for xb, yb in train_loader:
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
        correct = 0
        for xb, yb in val_loader:
            out = model(xb)
            correct += (out.argmax(1) == yb).sum().item()
        print(epoch, correct)
    """
)

# The same tutorial written correctly: the linter is silent, so nothing is verified.
TOP_LEVEL_CORRECT = (TOP_LEVEL
                     .replace("        loss = loss_fn", "        optimizer.zero_grad()\n        loss = loss_fn")
                     .replace("    correct = 0\n", "    correct = 0\n    model.eval()\n")
                     .replace("        out = model(xb)", "        with torch.no_grad():\n            out = model(xb)"))

# A step loop that never ends by itself, over hand-made batches: only the loop cap and the ML001
# clock end it.
FOREVER = textwrap.dedent(
    """\
    import torch

    torch.manual_seed(0)
    w = torch.zeros(4, requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=0.1)
    data = torch.randn(64, 4)
    step = 0
    while True:
        batch = data[(step * 8) % 64:(step * 8) % 64 + 8]
        loss = ((batch @ w) - 1.0).pow(2).mean()
        loss.backward()
        optimizer.step()
        step += 1
    """
)


def verdicts(proc: subprocess.CompletedProcess) -> dict:
    return {(f["code"], f["line"]): f["verification"] for f in json.loads(proc.stdout)}


# --- loop caps ---------------------------------------------------------------------------------


def test_caps_wrap_only_the_loops_that_drive_flagged_code_on_the_same_lines():
    source = textwrap.dedent(
        """\
        def build():
            layers = []
            for _ in range(12):
                layers.append(1)
            return layers

        def evaluate(model, batches):
            for x in batches:
                model(x)

        def main():
            for a, b in zip([1], [2]), [3]:
                pass
            for epoch in range(100):
                evaluate(None, [1, 2])
            while True:
                break

        async def feed(stream):
            async for item in stream:
                evaluate(None, item)
        """)
    capped, lines = cap_loops(source, [9])
    assert lines == [8, 14]  # the loop holding line 9, and the epoch loop that calls evaluate()
    assert len(capped.splitlines()) == len(source.splitlines())
    compile(capped, "capped.py", "exec")
    assert "for _ in range(12):" in capped and "while True:" in capped  # they do not drive line 9
    assert "for epoch in __mllint_loop__(range(100), (9,)):" in capped  # it runs line 9, through evaluate()
    assert "async for item in stream:" in capped


def test_caps_also_cover_the_training_loop_before_a_flagged_evaluation():
    source = textwrap.dedent(
        """\
        def train_step(model, batch):
            model(batch).sum().backward()

        for step in range(100_000):
            train_step(model, data)
        for block in range(24):
            blocks.append(block)
        while step < 10**9:
            loss = model(data).sum()
            loss.backward()
            step += 1
        print(model(test))
        """)
    capped, lines = cap_loops(source, [12])
    assert lines == [4, 8]  # the loops that train, not the one that builds blocks
    assert "for block in range(24):" in capped
    # (): they run no flagged line, only train, so they are capped from their first iteration
    assert "for step in __mllint_loop__(range(100_000), ()):" in capped
    assert "while (step < 10**9) and __mllint_while__(8, ()):" in capped


def test_caps_keep_a_bare_tuple_a_tuple_and_cap_while_loops():
    source = "for x in 1, 2:\n    f(x)\nwhile n > 0:\n    f(n)\n"
    capped, lines = cap_loops(source, [2, 4])
    assert "for x in __mllint_loop__((1, 2), (2,)):" in capped
    assert "while (n > 0) and __mllint_while__(3, (4,)):" in capped
    assert lines == [1, 3]


# --- scripts as scripts --------------------------------------------------------------------------


def test_a_top_level_tutorial_is_verified_and_its_correct_twin_is_silent(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "tutorial.py").write_text(TOP_LEVEL, encoding="utf-8")
    (tmp_path / "correct.py").write_text(TOP_LEVEL_CORRECT, encoding="utf-8")
    before = tree(tmp_path)
    proc = run(["--verify", "--rounds", "0", "--format", "json", "tutorial.py"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    found = verdicts(proc)
    assert {code for code, _ in found} == {"ML001", "ML002", "ML005"}, proc.stdout
    for key, verification in found.items():
        assert verification["verdict"] == "confirmed", (key, verification)
    ml002 = next(v for (code, _), v in found.items() if code == "ML002")
    calls = next(e for e in ml002["evidence"] if e["metric"].startswith("forward calls whose outputs"))
    # 300 epochs capped at --steps 5 (4 validation batches each); every variant stops at the same
    # point, once all three witnesses are decided (12 optimizer steps: 2 epochs)
    calls_made = int(calls["original"].split("/")[1])
    assert calls["fixed"] == f"0/{calls_made}" and 5 <= calls_made <= 20, calls
    assert tree(tmp_path) == before
    proc = run(["--verify", "--rounds", "0", "--format", "json", "correct.py"], tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout) == [], proc.stdout


def test_a_loop_that_never_ends_is_capped_and_decided(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "forever.py").write_text(FOREVER, encoding="utf-8")
    proc = run(["--verify", "--rounds", "0", "--timeout", "60", "--format", "json", "forever.py"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    [(key, verification)] = verdicts(proc).items()
    assert key == ("ML001", 11) and verification["verdict"] == "confirmed", verification


# An evaluation every 150 steps of a step loop that would run 100,000 steps; eval() is never undone.
LATE_EVAL = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.3), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.randn(64, 8)
    step = 0
    while step < 100_000:
        loss = model(data).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % 150 == 0:
            model.eval()
            with torch.no_grad():
                print(step, model(data).mean().item())
    """
)


def test_a_loop_runs_on_until_the_flagged_line_runs_then_stops(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "late.py").write_text(LATE_EVAL, encoding="utf-8")
    (tmp_path / "never.py").write_text(LATE_EVAL.replace("step % 150", "step % 5000"), encoding="utf-8")
    proc = run(["--verify", "--rounds", "0", "--format", "json", "late.py"], tmp_path)
    [(key, verification)] = verdicts(proc).items()
    assert key == ("ML005", 16) and verification["verdict"] == "confirmed", verification
    # the first eval() at step 150, then --steps 5 more steps, in the original and the fixed run alike
    assert "5/155 training forwards ran in eval mode" in verification["summary"], verification
    proc = run(["--verify", "--rounds", "0", "--format", "json", "never.py"], tmp_path)
    [(key, verification)] = verdicts(proc).items()
    assert verification["verdict"] == "not-confirmed", verification
    assert "line 16 did not run within the loop iterations allowed" in verification["summary"], verification


# --- errors, early and precise ---------------------------------------------------------------------


def test_entry_is_resolved_before_anything_runs(tmp_path):
    (tmp_path / "train.py").write_text(TOP_LEVEL, encoding="utf-8")
    (tmp_path / "lib.py").write_text("def main():\n    pass\n", encoding="utf-8")
    for entry, words in (("nomodule:main", ("no module", "nomodule")), ("lib:fit", ("fit", "not defined")),
                         ("missing.py:main", ("no file",)), ("lib:", ("MODULE:FUNCTION",))):
        proc = run(["--verify", "--entry", entry, "train.py"], tmp_path, timeout=60)
        assert_user_error(proc, "--entry", *words)
        assert "verify" not in proc.stdout  # nothing was linted or run


def test_a_crash_names_the_variant_the_exception_and_the_users_line(tmp_path):
    pytest.importorskip("torch")
    crashing = TOP_LEVEL.replace("    print(epoch, correct)\n", "    print(epoch, correct)\n    raise ValueError('bad epoch')\n")
    (tmp_path / "crash.py").write_text(crashing, encoding="utf-8")
    proc = run(["--verify", "--rounds", "0", "--select", "ML002", "crash.py"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert ("could not run: the original failed: ValueError: bad epoch at crash.py:26"
            " (`raise ValueError('bad epoch')`)") in proc.stdout, proc.stdout


def test_a_required_argument_is_reported_with_argparses_message(tmp_path):
    pytest.importorskip("torch")
    script = FOREVER.replace("import torch\n", "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\n"
                             "parser.add_argument('--data', required=True)\nargs = parser.parse_args()\n", 1)
    (tmp_path / "cli.py").write_text(script, encoding="utf-8")
    proc = run(["--verify", "--rounds", "0", "cli.py"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert ("the original failed: RuntimeError: the script exited with status 2 (cli.py: error: the following"
            " arguments are required: --data) at cli.py:6 (`args = parser.parse_args()`)") in proc.stdout, proc.stdout


def test_a_fixed_variants_failure_is_mapped_to_the_users_lines():
    from mllint.verify.runner import Variant, _failure

    variant = Variant("fixed0", "the fixed version (ML001, line 20)", "/tmp/x", "/tmp/x/train.py", "train.py",
                      [], [], back={21: 20, 23: 21})
    assert _failure(variant, "RuntimeError: x", {"file": "train.py", "line": 23, "text": "y()"}) == \
        "RuntimeError: x at train.py:21 (`y()`)"
    assert "a line the fix added" in _failure(variant, "E", {"file": "train.py", "line": 22, "text": ""})
    assert _failure(variant, "E", {"file": "lib/data.py", "line": 5, "text": ""}) == "E at lib/data.py:5"


def test_launcher_options_are_checked_first(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(TOP_LEVEL, encoding="utf-8")
    assert_user_error(run(["--verify", "--partition", "gpu", "train.py"], tmp_path, timeout=60), "--partition",
                      "--launcher submitit")
    assert_user_error(run(["--verify", "--time", "5", "train.py"], tmp_path, timeout=60), "--time", "--launcher")
    assert_user_error(run(["--verify", "--timing", "--rounds", "0", "train.py"], tmp_path, timeout=60), "--timing")
    assert_user_error(run(["--launcher", "local", "train.py"], tmp_path, timeout=60), "--launcher", "--verify")
    pytest.importorskip("submitit")
    env = clean_env()
    env["PATH"] = str(tmp_path / "nobin")  # no sbatch
    proc = subprocess.run([sys.executable, "-m", "mllint", "--no-cache", "--verify", "--launcher", "submitit",
                           "train.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert_user_error(proc, "sbatch")
    env = clean_env({"MLLINT_JOB_DIR": str(tmp_path / "train.py" / "jobs")})  # under a file: cannot be made
    assert_user_error(run(["--verify", "--launcher", "local", "train.py"], tmp_path, env=env, timeout=60),
                      "job folder", "MLLINT_JOB_DIR")


# --- timing only when it can tell ---------------------------------------------------------------


def test_timing_runs_when_asked_or_when_the_host_is_quiet_enough(monkeypatch):
    from mllint.findings import Finding
    from mllint.verify import runner
    from mllint.verify.runner import VerifyOptions, timing_plan

    def finding(code):
        return Finding("t.py", 1, 1, 1, 2, code, "n", "m")

    assert timing_plan([finding("ML002")], VerifyOptions(rounds=0)) == (False, None)
    assert timing_plan([finding("ML002")], VerifyOptions(timing=True)) == (True, None)
    assert timing_plan([finding("ML001")], VerifyOptions()) == (False, None)  # no time effect expected
    monkeypatch.setattr(runner, "host_noise", lambda: 0.02)
    assert timing_plan([finding("ML002")], VerifyOptions()) == (True, None)
    monkeypatch.setattr(runner, "host_noise", lambda: 0.3)
    timed, note = timing_plan([finding("ML005")], VerifyOptions())
    assert not timed and "±30%" in note and "--timing" in note


def test_host_noise_is_a_spread():
    from mllint.verify.runner import host_noise

    assert 0 <= host_noise(samples=6) < 10


# --- progress ---------------------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_progress_on_a_terminal_and_quiet_when_piped(tmp_path):
    pytest.importorskip("torch")
    import pty

    (tmp_path / "forever.py").write_text(FOREVER, encoding="utf-8")
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "mllint", "--no-cache", "--verify", "--rounds", "0", "forever.py"],
                            cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE, stderr=child,
                            stdin=subprocess.DEVNULL)
    os.close(child)
    written = read_terminal(main).decode("utf-8", "replace")
    out = proc.communicate(timeout=300)[0].decode()
    os.close(main)
    assert "ML001" in out and "progress" not in out
    assert "1 finding to verify in 1 file on cpu" in written
    assert "2 runs (the original and 1 fixed)" in written and "2 done" in written
    assert "original " in written and "fixed (ML001, line 11) " in written and "fixed0" not in written
    assert "forever.py:11: ML001 confirmed" in written


# --- launchers ---------------------------------------------------------------------------------------


def test_launcher_local_gives_the_same_verdicts_and_leaves_the_tree_alone(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("submitit")
    project = tmp_path / "project"
    project.mkdir()
    (project / "tutorial.py").write_text(TOP_LEVEL, encoding="utf-8")
    (project / "forever.py").write_text(FOREVER, encoding="utf-8")
    before = tree(project)
    env = clean_env()
    env["MLLINT_JOB_DIR"] = str(tmp_path / "jobs")
    plain = run(["--verify", "--rounds", "0", "--format", "json", "."], project, env=env)
    launched = run(["--verify", "--rounds", "0", "--format", "json", "--launcher", "local", "."], project, env=env)
    assert plain.returncode == launched.returncode == 1, launched.stderr
    mine, theirs = verdicts(plain), verdicts(launched)
    assert set(mine) == set(theirs) and len(mine) == 4
    assert {key: v["verdict"] for key, v in mine.items()} == {key: v["verdict"] for key, v in theirs.items()}
    assert all(v["verdict"] == "confirmed" for v in theirs.values()), theirs
    assert tree(project) == before
    assert not any((tmp_path / "jobs").iterdir())  # the job folder is cleaned after a successful run


FAKE_SLURM = Path(__file__).parent / "fake_slurm"  # sbatch, srun, sacct, scancel that run jobs here


def test_slurm_jobs_get_the_partition_gpus_and_time_asked_for(tmp_path, monkeypatch):
    pytest.importorskip("submitit")
    from mllint.verify.launch import make_executor
    from mllint.verify.runner import VerifyOptions

    monkeypatch.setenv("PATH", f"{FAKE_SLURM}{os.pathsep}{os.environ['PATH']}")  # submitit looks for srun
    options = VerifyOptions(launcher="submitit", partition="a100", gpus=2, time_limit=45)
    executor = make_executor(options, str(tmp_path / "jobs"))
    script = executor._make_submission_file_text("python -m job", "uid")
    for line in ("#SBATCH --partition=a100", "#SBATCH --gpus-per-node=2", "#SBATCH --time=45",
                 "#SBATCH --job-name=mllint-verify", "#SBATCH --cpus-per-task=2"):
        assert line in script, script
    bare = make_executor(VerifyOptions(launcher="submitit"), str(tmp_path / "jobs2"))
    text = bare._make_submission_file_text("python -m job", "uid")
    assert "--partition" not in text and "--gpus-per-node" not in text and "#SBATCH --time=60" in text


def _fake_slurm_env(tmp_path):
    state = tmp_path / "slurm"
    state.mkdir()
    env = clean_env()
    env["PATH"] = f"{FAKE_SLURM}{os.pathsep}{env['PATH']}"
    env["FAKE_SLURM_DIR"] = str(state)
    env["MLLINT_JOB_DIR"] = str(tmp_path / "jobs")
    return env


def test_launcher_submitit_runs_the_job_through_slurms_commands(tmp_path):
    """The whole Slurm path, with stand-ins for sbatch/srun/sacct that run the job on this machine:
    the sbatch script carries the options, the job's verdicts come back into the same report."""
    pytest.importorskip("torch")
    pytest.importorskip("submitit")
    project = tmp_path / "project"
    project.mkdir()
    (project / "forever.py").write_text(FOREVER, encoding="utf-8")
    before = tree(project)
    env = _fake_slurm_env(tmp_path)
    state = tmp_path / "slurm"
    proc = run(["--verify", "--rounds", "0", "--format", "json", "--launcher", "submitit", "--partition", "gpu",
                "--gpus", "1", "--time", "10", "forever.py"], project, env=env)
    assert proc.returncode == 1, proc.stderr
    [(key, verification)] = verdicts(proc).items()
    assert key == ("ML001", 11) and verification["verdict"] == "confirmed", verification
    [submitted] = state.glob("*.sbatch")
    text = submitted.read_text()
    for line in ("#SBATCH --partition=gpu", "#SBATCH --gpus-per-node=1", "#SBATCH --time=10"):
        assert line in text, text
    assert tree(project) == before


def test_a_job_slurm_refuses_is_a_one_line_error(tmp_path):
    """sbatch refuses the job (no such partition): the user's to change, said in one line (exit 2),
    not an internal error."""
    pytest.importorskip("submitit")
    (tmp_path / "forever.py").write_text(FOREVER, encoding="utf-8")
    proc = run(["--verify", "--rounds", "0", "--launcher", "submitit", "--partition", "nosuch", "forever.py"],
               tmp_path, env=_fake_slurm_env(tmp_path))
    line = assert_user_error(proc, "Slurm refused the job: sbatch: error: invalid partition specified: nosuch",
                             "--partition nosuch")
    assert "internal error" not in line and "please report" not in line


def test_submitit_warnings_stay_quiet_unless_asked(tmp_path):
    """A cluster without accounting: sacct fails on every poll and submitit warns each time
    ("Bypassing sacct error"); the user sees none of it unless asked (-v), and the verdict comes back."""
    pytest.importorskip("torch")
    pytest.importorskip("submitit")
    (tmp_path / "forever.py").write_text(FOREVER, encoding="utf-8")
    env = _fake_slurm_env(tmp_path)
    env["FAKE_SLURM_NO_ACCOUNTING"] = "1"
    proc = run(["--verify", "--rounds", "0", "--format", "json", "--launcher", "submitit", "forever.py"], tmp_path,
               env=env)
    assert proc.returncode == 1, proc.stderr
    assert "sacct" not in proc.stderr and "WARNING" not in proc.stderr, proc.stderr
    [(key, verification)] = verdicts(proc).items()
    assert key == ("ML001", 11) and verification["verdict"] == "confirmed", verification
    asked = run(["-v", "--verify", "--rounds", "0", "--format", "json", "--launcher", "submitit", "forever.py"],
                tmp_path, env=env)  # -v: submitit's log and what sacct said
    assert "Bypassing sacct error" in asked.stderr and "accounting storage is disabled" in asked.stderr, asked.stderr
    assert verdicts(asked) == verdicts(proc)
