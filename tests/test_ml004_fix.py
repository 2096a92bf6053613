"""ML004's fix: when it is offered, where the tensor goes, what it is called."""

from __future__ import annotations

import textwrap

from mllint.engine import lint_source
from mllint.fixing import fix_source
from mllint.registry import all_rules

RULE = all_rules()["ML004"]


def findings(source: str):
    return [f for f in lint_source(textwrap.dedent(source).lstrip("\n"), "t.py", [RULE]) if f.code == "ML004"]


def fixed(source: str) -> str:
    outcome = fix_source(textwrap.dedent(source).lstrip("\n"), "t.py", [RULE])
    assert outcome.rejected == []
    compile(outcome.source, "t.py", "exec")
    return outcome.source


def test_no_fix_out_of_a_try_with_handlers():
    found = findings(
        """
        import torch
        for batch in loader:
            try:
                pos = torch.arange(512, device=device)
                loss = model(batch, pos)
            except RuntimeError:
                torch.cuda.empty_cache()
        """
    )
    assert len(found) == 1 and found[0].fix is None


def test_no_fix_out_of_a_default_device_context():
    found = findings(
        """
        import torch
        for batch in loader:
            with torch.device("cuda"):
                mask = torch.ones(8, 8)
            model(batch, mask)
        """
    )
    assert len(found) == 1 and found[0].fix is None


def test_default_dtype_changed_in_the_loop_silences():
    assert not findings(
        """
        import torch
        for batch in loader:
            torch.set_default_dtype(torch.float64 if batch.double else torch.float32)
            w = torch.ones(3)
            model(batch, w)
        """
    )


def test_a_keyword_that_names_a_builtin_is_not_shadowed():
    source = fixed(
        """
        import torch
        for x in loader:
            y = torch.clamp(model(x), min=torch.tensor(0.0, device=device))
        """
    )
    assert "min_tensor = torch.tensor(0.0, device=device)\nfor x in loader:" in source
    assert "min=min_tensor" in source


def test_a_name_bound_before_the_loop_keeps_its_statement_in_the_loop():
    source = fixed(
        """
        import torch
        def run(loader, n):
            mask = None
            for batch in loader:
                mask = torch.ones(n, n)
                model(batch, mask)
            return mask
        """
    )
    assert "    mask_init = torch.ones(n, n)\n    for batch in loader:\n        mask = mask_init\n" in source


def test_nested_batch_loops_hoist_out_of_both():
    source = fixed(
        """
        import torch
        for batch in train_loader:
            for micro in micro_batches:
                scale = torch.tensor([0.5, 2.0])
                model(micro * scale)
        """
    )
    assert source.startswith("import torch\nscale = torch.tensor([0.5, 2.0])\nfor batch in train_loader:")


def test_fixed_source_keeps_comments_with_the_loop_and_blank_lines_above():
    source = fixed(
        """
        import torch

        def train(loader, n, device):
            model.train()

            # the training loop
            for x, y in loader:
                eye = torch.eye(n, device=device)
                step(x, y, eye)
        """
    )
    assert (
        "    model.train()\n\n    eye = torch.eye(n, device=device)\n    # the training loop\n    for x, y in loader:\n"
        in source
    )


def test_the_fix_is_idempotent_and_leaves_no_finding():
    source = """
    import torch
    for i, (x, y) in enumerate(loader):
        w = torch.tensor([1.0, 2.0], device=device)
        loss = crit(model(x), y, weight=torch.full((2,), 0.5, device=device))
    """
    once = fixed(source)
    assert not findings(once)
    assert fixed(once) == once


def test_message_names_the_call():
    (finding,) = findings(
        """
        import torch
        for x in loader:
            pos = torch.arange(64, device=device)
        """
    )
    assert "`torch.arange(64, device=device)`" in finding.detail and finding.line == 3
    assert finding.message.startswith("`torch.arange(...)` builds the same tensor every batch")


def test_a_cpu_scalar_moved_to_a_device_is_reported():
    # one element, but copied host-to-device on every batch: not the cheap CPU scalar
    found = findings(
        """
        import torch
        for batch in loader:
            start = torch.tensor(0.0).to(device)
            same = torch.zeros(()).cuda()
            loss = model(batch, start, same)
        """
    )
    assert len(found) == 2


def test_a_cpu_tensor_of_more_than_one_element_is_reported():
    found = findings(
        """
        import torch
        for batch in loader:
            w = torch.tensor([1.0, 2.0])
            z = torch.zeros(2)
            loss = model(batch, w, z)
        """
    )
    assert len(found) == 2


def test_a_repeat_to_a_fixed_size_is_hoisted_with_its_seed():
    source = fixed(
        """
        import torch
        for batch in loader:
            w = torch.tensor([1.0, 2.0]).repeat(batch_size, 1)
            loss = model(batch, w)
        """
    )
    assert "w = torch.tensor([1.0, 2.0]).repeat(batch_size, 1)\nfor batch in loader:" in source
