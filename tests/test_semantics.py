"""The semantic model on its own: names, roles, loops, grad regions, modes, summaries."""

from __future__ import annotations

import textwrap

import libcst as cst

from mllint.semantics import build_model
from mllint.semantics import roles as R
from mllint.semantics.model import ANY, BACKWARD, CALL, CLEAR, EVAL, FORWARD, STEP, TRAIN


def model_of(source: str):
    source = textwrap.dedent(source)
    return build_model(cst.parse_module(source), source, "t.py")


def kinds(model, kind):
    return [e for e in model.effects if e.kind == kind]


# --- names -----------------------------------------------------------------------------


def test_import_aliases_resolve_to_qualified_names():
    m = model_of(
        """
        import torch as T
        import torch.nn.functional as F
        from torch import no_grad as ng
        from torch.optim import lr_scheduler
        import torch.nn
        """
    )
    q = m.imports.qualify
    assert q("T.no_grad") == "torch.no_grad"
    assert q("F.cross_entropy") == "torch.nn.functional.cross_entropy"
    assert q("ng") == "torch.no_grad"
    assert q("lr_scheduler.StepLR") == "torch.optim.lr_scheduler.StepLR"
    assert q("torch.nn.Linear") == "torch.nn.Linear"
    assert q("unknown.thing") == "unknown.thing"


def test_relative_and_star_imports_do_not_crash():
    m = model_of("from . import utils\nfrom ..models import Net as N\nfrom x import *\n")
    assert m.imports.qualify("N") == "..models.Net"


# --- roles -----------------------------------------------------------------------------


def test_roles_from_constructors_beat_spelling():
    m = model_of(
        """
        import torch
        from torch.utils.data import DataLoader
        class Net(torch.nn.Module):
            pass
        class Config:
            pass
        weird = torch.optim.AdamW(params)
        model = Config()
        net = Net()
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(weird, 10)
        scaler = torch.cuda.amp.GradScaler()
        batches = DataLoader(ds)
        crit = torch.nn.CrossEntropyLoss()
        """
    )
    assert m.has_role("weird", R.OPTIMIZER, "<module>")
    assert not m.has_role("model", R.MODEL, "<module>")  # assigned from a non-Module class: spelling loses
    assert m.has_role("net", R.MODEL, "<module>")
    assert m.has_role("sched", R.SCHEDULER, "<module>") and not m.has_role("sched", R.OPTIMIZER, "<module>")
    assert m.has_role("scaler", R.SCALER, "<module>")
    assert m.has_role("batches", R.LOADER, "<module>")
    assert m.has_role("crit", R.CRITERION, "<module>")
    assert m.classes["Net"].is_module and not m.classes["Config"].is_module


def test_roles_from_spelling_and_annotations():
    m = model_of(
        """
        import torch
        def train(model: torch.nn.Module, opt_thing: torch.optim.Optimizer, optimizerD, val_loader):
            pass
        """
    )
    assert m.has_role("model", R.MODEL, "train")
    assert m.has_role("opt_thing", R.OPTIMIZER, "train")
    assert m.has_role("optimizerD", R.OPTIMIZER, "train")
    assert m.has_role("val_loader", R.LOADER, "train")
    assert R.role_of_name("options") is None and R.role_of_name("model_path") is None


def test_module_subclass_through_local_base():
    m = model_of(
        """
        from torch import nn
        class Base(nn.Module):
            pass
        class Child(Base):
            pass
        c = Child()
        """
    )
    assert m.classes["Child"].is_module
    assert m.has_role("c", R.MODEL, "<module>")


def test_optimizer_parameter_owners_and_aliases():
    m = model_of(
        """
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        net = Net()
        model = DDP(net.to(device))
        opt = torch.optim.SGD([{"params": model.backbone.parameters()}, {"params": head.parameters()}], lr=0.1)
        opt2 = torch.optim.SGD(params, lr=0.1)
        """
    )
    assert m.optimizer_owners("opt", "<module>") == frozenset({"model.backbone", "head"})
    assert m.optimizer_owners("opt2", "<module>") is None  # unknown
    assert m.canonical("model", "<module>") == "net"


