"""The project model (mllint/project/): facts, imports across files, and what the rules see
of the rest of a project when one file is linted (as pre-commit hands over one changed file)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from cli_helpers import run
from mllint.project import find_root, forget
from mllint.project.facts import facts_of_source
from mllint.project.index import Project, module_names
from mllint.project.store import load_facts

MODELS = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.fc(x))


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x)


class LogProbs(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return nn.functional.log_softmax(self.fc(x), dim=1)


class Wrapper(object):
    def __init__(self, fn):
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


class Deep(Net):
    pass
"""

UTILS = """\
import torch


def evaluate(model, loader):
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
    return correct


def validate(model, loader):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += model(x).sum().item()
    return total


def predict_scores(model, x):
    return model(x).softmax(-1)
"""

TRAIN = """\
import torch
from .models import Net
from .utils import evaluate, validate, predict_scores


def main(train_loader, val_loader):
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.train()
    for epoch in range(10):
        for x, y in train_loader:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        print(evaluate(model, val_loader))
        print(validate(model, val_loader))
    model.eval()
    with torch.no_grad():
        print(predict_scores(model, torch.ones(2, 3)))
"""


def make_project(root: Path, files: dict, marker: str = "pyproject.toml") -> Path:
    (root / marker).write_text("")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def lint_json(root: Path, *paths: str, extra=()) -> list:
    proc = run(["--no-cache", "--format", "json", "--exit-zero", *extra, *paths], root)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def codes_at(findings: list, path_end: str) -> list:
    return sorted((f["code"], f["line"]) for f in findings if f["path"].replace("\\", "/").endswith(path_end))


# --- facts and index ---------------------------------------------------------------------------

def test_facts_read_classes_functions_and_calls():
    facts = facts_of_source(MODELS + "\n" + UTILS)
    classes = {c.name: c for c in facts.classes}
    assert classes["Net"].layers == {"dropout"} and classes["Plain"].layers == frozenset()
    assert classes["LogProbs"].forward_returns == "log_softmax"
    assert classes["Net"].forward_returns is None
    functions = {f.key: f for f in facts.functions}
    assert functions["validate"].evals == {"model"} and not functions["validate"].trains
    assert functions["evaluate"].evals == frozenset()
    assert "torch" in facts.frameworks


def test_calls_know_grad_mode_loops_and_evals_before():
    facts = facts_of_source(TRAIN)
    calls = {c.callee: c for c in facts.calls}
    assert calls["evaluate"].train_loop and not calls["evaluate"].loop_trains and not calls["evaluate"].grad_off
    assert calls["predict_scores"].grad_off and "model" in calls["predict_scores"].evals_before
    assert calls["evaluate"].args == ("model", "val_loader")


def test_module_names_and_resolution(tmp_path):
    make_project(tmp_path, {"pkg/__init__.py": "from .models import Net\n", "pkg/models.py": MODELS,
                            "pkg/utils.py": UTILS, "pkg/train.py": TRAIN, "scripts/run.py": "from models import Net\n",
                            "scripts/models.py": "class Net(object):\n    pass\n"})
    rels = ["pkg/__init__.py", "pkg/models.py", "pkg/utils.py", "pkg/train.py", "scripts/run.py", "scripts/models.py"]
    facts, _, _ = load_facts(str(tmp_path), rels, None)
    project = Project(str(tmp_path), facts)
    assert module_names("pkg/models.py") == ["pkg.models", "models"]
    assert project.resolve(".models.Net", "pkg/train.py").rel == "pkg/models.py"
    assert project.resolve("pkg.Net", "pkg/train.py").rel == "pkg/models.py"  # re-exported by __init__
    # a script's own folder comes first: scripts/run.py's ``models`` is scripts/models.py
    assert project.resolve("models.Net", "scripts/run.py").rel == "scripts/models.py"
    net = project.classes_of("pkg/models.py")["Deep"]
    assert project.is_module("pkg/models.py", net) is True
    assert project.mode_layers("pkg/models.py", net) == {"dropout"}
    assert project.is_module("pkg/models.py", project.classes_of("pkg/models.py")["Wrapper"]) is False
    callers = project.callers("pkg/utils.py", "validate")
    assert [(rel, call.line) for rel, call in callers] == [("pkg/train.py", 17)]


def test_store_reuses_facts_until_the_content_changes(tmp_path):
    make_project(tmp_path, {"a.py": "import torch\n"})
    cache = tmp_path / "cache"
    first, hashes, _ = load_facts(str(tmp_path), ["a.py"], str(cache))
    assert "torch" in first["a.py"].frameworks and list((cache / "project").iterdir())
    again, _, _ = load_facts(str(tmp_path), ["a.py"], str(cache))
    assert again["a.py"] == first["a.py"]
    (tmp_path / "a.py").write_text("import tensorflow\n")
    changed, new_hashes, _ = load_facts(str(tmp_path), ["a.py"], str(cache))
    assert changed["a.py"].frameworks == {"tensorflow"} and new_hashes["a.py"] != hashes["a.py"]


def test_facts_computed_in_this_process_when_a_pool_does_not_pay(tmp_path, monkeypatch):
    """One CPU (or few files): the facts are computed here, with the same entries (header,
    pickled facts, digest of the bytes) as a worker gives; a touched file keeps its facts."""
    import hashlib
    import os

    import mllint.project as project

    make_project(tmp_path, {f"m{i}.py": f"import torch\nX{i} = torch.zeros({i})\n" for i in range(70)})
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    rels = [f"m{i}.py" for i in range(70)]
    facts, hashes, _ = load_facts(str(tmp_path), rels, str(tmp_path / "cache"), project._compute_in_pool)
    assert len(facts) == 70 and "torch" in facts["m3.py"].frameworks
    assert hashes["m3.py"] == hashlib.sha256((tmp_path / "m3.py").read_bytes()).hexdigest()
    os.utime(tmp_path / "m3.py", ns=(1, 1))  # touched, not changed: the stored facts stand
    again, again_hashes, _ = load_facts(str(tmp_path), rels, str(tmp_path / "cache"), project._compute_in_pool)
    assert again["m3.py"] == facts["m3.py"] and again_hashes == hashes


