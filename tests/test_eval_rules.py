"""ML002 and ML005 together: they share the evaluation-code analysis, so one's fix must not
create the other's finding."""

from __future__ import annotations

import pytest

from mllint.engine import lint_source
from mllint.fixing import fix_source
from mllint.registry import all_rules

RULES = all_rules()
BOTH = [RULES["ML002"], RULES["ML005"]]


def _fixed_examples():
    for code in ("ML002", "ML005"):
        for index, example in enumerate(RULES[code].invalid):
            if example.fixed is not None:
                yield pytest.param(code, example, id=f"{code}-{index}")


@pytest.mark.parametrize("code,example", list(_fixed_examples()))
def test_fixed_invalid_examples_lint_clean_under_both_rules(code, example):
    findings = lint_source(example.fixed, "example.py", BOTH)
    assert findings == [], "\n".join(f"{f.line}: {f.code} {f.message}" for f in findings)


@pytest.mark.parametrize("code,example", list(_fixed_examples()))
def test_fixing_with_both_rules_gives_the_same_text(code, example):
    outcome = fix_source(example.code, "example.py", BOTH)
    assert outcome.rejected == []
    assert outcome.source == example.fixed
    assert [f for f in outcome.remaining if f.code in ("ML002", "ML005")] == []


def test_the_eval_fix_switches_back_to_training_mode_when_evaluation_runs_in_a_training_loop():
    source = (
        "import torch\n"
        "\n"
        "@torch.no_grad()\n"
        "def validate(model, loader):\n"
        "    return [model(x) for x, _ in loader]\n"
        "\n"
        "for epoch in range(10):\n"
        "    for x, y in train_loader:\n"
        "        optimizer.zero_grad()\n"
        "        criterion(model(x), y).backward()\n"
        "        optimizer.step()\n"
        "    validate(model, val_loader)\n"
    )
    outcome = fix_source(source, "example.py", BOTH)
    assert outcome.rejected == []
    assert "    model.eval()\n    return" in outcome.source
    assert "for epoch in range(10):\n    model.train()\n" in outcome.source
    assert lint_source(outcome.source, "example.py", BOTH) == []


def test_a_models_own_predict_calling_self_forward_is_one_ml002_finding():
    # ``self.forward(x)`` is a forward of the model and a call of the local method ``forward``:
    # one site, one finding (also when ``forward`` takes an extra flag)
    for params in ("self, x", "self, x, training=False"):
        source = (
            "import torch\n"
            "from torch import nn\n"
            "\n"
            "class Scorer(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.head = nn.Linear(3, 1)\n"
            "\n"
            f"    def forward({params}):\n"
            "        return self.head(x)\n"
            "\n"
            "    def predict(self, x):\n"
            "        return (self.forward(x)[:, 0] > 0).float()\n"
        )
        found = [(f.line, f.column) for f in lint_source(source, "example.py", [RULES["ML002"]])]
        assert found == [(13, 17)], params
