"""Budgets: each limit stops a scripted run before the batch that would cross it,
the run is checkpointed as stopped, and resuming it with a larger budget reaches
the same result as a run that never had one."""

from __future__ import annotations

import json
import sqlite3

import pytest
from train.world import HELPFUL, ScriptedOptimizer, edits_reply, flags, follow_skill
from typer.testing import CliRunner

import skillopt
from skillopt.cli.main import app
from skillopt.errors import InputError
from skillopt.models import ScriptedModel, register_model, unregister_model
from skillopt.rollouts.budget import Budget, BudgetExceeded, Guard, Priors, Spent, parse_duration
from skillopt.store.rollouts import RolloutStore

PRICE = 0.01  # USD per target rollout
CALL_PRICE = 0.05  # USD per optimizer call
JUDGED = {"type": "judge", "rubric": "Is it an answer?"}


@pytest.fixture
def priced():
    """A target that costs PRICE per rollout and an optimizer that costs CALL_PRICE per
    call, both scripted (their names carry no price of their own)."""
    target = ScriptedModel(follow_skill, name="scripted/priced-target", cost=PRICE)
    holder: dict = {}
    optimizer = ScriptedModel(
        lambda m: holder["fn"](m), name="scripted/priced-optimizer", cost=CALL_PRICE
    )
    register_model("scripted/priced-target", target)
    register_model("scripted/priced-optimizer", optimizer)
    yield {"target": target, "optimizer": optimizer, "set": lambda fn: holder.update(fn=fn)}
    unregister_model("scripted/priced-target")
    unregister_model("scripted/priced-optimizer")


def _flags(**extra):
    return flags(target="scripted/priced-target", optimizer="scripted/priced-optimizer", **extra)


def _plan():
    # step 1 is neutral (rejected), step 2 helps (accepted) and saturates validation
    return ScriptedOptimizer([edits_reply("Be polite."), edits_reply(HELPFUL)])


def _unbudgeted(world, priced, tmp_path, **extra):
    priced["set"](_plan())
    return skillopt.train(
        world["skill"],
        world["suite"],
        **_flags(run_dir=tmp_path / "free-runs", store=tmp_path / "free.sqlite", **extra),
    )


def _ledger(store, run_id):
    with RolloutStore(store) as s:
        return s.spend(run_id)


def _state(run_dir):
    return json.loads((run_dir / "state.json").read_text())


def _stopped_run(world, tmp_path):
    runs = sorted((tmp_path / "runs").glob("words-*"))
    assert len(runs) == 1
    return runs[0]


@pytest.mark.parametrize(
    "limit, value",
    [("max_target_rollouts", 30), ("max_optimizer_calls", 1), ("budget_usd", 0.3)],
)
def test_a_budget_stops_the_run_and_resume_reaches_the_unbudgeted_result(
    world, priced, tmp_path, limit, value
):
    free = _unbudgeted(world, priced, tmp_path)
    priced["set"](_plan())
    store = tmp_path / "store.sqlite"
    with pytest.raises(BudgetExceeded) as info:
        skillopt.train(
            world["skill"],
            world["suite"],
            **_flags(run_dir=tmp_path / "runs", store=store, **{limit: value}),
        )
    exc = info.value
    assert exc.exit_code == 3 and exc.limit in limit.replace("budget_", "")
    run = _stopped_run(world, tmp_path)
    state = _state(run)
    assert state["status"] == "stopped" and state["stop"]["reason"] == "budget"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "stopped: budget"
    assert "Stopped: budget" in (run / "report.md").read_text()
    assert (run / "best" / "SKILL.md").is_file()
    spend = _ledger(store, run.name)
    if limit == "max_target_rollouts":
        assert spend.target.rollouts <= value  # never exceeded
    elif limit == "max_optimizer_calls":
        assert spend.optimizer.calls <= value
    else:
        spent = (spend.target.cost or 0) + (spend.optimizer.cost or 0)
        # the bound: below the budget plus one batch (the largest here: 8 train rollouts
        # or one optimizer call)
        assert spent <= value + max(8 * PRICE, CALL_PRICE) + 1e-9
    # resumed with more room, the run ends where the unbudgeted one did
    resumed = skillopt.resume(run.name, run_dir=tmp_path / "runs", **{limit: value * 100})
    assert resumed.summary["status"] == "finished"
    assert resumed.summary["best_skill_hash"] == free.summary["best_skill_hash"]
    assert [s["decision"] for s in resumed.summary["steps"]] == [
        s["decision"] for s in free.summary["steps"]
    ]
    assert resumed.summary["test"] == free.summary["test"]


