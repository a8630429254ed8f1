"""The validation gate: keep a candidate only when it beats the incumbent on the
same validation tasks.

Invariant: every decision carries its evidence whatever the mode — delta, n,
per-task flips and a one-sided paired p-value — and a reason in one sentence.
Ties are always rejected. A regression allowance (`max_regressions`: validation
tasks a candidate may turn from pass to fail) applies on top of any built-in
rule; `no-regression` is the strict rule with an allowance of 0 unless one is set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from skillopt._util import display
from skillopt.optimize.stats import p_value_and_exact, paired_p_value
from skillopt.rollouts.outcomes import TaskOutcome

if TYPE_CHECKING:
    from skillopt.config import Settings

GATES = ("strict", "margin", "paired", "no-regression")  # the built-in gates


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
    per_task: dict[str, Any] = field(
        default_factory=dict, compare=False
    )  # id -> [incumbent, candidate]
    unrun: int = 0  # validation tasks a racing gate did not need to run
    max_regressions: int | None = None  # the pass -> fail allowance, when one applied
    # `--part both`: the other part's score, which must not fall (part, n, means)
    held: dict[str, Any] | None = None

    @property
    def over_allowance(self) -> bool:
        """Whether the candidate turned more tasks from pass to fail than allowed."""
        return self.max_regressions is not None and len(self.pass_to_fail) > self.max_regressions

    def raced(self, ran: int, tasks: int) -> Decision:
        """This decision, taken by a race after `ran` of `tasks` comparable tasks: the
        rest could not have changed it, so they were not run."""
        if self.over_allowance:  # more tasks can only add regressions, never take one back
            reason = (
                f"{_gains(self)}: more than --max-regressions {self.max_regressions} "
                f"(settled after {ran} of {tasks} validation tasks)"
            )
        elif ran == 0:  # the incumbent leaves no room: nothing the candidate does can win
            reason = (
                f"the incumbent's scores on the {tasks} validation tasks leave no room for "
                "a gain the gate would accept (settled before any task ran)"
            )
        else:
            reason = (
                f"cannot beat the incumbent: {display.delta(self.delta)} on the {ran} "
                f"task{'s' if ran != 1 else ''} scored "
                f"(settled after {ran} of {tasks} validation tasks)"
            )
        return replace(self, reason=reason, unrun=tasks - ran)

    @property
    def flips(self) -> tuple[int, int]:
        """(fail → pass, pass → fail) counts: what the memory keeps of a decision."""
        return len(self.fail_to_pass), len(self.pass_to_fail)

    @property
    def delta(self) -> float | None:
        if self.incumbent_mean is None or self.candidate_mean is None:
            return None
        return self.candidate_mean - self.incumbent_mean

    def to_dict(self) -> dict[str, Any]:
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
            **({"unrun": self.unrun} if self.unrun else {}),
            **({} if self.max_regressions is None else {"max_regressions": self.max_regressions}),
            **({} if self.held is None else {"held": self.held}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Decision:
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
            unrun=d.get("unrun", 0),
            max_regressions=d.get("max_regressions"),
            held=d.get("held"),
        )


def _gains(d: Decision) -> str:
    """`gains 3, loses 1 (pass → fail)`: the decision's flips, both ways."""
    return f"gains {len(d.fail_to_pass)}, loses {len(d.pass_to_fail)} (pass → fail)"


def allowance(mode: str, max_regressions: int | None) -> int | None:
    """The pass -> fail allowance a gate applies: the one set, else 0 for
    `no-regression` and none for the other rules."""
    if max_regressions is None and mode == "no-regression":
        return 0
    return max_regressions


def best_delta(known: Sequence[float], headroom: Sequence[float]) -> float | None:
    """The largest mean paired difference a comparison can still reach. `known` are
    the differences (candidate - incumbent) of the tasks compared so far; `headroom`
    is 1 - the incumbent's value for each task still to run, whose candidate may
    score anything in [0, 1] or end unscored (left out of the comparison). The best
    completion includes the tasks of most headroom and leaves out the rest, so the
    maximum is over the prefixes of the headroom sorted high to low. None when no
    completion compares any task."""
    total, n = float(sum(known)), len(known)
    best = total / n if n else None
    for h in sorted(headroom, reverse=True):
        total, n = total + h, n + 1
        if best is None or total / n > best:
            best = total / n
    return best


