"""Optimizer replies kept in the store, exact replay of a finished run, and bundles
that carry a run to a fresh directory."""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3

import pytest
from train.world import (
    HARMFUL,
    HELPFUL,
    ScriptedOptimizer,
    edits_reply,
    flags,
    leave_only_the_bundle,
)
from typer.testing import CliRunner

import skillopt
from skillopt.cli.main import app
from skillopt.cli.train_summary import render_summary
from skillopt.models import ScriptedModel
from skillopt.models.stored import ReplayMiss, StoredModel
from skillopt.store.rollouts import RolloutStore

runner = CliRunner()


def _plan():
    return ScriptedOptimizer([edits_reply("Be polite."), edits_reply(HELPFUL)], guidance="- g")


def _train(world, models, tmp_path, **extra):
    models["set"](_plan())
    return skillopt.train(
        world["skill"],
        world["suite"],
        **flags(run_dir=tmp_path / "runs", store=tmp_path / "store.sqlite", **extra),
    )


def test_a_rerun_with_the_same_settings_asks_the_optimizer_nothing(world, models, tmp_path):
    first = _train(world, models, tmp_path)
    asked = models["optimizer"].call_count
    assert asked > 0
    second = _train(world, models, tmp_path)
    assert models["optimizer"].call_count == asked  # every reply came from the store
    acct = second.summary["accounting"]
    assert acct["optimizer_calls"] == 0 and acct["optimizer_served"] > 0
    assert acct["target_rollouts"] == 0  # and every rollout
    assert second.summary["best_skill_hash"] == first.summary["best_skill_hash"]
    with contextlib.redirect_stdout(io.StringIO()) as out:
        render_summary(second)
    served = acct["optimizer_served"]
    assert f"optimizer calls: 0, {served} replies from the store" in out.getvalue()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        render_summary(first)
    assert "optimizer calls: " in out.getvalue() and "replies from" not in out.getvalue()


def test_a_sampled_model_keys_on_the_attempt_a_deterministic_one_does_not(tmp_path):
    store = RolloutStore(tmp_path / "s.sqlite")
    replies = iter(["one", "two", "three", "four"])
    sampled = ScriptedModel(lambda m: next(replies), name="scripted/s")
    model = StoredModel(sampled, lambda: store)
    assert [model.complete("same").text for _ in range(2)] == ["one", "two"]
    again = StoredModel(sampled, lambda: store)  # a new process: the same sequence
    assert [again.complete("same").text for _ in range(2)] == ["one", "two"]
    assert sampled.call_count == 2
    # another seed (the run's salt) draws new samples; the first seed's stay served
    seeded = StoredModel(sampled, lambda: store, salt="seed:2")
    assert seeded.complete("same").text == "three" and sampled.call_count == 3
    assert StoredModel(sampled, lambda: store).complete("same").text == "one"
    replies = iter(["three", "four"])
    cold = ScriptedModel(lambda m: next(replies), name="scripted/d", params={"temperature": 0})
    det = StoredModel(cold, lambda: store)
    assert [det.complete("same").text for _ in range(3)] == ["three"] * 3
    assert cold.call_count == 1
    served = det.complete("same")
    assert served.attempts == 0 and served.cost == 0.0
    offline = StoredModel(cold, lambda: store, offline=True)
    with pytest.raises(ReplayMiss):
        offline.complete("never asked")


def test_resume_after_a_crash_reuses_the_stored_replies(world, models, tmp_path):
    # step 1 reflects in several calls (two failures each); the second one crashes
    plan = ScriptedOptimizer(
        [edits_reply("Be polite."), edits_reply(HELPFUL)], crash_at=2, crash=KeyboardInterrupt
    )
    models["set"](plan)
    with pytest.raises(skillopt.errors.Interrupted):
        skillopt.train(
            world["skill"],
            world["suite"],
            **flags(
                run_dir=tmp_path / "runs",
                store=tmp_path / "store.sqlite",
                minibatch_size=2,
                optimizer_concurrency=1,
            ),
        )
    answered_before_the_crash = plan.prompts[0]
    asked = len(plan.prompts)
    run_id = next((tmp_path / "runs").glob("words-*")).name
    plan.crash_at = None
    res = skillopt.resume(run_id, run_dir=tmp_path / "runs")
    # the reply paid for before the crash is served from the store, not asked again
    assert res.summary["accounting"]["optimizer_served"] >= 1
    assert answered_before_the_crash not in plan.prompts[asked:]


