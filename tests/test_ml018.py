"""ML018 host-tensor-moved-to-device: the fixture pair (fixtures/ml018), the fix, and the
hand-over to ML004 (one finding per allocation).

bad_forward.py builds position ids and a causal mask on the host in ``forward`` and moves
them with ``.to(x.device)``; good_forward.py builds them with ``device=x.device``. Both run
(CPU, seconds); counted per forward pass on a stand-in accelerator, the bad one makes 2 host
allocations and 2 host-to-device copies, the good one none; both reach the same loss."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from mllint.engine import lint_source
from mllint.registry import all_rules

from test_fixtures import run_mllint, run_script  # the fixtures' runners, shared

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "ml018"
RULES = all_rules()


def _number(label: str, stdout: str) -> float:
    match = re.search(rf"^{label} (\S+)$", stdout, re.MULTILINE)
    assert match, f"no '{label}' line in:\n{stdout}"
    return float(match.group(1))


def test_scripts_run_and_only_the_bad_one_copies_from_the_host():
    pytest.importorskip("torch")
    bad = run_script(FIXTURE / "bad_forward.py")
    assert bad.returncode == 0, bad.stderr
    good = run_script(FIXTURE / "good_forward.py")
    assert good.returncode == 0, good.stderr
    assert _number("host-to-device copies per forward", bad.stdout) == 2
    assert _number("host allocations per forward", bad.stdout) == 2
    assert _number("host-to-device copies per forward", good.stdout) == 0
    assert _number("host allocations per forward", good.stdout) == 0
    assert _number("final loss", bad.stdout) == _number("final loss", good.stdout)  # same computation


def test_mllint_reports_the_bad_script_only():
    proc = run_mllint("--format", "json", "--select", "ML018", str(FIXTURE))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = (FIXTURE / "bad_forward.py").read_text(encoding="utf-8").splitlines()
    expected = [n for n, text in enumerate(lines, 1) if " = torch." in text and ").to(x.device)" in text]
    assert len(expected) == 2
    findings = json.loads(proc.stdout)
    assert sorted((Path(f["path"]).name, f["line"]) for f in findings) == [("bad_forward.py", n) for n in expected]
    assert all(f["fix"] and f["fix"]["applicability"] == "safe" for f in findings)


def test_fix_turns_the_bad_forward_into_the_good_one(tmp_path):
    copy = tmp_path / "bad_forward.py"
    shutil.copy(FIXTURE / "bad_forward.py", copy)
    proc = run_mllint("--select", "ML018", "--fix", str(copy))
    assert proc.returncode == 0, proc.stdout + proc.stderr

    def code(text: str) -> str:
        return text[text.index("import torch"):]

    assert code(copy.read_text(encoding="utf-8")) == code((FIXTURE / "good_forward.py").read_text(encoding="utf-8"))


def _codes_by_line(source: str):
    found = {}
    for f in lint_source(textwrap.dedent(source), "t.py", [RULES["ML004"], RULES["ML018"]]):
        found.setdefault(f.line, set()).add(f.code)
    return found


def test_one_finding_per_allocation_with_ml004():
    # invariant arguments: ML004 (build it once before the loop); batch-sized: ML018 (device=)
    found = _codes_by_line(
        """
        import torch
        for epoch in range(10):
            for images, _ in loader:
                real = torch.ones(batch_size, 1).to(device)
                fake = torch.zeros(images.size(0), 1).to(device)
                loss = criterion(D(images.to(device)), real) + criterion(D(G(z)), fake)
                loss.backward()
        """
    )
    assert found == {5: {"ML004"}, 6: {"ML018"}}


def test_no_line_reported_by_both_rules_in_their_examples():
    for code in ("ML004", "ML018"):
        for example in RULES[code].valid + RULES[code].invalid:
            for line, codes in _codes_by_line(example.code).items():
                assert len(codes) == 1, (code, line, example.code)


@pytest.mark.parametrize(
    "source",
    [
        "x = torch.zeros(3).to(torch.float32)",  # dtype only
        "x = torch.zeros(3).to(other)",  # a tensor: device and dtype
        "x = torch.zeros(3).to('cpu')",
        "x = torch.zeros(3, device='cuda').to(device)",
    ],
)
def test_moves_that_are_not_host_to_device_in_forward(source):
    text = f"import torch\nimport torch.nn as nn\nclass N(nn.Module):\n    def forward(self, y):\n        {source}\n        return x\n"
    assert [f for f in lint_source(text, "t.py", [RULES["ML018"]])] == []


def test_messages_say_where_and_random_factories_get_an_unsafe_fix():
    text = textwrap.dedent(
        """
        import torch
        import torch.nn as nn
        class N(nn.Module):
            def forward(self, y):
                noise = torch.randn(y.size(0), 8).cuda(non_blocking=True)
                grid = torch.linspace(0, 1, 5).to(y.device)
                return y + noise, grid
        """
    )
    findings = lint_source(text, "t.py", [RULES["ML018"]])
    assert [f.line for f in findings] == [6, 7]
    assert all("every forward pass" in f.message for f in findings)
    assert all(f.fix is not None and f.fix.applicability.value == "unsafe" for f in findings)