def test_the_rollout_limit_is_exact_and_resume_pays_only_for_the_rest(world, priced, tmp_path):
    # one rollout at a time: with more, a racing gate may also pay for the few still
    # in flight when it settles, a number that depends on timing
    free = _unbudgeted(world, priced, tmp_path, concurrency=1)
    paid = _ledger(tmp_path / "free.sqlite", free.run_id).target.rollouts
    priced["set"](_plan())
    store = tmp_path / "store.sqlite"
    with pytest.raises(BudgetExceeded, match="--max-target-rollouts"):
        skillopt.train(
            world["skill"],
            world["suite"],
            **_flags(
                run_dir=tmp_path / "runs",
                store=store,
                max_target_rollouts=paid - 1,
                concurrency=1,
            ),
        )
    run = _stopped_run(world, tmp_path)
    before = _ledger(store, run.name).target.rollouts
    assert before <= paid - 1
    skillopt.resume(run.name, run_dir=tmp_path / "runs", max_target_rollouts=paid)
    # nothing paid twice: the stopped run and its resume paid what one run pays
    assert _ledger(store, run.name).target.rollouts == paid


def test_a_time_limit_stops_before_the_next_batch(world, priced, tmp_path):
    priced["set"](_plan())
    with pytest.raises(BudgetExceeded, match="--time-limit"):
        skillopt.train(
            world["skill"],
            world["suite"],
            **_flags(run_dir=tmp_path / "runs", store=tmp_path / "s.sqlite", time_limit=1e-9),
        )
    run = _stopped_run(world, tmp_path)
    state = _state(run)
    assert state["status"] == "stopped" and state["steps"] == []  # before the baseline
    assert _ledger(tmp_path / "s.sqlite", run.name).target.rollouts == 0
    resumed = skillopt.resume(run.name, run_dir=tmp_path / "runs", time_limit="1h")
    assert resumed.summary["status"] == "finished"
    assert resumed.summary["steps"][0]["kind"] == "initial"


def test_an_unpriced_model_is_refused_with_a_usd_budget_unless_allowed(world, tmp_path):
    unpriced = ScriptedModel(follow_skill, name="scripted/unpriced", cost=None)
    register_model("scripted/unpriced", unpriced)
    try:
        kwargs = dict(
            target="scripted/unpriced",
            optimizer="exemplars",
            epochs=1,
            run_dir=tmp_path / "runs",
            store=tmp_path / "s.sqlite",
            budget_usd=1.0,
        )
        with pytest.raises(InputError, match="target scripted/unpriced.*--allow-unpriced"):
            skillopt.train(world["skill"], world["suite"], **kwargs)
        assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").glob("words-*"))
        assert unpriced.call_count == 0
        warnings: list[str] = []
        result = skillopt.train(
            world["skill"], world["suite"], **kwargs, allow_unpriced=True, warn=warnings.append
        )
        assert result.summary["status"] == "finished"
        assert any("priced calls only" in w for w in warnings)
        # without a USD budget, an unknown price is no reason to refuse
        skillopt.evaluate(
            world["skill"], world["suite"], target="scripted/unpriced", store=tmp_path / "s2"
        )
    finally:
        unregister_model("scripted/unpriced")


def test_eval_stops_before_a_batch_over_its_budget_and_keeps_what_it_scored(
    world, priced, tmp_path
):
    store = tmp_path / "s.sqlite"
    # 4 test tasks at $0.01: a $0.03 budget cannot take the batch
    with pytest.raises(BudgetExceeded, match="--budget-usd"):
        skillopt.evaluate(
            world["skill"],
            world["suite"],
            target="scripted/priced-target",
            store=store,
            budget_usd=0.03,
        )
    assert priced["target"].call_count == 0
    # the validation split fits; run again with the test split: one batch at a time
    res = skillopt.evaluate(
        world["skill"],
        world["suite"],
        split="val",
        target="scripted/priced-target",
        store=store,
        budget_usd=0.05,
    )
    assert res.result("skill", "val").n == 4
    rows = sqlite3.connect(store).execute("SELECT COUNT(*) FROM spend").fetchone()[0]
    assert rows == 4  # the ledger has the budgeted evaluation's rollouts