def test_facts_of_a_small_project_stay_decoded_a_large_ones_keep_a_window(tmp_path, monkeypatch):
    """Each file's facts are unpickled once in a project that fits KEEP_ALL_BYTES; in a larger
    one at most KEEP stay decoded (the oldest is read again when asked for)."""
    import pickle

    from mllint.project import store

    make_project(tmp_path, {f"m{i}.py": f"import torch\nX{i} = torch.zeros({i})\n" for i in range(5)})
    rels = [f"m{i}.py" for i in range(5)]
    loads, unpickle = [], pickle.loads
    monkeypatch.setattr(store.pickle, "loads", lambda data: loads.append(1) or unpickle(data))
    monkeypatch.setattr(store.LazyFacts, "KEEP", 2)
    small, _, _ = load_facts(str(tmp_path), rels, str(tmp_path / "cache"))
    for _ in range(2):
        assert all("torch" in small[rel].frameworks for rel in rels)
    assert len(loads) == 5
    monkeypatch.setattr(store.LazyFacts, "KEEP_ALL_BYTES", 10)
    loads.clear()
    large, _, _ = load_facts(str(tmp_path), rels, str(tmp_path / "cache"))
    for _ in range(2):
        assert all("torch" in large[rel].frameworks for rel in rels)
    assert len(loads) == 10 and len(large._decoded) == 2


def test_find_root(tmp_path):
    make_project(tmp_path, {"src/pkg/a.py": "x = 1\n"}, marker="setup.cfg")
    assert find_root(str(tmp_path / "src" / "pkg" / "a.py")) == str(tmp_path)


# --- rules across files (the real command, one file named as pre-commit does) -------------------

@pytest.fixture
def project(tmp_path):
    forget()
    return make_project(tmp_path, {"pkg/__init__.py": "", "pkg/models.py": MODELS, "pkg/utils.py": UTILS,
                                    "pkg/train.py": TRAIN})


def test_helper_that_leaves_eval_mode_in_another_file(project):
    found = lint_json(project, "pkg/train.py")
    assert codes_at(found, "pkg/train.py") == [("ML005", 17)]
    finding = found[0]
    assert "validate()" in finding["message"]
    # its fix (train mode back after validate()) would show that evaluate() then gets a model in
    # training mode, which has no safe fix: --fix refuses it, so the report does not offer it
    assert finding["fix"] is None
    diff = run(["--no-cache", "--diff", "pkg/train.py"], project)
    assert "ML005 fix not applied: fix introduced a new finding: ML005" in diff.stderr and "`evaluate()`" in diff.stderr


def test_eval_helper_fix_is_unsafe_when_callers_go_on_training(project):
    found = lint_json(project, "pkg/utils.py")
    assert codes_at(found, "pkg/utils.py") == [("ML005", 8)]  # predict_scores: its caller protects it
    assert found[0]["fix"]["applicability"] == "unsafe"
    assert "pkg/train.py:16" in found[0]["fix"]["message"] or "pkg/train.py:16" in json.dumps(found[0])


def test_alone_the_same_file_is_judged_as_before(tmp_path):
    (tmp_path / "utils.py").write_text(UTILS)  # no project marker: the file alone
    found = lint_json(tmp_path, "utils.py")
    assert ("ML002", 22) in codes_at(found, "utils.py")
    assert [f["fix"]["applicability"] for f in found if f["line"] == 8] == ["safe"]


def test_class_from_another_file_that_is_no_module_gets_no_forward_finding(tmp_path):
    forget()
    make_project(tmp_path, {"models.py": MODELS, "run.py": """\
        import torch
        from models import Wrapper, Net

        w = Wrapper(lambda x: x)
        y = w.forward(torch.ones(3))
        net = Net()
        z = net.forward(torch.ones(3))
        """})
    found = lint_json(tmp_path, "run.py")
    assert codes_at(found, "run.py") == [("ML011", 7)]
    assert found[0]["fix"]["applicability"] == "safe"  # Net is a module: the project says so


def test_trainer_without_torch_import_of_its_own(tmp_path):
    forget()
    make_project(tmp_path, {"models.py": MODELS, "loop.py": """\
        from models import Net

        def evaluate(net, loader):
            total = 0
            for x in loader:
                total += net(x).sum()
            return total

        net = Net()
        print(evaluate(net, test_loader))
        """})
    found = lint_json(tmp_path, "loop.py")
    assert codes_at(found, "loop.py") == [("ML002", 6), ("ML005", 6)]
    assert "dropout" in next(f for f in found if f["code"] == "ML005")["message"]  # Net's layers, from models.py


