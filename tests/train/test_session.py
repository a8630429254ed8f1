"""A training run is assembled in one place: `start`, `resume` and `replay` each
build their session with `RunSession.open`, and every object in it is given what it
needs at construction (a replay's engine is offline from the start; the judge is
metered from the start)."""

from __future__ import annotations

import dataclasses
import sqlite3

import pytest
from train.world import HELPFUL, ScriptedOptimizer, edits_reply, flags

import skillopt
from skillopt.config import Settings
from skillopt.eval.context import prepare
from skillopt.models import ScriptedModel
from skillopt.models.metered import MeteredModel
from skillopt.rollouts.engine import RolloutEngine
from skillopt.suite.loader import load_suite
from skillopt.training.session_build import Checkpoint, NewRun, RunSession


@pytest.fixture
def built(monkeypatch):
    """Every session `RunSession.open` builds, with how it was asked for, and the
    `offline` each engine was constructed with."""
    sessions: list[tuple[dict, RunSession]] = []
    engines: list[bool] = []
    real_open = RunSession.open.__func__
    real_init = RolloutEngine.__init__

    def open_(cls, *args, **kwargs):
        session = real_open(cls, *args, **kwargs)
        sessions.append((kwargs, session))
        return session

    def init(self, *args, **kwargs):
        engines.append(kwargs.get("offline", False))
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(RunSession, "open", classmethod(open_))
    monkeypatch.setattr(RolloutEngine, "__init__", init)
    return sessions, engines


def test_start_resume_and_replay_build_their_session_in_one_place(world, models, tmp_path, built):
    sessions, engines = built
    models["set"](ScriptedOptimizer([edits_reply("Be polite."), edits_reply(HELPFUL)]))
    runs = tmp_path / "runs"
    run = skillopt.train(
        world["skill"], world["suite"], **flags(run_dir=runs, store=tmp_path / "s.sqlite")
    )
    skillopt.resume(run.run_id, run_dir=runs)  # finished: nothing runs, all the same built
    replayed = skillopt.replay(run.run_id, run_dir=runs)
    assert replayed.reproduced, replayed.first_difference

    kinds = [(type(kw["where"]), kw.get("offline", False)) for kw, _ in sessions]
    assert kinds == [(NewRun, False), (Checkpoint, False), (NewRun, True)]
    # one engine per session, and the replay's is offline from its construction
    assert engines == [False, False, True]
    for kwargs, session in sessions:
        assert session.engine.offline == kwargs.get("offline", False)
        # the pieces are wired to each other when built, not afterwards
        assert session.trainer.core.engine is session.engine
        assert session.engine.run_id == session.run.run_id
        assert session.engine.guard is session.guard
        assert session.trainer.core.optimizer is session.optimizer
    # start and resume built the same run; the replay one of its own
    assert sessions[0][1].run.run_id == sessions[1][1].run.run_id == run.run_id
    assert sessions[2][1].run.run_id == f"{run.run_id}-replay"


def test_a_session_cannot_be_rewired_after_it_is_built(world, models, tmp_path, built):
    sessions, _ = built
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    skillopt.train(
        world["skill"],
        world["suite"],
        **flags(run_dir=tmp_path / "runs", store=tmp_path / "s.sqlite", epochs=1),
    )
    (_, session), *_ = sessions
    with pytest.raises(dataclasses.FrozenInstanceError):
        session.engine = None
    with pytest.raises(dataclasses.FrozenInstanceError):
        session.ctx.judge = None


def test_the_judge_is_metered_from_the_context_it_is_prepared_in(world, models, tmp_path):
    judge = ScriptedModel(lambda messages: "yes", name="scripted/judge", cost=0.25)
    store_path = tmp_path / "s.sqlite"
    settings = Settings(target="scripted/test-target", store=str(store_path))
    suite = load_suite(world["suite"])

    unmetered = prepare(suite, settings, judge=judge, check=False)
    assert unmetered.judge is judge  # no ledger: nothing to write to
    unmetered.store.close()

    ctx = prepare(suite, settings, judge=judge, check=False, ledger="eval-1")
    assert isinstance(ctx.judge, MeteredModel) and ctx.judge.model is judge
    ctx.judge.complete("is it?")
    ctx.store.close()
    db = sqlite3.connect(store_path)
    rows = db.execute("SELECT run_id, role, calls, cost FROM spend").fetchall()
    db.close()
    assert rows == [("eval-1", "judge", 1, 0.25)]
