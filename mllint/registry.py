"""The rule catalogue: every rule module under mllint.rules, as Rule records."""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Dict, Iterable, Optional, Sequence, Tuple

from mllint.findings import Applicability


@dataclass(frozen=True)
class Example:
    """A VALID or INVALID source snippet; INVALID ones may carry the expected fixed source."""

    code: str
    fixed: Optional[str] = None
    unsafe_fixed: Optional[str] = None


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    message: str
    triggers: Tuple[str, ...]  # the file must contain one of these (and every word of `requires`)
    default_enabled: bool
    fix: Optional[Applicability]
    doc: str
    check: Callable
    valid: Tuple[Example, ...]
    invalid: Tuple[Example, ...]
    module: str
    # Without all of these the rule cannot fire: the file is not parsed for it. An entry may
    # name alternatives, ``"torch|transformers"``: any one of them will do.
    requires: Tuple[str, ...] = ()
    # A rule decided by the engine after ``# noqa`` suppression (ML100, unused noqa), from
    # (path, source, suppressions, used, enabled codes); its ``check`` is not called.
    check_noqa: Optional[Callable] = None
    # The rule's cheap predicate over the file's ``screen.Facts`` (mllint/screen.py): False
    # when the rule cannot report anything in the file, which is then not parsed for it.
    screen: Optional[Callable] = None

    def triggered_by(self, source: str) -> bool:
        return (not self.triggers or any(word in source for word in self.triggers)) and all(
            any(word in source for word in alternatives.split("|")) for alternatives in self.requires
        )


def _clean(text: Optional[str]) -> Optional[str]:
    return None if text is None else inspect.cleandoc(text) + "\n"


def _as_example(item) -> Example:
    if isinstance(item, Example):
        return Example(_clean(item.code), _clean(item.fixed), _clean(item.unsafe_fixed))
    if isinstance(item, str):
        return Example(_clean(item))
    raise TypeError(f"bad rule example: {item!r}")


def rule_from_module(mod) -> Rule:
    fix = getattr(mod, "FIX", None)
    return Rule(
        code=mod.CODE,
        name=mod.NAME,
        message=mod.MESSAGE,
        triggers=tuple(getattr(mod, "TRIGGERS", ())),
        requires=tuple(getattr(mod, "REQUIRES", ())),
        default_enabled=getattr(mod, "DEFAULT_ENABLED", True),
        fix=Applicability(fix) if fix else None,
        doc=inspect.cleandoc(mod.__doc__ or ""),
        check=mod.check,
        valid=tuple(_as_example(e) for e in getattr(mod, "VALID", ())),
        invalid=tuple(_as_example(e) for e in getattr(mod, "INVALID", ())),
        module=mod.__name__,
        check_noqa=getattr(mod, "check_noqa", None),
        screen=getattr(mod, "SCREEN", None),
    )


@lru_cache(maxsize=None)
def all_rules() -> Dict[str, Rule]:
    package = importlib.import_module("mllint.rules")
    rules = {}
    for modname in package.RULE_MODULES:
        rule = rule_from_module(importlib.import_module(f"mllint.rules.{modname}"))
        rules[rule.code] = rule
    return dict(sorted(rules.items()))


def rules_for(codes: Iterable[str]) -> Sequence[Rule]:
    table = all_rules()
    return [table[c] for c in sorted(set(codes)) if c in table]


# ML000 is not a rule module: the engine reports it for files it cannot read or parse.
PARSE_ERROR_CODE = "ML000"
PARSE_ERROR_NAME = "syntax-error"