def test_star_imports_of_the_project_bind_torch_and_its_helpers(tmp_path):
    # an agent written against ``from ..network import *`` (which star-imports a module that
    # imports torch): torch code, and the names it gets that way resolve to their files
    forget()
    make_project(tmp_path, {
        "rl/__init__.py": "",
        "rl/network/__init__.py": "from .utils import *\nfrom .heads import *\n",
        "rl/network/utils.py": "import torch\nimport torch.nn as nn\n\ndef to_np(t):\n    return t.cpu().detach().numpy()\n",
        "rl/network/heads.py": MODELS,
        "rl/agent/dqn.py": """\
            from ..network import *


            class Agent:
                def __init__(self, network):
                    self.network = network

                def eval_step(self, state):
                    q = self.network(state)
                    return to_np(q.argmax(-1))

                def act(self, state):
                    with torch.no_grad():
                        return self.network(state).argmax(-1)
            """,
        "rl/agent/plain.py": "from os.path import *\n\ndef evaluate(net, x):\n    return net(x)\n",
    })
    found = lint_json(tmp_path, "rl/agent/dqn.py")
    assert codes_at(found, "rl/agent/dqn.py") == [("ML002", 9), ("ML005", 9)]  # torch.no_grad() in act() is known
    # a star import of something that is not the project's torch code makes no torch file
    assert codes_at(lint_json(tmp_path, "rl/agent/plain.py"), "rl/agent/plain.py") == []
    rels = [str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.py")]
    facts, _, _ = load_facts(str(tmp_path), rels, None)
    project = Project(str(tmp_path), facts)
    assert project.star_modules("rl/agent/dqn.py") == ("rl/network/__init__.py",)
    assert project.star_torch("rl/agent/dqn.py") and not project.star_torch("rl/agent/plain.py")
    assert project.resolve("to_np", "excluded/elsewhere.py") is None  # a file the facts leave out
    found = project.resolve("..network.to_np", "rl/agent/dqn.py")
    assert found is not None and (found.rel, found.kind) == ("rl/network/utils.py", "function")
    call = next(c for c in project.facts["rl/agent/dqn.py"].calls if c.callee == "to_np")
    assert project.called("rl/agent/dqn.py", call).rel == "rl/network/utils.py"


def test_model_handed_to_a_project_base_class_of_another_file(tmp_path):
    # ``self.model = model`` in a base class of another file (a plain class, though named like a
    # model): the subclass's validation step runs the caller's model in the mode it was left in
    forget()
    make_project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/base.py": "class BaseModel:\n    def __init__(self, model):\n        self.model = model\n",
        "pkg/switching.py": textwrap.dedent("""\
            class BaseModel:
                def __init__(self, model):
                    self.model = model

                def eval_mode(self):
                    self.model.eval()
            """),
        "pkg/model.py": textwrap.dedent("""\
            import torch
            from pkg.base import BaseModel


            class Model(BaseModel):
                def val_step(self, x):
                    return self.model(x)

                def val_epoch(self, loader):
                    for x, y in loader:
                        with torch.no_grad():
                            self.val_step(x)
            """),
    })
    (tmp_path / "pkg" / "other.py").write_text(
        (tmp_path / "pkg" / "model.py").read_text().replace("pkg.base", "pkg.switching"))
    assert codes_at(lint_json(tmp_path, "pkg/model.py"), "pkg/model.py") == [("ML005", 7)]
    # a base that switches the model itself: its mode is that base's business
    assert codes_at(lint_json(tmp_path, "pkg/other.py"), "pkg/other.py") == []


def test_a_project_class_named_module_is_not_torchs(tmp_path):
    # a course's numpy ``class Module(object)``: its subclasses are no nn.Modules, and a
    # notebook importing them is no torch code
    forget()
    make_project(tmp_path, {
        "modules.py": "import numpy as np\n\n\nclass Module(object):\n    def forward(self, x):\n        return x\n\n\n"
                      "class Sequential(Module):\n    pass\n",
        "run.py": "from modules import Sequential\n\nnet = Sequential()\nnet.train()\nfor x in X_val:\n    print(net.forward(x))\n",
    })
    facts, _, _ = load_facts(str(tmp_path), ["modules.py", "run.py"], None)
    project = Project(str(tmp_path), facts)
    assert project.is_module("modules.py", project.classes_of("modules.py")["Sequential"]) is False
    assert codes_at(lint_json(tmp_path, "run.py"), "run.py") == []


def test_generate_of_a_project_model_class_is_that_method(tmp_path):
    # the project's own model class defines generate(), which sets eval mode and restores it:
    # not HF's generate running the model in whatever mode it is in
    forget()
    make_project(tmp_path, {
        "models.py": textwrap.dedent("""\
            import torch
            from torch import nn


            class Vocoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.net = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))

                def forward(self, x):
                    return self.net(x)

                def generate(self, mels):
                    self.eval()
                    with torch.no_grad():
                        out = self(mels)
                    self.train()
                    return out
            """),
        "gen.py": textwrap.dedent("""\
            import torch
            from models import Vocoder


            def gen_testset(model: Vocoder, test_set):
                for x in test_set:
                    print(model.generate(x))


            if __name__ == "__main__":
                model = Vocoder()
                model.load_state_dict(torch.load("voc.pt", weights_only=True))
                gen_testset(model, [torch.ones(2, 4)])
            """),
    })
    assert codes_at(lint_json(tmp_path, "gen.py"), "gen.py") == []


def test_model_handed_in_training_mode_to_a_star_imported_evaluation_helper(tmp_path):
    # ``from utils import *`` binds evaluate_model(); the model's own epoch loop hands itself to
    # it every 100 batches and switches back to training mode only after it
    forget()
    make_project(tmp_path, {
        "utils.py": textwrap.dedent("""\
            import torch


            def evaluate_model(model, iterator):
                hits = 0
                for x, y in iterator:
                    hits += (model(x).argmax(1) == y).sum().item()
                return hits
            """),
        "model.py": textwrap.dedent("""\
            import torch
            from torch import nn
            from utils import *


            class TextCNN(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Sequential(nn.Linear(8, 2), nn.Dropout(0.5))

                def forward(self, x):
                    return self.fc(x)

                def run_epoch(self, train_iterator, val_iterator):
                    for i, (x, y) in enumerate(train_iterator):
                        self.optimizer.zero_grad()
                        loss = nn.functional.cross_entropy(self(x), y)
                        loss.backward()
                        self.optimizer.step()
                        if i % 100 == 0:
                            print(evaluate_model(self, val_iterator))
                            self.train()
            """),
    })
    found = lint_json(tmp_path, "model.py", extra=["--select", "ML005"])
    assert codes_at(found, "model.py") == [("ML005", 21)]
    assert "evaluate_model" in found[0]["message"]


def test_template_method_of_a_base_class_elsewhere_switches_the_network_first(tmp_path):
    # the base class (another file) runs ``self.eval()`` (its own: ``self._network.eval()``) and
    # then ``self._eval_task(loader)``, which the subclass implements with self._network
    forget()
    make_project(tmp_path, {
        "learners/__init__.py": "",
        "learners/base.py": textwrap.dedent("""\
            class IncrementalLearner:
                def eval(self):
                    self._network.eval()

                def eval_task(self, loader):
                    self.eval()
                    return self._eval_task(loader)
            """),
        "learners/lwf.py": textwrap.dedent("""\
            import torch
            from learners.base import IncrementalLearner


            class LwF(IncrementalLearner):
                def __init__(self, network):
                    self._network = network

                def _eval_task(self, loader):
                    preds = []
                    for x, y in loader:
                        with torch.no_grad():
                            preds.append(self._network(x).argmax(1))
                    return preds
            """),
    })
    assert codes_at(lint_json(tmp_path, "learners/lwf.py"), "learners/lwf.py") == []


