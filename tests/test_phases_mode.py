"""What mode is this model in? (mllint/semantics/phases/mode.py; valid_at from base.py)"""

from __future__ import annotations

from phases_helpers import forward, phases_of


def modes(source: str, ref: str, nth: int = 0):
    ph = phases_of(source)
    return ph.mode_at(forward(ph, ref, nth), ref)


def test_mode_in_the_function_and_through_helpers():
    assert modes("import torch\nmodel.eval()\nmodel(x)\n", "model") == {"eval"}
    assert modes("import torch\nmodel.eval()\nmodel.train()\nmodel(x)\n", "model") == {"train"}
    assert modes("import torch\nmodel.train(False)\nmodel(x)\n", "model") == {"eval"}
    assert modes("import torch\nmodel.train(is_training)\nmodel(x)\n", "model") == {"maybe"}
    assert modes("import torch\nif debug:\n    model.eval()\nmodel(x)\n", "model") == {"maybe"}
    assert modes("import torch\nother.eval()\nmodel = Net()\nmodel(x)\n", "model") == {"train"}
    helper = """
    import torch
    def prepare(m):
        m.eval()
    prepare(model)
    model(x)
    """
    assert modes(helper, "model") == {"eval"}


def test_mode_of_a_parameter_comes_from_the_callers():
    source = """
    import torch
    def evaluate(net, loader):
        return [net(x) for x in loader]
    model = Net()
    model.eval()
    evaluate(model, val_loader)
    model.train()
    evaluate(model, val_loader)
    """
    assert modes(source, "net") == {"eval", "train"}
    lonely = """
    import torch
    def evaluate(net, loader):
        return [net(x) for x in loader]
    """
    assert modes(lonely, "net") == {"none"}


def test_mode_around_loops_reaches_the_next_iteration():
    source = """
    import torch
    model.eval()
    for epoch in range(3):
        with torch.no_grad():
            model(x_val)
        model.train()
        run_epoch(model)
    """
    assert modes(source, "model") == {"eval", "train"}


def test_mode_inside_a_local_context_manager():
    source = """
    import torch
    from contextlib import contextmanager

    @contextmanager
    def evaluating(net):
        net.eval()
        yield
        net.train()

    with evaluating(model):
        model(x)
    model(y)
    """
    assert modes(source, "model", 0) == {"eval"}
    assert modes(source, "model", 1) == {"train"}


def test_initial_mode_from_how_the_model_was_made():
    assert modes("import torch\nfrom transformers import AutoModel\nm = AutoModel.from_pretrained('x')\nm(x)\n", "m") == {
        "eval_initial"
    }
    assert modes("import torch\nmodel = torch.jit.load('m.pt')\nmodel(x)\n", "model") == {"maybe"}
    assert modes("import torch\nmodel = Net().to(device)\nmodel(x)\n", "model") == {"train"}


def test_a_shared_train_val_expression_may_set_either_mode():
    source = """
    import torch
    for phase in ["train", "val"]:
        model.train() if phase == "train" else model.eval()
        model(x)
    """
    assert "maybe" in modes(source, "model")


# --- eval() never undone -----------------------------------------------------------------------------------------


def not_undone(source: str):
    ph = phases_of(source)
    return [(ph.m.code_of(item.event.node), item.ref) for item in ph.eval_not_undone()]


TRAINING = """
import torch
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
"""


def test_eval_in_the_training_loop_never_undone():
    assert not_undone(
        TRAINING
        + """
for epoch in range(10):
    for x, y in train_loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    model.eval()
"""
    ) == [("model.eval()", "model")]


def test_eval_through_a_helper_never_undone_and_undone_by_a_helper():
    helper = """
def validate(net):
    net.eval()
    return [net(x) for x in val_loader]

for epoch in range(10):
    for x, y in train_loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    validate(model)
"""
    assert not_undone(TRAINING + helper) == [("net.eval()", "model")]
    fixed = helper.replace("for epoch in range(10):\n", "for epoch in range(10):\n    model.train()\n")
    assert not_undone(TRAINING + fixed) == []


