"""Whether the skill loaded, counted from hand-built rollouts: a task suite's load
rate (a task loads when most of its traced samples do), a trigger suite's precision,
recall and misfires, and the low-load warning."""

from __future__ import annotations

from skillopt.eval.loading import load_rate, load_warnings, trigger_report
from skillopt.eval.results import SplitResult
from skillopt.rollouts.record import Rollout


def rollout(task: str, invoked: bool | None, sample: int = 0, scored: bool = True) -> Rollout:
    trajectory = {} if invoked is None else {"skill_invoked": invoked}
    return Rollout(
        key=f"{task}-{sample}",
        task_id=task,
        split="test",
        sample=sample,
        skill_hash="h",
        scored=scored,
        score=1.0 if scored else None,
        passed=scored or None,
        trajectory=trajectory,
    )


def test_a_task_loads_when_most_of_its_traced_samples_do():
    rollouts = [
        rollout("a", True, 0),
        rollout("a", False, 1),  # half: loaded
        rollout("b", False, 0),
        rollout("b", False, 1),
        rollout("b", True, 2),  # one in three: not loaded
        rollout("c", None),  # the trace cannot tell: not counted
        rollout("d", True, scored=False),  # unscored: says nothing
    ]
    rate = load_rate(rollouts)
    assert (rate.loaded, rate.tasks, rate.loaded_rollouts, rate.rollouts) == (1, 2, 2, 5)
    assert rate.rate == 0.5 and not rate.low
    assert rate.phrase() == "loaded in 1/2 tasks (2/5 traced rollouts)"
    assert rate.warning() is None


def test_under_half_is_low_and_says_what_to_do():
    rate = load_rate([rollout("a", True), rollout("b", False), rollout("c", False)])
    assert rate.low and rate.phrase() == "loaded in 1/3 tasks"
    warning = rate.warning() or ""
    assert warning.startswith("the skill loaded in only 1/3 tasks")
    assert "name and description" in warning and "trigger suite" in warning


def test_no_trace_no_rate_and_no_warning():
    rate = load_rate([rollout("a", None), rollout("b", None)])
    assert rate.rate is None and not rate.low and rate.warning() is None


def test_load_warnings_skip_the_bare_model_trigger_suites_and_explicit_invocation():
    low = [rollout("a", False), rollout("b", False)]
    skill = SplitResult("skill", "test", low)
    bare = SplitResult("no-skill", "test", low)
    triggers = SplitResult("skill", "all", low, expected={"a": False, "b": False})
    warnings = load_warnings([skill, bare, triggers], "auto")
    assert len(warnings) == 1
    assert warnings[0].startswith("the skill loaded in only 0/2 tasks (skill · test): the agent")
    assert load_warnings([skill], "explicit") == []


def test_precision_and_recall_count_every_traced_sample():
    expected = {"s1": True, "s2": True, "n1": False, "n2": False}
    rollouts = [
        rollout("s1", True, 0),
        rollout("s1", True, 1),
        rollout("s2", False, 0),
        rollout("s2", True, 1),  # 1/2 loaded: passes (half)
        rollout("n1", True, 0),
        rollout("n1", True, 1),  # should not, loaded both times: a misfire
        rollout("n2", False, 0),
        rollout("n2", None, 1),  # cannot tell: left out
    ]
    report = trigger_report(rollouts, expected)
    # tp = 3 (s1 ×2, s2 ×1), fn = 1 (s2), fp = 2 (n1 ×2)
    assert report.precision == 3 / 5 and report.recall == 3 / 4
    by_id = {q.task_id: q for q in report.queries}
    assert (by_id["s2"].loaded, by_id["s2"].traced, by_id["s2"].passed) == (1, 2, True)
    assert by_id["n1"].passed is False and by_id["n2"].traced == 1
    assert report.misfires() == ([], ["n1"])
    data = report.to_dict()
    assert data["spurious"] == ["n1"] and data["precision"] == 0.6
    q = next(q for q in data["queries"] if q["id"] == "s2")
    assert q["should_trigger"] is True and q["load_rate"] == 0.5
    assert [r["skill_invoked"] for r in q["rollouts"]] == [False, True]


def test_nothing_loaded_has_no_precision():
    report = trigger_report([rollout("s", False), rollout("n", False)], {"s": True, "n": False})
    assert report.precision is None and report.recall == 0.0
    assert report.misfires() == (["s"], [])


def test_a_split_result_reports_triggers_only_for_a_trigger_suite():
    rollouts = [rollout("s", True)]
    assert SplitResult("skill", "all", rollouts).triggers is None
    summary = SplitResult("skill", "all", rollouts, expected={"s": True}).summary()
    assert summary["triggers"]["recall"] == 1.0 and summary["load"]["loaded"] == 1