def test_mode_layers_of_a_model_defined_elsewhere(tmp_path):
    forget()
    make_project(tmp_path, {"models.py": MODELS, "ev.py": """\
        import torch
        from models import Plain

        model = Plain()
        model.load_state_dict(torch.load("w.pt", weights_only=True))
        with torch.no_grad():
            for x in test_loader:
                print(model(x))
        """})
    found = lint_json(tmp_path, "ev.py")
    assert [f["message"] for f in found if f["code"] == "ML005"] and all(
        "harmless today" in f["message"] for f in found if f["code"] == "ML005")


def test_cache_sees_a_change_in_another_file(tmp_path):
    forget()
    make_project(tmp_path, {"pkg/__init__.py": "", "pkg/models.py": MODELS, "pkg/utils.py": UTILS,
                            "pkg/train.py": TRAIN})
    first = run(["--format", "json", "--exit-zero", "pkg/train.py"], tmp_path)
    assert ("ML005", 17) in codes_at(json.loads(first.stdout), "pkg/train.py")
    # the helper now restores the mode: the cached result of train.py must not be reused
    (tmp_path / "pkg/utils.py").write_text(UTILS.replace("    return total\n", "    model.train()\n    return total\n"))
    second = run(["--format", "json", "--exit-zero", "pkg/train.py"], tmp_path)
    assert codes_at(json.loads(second.stdout), "pkg/train.py") == []


BASE_POLICY = """\
import torch
import torch.nn as nn


class BasePolicy(nn.Module):
    def _predict(self, obs):
        raise NotImplementedError

    def predict(self, obs):
        self.eval()
        with torch.no_grad():
            actions = self._predict(obs)
        return actions.numpy()
"""

POLICY = """\
import torch.nn as nn
from base import BasePolicy


class MlpPolicy(BasePolicy):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1), nn.Linear(8, 2))

    def _predict(self, obs):
        return self.net(obs).argmax(-1)
"""


def test_template_method_called_by_a_base_class_in_another_file(tmp_path):
    forget()
    make_project(tmp_path, {"base.py": BASE_POLICY, "policies.py": POLICY})
    assert lint_json(tmp_path, "policies.py") == []  # the base class sets eval mode and no_grad
    unprotected = BASE_POLICY.replace("        self.eval()\n", "").replace(
        "        with torch.no_grad():\n            actions", "        actions")
    (tmp_path / "base.py").write_text(unprotected)
    forget()
    assert codes_at(lint_json(tmp_path, "policies.py"), "policies.py") == [("ML002", 11)]


def test_log_probabilities_from_a_model_of_another_file_fed_to_cross_entropy(tmp_path):
    forget()
    make_project(tmp_path, {"models.py": MODELS, "train.py": """\
        import torch
        import torch.nn.functional as F
        from models import LogProbs, Plain

        net = LogProbs()
        plain = Plain()
        opt = torch.optim.SGD(list(net.parameters()) + list(plain.parameters()), lr=0.1)
        for x, y in loader:
            opt.zero_grad()
            out = net(x)
            loss = F.cross_entropy(out, y) + F.cross_entropy(plain(x), y)
            loss.backward()
            opt.step()
        """})
    found = lint_json(tmp_path, "train.py")
    assert codes_at(found, "train.py") == [("ML013", 11)]
    assert "models.py:" in found[0]["message"] and found[0]["fix"] is None


GAN = """\
import torch


class Discriminator:
    def __init__(self, net):
        self.net = net
        self.opt = torch.optim.Adam(net.parameters(), lr=2e-4)

    def step(self, real, fake):
        loss = -(self.net(real).mean() - self.net(fake).mean())
        loss.backward()
        self.opt.step()
        return loss.item()

    def reset(self):
        self.opt.zero_grad()
"""


@pytest.mark.parametrize("loop_body, expected", [
    ("        disc.step(real, make_fake())\n", [("ML001", 11)]),
    ("        disc.reset()\n        disc.step(real, make_fake())\n", []),  # cleared through another method
    ("        disc.opt.zero_grad()\n        disc.step(real, make_fake())\n", []),
])
def test_step_method_called_once_per_iteration_from_another_file(tmp_path, loop_body, expected):
    forget()
    make_project(tmp_path, {"gan.py": GAN, "train.py": (
        "from gan import Discriminator\n\n\ndef train(net, loader, make_fake):\n"
        "    disc = Discriminator(net)\n    for real in loader:\n" + loop_body)})
    found = lint_json(tmp_path, "gan.py")
    assert codes_at(found, "gan.py") == expected
    if expected:
        assert "train.py:7" in found[0]["message"]


def test_forward_of_a_class_in_another_file_that_turns_grad_off_itself(tmp_path):
    forget()
    make_project(tmp_path, {"models/__init__.py": "", "models/pix.py": """\
        import torch
        import torch.nn as nn


        class Pix2Pix(nn.Module):
            def __init__(self):
                super().__init__()
                self.g = nn.Linear(3, 3)

            def forward(self, data, mode):
                if mode == "generator":
                    return self.g(data).sum()
                with torch.no_grad():
                    return self.g(data)
        """, "test.py": """\
        from models.pix import Pix2Pix

        model = Pix2Pix()
        model.eval()
        for data in test_loader:
            save(model(data, mode="inference"))
        """})
    assert lint_json(tmp_path, "test.py") == []


def test_numpy_helper_that_models_hand_themselves_to(tmp_path):
    forget()
    make_project(tmp_path, {"core.py": """\
        import torch


        def eval_np(module, x):
            with torch.no_grad():
                out = module(torch.as_tensor(x))
            return out.numpy()
        """, "policy.py": """\
        import torch.nn as nn
        from core import eval_np


        class Policy(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.1))

            def forward(self, obs):
                return self.fc(obs)

            def get_action(self, obs):
                return eval_np(self, obs)
        """})
    assert codes_at(lint_json(tmp_path, "core.py"), "core.py") == []  # the policy's owner sets its mode


