"""Claims on a shared rollout store: the lease rules, and an engine that waits for a
rollout another owner holds instead of paying for it again.

"Another process" is a second connection to the same file under another owner name;
tests/faults/test_store_races.py does the same with real processes.
"""

from __future__ import annotations

import threading
import time

import pytest
from helpers import write_skill, write_suite

from skillopt.harness.chat import ChatHarness
from skillopt.models import ScriptedModel
from skillopt.rollouts.engine import Rollout, RolloutEngine
from skillopt.skill.document import Skill
from skillopt.store.rollouts import RolloutStore
from skillopt.suite.loader import load_suite


def upper(messages):
    return messages[-1]["content"].upper()


@pytest.fixture
def skill(tmp_path):
    return Skill.load(write_skill(tmp_path / "skills", "caps", body="Answer in capitals.\n"))


@pytest.fixture
def suite(tmp_path):
    items = [{"id": f"t{i}", "input": f"word{i}", "expected": f"WORD{i}"} for i in range(4)]
    return load_suite(write_suite(tmp_path / "suite.yaml", items))


def rollout(key: str, scored: bool = True) -> Rollout:
    return Rollout(
        key=key,
        task_id="t",
        split="test",
        sample=0,
        skill_hash="h",
        scored=scored,
        score=1.0 if scored else None,
        error=None if scored else "down",
    )


def claim_rows(store: RolloutStore) -> list[tuple]:
    return store._db.execute("SELECT key, owner FROM claims ORDER BY key").fetchall()


def test_lease_rules(tmp_path):
    path = tmp_path / "s.sqlite"
    a, b = RolloutStore(path), RolloutStore(path)
    assert a.claim_many(["k1", "k2"], "A") == {"k1", "k2"}
    assert b.claim_many(["k1", "k2", "k3"], "B") == {"k3"}  # A holds k1 and k2
    assert a.claim_many(["k1", "k3"], "A") == {"k1"}  # one's own claim is claimable again

    a.put(rollout("k4"), {})
    assert b.claim_many(["k4"], "B") == set()  # scored: served, never run again

    a.release(["k2"], "A")
    assert b.claim_many(["k2"], "B") == {"k2"}
    b.release(["k2"], "A")  # releasing someone else's claim does nothing
    assert claim_rows(a) == [("k1", "A"), ("k2", "B"), ("k3", "B")]

    # put() ends the claim whether the attempt scored or not
    a.put(rollout("k1", scored=False), {})
    assert ("k1", "A") not in claim_rows(a)
    assert b.claim_many(["k1"], "B") == {"k1"}


def test_a_lease_expires_unless_renewed(tmp_path):
    path = tmp_path / "s.sqlite"
    a, b = RolloutStore(path, lease_ttl=0.2), RolloutStore(path, lease_ttl=0.2)
    assert a.claim_many(["k1", "k2"], "A") == {"k1", "k2"}
    time.sleep(0.1)
    assert a.renew("A", ttl=5.0) == 2
    time.sleep(0.2)  # past the first lease, inside the renewed one
    assert b.claim_many(["k1"], "B") == set()
    assert a.claim_many(["k3"], "A", ttl=0.05) == {"k3"}
    time.sleep(0.1)
    assert b.claim_many(["k3"], "B") == {"k3"}  # expired: its holder stopped renewing


def test_a_private_store_needs_no_claims():
    store = RolloutStore(":memory:")
    assert not store.shared
    assert store.claim_many(["k1"], "A") == {"k1"} == store.claim_many(["k1"], "B")
    assert claim_rows(store) == [] and store.renew("A") == 0


def held_by_another(tmp_path, skill, suite, *, ttl=30.0):
    """The suite's rollouts as another owner would store them, and that owner's store
    holding a claim on each."""
    done = RolloutEngine(ChatHarness(ScriptedModel(upper)), RolloutStore(":memory:")).run(
        skill, suite.tasks
    )
    other = RolloutStore(tmp_path / "s.sqlite", lease_ttl=ttl)
    assert other.claim_many([r.key for r in done], "other") == {r.key for r in done}
    return done, other


def later(delay, fn):
    timer = threading.Timer(delay, fn)
    timer.start()
    return timer


