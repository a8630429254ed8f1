"""The racing gate decides exactly as the full gate: over random outcome vectors,
whenever the race says the rest of the validation tasks cannot change the outcome,
the decision on the tasks run so far and the decision on all of them both reject."""

from __future__ import annotations

import random

import pytest

from skillopt.optimize.gate import Race, ThresholdGate, best_delta, can_accept, decide
from skillopt.rollouts.outcomes import TaskOutcome

VALUES = {
    "binary": [0.0, 1.0],
    "graded": [0.0, 0.25, 0.5, 0.75, 1.0],
}


def outcome(task_id: str, value: float | None) -> TaskOutcome:
    if value is None:
        return TaskOutcome(task_id, None, None, 1, 0)
    return TaskOutcome(task_id, value, value >= 0.5, 1, 1)


def draw(rng: random.Random, n: int, values: list[float], unscored: float) -> list:
    return [None if rng.random() < unscored else rng.choice(values) for _ in range(n)]


GATES = [
    ThresholdGate("strict"),
    ThresholdGate("margin", min_delta=0.1),
    ThresholdGate("paired", min_delta=0.0, alpha=0.05),
    ThresholdGate("paired", min_delta=0.05, alpha=0.2),
    ThresholdGate("no-regression"),
    ThresholdGate("no-regression", max_regressions=1),
    ThresholdGate("margin", min_delta=0.1, max_regressions=0),
]


@pytest.mark.parametrize("kind", list(VALUES))
@pytest.mark.parametrize(
    "gate", GATES, ids=lambda g: f"{g.mode}-{g.min_delta}-{g.alpha}-{g.max_regressions}"
)
def test_an_early_decision_always_equals_the_full_one(gate, kind):
    rng = random.Random(f"{gate}:{kind}")
    early = saved = 0
    trials = 1500
    for _ in range(trials):
        n = rng.randint(1, 16)
        ids = [f"t{i}" for i in range(n)]
        skill = rng.random()  # how good the candidate is, so both decisions occur
        inc = dict(zip(ids, (outcome(t, v) for t, v in zip(ids, draw(rng, n, VALUES[kind], 0.1)))))
        cand_values = [
            None
            if rng.random() < 0.1
            else (1.0 if rng.random() < skill else rng.choice(VALUES[kind]))
            for _ in ids
        ]
        cand = {t: outcome(t, v) for t, v in zip(ids, cand_values)}
        full = gate.decide(inc, cand)
        recent = rng.sample(ids, k=min(n, rng.randint(0, 3)))
        race = Race.plan(gate, inc, ids, recent)
        assert set(race.order) == {t for t in ids if inc[t].value is not None}
        for k in range(len(race.order) + 1):
            so_far = {t: cand[t] for t in race.order[:k]}
            if race.settled(so_far):
                decision = gate.decide(inc, so_far)
                assert not decision.accepted and not full.accepted, (inc, cand, k)
                early += k < len(race.order)
                saved += len(race.order) - k
                break
    # not vacuous: many races end before their last task (measured: 15-45% of them)
    assert early > trials // 10 and saved > early


def test_the_order_puts_incumbent_failures_then_recent_flips_first():
    ids = ["a", "b", "c", "d", "e", "f"]
    values = {"a": 1.0, "b": 0.0, "c": 1.0, "d": None, "e": 0.0, "f": 1.0}
    inc = {t: outcome(t, v) for t, v in values.items()}
    race = Race.plan(ThresholdGate("strict"), inc, ids, recent=["f", "b"])
    assert race.order == ("b", "e", "f", "a", "c")  # d: the incumbent has no score


def test_best_delta_takes_the_best_prefix_of_the_headroom():
    assert best_delta([], []) is None
    assert best_delta([], [0.0, 1.0]) == 1.0  # run only the task with headroom
    assert best_delta([0.5], [0.0]) == 0.5  # a task that can only tie is left out
    assert best_delta([-1.0, 0.0], [1.0, 1.0, 0.5]) == pytest.approx(1.5 / 5)


