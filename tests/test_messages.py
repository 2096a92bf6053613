"""Messages fit one terminal line, say what is true for the case at hand, and keep the
rest of the explanation in the finding's detail (JSON, SARIF, --show-source)."""

from __future__ import annotations

import textwrap
import io
import json

import libcst as cst
import pytest

from mllint.engine import FileResult, lint_source
from mllint.findings import Finding
from mllint.registry import all_rules
from mllint.semantics.layers import mode_layers
from mllint.report import REPORTERS, ReportOptions
from mllint.semantics import build_model

MAX_MESSAGE = 110

EXAMPLES = [(code, index, example) for code, rule in all_rules().items() for index, example in enumerate(rule.invalid)]


@pytest.mark.parametrize("code,index,example", EXAMPLES, ids=[f"{c}-{i}" for c, i, _ in EXAMPLES])
def test_invalid_example_messages_are_one_line_with_a_detail(code, index, example):
    rule = all_rules()[code]
    # ML100 judges the other rules' noqa directives: its examples run with every rule
    rules = list(all_rules().values()) if rule.check_noqa else [rule]
    findings = [f for f in lint_source(example.code, "example.py", rules) if f.code == code]
    assert findings
    for finding in findings:
        assert "\n" not in finding.message
        assert len(finding.message) <= MAX_MESSAGE, finding.message
        assert finding.detail and len(finding.detail) > len(finding.message) / 2


def _ml005(*parts: str):
    source = "".join(textwrap.dedent(part).strip("\n") + "\n" for part in parts)
    return [f for f in lint_source(source, "model.py", [all_rules()["ML005"]]) if f.code == "ML005"]


EVALUATE = """
@torch.no_grad()
def evaluate(model, loader):
    return [model(x) for x, _ in loader]
"""


def test_ml005_model_without_dropout_or_batch_norm_says_so():
    (finding,) = _ml005("""
        import torch
        import torch.nn as nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([Block() for _ in range(3)])
                self.head = nn.Sequential(nn.Linear(4, 2), nn.ReLU())
        """, EVALUATE, """
        model = Net().to("cpu")
        evaluate(model, val_loader)
        """)
    assert "no dropout or batch norm" in finding.message
    assert "act as in training" not in finding.message and "acts as in training" not in finding.message
    assert "finding stands" in finding.detail


def test_ml005_nested_submodule_with_batch_norm_is_named():
    (finding,) = _ml005("""
        import torch
        import torch.nn as nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = nn.BatchNorm1d(4)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.Sequential(Block(), nn.Linear(4, 2))
        """, EVALUATE, """
        model = Net()
        evaluate(model, val_loader)
        """)
    assert finding.message.endswith("its batch norm acts as in training")
    assert "running statistics" in finding.detail and "dropout zeroes" not in finding.detail


def test_ml005_unknown_model_is_worded_conditionally():
    (finding,) = _ml005("""
        import torch
        from mylib import Net
        """, EVALUATE, """
        model = Net()
        evaluate(model, val_loader)
        """)
    assert "any dropout/batch norm" in finding.message


def test_ml005_eval_never_undone_without_dropout_says_harmless_today():
    findings = _ml005("""
        import torch
        from torch import nn

        model = nn.Sequential(nn.Linear(4, 2))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            for x, y in train_loader:
                optimizer.zero_grad()
                nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                for x, y in val_loader:
                    val = model(x)
        """)
    (finding,) = [f for f in findings if "never back" in f.message]
    assert "harmless today: no dropout or batch norm" in finding.message
    assert "model.train()" in finding.detail


