"""The validation gate: the paired sign-flip p-value on known data, and decisions in
each mode with their evidence."""

from __future__ import annotations

import math
import random

import pytest

from skillopt.optimize.gate import GATES, Decision, ThresholdGate, decide, paired_p_value
from skillopt.rollouts.outcomes import TaskOutcome


def outcomes(values: dict[str, float | None], threshold: float = 0.5) -> dict[str, TaskOutcome]:
    return {
        t: TaskOutcome(t, v, None if v is None else v >= threshold, 1, 0 if v is None else 1)
        for t, v in values.items()
    }


# ------------------------------------------------------------------------ p-value
class TestPairedPValue:
    def test_all_five_positive(self):
        assert paired_p_value([1, 1, 1, 1, 1]) == pytest.approx(1 / 32)

    def test_three_wins_one_loss(self):
        # sum 2; of the 16 sign patterns, sums >= 2 are +4 (1) and +2 (4): 5/16
        assert paired_p_value([1, 1, 1, -1]) == pytest.approx(5 / 16)

    def test_continuous_enumerated_by_hand(self):
        # observed 0.6; sums of ±0.5 ±0.2 ±0.1: 0.8 0.6 0.4 0.2 -0.2 -0.4 -0.6 -0.8
        # two of eight are >= 0.6
        assert paired_p_value([0.5, 0.2, -0.1]) == pytest.approx(0.25)

    def test_zeros_dropped(self):
        assert paired_p_value([0, 1, 0.0, 1, 1, 0, 1, 1]) == pytest.approx(1 / 32)
        assert paired_p_value([1e-15, 1, 1, 1, -1]) == pytest.approx(5 / 16)

    def test_all_zero_and_empty(self):
        assert paired_p_value([0, 0, 0]) == 1.0
        assert paired_p_value([]) == 1.0

    def test_all_negative_is_one(self):
        assert paired_p_value([-1, -1, -1]) == pytest.approx(1.0)

    def test_single_positive(self):
        assert paired_p_value([0.3]) == pytest.approx(0.5)

    def test_symmetric_is_above_half(self):
        # observed 0: half the patterns are >= 0 plus the ties at 0
        assert paired_p_value([1, -1]) == pytest.approx(3 / 4)

    def test_binomial_tail_exact(self):
        deltas = [1.0] * 60 + [-1.0] * 40
        expected = sum(math.comb(100, k) for k in range(60, 101)) / 2**100
        assert paired_p_value(deltas) == pytest.approx(expected, rel=1e-9)
        assert 0.02 < expected < 0.03  # sanity: about 0.028

    def test_order_does_not_matter(self):
        d = [0.5, -0.25, 1.0, 0.75, -0.5, 0.25]
        assert paired_p_value(d) == pytest.approx(paired_p_value(list(reversed(d))))

    def test_large_continuous_sample_uses_normal_approximation(self):
        rng = random.Random(7)
        deltas = [rng.gauss(0.1, 1.0) for _ in range(60)]  # p is about 0.28 here
        p = paired_p_value(deltas)
        # the closed form the module uses beyond the exact limit
        z = sum(deltas) / math.sqrt(sum(x * x for x in deltas))
        assert p == pytest.approx(0.5 * math.erfc(z / math.sqrt(2)), abs=1e-12)
        # and it agrees with a Monte-Carlo sign-flip estimate
        mc = random.Random(99)
        observed = sum(deltas)
        trials = 20_000
        hits = sum(
            1
            for _ in range(trials)
            if sum(x if mc.random() < 0.5 else -x for x in deltas) >= observed
        )
        assert 0.05 < p < 0.95  # a non-trivial case
        assert p == pytest.approx(hits / trials, abs=0.02)


