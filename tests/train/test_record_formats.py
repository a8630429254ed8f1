"""The run's files as skillopt wrote them before its records were typed
(`fixtures/`, written by the code of that time): they still load, and writing them
again gives the same bytes."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from train.world import HELPFUL, ScriptedOptimizer, edits_reply, flags

from skillopt import api
from skillopt.training.events import (
    Finished,
    GateDecision,
    NoCandidate,
    Stage,
    TrainEvent,
    event_json,
    event_name,
    read_event,
)
from skillopt.training.records import to_json
from skillopt.training.state import TrainState
from skillopt.training.steps import BatchRecord, InitialRecord, SkippedSlowUpdate, SlowUpdateRecord

FIXTURES = Path(__file__).parent / "fixtures"
RUNS = ("run_full", "run_stalled")


def written(data: dict) -> str:
    """JSON as the run directory writes its checkpoint."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


@pytest.mark.parametrize("run", RUNS)
def test_a_checkpoint_written_before_typed_records_loads_and_is_written_again_unchanged(run):
    text = (FIXTURES / f"{run}.state.json").read_text(encoding="utf-8")
    state = TrainState.from_dict(json.loads(text))
    assert written(state.to_dict()) == text
    assert to_json(state.steps) == json.loads(text)["steps"]  # each record reads as its JSON


def test_every_kind_of_step_record_is_read_as_its_own_type():
    state = TrainState.from_dict(json.loads((FIXTURES / "run_full.state.json").read_text()))
    kinds = [type(r) for r in state.steps]
    assert kinds == [
        InitialRecord,
        BatchRecord,
        SkippedSlowUpdate,
        BatchRecord,
        SlowUpdateRecord,
        BatchRecord,
        SkippedSlowUpdate,
    ]
    rejected, accepted = state.steps[1], state.steps[3]
    assert isinstance(rejected, BatchRecord) and rejected.gate is not None
    assert rejected.decision == "rejected" and rejected.gate.unrun == 2
    assert isinstance(accepted, BatchRecord) and accepted.gate is not None
    assert accepted.gate.accepted and accepted.failing == ("word-0", "word-1", "word-2", "word-7")
    no_candidate = state.steps[5]
    assert isinstance(no_candidate, BatchRecord) and no_candidate.gate is None
    assert "gate" not in to_json(no_candidate) and no_candidate.commit is None


@pytest.mark.parametrize("run", RUNS)
def test_an_event_log_written_before_typed_events_reads_and_is_written_again_unchanged(run):
    lines = (FIXTURES / f"{run}.events.jsonl").read_text(encoding="utf-8").splitlines()
    for line in lines:
        data = json.loads(line)
        ev = read_event(data)
        again = json.dumps(
            {"t": data["t"], "event": event_name(ev), **event_json(ev)},
            ensure_ascii=False,
            default=str,
        )
        assert again == line


def test_each_event_is_read_as_its_kind():
    lines = (FIXTURES / "run_full.events.jsonl").read_text(encoding="utf-8").splitlines()
    events = [read_event(json.loads(line)) for line in lines]
    decisions = [e for e in events if event_name(e) == "decision"]
    assert {type(e) for e in decisions} >= {GateDecision, NoCandidate}
    stage = next(e for e in events if isinstance(e, Stage) and e.stage == "rollout")
    assert (stage.step, stage.k, stage.per_epoch) == (1, 1, 1) and stage.minibatches is None
    assert "minibatches" not in event_json(stage)


def test_an_observer_that_raises_is_logged_and_training_goes_on(world, models, caplog):
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    seen: list[TrainEvent] = []

    def broken(event: TrainEvent) -> None:
        seen.append(event)
        raise RuntimeError("the observer broke")

    with caplog.at_level(logging.DEBUG, logger="skillopt"):
        result = api.train(world["skill"], world["suite"], observers=[broken], **flags(epochs=1))
    assert result.summary["best_val"] == 1.0 and isinstance(seen[-1], Finished)
    failed = [r for r in caplog.records if "an observer failed" in r.getMessage()]
    assert failed and failed[0].levelno == logging.WARNING
    assert "the observer broke" in failed[0].getMessage()
    traced = [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]
    assert any("the observer broke" in str(r.exc_info[1]) for r in traced)
