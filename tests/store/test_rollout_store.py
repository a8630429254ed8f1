"""The rollout store: migrations, fingerprint hits and misses, unscored handling."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from helpers import write_skill, write_suite

from skillopt.errors import ModelError
from skillopt.harness.chat import ChatHarness
from skillopt.models import ScriptedModel
from skillopt.rollouts.engine import RolloutEngine
from skillopt.skill.document import Skill
from skillopt.store.rollouts import RolloutStore
from skillopt.store.schema import MIGRATIONS, migrate
from skillopt.suite.loader import load_suite


def upper(messages):
    return messages[-1]["content"].upper()


def make_suite(tmp_path, n=6, **fields):
    items = [{"id": f"t{i}", "input": f"word{i}", "expected": f"WORD{i}"} for i in range(n)]
    return load_suite(write_suite(tmp_path / "suite.yaml", items, **fields))


@pytest.fixture
def skill(tmp_path):
    return Skill.load(write_skill(tmp_path / "skills", "caps", body="Answer in capitals.\n"))


def engine_for(model, store, **kw):
    return RolloutEngine(ChatHarness(model), store, **kw)


def test_blank_database_migrates_to_current_schema(tmp_path):
    path = tmp_path / "store.sqlite"
    RolloutStore(path).close()
    db = sqlite3.connect(path)
    names = [r[0] for r in db.execute("SELECT name FROM migrations ORDER BY name")]
    assert names == [m.__name__ for m in MIGRATIONS]
    cols = {r[1] for r in db.execute("PRAGMA table_info(rollouts)")}
    assert {
        "key",
        "fingerprint",
        "skill_hash",
        "task_id",
        "sample",
        "status",
        "score",
        "passed",
        "feedback",
        "answer",
        "error",
        "trajectory",
        "input_tokens",
        "output_tokens",
        "cost",
        "latency_s",
        "attempts",
    } <= cols
    assert {r[1] for r in db.execute("PRAGMA table_info(skills)")} == {"hash", "text", "created_at"}
    assert migrate(db) == []  # nothing left to apply


def test_identical_evaluation_is_served_from_store(tmp_path, skill):
    suite = make_suite(tmp_path)
    store = RolloutStore(tmp_path / "s.sqlite")
    model = ScriptedModel(upper)
    first = engine_for(model, store).run(skill, suite.tasks)
    assert model.call_count == 6 and not any(r.cached for r in first)
    assert all(r.scored and r.passed for r in first)
    store.close()

    store = RolloutStore(tmp_path / "s.sqlite")  # a new process would see the same
    model2 = ScriptedModel(upper)
    second = engine_for(model2, store).run(skill, suite.tasks)
    assert model2.call_count == 0
    assert all(r.cached for r in second)
    assert [r.score for r in second] == [r.score for r in first]
    assert store.skill_text(skill.hash) == skill.text


def _calls_after(change, tmp_path, skill):
    """Run once, apply `change`, run again; return the second run's model calls."""
    store = RolloutStore(":memory:")
    suite = make_suite(tmp_path, n=3)
    engine_for(ScriptedModel(upper), store).run(skill, suite.tasks)
    model, run = change(suite, store)
    run()
    return model.call_count


def test_every_fingerprint_component_misses(tmp_path, skill):
    def same(suite, store):
        m = ScriptedModel(upper)
        return m, lambda: engine_for(m, store).run(skill, suite.tasks)

    def skill_body(suite, store):
        m = ScriptedModel(upper)
        return m, lambda: engine_for(m, store).run(skill.with_body("Other text.\n"), suite.tasks)

    def sample_index(suite, store):
        m = ScriptedModel(upper)
        return m, lambda: engine_for(m, store).run(skill, suite.tasks, samples=2)

    def target_name(suite, store):
        m = ScriptedModel(upper, name="scripted/other")
        return m, lambda: engine_for(m, store).run(skill, suite.tasks)

    def target_params(suite, store):
        m = ScriptedModel(upper, params={"temperature": 0.7})
        return m, lambda: engine_for(m, store).run(skill, suite.tasks)

    def harness_version(suite, store):
        m = ScriptedModel(upper)
        h = ChatHarness(m)
        h.version = ChatHarness.version + ".1"  # any other version
        return m, lambda: RolloutEngine(h, store).run(skill, suite.tasks)

    def task_content(key, value):
        def change(suite, store):
            items = [{"id": f"t{i}", "input": f"word{i}", "expected": f"WORD{i}"} for i in range(3)]
            items[0][key] = value
            fields = {}
            if key == "prompt":
                items[0].pop("prompt")
                fields["prompt"] = value
            new = load_suite(write_suite(tmp_path / "suite2.yaml", items, **fields))
            m = ScriptedModel(upper)
            return m, lambda: engine_for(m, store).run(skill, new.tasks)

        return change

    def scorer(spec):
        def change(suite, store):
            items = [{"id": f"t{i}", "input": f"word{i}", "expected": f"WORD{i}"} for i in range(3)]
            new = load_suite(write_suite(tmp_path / "suite3.yaml", items, scorer=spec))
            m = ScriptedModel(upper)
            return m, lambda: engine_for(m, store).run(skill, new.tasks)

        return change

    assert _calls_after(same, tmp_path, skill) == 0
    assert _calls_after(skill_body, tmp_path, skill) == 3
    assert _calls_after(sample_index, tmp_path, skill) == 3  # sample 1 is new, sample 0 cached
    assert _calls_after(target_name, tmp_path, skill) == 3
    assert _calls_after(target_params, tmp_path, skill) == 3
    assert _calls_after(harness_version, tmp_path, skill) == 3
    assert _calls_after(task_content("input", "changed"), tmp_path, skill) == 1
    assert _calls_after(task_content("expected", "CHANGED"), tmp_path, skill) == 1
    assert _calls_after(task_content("prompt", "Say: {input}"), tmp_path, skill) == 3
    assert _calls_after(scorer("normalized"), tmp_path, skill) == 3
    assert _calls_after(scorer({"type": "exact", "ignore_case": True}), tmp_path, skill) == 3