def test_optimizer_owners_through_wrappers_growth_and_helpers():
    m = model_of(
        """
        import itertools
        import torch
        a = torch.optim.SGD(filter(lambda p: p.requires_grad, net.parameters()), lr=0.1)
        b = torch.optim.SGD((p for n, p in net.named_parameters() if "bias" not in n), lr=0.1)
        c = torch.optim.SGD(itertools.chain(enc.parameters(), dec.parameters()), lr=0.1)
        d = torch.optim.SGD(list(net.parameters()), lr=0.1)
        e = torch.optim.SGD([p for m in (enc, dec) for p in m.parameters()], lr=0.1)
        grown = [head.weight]
        for p in filter(lambda p: p.requires_grad, net.parameters()):
            grown.append(p)
        grown += list(enc.parameters())
        f = torch.optim.SGD(grown, lr=0.1)
        empty = []
        fill(empty)
        g = torch.optim.SGD(empty, lr=0.1)
        each = [head.weight]
        for m in models:
            each.extend(m.parameters())
        h = torch.optim.SGD(each, lr=0.1)
        k = torch.optim.SGD(enc.parameters(), lr=0.1)
        k.add_param_group({"params": dec.parameters()})

        def train(model, optimizer):
            pass

        def train_global(optimizer):
            pass

        def train_shadowed(optimizer, enc):
            pass

        train(net, a)
        train_global(c)
        train_shadowed(c, other)
        """
    )
    owners = lambda ref, scope="<module>": m.optimizer_owners(ref, scope)
    assert owners("a") == owners("b") == owners("d") == frozenset({"net"})
    assert owners("c") == frozenset({"enc", "dec"})
    assert owners("e") is None  # `m` is the comprehension's own variable
    assert owners("f") == frozenset({"grown", "head.weight", "net", "enc"})
    assert owners("g") is None  # filled where we do not look
    assert owners("h") is None  # grown from a loop variable
    assert owners("k") == frozenset({"enc", "dec"})
    assert owners("optimizer", "train") == frozenset({"model"})  # named as the helper sees it
    assert owners("optimizer", "train_global") == frozenset({"enc", "dec"})  # module-level names
    assert owners("optimizer", "train_shadowed") is None  # its own `enc` is another object


def test_facts_are_scoped_like_python_names():
    m = model_of(
        """
        import torch
        optimizer = torch.optim.Adam(encoder.parameters())
        class Trainer:
            def __init__(self, net):
                self.opt = torch.optim.SGD(net.parameters(), lr=0.1)
            def fit(self):
                pass
        def pretrain(model):
            optimizer = torch.optim.Adam(model.parameters())
        def finetune(head, optimizer=None):
            pass
        def uses_global():
            pass
        """
    )
    assert m.optimizer_owners("optimizer", "pretrain") == frozenset({"model"})
    assert m.optimizer_owners("optimizer", "finetune") is None  # a parameter shadows the global
    assert m.optimizer_owners("optimizer", "uses_global") == frozenset({"encoder"})
    assert m.optimizer_owners("self.opt", "Trainer.fit") == frozenset({"net"})
    assert m.has_role("self.opt", R.OPTIMIZER, "Trainer.fit", by_name=False)


# --- loops ------------------------------------------------------------------------------


def test_loops_nesting_and_iterated_objects():
    m = model_of(
        """
        from tqdm import tqdm
        for epoch in range(10):
            for i, (x, y) in enumerate(tqdm(train_loader)):
                pass
        while True:
            break
        """
    )
    outer, inner, wl = sorted(m.loops, key=lambda l: l.order)
    assert outer.iter_call == "range" and outer.targets == ("epoch",)
    assert inner.parent is outer and inner.iter_ref == "train_loader"
    assert set(inner.targets) == {"i", "x", "y"}
    assert wl.parent is None and outer.encloses(inner) and not inner.encloses(outer)


# --- effects, grad regions, mode switches ----------------------------------------------------


def test_effects_backward_step_clear_forward_modes():
    m = model_of(
        """
        import torch
        model = torch.nn.Linear(2, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.cuda.amp.GradScaler()
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1)
        model.train()
        for x in loader:
            out = model(x)
            scaler.scale(out.sum()).backward()
            scaler.step(optimizer)
            scheduler.step()
            for p in model.parameters():
                p.grad = None
        model.eval()
        model.train(False)
        """
    )
    assert [e.ref for e in kinds(m, STEP)] == ["optimizer"]  # the scheduler's step is not one
    assert len(kinds(m, BACKWARD)) == 1
    assert [e.ref for e in kinds(m, CLEAR)] == [ANY]
    assert [e.ref for e in kinds(m, FORWARD)] == ["model"]
    assert [(e.kind, e.ref) for e in m.effects if e.kind in (EVAL, TRAIN)] == [
        (TRAIN, "model"),
        (EVAL, "model"),
        (EVAL, "model"),
    ]


