"""Every rule's VALID and INVALID examples, collected automatically from rules/."""

from __future__ import annotations

import pytest

from mllint.engine import lint_source
from mllint.findings import Applicability
from mllint.registry import all_rules

RULES = all_rules()


def _cases(kind):
    for code, rule in RULES.items():
        for index, example in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, example, id=f"{code}-{kind}-{index}")


def _rules(rule):
    """The rules an example is linted with: the rule alone, or, for a rule decided after
    suppression from what the other rules reported (ML100, unused noqa), every rule, as
    under --select ALL, through the same engine path (lint_source / fix_source)."""
    return list(RULES.values()) if rule.check_noqa is not None else [rule]


def _own(findings, rule):
    return [f for f in findings if f.code == rule.code]


@pytest.mark.parametrize("rule,example", list(_cases("valid")))
def test_valid_example_has_no_finding(rule, example):
    findings = lint_source(example.code, "example.py", _rules(rule))
    assert _own(findings, rule) == [], "\n".join(f"{f.line}:{f.column} {f.message}" for f in findings)


@pytest.mark.parametrize("rule,example", list(_cases("invalid")))
def test_invalid_example_is_reported(rule, example):
    findings = _own(lint_source(example.code, "example.py", _rules(rule)), rule)
    assert findings, f"{rule.code} missed:\n{example.code}"
    for finding in findings:
        assert finding.name == rule.name and finding.message
        if example.fixed is None:  # no expected fix given: the rule must not offer a safe one
            assert finding.fix is None or finding.fix.applicability is Applicability.UNSAFE


@pytest.mark.parametrize("rule,example", [p for p in _cases("invalid") if p.values[1].fixed is not None])
def test_invalid_example_fix(rule, example):
    from mllint.fixing import fix_source

    outcome = fix_source(example.code, "example.py", _rules(rule))
    assert outcome.rejected == []
    assert outcome.source == example.fixed
    assert _own(outcome.remaining, rule) == []
    again = fix_source(outcome.source, "example.py", _rules(rule))
    assert again.source == outcome.source and again.applied == []


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_metadata(code):
    rule = RULES[code]
    assert rule.name == rule.name.lower() and " " not in rule.name
    assert rule.doc and "Why it matters" in rule.doc and "How to fix" in rule.doc
    assert len(rule.valid) >= 10 and len(rule.invalid) >= 10
    assert rule.triggers, "a rule without trigger words parses every file"
    if rule.fix is Applicability.SAFE:
        assert any(e.fixed for e in rule.invalid)


def test_codes_are_unique_and_well_formed():
    import re

    assert all(re.fullmatch(r"ML\d{3}", code) for code in RULES)
    assert len({r.name for r in RULES.values()}) == len(RULES)


@pytest.mark.parametrize("rule,example", [p for p in _cases("invalid") if p.values[1].unsafe_fixed is not None])
def test_invalid_example_unsafe_fix(rule, example):
    from mllint.fixing import fix_source

    assert fix_source(example.code, "example.py", _rules(rule)).source == example.code  # not applied by plain --fix
    outcome = fix_source(example.code, "example.py", _rules(rule), unsafe=True)
    assert outcome.rejected == []
    assert outcome.source == example.unsafe_fixed
    assert _own(outcome.remaining, rule) == []
    assert fix_source(outcome.source, "example.py", _rules(rule), unsafe=True).source == outcome.source
