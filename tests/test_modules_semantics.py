"""semantics/modules.py: which references are known nn.Module instances (ML011's precondition)."""

import textwrap

import libcst as cst

from mllint.semantics import build_model
from mllint.semantics.modules import BOUND, LOCAL_CLASS, NAMED, known_module, overrides_call


def model_of(source: str):
    source = textwrap.dedent(source)
    return build_model(cst.parse_module(source), source, "t.py")


def test_local_module_class_layer_and_spelling():
    m = model_of(
        """
        import torch.nn as nn

        class Net(nn.Module):
            def forward(self, x):
                return x

        class Plain:
            def forward(self, x):
                return x

        class Policy(Net):
            def __call__(self, x):
                return self.forward(x)

        net = Net()
        plain = Plain()
        policy = Policy()
        layer = nn.Linear(2, 2)
        model = load_anything()
        """
    )
    assert known_module(m, "net", "<module>") == LOCAL_CLASS
    assert known_module(m, "plain", "<module>") is None  # a class of the file that is not a module
    assert known_module(m, "layer", "<module>") == BOUND
    assert known_module(m, "model", "<module>") == NAMED  # spelling only, in a file that imports torch
    assert known_module(m, "Net", "<module>") is None  # the class itself
    assert known_module(m, "nn.Linear", "<module>") is None
    assert overrides_call(m, "Policy") and not overrides_call(m, "Net")


def test_spelling_alone_is_not_enough_without_torch():
    m = model_of(
        """
        import numpy as np

        model = load_anything()
        """
    )
    assert known_module(m, "model", "<module>") is None