def _value(outcome: TaskOutcome) -> float:
    assert outcome.value is not None  # only tasks scored for both are compared
    return outcome.value


def can_accept(
    known: Sequence[float],
    headroom: Sequence[float],
    *,
    mode: str = "strict",
    min_delta: float = 0.0,
    alpha: float = 0.05,
    regressions: int = 0,
    max_regressions: int | None = None,
) -> bool:
    """Whether some outcome of the tasks still to run could make `decide` accept:
    False only when every completion is rejected (then the gate need not run them).

    `regressions` is the count of tasks compared so far that went pass -> fail: more
    tasks can only add to it, so once it is over the allowance nothing can accept.

    Exact for `strict`, `margin` and `no-regression` (`best_delta`, whose best
    completion passes every task it runs, so it adds no regression). For `paired`,
    a completion needs both a mean difference above the margin and p <= alpha; each
    is bounded on its own: the smallest p any completion reaches is the one with
    every task still to run at its full headroom (a larger positive difference never
    raises the sign-flip p-value, a left-out task never lowers it), used only when
    that p-value is exact, not the normal approximation."""
    eps = 1e-12
    limit = allowance(mode, max_regressions)
    if limit is not None and regressions > limit:
        return False
    best = best_delta(known, headroom)
    threshold = eps if mode in ("strict", "no-regression") else max(eps, min_delta + eps)
    if best is None or best <= threshold:
        return False
    if mode == "paired":
        p, exact = p_value_and_exact([*known, *(h for h in headroom if h > eps)])
        if exact and p > alpha:
            return False
    return True


def decide(
    incumbent: dict[str, TaskOutcome],
    candidate: dict[str, TaskOutcome],
    *,
    mode: str = "strict",
    min_delta: float = 0.0,
    alpha: float = 0.05,
    max_regressions: int | None = None,
) -> Decision:
    """Compare per-task outcomes on the tasks both scored. `max_regressions`: the
    tasks the candidate may turn from pass to fail, on top of the mode's rule
    (`no-regression`: the strict rule, and 0 when None)."""
    if mode not in GATES:
        raise ValueError(f"unknown gate {mode!r}; choose {', '.join(GATES)}")
    ids = [
        t
        for t in candidate
        if t in incumbent and incumbent[t].value is not None and candidate[t].value is not None
    ]
    per_task = {t: [incumbent[t].value, candidate[t].value] for t in ids}
    limit = allowance(mode, max_regressions)
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
            max_regressions=limit,
        )
    pairs = {t: (_value(incumbent[t]), _value(candidate[t])) for t in ids}
    inc = sum(i for i, _ in pairs.values()) / len(ids)
    cand = sum(c for _, c in pairs.values()) / len(ids)
    p = paired_p_value([c - i for i, c in pairs.values()])
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
    elif mode in ("strict", "no-regression"):
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
    d = Decision(accepted, reason, mode, len(ids), inc, cand, p, f2p, p2f, per_task)
    d = replace(d, max_regressions=limit)
    if limit is None or not accepted:  # a rejection already has its reason
        return d
    if d.over_allowance:
        reason = f"better by {display.delta(delta)} but {_gains(d)}: more than "
        return replace(d, accepted=False, reason=f"{reason}--max-regressions {limit}")
    return replace(d, reason=f"{_gains(d)}, within --max-regressions {limit}; {reason}")


@runtime_checkable
class Gate(Protocol):
    """Decides whether a candidate replaces the incumbent.

    Contract: `decide` compares per-task outcomes on the validation tasks both
    skills were scored on (`TaskOutcome.value` None: unscored, to be left out), is
    pure (no model call, no I/O), rejects ties, and returns a `Decision` carrying
    its evidence and a one-sentence reason (it goes into the commit and report).
    `name` is recorded with every decision (`Skillopt-Gate`)."""

    name: str

    def decide(
        self, incumbent: Mapping[str, TaskOutcome], candidate: Mapping[str, TaskOutcome]
    ) -> Decision: ...


