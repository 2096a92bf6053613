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


def test_compound_network_names_count_only_with_torch_or_a_library_built_on_it():
    from mllint.semantics.modules import module_word_name

    assert module_word_name("self.encoder_q") and module_word_name("text_encoder") and module_word_name("valueHead")
    assert not module_word_name("self.headers") and not module_word_name("scalar_mix") and not module_word_name("block")
    with_pyro = model_of(
        """
        import pyro

        def guide(self, xs):
            return self.encoder_z.forward(xs)
        """
    )
    assert known_module(with_pyro, "self.encoder_z", "guide") == NAMED
    numpy_only = model_of(
        """
        import numpy as np

        def run(self, xs):
            return self.encoder_z.forward(xs)
        """
    )
    assert known_module(numpy_only, "self.encoder_z", "run") is None
