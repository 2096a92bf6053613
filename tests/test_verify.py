"""mllint --verify: statistics, line mapping, and the real command on small runnable scripts.

The end-to-end tests run the real command (subprocesses, torch, CPU) with few timing rounds, so
they check the deterministic witnesses and the plumbing; timing itself is checked through its
statistics (an A/A comparison never confirms, a clear effect does).
"""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from cli_helpers import assert_user_error, run_verify, snapshot
from mllint.findings import Applicability, Edit, Finding, Fix
from mllint.verify import judge
from mllint.verify.runner import is_runnable, line_map, lines_for
from mllint.verify.stats import judge_timing, paired_ratio, sign_test

# One script with four bugs the linter reports: zero_grad once before the loop (ML001), a constant
# tensor built on every batch (ML004), and an evaluation without no_grad (ML002) or eval() (ML005).
ALL_BUGS = textwrap.dedent(
    """\
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset


    def make_loader():
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(64, 8, generator=generator)
        y = torch.randn(64, 1, generator=generator)
        return DataLoader(TensorDataset(x, y), batch_size=8)


    def train(model, loader, optimizer, epochs=2):
        model.train()
        optimizer.zero_grad()
        for _ in range(epochs):
            for x, y in loader:
                weights = torch.tensor([[0.5], [1.0], [1.5], [1.0], [0.5], [1.0], [1.5], [1.0]])
                loss = (weights * (model(x) - y) ** 2).mean()
                loss.backward()
                optimizer.step()


    def evaluate(model, loader):
        outputs = []
        for x, _ in loader:
            outputs.append(model(x))
        return torch.cat(outputs)


    def main():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        loader = make_loader()
        train(model, loader, optimizer)
        predictions = evaluate(model, loader)
        print(predictions.shape)


    if __name__ == "__main__":
        main()
    """
)


# --- statistics --------------------------------------------------------------------------------


def test_sign_test_is_exact():
    assert sign_test(8, 8) == pytest.approx(2 / 256)
    assert sign_test(4, 8) == 1.0
    assert sign_test(0, 0) == 1.0


def test_paired_ratio_of_a_clear_effect_is_confirmed():
    a = [1.2 + 0.01 * (i % 3) for i in range(20)]
    b = [1.0 + 0.01 * (i % 2) for i in range(20)]
    aa = paired_ratio([1.0 + 0.01 * (i % 2) for i in range(20)], [1.0 + 0.01 * ((i + 1) % 2) for i in range(20)])
    verdict = judge_timing(paired_ratio(a, b), aa)
    assert verdict.confirmed, verdict.text


def test_an_a_a_comparison_never_confirms():
    import random

    rng = random.Random(1)
    for _ in range(50):  # noisy identical series: whatever the draw, never "confirmed"
        a = [1.0 + rng.gauss(0, 0.1) for _ in range(20)]
        b = [1.0 + rng.gauss(0, 0.1) for _ in range(20)]
        c = [1.0 + rng.gauss(0, 0.1) for _ in range(20)]
        assert not judge_timing(paired_ratio(a, b), paired_ratio(c, a)).confirmed


def test_few_rounds_never_confirm_by_timing():
    # Three rounds, all slower: the interval excludes 1 but a sign test cannot reach p < 0.01.
    verdict = judge_timing(paired_ratio([2.0, 2.1, 2.2], [1.0, 1.0, 1.0]), paired_ratio([1.0] * 3, [1.0] * 3))
    assert not verdict.confirmed


def test_effect_inside_the_noise_floor_is_not_confirmed():
    a = [1.05] * 20
    b = [1.0] * 20
    aa = paired_ratio([1.0, 1.2] * 10, [1.0] * 20)  # the control itself strays 20 %
    verdict = judge_timing(paired_ratio(a, b), aa)
    assert not verdict.confirmed
    assert "not confirmable by timing" in verdict.text


# --- variants and lines -------------------------------------------------------------------------


