"""semantics/amp.py: where a clip sees the gradients a GradScaler scaled (ML012's facts)."""

import textwrap

import libcst as cst

from mllint.semantics import build_model
from mllint.semantics.amp import scaled_clips


def clips_of(source: str):
    source = textwrap.dedent(source)
    model = build_model(cst.parse_module(source), source, "t.py")
    return sorted({model.code_of(hit.clip.node).split("(", 1)[0] for hit in scaled_clips(model)})


def test_a_function_handed_the_scaler_clips_what_the_caller_scaled():
    assert clips_of(
        """
        import torch

        def update(net, opt, grad_scaler):
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            grad_scaler.step(opt)
            grad_scaler.update()
        """
    ) == ["torch.nn.utils.clip_grad_norm_"]


def test_a_handed_scaler_that_the_file_calls_is_judged_at_its_callers():
    assert clips_of(
        """
        import torch

        def update(net, opt, grad_scaler):
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            grad_scaler.step(opt)

        scaler = torch.amp.GradScaler()
        for x in loader:
            scaler.scale(net(x).sum()).backward()
            scaler.unscale_(opt)
            update(net, opt, scaler)
        """
    ) == []


def test_unscaling_every_optimizer_in_a_loop_counts_and_an_empty_loop_is_not_a_path():
    assert clips_of(
        """
        import torch

        scaler = torch.amp.GradScaler()
        for x in loader:
            scaler.scale(net(x).sum()).backward()
            for opt in optimizers:
                scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            for opt in optimizers:
                scaler.step(opt)
            scaler.update()
        """
    ) == []


def test_a_loop_that_unscales_only_sometimes_still_leaves_a_scaled_path():
    assert clips_of(
        """
        import torch

        scaler = torch.amp.GradScaler()
        for x in loader:
            scaler.scale(net(x).sum()).backward()
            for opt in optimizers:
                if opt.defaults.get("fused"):
                    scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
        """
    ) == ["torch.nn.utils.clip_grad_norm_"]
