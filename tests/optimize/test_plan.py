"""The dry-run plan follows the optimizer it is given: epoch-end slow updates and
notes only when the optimizer has them, model calls only when it has a model, and a
free model costs $0 (only a provider model with no known price is unknown)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from skillopt import api
from skillopt.cli.main import app
from skillopt.config import Settings
from skillopt.models import ScriptedModel
from skillopt.optimize.exemplars import ExemplarOptimizer
from skillopt.optimize.plan import free_model, make_plan
from skillopt.optimize.reflect import LLMOptimizer
from skillopt.skill.document import Skill
from skillopt.suite.loader import load_suite

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "tasks" / "product-codes.yaml"
SKILL = ROOT / "skills" / "product-codes"


@pytest.fixture
def inputs():
    suite = load_suite(SUITE)
    return Skill.load(SKILL), suite, Settings(**suite.defaults)


def test_exemplars_has_no_slow_update_and_no_call(inputs):
    skill, suite, s = inputs
    assert s.slow_update  # asked for, but exemplars has none to run
    plan = make_plan(skill, suite, s, "local/gemma-3-270m", ExemplarOptimizer())
    llm = make_plan(skill, suite, s, "local/gemma-3-270m", LLMOptimizer(ScriptedModel([])))
    assert plan.slow_updates == 0 and llm.slow_updates == s.epochs
    assert plan.optimizer_calls == 0 and plan.optimizer_tokens == 0
    assert plan.optimizer_note == "exemplars calls no model"
    # the slow updates' rollouts (two train samples and a gate each) are not counted
    slow_rollouts = s.epochs * (2 * min(s.batch_size, plan.n_train) + plan.n_val * s.samples)
    assert llm.target_rollouts - plan.target_rollouts == slow_rollouts
    assert "no slow update: the exemplars optimizer writes no epoch-end guidance" in plan.notes
    # the LLM optimizer's calls: one per step (a batch of 8 in one minibatch), a slow
    # update per epoch and notes after every epoch but the last
    assert llm.optimizer_calls == plan.total_steps + s.epochs + s.epochs - 1


def test_a_free_model_costs_zero_and_an_unpriced_one_is_unknown(inputs):
    skill, suite, s = inputs
    free = make_plan(skill, suite, s, "local/gemma-3-270m", ExemplarOptimizer())
    assert free.cost == 0.0
    assert free.cost_note == "target local/gemma-3-270m: free, runs on this machine"
    scripted = make_plan(skill, suite, s, "scripted/echo", ExemplarOptimizer())
    assert scripted.cost == 0.0
    unknown = make_plan(skill, suite, s, "openai/no-such-model-xyz", ExemplarOptimizer())
    assert unknown.cost is None
    assert unknown.cost_note == "target openai/no-such-model-xyz: no price known"
    priced = make_plan(
        skill, suite, s, "local/gemma-3-270m", LLMOptimizer(ScriptedModel([], name="openai/gpt-4o"))
    )
    assert priced.cost is not None and priced.cost > 0
    assert priced.cost_note.startswith("target local/gemma-3-270m: free, runs on this machine; ")
    assert "optimizer openai/gpt-4o: ≈$" in priced.cost_note


@pytest.mark.parametrize(
    "name, why",
    [
        ("local/gemma-3-270m", "runs on this machine"),
        ("scripted/echo", "scripted answers"),
        ("openai/gpt-4o-mini", None),
        ("default", None),
        ("localhost/x", None),
    ],
)
def test_free_model(name, why):
    assert free_model(name) == why


def test_api_plan_asks_the_optimizer_it_builds(isolated):
    plan = api.plan(SKILL, SUITE, optimizer="exemplars")
    assert plan.slow_updates == 0 and plan.optimizer_calls == 0 and plan.cost == 0.0
    plan = api.plan(SKILL, SUITE, optimizer="scripted/echo")
    assert plan.slow_updates == plan.epochs and plan.optimizer_calls > 0


def test_the_dry_run_says_what_exemplars_really_does(isolated):
    res = CliRunner().invoke(
        app, ["train", str(SKILL), "--tasks", str(SUITE), "--dry-run"], env={"COLUMNS": "200"}
    )
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert "  steps: 3 epochs × 2 = 6" in lines  # no "+3 slow updates"
    assert "slow update" not in "\n".join(line for line in lines if "steps:" in line)
    assert "  optimizer calls: none (exemplars calls no model)" in lines
    assert "unknown" not in res.stdout
    assert "  estimated cost: $0 (target local/gemma-3-270m: free, runs on this machine)" in lines
    assert "  note: no slow update: the exemplars optimizer writes no epoch-end guidance" in lines

    llm = CliRunner().invoke(
        app,
        ["train", str(SKILL), "--tasks", str(SUITE), "--dry-run", "--optimizer", "scripted/echo"],
        env={"COLUMNS": "200"},
    )
    assert llm.exit_code == 0, llm.output
    assert "  steps: 3 epochs × 2 = 6 (+3 slow updates)" in llm.stdout.splitlines()


def test_the_stages_add_up_to_the_plan_per_role(inputs):
    skill, suite, s = inputs
    plan = make_plan(skill, suite, s, "openai/gpt-4o-mini", LLMOptimizer(ScriptedModel([])))
    names = [(st.stage, st.role) for st in plan.stages]
    assert names == [
        ("baseline", "target"),
        ("rollouts", "target"),
        ("reflect", "optimizer"),
        ("gate", "target"),
        ("slow update", "target"),
        ("slow update", "optimizer"),
        ("notes", "optimizer"),
        ("test", "target"),
    ]
    target = [st for st in plan.stages if st.role == "target"]
    calls = [st for st in plan.stages if st.role == "optimizer"]
    assert sum(st.count for st in target) == plan.target_rollouts
    assert sum(st.count for st in calls) == plan.optimizer_calls
    assert abs(sum(st.tokens for st in target) - plan.target_tokens) <= len(target)
    assert all(st.cost and st.cost > 0 for st in target)  # gpt-4o-mini has a price
    assert all(st.cost == 0.0 for st in calls)  # a scripted optimizer is free
    # exemplars: no optimizer stage at all
    free = make_plan(skill, suite, s, "local/gemma-3-270m", ExemplarOptimizer())
    assert {st.role for st in free.stages} == {"target"}
    assert not free.budget  # no budget set: nothing to say


def test_the_binding_budget_is_the_one_the_plan_crosses_first(inputs):
    skill, suite, _ = inputs
    plan_of = lambda **b: make_plan(  # noqa: E731
        skill,
        suite,
        Settings(**{**suite.defaults, **b}),
        "openai/gpt-4o-mini",
        "openai/gpt-4o",
    )
    full = plan_of()
    assert full.cost and full.target_rollouts > 60
    half = full.target_rollouts // 2
    [line] = plan_of(max_target_rollouts=half).budget
    assert line.startswith(f"--max-target-rollouts binds first: {half:,} of at most")
    assert "after about 50% of the planned upper bound" in line
    # a USD budget at a tenth of the estimate binds before the rollout limit at half
    tenth = round(full.cost / 10, 4)
    both = plan_of(max_target_rollouts=half, budget_usd=tenth).budget
    assert both[0].startswith(f"--budget-usd binds first: ${tenth}")
    roomy = plan_of(max_target_rollouts=10 * full.target_rollouts, max_optimizer_calls=999)
    assert roomy.budget == [
        "no limit binds: the plan's upper bounds fit --max-target-rollouts "
        f"{10 * full.target_rollouts:,}, --max-optimizer-calls 999"
    ]
    timed = plan_of(time_limit="45m").budget
    assert any(line.startswith("--time-limit 45m: checked before each batch") for line in timed)
    # an unknown price cannot say when a USD budget binds
    unknown = make_plan(
        skill,
        suite,
        Settings(**{**suite.defaults, "budget_usd": 1.0}),
        "openai/no-such-model-xyz",
        ExemplarOptimizer(),
    )
    assert any("the plan's cost is unknown" in line for line in unknown.budget)


def test_a_description_run_plans_one_description_call_per_step(isolated):
    """No slow update, no notes, one description asked for per step (its one edit),
    whatever the optimizer could do for a body."""
    import routing_rule

    world = routing_rule.write_describe_fixture(isolated)
    skill, suite = Skill.load(world["skill"]), load_suite(world["suite"])
    s = Settings(part="description", epochs=3, batch_size=2, minibatch_size=1)
    optimizer = LLMOptimizer(ScriptedModel([]))
    plan = make_plan(skill, suite, s, "scripted/echo", optimizer)
    assert (plan.total_steps, plan.optimizer_calls, plan.slow_updates) == (6, 6, 0)
    assert plan.budgets == [1] * 6
    assert [(st.stage, st.role, st.count) for st in plan.stages if st.role == "optimizer"] == [
        ("describe", "optimizer", 6)
    ]
    # the same settings for a body: two reflections a step, slow updates and notes
    body = make_plan(
        skill, suite, s.model_copy(update={"part": "body"}), "scripted/echo", optimizer
    )
    assert body.optimizer_calls == 6 * 2 + 3 + 2
    # the description call reads the description and the queries, never the body
    assert plan.optimizer_tokens < body.optimizer_tokens / 2
    res = CliRunner().invoke(
        app,
        ["train", str(world["skill"]), "--tasks", str(world["suite"]), "--part", "description",
         "--harness", "router", "--target", "scripted/routing_rule:router", "--optimizer",
         "scripted/echo", "--library", str(world["library"]), "--epochs", "3",
         "--batch-size", "2", "--dry-run"],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert "  steps: 3 epochs × 2 = 6" in lines  # no "+3 slow updates"
    assert "  edit budget per step: 1 1 1 1 1 1" in lines
    assert any(line.startswith("  optimizer calls: at most 6 ") for line in lines), lines
    said = " ".join(res.stdout.split())
    assert "note: no slow update and no notes: a description run writes only the" in said
    assert "a proposed description that fails lint is asked for again once" in said
    assert "subsets of its edits" not in said and "runs an agent per task" not in said


def test_a_both_run_plans_the_description_steps_beside_the_body(isolated):
    """`--part both`: the body's steps as for a body run, plus one description call
    per batch of trigger queries and their rollouts (each candidate holding the
    other part's validation items)."""
    from train.both_world import write_world

    world = write_world(isolated)
    skill, suite = Skill.load(world["skill"]), load_suite(world["suite"])
    s = Settings(part="both", epochs=2, batch_size=4, minibatch_size=4, slow_update=False)
    optimizer = LLMOptimizer(ScriptedModel([]))
    plan = make_plan(skill, suite, s, "scripted/echo", optimizer)
    body = make_plan(
        skill, suite, s.model_copy(update={"part": "body"}), "scripted/echo", optimizer
    )
    # 2 tasks and 3 queries to train on: one batch of each a epoch
    assert (plan.steps_per_epoch, plan.total_steps) == (2, 4)
    assert plan.budgets == [*body.budgets, 1, 1]
    calls = {st.stage: st.count for st in plan.stages if st.role == "optimizer"}
    assert calls["describe"] == 2 and plan.optimizer_calls == body.optimizer_calls + 2
    # the queries' baseline 4, each step's batch 3 + val 4 + held tasks 2, each body
    # candidate's held queries 4, the test split's 2 queries for initial and best
    queries = {st.stage: st.count for st in plan.stages if st.role == "target"}
    assert queries["trigger queries"] == 4 + 2 * (3 + 4 + 2) + 2 * 4 + 2 * 2
    assert plan.target_rollouts == body.target_rollouts + queries["trigger queries"]