def test_replay_reproduces_a_finished_run_with_zero_calls(world, models, tmp_path):
    run = _train(world, models, tmp_path, slow_update=True, epochs=2)
    target_calls = models["target"].call_count
    optimizer_calls = models["optimizer"].call_count
    res = skillopt.replay(run.run_id, run_dir=tmp_path / "runs")
    assert res.reproduced, res.first_difference
    assert res.best_hash == run.summary["best_skill_hash"]
    assert res.model_calls == 0 and res.served["rollouts"] > 0 and res.served["replies"] > 0
    assert models["target"].call_count == target_calls
    assert models["optimizer"].call_count == optimizer_calls


def test_replay_names_the_step_whose_recorded_call_is_lost(world, models, tmp_path):
    run = _train(world, models, tmp_path)
    # a recorded reply lost: the recording is incomplete (not a run that differs)
    db = sqlite3.connect(tmp_path / "store.sqlite")
    key = db.execute("SELECT key FROM replies ORDER BY created_at DESC LIMIT 1").fetchone()[0]
    db.execute("DELETE FROM replies WHERE key = ?", (key,))
    db.commit()
    db.close()
    res = skillopt.replay(run.run_id, run_dir=tmp_path / "runs")
    assert not res.reproduced and res.verdict == "incomplete"
    assert res.first_difference.startswith("step ")
    assert "no reply" in res.first_difference
    assert res.model_calls == 0


def test_a_bundle_replays_in_a_fresh_directory(world, models, tmp_path, monkeypatch):
    run = _train(world, models, tmp_path)
    out = tmp_path / "bundle" / "run.tar.gz"
    res = runner.invoke(
        app, ["bundle", run.run_id, "--run-dir", str(tmp_path / "runs"), "-o", str(out)]
    )
    assert res.exit_code == 0, res.output
    # the bundle holds exactly the rows the run used, nothing of another run
    other = _train(world, models, tmp_path, seed=5, epochs=1)
    assert other.run_id != run.run_id
    # the original store, runs, skill and suite are gone: only the bundle is left
    target_calls = models["target"].call_count
    fresh = leave_only_the_bundle(world, tmp_path, monkeypatch)
    replayed = runner.invoke(app, ["train", "--replay", str(out)])
    assert replayed.exit_code == 0, replayed.output
    assert "reproduced" in replayed.output and "0 model calls" in replayed.output
    assert run.summary["best_skill_hash"][:12] in replayed.output
    assert models["target"].call_count == target_calls
    assert list(fresh.iterdir()) == []  # nothing written where it ran


def test_a_bundle_holds_only_the_runs_rows(world, models, tmp_path):
    run = _train(world, models, tmp_path)
    models["set"](ScriptedOptimizer([edits_reply(HARMFUL)]))  # another run, other skills
    skillopt.train(
        world["skill"],
        world["suite"],
        **flags(run_dir=tmp_path / "runs", store=tmp_path / "store.sqlite", epochs=1),
    )
    out = skillopt.bundle(run.run_id, tmp_path / "b.tar.gz", run_dir=tmp_path / "runs")
    import tarfile

    with tarfile.open(out) as tar:
        manifest = json.loads(tar.extractfile("bundle/bundle.json").read())
        unpacked = sum(m.size for m in tar.getmembers() if m.isfile())
    # it declares what it unpacks to, which a replay holds it to
    assert unpacked <= manifest["bytes"] <= unpacked + 4096
    with RolloutStore(tmp_path / "store.sqlite") as store:
        used = store.uses(run.run_id, "rollout")
        replies = store.uses(run.run_id, "reply")
        total = store.count()
    assert manifest["rows"]["rollouts"] == len(used) < total
    assert manifest["rows"]["replies"] == len(replies) > 0