def test_named_method_of_a_model_of_another_file_is_that_method_s_business(tmp_path):
    forget()
    make_project(tmp_path, {"agent.py": """\
        import torch
        import torch.nn as nn


        class Agent(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.Linear(8, 2))

            def forward(self, x):
                return self.net(x)

            def predict(self, loader):
                self.eval()
                with torch.no_grad():
                    return [self(x).argmax(-1) for x in loader]
        """, "run.py": """\
        import torch
        from agent import Agent

        agent = Agent()
        agent.load_state_dict(torch.load("agent.pt", weights_only=True))
        print(agent.predict(test_loader))
        """})
    assert lint_json(tmp_path, "run.py") == []


def test_notebook_findings_keep_what_they_rest_on(tmp_path):
    cells = [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source}
        for source in (["import torch\n", "model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Dropout(0.1))\n"],
                       ["def evaluate(loader):\n", "    return [model(x) for x, _ in loader]\n"])
    ]
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    found = lint_json(tmp_path, "nb.ipynb")
    assert found and all(f["basis"] == "name" for f in found if f["code"] in ("ML002", "ML005"))


# --- the screen's verdict, computed from the parse the facts were read from ----------------------

def _project_findings(files, with_stored_screen: bool, monkeypatch):
    from mllint import engine
    from mllint.config import load_settings
    from mllint.project import store

    forget()
    monkeypatch.setattr(store, "_SCREEN", engine.screen_verdict if with_stored_screen else None)
    root = Path(files[0]).parent
    settings = load_settings([str(root)], {"select": ["ALL"]})
    stats: dict = {}
    results = engine.lint_paths(files, settings, use_cache=False, jobs=1, stats=stats)
    forget()
    return {Path(r.path).name: [(f.code, f.line, f.column, f.message, f.fix) for f in r.findings] for r in results}


def test_stored_screen_verdict_gives_the_same_findings(tmp_path, monkeypatch):
    """Every rule example, as a file of one project: the screen's verdict stored with the facts
    (no second CPython parse of a file no rule runs on) decides as the screen at lint time does."""
    from mllint.registry import all_rules

    (tmp_path / "pyproject.toml").write_text("")
    files = []
    for rule in all_rules().values():
        for kind, examples in (("valid", rule.valid), ("invalid", rule.invalid)):
            for index, example in enumerate(examples):
                path = tmp_path / f"{rule.code.lower()}_{kind}_{index}.py"
                path.write_text(example.code)
                files.append(str(path))
    (tmp_path / "keras_model.py").write_text("import tensorflow as tf\nmodel = tf.keras.Sequential()\n")
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    files += [str(tmp_path / "keras_model.py"), str(tmp_path / "broken.py")]
    with_verdict = _project_findings(files, True, monkeypatch)
    without = _project_findings(files, False, monkeypatch)
    assert sum(len(v) for v in without.values()) > 100
    assert with_verdict == without


def test_stored_screen_verdict_is_used_only_for_the_text_it_was_computed_from(tmp_path, monkeypatch):
    from mllint import engine
    from mllint.config import load_settings
    from mllint.project import key_for, store, view_from_key
    from mllint.registry import all_rules
    from mllint.semantics.options import ModelOptions

    make_project(tmp_path, {"models.py": MODELS, "train.py": "import torch\n"})
    forget()
    monkeypatch.setattr(store, "_SCREEN", engine.screen_verdict)
    settings = load_settings([str(tmp_path)], {})
    key = key_for(str(tmp_path / "train.py"), settings, None)
    assert view_from_key(key).screen_verdict() is not None
    rules = [all_rules()["ML001"]]
    changed = textwrap.dedent("""\
        import torch
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in torch.ones(4, 2, 3):
            loss = model(x).sum()
            loss.backward()
            opt.step()
        """)
    # the file changed after the facts were read: its old verdict (no loop, nothing to screen in)
    # must not hide the new text's finding
    found = engine.lint_source(changed, str(tmp_path / "train.py"), rules, ModelOptions(project=key))
    forget()
    assert [f.code for f in found] == ["ML001"]


CHAIN_MODEL = """\
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Linear(4, 8)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.backbone(x))

    def generate(self, x):
        features = self.backbone(x)
        return self.head(features).argmax(-1)
"""


@pytest.mark.parametrize("decorator, expected", [("@torch.no_grad()", []), ("", [("ML002", 15), ("ML002", 16)])])
def test_model_built_with_a_chained_eval_in_another_file_keeps_its_class(tmp_path, decorator, expected):
    """``model = Model().eval()`` is a Model (``.eval()``, ``.to()`` return the module itself): its
    only caller runs ``generate()`` under no_grad, so the method needs no no_grad of its own."""
    make_project(tmp_path, {"model.py": CHAIN_MODEL, "main.py": f"""\
import torch
from model import Model


{decorator}
def test(x):
    model = Model().to("cpu").eval()
    model.load_state_dict(torch.load("m.pt", weights_only=True))
    return model.generate(x)
"""})
    assert codes_at(lint_json(tmp_path, "model.py"), "model.py") == expected


SOFTMAX_MODELS = """\
import torch.nn as nn
import torch.nn.functional as F


class Probs(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return F.softmax(self.fc(x), dim=1)


class Logits(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x)
"""

FIT = """\
import torch


def fit(net, loader):
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    criterion = torch.nn.CrossEntropyLoss()
    for x, y in loader:
        opt.zero_grad()
        loss = criterion(net(x), y)
        loss.backward()
        opt.step()
"""


@pytest.mark.parametrize("passed, expected", [
    (["Probs"], [("ML013", 9)]),  # every caller hands over a model whose forward ends in softmax
    (["Logits"], []),
    (["Probs", "Logits"], []),  # the callers disagree: which model trains here is not one
])
def test_model_the_callers_pass_in_decides_ml013(tmp_path, passed, expected):
    """``fit(net, loader)`` in a file that never imports the models: the classes its callers in
    other files build and pass decide what ``net(x)`` returns."""
    calls = "".join(f"    net{i} = models.{name}().to('cpu')\n    fit(net{i}, loader)\n" for i, name in enumerate(passed))
    make_project(tmp_path, {"models.py": SOFTMAX_MODELS, "fit.py": FIT,
                            "main.py": f"import models\nfrom fit import fit\n\n\ndef main(loader):\n{calls}"})
    assert codes_at(lint_json(tmp_path, "fit.py", extra=("--select", "ML013")), "fit.py") == expected


