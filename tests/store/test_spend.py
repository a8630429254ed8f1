"""The spend ledger: what a run paid for, written with each rollout and optimizer call,
read back as totals; and text that could not be stored before."""

from __future__ import annotations

import json
import sqlite3

import pytest
from helpers import write_skill, write_suite

from skillopt.errors import ModelError
from skillopt.harness.chat import ChatHarness
from skillopt.models import ScriptedModel
from skillopt.rollouts.engine import Rollout, RolloutEngine
from skillopt.rollouts.spend import RoleSpend, Spend, TargetSpend
from skillopt.skill.document import Skill
from skillopt.store.rollouts import RolloutStore
from skillopt.store.schema import MIGRATIONS, migrate
from skillopt.suite.loader import load_suite


def test_blank_database_gets_claims_and_spend(tmp_path):
    path = tmp_path / "store.sqlite"
    RolloutStore(path).close()
    db = sqlite3.connect(path)
    names = [r[0] for r in db.execute("SELECT name FROM migrations ORDER BY name")]
    assert names == [m.__name__ for m in MIGRATIONS]
    assert {"m003_claims", "m004_spend"} <= set(names)
    assert {r[1] for r in db.execute("PRAGMA table_info(claims)")} == {"key", "owner", "expires"}
    assert {r[1] for r in db.execute("PRAGMA table_info(spend)")} == {
        "id",
        "run_id",
        "role",
        "kind",
        "key",
        "rollouts",
        "scored",
        "calls",
        "input_tokens",
        "output_tokens",
        "cost",
        "at",
        "cached_input_tokens",
        "pending",
    }
    assert [r[2] for r in db.execute("PRAGMA index_info(spend_run)")] == ["run_id"]
    assert migrate(db) == []


def test_an_older_database_is_migrated_forward(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL)")
    for m in MIGRATIONS[:2]:  # a store written before claims and spend existed
        m(db)
        db.execute("INSERT INTO migrations VALUES (?, 0)", (m.__name__,))
    assert migrate(db) == [m.__name__ for m in MIGRATIONS[2:]]
    assert migrate(db) == []


def upper(messages):
    return messages[-1]["content"].upper()


@pytest.fixture
def setup(tmp_path):
    skill = Skill.load(write_skill(tmp_path / "skills", "caps", body="Answer in capitals.\n"))
    items = [{"id": f"t{i}", "input": f"word{i}", "expected": f"WORD{i}"} for i in range(4)]
    suite = load_suite(write_suite(tmp_path / "suite.yaml", items))
    return skill, suite


def flaky(messages):
    if messages[-1]["content"] == "word3":
        raise ModelError("provider down", kind="server")
    return upper(messages)


def test_rollouts_and_hits_are_counted_per_run(tmp_path, setup):
    skill, suite = setup
    store = RolloutStore(tmp_path / "s.sqlite")
    model = ScriptedModel(flaky, cost=0.01)
    first = RolloutEngine(ChatHarness(model), store, run_id="r1").run(skill, suite.tasks)
    spent = store.spend("r1").target
    assert spent.rollouts == 4 and spent.unscored == 1 and spent.cached == 0
    assert spent.calls == sum(r.model_calls for r in first) == 4
    assert spent.input_tokens == sum(r.usage.input_tokens for r in first) > 0
    assert spent.output_tokens == sum(r.usage.output_tokens for r in first)
    assert spent.cost == pytest.approx(0.03)
    assert spent.cost_complete is False  # the failed request has no known price

    # the same run again: three hits, and the unscored one is paid for a second time
    RolloutEngine(ChatHarness(ScriptedModel(upper, cost=0.01)), store, run_id="r1").run(
        skill, suite.tasks
    )
    spent = store.spend("r1").target
    assert spent.rollouts == 5 and spent.cached == 3 and spent.unscored == 1
    assert spent.calls == 5 and spent.cost == pytest.approx(0.04)

    RolloutEngine(ChatHarness(ScriptedModel(upper, cost=0.01)), store, run_id="r2").run(
        skill, suite.tasks[:2]
    )
    assert store.spend("r2").target.to_dict() == {
        "rollouts": 0,
        "cached": 2,
        "unscored": 0,
        "calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cached_input_tokens": 0,
        "cost": None,
        "cost_complete": True,
        "unpriced": 0,
        "rows": 1,
        "estimated": 0,
        "estimated_cost": 0.0,
    }

    rows = store._db.execute("SELECT COUNT(*) FROM spend").fetchone()[0]
    RolloutEngine(ChatHarness(ScriptedModel(upper)), store).run(
        skill.with_body("Other.\n"), suite.tasks
    )
    assert store._db.execute("SELECT COUNT(*) FROM spend").fetchone()[0] == rows  # plain eval