def test_supporting_file_changes_the_fingerprint(tmp_path):
    skill_dir = write_skill(tmp_path / "skills", "caps", body="Answer in capitals.\n")
    (skill_dir / "references").mkdir()
    (skill_dir / "references" / "notes.md").write_text("v1")
    suite = make_suite(tmp_path, n=2)
    store = RolloutStore(":memory:")
    engine_for(ScriptedModel(upper), store).run(Skill.load(skill_dir), suite.tasks)
    (skill_dir / "references" / "notes.md").write_text("v2")
    m = ScriptedModel(upper)
    engine_for(m, store).run(Skill.load(skill_dir), suite.tasks)
    assert m.call_count == 2


def test_infrastructure_failures_are_unscored_and_retried(tmp_path, skill):
    suite = make_suite(tmp_path, n=4)

    def flaky(messages):
        if messages[-1]["content"] in ("word1", "word3"):
            raise ModelError("provider down", kind="server")
        return upper(messages)

    store = RolloutStore(tmp_path / "s.sqlite")
    rollouts = engine_for(ScriptedModel(flaky), store).run(skill, suite.tasks)
    by_id = {r.task_id: r for r in rollouts}
    assert not by_id["t1"].scored and by_id["t1"].score is None
    assert by_id["t1"].error == "provider down" and by_id["t1"].error_kind == "server"
    assert by_id["t0"].scored and by_id["t0"].score == 1.0
    assert store.count("unscored") == 2 and store.count("scored") == 2

    healed = ScriptedModel(upper)
    again = engine_for(healed, store).run(skill, suite.tasks)
    assert healed.call_count == 2  # only the unscored ones are run again
    assert all(r.scored for r in again)
    assert store.count("unscored") == 0

    broken = ScriptedModel(lambda m: (_ for _ in ()).throw(ModelError("down")))
    final = engine_for(broken, store).run(skill, suite.tasks)
    assert broken.call_count == 0 and all(r.scored for r in final)  # scored rows are final


def test_scorer_failure_is_unscored_not_zero(tmp_path, skill):
    (tmp_path / "badscore.py").write_text(
        "def score(answer, expected, task):\n    raise RuntimeError('scorer bug')\n"
    )
    items = [{"id": "a", "input": "x", "expected": "X"}]
    suite = load_suite(
        write_suite(
            tmp_path / "py.yaml", items, scorer={"type": "python", "function": "badscore:score"}
        )
    )
    [r] = engine_for(ScriptedModel(upper), RolloutStore(":memory:")).run(skill, suite.tasks)
    assert not r.scored and r.error_kind == "scorer" and "scorer bug" in r.error


def test_interrupted_run_keeps_finished_rollouts(tmp_path, skill):
    suite = make_suite(tmp_path, n=8)
    calls = {"n": 0}

    def dies_on_fifth(messages):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return upper(messages)

    store = RolloutStore(tmp_path / "s.sqlite")
    with pytest.raises(KeyboardInterrupt):
        engine_for(ScriptedModel(dies_on_fifth), store, concurrency=1).run(skill, suite.tasks)
    store.close()
    store = RolloutStore(tmp_path / "s.sqlite")
    assert store.count("scored") == 4
    resumed = ScriptedModel(upper)
    out = engine_for(resumed, store).run(skill, suite.tasks)
    assert resumed.call_count == 4 and sum(r.cached for r in out) == 4


def test_concurrency_runs_tasks_at_once_and_keeps_order(tmp_path, skill):
    suite = make_suite(tmp_path, n=24)
    state = {"now": 0, "peak": 0}
    lock = threading.Lock()
    gate = threading.Barrier(4, timeout=5)

    def slow(messages):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        try:
            gate.wait()  # only passes when 4 calls are in flight together
        except threading.BrokenBarrierError:
            pass
        with lock:
            state["now"] -= 1
        return upper(messages)

    out = engine_for(ScriptedModel(slow), RolloutStore(":memory:"), concurrency=4).run(
        skill, suite.tasks
    )
    assert state["peak"] == 4
    assert [r.task_id for r in out] == [t.id for t in suite.tasks]
    assert all(r.passed for r in out)


def test_observer_errors_do_not_break_the_run(tmp_path, skill):
    suite = make_suite(tmp_path, n=3)
    seen = []

    def bad_observer(event):
        raise RuntimeError("observer bug")

    out = engine_for(
        ScriptedModel(upper), RolloutStore(":memory:"), observers=[bad_observer, seen.append]
    ).run(skill, suite.tasks)
    assert len(out) == 3 and [e.done for e in seen] == [1, 2, 3]
