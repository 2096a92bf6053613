"""Paired timing statistics for the A/B comparison (pure Python, no torch).

Each round runs every variant once, in a fresh random order, so a round gives one paired ratio
original/fixed. The point estimate is the median of the per-round ratios; its 95% interval comes
from a bootstrap over rounds. The A/A control (the original against a second process running the
same original) gives the noise floor: how far from 1 the same statistic strays when nothing
differs. A time effect counts only when its interval excludes 1, it is further from 1 than the
noise floor, and a sign test over the rounds gives p < 0.01 (so never with fewer than 8 rounds) (shared/research/memory-and-verification.md: sequential timing got the sign wrong on
this kind of host; interleaving and an A/A control did not).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from math import comb
from statistics import median
from typing import List, Optional, Sequence


SIGN_TEST_ALPHA = 0.01


@dataclass
class Ratio:
    ratio: float
    low: float
    high: float
    rounds: int
    slower: int = 0  # rounds where a was slower than b
    sign_p: float = 1.0  # two-sided sign test

    def excludes_one(self) -> bool:
        return self.low > 1.0 or self.high < 1.0

    def spread(self) -> float:
        """How far from 1 this statistic reaches (used for the A/A noise floor)."""
        return max(abs(self.ratio - 1.0), abs(self.low - 1.0), abs(self.high - 1.0))


def percentile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        raise ValueError("no values")
    position = (len(sorted_values) - 1) * q
    lower = int(position)
    upper = min(lower + 1, len(sorted_values) - 1)
    weight = position - lower
    return sorted_values[lower] * (1 - weight) + sorted_values[upper] * weight


def paired_ratio(a: Sequence[float], b: Sequence[float], resamples: int = 2000, seed: int = 0) -> Optional[Ratio]:
    """Median of a[i]/b[i] with a bootstrap 95% interval; None without at least 3 usable pairs."""
    ratios: List[float] = [x / y for x, y in zip(a, b) if x > 0 and y > 0]
    if len(ratios) < 3:
        return None
    rng = random.Random(seed)
    n = len(ratios)
    medians = sorted(median(ratios[rng.randrange(n)] for _ in range(n)) for _ in range(resamples))
    slower = sum(1 for r in ratios if r > 1.0)
    return Ratio(median(ratios), percentile(medians, 0.025), percentile(medians, 0.975), n, slower,
                 sign_test(slower, sum(1 for r in ratios if r != 1.0)))


def sign_test(successes: int, trials: int) -> float:
    """Two-sided exact binomial sign test p-value (p = 1/2)."""
    if trials == 0:
        return 1.0
    extreme = max(successes, trials - successes)
    tail = sum(comb(trials, k) for k in range(extreme, trials + 1)) / 2 ** trials
    return min(1.0, 2 * tail)


@dataclass
class TimingVerdict:
    confirmed: bool
    text: str


def judge_timing(ab: Optional[Ratio], aa: Optional[Ratio]) -> TimingVerdict:
    """Is the original slower than the fixed variant beyond the interval and the noise floor?"""
    if ab is None or aa is None:
        return TimingVerdict(False, "time not measured")
    noise = aa.spread()
    interval = f"{ab.ratio:.2f}x time [{ab.low:.2f}, {ab.high:.2f}]"
    floor = f"A/A noise floor ±{noise * 100:.0f}%, {ab.rounds} rounds"
    significant = ab.sign_p < SIGN_TEST_ALPHA
    if ab.low > 1.0 and ab.ratio - 1.0 > noise and significant:
        return TimingVerdict(True, f"{interval} ({floor})")
    if ab.high < 1.0 and 1.0 - ab.ratio > noise and significant:
        return TimingVerdict(False, f"{interval}: the fixed version is slower ({floor})")
    return TimingVerdict(False, f"{interval}: not confirmable by timing on this host ({floor})")
