"""semantics/modules.py: which references are known nn.Module instances (ML011's precondition)."""

import textwrap

import libcst as cst

from mllint.semantics import build_model
from mllint.semantics.modules import (
    BOUND,
    LOCAL_CLASS,
    NAMED,
    built_by_other_class,
    iterates_own_parts,
    known_module,
    overrides_call,
    result_asserted,
)


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


def _forward_calls(node):
    found = []

    class V(cst.CSTVisitor):
        def visit_Call(self, call):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "forward":
                found.append(call)

    node.visit(V())
    return found


def test_iterates_own_parts_loops_and_comprehensions():
    body = cst.parse_module(
        textwrap.dedent(
            """
            def forward_decoder(self, tokens, others):
                for i, model in enumerate(self.models):
                    model.decoder.forward(tokens)
                outs = [m.forward(s) for m, s in zip(self.models, tokens)]
                for model in others:
                    model.forward(tokens)
            """
        )
    )
    first, second, third = _forward_calls(body)
    assert iterates_own_parts(body, first, "model")
    assert iterates_own_parts(body, second, "m")
    assert not iterates_own_parts(body, third, "model")  # a loop over a parameter, not self's parts


def test_result_asserted_assert_statement_and_assert_calls():
    body = cst.parse_module(
        textwrap.dedent(
            """
            def check(a, b, c, x):
                out = a.forward(x)
                assert out.shape == (2, 3)
                torch.testing.assert_close(b.forward(x), out)
                loss = c.forward(x).sum()
                loss.backward()
            """
        )
    )
    first, second, third = _forward_calls(body)
    assert result_asserted(body, first) and result_asserted(body, second)
    assert not result_asserted(body, third)


def test_built_by_other_class_class_method_constructor():
    m = model_of(
        """
        import torch
        from transformers import GPT2LMHeadModel
        from optimum.neuron import NeuronModelForCausalLM

        class RuntimeLM(NeuronModelForCausalLM):
            pass

        class MyLM(GPT2LMHeadModel):
            pass

        class Runner:
            def __init__(self, path):
                self.model = RuntimeLM.from_pretrained(path)
                self.lm = MyLM.from_pretrained(path)

            def run(self, x):
                return self.model.forward(x), self.lm.forward(x)
        """
    )
    assert built_by_other_class(m, "self.model", "Runner.run")
    assert known_module(m, "self.model", "Runner.run") is None
    assert not built_by_other_class(m, "self.lm", "Runner.run")  # derives from a known model class