def test_mode_layers_of_the_model_the_callers_pass_in(tmp_path):
    """``evaluate(net, loader)`` in a file that never sees the model's class: ML005's message says
    what the model every caller in another file passes has (dropout), not "any dropout"."""
    make_project(tmp_path, {
        "models.py": MODELS,
        "evaluate.py": "import torch\n\n\n@torch.no_grad()\ndef evaluate(net, loader):\n    correct = 0\n"
                       "    for x, y in loader:\n        correct += (net(x).argmax(1) == y).sum().item()\n"
                       "    return correct\n",
        "main.py": TRAIN.replace("from .utils import evaluate, validate, predict_scores\n", "from .evaluate import evaluate\n")
                        .replace("        print(validate(model, val_loader))\n", "")
                        .replace("    model.eval()\n    with torch.no_grad():\n        print(predict_scores(model, torch.ones(2, 3)))\n", ""),
    })
    found = [f for f in lint_json(tmp_path, "evaluate.py") if f["code"] == "ML005"]
    assert [f["line"] for f in found] == [8]
    assert "its dropout acts as in training" in found[0]["message"]


FACTORY_MODELS = MODELS + """

def load_model(path):
    model = Net()
    model.load_state_dict(torch.load(path, weights_only=True))
{switch}    return model
"""

SERVE = """\
import torch
from models import load_model

classifier = load_model("weights.pt")


def predict(x):
    with torch.no_grad():
        return classifier(x).argmax(1)
"""


@pytest.mark.parametrize("switch, expected", [("", [("ML005", 9)]), ("    model.eval()\n", [])])
def test_model_from_a_factory_of_another_file(tmp_path, switch, expected):
    """``classifier = load_model(path)`` where ``load_model`` (models.py) builds and returns a
    ``Net`` with dropout: a model in training mode, unless the factory switches it to eval."""
    models = "import torch\n" + FACTORY_MODELS.format(switch=switch)
    make_project(tmp_path, {"models.py": models, "serve.py": SERVE})
    found = lint_json(tmp_path, "serve.py")
    assert codes_at(found, "serve.py") == expected
    if expected:
        assert "its dropout acts as in training" in found[0]["message"]


# --- a model made at module level in another file of the project, imported by name ----------------

_SERVER = """\
    import torch
    from shared import {name}


    def load_model():
        m = {name}
        m.load_state_dict(torch.load("weights.pt", weights_only=True))
        return m


    model = load_model()


    def predict(x):
        with torch.no_grad():
            return model(x).argmax(1)
    """


@pytest.mark.parametrize("shared,expected", [
    # a fresh torchvision model, switched nowhere: training mode
    ("import torchvision\nnet = torchvision.models.resnet18()\nhead = net\n", [("ML005", 16)]),
    # a module class of the project
    ("from models import Net\nnet = Net()\n", [("ML005", 16)]),
    # that file puts it in eval mode
    ("import torchvision\nnet = torchvision.models.resnet18()\nnet.eval()\n", []),
    # bound twice there: which one is not known
    ("import torchvision\nnet = torchvision.models.resnet18()\nif True:\n    net = torchvision.models.resnet50()\n", []),
    # made by a loader of unknown mode
    ("import torch\nnet = torch.jit.load('m.pt')\n", []),
    # no module
    ("from models import Wrapper\nnet = Wrapper(None)\n", []),
])
def test_model_made_at_module_level_in_another_file(tmp_path, shared, expected):
    forget()
    make_project(tmp_path, {"models.py": MODELS, "shared.py": shared, "server.py": _SERVER.format(name="net")})
    found = lint_json(tmp_path, "server.py", extra=("--select", "ML005"))
    assert codes_at(found, "server.py") == expected


# --- callers that disagree, helpers of other files run by the caller --------------------------

EVAL_MODULE = """\
import torch


def test(model, loader):
    model.eval()
    total = 0.0
    for x, y in loader:
        total += model(x).sum().item()
    return total


if __name__ == "__main__":
    net = torch.nn.Linear(3, 2)
    with torch.no_grad():
        print(test(net, [(torch.ones(1, 3), None)]))
"""

TRAIN_CALLING_TEST = """\
import torch
import evaluation


def main(model, loader, val_loader):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        model.train()
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        print(evaluation.test(model, val_loader))
"""


def test_unprotected_call_of_a_helper_that_another_call_runs_under_no_grad(tmp_path):
    forget()
    make_project(tmp_path, {"evaluation.py": EVAL_MODULE, "train.py": TRAIN_CALLING_TEST})
    found = lint_json(tmp_path, "train.py", extra=["--select", "ML002"])
    assert codes_at(found, "train.py") == [("ML002", 13)]
    assert "evaluation.py" in found[0]["message"] + json.dumps(found[0])
    # the helper's own file: its callers disagree, the unprotected call is reported where it is
    assert lint_json(tmp_path, "evaluation.py", extra=["--select", "ML002"]) == []
    (tmp_path / "train.py").write_text(TRAIN_CALLING_TEST.replace(
        "        print(evaluation.test(model, val_loader))",
        "        with torch.no_grad():\n            print(evaluation.test(model, val_loader))"))
    forget()
    assert lint_json(tmp_path, "train.py", extra=["--select", "ML002"]) == []


SEG_UTILS = """\
import torch


def test_seg(model, loader):
    hits = 0
    with torch.no_grad():
        for x, y in loader:
            hits += (model(x).argmax(1) == y).sum().item()
    return hits
"""

SEG_TRAIN = """\
import torch
from seg_utils import test_seg


def main(model, loader, test_loader, opt):
    for epoch in range(3):
        for x, y in loader:
            model = model.train()
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        print(test_seg(model, test_loader))
"""


def test_model_in_training_mode_handed_to_an_evaluation_helper_of_another_file(tmp_path):
    forget()
    make_project(tmp_path, {"seg_utils.py": SEG_UTILS, "seg_train.py": SEG_TRAIN})
    found = lint_json(tmp_path, "seg_train.py", extra=["--select", "ML005"])
    assert codes_at(found, "seg_train.py") == [("ML005", 12)]
    assert "test_seg()" in found[0]["message"]
    # the caller passes ``model.eval()``: the helper gets a model in eval mode, nothing to report
    (tmp_path / "seg_train.py").write_text(SEG_TRAIN.replace("test_seg(model, ", "test_seg(model.eval(), "))
    forget()
    assert lint_json(tmp_path, "seg_train.py", "seg_utils.py", extra=["--select", "ML005"]) == []


