"""ML010: torch-version in the settings reaches the rule (missing argument only), and the cache."""

from __future__ import annotations

import textwrap

from mllint import engine
from mllint.config import Resolver
from mllint.registry import all_rules
from mllint.semantics.options import ModelOptions

RULE = all_rules()["ML010"]

SOURCE = textwrap.dedent(
    """
    import torch
    a = torch.load(path)
    b = torch.load(path, map_location="cpu")
    c = torch.load(path, weights_only=False)
    d = torch.load(path, pickle_module=dill)
    e = torch.jit.load(path)
    """
)


def lines(options=None, source=SOURCE):
    return [f.line for f in engine.lint_source(source, "t.py", [RULE], options) if f.code == "ML010"]


def test_without_torch_version_every_unsafe_call_is_reported():
    assert lines() == [3, 4, 5, 6]


def test_torch_version_silences_only_the_missing_argument():
    for version in ("2.6", "2.6.1", "2.7", "3.0"):
        assert lines(ModelOptions(torch_version=version)) == [5, 6], version
    assert lines(ModelOptions(torch_version="2.5")) == [3, 4, 5, 6]
    assert lines(ModelOptions(torch_version="1.13.1")) == [3, 4, 5, 6]


def test_messages_name_the_case():
    found = engine.lint_source(SOURCE, "t.py", [RULE])
    assert "torch < 2.6" in found[0].message
    assert "weights_only=False" in found[2].message and found[2].fix is not None
    assert "pickle_module" in found[3].message and found[3].fix is None
    assert "map_location" in found[1].detail


def test_settings_reach_the_rule_through_lint_paths(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.mllint]\ntorch-version = "2.6"\n')
    script = tmp_path / "train.py"
    script.write_text(SOURCE)
    sub = tmp_path / "old"
    sub.mkdir()
    (sub / "pyproject.toml").write_text('[tool.mllint]\nselect = ["ML010"]\n')
    (sub / "train.py").write_text(SOURCE)
    resolver = Resolver({})
    new, old = engine.lint_paths([str(script), str(sub / "train.py")], resolver, use_cache=True)
    assert [f.line for f in new.findings if f.code == "ML010"] == [5, 6]
    assert [f.line for f in old.findings if f.code == "ML010"] == [3, 4, 5, 6]
    # the cache is keyed by the settings (torch-version is in the fingerprint)
    (tmp_path / "pyproject.toml").write_text('[tool.mllint]\ntorch-version = "2.4"\n')
    again = engine.lint_paths([str(script)], Resolver({}), use_cache=True)[0]
    assert [f.line for f in again.findings if f.code == "ML010"] == [3, 4, 5, 6]
