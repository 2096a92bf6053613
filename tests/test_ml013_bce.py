"""ML013's sigmoid -> BCEWithLogitsLoss case on a real script: fixtures/ml013_bce.

bad_bce.py ends its model in a sigmoid and trains it with BCEWithLogitsLoss (sigmoid applied
twice); good_bce.py gives the loss the logits. Both run (CPU, seconds); the bad one ends with a
higher loss and a lower accuracy, and mllint reports ML013 in bad_bce.py only, at its two loss
calls, with an unsafe fix that makes the model return the logits."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_fixtures import run_mllint, run_script  # the fixtures' runners, shared

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "ml013_bce"


def _number(label: str, stdout: str) -> float:
    match = re.search(rf"^{label} (\S+)$", stdout, re.MULTILINE)
    assert match, f"no '{label}' line in:\n{stdout}"
    return float(match.group(1))


def test_scripts_run_and_the_sigmoid_one_learns_worse():
    pytest.importorskip("torch")
    good = run_script(FIXTURE / "good_bce.py")
    assert good.returncode == 0, good.stderr
    bad = run_script(FIXTURE / "bad_bce.py")
    assert bad.returncode == 0, bad.stderr
    # sigmoid(sigmoid(z)) > 0.5: the loss stays near its floor (about 0.5 on balanced labels)
    assert _number("final loss", bad.stdout) > 2 * _number("final loss", good.stdout), (bad.stdout, good.stdout)
    assert _number("final loss", bad.stdout) > 0.45
    assert _number("accuracy", bad.stdout) + 0.05 < _number("accuracy", good.stdout)


def test_mllint_reports_the_bad_script_only():
    proc = run_mllint("--format", "json", "--select", "ML013", str(FIXTURE))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = (FIXTURE / "bad_bce.py").read_text(encoding="utf-8").splitlines()
    expected = [n for n, text in enumerate(lines, 1) if "= criterion(" in text]
    findings = json.loads(proc.stdout)
    assert sorted((Path(f["path"]).name, f["line"]) for f in findings) == [("bad_bce.py", n) for n in expected]
    assert all("gets sigmoid output" in f["message"] and "applies its own sigmoid" in f["message"] for f in findings)
    assert all(f["fix"] and f["fix"]["applicability"] == "unsafe" for f in findings)


def test_unsafe_fix_returns_the_logits(tmp_path):
    copy = tmp_path / "bad_bce.py"
    shutil.copy(FIXTURE / "bad_bce.py", copy)
    proc = run_mllint("--select", "ML013", "--fix", "--unsafe-fixes", str(copy))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fixed = copy.read_text(encoding="utf-8")
    compile(fixed, str(copy), "exec")
    assert "        return logit\n" in fixed and "return torch.sigmoid" not in fixed


# --- the semantics: which loss, which kind of output ---------------------------------------------


def _model(source: str):
    import textwrap

    import libcst as cst

    from mllint.semantics import build_model

    source = textwrap.dedent(source)
    return build_model(cst.parse_module(source), source, "t.py")


def test_loss_of_tells_the_three_losses_apart():
    from mllint.semantics.probabilities import BCE_WITH_LOGITS, CROSS_ENTROPY, NLL, loss_of

    m = _model("""
        import torch
        import torch.nn.functional as F
        from torch import nn

        ce = nn.CrossEntropyLoss()
        bce = nn.BCEWithLogitsLoss(pos_weight=w)
        nll = nn.NLLLoss()
        plain = nn.BCELoss()
        fn = F.nll_loss
        ce(a, y); bce(a, y); nll(a, y); plain(a, y); fn(a, y)
        F.binary_cross_entropy_with_logits(a, y); torch.binary_cross_entropy_with_logits(a, y)
        F.binary_cross_entropy(a, y); nn.NLLLoss()(a, y)
    """)
    found = [(m.code_of(call.func), loss_of(m, call.func, ctx.scope)) for call, ctx in m.calls
             if m.code_of(call).endswith("(a, y)")]
    assert found == [("ce", CROSS_ENTROPY), ("bce", BCE_WITH_LOGITS), ("nll", NLL), ("plain", None), ("fn", NLL),
                     ("F.binary_cross_entropy_with_logits", BCE_WITH_LOGITS),
                     ("torch.binary_cross_entropy_with_logits", BCE_WITH_LOGITS),
                     ("F.binary_cross_entropy", None), ("nn.NLLLoss()", NLL)]


def test_sigmoid_origins():
    from mllint.semantics.probabilities import SIGMOID, softmax_origin

    m = _model("""
        import torch
        import torch.nn.functional as F
        from torch import nn

        class Net(nn.Module):
            def forward(self, x):
                return self.fc(x).sigmoid()

        net = Net()
        seq = nn.Sequential(nn.Linear(3, 1), nn.Sigmoid())
        p = torch.sigmoid(z)
        use(p.squeeze(1)); use(F.sigmoid(z)); use(net(x)); use(seq(x)); use(torch.special.expit(z))
        use(z * torch.sigmoid(g)); use(torch.log(p)); use(torch.softmax(z, 1))
    """)
    found = [softmax_origin(m, call.args[0].value, ctx.scope, call, kind=SIGMOID)
             for call, ctx in m.calls if m.code_of(call.func) == "use"]
    assert [None if o is None else m.code_of(o).strip() for o in found] == [
        "torch.sigmoid(z)", "F.sigmoid(z)", "self.fc(x).sigmoid()", "nn.Sigmoid()", "torch.special.expit(z)",
        None, None, None]


# --- a model class of another file of the project ------------------------------------------------

MODELS = '''
import torch
from torch import nn



class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return torch.sigmoid(self.fc(x))


class Probs(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return torch.softmax(self.fc(x), dim=1)
'''


def test_models_of_another_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "models.py").write_text(MODELS)
    # no word "sigmoid" or "softmax" in this file: the project implies it (the screen stays sound)
    (tmp_path / "train.py").write_text(
        "from torch import nn\nfrom models import Detector, Probs\n\n"
        "det = Detector()\nprobs = Probs()\n"
        "a = nn.BCEWithLogitsLoss()(det(x), y)\n"
        "b = nn.NLLLoss()(probs(x), y)\n"
        "c = nn.BCELoss()(det(x), y)\n"
        "d = nn.CrossEntropyLoss()(det(x), y)\n")
    proc = subprocess.run([sys.executable, "-m", "mllint", "--no-cache", "--format", "json", "--exit-zero",
                           "--select", "ML013", "train.py"], cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    findings = json.loads(proc.stdout)
    assert [(f["line"], f["message"].split(": ", 1)[1]) for f in findings] == [
        (6, "it applies its own sigmoid: pass logits"),
        (7, "it expects log-probabilities (log_softmax)"),
    ]