BASE_TRAINER = """\
import torch


class BaseTrainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def _forward(self, batch):
        return self.model(batch)

    def _backward(self, loss):
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
"""

ENERGY_TRAINER = """\
import torch
from base_trainer import BaseTrainer


class EnergyTrainer(BaseTrainer):
    def train(self, loader):
        self.model.train()
        for batch, target in loader:
            out = self._forward(batch)
            self._backward(torch.nn.functional.mse_loss(out, target))

    def predict(self, loader):
        self.model.eval()
        predictions = []
        for batch, _ in loader:
            out = self._forward(batch)
            predictions.append(out.tolist())
        return predictions
"""


def test_forward_and_backward_through_methods_inherited_from_another_file(tmp_path):
    forget()
    make_project(tmp_path, {"base_trainer.py": BASE_TRAINER, "energy_trainer.py": ENERGY_TRAINER})
    found = lint_json(tmp_path, "energy_trainer.py", extra=["--select", "ML002"])
    assert codes_at(found, "energy_trainer.py") == [("ML002", 16)]  # predict(), not train()
    # ``_forward`` of the trainer's own, ``_backward`` inherited: training still backpropagates through it
    own = ENERGY_TRAINER.replace("class EnergyTrainer(BaseTrainer):\n",
                                 "class EnergyTrainer(BaseTrainer):\n    def _forward(self, batch):\n"
                                 "        return {\"energy\": self.model(batch)}\n\n")
    own = own.replace("mse_loss(out, target)", "mse_loss(out[\"energy\"], target)")
    (tmp_path / "energy_trainer.py").write_text(own)
    forget()
    found = lint_json(tmp_path, "energy_trainer.py", extra=["--select", "ML002"])
    assert codes_at(found, "energy_trainer.py") == [("ML002", 19)]


ABSTRACT_TRAINER = """\
import torch


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def test(self, loaders):
        self.model.eval()
        self.evaluate(loaders)

    def evaluate(self, loaders):
        raise NotImplementedError
"""

UNET_TRAINER = """\
import torch
from trainer import Trainer


class UNetTrainer(Trainer):
    def evaluate(self, loaders):
        scores = []
        for x, y in loaders:
            scores.append((self.model(x).argmax(1) == y).float().mean().item())
        return scores
"""


def test_self_call_of_a_method_subclasses_of_other_files_implement(tmp_path):
    """``self.evaluate()`` after ``self.model.eval()`` in a base class whose ``evaluate`` is
    abstract: the subclasses of other files run the model there, with autograd on."""
    forget()
    make_project(tmp_path, {"trainer.py": ABSTRACT_TRAINER, "unet_trainer.py": UNET_TRAINER})
    found = lint_json(tmp_path, "trainer.py", extra=["--select", "ML002"])
    assert codes_at(found, "trainer.py") == [("ML002", 11)]
    # an override that trains (a backward pass) makes the call training code
    training = UNET_TRAINER.replace("scores.append(", "(self.model(x).sum()).backward()\n            scores.append(")
    (tmp_path / "unet_trainer.py").write_text(training)
    forget()
    assert codes_at(lint_json(tmp_path, "trainer.py", extra=["--select", "ML002"]), "trainer.py") == []
    # the override runs the model under no_grad itself
    (tmp_path / "unet_trainer.py").write_text(UNET_TRAINER.replace("    def evaluate", "    @torch.no_grad()\n    def evaluate"))
    forget()
    assert codes_at(lint_json(tmp_path, "trainer.py", extra=["--select", "ML002"]), "trainer.py") == []


WRAPPER = """\
import torch.nn as nn


class SVI(nn.Module):
    def __init__(self, model, beta=1.0):
        super().__init__()
        self.model = model
        self.beta = beta

    def forward(self, x, y=None):
        return self.beta * self.model(x, y).sum()
"""

WRAPPER_WITH_DROPOUT = WRAPPER.replace("        self.beta = beta\n",
                                       "        self.beta = beta\n        self.drop = nn.Dropout(0.5)\n")

WRAPPER_TRAIN = """\
import torch
from inference import SVI
from models import DGM


def main(labelled, validation, epochs):
    for model in [DGM(784, 10)]:
        elbo = SVI(model)
        optimizer = torch.optim.Adam(model.parameters())
        for epoch in range(epochs):
            model.train()
            for x, y in labelled:
                loss = -elbo(x, y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            model.eval()
            with torch.no_grad():
                for x, y in validation:
                    print(-elbo(x, y), model.classify(x).argmax(1))
"""


@pytest.mark.parametrize("wrapper, expected", [(WRAPPER, []), (WRAPPER_WITH_DROPOUT, [("ML005", 20)])])
def test_wrapper_whose_only_layers_are_the_model_it_is_handed(tmp_path, wrapper, expected):
    # ``elbo = SVI(model)`` runs only ``model``'s layers: ``model.eval()`` switches everything
    # ``elbo(x, y)`` runs (the loop variable of ``for model in [...]`` included); a wrapper with
    # a dropout of its own is still in training mode
    forget()
    models = "import torch.nn as nn\n\n\nclass DGM(nn.Module):\n    def __init__(self, a, b):\n" \
             "        super().__init__()\n        self.fc = nn.Linear(a, b)\n        self.drop = nn.Dropout(0.2)\n\n" \
             "    def forward(self, x, y=None):\n        return self.drop(self.fc(x))\n\n" \
             "    def classify(self, x):\n        return self.fc(x)\n"
    make_project(tmp_path, {"inference.py": wrapper, "models.py": models, "train.py": WRAPPER_TRAIN})
    assert [c for c in codes_at(lint_json(tmp_path, "train.py"), "train.py") if c[0] == "ML005"] == expected


