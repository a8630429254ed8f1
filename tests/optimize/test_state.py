"""The training checkpoint: typed, versioned, read back exactly; version 1 migrated;
anything unreadable one error that names the file and the field."""

from __future__ import annotations

import copy
import json

import pytest

from skillopt.errors import InputError
from skillopt.optimize.memory import Memory
from skillopt.rollouts.spend import RoleSpend, Spend, TargetSpend
from skillopt.runs.rundir import RunDir
from skillopt.skill.document import Skill
from skillopt.skill.edits import Edit
from skillopt.training.checkpoint import (
    Accounting,
    BudgetStop,
    EarlyStop,
    Pending,
    Revision,
    SkippedNote,
    SplitScore,
)
from skillopt.training.records import to_json
from skillopt.training.state import TrainState
from skillopt.training.state_format import MIGRATIONS, STATE_VERSION
from skillopt.training.steps import read_step

SKILL = Skill.parse("---\nname: words\ndescription: Demo.\n---\n# Words\n\n- Reply.\n")
EDIT = Edit("add", section="Rules", content="- Shout.")

# A version-1 checkpoint as skillopt wrote it (status running, one step done, no
# `skipped_notes` or `test` yet).
V1 = {
    "version": 1,
    "status": "running",
    "epoch": 1,
    "k": 0,
    "step": 1,
    "slow_done": False,
    "notes_done": False,
    "incumbent": {"text": "T", "hash": "h0", "val": 0.5},
    "initial": {"text": "T", "hash": "h0", "val": 0.5},
    "epoch_start": {"text": "T", "hash": "h0", "val": 0.5},
    "support": [["scripts/run.sh", "d1"]],
    "steps": [
        {
            "step": 0,
            "kind": "initial",
            "epoch": 0,
            "val": 0.5,
            "n": 4,
            "commit": "c0",
            "decision": "initial",
        },
        {
            "step": 1,
            "kind": "step",
            "epoch": 1,
            "budget": 4,
            "train_mean": 0.75,
            "failures": 1,
            "successes": 3,
            "unscored": 0,
            "proposals": [{"edits": [], "skipped": "no JSON", "calls": 2}],
            "dropped": [],
            "apply": [],
            "decision": "no_candidate",
            "reason": "the optimizer proposed no edit",
        },
    ],
    "pending": {"step": 2, "proposals": [{"edits": [], "skipped": None, "calls": 1}]},
    "memory": {"rejected": [], "not_applied": [], "meta_notes": [{"epoch": 1, "notes": "n"}]},
    "accounting": {
        "optimizer_calls": 3,
        "optimizer_input_tokens": 100,
        "optimizer_output_tokens": 10,
        "optimizer_cost": None,
        "skipped_minibatches": 1,
        "target_rollouts": 16,
        "cached_rollouts": 4,
        "unscored_rollouts": 0,
        "target_calls": 16,
        "target_input_tokens": 320,
        "target_output_tokens": 16,
        "target_cost": 0.001,
    },
    "started_at": 1767268800.5,
}


def busy_state() -> TrainState:
    st = TrainState.new(SKILL)
    st.status = "finished"
    st.epoch, st.k, st.step = 2, 0, 3
    st.incumbent = Revision("better", "h1", 1.0)
    st.initial = Revision(SKILL.text, SKILL.hash, 0.5)
    st.support = (("scripts/run.sh", "d1"),)
    st.steps += [
        read_step(rec, f"steps[{i}]", ValueError)
        for i, rec in enumerate(copy.deepcopy(V1["steps"]))
    ]
    st.pending = Pending(3, slow_update={"text": "guide", "skipped": None, "calls": 1})
    st.memory.reject(2, [EDIT], -0.25, "worse")
    st.memory.skip(2, EDIT, "anchor_not_found")
    st.skipped_notes.append(SkippedNote(1, "timed out"))
    st.accounting = Accounting(optimizer_calls=4, target_cost=0.5)
    st.test = {"no_skill": SplitScore(0.25, 4, 0.25), "best": SplitScore(None, 0, None)}
    return st


def through_json(data: dict) -> dict:
    return json.loads(json.dumps(data))


def test_a_new_state_starts_from_the_skill():
    st = TrainState.new(SKILL)
    assert st.status == "new" and (st.epoch, st.k, st.step) == (0, 0, 0)
    assert st.incumbent == st.initial == st.epoch_start == Revision(SKILL.text, SKILL.hash)
    assert st.steps == [] and st.pending is None and st.memory == Memory()
    assert st.test == {} and st.skipped_notes == [] and st.accounting == Accounting()


def test_round_trip_through_json_gives_the_same_state():
    st = busy_state()
    data = through_json(st.to_dict())
    assert data["version"] == STATE_VERSION == 2
    assert TrainState.from_dict(data) == st
    assert TrainState.from_dict(through_json(TrainState.new(SKILL).to_dict())).status == "new"