@dataclass(frozen=True)
class ThresholdGate:
    """The built-in gates (`strict`, `margin`, `paired`, `no-regression`) as a `Gate`;
    `max_regressions` (see `decide`) applies to every one of them when set."""

    mode: str = "strict"
    min_delta: float = 0.0
    alpha: float = 0.05
    max_regressions: int | None = None

    @property
    def name(self) -> str:
        return self.mode

    def decide(
        self, incumbent: Mapping[str, TaskOutcome], candidate: Mapping[str, TaskOutcome]
    ) -> Decision:
        return decide(dict(incumbent), dict(candidate), **self._rule())

    def can_accept(
        self, known: Sequence[float], headroom: Sequence[float], regressions: int = 0
    ) -> bool:
        """See `can_accept`: False when no outcome of the tasks left can accept."""
        return can_accept(known, headroom, regressions=regressions, **self._rule())

    def _rule(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "min_delta": self.min_delta,
            "alpha": self.alpha,
            "max_regressions": self.max_regressions,
        }

    @classmethod
    def strict(cls, settings: Settings) -> ThresholdGate:
        return cls("strict", settings.min_delta, settings.alpha, settings.max_regressions)

    @classmethod
    def margin(cls, settings: Settings) -> ThresholdGate:
        return cls("margin", settings.min_delta, settings.alpha, settings.max_regressions)

    @classmethod
    def paired(cls, settings: Settings) -> ThresholdGate:
        return cls("paired", settings.min_delta, settings.alpha, settings.max_regressions)

    @classmethod
    def no_regression(cls, settings: Settings) -> ThresholdGate:
        return cls("no-regression", settings.min_delta, settings.alpha, settings.max_regressions)


def build_gate(settings: Settings) -> Gate:
    """The gate `settings.gate` names (a built-in or a plugin's)."""
    from skillopt.errors import InputError
    from skillopt.plugins import registry

    reg = registry()
    entry = reg.find("gate", settings.gate)
    if entry is None:
        raise InputError(
            f"unknown gate {settings.gate!r}; choose one of: {', '.join(reg.names('gate'))}",
            field="gate",
        )
    gate: Gate = entry.build(Gate, "has no `name` and `decide(incumbent, candidate)`", settings)
    return gate


@dataclass(frozen=True)
class Race:
    """The candidate's validation tasks in the order that settles the gate soonest,
    and the test of whether it is settled: a racing gate runs them in `order` and
    stops once `settled` says that no outcome of the tasks left could accept.

    Only rejections are decided early: an accepted candidate becomes the incumbent,
    whose every validation task the next gate needs anyway, and its score stays
    the mean over all of them. Tasks the incumbent left unscored are not run (they
    cannot be compared). Incumbent failures come first (only there can the
    candidate gain), then the tasks that flipped in recent gates (where candidates
    tend to lose), then the rest, each group in suite order."""

    gate: ThresholdGate
    incumbent: Mapping[str, TaskOutcome]
    order: tuple[str, ...]

    @classmethod
    def plan(
        cls,
        gate: ThresholdGate,
        incumbent: Mapping[str, TaskOutcome],
        task_ids: Sequence[str],
        recent: Sequence[str] = (),
    ) -> Race:
        scored = [t for t in task_ids if t in incumbent and incumbent[t].value is not None]
        flipped = set(recent)

        def rank(task_id: str) -> int:
            if not incumbent[task_id].passed:
                return 0
            return 1 if task_id in flipped else 2

        return cls(gate, incumbent, tuple(sorted(scored, key=rank)))

    def settled(self, candidate: Mapping[str, TaskOutcome]) -> bool:
        """Whether every outcome of the tasks of `order` not in `candidate` (the
        tasks finished so far) leaves the candidate rejected."""
        known, headroom, regressions = [], [], 0
        for task_id in self.order:
            base = self.incumbent[task_id].value
            assert base is not None
            got = candidate.get(task_id)
            if got is None:
                headroom.append(max(0.0, 1.0 - base))
            elif got.value is not None:
                known.append(got.value - base)
                regressions += bool(self.incumbent[task_id].passed and not got.passed)
        return not self.gate.can_accept(known, headroom, regressions)