def test_line_map_follows_reindented_blocks():
    old = "def f(m, xs):\n    out = []\n    for x in xs:\n        out.append(m(x))\n    return out\n"
    new = ("import torch\ndef f(m, xs):\n    out = []\n    with torch.no_grad():\n        for x in xs:\n"
           "            out.append(m(x))\n    return out\n")
    mapping = line_map(old, new)
    assert mapping[4] == 6
    assert mapping[1] == 2


def test_lines_for_an_allocation_follow_it_when_hoisted():
    old = "for x in loader:\n    w = torch.ones(3)\n    use(x, w)\n"
    new = "w = torch.ones(3)\nfor x in loader:\n    use(x, w)\n"
    finding = Finding("t.py", 2, 9, 2, 22, "ML004", "n", "m",
                      fix=Fix(Applicability.SAFE, (Edit(1, 1, 1, 1, ""),)))
    assert lines_for(finding, old) == [2]
    assert lines_for(finding, old, new) == [1]


def test_runnable_means_running_the_file_runs_something():
    assert is_runnable("x = 1\nif __name__ == '__main__':\n    main()\n")
    assert is_runnable('if __name__ == "__main__":\n    main()\n')
    assert is_runnable("import torch\nmodel = torch.nn.Linear(2, 2)\n")  # a top-level script
    assert is_runnable("for epoch in range(3):\n    pass\n")
    assert not is_runnable('"""Doc."""\nimport torch\nSIZE = 3\ndef main():\n    pass\nclass A:\n    pass\n')


def test_ml001_judgement_needs_stale_original_and_clean_fix():
    stale = {"optimizers": [{"type": "SGD", "steps": [None, {"grad": 2.0, "fresh": 1.0, "stale": 1.0}]}]}
    clean = {"optimizers": [{"type": "SGD", "steps": [None, {"grad": 1.0, "fresh": 1.0, "stale": 0.0}]}]}
    finding = Finding("t.py", 1, 1, 1, 2, "ML001", "n", "m")
    j = judge._Judgement()
    judge.judge_ml001(finding, stale, clean, j)
    assert j.witness is True
    j = judge._Judgement()
    judge.judge_ml001(finding, clean, clean, j)  # the same code against itself
    assert j.witness is False


def test_ml005_training_direction_counts_training_forwards_in_eval_mode():
    fix = Fix(Applicability.SAFE, (Edit(3, 1, 3, 1, "        model.train()\n"),))
    finding = Finding("t.py", 9, 9, 9, 21, "ML005", "n", "m", fix=fix)
    site = {"calls": 10, "requires_grad": 10, "mode_sensitive": 10}
    original = {"sites": {"5": dict(site, training=6), "12": {"calls": 4, "requires_grad": 0, "training": 0}}}
    fixed = {"sites": {"6": dict(site, training=10)}}
    j = judge._Judgement()
    judge.judge_ml005(finding, original, fixed, [9], [10], j)
    assert j.witness is True and j.evidence[0]["original"] == "4/10" and j.evidence[0]["fixed"] == "0/10"
    j = judge._Judgement()
    judge.judge_ml005(finding, original, original, [9], [9], j)  # against itself: never confirmed
    assert j.witness is False


# --- the real command ------------------------------------------------------------------------------


