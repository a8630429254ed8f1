"""`skillopt runs`: every run under the runs directory with its status, scores,
rollouts and cost, from real runs (finished, stopped by a budget, interrupted,
unreadable); and the validation sparkline `skillopt log` prints above its table."""

from __future__ import annotations

import json
import re

import pytest
from train.world import HARMFUL, HELPFUL, ScriptedOptimizer, edits_reply, train_args
from typer.testing import CliRunner

from skillopt import api
from skillopt.cli.common import out
from skillopt.cli.log import val_line
from skillopt.cli.main import app

runner = CliRunner()


def run_id_of(res) -> str:
    """The run id a `skillopt train` printed (in its summary or its error)."""
    return re.search(r"words-\d{8}-\d{6}-[0-9a-f]{4}", res.output).group(0)


@pytest.fixture
def four_runs(world, models):
    """Runs of each status, oldest first: stopped by a budget, finished, interrupted
    (Ctrl-C inside step 1) and unreadable (a corrupt checkpoint)."""
    runs = world["root"] / "runs"
    # first, while the store is empty: the baseline (4 rollouts) fits, step 1 does not
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    stopped = runner.invoke(app, train_args(world, "--epochs", "2", "--max-target-rollouts", "6"))
    assert stopped.exit_code == 3, stopped.output
    models["set"](ScriptedOptimizer([edits_reply(HARMFUL), edits_reply(HELPFUL)]))
    finished = runner.invoke(app, train_args(world, "--epochs", "2"))
    assert finished.exit_code == 0, finished.output
    models["set"](ScriptedOptimizer([edits_reply(HARMFUL)], crash_at=1, crash=KeyboardInterrupt))
    # a store of its own: the first run's replies would be served from the shared one
    interrupted = runner.invoke(app, train_args(world, "--epochs", "2", "--store", "own.sqlite"))
    assert interrupted.exit_code == 130, interrupted.output
    broken = runs / "words-broken"
    broken.mkdir()
    (broken / "run.yaml").write_text("run_id: words-broken\n")
    (broken / "state.json").write_text("{not json")
    (runs / "notes").mkdir()  # not a run: no run.yaml
    ids = {
        "stopped": run_id_of(stopped),
        "finished": run_id_of(finished),
        "interrupted": run_id_of(interrupted),
        "unreadable": "words-broken",
    }
    assert len(set(ids.values())) == 4
    assert {p.name for p in runs.iterdir()} >= {"audit.git", "rollouts.sqlite", *ids.values()}
    return ids


def summary_of(world, run_id: str) -> dict:
    return json.loads((world["root"] / "runs" / run_id / "summary.json").read_text())


