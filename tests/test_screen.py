"""The ast screen before the LibCST parse (mllint/screen.py): facts, predicates, soundness."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from mllint import screen
from mllint.engine import lint_source, lint_text
from mllint.registry import all_rules

RULES = all_rules()
ALL = list(RULES.values())
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def facts(code: str) -> screen.Facts:
    return screen.facts_of(screen.parse(textwrap.dedent(code)))


def passes(code: str, rule: str) -> bool:
    return rule in screen.passing(textwrap.dedent(code), [RULES[rule]])


# --- facts -----------------------------------------------------------------------------------


def test_facts_calls_and_aliases():
    f = facts(
        """
        import torch.nn.functional as F
        from torch import no_grad as ng, load
        import numpy
        def step(model, x):
            with ng():
                y = F.cross_entropy(model(x), batch["val"])
            opt.step()
            return load(path)
        """
    )
    assert "torch.nn.functional.cross_entropy" in f.call_quals
    assert "torch.no_grad" in f.call_quals and "torch.load" in f.call_quals
    assert f.attr_calls["step"] == 1 and "step" in f.zero_arg_attr_calls
    assert {"model", "ng", "load"} <= f.name_calls
    assert {"cross_entropy", "load", "no_grad", "step"} <= f.call_names
    assert {"val", "model", "x", "F"} <= f.identifiers
    assert {"F", "functional", "ng", "no_grad", "load"} <= f.imported_names and f.function_names == {"step"}
    assert f.imports_module("torch") and f.imports_module("numpy") and not f.imports_module("tensorflow")
    assert not f.has_loop and not f.has_class


def test_facts_loop_calls_follow_the_model_scopes():
    f = facts(
        """
        import torch as T
        zeros = T.ones(3)              # not in a loop
        for x in T.arange(4):          # the iterable is not in the loop
            a = T.zeros(2)
            g = [T.full((2,), i) for i in x]   # a comprehension in the loop: in it
            h = lambda: T.eye(2)               # a lambda's calls count where it is written
            def inner():
                return T.empty(3)      # a nested function's body is not in the loop
            y.new_ones(2)
        while cond(T.linspace(0, 1, 5)):
            pass
        else:
            T.logspace(0, 1, 5)
        """
    )
    assert {"torch.zeros", "torch.full", "torch.eye", "torch.linspace"} <= f.loop_call_quals
    assert not {"torch.ones", "torch.arange", "torch.empty", "torch.logspace"} & f.loop_call_quals
    assert "new_ones" in f.loop_attr_calls
    assert f.has_loop and len(f.for_loops) == 1


def test_relative_and_star_imports_as_the_import_table():
    f = facts("from . import util as u\nfrom torch import *\nimport a.b.c\nu.x()\nzeros(3)\n")
    assert "..util.x" in f.call_quals
    assert "zeros" in f.call_quals  # a star import binds nothing the table knows
    assert f.imports_module("a")


def test_passing_without_ast_passes_every_rule():
    # ``match`` soft keywords and newer syntax are LibCST's to judge; broken code too
    assert set(screen.passing("def f(:\n", ALL)) == set(RULES)


# --- predicates ------------------------------------------------------------------------------


def test_ml001_needs_backward_step_and_loop():
    assert passes("for x in d:\n    model(x).sum().backward()\n    opt.step()\n", "ML001")
    assert passes("for x in d:\n    accelerator.backward(loss)\n    xm.optimizer_step(opt)\n", "ML001")
    assert passes("from torch.autograd import backward as bw\nfor x in d:\n    bw(l)\n    o.step()\n", "ML001")
    assert not passes("# loss.backward() and step(\nfor x in d:\n    opt.step()\n", "ML001")
    assert not passes("loss.backward()\nopt.step()\n", "ML001")


def test_ml002_ml005_need_evaluation_evidence():
    model_file = """
        import torch.nn as nn
        class Block(nn.Module):
            def forward(self, x):
                return self.fc(x)  # a docstring may say test, eval, load or predict
        """
    assert not passes(model_file, "ML002") and not passes(model_file, "ML005")
    for evidence in ("def evaluate(model, x):\n    return model(x)\n",
                     "for x in testloader:\n    out = net(x)\n",
                     "out = net(loaders['val'])\n",
                     "net.eval()\nout = net(x)\n",
                     "net.load_state_dict(sd)\nout = net(x)\n",
                     "net = resnet18(pretrained=True)\nout = net(x)\n",
                     "def main():\n    net = resnet50(weights='IMAGENET1K_V2')\n    return net(x)\n"):
        code = "import torch\n" + evidence
        assert passes(code, "ML002") and passes(code, "ML005"), evidence
    # a training flag switched off at a call: an evaluation for both (ML005: in training mode)
    flag = "import torch\ndef run(model, x, is_train):\n    if is_train:\n        model(x).backward()\n"
    assert passes(flag, "ML002") and passes(flag, "ML005")
    # a string naming an evaluation split handed to a call: get_batch("val")
    assert passes("import torch\nx = get_batch('val')\nnet(x)\n", "ML005")
    # a test suite's test functions are unit tests, not evaluation; elsewhere test() evaluates
    suite = "import torch, pytest\ndef test_forward():\n    assert net(x).shape\n"
    assert not passes(suite, "ML002") and passes(suite.replace("pytest", "os"), "ML002")
    # a load is evidence only where an inference script would be: module level or main()
    helper = "import torch\ndef build(path):\n    net.load_state_dict(torch.load(path))\n    return net(x)\n"
    assert not passes(helper, "ML005") and passes(helper.replace("def build", "def main"), "ML005")
    # a setting word rejects the whole reference (``args.test_batch_size``); a keyword is no reference
    assert not passes("import torch\nnet(x, n=args.test_batch_size, valid=1)\n", "ML002")
    # no torch import and no class: not a torch file
    assert not passes("def evaluate(model, x):\n    return model(x)\n", "ML002")


def test_ml002_output_read_detached_needs_a_call_that_may_be_a_forward():
    # output_evidence: a forward's output read only through a cut (.item(), .argmax(), .numpy())
    for shape in ("print(net(x).argmax(1))\n",
                  "out = net(x)\nprint(out.detach())\n",
                  "out = net(x).cpu()\nprint(out[0].permute(1, 2, 0).numpy())\n",
                  "def show(x):\n    return self.encoder(x)[0].tolist()\n",
                  "def act(s):\n    return (net(s).data * support).sum(1)\n"):
        assert passes("import torch\n" + shape, "ML002"), shape
    # cuts of library values and builtins: no forward can be read there
    for shape in ("dpr = torch.linspace(0, 0.1, 12).tolist()\n",
                  "n = np.array(x).argmax()\n",
                  "import torch.nn.functional as F\nk = F.pad(x, (1, 1)).numpy()\n",
                  "size = len(x).item()\nv = x.item()\n",
                  "w = torch.zeros(3)\nw.detach()\n",
                  "v = torch.ones(2).data\n"):
        assert not passes("import torch\nimport numpy as np\n" + shape, "ML002"), shape
    # a forward is a call given an argument, of a reference (a name, an attribute, a subscript by
    # a constant or a name): not a method of a computed value, nor a call without arguments
    for shape in ("v = x.float().var(0).detach()\n",
                  "m = coords[:, 0].max(0).item()\n",
                  "i = indices.tolist()\n",
                  "w = module.weight.data.clone().detach()\n",
                  "s = Beta(a, a).sample().item()\n"):
        assert not passes("import torch\n" + shape, "ML002"), shape
    for shape in ("o = self.blocks[0](x).detach()\n", "o = heads['cls'](x).argmax(1)\n", "o = net.forward(x).item()\n"):
        assert passes("import torch\n" + shape, "ML002"), shape
    # a name bound from a call that may be a forward and read through a cut in the same function's
    # own body (output_evidence reads the uses in the forward's scope)
    assert passes("import torch\ndef report(x):\n    y = net(x)\n    return y.item()\n", "ML002")
    assert passes("import torch\ny = net(x)\nprint(y.item())\n", "ML002")
    assert not passes("import torch\ny = net(x)\ndef report():\n    return y.item()\n", "ML002")
    assert not passes("import torch\ndef f(x):\n    y = net(x)\n    return y\ndef g(y):\n    return y.item()\n", "ML002")


def test_ml002_ml005_mode_switches_that_are_evidence():
    # x.eval(), x.train(False), x.train(mode=False): the model's EVAL effects
    for switch in ("net.eval()", "net.train(False)", "net.train(mode=False)"):
        assert facts(f"{switch}\n").eval_switch, switch
        assert passes(f"import torch\n{switch}\nout = net(x)\n", "ML002"), switch
    # a submodule following its parent's mode (timm's reset_classifier) sets no known mode:
    # a "maybe" mode event, never evidence of evaluation
    follow = "import torch.nn as nn\nclass Net(nn.Module):\n    def reset(self):\n        self.head.train(self.training)\n"
    assert not facts(follow).eval_switch
    assert not passes(follow, "ML002") and not passes(follow, "ML005")
    assert not facts("net.train()\nnet.train(True)\nnet.eval(x)\n").eval_switch


def test_ml002_ml005_val_words_need_a_reference_that_names_data():
    # ``val``/``valid`` name evaluation data only beside a word for data, or alone
    for code in ("mask = patch_valid & keep\n", "lo = min_val + 1\n", "clip = self.max_val\n"):
        source = "import torch\n" + code
        assert not passes(source, "ML002") and not passes(source, "ML005"), code
    for code in ("out = net(val)\n", "out = net(batch.valid_x)\n", "for b in self.get_val_loader():\n    net(b)\n",
                 "out = net(data['valid'])\n", "out = net(x_valid)\n", "out = net(val_data[i])\n"):
        source = "import torch\n" + code
        assert passes(source, "ML002") and passes(source, "ML005"), code


def test_references_spell_refs_as_the_model():
    refs = facts("y = net(self.a.val_data[0], d['k'], e[i], f[1.5], g(x).h, self.get_test_loader())\n").references()
    assert {"net", "self.a.val_data", "self.a.val_data[0]", "d['k']", "e[i]", "test_loader", "g", "x"} <= refs
    assert not {"f[1.5]", "g.h"} & refs


def test_ml003_needs_a_fit_call():
    assert passes("scaler.fit_transform(X)\n", "ML003")
    assert passes("from sklearn.preprocessing import scale\nX = scale(X)\n", "ML003")
    assert not passes("# .fit( and fit_ and scale(\nfitness = 3\nx.fit_in = 1\n", "ML003")


def test_ml004_needs_a_constructor_in_a_loop_through_aliases():
    assert passes("from torch import zeros as z\nfor b in loader:\n    m = z(3)\n", "ML004")
    assert passes("import torch as T\nwhile True:\n    m = T.tensor([1.0, 2.0])\n", "ML004")
    assert passes("for b in loader:\n    m = b.new_zeros(3)\n", "ML004")
    assert not passes("import torch\nm = torch.zeros(3)\nfor b in loader:\n    pass\n", "ML004")
    assert not passes("import numpy as np\nfor b in loader:\n    m = np.zeros(3)\n", "ML004")
    assert not passes("import torch\nfor b in loader:\n    def f():\n        return torch.ones(2)\n", "ML004")


def test_ml009_needs_an_elementwise_shaped_range_loop():
    assert passes("for i in range(len(x)):\n    out[i] = x[i] * 2\n", "ML009")
    assert passes("for i in range(0, n):\n    for j in range(m):\n        out[i, j] = x[i, j]\n", "ML009")
    assert not passes("for i in range(n):\n    if x[i]:\n        out[i] = 1\n", "ML009")
    assert not passes("for i in range(0, n, 2):\n    out[i] = 1\n", "ML009")
    assert not passes("for i, v in enumerate(x):\n    out[i] = v\n", "ML009")


def test_ml010_needs_torch_load_by_its_qualified_name():
    assert passes("import torch as T\nT.load(p)\n", "ML010")
    assert passes("from torch import load as tl\ntl(p)\n", "ML010")
    assert passes("import torch.serialization\ntorch.serialization.load(p)\n", "ML010")
    assert not passes("import torch, json\njson.load(f)\nmodel.load_state_dict(sd)\n", "ML010")


def test_ml011_ml012_ml013_ml014():
    assert passes("net.forward(x)\n", "ML011") and not passes("net(x)  # .forward(\n", "ML011")
    assert passes("y = self.blocks[0].forward(x)\n", "ML011") and passes("y = self.head.forward(x)\n", "ML011")
    assert not passes("y = super().forward(x)\n", "ML011") and not passes("y = build().forward(x)\n", "ML011")
    assert passes("from torch.nn.utils import clip_grad_norm_ as clip\nclip(p, 1.0)\n", "ML012")
    assert not passes("clip_grad = 1.0\nscaler.scale(loss)\n", "ML012")
    ce = "import torch.nn as nn\nimport torch.nn.functional as F\nloss = nn.CrossEntropyLoss()(F.softmax(x, 1), y)\n"
    assert passes(ce, "ML013")
    assert passes("from torch.nn.functional import cross_entropy as ce, log_softmax as ls\nce(ls(x), y)\n", "ML013")
    assert not passes("# softmax then CrossEntropyLoss\nloss = criterion(x, y)\n", "ML013")
    assert passes("for b in d:\n    sched.step()\n    opt.step()\n", "ML014")
    assert passes("for e in r:\n    sched.step()\n    train_one_epoch(model, opt)\n", "ML014")
    assert not passes("for b in d:\n    sched.step()\n", "ML014")
    assert not passes("for b in d:\n    sched.step(loss)\n    opt.step(closure)\n", "ML014")


# --- soundness: the same findings with and without the screen ---------------------------------


def _examples():
    for code, rule in RULES.items():
        for kind in ("valid", "invalid"):
            for index, example in enumerate(getattr(rule, kind)):
                yield pytest.param(example.code, id=f"{code}-{kind}-{index}")


def _assert_same(findings_off, findings_on, source):
    assert findings_on == findings_off
    # and directly: every rule that reports something passes its own screen
    found = {f.code for f in findings_off}
    assert found - {"ML000", "ML100"} <= set(screen.passing(source, ALL))


@pytest.mark.parametrize("code", list(_examples()))
def test_examples_same_findings_with_and_without_screen(code):
    _assert_same(lint_source(code, "example.py", ALL, screen=False), lint_source(code, "example.py", ALL), code)


FIXTURE_FILES = sorted(p for p in FIXTURES.rglob("*") if p.suffix in (".py", ".ipynb"))


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixtures_same_findings_with_and_without_screen(path):
    text = path.read_text(encoding="utf-8")
    off = lint_text(text, str(path), ALL).findings
    from mllint.semantics.options import ModelOptions

    on_off = lint_text(text, str(path), ALL, ModelOptions(screen=False)).findings
    assert off == on_off
    if path.suffix == ".py":
        _assert_same(lint_source(text, str(path), ALL, screen=False), lint_source(text, str(path), ALL), text)


# --- ML000 unchanged ----------------------------------------------------------------------------


@pytest.mark.parametrize("source", [
    "def f(:\n    pass\n",
    "x = (1,\n",
    "import torch\nfor b in loader:\n    loss.backward(\n",
    "print('a' 'b\n",
    "\0",
])
def test_bad_syntax_same_ml000(source):
    on, off = lint_source(source, "bad.py", ALL), lint_source(source, "bad.py", ALL, screen=False)
    assert on == off and [f.code for f in on] == ["ML000"]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="needs a Python that does not know PEP 695")
def test_newer_syntax_libcst_accepts_is_linted_not_ml000():
    source = "import torch\ntype Alias = int\nfor x in loader:\n    loss.backward()\n    opt.step()\n"
    on, off = lint_source(source, "new.py", ALL), lint_source(source, "new.py", ALL, screen=False)
    assert on == off
    assert "ML000" not in {f.code for f in on}
    assert "ML001" in {f.code for f in on}


def test_ml002_weights_loaded_in_a_plain_function():
    # loaded_here_evidence: a load in a function that is no method and no script main (module
    # level and main() are script_evidence's, which evaluation_possible covers)
    method = "import torch\nclass Wrapper:\n    def restore(self, path):\n        self.opt.load_state_dict(torch.load(path))\n"
    assert not passes(method, "ML002")
    for plain in ("import torch\ndef embed(x):\n    net = Net()\n    net.load_state_dict(torch.load('w.pt'))\n    return net(x)\n",
                  "import torch\nclass A:\n    def m(self):\n        def inner(x):\n            net = AutoModel.from_pretrained('b')\n            return net(x)\n",
                  "import torch\ndef embed(x):\n    get_net().load_state_dict(state)\n"):
        assert passes(plain, "ML002"), plain


def test_ml002_an_optimizer_step_counts_with_a_function_called_at_module_level():
    # after_training_evidence: a plain function the top level calls after something was trained
    stepper = "import torch\nclass Lookahead:\n    def step(self):\n        self.base.step()\n"
    assert not passes(stepper, "ML002")
    script = "import torch\nopt.step()\ndef show(x):\n    return model(x)\nshow(batch)\n"
    assert passes(script, "ML002")
    assert passes("import torch\nloss.backward()\n", "ML002")  # a backward pass: the shared-epoch report