# ----------------------------------------------------------------------- decisions
class TestDecide:
    def test_strict_accepts_any_positive_delta(self):
        inc = outcomes({"a": 0.5, "b": 0.5, "c": 0.5})
        cand = outcomes({"a": 0.5, "b": 0.5, "c": 0.53})
        d = decide(inc, cand)
        assert d.mode == "strict"
        assert d.accepted
        assert d.delta == pytest.approx(0.01)
        assert d.n == 3
        assert d.p_value == pytest.approx(0.5)

    def test_strict_rejects_tie(self):
        inc = outcomes({"a": 1.0, "b": 0.0})
        cand = outcomes({"a": 0.0, "b": 1.0})
        d = decide(inc, cand, mode="strict")
        assert not d.accepted
        assert "tie" in d.reason
        assert d.delta == pytest.approx(0.0)
        assert d.fail_to_pass == ("b",)
        assert d.pass_to_fail == ("a",)

    def test_tie_with_float_noise_is_a_tie(self):
        inc = outcomes({"a": 0.1, "b": 0.2})
        cand = outcomes({"a": 0.2, "b": 0.1})
        d = decide(inc, cand)
        assert not d.accepted and "tie" in d.reason

    @pytest.mark.parametrize("mode", GATES)
    def test_regression_rejected_in_every_mode(self, mode):
        inc = outcomes({"a": 1.0, "b": 1.0})
        cand = outcomes({"a": 1.0, "b": 0.0})
        d = decide(inc, cand, mode=mode)
        assert not d.accepted
        assert "worse" in d.reason
        assert d.delta == pytest.approx(-0.5)
        assert d.pass_to_fail == ("b",)

    @pytest.mark.parametrize("mode", GATES)
    def test_tie_rejected_in_every_mode(self, mode):
        same = outcomes({"a": 1.0, "b": 0.0})
        d = decide(same, outcomes({"a": 1.0, "b": 0.0}), mode=mode)
        assert not d.accepted and "tie" in d.reason
        assert d.p_value == 1.0

    def test_margin_needs_delta_above_min_delta(self):
        inc = outcomes({t: 0.0 for t in "abcdefghij"})
        one = outcomes({**{t: 0.0 for t in "abcdefghij"}, "a": 1.0})  # +0.1
        two = outcomes({**{t: 0.0 for t in "abcdefghij"}, "a": 1.0, "b": 1.0})  # +0.2
        low = decide(inc, one, mode="margin", min_delta=0.1)
        assert not low.accepted
        assert "not above the margin" in low.reason
        assert low.delta == pytest.approx(0.1)
        high = decide(inc, two, mode="margin", min_delta=0.1)
        assert high.accepted
        assert "above the margin" in high.reason
        assert decide(inc, one, mode="margin").accepted  # default margin 0

    def test_strict_ignores_min_delta(self):
        inc = outcomes({"a": 0.0, "b": 0.0})
        cand = outcomes({"a": 0.1, "b": 0.0})
        assert decide(inc, cand, mode="strict", min_delta=0.5).accepted

    def test_paired_rejects_small_gain_on_few_tasks(self):
        inc = outcomes({"a": 0.0, "b": 1.0, "c": 1.0})
        cand = outcomes({"a": 1.0, "b": 1.0, "c": 1.0})
        d = decide(inc, cand, mode="paired", alpha=0.05)
        assert not d.accepted
        assert d.delta == pytest.approx(1 / 3)
        assert d.p_value == pytest.approx(0.5)
        assert "p=0.500" in d.reason
        assert "0.05" in d.reason
        assert decide(inc, cand, mode="strict").accepted  # strict would take it

    def test_paired_accepts_consistent_gain(self):
        ids = [f"t{i}" for i in range(6)]
        inc = outcomes(dict.fromkeys(ids, 0.0))
        cand = outcomes(dict.fromkeys(ids, 1.0))
        d = decide(inc, cand, mode="paired", alpha=0.05)
        assert d.accepted
        assert d.p_value == pytest.approx(1 / 64)
        assert "p=0.016" in d.reason
        assert d.fail_to_pass == tuple(ids)
        assert d.pass_to_fail == ()

    def test_paired_alpha_boundary_is_inclusive(self):
        ids = [f"t{i}" for i in range(5)]
        inc, cand = outcomes(dict.fromkeys(ids, 0.0)), outcomes(dict.fromkeys(ids, 1.0))
        assert decide(inc, cand, mode="paired", alpha=1 / 32).accepted
        assert not decide(inc, cand, mode="paired", alpha=0.03).accepted

    def test_paired_also_needs_margin(self):
        ids = [f"t{i}" for i in range(6)]
        inc = outcomes(dict.fromkeys(ids, 0.0))
        cand = outcomes(dict.fromkeys(ids, 0.2), threshold=0.5)
        d = decide(inc, cand, mode="paired", alpha=0.05, min_delta=0.5)
        assert d.p_value == pytest.approx(1 / 64)
        assert not d.accepted
        assert "margin" in d.reason

    def test_only_tasks_scored_in_both_count(self):
        inc = outcomes({"a": 0.0, "b": 1.0, "c": None, "d": 1.0})
        cand = outcomes({"a": 1.0, "b": 1.0, "c": 1.0, "e": 0.0, "d": None})
        d = decide(inc, cand)
        assert d.n == 2
        assert set(d.per_task) == {"a", "b"}
        assert d.per_task["a"] == [0.0, 1.0]
        assert d.incumbent_mean == pytest.approx(0.5)
        assert d.candidate_mean == pytest.approx(1.0)
        assert d.fail_to_pass == ("a",)

    def test_flips(self):
        inc = outcomes({"a": 0.0, "b": 1.0, "c": 1.0, "d": 0.0, "e": 0.2})
        cand = outcomes({"a": 1.0, "b": 0.0, "c": 1.0, "d": 0.0, "e": 0.9})
        d = decide(inc, cand)
        assert d.fail_to_pass == ("a", "e")
        assert d.pass_to_fail == ("b",)

    def test_flips_use_pass_flag_not_value(self):
        inc = {"a": TaskOutcome("a", 0.9, False, 1, 1)}
        cand = {"a": TaskOutcome("a", 0.8, True, 1, 1)}
        d = decide(inc, cand)
        assert d.fail_to_pass == ("a",)
        assert not d.accepted

    @pytest.mark.parametrize("mode", GATES)
    def test_every_decision_carries_evidence(self, mode):
        inc = outcomes({"a": 0.0, "b": 1.0, "c": 0.5})
        cand = outcomes({"a": 1.0, "b": 1.0, "c": 0.5})
        d = decide(inc, cand, mode=mode, min_delta=0.1)
        assert d.mode == mode
        assert d.n == 3
        assert d.delta == pytest.approx(1 / 3)
        assert d.p_value == pytest.approx(0.5)
        assert d.reason
        as_dict = d.to_dict()
        for key in ("delta", "n", "p_value", "fail_to_pass", "pass_to_fail", "reason"):
            assert key in as_dict
        assert as_dict["delta"] == pytest.approx(1 / 3)

    @pytest.mark.parametrize("mode", GATES)
    def test_no_overlap_rejected(self, mode):
        d = decide(outcomes({"a": 1.0}), outcomes({"b": 1.0}), mode=mode)
        assert not d.accepted
        assert d.n == 0
        assert d.delta is None
        assert d.p_value is None
        assert "nothing to compare" in d.reason

    def test_no_overlap_when_all_unscored(self):
        d = decide(outcomes({"a": None}), outcomes({"a": 1.0}))
        assert not d.accepted and d.n == 0

    def test_unknown_mode_raises(self):
        with pytest.raises(ValueError, match="unknown gate"):
            decide(outcomes({"a": 1.0}), outcomes({"a": 1.0}), mode="lenient")


