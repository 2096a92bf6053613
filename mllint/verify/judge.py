"""From two runs to a verdict: per rule, the deterministic witnesses first, then memory, then time.

A finding is ``confirmed`` when the original shows the rule's runtime effect and the fixed version
does not (a witness that differs between the two), or when the time difference is beyond its
interval and the A/A noise floor. The same code run against itself can therefore never be
confirmed: every witness compares the two variants.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from mllint.findings import Finding
from mllint.runtime.units import format_bytes
from mllint.verify.stats import judge_timing

# A gradient is stale when more than this fraction of it was left over from earlier steps; the
# fixed version must stay below the lower bound (float rounding of re-summed gradients).
STALE_CONFIRMED = 0.01
STALE_CLEAN = 1e-4


@dataclass
class Verification:
    verdict: str  # confirmed | not-confirmed | could-not-run | not-verifiable
    summary: str
    evidence: List[dict] = field(default_factory=list)
    details: List[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "summary": self.summary, "evidence": self.evidence,
                "details": self.details}


def _entry(metric: str, original, fixed, ratio: Optional[float] = None, interval=None) -> dict:
    return {"metric": metric, "original": original, "fixed": fixed,
            "ratio": None if ratio is None else round(ratio, 4),
            "interval": None if interval is None else [round(interval[0], 4), round(interval[1], 4)]}


def _ratio(a: float, b: float) -> Optional[float]:
    if b > 0:
        return a / b
    return None


def _sites(evidence: dict, lines: Sequence[int]) -> dict:
    """Forward-call statistics summed over the site's lines."""
    total: Dict[str, float] = {}
    for line in lines:
        site = (evidence.get("sites") or {}).get(str(line))
        if not site:
            continue
        for name, value in site.items():
            if name == "peak_bytes":
                total[name] = max(total.get(name, 0), value)
            else:
                total[name] = total.get(name, 0) + value
    return total


class _Judgement:
    def __init__(self) -> None:
        self.witness: Optional[bool] = None  # True: confirmed; False: ran but not shown; None: no data
        self.headline: List[str] = []
        self.details: List[str] = []
        self.evidence: List[dict] = []
        self.reason: Optional[str] = None


# --- per rule ------------------------------------------------------------------------------------


def _stale_fractions(evidence: dict) -> List[List[float]]:
    """Per optimizer (in creation order), per recorded step: how far the gradient it applied is from
    the gradient the backward passes since its previous step produced, ||g - g_fresh|| / ||g||."""
    out = []
    for optimizer in evidence.get("optimizers") or []:
        fractions = []
        for step in optimizer.get("steps") or []:
            if step and step["grad"] > 0:
                fractions.append(step["stale"] / step["grad"])
        out.append(fractions)
    return out


def _growth(evidence: dict, index: int) -> Optional[float]:
    optimizers = evidence.get("optimizers") or []
    if index >= len(optimizers):
        return None
    norms = [s["grad"] for s in optimizers[index].get("steps") or [] if s]
    if len(norms) < 2 or norms[0] <= 0:
        return None
    return norms[-1] / norms[0]


def judge_ml001(finding: Finding, original: dict, fixed: dict, j: _Judgement) -> None:
    before, after = _stale_fractions(original), _stale_fractions(fixed)
    if not any(before):
        j.witness = None
        j.reason = "no optimizer took two steps within --steps (nothing to compare)"
        return
    j.witness = False
    for index, fractions in enumerate(before):
        if not fractions:
            continue
        worst = max(fractions)
        fixed_fractions = after[index] if index < len(after) else []
        fixed_worst = max(fixed_fractions) if fixed_fractions else None
        name = (original.get("optimizers") or [])[index].get("type", "optimizer")
        j.evidence.append(_entry(f"max ||applied - fresh batch gradient|| / ||applied||, {name} #{index + 1}",
                                 round(worst, 4), None if fixed_worst is None else round(fixed_worst, 4)))
        growth, fixed_growth = _growth(original, index), _growth(fixed, index)
        if growth is not None:
            j.evidence.append(_entry(f"gradient norm, last recorded step / first ({len(fractions)} steps)",
                                     round(growth, 3), None if fixed_growth is None else round(fixed_growth, 3)))
        if worst > STALE_CONFIRMED and fixed_worst is not None and fixed_worst < STALE_CLEAN:
            j.witness = True
            j.headline.append(f"gradients not cleared: the gradient {name} applied differed from the fresh batch"
                              f" gradient by up to {worst * 100:.0f}% of its norm (fixed: {fixed_worst * 100:.2g}%)")
            if growth is not None and fixed_growth is not None:
                j.details.append(f"gradient norm grew {growth:.2f}x over {len(fractions)} steps"
                                 f" (fixed: {fixed_growth:.2f}x)")
            return
    if j.witness is False:
        stale = any(fractions and max(fractions) > STALE_CONFIRMED for fractions in before)
        j.reason = ("the fixed version still applies gradients left over from earlier steps (its fix does not"
                    " clear them before every step)" if stale
                    else "the gradients the original applied were fresh at every step")