def test_the_cli_exits_3_and_says_how_to_resume(world, priced, tmp_path):
    cli = CliRunner().invoke
    priced["set"](_plan())
    args = [
        "train",
        str(world["skill"]),
        "--tasks",
        str(world["suite"]),
        "--target",
        "scripted/priced-target",
        "--optimizer",
        "scripted/priced-optimizer",
        "--batch-size",
        "40",
        "--minibatch-size",
        "40",
        "--no-slow-update",
        "--run-dir",
        str(tmp_path / "runs"),
        "--store",
        str(tmp_path / "s.sqlite"),
        "--max-target-rollouts",
        "20",
    ]
    result = cli(app, args)
    assert result.exit_code == 3, result.output
    assert "stopped: budget" in result.output
    assert "--resume" in result.output and "--max-target-rollouts" in result.output
    run = _stopped_run(world, tmp_path)
    again = cli(
        app,
        [
            "train",
            "--resume",
            run.name,
            "--run-dir",
            str(tmp_path / "runs"),
            "--max-target-rollouts",
            "1000",
        ],
    )
    assert again.exit_code == 0, again.output
    assert _state(run)["status"] == "finished"


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_guard_projects_usd_from_the_runs_own_prices():
    spent = Spent(usd=0.9, target_rollouts=90, target_usd=0.9)
    guard = Guard(Budget(usd=1.0), lambda: spent)
    guard.before(rollouts=10, where="ok")  # 0.9 + 10 × 0.01 = 1.0: fits exactly
    with pytest.raises(BudgetExceeded, match="before val") as info:
        guard.before(rollouts=11, where="val")
    assert info.value.limit == "usd"
    # before anything is paid, the prior estimate projects
    fresh = Guard(Budget(usd=1.0), lambda: Spent(), priors=Priors(rollout_usd=0.2))
    fresh.before(rollouts=5)
    with pytest.raises(BudgetExceeded):
        fresh.before(rollouts=6)


def test_guard_time_limit_uses_its_clock():
    clock = Clock()
    guard = Guard(Budget(time_limit=60), lambda: Spent(), clock=clock)
    clock.now = 59.9
    guard.before(rollouts=100)
    clock.now = 60.0
    with pytest.raises(BudgetExceeded, match="1m elapsed"):
        guard.before()


def test_durations():
    assert parse_duration("45m") == 2700 and parse_duration("2h") == 7200
    assert parse_duration(30) == 30.0 and parse_duration("90s") == 90
    for bad in ("soon", "-5", 0, True):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_the_judges_calls_count_against_a_usd_budget(tmp_path, isolated):
    """A free target judged by a priced model: the judge's spend alone stops the
    evaluation before its second batch (the no-skill baseline)."""
    from helpers import write_suite

    target = ScriptedModel(lambda m: "an answer", name="scripted/free-target", cost=0.0)

    def verdict(messages):
        return '{"score": 1, "feedback": "fine"}'

    judge = ScriptedModel(verdict, name="scripted/priced-judge", cost=0.01)
    register_model("scripted/free-target", target)
    register_model("scripted/priced-judge", judge)
    try:
        items = [
            {"id": f"j{i}", "input": f"task {i}", "split": "test", "scorer": JUDGED}
            for i in range(4)
        ]
        suite = write_suite(tmp_path / "judged.yaml", items)
        skill = tmp_path / "s" / "SKILL.md"
        skill.parent.mkdir()
        skill.write_text("---\nname: s\ndescription: d\n---\nAnswer.\n")
        kwargs = dict(target="scripted/free-target", judge="scripted/priced-judge")
        with pytest.raises(BudgetExceeded, match=r"--budget-usd .*\$0\.0400 spent"):
            skillopt.evaluate(
                skill.parent,
                suite,
                compare_no_skill=True,
                store=tmp_path / "s.sqlite",
                budget_usd=0.03,
                **kwargs,
            )
        assert judge.call_count == 4 and target.call_count == 4  # the first batch only
        # the same budget with a free judge lets both batches run
        free = ScriptedModel(verdict, name="scripted/free-judge", cost=0.0)
        register_model("scripted/free-judge", free)
        both = skillopt.evaluate(
            skill.parent,
            suite,
            compare_no_skill=True,
            store=tmp_path / "t.sqlite",
            budget_usd=0.03,
            target="scripted/free-target",
            judge="scripted/free-judge",
        )
        assert both.result("no-skill", "test").n == 4 and free.call_count == 8
    finally:
        for name in ("scripted/free-target", "scripted/priced-judge", "scripted/free-judge"):
            unregister_model(name)