# gains 3 (a, b, c: fail -> pass) and loses 1 (d: pass -> fail); the mean goes up
GAINS_3_LOSES_1 = (
    outcomes({"a": 0.0, "b": 0.0, "c": 0.0, "d": 1.0, "e": 1.0}),
    outcomes({"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.0, "e": 1.0}),
)


class TestRegressions:
    def test_no_regression_rejects_a_candidate_that_gains_3_and_loses_1(self):
        inc, cand = GAINS_3_LOSES_1
        assert decide(inc, cand).accepted  # the mean alone would take it
        d = ThresholdGate("no-regression").decide(inc, cand)
        assert not d.accepted and d.mode == "no-regression"
        assert d.fail_to_pass == ("a", "b", "c") and d.pass_to_fail == ("d",)
        assert d.reason == (
            "better by +0.400 but gains 3, loses 1 (pass → fail): more than --max-regressions 0"
        )
        assert d.max_regressions == 0 and d.to_dict()["max_regressions"] == 0

    def test_max_regressions_1_lets_it_through(self):
        inc, cand = GAINS_3_LOSES_1
        d = ThresholdGate("no-regression", max_regressions=1).decide(inc, cand)
        assert d.accepted
        assert d.reason == (
            "gains 3, loses 1 (pass → fail), within --max-regressions 1; "
            "better on validation (+0.400)"
        )

    @pytest.mark.parametrize("mode", ["strict", "margin", "paired"])
    def test_an_allowance_set_applies_under_every_gate(self, mode):
        inc = outcomes({**{f"g{i}": 0.0 for i in range(8)}, "d": 1.0})
        cand = outcomes({**{f"g{i}": 1.0 for i in range(8)}, "d": 0.0})
        kept = decide(inc, cand, mode=mode, min_delta=0.1)
        assert kept.accepted and kept.max_regressions is None  # no allowance: no limit
        assert "max_regressions" not in kept.to_dict()  # absent while unset
        d = decide(inc, cand, mode=mode, min_delta=0.1, max_regressions=0)
        assert not d.accepted and d.mode == mode
        assert d.reason.endswith("gains 8, loses 1 (pass → fail): more than --max-regressions 0")

    def test_no_regression_is_the_strict_rule_otherwise(self):
        inc = outcomes({"a": 0.0, "b": 1.0})
        gain = decide(inc, outcomes({"a": 1.0, "b": 1.0}), mode="no-regression", min_delta=0.9)
        assert gain.accepted  # the margin is not its rule
        tie = decide(inc, outcomes({"a": 0.0, "b": 1.0}), mode="no-regression")
        assert not tie.accepted and "tie" in tie.reason

    def test_an_allowance_round_trips(self):
        d = ThresholdGate("no-regression").decide(*GAINS_3_LOSES_1)
        assert Decision.from_dict(d.to_dict()) == d


class TestDecisionSerialisation:
    def test_round_trip(self):
        inc = outcomes({"a": 0.0, "b": 1.0, "c": 0.25})
        cand = outcomes({"a": 1.0, "b": 0.0, "c": 0.75})
        d = decide(inc, cand, mode="paired")
        back = Decision.from_dict(d.to_dict())
        assert back == d
        assert back.per_task == d.per_task
        assert back.delta == pytest.approx(d.delta)
        assert back.fail_to_pass == ("a", "c") and back.pass_to_fail == ("b",)

    def test_round_trip_through_json(self):
        import json

        d = decide(outcomes({"a": 0.0}), outcomes({"a": 1.0}), mode="margin", min_delta=0.5)
        back = Decision.from_dict(json.loads(json.dumps(d.to_dict())))
        assert back == d
        assert back.accepted is True

    def test_round_trip_empty(self):
        d = decide(outcomes({}), outcomes({}))
        back = Decision.from_dict(d.to_dict())
        assert back == d
        assert back.delta is None