def judge_ml002(finding: Finding, original: dict, fixed: dict, orig_lines, fixed_lines, j: _Judgement) -> None:
    a, b = _sites(original, orig_lines), _sites(fixed, fixed_lines)
    calls = int(a.get("calls", 0))
    if not calls:
        j.reason = f"the forward call at line {finding.line} did not run{_within(original)}"
        return
    req, fixed_req = int(a.get("requires_grad", 0)), int(b.get("requires_grad", 0))
    fixed_calls = int(b.get("calls", 0))
    j.evidence.append(_entry("forward calls whose outputs require grad", f"{req}/{calls}",
                             f"{fixed_req}/{fixed_calls}"))
    saved, fixed_saved = a.get("saved_bytes", 0) / calls, (b.get("saved_bytes", 0) / fixed_calls if fixed_calls else 0)
    j.evidence.append(_entry("bytes saved for backward per call", int(saved), int(fixed_saved)))
    peak, fixed_peak = a.get("peak_bytes", 0), b.get("peak_bytes", 0)
    if peak and fixed_peak:
        j.evidence.append(_entry(f"peak live tensor bytes while line {finding.line} runs", int(peak),
                                 int(fixed_peak), _ratio(peak, fixed_peak)))
    j.witness = req > 0 and fixed_calls > 0 and fixed_req == 0
    if j.witness:
        text = f"outputs require grad ({req}/{calls} calls; fixed 0/{fixed_calls})"
        if saved > 0:
            text += f", {format_bytes(saved)} saved for backward per call"
        j.headline.append(text)
        if peak and fixed_peak and peak > fixed_peak:
            j.headline.append(f"{peak / fixed_peak:.2f}x peak memory")
    elif req == 0:
        j.reason = "the original's outputs did not require grad (grad mode was off or nothing trainable)"
    else:
        j.reason = "the fixed version's outputs still require grad"


def _executions(evidence: dict, lines: Sequence[int]) -> int:
    counts = evidence.get("line_counts") or {}
    return max([counts.get(str(line), 0) for line in lines] or [0])


def judge_ml004(finding: Finding, original: dict, fixed: dict, orig_lines, fixed_lines, j: _Judgement,
                fixed_own: Sequence[int] = ()) -> None:
    # Iterations: how often the flagged line ran in each variant (the fixed one where the fix left
    # it; the original's count when the fix removed the line); allocations: those made on every line
    # holding the flagged expression, wherever the fix moved it.
    runs = _executions(original, site_lines(finding))

    def allocated(evidence, lines):
        allocs = evidence.get("line_allocs") or {}
        return (sum(allocs.get(str(line), [0, 0])[0] for line in lines),
                sum(allocs.get(str(line), [0, 0])[1] for line in lines))

    number, size = allocated(original, orig_lines)
    fixed_number, fixed_size = allocated(fixed, fixed_lines)
    if runs < 2:
        j.reason = (f"line {finding.line} ran {runs} time{'s' if runs != 1 else ''}{_within(original)}"
                    " (a loop must iterate to show it)")
        return
    fixed_runs = _executions(fixed, fixed_own) or runs
    per, per_bytes = number / runs, size / runs
    fixed_per, fixed_per_bytes = fixed_number / fixed_runs, fixed_size / fixed_runs
    j.evidence.append(_entry(f"tensor allocations per iteration at line {finding.line}", round(per, 3),
                             round(fixed_per, 3)))
    j.evidence.append(_entry("bytes allocated per iteration", int(per_bytes), int(fixed_per_bytes)))
    j.witness = fixed_runs > 0 and per >= fixed_per + 0.5
    if j.witness:
        j.headline.append(f"{per:.3g} allocation{'s' if per != 1 else ''} ({format_bytes(per_bytes)}) per iteration,"
                          f" fixed {fixed_per:.3g} ({runs} iterations{'' if fixed_runs == runs else f', fixed {fixed_runs}'})")
    else:
        j.reason = "the fixed version allocates as often per iteration"


