"""ML016: the runnable fixture pair (dropout on after eval() against off), and mllint's verdict on it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mllint import engine
from mllint.findings import Applicability
from mllint.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
ML016 = ROOT / "fixtures" / "ml016"
RULE = all_rules()["ML016"]


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=str(cwd), capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL
    )


def _number(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in:\n{text}"
    return float(match.group(1))


def test_ml016_eval_is_random_with_functional_dropout_and_stable_with_training_flag():
    pytest.importorskip("torch")
    bad = _run(str(ML016 / "bad_eval.py"), cwd=ML016)
    assert bad.returncode == 0, bad.stderr
    good = _run(str(ML016 / "good_eval.py"), cwd=ML016)
    assert good.returncode == 0, good.stderr
    diff = r"max difference between two eval calls (\S+)"
    spread = r"eval accuracy spread (\S+)"
    mean = r"mean eval accuracy (\S+)"
    assert _number(diff, bad.stdout) > 1.0, bad.stdout
    assert _number(diff, good.stdout) == 0.0, good.stdout
    assert _number(spread, bad.stdout) > 0.0 and _number(spread, good.stdout) == 0.0, (bad.stdout, good.stdout)
    assert _number(mean, good.stdout) > _number(mean, bad.stdout), (bad.stdout, good.stdout)


def test_mllint_reports_ml016_on_the_bad_fixture_only_with_a_safe_fix():
    proc = _run("-m", "mllint", "--no-cache", "--format", "json", "--select", "ML016", str(ML016))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    findings = json.loads(proc.stdout)
    lines = [i for i, line in enumerate((ML016 / "bad_eval.py").read_text().splitlines(), 1) if line.strip() == "h = F.dropout(h, 0.5)"]
    assert [(Path(f["path"]).name, f["code"], f["line"]) for f in findings] == [("bad_eval.py", "ML016", n) for n in lines]
    assert all(f["fix"] is not None and f["fix"]["applicability"] == "safe" for f in findings)


def _found(source: str):
    return [f for f in engine.lint_source(textwrap.dedent(source), "m.py", [RULE]) if f.code == "ML016"]


def test_messages_name_the_function_the_method_and_the_mode():
    found = _found(
        """
        import torch.nn as nn
        import torch.nn.functional as F

        class Net(nn.Module):
            def forward(self, x):
                x = F.dropout2d(x, 0.1)
                return F.alpha_dropout(x, 0.1)
        """
    )
    assert len(found) == 2
    assert "`F.dropout2d` in `Net.forward`" in found[0].message and "stays on after `model.eval()`" in found[0].message
    assert found[0].fix.applicability == Applicability.SAFE
    assert "(default False)" in found[1].message and "never drops" in found[1].message
    assert found[1].fix.applicability == Applicability.UNSAFE


def test_helper_reached_from_a_subclass_forward_and_static_helper_without_fix():
    found = _found(
        """
        import torch.nn as nn
        import torch.nn.functional as F

        class Base(nn.Module):
            def block(self, x):
                return F.dropout(x, 0.1)

            @staticmethod
            def drop(x):
                return F.dropout(x, 0.2)

            def sample(self, x):
                return F.dropout(x, 0.3)

        class Child(Base):
            def forward(self, x):
                return self.drop(self.block(x))
        """
    )
    assert [f.line for f in found] == [7, 11]
    assert found[0].fix is not None and found[1].fix is None


def test_base_class_from_another_project_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "base.py").write_text("import torch.nn as nn\n\nclass Base(nn.Module):\n    pass\n")
    (tmp_path / "other.py").write_text("class Plain:\n    pass\n")
    (tmp_path / "model.py").write_text(
        textwrap.dedent(
            """
            import torch.nn.functional as F
            from base import Base
            from other import Plain

            class Net(Base):
                def forward(self, x):
                    return F.dropout(x, 0.5)

            class NotAModule(Plain):
                def forward(self, x):
                    return F.dropout(x, 0.5)
            """
        )
    )
    proc = _run("-m", "mllint", "--no-cache", "--format", "json", "--select", "ML016", str(tmp_path))
    findings = json.loads(proc.stdout)
    assert [(Path(f["path"]).name, f["line"]) for f in findings] == [("model.py", 8)], proc.stdout + proc.stderr