def test_grad_regions_context_managers_decorators_and_flags():
    m = model_of(
        """
        import torch
        from torch import inference_mode
        @torch.no_grad()
        def evaluate(model, x):
            return model(x)
        def run(model, x, is_train):
            with inference_mode():
                a = model(x)
            with torch.set_grad_enabled(is_train):
                b = model(x)
            with torch.set_grad_enabled(False):
                c = model(x)
            with torch.enable_grad():
                d = model(x)
            return model(x)
        """
    )
    assert m.functions["evaluate"].grad == "off"
    grads = [e.ctx.grad for e in kinds(m, FORWARD) if e.ctx.scope == "run"]
    assert grads == ["off", "flag:is_train", "off", "on", None]


def test_conditional_and_loop_context():
    m = model_of(
        """
        for i, batch in enumerate(loader):
            loss.backward()
            if i % 4 == 0:
                optimizer.step()
        """
    )
    (step,) = kinds(m, STEP)
    (backward,) = kinds(m, BACKWARD)
    assert step.ctx.conditional and not backward.ctx.conditional
    assert step.ctx.loop is backward.ctx.loop is m.loops[0]


# --- summaries ----------------------------------------------------------------------------------


def test_summaries_reach_a_fixpoint_through_helpers_and_recursion():
    m = model_of(
        """
        def clear(o):
            o.zero_grad()
        def inner(m, o, loss):
            loss.backward()
            o.step()
            clear(o)
        def outer(net, opt, l):
            inner(net, opt, l)
        def ping(n):
            pong(n)
        def pong(n):
            ping(n)
            n.eval()
        """
    )
    s = m.summaries
    assert {c.ref for c in s["clear"].clears} == {"o"}
    assert {c.ref for c in s["inner"].clears} == {"o"}
    (step,) = s["outer"].top_steps
    assert step.ref == "opt" and step.covered and step.feeder is not None  # inner clears what it steps
    assert {c.ref for c in s["outer"].clears} == {"opt"} and len(s["outer"].backward_sites) == 1
    assert s["ping"].evals == frozenset({"n"}) and s["pong"].evals == frozenset({"n"})


def test_methods_resolve_through_self_and_instances():
    m = model_of(
        """
        class Trainer:
            def __init__(self, model, optimizer):
                self.model, self.optimizer = model, optimizer
            def step(self, batch):
                self.optimizer.zero_grad()
                self.model(batch).sum().backward()
                self.optimizer.step()
            def fit(self, loader):
                for batch in loader:
                    self.step(batch)
        trainer = Trainer(net, opt)
        trainer.fit(loader)
        """
    )
    calls = [e for e in kinds(m, CALL)]
    assert {e.callee for e in calls} == {"Trainer.step", "Trainer.fit"}
    loop = m.loops[0]
    effects = m.loop_effects(loop)
    assert {(e.kind, e.ref) for e in effects if e.kind in (STEP, CLEAR)} == {
        (STEP, "self.optimizer"),
        (CLEAR, "self.optimizer"),
    }
    assert any(e.kind == BACKWARD for e in effects)


def test_loop_effects_depth_and_closure_steps():
    m = model_of(
        """
        for epoch in range(3):
            optimizer.zero_grad()
            for batch in loader:
                loss = model(batch).sum()
                loss.backward()
                optimizer.step()
        for epoch in range(3):
            def closure():
                optimizer.zero_grad()
                return 1
            optimizer.step(closure)
        """
    )
    first, inner, second = sorted(m.loops, key=lambda l: l.order)
    by_kind = {(e.kind, e.depth) for e in m.loop_effects(first)}
    assert (CLEAR, 0) in by_kind and (STEP, 1) in by_kind
    assert {(e.kind, e.depth) for e in m.loop_effects(inner)} >= {(STEP, 0), (BACKWARD, 0)}
    assert (CLEAR, 0) in {(e.kind, e.depth) for e in m.loop_effects(second)}


