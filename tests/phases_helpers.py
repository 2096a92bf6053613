"""Helpers shared by the tests of mllint.semantics.phases (one test file per question)."""

from __future__ import annotations

import textwrap

import libcst as cst

from mllint.semantics import build_model
from mllint.semantics.phases import Phases


def phases_of(source: str, path: str = "t.py") -> Phases:
    source = textwrap.dedent(source)
    return Phases.of(build_model(cst.parse_module(source), source, path))


def forward(ph: Phases, ref: str, nth: int = 0):
    found = [e for e in ph.forwards() if e.ref == ref]
    assert len(found) > nth, [e.ref for e in ph.forwards()]
    return found[nth]


def evidence_kind(ph: Phases, ref: str, nth: int = 0):
    found = ph.evidence(forward(ph, ref, nth))
    return found.kind if found else None