LEARNER_BASE = """\
import torch


class BaseLearner:
    def train(self, loader, model, optimizer):
        for x_t, y_t, x_v, y_v in loader:
            adapted = self.adaptation(x_t, y_t, model)
            loss_v = self.validation_loss(x_v, y_v, adapted, model)
            loss_v = loss_v / 4
            loss_v.backward()
            optimizer.step()
            optimizer.zero_grad()
        self.evaluation(loader, model)
"""

LEARNER = """\
import torch
from base import BaseLearner


class Maml(BaseLearner):
    def adaptation(self, x, y, model):
        return model["hyper_net"](x)

    def prediction(self, x, adapted, model):
        logits = model["base_net"](x, adapted)
        return logits

    def validation_loss(self, x, y, adapted, model):
        logits = self.prediction(x, adapted, model)
        return torch.nn.functional.cross_entropy(logits, y)

    def evaluation(self, loader, model):
        for x, y in loader:
            logits = model["base_net"](x, None)
            print((logits.argmax(1) == y).float().mean().item())
"""


def test_methods_a_base_class_of_another_file_backpropagates_are_training(tmp_path):
    # BaseLearner.train backpropagates what validation_loss returns, and validation_loss returns
    # what it computes from prediction(): prediction's forward is a piece of training, whatever
    # its name; evaluation(), whose result the base does not backpropagate, is still judged
    forget()
    make_project(tmp_path, {"base.py": LEARNER_BASE, "maml.py": LEARNER})
    found = codes_at(lint_json(tmp_path, "maml.py"), "maml.py")
    assert ("ML002", 10) not in found and ("ML002", 19) in found


def test_facts_name_the_calls_whose_results_reach_a_backward():
    facts = facts_of_source(LEARNER_BASE, "base.py")
    train = next(f for f in facts.functions if f.key == "BaseLearner.train")
    assert {"self.validation_loss", "self.adaptation"} <= train.backprop_calls
    assert "self.evaluation" not in train.backprop_calls and "optimizer.step" not in train.backprop_calls
    scaled = facts_of_source("def step(scaler, net, x):\n    loss = crit(net(x))\n    scaler.scale(loss).backward()\n", "s.py")
    assert scaled.functions[0].backprop_calls == {"scaler.scale", "crit", "net"}


MODEL_WITH_TEST = """\
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1))

    def forward(self, x):
        return self.net(x)

    def test(self, x, scale):
        mu = self(x)
        return mu[:, -1] * scale
"""

EVAL_EPOCH = """\
import torch
import model as M


def eval_epoch(model, data):
    model.eval()
    with torch.no_grad():
        for x, scale in data:
            print(model.test(x, scale).mean().item())


def main(data):
    eval_epoch(M.Model(), data)
"""


@pytest.mark.parametrize("caller, expected", [(EVAL_EPOCH, []),
                                              (EVAL_EPOCH.replace("    model.eval()\n", ""), [("ML005", 13)])])
def test_model_method_whose_callers_elsewhere_switch_the_object_first(tmp_path, caller, expected):
    # Model.test runs self(x); the files that import model.py call it only as `model.test(...)`
    # after `model.eval()` in the same function: it runs in eval mode
    forget()
    make_project(tmp_path, {"model.py": MODEL_WITH_TEST, "main.py": caller})
    assert [c for c in codes_at(lint_json(tmp_path, "model.py"), "model.py") if c[0] == "ML005"] == expected


MODE_BASE = """\
class BaseNet(object):
    def set_mode_train(self, train=True):
        if train:
            self.model.train()
        else:
            self.model.eval()
"""

MODE_NET = """\
import torch
import torch.nn as nn
from base_net import BaseNet


class MCNet(BaseNet):
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5))
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def fit(self, x, y):
        self.set_mode_train(True)
        loss = ((self.model(x) - y) ** 2).mean()
        loss.backward()
        self.optimizer.step()

    def eval(self, x, y):
        out = self.model(x)
        return ((out - y) ** 2).mean().item()
"""

MODE_TRAIN = """\
from model import MCNet


def main(train_loader, val_loader):
    net = MCNet()
    for epoch in range(10):
        net.set_mode_train(True)
        for x, y in train_loader:
            net.fit(x, y)
        net.set_mode_train(False)
        for x, y in val_loader:
            print(net.eval(x, y))
"""


@pytest.mark.parametrize("script, expected", [(MODE_TRAIN, []),
                                              (MODE_TRAIN.replace("net.set_mode_train(False)", "pass"), [("ML005", 18)])])
def test_a_mode_helper_of_a_base_class_elsewhere_given_a_literal_by_the_callers(tmp_path, script, expected):
    # set_mode_train(train) of a base class in another file switches self.model by its flag:
    # the training script's net.set_mode_train(False) before net.eval(x, y) switches it to eval
    forget()
    make_project(tmp_path, {"base_net.py": MODE_BASE, "model.py": MODE_NET, "train.py": script})
    assert [c for c in codes_at(lint_json(tmp_path, "model.py"), "model.py") if c[0] == "ML005"] == expected


PREDICTOR = """import torch.nn as nn
from base_net import BaseNet


class Predictor(BaseNet):
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5))

    def predict(self, x):
        self.set_mode_train(train=False)
        return self.model(x)
"""


@pytest.mark.parametrize("flag, expected", [("False", [("ML002", 11)]), ("True", [])])
def test_a_mode_helper_of_a_base_class_elsewhere_given_a_literal_here(tmp_path, flag, expected):
    # self.set_mode_train(train=False), inherited from a base class in another file, switches
    # self.model to eval mode before the forward: evidence of inference for ML002 (True: training)
    forget()
    make_project(tmp_path, {"base_net.py": MODE_BASE, "model.py": PREDICTOR.replace("train=False", f"train={flag}")})
    found = codes_at(lint_json(tmp_path, "model.py"), "model.py")
    assert [c for c in found if c[0] in ("ML002", "ML005")] == expected


def test_facts_know_the_parameter_that_picks_the_mode():
    facts = facts_of_source(MODE_BASE + "\n    def flip(self, on):\n        self.net.train(on)\n"
                            "\n    def both(self, x):\n        self.a.train()\n        self.a.eval()\n", "b.py")
    picked = {f.key: f.mode_param for f in facts.functions}
    assert picked == {"BaseNet.set_mode_train": "train", "BaseNet.flip": "on", "BaseNet.both": ""}