def test_conditions_are_compared_by_text_and_coverage():
    from mllint.semantics.model import conds_within, covers

    m = model_of(
        """
        for i, batch in enumerate(loader):
            if i % accum == 0:
                optimizer.zero_grad()
            if train:
                model.zero_grad()
            if train:
                optimizer.step()
            if (i + 1) % accum == 0:
                optimizer.step()
            if i % 100 == 0:
                log(optimizer.zero_grad())
            try:
                pass
            except RuntimeError:
                optimizer.zero_grad()
            for p in model.parameters():
                if p.grad is not None:
                    p.grad = None
        """
    )
    loop = m.loops[0]
    clears = [e for e in m.effects if e.kind == CLEAR]
    steps = [e for e in m.effects if e.kind == STEP]
    conds = lambda e: conds_within(e.ctx.conds, loop)
    modulo_clear, train_clear, log_clear, except_clear, param_clear = clears
    train_step, accum_step = steps
    assert covers(conds(train_clear), "model", conds(train_step), loop.targets)  # same test text
    assert covers(conds(modulo_clear), "optimizer", conds(accum_step), loop.targets)  # same period
    assert not covers(conds(log_clear), "optimizer", conds(accum_step), loop.targets)  # % 100 vs % accum
    assert not covers(conds(except_clear), "optimizer", conds(train_step), loop.targets)
    assert conds(param_clear) == () and covers(conds(param_clear), ANY, conds(train_step))


def test_condition_text_is_normalised_and_conjunctions_cover():
    from mllint.semantics.model import conds_within, covers

    m = model_of(
        """
        for batch in loader:
            if phase == "train":
                optimizer.zero_grad()
            if phase == 'train' and not skip:
                optimizer.step()
        """
    )
    loop = m.loops[0]
    (clear,) = kinds(m, CLEAR)
    (step,) = kinds(m, STEP)
    assert covers(conds_within(clear.ctx.conds, loop), "optimizer", conds_within(step.ctx.conds, loop))


def test_coverage_by_flags_residues_and_the_cleared_object():
    from mllint.semantics.model import conds_within, covers, never_with_period_one

    m = model_of(
        """
        for i, batch in enumerate(loader):
            if i % n == 1:
                optimizer.zero_grad()
            if i % 2 == 1:
                optimizer.zero_grad()
            if self.model_ema is not None:
                self.model.zero_grad()
            if self.model is not None:
                self.model.zero_grad()
            if self.scheduler:
                self.zero_grad()
            if args.step_scheduler:
                optimizer.zero_grad()
            if i % n == 0:
                optimizer.step()
            if i % 2 == 0:
                optimizer.step()
            optimizer.step()
        """
    )
    loop = m.loops[0]
    conds = lambda e: conds_within(e.ctx.conds, loop)
    residue_n, residue_2, ema, same_model, flag_self, flag_counter = kinds(m, CLEAR)
    step_n, step_2, always = kinds(m, STEP)
    # `i % n == 1` never holds when n is 1, while `i % n == 0` always does
    assert never_with_period_one(conds(residue_n)[0], conds(step_n)) == "n"
    assert not covers(conds(residue_n), "optimizer", conds(step_n), loop.targets)
    assert covers(conds(residue_n), "optimizer", conds(step_n), loop.targets, fixed=lambda m: m == "n")
    assert covers(conds(residue_2), "optimizer", conds(step_2), loop.targets)  # a literal period of 2
    # the condition must test the cleared object itself, not a name that shares its spelling
    assert covers(conds(same_model), "self.model", conds(always), loop.targets)
    assert not covers(conds(ema), "self.model", conds(always), loop.targets)
    assert not covers(conds(flag_self), "self", conds(always), loop.targets)
    # a flag the loop never changes counts nothing, even when its name looks like a counter
    assert covers(conds(flag_counter), "optimizer", conds(step_n), loop.targets)
    assert not covers(conds(flag_counter), "optimizer", conds(step_n), loop.targets, invariant=lambda c: True)


# --- what clears gradients, and what a fix may call (ML001) -----------------------------------


def test_torch_optimizers_are_known_by_constructor_annotation_and_call_sites():
    m = model_of(
        """
        import torch
        import pyro
        from apex.optimizers import FusedAdam
        from torch.distributed.optim import DistributedOptimizer
        from helpers import make_opt
        sgd = torch.optim.SGD(model.parameters(), lr=0.1)
        fused = FusedAdam(model.parameters())
        dist = DistributedOptimizer(torch.optim.SGD, rrefs)
        unseen = make_opt(model)
        pyro_opt = pyro.optim.Adam({"lr": 0.1})
        svi = pyro.infer.SVI(model, guide, pyro_opt, loss)
        rebound = torch.optim.Adam(model.parameters())
        rebound = Wrapper(rebound)

        def annotated(opt: torch.optim.Optimizer):
            opt.step()

        def handed(opt):
            opt.step()

        def mixed(opt):
            opt.step()

        handed(sgd)
        handed(fused)
        mixed(sgd)
        mixed(unseen)
        """
    )
    assert m.is_torch_optimizer("sgd", "<module>") and m.is_torch_optimizer("fused", "<module>")
    assert not m.is_torch_optimizer("dist", "<module>") and m.lacks_zero_grad("dist", "<module>")
    assert not m.is_torch_optimizer("unseen", "<module>") and not m.lacks_zero_grad("unseen", "<module>")
    assert not m.is_torch_optimizer("rebound", "<module>")  # also bound to something else
    assert m.is_torch_optimizer("opt", "annotated") and m.is_torch_optimizer("opt", "handed")
    assert not m.is_torch_optimizer("opt", "mixed")
    assert not m.has_role("pyro_opt", R.OPTIMIZER, "<module>") and not m.has_role("svi", R.OPTIMIZER, "<module>")
    assert R.is_torch_optimizer("timm.optim.create_optimizer_v2") and R.is_torch_optimizer("bitsandbytes.optim.AdamW8bit")
    assert not R.is_torch_optimizer("torch.optim.lr_scheduler.StepLR") and not R.is_torch_optimizer("pyro.optim.Adam")


