"""mllint.semantics.invariance: batch loops, loop invariance, and tensors that stay private."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from mllint.semantics import build_model
from mllint.semantics.invariance import analysis, is_inplace_name


def model_of(source: str):
    source = textwrap.dedent(source)
    return build_model(cst.parse_module(source), source, "t.py")


def loop_at(model, header: str):
    """The loop whose first line starts with ``header``."""
    for loop in model.loops:
        if model.code_of(loop.node).lstrip().startswith(header):
            return loop
    raise AssertionError(f"no loop {header!r}")


def expr_in(model, text: str):
    """The expression node whose code is exactly ``text`` (first found)."""
    found = []

    class Finder(cst.CSTVisitor):
        def on_visit(self, node):
            if not found and isinstance(node, cst.BaseExpression) and model.code_of(node).strip() == text:
                found.append(node)
            return not found

    model.module.visit(Finder())
    assert found, text
    return found[0]


# --- batch loops -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source,header",
    [
        ("for x, y in train_loader:\n    pass\n", "for x, y"),
        ("for i, (x, y) in enumerate(tqdm(loader)):\n    pass\n", "for i"),
        ("for batch in data:\n    pass\n", "for batch"),
        ("for inputs, labels in dataloaders[phase]:\n    pass\n", "for inputs"),
        ("for step, inputs in enumerate(epoch_iterator):\n    pass\n", "for step"),
        ("for batch in self.train_dataloader():\n    pass\n", "for batch"),
        ("for xb, yb in get_batches(X, Y):\n    pass\n", "for xb"),
        ("for start in range(0, n, batch_size):\n    pass\n", "for start"),
        ("for i in range(num_batches):\n    pass\n", "for i"),
        ("for i in range(len(X) // args.batch_size):\n    pass\n", "for i"),
        ("from torch.utils.data import DataLoader\ndl = DataLoader(ds)\nfor item in dl:\n    pass\n", "for item"),
        ("for step in range(max_steps):\n    x, y = next(data_iter)\n", "for step"),
        ("for step in range(max_steps):\n    batch = next(iter(train_loader))\n", "for step"),
        ("while True:\n    xb, yb = get_batch('train')\n", "while True"),
        ("for it in range(n_iter):\n    loss = model(x)\n    loss.backward()\n", "for it"),
        ("for samples, targets in metric_logger.log_every(data_loader, 10, header):\n    pass\n", "for samples"),
        ("pbar = tqdm(train_loader, desc='train')\nfor x, y in pbar:\n    pass\n", "for x"),
        ("it = iter(val_dl)\nfor images, labels in it:\n    pass\n", "for images"),
        ("for step in range(n_steps):\n    batch = buffer.sample()\n", "for step"),  # a whole-target batch
        # a training function whose name says test-time is no unit test: no test suite, no assert
        ("def train_and_test(model, loader):\n    for x, y in loader:\n        pass\n", "for x"),
    ],
)
def test_batch_loops(source, header):
    model = model_of(source)
    assert analysis(model).is_batch_loop(loop_at(model, header))


@pytest.mark.parametrize(
    "source,header",
    [
        ("for layer in self.layers:\n    x = layer(x)\n", "for layer"),
        ("for epoch in range(epochs):\n    pass\n", "for epoch"),
        ("for epoch in range(epochs):\n    loss = model(x)\n    loss.backward()\n", "for epoch"),  # full-batch epochs
        ("for batch_size in [16, 32, 64]:\n    pass\n", "for batch_size"),
        ("for b in range(batch_size):\n    pass\n", "for b"),
        ("for batch_idx in range(batch_size):\n    pass\n", "for batch_idx"),
        ("for sample in batch:\n    pass\n", "for sample"),
        ("for path in sorted(glob(loader_dir)):\n    pass\n", "for path"),
        ("for name in loader_names:\n    pass\n", "for name"),
        # post-processing: the items of one batch
        ("for batch_idx, (scores, labels) in enumerate(zip(all_scores, all_labels)):\n    pass\n", "for batch_idx"),
        ("for k, batch_indices in groups.items():\n    pass\n", "for k"),
        # a conditional next() is not how a step loop fetches its batch
        ("for kind, start in groups:\n    if kind:\n        grid = next(grid_iters[kind])\n", "for kind"),
        ("for kind, start in groups:\n    grid = next(grid_iters[kind])\n", "for kind"),  # one of several iterators
        ("for start in range(lookback, end, chunk_length):\n    pass\n", "for start"),  # streaming over time
        ("for x, y in loader:\n    print(x.shape)\n    break\n", "for x"),  # looks at one batch
        # a batch-index vector unpacked with other things, in a loop over tensors to concatenate
        ("for x in xs:\n    batch, arange = batched_arange(x.count)\n", "for x"),
        # loops in unit tests: a few fixed steps or the batches of a toy loader, checked once
        ("import pytest\ndef test_fit():\n    for _ in range(20):\n        loss = model(x)\n        loss.backward()\n", "for _"),
        ("import unittest\nclass TestData(unittest.TestCase):\n    def test_batches(self):\n        for x, y in loader:\n            pass\n", "for x"),
        ("def test_fit():\n    def run():\n        for x, y in train_loader:\n            pass\n    run()\n    assert ok\n", "for x"),
    ],
)
def test_not_batch_loops(source, header):
    model = model_of(source)
    assert not analysis(model).is_batch_loop(loop_at(model, header))


def test_loops_in_init_are_not_batch_loops():
    model = model_of(
        """
        class Net:
            def __init__(self, loader):
                for x in loader:
                    pass
        """
    )
    assert not analysis(model).is_batch_loop(loop_at(model, "for x"))


def test_a_param_fetch_is_not_a_batch_fetch():
    model = model_of("for layer in layers:\n    w = next(layer.parameters())\n")
    assert not analysis(model).is_batch_loop(loop_at(model, "for layer"))


# --- invariance --------------------------------------------------------------------------------

INVARIANCE_SOURCE = """
import math
import torch
import numpy as np

