"""semantics/probabilities.py: where a value came out of a softmax, and which callables are cross-entropy."""

from __future__ import annotations

import textwrap

import libcst as cst

from mllint.semantics import build_model
from mllint.semantics.probabilities import is_cross_entropy, softmax_origin


def _model(source: str):
    source = textwrap.dedent(source)
    return build_model(cst.parse_module(source), source, "t.py")


def _loss_calls(m):
    return [(call, ctx) for call, ctx in m.calls if is_cross_entropy(m, call.func, ctx.scope)]


def _origins(source: str):
    m = _model(source)
    out = []
    for call, ctx in _loss_calls(m):
        origin = softmax_origin(m, call.args[0].value, ctx.scope, call)
        out.append(None if origin is None else m.code_of(origin).strip())
    return out


def test_direct_and_through_names_and_shape_methods():
    assert _origins("""
        import torch.nn.functional as F
        p = F.softmax(z, dim=1)
        F.cross_entropy(p.view(-1, 3), y)
        F.cross_entropy(z.softmax(-1), y)
        F.cross_entropy(z, y)
    """) == ["F.softmax(z, dim=1)", "z.softmax(-1)", None]


def test_log_softmax_is_not_softmax_but_exp_of_it_is():
    assert _origins("""
        import torch
        import torch.nn.functional as F
        F.cross_entropy(F.log_softmax(z, 1), y)
        F.cross_entropy(torch.exp(F.log_softmax(z, 1)), y)
        F.cross_entropy(torch.log(F.softmax(z, 1)), y)
    """) == [None, "torch.exp(F.log_softmax(z, 1))", None]


def test_latest_binding_before_the_use_wins():
    assert _origins("""
        import torch
        from torch import nn
        ce = nn.CrossEntropyLoss()
        out = torch.softmax(model(x), 1)
        out = model(x)
        ce(out, y)
    """) == [None]


def test_model_forward_and_sequential_and_tuple_returns():
    assert _origins("""
        import torch.nn.functional as F
        from torch import nn

        class A(nn.Module):
            def forward(self, x):
                return F.softmax(self.fc(x), 1)

        class B(nn.Module):
            def forward(self, x):
                h = self.fc(x)
                return h, F.softmax(h, 1)

        a = A().to("cpu")
        b = B()
        seq = nn.Sequential(nn.Linear(3, 2), nn.Softmax(dim=1))
        ce = nn.CrossEntropyLoss()
        ce(a(x), y)
        ce(b(x)[0], y)
        ce(seq(x), y)
    """) == ["F.softmax(self.fc(x), 1)", None, "nn.Softmax(dim=1)"]


def test_cross_entropy_through_parameters_and_attributes():
    m = _model("""
        from torch import nn
        import torch.nn.functional as F

        class T:
            def __init__(self):
                self.crit = nn.CrossEntropyLoss()
                self.other = nn.MSELoss()

            def step(self, out, y):
                return self.crit(out, y) + self.other(out, y)

        def train(criterion, out, y):
            return criterion(out, y)

        train(nn.CrossEntropyLoss(), o, t)
        fn = F.cross_entropy
        fn(o, t)
    """)
    names = sorted(m.code_of(call.func) for call, _ctx in _loss_calls(m))
    assert names == ["criterion", "fn", "self.crit"]


def test_tuple_elements_of_what_a_model_or_function_returns():
    assert _origins("""
        import torch.nn.functional as F
        from torch import nn

        class Net(nn.Module):
            def forward(self, x):
                logits = self.fc(x)
                return logits, F.softmax(logits, dim=1)

        def heads(x):
            if x is None:
                return None, None
            return x, x.softmax(-1)

        net = Net()
        logits, probs = net(x)
        F.cross_entropy(probs, y)
        F.cross_entropy(logits, y)
        a, b = heads(x)
        F.cross_entropy(b, y)
        c, d, e = net(x)
        F.cross_entropy(e, y)
    """) == ["F.softmax(logits, dim=1)", None, None, None]  # heads: one return is not softmax; 3 names: no match


def test_loop_elements_and_parameter_defaults():
    assert _origins("""
        import torch
        from torch import nn

        def per_row(scores, target, crit=nn.CrossEntropyLoss()):
            probs = torch.softmax(scores, -1)
            for row in probs:
                crit(row, target)
            for row2 in scores:
                crit(row2, target)
    """) == ["torch.softmax(scores, -1)", None]
    # a call in the file that may pass another loss: the default is not known to run
    assert _origins("""
        import torch
        from torch import nn

        def per_row(scores, target, crit=nn.CrossEntropyLoss()):
            crit(torch.softmax(scores, -1), target)

        per_row(s, t, crit=FocalLoss())
    """) == []
    assert _origins("""
        import torch
        from torch import nn

        def per_row(scores, target, crit=nn.CrossEntropyLoss()):
            crit(torch.softmax(scores, -1), target)

        per_row(s, t)
    """) == ["torch.softmax(scores, -1)"]


def test_module_handed_to_a_wrapper_with_a_cross_entropy_criterion():
    from mllint.semantics.probabilities import criterion_for_module

    m = _model("""
        import torch
        from torch import nn

        class Probs(nn.Module):
            def forward(self, x):
                return torch.softmax(self.fc(x), -1)

        class Logits(nn.Module):
            def forward(self, x):
                return self.fc(x)

        a = NeuralNet(Probs, criterion=nn.CrossEntropyLoss)
        b = NeuralNet(module=Probs(), criterion=nn.CrossEntropyLoss())
        c = NeuralNet(Logits, criterion=nn.CrossEntropyLoss)
        d = NeuralNet(Probs, criterion=nn.NLLLoss)
        e = NeuralNet(Probs)
        f = NeuralNet(Imported, criterion=nn.CrossEntropyLoss)
    """)
    found = {}
    for call, _ctx in m.calls:
        hit = criterion_for_module(m, call)
        if hit is not None:
            found[m.code_of(hit[1])] = m.code_of(hit[2]).strip()
    assert found == {"Probs": "torch.softmax(self.fc(x), -1)", "Probs()": "torch.softmax(self.fc(x), -1)"}


def test_a_default_a_subclass_may_override_is_not_known():
    source = """
        import torch
        from torch import nn

        class Base(nn.Module):
            def __init__(self, loss=nn.CrossEntropyLoss()):
                super().__init__()
                self.loss = loss

            def forward(self, s, t):
                return self.loss(torch.softmax(s, -1), t)
    """
    assert _origins(source) == ["torch.softmax(s, -1)"]  # its own super().__init__() is not a caller
    assert _origins(source + """
        class Child(Base):
            def __init__(self):
                super().__init__(loss=nn.NLLLoss())
    """) == []
