"""ML013 on models of another file of the project, reached through the shapes research code
uses between the model and the loss: a shape-only op on the output (``model(x).squeeze(1)``,
``out.view(-1)``, ``out[:, :3]``), the model held on ``self`` by a trainer, the model handed to a
train function, and a forward that ends in an ``nn.Sequential`` whose last layer is the
activation. A forward that applies the sigmoid only outside training is left alone."""

from __future__ import annotations

import json
import subprocess
import sys

MODELS = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class BinaryNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 1)

    def forward(self, x):
        return torch.sigmoid(self.fc(x))


class SeqNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 1), nn.Sigmoid())

    def forward(self, x):
        return self.net(x).squeeze(1)


class SoftNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 3)

    def forward(self, x):
        x = self.fc(x)
        x = F.softmax(x, dim=1)
        return x


class EvalOnly(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 1)

    def forward(self, x):
        out = self.fc(x)
        if not self.training:
            out = torch.sigmoid(out)
        return out
'''

SCRIPTS = {
    "train_a.py": (
        "import torch.nn as nn\nfrom models import BinaryNet\n\nmodel = BinaryNet()\ncriterion = nn.BCEWithLogitsLoss()\n"
        "for x, y in loader:\n    pred = model(x).squeeze(1)\n    loss = criterion(pred, y)\n"),
    "train_b.py": (
        "import torch.nn as nn\nfrom models import BinaryNet\n\n\nclass Trainer:\n    def __init__(self):\n"
        "        self.model = BinaryNet()\n        self.criterion = nn.BCEWithLogitsLoss()\n\n"
        "    def step(self, x, y):\n        out = self.model(x)\n        out = out.view(-1)\n"
        "        return self.criterion(out, y)\n"),
    "train_c.py": "import torch.nn as nn\nfrom models import SeqNet\n\nnet = SeqNet()\nloss = nn.BCEWithLogitsLoss()(net(x), y)\n",
    "train_d.py": ("import torch.nn.functional as F\nfrom models import SoftNet\n\nnet = SoftNet()\nout = net(x)\n"
                   "loss = F.nll_loss(out[:, :3], y)\n"),
    "train_e.py": "import torch.nn as nn\nfrom models import EvalOnly\n\nnet = EvalOnly()\nloss = nn.BCEWithLogitsLoss()(net(x), y)\n",
    "train_f.py": (
        "import torch.nn as nn\nfrom models import BinaryNet\n\n\ndef train(model, loader, criterion):\n"
        "    for x, y in loader:\n        out = model(x)\n        loss = criterion(out.squeeze(), y)\n\n\n"
        "train(BinaryNet(), loader, nn.BCEWithLogitsLoss())\n"),
}


def test_project_models_through_shape_ops_trainers_and_sequentials(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "models.py").write_text(MODELS)
    for name, text in SCRIPTS.items():
        (tmp_path / name).write_text(text)
    proc = subprocess.run([sys.executable, "-m", "mllint", "--no-cache", "--format", "json", "--exit-zero",
                           "--select", "ML013", "."], cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    found = sorted((f["path"].rsplit("/", 1)[-1], f["line"]) for f in json.loads(proc.stdout))
    assert found == [("train_a.py", 8), ("train_b.py", 13), ("train_c.py", 5), ("train_d.py", 6), ("train_f.py", 8)]