def test_runs_json_lists_each_run_newest_first_with_its_status(world, models, four_runs):
    res = runner.invoke(app, ["runs", "--json"])
    assert res.exit_code == 0, res.output
    listed = json.loads(res.stdout)
    assert [r["id"] for r in listed] == [
        four_runs["unreadable"],  # newest: made last (its start is when run.yaml changed)
        four_runs["interrupted"],
        four_runs["finished"],
        four_runs["stopped"],
    ]
    assert [r["status"] for r in listed] == ["unreadable", "interrupted", "finished", "stopped"]
    keys = list(listed[0])
    assert keys == [
        "id",
        "path",
        "status",
        "reason",
        "skill",
        "suite",
        "target",
        "optimizer",
        "started_at",
        "started",
        "stopped_by",
        "val_initial",
        "val_best",
        "test_best",
        "test_no_skill",
        "target_rollouts",
        "cached_rollouts",
        "target_cost",
        "optimizer_cost",
        "cost",
        "cost_complete",
    ]
    assert all(list(r) == keys for r in listed)
    unreadable, interrupted, finished, stopped = listed

    assert unreadable["reason"].startswith(
        f"runs/{four_runs['unreadable']}/state.json: the checkpoint is corrupt: Expecting"
    )
    assert unreadable["path"] == f"runs/{four_runs['unreadable']}"
    assert unreadable["skill"] is None and unreadable["started_at"] is None
    assert unreadable["started"] is None and unreadable["val_initial"] is None

    s = summary_of(world, four_runs["finished"])
    assert finished == {
        "id": four_runs["finished"],
        "path": f"runs/{four_runs['finished']}",
        "status": "finished",
        "reason": "",
        "skill": "words",
        "suite": "words.yaml",
        "target": "scripted/test-target",
        "optimizer": "scripted/test-optimizer",
        "started_at": s["started_at"],
        "started": finished["started"],
        "stopped_by": None,
        "val_initial": 0.5,
        "val_best": 1.0,
        "test_best": 1.0,
        "test_no_skill": 0.5,
        "target_rollouts": s["accounting"]["target_rollouts"],
        "cached_rollouts": s["accounting"]["cached_rollouts"],
        "target_cost": s["accounting"]["target_cost"],
        "optimizer_cost": s["accounting"]["optimizer_cost"],
        "cost": 0.0,  # scripted models are free
        "cost_complete": True,
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", finished["started"])
    assert finished["target_rollouts"] > 0 and finished["cached_rollouts"] > 0

    assert stopped["stopped_by"] == "--max-target-rollouts"
    assert stopped["reason"] == (
        "--max-target-rollouts reached before step 1 · train; continue it with "
        f"`skillopt train --resume {four_runs['stopped']} --max-target-rollouts <larger>`"
    )
    assert stopped["val_initial"] == stopped["val_best"] == 0.5
    assert stopped["test_best"] is None and stopped["test_no_skill"] is None  # not run
    assert (stopped["target_rollouts"], stopped["cached_rollouts"]) == (4, 0)

    assert interrupted["reason"] == (
        f"continue it with `skillopt train --resume {four_runs['interrupted']}`"
    )
    assert interrupted["val_initial"] == 0.5 and interrupted["test_best"] is None
    assert interrupted["started_at"] > finished["started_at"] > stopped["started_at"]

    # the library call the command makes gives the same
    assert [r.to_dict() for r in api.list_runs()] == listed


def test_runs_table_shows_status_scores_rollouts_and_cost(world, models, four_runs, monkeypatch):
    monkeypatch.setattr(out, "_width", 220)
    res = runner.invoke(app, ["runs"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].split() == [
        "run",
        "skill",
        "suite",
        "target",
        "optimizer",
        "started",
        "status",
        "val",
        "test",
        "rollouts",
        "cost",
    ]
    rows = {line.split()[0]: line.split() for line in lines[2:6]}
    assert list(rows) == [
        four_runs["unreadable"],
        four_runs["interrupted"],
        four_runs["finished"],
        four_runs["stopped"],
    ]
    assert rows[four_runs["unreadable"]][1:] == ["unreadable"]
    s = summary_of(world, four_runs["finished"])["accounting"]
    finished = rows[four_runs["finished"]]
    assert finished[1:5] == [
        "words",
        "words.yaml",
        "scripted/test-target",
        "scripted/test-optimizer",
    ]
    assert finished[7:] == [
        "finished",
        "0.500",
        "→",
        "1.000",
        "1.000",
        "vs",
        "0.500",
        str(s["target_rollouts"]),
        f"+{s['cached_rollouts']}",
        "$0",
    ]
    stopped = rows[four_runs["stopped"]]
    assert stopped[7:] == ["stopped:", "budget", "0.500", "→", "0.500", "4", "+0", "$0"]
    assert rows[four_runs["interrupted"]][7] == "interrupted"
    # what to do with each run that is not finished, below the table
    notes = res.stdout.split("cost: target + optimizer", 1)[1]
    assert (
        f"{four_runs['stopped']}: stopped: budget: --max-target-rollouts reached before step 1"
        in notes
    )
    assert (
        f"{four_runs['interrupted']}: interrupted: continue it with `skillopt train "
        f"--resume {four_runs['interrupted']}`" in notes
    )
    assert f"{four_runs['unreadable']}: unreadable: " in notes and "corrupt" in notes
    assert "audit.git" not in res.stdout and "rollouts.sqlite" not in res.stdout

    # at 80 columns a few lines per run instead, with the same figures
    monkeypatch.setattr(out, "_width", 80)
    narrow = runner.invoke(app, ["runs"])
    assert narrow.exit_code == 0, narrow.output
    assert all(len(line) <= 80 for line in narrow.stdout.splitlines())
    blocks = narrow.stdout.strip().split("\n\n")
    assert [b.split()[0] for b in blocks] == [
        four_runs["unreadable"],
        four_runs["interrupted"],
        four_runs["finished"],
        four_runs["stopped"],
    ]
    assert blocks[2].splitlines()[1:] == [
        "  skill words · suite words.yaml",
        "  target scripted/test-target · optimizer scripted/test-optimizer",
        "  val 0.500 → 1.000 · test 1.000 vs 0.500 (best vs no skill)",
        f"  rollouts {s['target_rollouts']} run, {s['cached_rollouts']} from the store · cost $0",
    ]
    assert blocks[3].splitlines()[0].startswith(f"{four_runs['stopped']}  stopped: budget · ")


def test_an_interrupted_run_resumes_and_is_then_listed_as_finished(world, models, four_runs):
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    res = runner.invoke(app, ["train", "--resume", four_runs["interrupted"]])
    assert res.exit_code == 0, res.output
    listed = {r.id: r for r in api.list_runs()}
    assert listed[four_runs["interrupted"]].status == "finished"
    assert listed[four_runs["interrupted"]].reason == ""


def test_a_run_yaml_out_of_shape_is_listed_as_unreadable(world, models, four_runs):
    run = world["root"] / "runs" / four_runs["finished"]
    (run / "run.yaml").write_text("run_id: x\nsettings: [not, a, mapping]\n")
    (world["root"] / "runs" / four_runs["stopped"] / "run.yaml").write_text("- a list\n")
    listed = {r.id: r for r in api.list_runs()}
    assert listed[four_runs["finished"]].status == "unreadable"
    assert listed[four_runs["finished"]].reason.startswith(
        f"runs/{four_runs['finished']}/run.yaml: "
    )
    assert listed[four_runs["stopped"]].status == "unreadable"
    assert "run.yaml does not hold a mapping" in listed[four_runs["stopped"]].reason
    assert listed[four_runs["interrupted"]].status == "interrupted"  # the others still read


def test_no_runs_directory_lists_no_runs(world, tmp_path):
    res = runner.invoke(app, ["runs", "--run-dir", str(tmp_path / "nowhere")])
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == f"no runs in {tmp_path / 'nowhere'}"
    res = runner.invoke(app, ["runs", "--json", "--run-dir", str(tmp_path / "nowhere")])
    assert json.loads(res.stdout) == []


def test_log_draws_validation_per_step_above_the_table(world, models):
    nothing = json.dumps({"edits": []})
    models["set"](ScriptedOptimizer([edits_reply(HARMFUL), nothing, edits_reply(HELPFUL)]))
    res = runner.invoke(app, train_args(world, "--epochs", "3"))
    assert res.exit_code == 0, res.output
    log = runner.invoke(app, ["log", run_id_of(res)])
    assert log.exit_code == 0, log.output
    # step 0: 0.500; step 1 a raced rejection (no val score); step 2 made no candidate
    # (no edit proposed); step 3 accepted at 1.000
    assert log.stdout.splitlines()[0] == "val ▅··█  0.500 → 1.000 (best)"
    assert log.stdout.splitlines()[1].split()[:2] == ["step", "decision"]


def test_a_steps_val_is_its_candidates_and_none_where_it_scored_none():
    from step_records import batch, gate, initial, skipped_slow_update

    from skillopt.runs.read import RunStep, best_val
    from skillopt.training.steps import StepRecord

    def step(rec: StepRecord) -> RunStep:
        return RunStep(rec.step, rec.kind, 1, rec.decision, "", None, rec)

    steps = [
        step(initial(val=0.25)),
        step(batch(1, "rejected", gate=gate(candidate_mean=0.0))),
        step(batch(2, "rejected", gate=gate(candidate_mean=0.5, unrun=2))),  # raced
        step(batch(3, "accepted", gate=gate(candidate_mean=0.75))),
        step(skipped_slow_update(4, 1)),
        step(batch(5, "no_candidate")),
        step(batch(6, "rejected", gate=gate(candidate_mean=0.5))),
    ]
    assert [s.val for s in steps] == [0.25, 0.0, None, 0.75, None, None, 0.5]
    assert best_val(steps) == 0.75  # the last accepted, not the last scored
    assert best_val(steps[:3]) == 0.25 and best_val([]) is None
    assert val_line(steps) == "val ▃▁·▆··▅  0.250 → 0.750 (best)"


def test_log_draws_a_dot_for_every_step_of_a_run_that_made_no_candidate(world, models):
    models["set"](ScriptedOptimizer([json.dumps({"edits": []})]))
    res = runner.invoke(app, train_args(world, "--epochs", "2", "--stall-patience", "0"))
    assert res.exit_code == 0, res.output
    log = runner.invoke(app, ["log", run_id_of(res)])
    assert log.stdout.splitlines()[0] == "val ▅··  0.500 → 0.500 (best)"
