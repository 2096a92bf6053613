"""The rule catalogue: every rule module under mllint.rules, as Rule records."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Dict, FrozenSet, Iterable, Optional, Sequence, Tuple

from mllint.findings import PARSE_ERROR_CODE, PARSE_ERROR_NAME, Applicability, Example  # noqa: F401  (re-exported)


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
    # The framework the rule is about (a module's FRAMEWORK): "torch" (the default: the
    # catalogue is about PyTorch), "sklearn", or None (any code). The engine leaves the
    # "torch" rules out for a file written for another framework (mllint/frameworks.py).
    framework: Optional[str] = "torch"

    def triggered_by(self, source: str, implied: FrozenSet[str] = frozenset()) -> bool:
        """Whether the source holds a trigger word and every required word (or an alternative
        of it); `implied` words count as present (``torch`` for a file of a torch project that
        imports the project's torch modules without importing torch itself)."""
        return (not self.triggers or any(word in source for word in self.triggers)) and all(
            any(word in implied or word in source for word in alternatives.split("|"))
            for alternatives in self.requires
        )


def _clean(text: Optional[str]) -> Optional[str]:
    return None if text is None else _cleandoc(text) + "\n"


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
        doc=_cleandoc(mod.__doc__ or ""),
        check=mod.check,
        valid=tuple(_as_example(e) for e in getattr(mod, "VALID", ())),
        invalid=tuple(_as_example(e) for e in getattr(mod, "INVALID", ())),
        module=mod.__name__,
        check_noqa=getattr(mod, "check_noqa", None),
        screen=getattr(mod, "SCREEN", None),
        framework=getattr(mod, "FRAMEWORK", "torch"),
    )


@lru_cache(maxsize=None)
def all_rules() -> Dict[str, Rule]:
    return {code: _load(name) for code, name in _modules().items()}


@lru_cache(maxsize=None)
def _load(name: str) -> Rule:
    return rule_from_module(importlib.import_module(f"mllint.rules.{name}"))


@lru_cache(maxsize=None)
def _modules() -> Dict[str, str]:
    """Rule code -> its module's name in ``mllint.rules``, sorted by code. The code is in the
    module's name (``ml001_...``); a module not named so (added at run time) is asked."""
    package = importlib.import_module("mllint.rules")
    table = {}
    for name in package.RULE_MODULES:
        prefix = name.split("_", 1)[0]
        if len(prefix) == 5 and prefix[:2] == "ml" and prefix[2:].isdigit():
            table[prefix.upper()] = name
        else:
            table[_load(name).code] = name
    return dict(sorted(table.items()))


@lru_cache(maxsize=None)
def catalogue() -> Dict[str, bool]:
    """Every rule code and whether it is on by default, without importing the rule modules
    (``mllint.rules.DEFAULT_OFF`` lists the codes off by default). Settings need only this;
    a warm run then imports no rule, nor the semantic model, nor LibCST."""
    off = getattr(importlib.import_module("mllint.rules"), "DEFAULT_OFF", ())
    return {
        code: (code not in off) if name.startswith(code.lower() + "_") else _load(name).default_enabled
        for code, name in _modules().items()
    }


def _cleandoc(doc: str) -> str:
    import inspect

    return inspect.cleandoc(doc)


def rules_for(codes: Iterable[str]) -> Sequence[Rule]:
    """The rules of `codes` (unknown codes and ML000 left out); only their modules are imported."""
    modules = _modules()
    return [_load(modules[c]) for c in sorted(set(codes)) if c in modules]


