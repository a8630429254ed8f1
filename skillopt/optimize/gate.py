"""The validation gate: keep a candidate only when it beats the incumbent on the
same validation tasks.

Invariant: every decision carries its evidence whatever the mode — delta, n,
per-task flips and a one-sided paired p-value — and a reason in one sentence.
Ties are always rejected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from skillopt import display
from skillopt.evaluation import TaskOutcome

GATES = ("strict", "margin", "paired")
_EXACT_STATES = 200_000


@dataclass(frozen=True)
class Decision:
    accepted: bool
    reason: str
    mode: str
    n: int
    incumbent_mean: float | None
    candidate_mean: float | None
    p_value: float | None
    fail_to_pass: tuple[str, ...] = ()
    pass_to_fail: tuple[str, ...] = ()
    per_task: dict = field(default_factory=dict, compare=False)  # id -> [incumbent, candidate]

    @property
    def delta(self) -> float | None:
        if self.incumbent_mean is None or self.candidate_mean is None:
            return None
        return self.candidate_mean - self.incumbent_mean

    def to_dict(self) -> dict:
        return {
            "accepted": self.accepted,
            "reason": self.reason,
            "mode": self.mode,
            "n": self.n,
            "incumbent_mean": self.incumbent_mean,
            "candidate_mean": self.candidate_mean,
            "delta": self.delta,
            "p_value": self.p_value,
            "fail_to_pass": list(self.fail_to_pass),
            "pass_to_fail": list(self.pass_to_fail),
            "per_task": self.per_task,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Decision:
        return cls(
            accepted=d["accepted"],
            reason=d["reason"],
            mode=d["mode"],
            n=d["n"],
            incumbent_mean=d["incumbent_mean"],
            candidate_mean=d["candidate_mean"],
            p_value=d["p_value"],
            fail_to_pass=tuple(d["fail_to_pass"]),
            pass_to_fail=tuple(d["pass_to_fail"]),
            per_task=d.get("per_task", {}),
        )


def paired_p_value(deltas: list[float]) -> float:
    """One-sided sign-flip permutation test of H1: mean(delta) > 0.

    Under H0 each paired difference is as likely to have either sign. Exact by
    enumerating the distribution of the sum (merging equal sums, so 0/1 scores
    cost almost nothing); a normal approximation when that distribution would be
    too large. Zero differences carry no information and are dropped."""
    d = [x for x in deltas if abs(x) > 1e-12]
    if not d:
        return 1.0
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
            return 0.5 * math.erfc(z / math.sqrt(2))
    total = 2 ** len(d)
    hits = sum(c for s, c in dist.items() if s >= observed - 1e-9)
    return hits / total


def decide(
    incumbent: dict[str, TaskOutcome],
    candidate: dict[str, TaskOutcome],
    *,
    mode: str = "strict",
    min_delta: float = 0.0,
    alpha: float = 0.05,
) -> Decision:
    """Compare per-task outcomes on the tasks both scored."""
    if mode not in GATES:
        raise ValueError(f"unknown gate {mode!r}; choose {', '.join(GATES)}")
    ids = [
        t
        for t in candidate
        if t in incumbent and incumbent[t].value is not None and candidate[t].value is not None
    ]
    per_task = {t: [incumbent[t].value, candidate[t].value] for t in ids}
    if not ids:
        return Decision(
            False,
            "no validation task was scored for both; nothing to compare",
            mode,
            0,
            None,
            None,
            None,
            per_task=per_task,
        )
    inc = sum(incumbent[t].value for t in ids) / len(ids)
    cand = sum(candidate[t].value for t in ids) / len(ids)
    p = paired_p_value([candidate[t].value - incumbent[t].value for t in ids])
    f2p = tuple(t for t in ids if not incumbent[t].passed and candidate[t].passed)
    p2f = tuple(t for t in ids if incumbent[t].passed and not candidate[t].passed)
    delta = cand - inc
    eps = 1e-12
    if delta <= eps:
        accepted = False
        reason = (
            "tie: no improvement on validation"
            if abs(delta) <= eps
            else f"worse on validation ({display.delta(delta)})"
        )
    elif mode == "strict":
        accepted, reason = True, f"better on validation ({display.delta(delta)})"
    elif mode == "margin":
        accepted = delta > min_delta + eps
        reason = (
            f"better by {display.delta(delta)}, above the margin {min_delta:g}"
            if accepted
            else f"better by {display.delta(delta)}, not above the margin {min_delta:g}"
        )
    else:
        accepted = p <= alpha and delta > min_delta + eps
        reason = (
            f"better by {display.delta(delta)} with p={display.p_value(p)} <= {alpha:g}"
            if accepted
            else f"better by {display.delta(delta)} but p={display.p_value(p)} > {alpha:g}"
            if p > alpha
            else f"better by {display.delta(delta)}, not above the margin {min_delta:g}"
        )
    return Decision(accepted, reason, mode, len(ids), inc, cand, p, f2p, p2f, per_task)