def test_the_file_keeps_the_field_names_it_always_had():
    data = busy_state().to_dict()
    assert list(data) == [*V1, "skipped_notes", "test"]
    assert data["incumbent"] == {"text": "better", "hash": "h1", "val": 1.0}
    assert data["pending"] == {
        "step": 3,
        "slow_update": {"text": "guide", "skipped": None, "calls": 1},
    }
    assert data["skipped_notes"] == [{"epoch": 1, "reason": "timed out"}]
    assert data["test"]["no_skill"] == {"mean": 0.25, "n": 4, "pass_rate": 0.25}
    assert data["memory"]["rejected"][0]["edit"] == EDIT.to_dict()


def test_version_1_is_migrated_and_saved_as_version_2(tmp_path):
    st = TrainState.from_dict(copy.deepcopy(V1))
    assert st.status == "running" and (st.epoch, st.k, st.step) == (1, 0, 1)
    assert st.incumbent == Revision("T", "h0", 0.5)
    assert st.support == (("scripts/run.sh", "d1"),)
    assert to_json(st.steps) == V1["steps"]
    assert st.pending == Pending(2, proposals=[{"edits": [], "skipped": None, "calls": 1}])
    assert st.memory.meta_notes == [{"epoch": 1, "notes": "n"}]
    assert st.accounting.optimizer_calls == 3 and st.accounting.target_cost == 0.001
    assert st.skipped_notes == [] and st.test == {}
    run = RunDir.create(tmp_path, "r")
    st.save(run)
    saved = json.loads(run.state_path.read_text())
    assert saved["version"] == 2 and saved["skipped_notes"] == [] and saved["test"] == {}
    assert saved["memory"].pop("accepted") == []  # the memory of accepted edits starts empty
    assert "optimizer_served" not in saved["accounting"]  # added within v2: only when set
    assert {k: v for k, v in saved.items() if k not in ("version", "skipped_notes", "test")} == {
        k: v for k, v in V1.items() if k != "version"
    }
    assert TrainState.load(run) == st


def test_an_early_stop_is_kept_and_a_version_2_checkpoint_without_one_still_loads():
    st = busy_state()
    assert st.stopped_early is None and "stopped_early" not in st.to_dict()
    st.stopped_early = EarlyStop(3, 2, "stalled: the same failures")
    data = through_json(st.to_dict())
    assert data["version"] == 2
    assert data["stopped_early"] == {"step": 3, "epoch": 2, "reason": "stalled: the same failures"}
    assert TrainState.from_dict(data) == st
    del data["stopped_early"]  # as skillopt wrote version 2 before the field existed
    assert TrainState.from_dict(data).stopped_early is None


def test_a_budget_stop_is_kept_as_its_keys_were_written_and_read_back_typed():
    st = busy_state()
    assert st.stop is None and "stop" not in st.to_dict()
    stop = BudgetStop(budget="--budget-usd", where="step 3 · train", detail="$0.50 spent", step=2)
    st.stop_for_budget(stop)
    data = through_json(st.to_dict())
    # the keys in the order skillopt has always written them (BudgetExceeded's, then step)
    assert data["stop"] == {
        "reason": "budget",
        "budget": "--budget-usd",
        "where": "step 3 · train",
        "detail": "$0.50 spent",
        "step": 2,
    }
    assert list(data["stop"]) == ["reason", "budget", "where", "detail", "step"]
    back = TrainState.from_dict(data)
    assert back == st and back.stop == stop and back.status == "stopped"
    del data["stop"]["where"]
    with pytest.raises(InputError, match="missing") as err:
        TrainState.from_dict(data)
    assert err.value.field == "stop.where"


def test_owed_notes_are_kept_and_a_version_2_checkpoint_without_them_still_loads():
    st = busy_state()
    assert st.notes_owed == [] and "notes_owed" not in st.to_dict()
    st.notes_owed = [1, 2]
    data = through_json(st.to_dict())
    assert data["version"] == 2 and data["notes_owed"] == [1, 2]
    assert TrainState.from_dict(data) == st
    del data["notes_owed"]  # as skillopt wrote version 2 before notes were taken lazily
    assert TrainState.from_dict(data).notes_owed == []


def test_per_task_test_results_are_kept_and_a_checkpoint_without_them_still_loads():
    st = busy_state()
    st.test["initial"] = SplitScore(0.5, 2, 0.5, passed={"a": True, "b": False}, wall_s=1.25)
    data = through_json(st.to_dict())
    assert data["test"]["initial"]["passed"] == {"a": True, "b": False}
    assert data["test"]["initial"]["wall_s"] == 1.25
    assert "passed" not in data["test"]["no_skill"]  # written only when set
    assert TrainState.from_dict(data) == st
    # as skillopt wrote version 2 before per-task test results were kept
    del data["test"]["initial"]["passed"], data["test"]["initial"]["wall_s"]
    old = TrainState.from_dict(data).test["initial"]
    assert (old.passed, old.wall_s, old.mean) == (None, None, 0.5)