def _judge_training_mode(original: dict, fixed: dict, j: _Judgement) -> None:
    """The model left in eval mode for training: count the training forwards (outputs that require
    grad, of a module with dropout or batch norm) that ran in eval mode, in both variants."""
    def eval_mode_training_calls(evidence):
        calls = in_eval = 0
        for site in (evidence.get("sites") or {}).values():
            if site.get("requires_grad", 0) and site.get("mode_sensitive", 0):
                calls += site["calls"]
                in_eval += site["calls"] - site.get("training", 0)
        return in_eval, calls

    in_eval, calls = eval_mode_training_calls(original)
    fixed_in_eval, fixed_calls = eval_mode_training_calls(fixed)
    if not calls:
        j.reason = "no training forward of a model with dropout or batch norm ran"
        return
    j.evidence.append(_entry("training forwards run in eval mode (dropout / batch norm off)",
                             f"{in_eval}/{calls}", f"{fixed_in_eval}/{fixed_calls}"))
    j.witness = in_eval > 0 and fixed_calls > 0 and fixed_in_eval == 0
    if j.witness:
        j.headline.append(f"{in_eval}/{calls} training forwards ran in eval mode, dropout and batch norm off"
                          f" (fixed: 0/{fixed_calls})")
    else:
        j.reason = (f"every training forward ran in training mode{_within(original)}" if not in_eval
                    else "the fixed version still trains in eval mode")


def trains_back(finding: Finding) -> bool:
    """An ML005 whose fix switches the model back to training mode (eval() never undone)."""
    return any(".train(" in edit.content for edit in (finding.fix.edits if finding.fix else ()))


def judge_ml005(finding: Finding, original: dict, fixed: dict, orig_lines, fixed_lines, j: _Judgement) -> None:
    if trains_back(finding):
        _judge_training_mode(original, fixed, j)  # the fix switches the model back to training mode
        return
    a, b = _sites(original, orig_lines), _sites(fixed, fixed_lines)
    calls, fixed_calls = int(a.get("calls", 0)), int(b.get("calls", 0))
    if not calls:
        j.reason = f"the forward call at line {finding.line} did not run{_within(original)}"
        return
    j.evidence.append(_entry("calls in training mode", f"{int(a.get('training', 0))}/{calls}",
                             f"{int(b.get('training', 0))}/{fixed_calls}"))
    j.evidence.append(_entry("identical calls giving different outputs (dropout active)",
                             f"{int(a.get('outputs_differ', 0))}/{int(a.get('probes', 0))}",
                             f"{int(b.get('outputs_differ', 0))}/{int(b.get('probes', 0))}"))
    j.evidence.append(_entry("calls that changed batch-norm running statistics",
                             f"{int(a.get('bn_changed', 0))}/{calls}", f"{int(b.get('bn_changed', 0))}/{fixed_calls}"))
    shows = lambda s: s.get("outputs_differ", 0) > 0 or s.get("bn_changed", 0) > 0  # noqa: E731
    j.witness = shows(a) and fixed_calls > 0 and not shows(b)
    if j.witness:
        parts = []
        if a.get("outputs_differ", 0):
            parts.append("two identical evaluation calls gave different outputs (dropout active)")
        if a.get("bn_changed", 0):
            parts.append(f"batch-norm running statistics changed in {int(a['bn_changed'])}/{calls} evaluation calls")
        j.headline.append("; ".join(parts) + " (fixed: neither)")
    elif not shows(a):
        j.reason = ("the model ran in training mode but nothing in it behaves differently in eval mode"
                    if a.get("training", 0) else "the model was not in training mode at this call")
    else:
        j.reason = "the fixed version still changes its outputs or batch-norm statistics"


