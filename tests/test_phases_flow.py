"""Does this output reach a backward pass? (mllint/semantics/phases/flow.py)"""

from __future__ import annotations

import textwrap

import pytest
from phases_helpers import phases_of

# --- words ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        # a frozen teacher's output feeds the loss
        """
        with torch.no_grad():
            soft = teacher(x)
        loss = kd(student(x), soft)
        loss.backward()
        """,
        # collected in a list and backpropagated after the loop (REINFORCE)
        """
        log_probs = []
        for state in episode:
            log_probs.append(policy(state))
        loss = -torch.stack(log_probs).sum()
        loss.backward()
        """,
        # through a context manager's target
        """
        out = model(x)
        with amp.scale_loss(criterion(out, y), opt) as scaled:
            scaled.backward()
        """,
        # straight into autograd.grad
        """
        grads = torch.autograd.grad(model(x).sum(), x)
        """,
        # stored on self and backpropagated by another method
        """
        class GAN:
            def forward_g(self):
                self.fake = self.netG(self.z)

            def backward_g(self):
                loss = self.crit(self.netD(self.fake), ones)
                loss.backward()
        """,
    ],
)
def test_feeds_backward(source):
    ph = phases_of("import torch\n" + textwrap.dedent(source))
    first = ph.forwards()[0]
    assert ph.feeds_backward(first.node, first.ctx.scope)


def test_feeds_backward_follows_returns_and_stops_at_reassignment():
    ph = phases_of(
        """
        import torch

        def step(model, x, y):
            out = model(x)
            return criterion(out, y)

        def evaluate(model, loader):
            loss = 0
            for x, y in loader:
                loss = criterion(model(x), y)
            return loss

        loss = step(model, x, y)
        loss.backward()
        """
    )
    in_step, in_evaluate = ph.forwards()
    assert ph.feeds_backward(in_step.node, in_step.ctx.scope)
    assert not ph.feeds_backward(in_evaluate.node, in_evaluate.ctx.scope)
    flow = phases_of(
        """
        import torch
        for x, y in train_loader:
            loss = criterion(model(x), y)
            loss.backward()
        loss = criterion(model(x_val), y_val)
        print(loss.item())
        """
    )
    train_forward, val_forward = flow.forwards()
    assert flow.feeds_backward(train_forward.node, train_forward.ctx.scope)
    assert not flow.feeds_backward(val_forward.node, val_forward.ctx.scope)


# --- grad protection ---------------------------------------------------------------------------------------------




# --- training before a point -------------------------------------------------------------------------------


def test_trained_before_counts_earlier_training_and_loops_around_not_later_training():
    ph = phases_of(
        """
        import torch
        from torch import nn

        def fit(net):
            opt = torch.optim.SGD(net.parameters(), lr=0.1)
            opt.zero_grad()
            net(x).sum().backward()
            opt.step()

        fresh = nn.Linear(4, 2)
        fresh(x_test)
        model = nn.Linear(4, 2)
        fit(model)
        model(x_test)
        for epoch in range(3):
            model(x_val)
            fit(model)
        """
    )
    module = [e for e in ph.forwards() if e.ctx.scope == "<module>"]
    assert [e.ref for e in module] == ["fresh", "model", "model"]
    assert not ph.trained_before(module[0])  # only later code trains
    assert ph.trained_before(module[1])  # fit(model) ran before
    assert ph.trained_before(module[2])  # the loop's next iteration comes after fit()
