"""Every rule's fixes against every other rule's findings: on the fixtures and the rules'
examples, with every rule on (as under ``--select ALL``), no fix, safe or unsafe, brings out a
finding of another rule that cannot be fixed with it (``--fix`` would refuse it: the advice of
two rules would contradict each other)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mllint.fixing import fix_source, fix_text
from mllint.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
RULES = all_rules()
ALL = list(RULES.values())


def _sources():
    for path in sorted((ROOT / "fixtures").rglob("*.py")) + sorted((ROOT / "fixtures").rglob("*.ipynb")):
        yield pytest.param(path.read_text(encoding="utf-8"), path.name, id=str(path.relative_to(ROOT)))
    for code, rule in sorted(RULES.items()):
        for index, example in enumerate(rule.invalid):
            yield pytest.param(example.code, "example.py", id=f"{code}-invalid-{index}")


@pytest.mark.parametrize("source,name", list(_sources()))
def test_no_fix_brings_out_a_finding_it_cannot_fix(source, name):
    _, outcome = fix_text(source, name, ALL, unsafe=True)
    conflicts = [f"{f.code} at {f.line}:{f.column}: {reason}" for f, reason in outcome.rejected
                 if reason.startswith("fix introduced a new finding")]
    assert conflicts == []


def test_ml006_advises_what_ml007_accepts():
    """With ML007 on, in a file that trains on a device, ML006's fix writes `loss.detach()`,
    not the `.item()` that ML007 reports on every step; with ML007 off, `.item()`."""
    source = (
        "import torch\n"
        "device = torch.device('cuda')\n"
        "model = torch.nn.Linear(4, 2).to(device)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "running = 0.0\n"
        "for x, y in loader:\n"
        "    opt.zero_grad()\n"
        "    loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    running += loss\n"
        "print(running / len(loader))\n"
    )
    with_ml007 = fix_source(source, "t.py", [RULES["ML006"], RULES["ML007"]], unsafe=True)
    assert "running += loss.detach()" in with_ml007.source and with_ml007.remaining == []
    assert "use `loss.detach()`" in with_ml007.initial[0].message
    alone = fix_source(source, "t.py", [RULES["ML006"]])
    assert "running += loss.item()" in alone.source and "use `loss.item()`" in alone.initial[0].message
