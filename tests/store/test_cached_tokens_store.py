"""Prompt-cache tokens in the rollout store: migration m005 on a database the earlier
migrations made, rollouts and ledger rows that keep their cached tokens, totals."""

from __future__ import annotations

import sqlite3

import pytest
from helpers import write_skill, write_suite

from skillopt.harness.chat import ChatHarness
from skillopt.models import ScriptedModel
from skillopt.models.base import Completion, Usage
from skillopt.rollouts.engine import RolloutEngine
from skillopt.skill.document import Skill
from skillopt.store.rollouts import RolloutStore
from skillopt.store.schema import MIGRATIONS, migrate
from skillopt.suite.loader import load_suite

OLD_ROLLOUT = (
    "INSERT INTO rollouts (key, fingerprint, skill_hash, task_id, sample, split, status, "
    "score, passed, input_tokens, output_tokens, cost, created_at, updated_at) "
    "VALUES ('k-old', '{}', 'h', 't0', 0, 'test', 'scored', 1.0, 1, 40, 2, 0.5, 0, 0)"
)
OLD_SPEND = (
    "INSERT INTO spend (run_id, role, kind, calls, input_tokens, output_tokens, cost, at) "
    "VALUES ('old-run', 'optimizer', 'call', 1, 300, 30, 0.25, 0)"
)


def test_m005_is_the_fifth_migration():
    assert [m.__name__ for m in MIGRATIONS][:5] == [
        "m001_rollouts",
        "m002_skills",
        "m003_claims",
        "m004_spend",
        "m005_cached_tokens",
    ]


def test_a_database_of_the_earlier_migrations_gains_the_columns_and_keeps_its_rows(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL)")
    for m in MIGRATIONS[:4]:  # a store written before prompt-cache tokens were kept
        m(db)
        db.execute("INSERT INTO migrations VALUES (?, 0)", (m.__name__,))
    db.execute(OLD_ROLLOUT)
    db.execute(OLD_SPEND)
    assert "cached_input_tokens" not in {r[1] for r in db.execute("PRAGMA table_info(rollouts)")}
    db.close()

    store = RolloutStore(path)  # opening migrates forward
    applied = {r[0] for r in store._db.execute("SELECT name FROM migrations")}
    assert "m005_cached_tokens" in applied
    for table in ("rollouts", "spend"):
        cols = {r[1]: r for r in store._db.execute(f"PRAGMA table_info({table})")}
        # (cid, name, type, notnull, default, pk)
        assert cols["cached_input_tokens"][2:5] == ("INTEGER", 1, "0")
    old = store.get("k-old")
    assert old is not None and old.usage == Usage(40, 2, 0) and old.cost == 0.5
    assert store.spend("old-run").optimizer.cached_input_tokens == 0
    assert store.spend("old-run").optimizer.input_tokens == 300
    assert migrate(store._db) == []
    store.close()


def cached_reply(messages):
    """A reply whose prompt was partly read from a provider's cache."""
    return Completion(
        messages[-1]["content"].upper(), Usage(1000, 5, cached_input_tokens=900), cost=0.01
    )


@pytest.fixture
def setup(tmp_path):
    skill = Skill.load(write_skill(tmp_path / "skills", "caps", body="Answer in capitals.\n"))
    items = [{"id": f"t{i}", "input": f"word{i}", "expected": f"WORD{i}"} for i in range(3)]
    return skill, load_suite(write_suite(tmp_path / "suite.yaml", items))


def test_rollouts_keep_their_cached_tokens_and_the_ledger_sums_them(tmp_path, setup):
    skill, suite = setup
    path = tmp_path / "s.sqlite"
    store = RolloutStore(path)
    out = RolloutEngine(ChatHarness(ScriptedModel(cached_reply)), store, run_id="r1").run(
        skill, suite.tasks
    )
    assert [r.usage.cached_input_tokens for r in out] == [900, 900, 900]
    spent = store.spend("r1").target
    assert spent.cached_input_tokens == 2700 and spent.input_tokens == 3000
    store.close()

    store = RolloutStore(path)  # read back, as another process would
    again = RolloutEngine(ChatHarness(ScriptedModel(cached_reply)), store, run_id="r2").run(
        skill, suite.tasks
    )
    assert all(r.cached for r in again)
    assert [r.usage for r in again] == [Usage(1000, 5, 900)] * 3
    assert store.get(out[0].key).usage.cached_input_tokens == 900
    # served from the store: paid by run r1, not r2
    assert store.spend("r2").target.cached_input_tokens == 0
    store.close()


def test_record_call_keeps_cached_tokens_per_role():
    store = RolloutStore(":memory:")
    store.record_call("r1", "optimizer", "call", 1, 2000, 50, 0.01, cached_input_tokens=1800)
    store.record_call("r1", "optimizer", "call", 1, 2000, 50, 0.01, cached_input_tokens=1800)
    store.record_call("r1", "optimizer", "call", 1, 100, 5, 0.001)
    store.record_call("r1", "judge", "score", 1, 10, 1, 0.0001, cached_input_tokens=7)
    spent = store.spend("r1")
    assert spent.optimizer.cached_input_tokens == 3600
    assert spent.optimizer.input_tokens == 4100
    assert spent.judge.cached_input_tokens == 7
    assert spent.target.cached_input_tokens == 0