def test_eval_undone_by_context_managers_teachers_and_breaks():
    cm = """
from contextlib import contextmanager
@contextmanager
def evaluating(net):
    net.eval()
    yield
    net.train()
for epoch in range(10):
    for x, y in train_loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    with evaluating(model):
        model(x_val)
"""
    assert not_undone(TRAINING + cm) == []
    unknown = TRAINING + cm.replace("with evaluating(model):", "with ema.swapped(model):\n        model.eval()")
    assert not_undone(unknown) == []  # an unknown context manager may restore the mode
    teacher = """
for x, y in train_loader:
    teacher.eval()
    optimizer.zero_grad()
    loss = kd(model(x), teacher(x))
    loss.backward()
    optimizer.step()
"""
    assert not_undone(TRAINING + teacher) == []  # the optimizer does not hold the teacher
    last = """
for epoch in range(10):
    for x, y in train_loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    if epoch == 9:
        model.eval()
        break
"""
    assert not_undone(TRAINING + last) == []


# --- classes and names for fixes ----------------------------------------------------------------------------------


def test_valid_at():
    ph = phases_of(
        """
        import torch
        net = Net()
        def evaluate(model, loader):
            local = Net()
            for x in loader:
                inner = Net()
                inner(x)
        """
    )
    assert ph.valid_at("model", "evaluate")
    assert ph.valid_at("net", "evaluate")
    assert not ph.valid_at("local", "evaluate")
    loop = next(l for l in ph.m.loops if l.scope == "evaluate")
    assert ph.valid_at("local", "evaluate", loop.node, loop)
    assert not ph.valid_at("inner", "evaluate", loop.node, loop)


def test_a_model_rewrapped_under_its_own_name_keeps_how_it_was_made():
    # model = DataParallel(model) reads the model assigned before it, not itself
    source = """
        import torch
        import torch.nn as nn
        model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
        if use_cuda:
            model = torch.nn.DataParallel(model).cuda()
        model.load_state_dict(torch.load("weights.pt"))
        out = model(torch.load("input.pt"))
    """
    assert modes(source, "model") == {"train"}


def test_helper_switches_settled_by_constant_arguments():
    helper = """
    import torch
    def set_mode(mode, models):
        for m in models:
            if mode == "train":
                m.train()
            else:
                m.eval()
    set_mode("{mode}", [model])
    model(x)
    """
    assert modes(helper.replace("{mode}", "eval"), "model") == {"eval"}
    assert modes(helper.replace("{mode}", "train"), "model") == {"train"}
    either = """
    import torch
    def switch(m, train=True):
        m.train() if train else m.eval()
    switch(model{args})
    model(x)
    """
    assert modes(either.replace("{args}", ""), "model") == {"train"}  # the default
    assert modes(either.replace("{args}", ", train=False"), "model") == {"eval"}
    assert modes(either.replace("{args}", ", flag"), "model") == {"maybe"}  # not a constant


def flag_evaluations(source: str):
    ph = phases_of(source)
    return [(ph.m.code_of(i.site.node), i.ref, i.in_function) for i in ph.flag_evaluations()]


def test_shared_epoch_function_called_with_its_flag_off():
    source = """
    import torch
    def run_epoch(model, loader, opt, is_train):
        {switch}
        for x, y in loader:
            loss = model(x).mean()
            if is_train:
                opt.zero_grad()
                loss.backward()
                opt.step()
    def main(model, opt, train_loader, val_loader):
        for epoch in range(3):
            model.train()
            run_epoch(model, train_loader, opt, True)
            run_epoch(model, val_loader, opt, {off})
    """
    call = "run_epoch(model, val_loader, opt, False)"
    assert flag_evaluations(source.format(switch="pass", off="False")) == [(call, "model", False)]
    assert flag_evaluations(source.format(switch="model.train()", off="False")) == [(call, "model", True)]
    assert flag_evaluations(source.format(switch="model.train(is_train)", off="False")) == []
    assert flag_evaluations(source.format(switch="model.eval() if not is_train else model.train()", off="False")) == []
    assert flag_evaluations(source.format(switch="pass", off="True")) == []
    assert flag_evaluations(source.format(switch="pass", off="flag")) == []  # not a constant: unknown