def test_fresh_optimizers_over_fresh_parameters_and_distributed_contexts():
    from mllint.semantics.model import FRESH

    m = model_of(
        """
        import torch
        import torch.distributed.autograd as dist_autograd
        model = Net()
        for fold in folds:
            net = Net()
            fresh = torch.optim.SGD(net.parameters(), lr=0.1)
            stale = torch.optim.SGD(model.parameters(), lr=0.1)
            x = seed.clone()
            tensor_opt = torch.optim.Adam([x])
            alias = model.to(device)
            via_alias = torch.optim.SGD(alias.parameters())
            if warm:
                late = Net()
            late_opt = torch.optim.SGD(late.parameters())
            with dist_autograd.context() as ctx:
                dist_autograd.backward(ctx, [loss])

        def build_and_step(cfg):
            m = cfg.build()
            optim = cfg.optimizer(m)
            optim.step()

        outside = torch.optim.SGD(Net().parameters())
        """
    )
    fresh = {e.ref for e in kinds(m, FRESH)}
    assert fresh == {"fresh", "tensor_opt", ANY, "optim"}
    assert m.summaries["build_and_step"].fresh and all(s.covered for s in m.summaries["build_and_step"].top_steps)


def test_hand_clearing_over_a_collection_clears_the_optimizer_holding_it():
    m = model_of(
        """
        import torch
        tensors = [w, b]
        opt = torch.optim.SGD(tensors, lr=0.1)
        model_opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            for t in tensors:
                t.grad.zero_()
            for q in others:
                q.grad.zero_()
            for x, y in loader:
                x.grad.zero_()
        """
    )
    refs = {e.ref for e in kinds(m, CLEAR)}
    assert refs == {"tensors[*].grad", "others[*].grad", "x.grad"}
    assert m.clears("tensors[*].grad", "opt", "<module>") and m.clears("w.grad", "opt", "<module>")
    assert not m.clears("tensors[*].grad", "model_opt", "<module>")
    assert not m.clears("others[*].grad", "opt", "<module>")
    assert m.clears("others[*].grad", "unknown_opt", "<module>")  # we cannot tell what it holds
    assert not m.clears("x.grad", "unknown_opt", "<module>")  # a batch is not what it holds
    assert not m.clears("loader[*].grad", "unknown_opt", "<module>")


def test_callables_that_clear_count_where_they_are_called():
    m = model_of(
        """
        import torch
        opt = torch.optim.SGD(model.parameters())
        zero = opt.zero_grad
        clear = lambda: opt.zero_grad()
        hooks = [log]
        hooks.append(clear)

        def reset_all():
            model.zero_grad()

        reset = reset_all

        def fit(callback, logger):
            for batch in loader:
                callback()
                logger()

        for batch in loader:
            zero()
            for hook in hooks:
                hook()
            reset()
            log()

        fit(opt.zero_grad, print)
        fit(lambda: opt.zero_grad(), print)
        """
    )
    loop = next(l for l in m.loops if l.scope == "<module>" and l.parent is None)
    effects = m.loop_effects(loop)
    cleared = [m.code_of(e.node) for e in effects if e.kind == CLEAR]
    assert cleared.count("zero()") == 1 and cleared.count("hook()") == 1 and "log()" not in cleared
    assert any(e.kind == CALL and e.callee == "reset_all" for e in m.effects_in("<module>"))
    fit_clears = [e for e in m.effects_in("fit") if e.kind == CLEAR]
    assert {m.code_of(e.node) for e in fit_clears} == {"callback()"} and {e.ref for e in fit_clears} == {ANY}