def test_optimizer_calls_are_recorded(tmp_path):
    store = RolloutStore(":memory:")
    store.record_call("r1", "optimizer", "propose", 1, 100, 20, 0.002)
    store.record_call("r1", "optimizer", "notes", calls=2, input_tokens=50, output_tokens=5)
    store.record_call("r1", "judge", "score", 1, 10, 1, 0.0001)
    store.record_call("r2", "optimizer", "propose", 1, 999, 999, 9.0)
    spent = store.spend("r1")
    assert spent.optimizer.to_dict() == {
        "calls": 3,
        "input_tokens": 150,
        "output_tokens": 25,
        "cached_input_tokens": 0,
        "cost": pytest.approx(0.002),
        "cost_complete": False,
        "unpriced": 1,
        "cached": 0,
        "rows": 2,
        "estimated": 0,
        "estimated_cost": 0.0,
    }
    assert spent.judge.cost_complete is True and spent.judge.rows == 1
    assert spent.target.rows == 0 and spent.target.cost is None
    assert store.spend("nothing").optimizer.to_dict() == {
        "calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cached_input_tokens": 0,
        "cost": None,
        "cost_complete": True,
        "unpriced": 0,
        "cached": 0,
        "rows": 0,
        "estimated": 0,
        "estimated_cost": 0.0,
    }


def test_a_rollout_row_and_its_spend_row_are_one_transaction(tmp_path):
    store = RolloutStore(tmp_path / "s.sqlite")
    store._db.execute(
        "CREATE TRIGGER no_spend BEFORE INSERT ON spend "
        "BEGIN SELECT RAISE(ABORT, 'ledger full'); END"
    )
    r = Rollout(
        key="k",
        task_id="t",
        split="test",
        sample=0,
        skill_hash="h",
        scored=True,
        score=1.0,
        model_calls=1,
    )
    assert store.claim_many(["k"], "me") == {"k"}
    with pytest.raises(sqlite3.IntegrityError):
        store.put(r, {}, run_id="r1")
    assert store.get("k", include_unscored=True) is None  # no rollout without its spend
    assert store._db.execute("SELECT owner FROM claims").fetchall() == [("me",)]


def test_text_that_sqlite_cannot_encode_is_stored_safely(tmp_path, monkeypatch):
    monkeypatch.setenv("ACME_API_KEY", "sk-acme-0123456789")
    store = RolloutStore(tmp_path / "s.sqlite")
    r = Rollout(
        key="k",
        task_id="t",
        split="test",
        sample=0,
        skill_hash="h",
        scored=True,
        score=0.0,
        passed=False,
        answer="\ud800",
        feedback="nul\x00here",
        error=None,
        trajectory={"messages": [{"content": "bad \udfff, key sk-acme-0123456789"}]},
    )
    store.put(r, {"task": {"input": "\ud83d"}}, run_id="r1")
    got = store.get("k")
    assert got.answer == "\ufffd" and got.feedback == "nul\ufffdhere"
    assert got.trajectory["messages"][0]["content"] == "bad \ufffd, key ***"
    fp = store._db.execute("SELECT fingerprint FROM rollouts").fetchone()[0]
    assert json.loads(fp) == {"task": {"input": "\ufffd"}}
    assert store.spend("r1").target.rollouts == 1

    # a secret alone, in one field of an otherwise clean row, is blanked too
    leaky = Rollout(
        key="k2",
        task_id="t",
        split="test",
        sample=0,
        skill_hash="h",
        scored=False,
        error="401 for key sk-acme-0123456789",
        answer="fine",
    )
    store.put(leaky, {})
    assert store.get("k2", include_unscored=True).error == "401 for key ***"


def test_spend_is_one_typed_record_per_role():
    store = RolloutStore(":memory:")
    store.record_call("r1", "judge", "score", 2, 10, 1, 0.5)
    store.record_call("r1", "optimizer", "cached", 0)  # a reply served from the store
    spent = store.spend("r1")
    assert isinstance(spent, Spend) and isinstance(spent.target, TargetSpend)
    assert [role for role, _ in spent.roles()] == ["target", "optimizer", "judge"]
    assert spent.judge == RoleSpend(calls=2, input_tokens=10, output_tokens=1, cost=0.5, rows=1)
    assert spent.optimizer.cached == 1 and spent.optimizer.calls == 0
    assert spent.to_dict() == {
        "target": TargetSpend().to_dict(),
        "optimizer": spent.optimizer.to_dict(),
        "judge": spent.judge.to_dict(),
    }
    assert spent.cost == 0.5