def test_paired_uses_the_exact_p_value_bound():
    # 3 known wins and room for 1 more: at best p = 1/16 > 0.05, so it cannot accept
    assert not can_accept([1.0, 1.0, 1.0], [1.0], mode="paired", alpha=0.05)
    # room for 2 more: 5 wins of 5 give p = 1/32 <= 0.05
    assert can_accept([1.0, 1.0, 1.0], [1.0, 1.0], mode="paired", alpha=0.05)
    # strict accepts any gain
    assert can_accept([1.0, 1.0, 1.0], [], mode="strict")


def test_a_race_settled_before_any_task_says_why():
    inc = {t: outcome(t, 1.0) for t in ("a", "b")}
    race = Race.plan(ThresholdGate("strict"), inc, ["a", "b"])
    assert race.settled({})  # a perfect incumbent: no candidate can beat it
    decision = decide(inc, {}).raced(0, 2)
    assert not decision.accepted and decision.unrun == 2
    assert decision.reason == (
        "the incumbent's scores on the 2 validation tasks leave no room for a gain the "
        "gate would accept (settled before any task ran)"
    )
    assert decision.to_dict()["unrun"] == 2 and "unrun" not in decide(inc, inc).to_dict()


def test_a_race_settled_after_one_task_says_task_not_tasks():
    inc = {t: outcome(t, v) for t, v in zip("ab", [0.0, 1.0])}
    one = decide(inc, {"a": outcome("a", 0.0)}).raced(1, 2)
    assert one.reason == (
        "cannot beat the incumbent: +0.000 on the 1 task scored "
        "(settled after 1 of 2 validation tasks)"
    )
    two = decide(inc, {"a": outcome("a", 0.0), "b": outcome("b", 0.0)}).raced(2, 3)
    assert "on the 2 tasks scored (settled after 2 of 3 validation tasks)" in two.reason


def test_a_race_settles_once_the_regressions_pass_the_allowance():
    # the incumbent fails a, b, c and passes d, e, f; the candidate wins a, b, c but
    # loses d and e: the mean could still rise, the allowance cannot be kept
    inc = {t: outcome(t, v) for t, v in zip("abcdef", [0.0, 0.0, 0.0, 1.0, 1.0, 1.0])}
    cand = {t: outcome(t, v) for t, v in zip("abcdef", [1.0, 1.0, 1.0, 0.0, 0.0, 1.0])}
    allowed = {0: "d", 1: "e"}  # the task whose loss settles the race, per allowance
    for limit, last in allowed.items():
        gate = ThresholdGate("no-regression", max_regressions=limit)
        race = Race.plan(gate, inc, list("abcdef"))
        assert race.order == tuple("abcdef")  # incumbent failures first
        at = next(k for k in range(7) if race.settled({t: cand[t] for t in race.order[:k]}))
        assert race.order[at - 1] == last  # settled on the regression over the allowance
        so_far = {t: cand[t] for t in race.order[:at]}
        strict = Race.plan(ThresholdGate("strict"), inc, list("abcdef"))
        assert not strict.settled(so_far)  # the mean alone could still be beaten
        decision = gate.decide(inc, so_far).raced(at, 6)
        assert not decision.accepted and decision.unrun == 6 - at
        assert decision.reason == (
            f"gains 3, loses {limit + 1} (pass → fail): more than --max-regressions {limit} "
            f"(settled after {at} of 6 validation tasks)"
        )
    # with two regressions allowed, the candidate (+1/6) is accepted on all six tasks
    gate = ThresholdGate("no-regression", max_regressions=2)
    race = Race.plan(gate, inc, list("abcdef"))
    assert not any(race.settled({t: cand[t] for t in race.order[:k]}) for k in range(7))
    assert gate.decide(inc, cand).accepted


def test_can_accept_counts_the_regressions_so_far():
    assert can_accept([1.0, 1.0, -1.0], [1.0], mode="strict")
    assert not can_accept([1.0, 1.0, -1.0], [1.0], mode="no-regression", regressions=1)
    assert can_accept(
        [1.0, 1.0, -1.0], [1.0], mode="no-regression", regressions=1, max_regressions=1
    )
    assert not can_accept([1.0, -1.0], [1.0], mode="strict", regressions=1, max_regressions=0)
