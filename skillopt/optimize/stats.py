"""The one-sided paired test every gate decision reports: a sign-flip permutation
test over the per-task differences of candidate and incumbent.

Invariant: exact (by enumerating the distribution of the sum) while that
distribution has at most 200,000 distinct sums; a normal
approximation beyond, and `p_value_and_exact` says which one answered.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

_EXACT_STATES = 200_000


def paired_p_value(deltas: list[float]) -> float:
    """One-sided sign-flip permutation test of H1: mean(delta) > 0.

    Under H0 each paired difference is as likely to have either sign. Exact by
    enumerating the distribution of the sum (merging equal sums, so 0/1 scores
    cost almost nothing); a normal approximation when that distribution would be
    too large. Zero differences carry no information and are dropped."""
    return p_value_and_exact(deltas)[0]


def p_value_and_exact(deltas: Sequence[float]) -> tuple[float, bool]:
    """`paired_p_value`, and whether it is exact (not the normal approximation)."""
    d = [x for x in deltas if abs(x) > 1e-12]
    if not d:
        return 1.0, True
    observed = sum(d)
    dist: dict[float, int] = {0.0: 1}
    for x in d:
        nxt: dict[float, int] = {}
        for s, c in dist.items():
            for v in (round(s + x, 9), round(s - x, 9)):
                nxt[v] = nxt.get(v, 0) + c
        dist = nxt
        if len(dist) > _EXACT_STATES:
            z = observed / math.sqrt(sum(x * x for x in d))
            return 0.5 * math.erfc(z / math.sqrt(2)), False
    total = 2 ** len(d)
    hits = sum(c for s, c in dist.items() if s >= observed - 1e-9)
    return float(hits / total), True