@pytest.mark.parametrize("concurrency", [1, 4])
def test_waits_for_a_result_another_owner_is_paying_for(tmp_path, skill, suite, concurrency):
    done, other = held_by_another(tmp_path, skill, suite)
    timer = later(0.3, lambda: [other.put(r, {}) for r in done])
    store = RolloutStore(tmp_path / "s.sqlite")
    model = ScriptedModel(upper)
    start = time.monotonic()
    out = RolloutEngine(ChatHarness(model), store, concurrency=concurrency, run_id="run-1").run(
        skill, suite.tasks
    )
    timer.join()
    assert time.monotonic() - start >= 0.3  # it waited for the holder...
    assert model.call_count == 0  # ...instead of paying again
    assert [r.task_id for r in out] == [t.id for t in suite.tasks]
    assert all(r.cached and r.scored for r in out)
    assert store.spend("run-1").target.to_dict() == {
        "rollouts": 0,
        "cached": 4,
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


@pytest.mark.parametrize("concurrency", [1, 4])
def test_runs_what_the_holder_gave_up_or_let_expire(tmp_path, skill, suite, concurrency):
    done, other = held_by_another(tmp_path, skill, suite, ttl=0.4)
    # t0's attempt ends unscored (its claim goes with it), t1 scores, t2 and t3 are
    # never finished: their leases lapse
    timer = later(0.1, lambda: (other.put(_unscored(done[0]), {}), other.put(done[1], {})))
    store = RolloutStore(tmp_path / "s.sqlite")
    model = ScriptedModel(upper)
    out = RolloutEngine(ChatHarness(model), store, concurrency=concurrency).run(skill, suite.tasks)
    timer.join()
    assert model.call_count == 3
    assert [r.cached for r in out] == [False, True, False, False]
    assert all(r.scored and r.passed for r in out)
    assert claim_rows(store) == []


def _unscored(r: Rollout) -> Rollout:
    return Rollout(
        key=r.key,
        task_id=r.task_id,
        split=r.split,
        sample=r.sample,
        skill_hash=r.skill_hash,
        scored=False,
        error="provider down",
        error_kind="server",
    )


def test_a_long_rollout_keeps_its_claim(tmp_path, skill, suite):
    store = RolloutStore(tmp_path / "s.sqlite", lease_ttl=0.3)
    rival = RolloutStore(tmp_path / "s.sqlite")
    taken = []

    def slow_then_try_to_steal(messages):
        if messages[-1]["content"] == "word0":
            for _ in range(5):  # 1 s: three lease lifetimes
                time.sleep(0.2)
                [key] = [k for k, _ in claim_rows(rival)]
                taken.extend(rival.claim_many([key], "rival"))
        return upper(messages)

    model = ScriptedModel(slow_then_try_to_steal)
    out = RolloutEngine(ChatHarness(model), store, concurrency=1).run(skill, suite.tasks[:1])
    assert taken == []  # the heartbeat renewed the lease while the rollout ran
    assert out[0].scored and claim_rows(store) == []


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_failed_run_releases_its_claims(tmp_path, skill, suite, concurrency):
    def interrupted(messages):
        if messages[-1]["content"] == "word1":
            raise KeyboardInterrupt
        time.sleep(0.05)
        return upper(messages)

    store = RolloutStore(tmp_path / "s.sqlite")
    engine = RolloutEngine(ChatHarness(ScriptedModel(interrupted)), store, concurrency=concurrency)
    with pytest.raises(KeyboardInterrupt):
        engine.run(skill, suite.tasks)
    engine.close()
    assert claim_rows(store) == []  # free for another process
    rest = ScriptedModel(upper)
    out = RolloutEngine(
        ChatHarness(rest), RolloutStore(tmp_path / "s.sqlite"), concurrency=concurrency
    ).run(skill, suite.tasks)
    assert all(r.passed for r in out) and rest.call_count == 4 - sum(r.cached for r in out)


def test_a_task_given_twice_is_served_twice_when_another_owner_holds_it(tmp_path, skill, suite):
    done, other = held_by_another(tmp_path, skill, suite)
    timer = later(0.2, lambda: other.put(done[0], {}))
    model = ScriptedModel(upper)
    out = RolloutEngine(ChatHarness(model), RolloutStore(tmp_path / "s.sqlite"), concurrency=2).run(
        skill, [suite.tasks[0], suite.tasks[0]]
    )
    timer.join()
    assert model.call_count == 0 and [r.task_id for r in out] == ["t0", "t0"]
    assert all(r.cached for r in out)


@pytest.mark.parametrize("concurrency", [1, 3])
def test_a_race_starts_nothing_once_settled_and_frees_its_claims(tmp_path, skill, concurrency):
    """`until` is asked after each rollout: once it says settled, nothing more starts,
    those in flight finish and are kept, the result holds only what ran, and no
    claim is left on what did not (another engine can run it at once)."""
    items = [{"id": f"t{i}", "input": f"word{i}", "expected": f"WORD{i}"} for i in range(12)]
    suite = load_suite(write_suite(tmp_path / "race.yaml", items))
    path = tmp_path / "s.sqlite"
    model = ScriptedModel(upper, latency=0.01)
    engine = RolloutEngine(ChatHarness(model), RolloutStore(path), concurrency=concurrency)
    asked = []

    def until(results):
        asked.append(sum(r is not None for r in results))
        return asked[-1] >= 4

    got = engine.run(skill, suite.tasks, until=until)
    engine.close()
    assert 4 <= len(got) <= 4 + concurrency - 1  # at most the ones in flight besides
    assert model.call_count == len(got)
    assert [r.task_id for r in got] == [t.id for t in suite.tasks[: len(got)]]  # in order
    with RolloutStore(path) as store:
        assert claim_rows(store) == []
        assert len(store.get_many([r.key for r in got])) == len(got)
    # a second engine runs the rest without waiting on a claim; the first ones are hits
    other = RolloutEngine(ChatHarness(ScriptedModel(upper)), RolloutStore(path), concurrency=2)
    rest = other.run(skill, suite.tasks)
    other.close()
    assert len(rest) == 12 and sum(r.cached for r in rest) == len(got)


def test_a_race_settled_by_the_stores_rollouts_runs_nothing(tmp_path, skill, suite):
    store = RolloutStore(tmp_path / "s.sqlite")
    RolloutEngine(ChatHarness(ScriptedModel(upper)), store).run(skill, suite.tasks[:2])
    model = ScriptedModel(upper)
    engine = RolloutEngine(ChatHarness(model), store)
    got = engine.run(skill, suite.tasks, until=lambda rs: sum(r is not None for r in rs) >= 2)
    assert model.call_count == 0 and [r.task_id for r in got] == ["t0", "t1"]