def test_verify_option_errors_are_one_line(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(ALL_BUGS, encoding="utf-8")
    assert_user_error(run_verify(["--steps", "3", "train.py"], tmp_path), "--steps", "--verify")
    assert_user_error(run_verify(["--verify", "--fix", "train.py"], tmp_path), "--fix")
    assert_user_error(run_verify(["--verify", "--entry", "nocolon", "train.py"], tmp_path), "MODULE:FUNCTION")
    assert_user_error(run_verify(["--verify", "--device", "tpu", "train.py"], tmp_path), "--device")


def test_verify_without_torch_says_how_to_install(monkeypatch, capsys, tmp_path):
    from mllint import cli

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    (tmp_path / "train.py").write_text(ALL_BUGS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert cli.run(["--verify", "--no-cache", "train.py"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install" in err[0] and "torch" in err[0]


def test_device_cuda_without_a_gpu_is_a_clear_error(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    (tmp_path / "train.py").write_text(ALL_BUGS, encoding="utf-8")
    assert_user_error(run_verify(["--verify", "--device", "cuda", "train.py"], tmp_path), "cuda")


def test_confirms_all_four_runtime_rules_and_leaves_the_tree_alone(tmp_path):
    pytest.importorskip("torch")
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(ALL_BUGS, encoding="utf-8")
    before = snapshot(project)
    # --rounds 0: deterministic evidence only (timing is covered below, on one finding)
    proc = run_verify(["--verify", "--rounds", "0", "--steps", "4", "--format", "json", "train.py"], project)
    assert proc.returncode == 1, proc.stderr
    assert snapshot(project) == before  # nothing written into the user's tree
    findings = json.loads(proc.stdout)
    by_code = {f["code"]: f for f in findings}
    assert set(by_code) == {"ML001", "ML002", "ML004", "ML005"}, proc.stdout
    for code, finding in by_code.items():
        verification = finding["verification"]
        assert verification["verdict"] == "confirmed", (code, verification)
        for item in verification["evidence"]:
            assert set(item) == {"metric", "original", "fixed", "ratio", "interval"}
    metrics = {code: {e["metric"]: e for e in f["verification"]["evidence"]} for code, f in by_code.items()}
    grads = next(e for m, e in metrics["ML002"].items() if m.startswith("forward calls whose outputs"))
    assert grads["original"] == "4/4" and grads["fixed"] == "0/4"  # --steps 4 caps each pass at 4 batches
    allocs = next(e for m, e in metrics["ML004"].items() if m.startswith("tensor allocations per iteration"))
    assert allocs["original"] >= 1 and allocs["fixed"] < allocs["original"]
    differ = next(e for m, e in metrics["ML005"].items() if m.startswith("identical calls"))
    assert differ["original"].startswith(("1/", "2/")) and differ["fixed"].startswith("0/")
    stale = next(e for m, e in metrics["ML001"].items() if m.startswith("max ||applied"))
    assert stale["original"] > 0.01 and stale["fixed"] < 1e-4
    assert proc.stderr == ""  # progress only on a terminal, never in the JSON or a piped log


def test_text_report_and_failures_that_do_not_stop_the_run(tmp_path):
    pytest.importorskip("torch")
    project = tmp_path / "project"
    project.mkdir()
    needs_data = ALL_BUGS.replace("    loader = make_loader()\n", "    open('data/train.csv')\n    loader = make_loader()\n")
    (project / "needs_data.py").write_text(needs_data, encoding="utf-8")
    library = ALL_BUGS.split('\n\nif __name__')[0] + "\n"
    (project / "library.py").write_text(library, encoding="utf-8")
    proc = run_verify(["--verify", "--rounds", "0", "--steps", "2", "--select", "ML002", "."], project)
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert ("verify: could not run: the original failed: FileNotFoundError: [Errno 2] No such file or directory:"
            " 'data/train.csv' at needs_data.py:35 (`open('data/train.csv')`)") in out, out
    assert "running the file runs nothing" in out and "--entry" in out
    # --entry names the function to call, for a module without a main guard
    proc = run_verify(["--verify", "--rounds", "0", "--steps", "2", "--select", "ML002", "--entry", "library:main",
                       "library.py"], project)
    assert proc.returncode == 1, proc.stderr
    assert "verify: confirmed: outputs require grad (2/2 calls; fixed 0/2)" in proc.stdout, proc.stdout


def test_timing_rounds_interleave_original_control_and_fixed(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "train.py").write_text(ALL_BUGS, encoding="utf-8")
    proc = run_verify(["--verify", "--timing", "--rounds", "3", "--steps", "2", "--select", "ML005", "--format",
                       "json", "train.py"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    [finding] = json.loads(proc.stdout)
    evidence = {e["metric"]: e for e in finding["verification"]["evidence"]}
    timed = next(e for m, e in evidence.items() if m.startswith("forward time at line 27"))
    control = evidence["A/A control: the original against itself"]
    for item in (timed, control):
        assert item["ratio"] > 0 and item["interval"][0] <= item["ratio"] <= item["interval"][1]
    assert any("3 rounds" in detail for detail in finding["verification"]["details"])


def test_timeout_is_reported_as_could_not_run(tmp_path):
    pytest.importorskip("torch")
    slow = ALL_BUGS.replace("    loader = make_loader()\n", "    import time\n    time.sleep(60)\n    loader = make_loader()\n")
    (tmp_path / "slow.py").write_text(slow, encoding="utf-8")
    proc = run_verify(["--verify", "--timeout", "8", "--select", "ML002", "slow.py"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "could not run: the original timed out after 8 s in its evidence run" in proc.stdout, proc.stdout


def test_rules_without_a_runtime_witness_are_not_verifiable(tmp_path):
    pytest.importorskip("sklearn")
    (tmp_path / "leak.py").write_text(textwrap.dedent(
        """\
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler

        def main(X, y):
            X = StandardScaler().fit_transform(X)
            X_train, X_test, y_train, y_test = train_test_split(X, y)
            return X_train, X_test

        if __name__ == "__main__":
            main([[1.0], [2.0], [3.0], [4.0]], [0, 1, 0, 1])
        """), encoding="utf-8")
    proc = run_verify(["--verify", "--format", "json", "leak.py"], tmp_path)
    findings = json.loads(proc.stdout)
    assert findings and all(f["verification"]["verdict"] == "not-verifiable" for f in findings), proc.stdout


def test_a_script_against_itself_is_never_confirmed(tmp_path, monkeypatch):
    """A/A end to end: every rule's finding, with a 'fix' that only adds a comment, runs the same code
    twice; neither the witnesses nor the timing (8 rounds, A/A control) may confirm anything."""
    pytest.importorskip("torch")
    from mllint.engine import FileResult
    from mllint.verify.launch import verify
    from mllint.verify.runner import Progress, VerifyOptions

    path = tmp_path / "train.py"
    path.write_text(ALL_BUGS, encoding="utf-8")
    lines = ALL_BUGS.splitlines()
    no_op = Fix(Applicability.SAFE, (Edit(1, 1, 1, 1, "# unchanged\n"),))

    def at(code, text):
        number = next(i for i, line in enumerate(lines, 1) if text in line)
        column = lines[number - 1].index(text) + 1
        return Finding("train.py", number, column, number, column + len(text), code, "n", "m", fix=no_op)

    findings = [at("ML001", "loss.backward()"), at("ML002", "model(x)"), at("ML005", "model(x)"),
                at("ML004", "torch.tensor([[0.5]")]
    findings[2] = Finding("train.py", findings[1].line, findings[1].column, findings[1].end_line,
                          findings[1].end_column, "ML005", "n", "m", fix=no_op)
    monkeypatch.chdir(tmp_path)
    results = [FileResult("train.py", findings, ALL_BUGS)]
    import io

    verdicts = verify(results, VerifyOptions(device="cpu", steps=2, rounds=8, timing=True, timing_budget=120),
                      Progress(io.StringIO()))
    assert len(verdicts) == 4
    for key, verification in verdicts.items():
        assert verification.verdict == "not-confirmed", (key, verification.to_dict())
        assert any(e["metric"].startswith("A/A control") for e in verification.evidence), verification.to_dict()


def test_torch_without_numpy_warns_nothing():
    """torch installed without numpy warns at import ("Failed to initialize NumPy"): neither
    `mllint memory`, the verifier, nor the runs the verifier starts show it."""
    import subprocess
    import sys

    from mllint.verify.runner import _child_env

    code = ("import warnings, sys\nimport {module}\n"
            "warnings.warn(\"Failed to initialize NumPy: No module named 'numpy' (Triggered internally)\", UserWarning)\n")
    for module in ("mllint.memory", "mllint.runtime.device"):
        proc = subprocess.run([sys.executable, "-c", code.format(module=module)], capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stderr == ""
    proc = subprocess.run([sys.executable, "-c", code.format(module="os")], capture_output=True, text=True,
                          env=_child_env())
    assert proc.returncode == 0 and proc.stderr == ""
    plain = subprocess.run([sys.executable, "-c", code.format(module="os")], capture_output=True, text=True)
    assert "Failed to initialize NumPy" in plain.stderr  # what the filter hides
