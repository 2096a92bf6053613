"""mllint.semantics.schedulers: which names hold a torch LR scheduler, and which scheduler
steps run before the optimizer step they should follow."""

from __future__ import annotations

import textwrap

import libcst as cst

from mllint.semantics import build_model
from mllint.semantics.schedulers import lr_scheduler, steps_ahead


def model_of(source: str):
    source = textwrap.dedent(source)
    return build_model(cst.parse_module(source), source, "t.py")


def test_lr_schedulers_are_identified_by_constructor_annotation_or_name():
    m = model_of(
        """
        import torch
        from diffusers import DDPMScheduler
        from transformers import get_cosine_schedule_with_warmup
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        a = torch.optim.lr_scheduler.StepLR(opt, 2)
        b = get_cosine_schedule_with_warmup(opt, 10, 100)
        c = MyWarmup(opt, 5)
        noise_scheduler = DDPMScheduler(1000)
        scheduler = DDPMScheduler.from_pretrained("x")
        annealer = Annealer()
        """
    )
    assert lr_scheduler(m, "a", "<module>").optimizer == "opt"
    assert lr_scheduler(m, "b", "<module>") is not None
    assert lr_scheduler(m, "c", "<module>") is not None  # handed the optimizer
    assert lr_scheduler(m, "noise_scheduler", "<module>") is None
    assert lr_scheduler(m, "scheduler", "<module>") is None  # bound to a diffusers sampler
    assert lr_scheduler(m, "annealer", "<module>") is None
    assert lr_scheduler(m, "lr_scheduler", "<module>") is not None  # unbound here: by spelling


def test_alias_cycles_do_not_recurse_forever():
    m = model_of(
        """
        a = b
        b = a
        """
    )
    assert lr_scheduler(m, "a", "<module>") is None


def test_steps_ahead_per_batch_per_epoch_and_through_helpers():
    m = model_of(
        """
        import torch
        def train_one_epoch(model, loader, optimizer):
            for x in loader:
                optimizer.step()
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(opt, 2)
        for epoch in range(3):
            sched.step()
            train_one_epoch(net, loader, opt)
        for x in loader:
            sched.step()
            opt.step()
        for x in loader:
            opt.step()
            sched.step()
        """
    )
    found = sorted((s.nested, s.via is not None, s.step is not None) for s in steps_ahead(m))
    assert found == [(False, False, True), (True, True, False)]


def test_unpacked_bindings_use_the_element_or_are_no_evidence():
    m = model_of(
        """
        import torch
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        o1, s1 = opt, torch.optim.lr_scheduler.StepLR(opt, 2)
        o2, s2 = opt, Annealer()
        o3, lr_scheduler = optimizers
        o4, annealer = optimizers
        model, opt, s5 = accelerator.prepare(model, opt, torch.optim.lr_scheduler.StepLR(opt, 2))
        s6 = torch.optim.lr_scheduler.StepLR(opt, 2)
        model, s6 = accelerator.prepare(model, s6)
        """
    )
    assert lr_scheduler(m, "s1", "<module>").optimizer == "opt"  # the element of a literal pair
    assert lr_scheduler(m, "s2", "<module>") is None
    assert lr_scheduler(m, "lr_scheduler", "<module>").evidence == "name"  # unpacked from a value not seen: by name
    assert lr_scheduler(m, "annealer", "<module>") is None
    assert lr_scheduler(m, "s5", "<module>") is None  # not seen, and not spelled as a scheduler
    assert lr_scheduler(m, "s6", "<module>").evidence == "constructor"  # the other binding decides


def test_warmup_guards_are_looked_through_lower_bounds_are_not():
    def found(guard: str):
        m = model_of(
            f"""
            import torch
            opt = torch.optim.SGD(net.parameters(), lr=0.1)
            warmup = torch.optim.lr_scheduler.LambdaLR(opt, lambda it: min(1.0, (it + 1) / 100))
            for epoch in range(1, 10):
                for x, y in loader:
                    if {guard}:
                        warmup.step()
                    opt.zero_grad()
                    net.loss(x, y).backward()
                    opt.step()
            """
        )
        return len(list(steps_ahead(m)))

    assert found("epoch <= args.warm") == 1
    assert found("global_step < len(loader) * 5") == 1
    assert found("args.warm > epoch - 1") == 1
    assert found("global_step < warmup_steps") == 0  # two names: which one counts is a guess
    assert found("epoch > 0") == 0  # the first epoch runs without it: the first rate is used
    assert found("epoch >= args.start") == 0
    assert found("step % 10 == 0") == 0
    assert found("epoch < 0") == 0