def _within(evidence: dict) -> str:
    """Why code may not have been reached: the run ended at the caps."""
    if evidence.get("decided"):
        return ""
    unreached = evidence.get("unreached") or []
    if unreached:
        lines = ", ".join(str(line) for line in unreached)
        return (f" (line{'s' if len(unreached) > 1 else ''} {lines} did not run within the loop iterations allowed"
                " before the caps apply; a higher --steps allows more)")
    return " within the capped run (a higher --steps runs more of it)"


def site_lines(finding: Finding) -> List[int]:
    return list(range(finding.line, max(finding.line, finding.end_line) + 1))


# --- the verdict -------------------------------------------------------------------------------


def judge(finding: Finding, original, fixed, timing: Optional[dict]) -> Verification:
    """The verdict for `finding` from the runs of the original and fixed variants (``Variant``
    objects of runner.py: ``evidence`` and ``finding_lines``) and the timing comparison, if any."""
    j = _Judgement()
    a, b = original.evidence, fixed.evidence
    key = finding.sort_key()
    lines, fixed_lines = original.finding_lines[key], fixed.finding_lines[key]
    if finding.code == "ML001":
        judge_ml001(finding, a, b, j)
    elif finding.code == "ML002":
        judge_ml002(finding, a, b, lines, fixed_lines, j)
    elif finding.code == "ML004":
        judge_ml004(finding, a, b, lines, fixed_lines, j, fixed.own_lines.get(key, ()))
    elif finding.code == "ML005":
        judge_ml005(finding, a, b, lines, fixed_lines, j)

    # memory of the whole run (fresh process per variant)
    peak, fixed_peak = a.get("peak_bytes"), b.get("peak_bytes")
    if peak and fixed_peak:
        j.evidence.append(_entry("peak live tensor bytes (whole run)", int(peak), int(fixed_peak),
                                 _ratio(peak, fixed_peak)))
    cuda, fixed_cuda = a.get("allocator_peak"), b.get("allocator_peak")
    if cuda and fixed_cuda:
        for name in ("allocated", "reserved"):
            j.evidence.append(_entry(f"CUDA max memory {name}", cuda[name], fixed_cuda[name],
                                     _ratio(cuda[name], fixed_cuda[name])))

    time_confirmed = False
    time_text = None
    if timing:
        if timing.get("skipped"):
            j.details.append(timing["skipped"])
        elif timing.get("error"):
            time_text = f"time not measured: {timing['error']}"
        else:
            verdict = judge_timing(timing.get("ab"), timing.get("aa"))
            time_confirmed = verdict.confirmed
            time_text = f"{timing['metric']}: {verdict.text}"
            ab, aa = timing.get("ab"), timing.get("aa")
            if ab is not None:
                j.evidence.append(_entry(f"{timing['metric']} (paired median ratio, {ab.rounds} rounds)",
                                         None, None, ab.ratio, (ab.low, ab.high)))
            if aa is not None:
                j.evidence.append(_entry("A/A control: the original against itself", None, None, aa.ratio,
                                         (aa.low, aa.high)))

    details = list(j.details)
    if time_text:
        details.append(time_text)
    if j.witness or time_confirmed:
        parts = list(j.headline)
        if time_confirmed and timing and timing.get("ab"):
            ab = timing["ab"]
            parts.append(f"{ab.ratio:.2f}x time [{ab.low:.2f}, {ab.high:.2f}]")
        elif time_text:
            parts.append("time not confirmable on this host" if "not confirmable" in time_text else time_text)
        return Verification("confirmed", "confirmed: " + ", ".join(parts), j.evidence, details)
    reason = j.reason or "no runtime difference between the original and the fixed version"
    return Verification("not-confirmed", f"not confirmed: {reason}", j.evidence, details)