LAYERS = {
    "in-file class, torch layers only": ("import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n"
                                         "        super().__init__()\n        self.fc = nn.Linear(2, 2)\n"
                                         "model = Net().to('cpu')\n", "model", "<module>", frozenset()),
    "sequential with dropout": ("from torch import nn\nmodel = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1))\n",
                                "model", "<module>", frozenset({"dropout"})),
    "lstm with dropout argument": ("import torch.nn as nn\nmodel = nn.LSTM(2, 2, num_layers=2, dropout=0.2)\n",
                                   "model", "<module>", frozenset({"dropout"})),
    "lstm without": ("import torch.nn as nn\nmodel = nn.LSTM(2, 2)\n", "model", "<module>", frozenset()),
    "transformer layer": ("import torch.nn as nn\nmodel = nn.TransformerEncoderLayer(8, 2)\n", "model", "<module>",
                          frozenset({"dropout"})),
    "functional dropout": ("import torch.nn as nn\nimport torch.nn.functional as F\nclass Net(nn.Module):\n"
                           "    def forward(self, x):\n        return F.dropout(x, 0.5, self.training)\nmodel = Net()\n",
                           "model", "<module>", None),
    "factory from elsewhere": ("import torchvision\nmodel = torchvision.models.resnet18()\n", "model", "<module>", None),
    "imported class": ("from mylib import Net\nmodel = Net()\n", "model", "<module>", None),
    "imported base class": ("from mylib import Base\nclass Net(Base):\n    pass\nmodel = Net()\n", "model",
                            "<module>", None),
    "unknown layer factory in __init__": ("import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n"
                                          "        super().__init__()\n        self.f = nn.Sequential(*make_layers())\n"
                                          "model = Net()\n", "model", "<module>", None),
    "self in a method": ("import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n"
                         "        super().__init__()\n        self.bn = nn.BatchNorm2d(3)\n"
                         "    def predict(self, x):\n        return self(x)\n", "self", "Net.predict",
                         frozenset({"batch norm"})),
    "a module handed to __init__": ("import torch.nn as nn\nclass Net(nn.Module):\n"
                                    "    def __init__(self, backbone, hidden_size: int):\n        super().__init__()\n"
                                    "        self.backbone = backbone\n        self.hidden_size = hidden_size\n"
                                    "model = Net(make_backbone(), 3)\n", "model", "<module>", None),
    "scalars handed to __init__": ("import torch.nn as nn\nclass Net(nn.Module):\n"
                                   "    def __init__(self, n_in, n_out: int):\n        super().__init__()\n"
                                   "        self.n_in = n_in\n        self.fc = nn.Linear(n_in, n_out)\n"
                                   "model = Net(3, 2)\n", "model", "<module>", frozenset()),
    "sequential of a list built elsewhere": ("import torch.nn as nn\nlayers = build()\nmodel = nn.Sequential(*layers)\n",
                                             "model", "<module>", None),
    "sequential of an ordered dict": ("import torch.nn as nn\nfrom collections import OrderedDict\n"
                                      "model = nn.Sequential(OrderedDict([('fc', nn.Linear(2, 2)), ('act', nn.ReLU())]))\n",
                                      "model", "<module>", frozenset()),
    "module list of in-file blocks": ("import torch.nn as nn\nclass Block(nn.Module):\n    def __init__(self, dim):\n"
                                      "        super().__init__()\n        self.fc = nn.Linear(dim, dim)\n"
                                      "class Net(nn.Module):\n    def __init__(self, num_layers, dim: int):\n"
                                      "        super().__init__()\n        self.num_layers = num_layers\n"
                                      "        self.blocks = nn.ModuleList([Block(dim) for _ in range(num_layers)])\n"
                                      "model = Net(2, 8)\n", "model", "<module>", frozenset()),
    "parameter": ("def evaluate(model, x):\n    return model(x)\n", "model", "evaluate", None),
    "instance norm without running statistics": ("import torch.nn as nn\nmodel = nn.Sequential(nn.InstanceNorm2d(3))\n",
                                                 "model", "<module>", frozenset()),
    "instance norm with running statistics": ("import torch.nn as nn\n"
                                              "model = nn.Sequential(nn.InstanceNorm2d(3, track_running_stats=True))\n",
                                              "model", "<module>", None),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_mode_layers(name):
    source, ref, scope, expected = LAYERS[name]
    model = build_model(cst.parse_module(source), source, "x.py")
    got = mode_layers(model, ref, scope)
    if name == "functional dropout":
        assert got is not None and "dropout" in got
    else:
        assert got == expected


def _detailed():
    return [FileResult("t.py", [Finding("t.py", 1, 1, 1, 6, "ML001", "missing-zero-grad", "short message",
                                        detail="The long story, with the fix.")], source="x = 1\n")]


def _render(fmt, **options):
    out = io.StringIO()
    REPORTERS[fmt](_detailed(), ReportOptions(color=False, **options), out)
    return out.getvalue()


def test_detail_is_carried_by_json_sarif_and_show_source_but_not_the_line():
    assert json.loads(_render("json"))[0]["detail"] == "The long story, with the fix."
    sarif = json.loads(_render("sarif"))
    result = sarif["runs"][0]["results"][0]
    assert result["message"]["text"] == "short message"
    assert result["properties"]["detail"] == "The long story, with the fix."
    assert "= note: The long story, with the fix." in _render("text", show_source=True)
    assert "long story" not in _render("text") and "long story" not in _render("concise")


def test_ml005_parameter_is_what_every_caller_passes():
    (finding,) = _ml005("""
        import torch
        from torch import nn
        """, EVALUATE, """
        def main():
            model = nn.Sequential(nn.Linear(16, 8), nn.BatchNorm1d(8), nn.Dropout(0.5))
            return evaluate(model, val_loader)
        """)
    assert finding.message.endswith("its dropout and batch norm act as in training")


def _ml002(source: str):
    source = textwrap.dedent(source).strip("\n") + "\n"
    return [f for f in lint_source(source, "script.py", [all_rules()["ML002"]]) if f.code == "ML002"]


def test_ml002_after_eval_names_the_switch_as_written():
    # the evaluation switched the whole model; the forward runs one of its parts
    findings = _ml002("""
        import torch
        from vae import VAE
        model = VAE()
        model.eval()
        z = torch.randn(16, 20)
        sample = model.decoder(z)
        print(sample.shape)
        """)
    assert findings and all("after `model.eval()`" in f.message for f in findings), [f.message for f in findings]


@pytest.mark.parametrize("test,call,value,condition", [
    ("if not cross_valid:", "run_epoch(model, loader, cross_valid=True)", "cross_valid=True", "not cross_valid"),
    ("if is_train:", "run_epoch(model, loader, is_train=False)", "is_train=False", "is_train"),
    ("if phase == 'train':", "run_epoch(model, loader, phase='val')", "phase='val'", "phase == 'train'"),
])
def test_ml002_shared_epoch_names_the_value_that_evaluates(test, call, value, condition):
    param = test.split()[-1].rstrip(":") if "==" not in test else "phase"
    findings = _ml002(f"""
        import torch
        def run_epoch(model, loader, {param}):
            for x, y in loader:
                loss = model(x).sum()
                {test}
                    loss.backward()
        {call}
        """)
    assert len(findings) == 1, findings
    assert f"also with `{value}`" in findings[0].message, findings[0].message
    assert f"torch.set_grad_enabled({condition})" in findings[0].detail, findings[0].detail