N = 8

class T:
    def fit(self, loader, seq_len, device, cfg, values):
        for x, y in loader:
            n = x.size(0)
            m = n * 2
            self.count = n
            cfg_copy = cfg
            values.append(n)
            self.bump()
            probe(torch.zeros(seq_len, device=device))
            probe(torch.zeros(N, dtype=torch.float32))
            probe(torch.zeros(len(cfg.names), math.ceil(seq_len / 2)))
            probe(torch.tensor([2 ** (-h) for h in range(seq_len)]))
            probe(torch.zeros(self.width))
            probe(np.array([1, 2]))
            probe(torch.zeros(n))
            probe(torch.zeros(m))
            probe(torch.zeros(x.shape[1]))
            probe(torch.zeros(self.count))
            probe(torch.zeros(self.depth))
            probe(torch.tensor(values))
            probe(torch.zeros(get_n()))
            probe(torch.zeros(cfg_copy.k))
            probe(torch.tensor([h for h in range(n)]))

    def bump(self):
        self.depth = 3
"""


@pytest.mark.parametrize(
    "text,expected",
    [
        ("torch.zeros(seq_len, device=device)", True),  # parameters
        ("torch.zeros(N, dtype=torch.float32)", True),  # module names and dtypes
        ("torch.zeros(len(cfg.names), math.ceil(seq_len / 2))", True),  # pure builtins and math
        ("torch.tensor([2 ** (-h) for h in range(seq_len)])", True),  # comprehension over an invariant range
        ("torch.zeros(self.width)", True),  # an attribute nothing assigns in the loop
        ("np.array([1, 2])", True),
        ("torch.zeros(n)", False),  # assigned in the loop from the batch
        ("torch.zeros(m)", False),  # transitively
        ("torch.zeros(x.shape[1])", False),  # the loop target
        ("torch.zeros(self.count)", False),  # an attribute the loop assigns
        ("torch.zeros(self.depth)", False),  # an attribute a method called in the loop assigns
        ("torch.tensor(values)", False),  # a list the loop appends to
        ("torch.zeros(get_n())", False),  # an unknown call
        ("torch.zeros(cfg_copy.k)", False),  # a name the loop binds
        ("torch.tensor([h for h in range(n)])", False),
    ],
)
def test_invariance(text, expected):
    model = model_of(INVARIANCE_SOURCE)
    facts = analysis(model).facts(loop_at(model, "for x, y"))
    assert facts.invariant(expr_in(model, text)) is expected


def test_global_declarations_make_names_variant():
    model = model_of(
        """
        import torch
        size = 3
        def grow():
            global size
            size += 1
        for batch in loader:
            grow()
            t = torch.zeros(size)
        """
    )
    facts = analysis(model).facts(loop_at(model, "for batch"))
    assert not facts.invariant(expr_in(model, "torch.zeros(size)"))


def test_module_functions_do_not_change_the_module():
    model = model_of(
        """
        import torch
        for batch in loader:
            y = torch.sigmoid(batch)
            t = torch.zeros(3, dtype=torch.float16)
        """
    )
    facts = analysis(model).facts(loop_at(model, "for batch"))
    assert facts.invariant(expr_in(model, "torch.zeros(3, dtype=torch.float16)"))


# --- private tensors ---------------------------------------------------------------------------


def _private(body: str, text: str = "torch.zeros(3)") -> bool:
    source = "import torch\n\ndef helper(t):\n    t.fill_(1)\n\ndef reader(t):\n    return t.sum()\n\n" + "for batch in loader:\n" + textwrap.indent(
        textwrap.dedent(body), "    "
    )
    model = model_of(source)
    facts = analysis(model).facts(loop_at(model, "for batch"))
    return facts.stays_private(expr_in(model, text))


@pytest.mark.parametrize(
    "body",
    [
        "t = torch.zeros(3)\nloss = crit(batch, t)\n",
        "loss = crit(batch, torch.zeros(3))\n",
        "t = torch.zeros(3)\nu = t.view(1, 3)\nv = u + 1\nv.add_(1)\n",  # v is a new tensor
        "t = torch.zeros(3)\nacc += t\n",  # t is only read
        "t = torch.zeros(3)\nbuf.copy_(t)\n",  # the source of a copy
        "t = torch.zeros(3)\nreader(t)\n",
        "t = torch.zeros(3)\nt = t + batch\n",  # rebinding, not in place
        "y = torch.cat([batch, torch.zeros(3)])\nout.append(y)\n",  # torch.cat copies
        "y = torch.zeros(3) * n\nout.append(y)\n",  # tensor arithmetic: a new tensor
    ],
)
def test_stays_private(body):
    assert _private(body)


@pytest.mark.parametrize(
    "body",
    [
        "t = torch.zeros(3)\nt.add_(1)\n",
        "t = torch.zeros(3)\nt += batch\n",
        "t = torch.zeros(3)\nt[0] = 1\n",
        "t = torch.zeros(3)\nu = t.view(3, 1)\nu.mul_(2)\n",  # through a view
        "t = torch.zeros(3)\nu = t[1:]\nu[0] = 5\n",  # through a slice
        "t = torch.zeros(3)\ntorch.add(batch, 1, out=t)\n",
        "t = torch.zeros(3)\ntorch.nn.init.normal_(t)\n",
        "t = torch.zeros(3)\nF.relu(t, inplace=True)\n",
        "t = torch.zeros(3)\nhelper(t)\n",  # a local helper that changes its argument
        "t = torch.zeros(3)\nouts.append(t)\n",
        "outs.append(torch.zeros(3))\n",
        "t = torch.zeros(3)\nself.buf = t\n",
        "t = torch.zeros(3)\ncache[key] = t\n",
        "pair = (batch, torch.zeros(3))\npairs.append(pair)\n",
        "t = torch.zeros(3)\nt.requires_grad = True\n",
        "t = torch.zeros(3).fill_(2)\n",
        "t = torch.zeros(3)\nparam = torch.nn.Parameter(t)\nparam.data.uniform_()\n",
        "t = torch.zeros(3)\nstate = Holder(t)\nstates.append(state)\n",
        "t = torch.zeros(3)\ndist.all_reduce(t)\n",  # a collective writes into it
        "t = torch.zeros(3)\narr = t.numpy()\narr.fill(1)\n",  # numpy's in-place methods have no underscore
        "t = torch.zeros(3)\nt.frobnicate()\n",  # an unknown method may change it
        "preds['neck'] = [torch.zeros(3)] * n\n",  # a repeated list holds the same tensor n times
        "ts = [torch.zeros(3)] * n\nouts.append(ts)\n",
        "ts = rest + [torch.zeros(3)]\nself.ts = ts\n",
    ],
)
def test_does_not_stay_private(body):
    assert not _private(body)


def test_returned_or_yielded_tensors_escape():
    source = textwrap.dedent(
        """
        import torch
        def gen(loader):
            for batch in loader:
                yield batch, torch.ones(4)
        def first(loader):
            for batch in loader:
                return torch.ones(5)
        """
    )
    model = model_of(source)
    an = analysis(model)
    assert not an.facts(model.loops[0]).stays_private(expr_in(model, "torch.ones(4)"))
    assert not an.facts(model.loops[1]).stays_private(expr_in(model, "torch.ones(5)"))


def test_inplace_names():
    assert is_inplace_name("add_") and is_inplace_name("zero_") and is_inplace_name("requires_grad_")
    assert not is_inplace_name("__init__") and not is_inplace_name("_private") and not is_inplace_name("add")


def test_fresh_names_avoid_variables_but_not_attributes_or_keywords():
    model = model_of("x.weight = 1\nf(weight=2)\nzeros_3 = 4\n")
    names = analysis(model).names
    assert "zeros_3" in names and "x" in names and "f" in names
    assert "weight" not in names