def test_cached_tokens_are_kept_and_a_version_2_checkpoint_without_them_still_loads():
    st = busy_state()
    plain = st.to_dict()["accounting"]
    # none cached: the accounting an older skillopt of version 2 reads (it knows no such key)
    assert "target_cached_tokens" not in plain and "optimizer_cached_tokens" not in plain
    assert list(plain) == list(V1["accounting"])
    st.accounting = Accounting(target_input_tokens=900, target_cached_tokens=800)
    data = through_json(st.to_dict())
    assert data["accounting"]["target_cached_tokens"] == 800
    assert "optimizer_cached_tokens" not in data["accounting"]
    assert TrainState.from_dict(data) == st
    del data["accounting"]["target_cached_tokens"]  # as written before the field existed
    assert TrainState.from_dict(data).accounting == Accounting(target_input_tokens=900)
    data["accounting"]["optimizer_cached_tokens"] = "many"
    with pytest.raises(InputError, match="optimizer_cached_tokens"):
        TrainState.from_dict(data)


def test_cached_tokens_come_from_the_ledger_per_role():
    spend = Spend(
        target=TargetSpend(input_tokens=500, cached_input_tokens=450),
        optimizer=RoleSpend(input_tokens=70, cached_input_tokens=60),
    )
    acct = Accounting.from_ledger(spend, [])
    assert (acct.target_cached_tokens, acct.optimizer_cached_tokens) == (450, 60)
    assert Accounting.from_ledger(Spend(), []).target_cached_tokens == 0


def test_version_1_accounting_from_before_the_ledger_is_read_as_far_as_it_goes():
    old = copy.deepcopy(V1)
    old["accounting"] = {
        "optimizer_calls": 2,
        "optimizer_usage": {"input_tokens": 5, "output_tokens": 1},
        "skipped_minibatches": 0,
        "target_rollouts": 8,
        "target_cost": None,
    }
    acct = TrainState.from_dict(old).accounting
    assert acct == Accounting(optimizer_calls=2, target_rollouts=8)


def test_every_version_before_this_one_has_a_migration():
    assert len(MIGRATIONS) == STATE_VERSION - 1
    assert [m.__name__ for m in MIGRATIONS] == ["m001_v1_to_v2"]


def v2(**changes) -> dict:
    data = through_json(busy_state().to_dict())
    data.update(changes)
    return data


def without(key: str) -> dict:
    data = v2()
    del data[key]
    return data


def nested(path: tuple, value) -> dict:
    data = v2()
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


@pytest.mark.parametrize(
    "data, field, words",
    [
        (v2(version=3), "version", "written by a newer skillopt"),
        (v2(version="2"), "version", "unknown checkpoint version '2'"),
        (without("version"), "version", "unknown checkpoint version None"),
        (without("k"), "k", "missing"),
        (v2(epoch="1"), "epoch", "expected a whole number, got a string"),
        (v2(status="paused"), "status", "expected one of new, running, stopped, finished"),
        (v2(slow_done=1), "slow_done", "expected true or false, got a number"),
        (v2(extra=1), "extra", "unknown field"),
        (nested(("incumbent", "val"), "high"), "incumbent.val", "a number or null"),
        (nested(("initial", "text"), None), "initial.text", "expected a string, got null"),
        (v2(steps={}), "steps", "expected a list, got an object"),
        (nested(("steps", 1), "step 1"), "steps[1]", "expected an object"),
        (nested(("steps", 1, "kind"), 7), "steps[1].kind", "expected a string"),
        (nested(("support", 0), ["only a path"]), "support[0]", "a [path, digest] pair"),
        (nested(("pending", "step"), None), "pending.step", "a whole number"),
        (nested(("memory", "rejected"), "all"), "memory.rejected", "expected a list"),
        (nested(("accounting", "target_calls"), 1.5), "accounting.target_calls", "whole"),
        (nested(("test", "best", "n"), "4"), "test.best.n", "a whole number"),
        (nested(("test", "best", "passed"), {"a": 1}), "test.best.passed", "true/false"),
        (nested(("test", "best", "wall_s"), "1s"), "test.best.wall_s", "expected a number"),
        (nested(("skipped_notes", 0), "x"), "skipped_notes[0]", "expected an object"),
        (v2(stopped_early="stall"), "stopped_early", "expected an object or null"),
        (v2(stopped_early={"step": 3, "epoch": 2}), "stopped_early.reason", "missing"),
        (v2(notes_owed=[0]), "notes_owed", "a list of epoch numbers"),
        (v2(notes_owed=1), "notes_owed", "a list of epoch numbers"),
    ],
)
def test_an_unreadable_checkpoint_is_one_error_naming_file_and_field(data, field, words):
    with pytest.raises(InputError) as err:
        TrainState.from_dict(data, path="runs/r/state.json")
    message = str(err.value)
    assert err.value.field == field
    assert message.startswith(f"runs/r/state.json: field '{field}': ")
    assert words in message and "\n" not in message


def test_a_checkpoint_that_is_not_an_object_is_malformed():
    with pytest.raises(InputError, match=r"^s\.json: malformed checkpoint: expected a JSON"):
        TrainState.from_dict([1, 2], path="s.json")


def test_a_corrupt_file_is_one_error(tmp_path):
    run = RunDir.create(tmp_path, "r")
    assert TrainState.load(run) is None
    run.state_path.write_text('{"version": 2, "status": "runn')
    with pytest.raises(InputError, match=r"state\.json: the checkpoint is corrupt: "):
        TrainState.load(run)
