"""Calls and rollouts are in the spend ledger before they are sent: pending at their
estimate, settled with what they cost when they return, and counted at the estimate
in every total and budget when the process died while they were in flight."""

from __future__ import annotations

import pytest
from helpers import write_skill, write_suite

from skillopt.errors import ModelError
from skillopt.harness.chat import ChatHarness
from skillopt.models import ScriptedModel
from skillopt.models.base import Usage
from skillopt.models.metered import MeteredModel
from skillopt.rollouts.budget import Budget, BudgetExceeded, Guard, Priors, Spent
from skillopt.rollouts.engine import RolloutEngine
from skillopt.skill.document import Skill
from skillopt.store.rollouts import RolloutStore
from skillopt.suite.loader import load_suite
from skillopt.training.checkpoint import Accounting
from skillopt.training.session_parts import SpendLedger


def test_a_reserved_call_is_spent_at_its_estimate_until_settled(tmp_path):
    store = RolloutStore(tmp_path / "s.sqlite")
    held = store.reserve("r1", "optimizer", "call", 0.05)
    opt = store.spend("r1").optimizer
    assert (opt.calls, opt.cost, opt.estimated, opt.estimated_cost) == (1, 0.05, 1, 0.05)

    store.settle(held, 2, Usage(100, 20, 40), 0.002)  # answered after one retry
    opt = store.spend("r1").optimizer
    assert (opt.calls, opt.input_tokens, opt.output_tokens, opt.cached_input_tokens) == (
        2,
        100,
        20,
        40,
    )
    assert opt.cost == pytest.approx(0.002)
    assert (opt.estimated, opt.estimated_cost) == (0, 0.0)
    store.settle(held, 9, Usage(9, 9), 9.0)  # settled once: a second settle changes nothing
    assert store.spend("r1").optimizer.calls == 2


def test_a_call_left_pending_counts_after_the_store_is_reopened(tmp_path):
    path = tmp_path / "s.sqlite"
    store = RolloutStore(path)
    store.settle(store.reserve("r1", "optimizer", "call", 0.01), 1, Usage(10, 5), 0.01)
    store.reserve("r1", "optimizer", "call", 0.01)  # the process is killed here
    store.reserve("r1", "target", "rollout", 0.5, key="k1")
    store.close()

    reopened = RolloutStore(path)
    spend = reopened.spend("r1")
    assert (spend.optimizer.calls, spend.optimizer.estimated) == (2, 1)
    assert spend.optimizer.cost == pytest.approx(0.02)
    assert (spend.target.rollouts, spend.target.calls, spend.target.estimated) == (1, 1, 1)
    assert spend.target.cost == pytest.approx(0.5)
    spent = Spent.from_ledger(spend)
    assert (spent.optimizer_calls, spent.target_rollouts) == (2, 1)
    assert spent.usd == pytest.approx(0.52)

    # every budget counts it: two calls made of two allowed, $0.52 of $0.52
    for budget in (
        Budget(optimizer_calls=2),
        Budget(target_rollouts=1),
        Budget(usd=0.52, allow_unpriced=True),
    ):
        guard = Guard(budget, lambda: Spent.from_ledger(reopened.spend("r1")))
        with pytest.raises(BudgetExceeded):
            guard.before(rollouts=1, calls=1)

    acct = Accounting.from_ledger(spend, [])
    assert (acct.target_estimated, acct.optimizer_estimated) == (1, 1)
    assert acct.estimated_cost == pytest.approx(0.51)
    assert {"target_estimated", "optimizer_estimated", "estimated_cost"} <= set(acct.to_dict())
    # nothing estimated: the accounting is written as before
    assert "estimated_cost" not in Accounting.from_ledger(reopened.spend("r2"), []).to_dict()


def test_an_optimizer_call_is_reserved_before_it_is_sent(tmp_path):
    store = RolloutStore(tmp_path / "s.sqlite")
    ledger = SpendLedger(store, "r1", priors=Priors(call_usd=0.03))
    seen = []

    def provider(messages):
        seen.append(store.spend("r1").optimizer)  # what a kill right now would leave
        return "ok"

    model = MeteredModel(ScriptedModel(provider, cost=0.001), ledger)
    model.complete("hello")
    assert (seen[0].calls, seen[0].estimated, seen[0].cost) == (1, 1, pytest.approx(0.03))
    after = store.spend("r1").optimizer
    assert (after.calls, after.estimated, after.cost) == (1, 0, pytest.approx(0.001))

    # the run's own average price then estimates the next call
    model.complete("again")
    assert seen[1].cost == pytest.approx(0.002)

    def refused(messages):
        raise ModelError("rate limited", kind="rate_limit", attempts=3)

    with pytest.raises(ModelError):
        MeteredModel(ScriptedModel(refused), ledger).complete("x")
    after = store.spend("r1").optimizer
    assert (after.calls, after.estimated) == (5, 0)  # three requests, none billed
    assert after.cost == pytest.approx(0.002)


@pytest.fixture
def setup(tmp_path):
    skill = Skill.load(write_skill(tmp_path / "skills", "caps", body="Answer in capitals.\n"))
    items = [{"id": f"t{i}", "input": f"word{i}", "expected": f"WORD{i}"} for i in range(3)]
    return skill, load_suite(write_suite(tmp_path / "suite.yaml", items))


def test_a_rollout_is_reserved_before_it_runs_and_a_store_hit_never(tmp_path, setup):
    skill, suite = setup
    store = RolloutStore(tmp_path / "s.sqlite")
    seen = []

    def target(messages):
        seen.append(store.spend("r1").target)
        return messages[-1]["content"].upper()

    harness = ChatHarness(ScriptedModel(target, cost=0.01))
    engine = RolloutEngine(
        harness, store, concurrency=1, run_id="r1", priors=Priors(rollout_usd=0.2)
    )
    engine.run(skill, suite.tasks[:1])
    assert (seen[0].rollouts, seen[0].estimated, seen[0].cost) == (1, 1, pytest.approx(0.2))
    spent = store.spend("r1").target
    assert (spent.rollouts, spent.calls, spent.estimated) == (1, 1, 0)
    assert spent.cost == pytest.approx(0.01)

    engine.run(skill, suite.tasks)  # one hit, two run
    assert seen[1].cost == pytest.approx(0.01 + 0.01)  # the run's average estimates them
    spent = store.spend("r1").target
    assert (spent.rollouts, spent.cached, spent.estimated, spent.calls) == (3, 1, 0, 3)
    assert spent.cost == pytest.approx(0.03)
