"""A stalled run stops early, finishes as usual, and says why everywhere."""

from __future__ import annotations

import json

from train.world import HELPFUL, ScriptedOptimizer, edits_reply, flags, neutral
from typer.testing import CliRunner

from skillopt import api
from skillopt.cli.main import app

REASON = (
    "stalled: the last 3 steps showed the optimizer the same 4 failing training tasks "
    "of the same skill, and none gave a better candidate (3 rejected)"
)


def test_a_stalled_run_stops_early_and_finishes(world, models):
    """Every step ties (one batch an epoch, the same 4 failures): after the third,
    epochs 4 and 5 are not run; the test split is scored and the reports written."""
    opt = ScriptedOptimizer(neutral(5))
    models["set"](opt)
    result = api.train(world["skill"], world["suite"], **flags(epochs=5))
    s = result.summary
    assert [(st["step"], st["decision"]) for st in s["steps"]] == [
        (0, "initial"),
        (1, "rejected"),
        (2, "rejected"),
        (3, "rejected"),
    ]
    assert s["status"] == "finished"
    assert s["stopped_early"] == {"step": 3, "epoch": 3, "reason": REASON}
    assert s["test"]["best"]["n"] == 4  # the test split is scored as usual
    assert opt.failure_calls == 3
    assert len([p for p in opt.prompts if '"notes"' in p]) == 2  # epochs 1 and 2 only
    state = json.loads((result.run_dir / "state.json").read_text())
    assert state["stopped_early"] == s["stopped_early"]
    assert state["steps"][3]["failing"] == ["word-0", "word-1", "word-2", "word-7"]
    report = (result.run_dir / "report.md").read_text()
    assert f"- Stopped early after step 3 (epoch 3): {REASON}" in report
    lines = (result.run_dir / "events.jsonl").read_text().splitlines()
    stops = [e for e in map(json.loads, lines) if e["event"] == "stopped"]
    assert [(e["step"], e["epoch"], e["reason"]) for e in stops] == [(3, 3, REASON)]


def test_the_console_says_the_run_stopped_early(world, models):
    models["set"](ScriptedOptimizer(neutral(5)))
    res = CliRunner().invoke(
        app,
        [
            "train",
            str(world["skill"]),
            "--tasks",
            str(world["suite"]),
            "--target",
            "scripted/test-target",
            "--optimizer",
            "scripted/test-optimizer",
            "--epochs",
            "5",
            "--no-slow-update",
        ],
    )
    assert res.exit_code == 0, res.output
    text = " ".join(res.stdout.split())
    line = f"stopped early after step 3 (epoch 3) — {REASON}"
    assert text.count(line) == 2  # as it happens, and in the summary at the end
    assert text.index(line) < text.index("test split") < text.rindex(line)


def test_stall_patience_0_never_stops(world, models):
    opt = ScriptedOptimizer(neutral(5))
    models["set"](opt)
    result = api.train(world["skill"], world["suite"], **flags(epochs=5, stall_patience=0))
    assert result.summary["stopped_early"] is None
    assert opt.failure_calls == 5 and len(result.summary["steps"]) == 6


def test_a_stall_on_the_last_step_is_not_an_early_stop(world, models):
    models["set"](ScriptedOptimizer(neutral(3)))
    result = api.train(world["skill"], world["suite"], **flags(epochs=3))
    assert result.summary["stopped_early"] is None
    assert "Stopped early" not in (result.run_dir / "report.md").read_text()


def test_an_accepted_step_resets_the_count(world, models):
    opt = ScriptedOptimizer(neutral(2) + [edits_reply(HELPFUL)])
    models["set"](opt)
    result = api.train(world["skill"], world["suite"], **flags(epochs=5))
    # no stall after the accepted step: the run stops there because validation is
    # saturated (1.000), not because it stalled
    assert result.summary["stopped_early"]["reason"].startswith("validation saturated")
    assert [st["decision"] for st in result.summary["steps"]][1:] == [
        "rejected",
        "rejected",
        "accepted",
    ]


def test_a_run_stopped_early_resumes_to_its_finish_without_training_more(world, models):
    """Killed after the stop was checkpointed but before the test split: the resumed
    run scores the test split and reports, and runs no further step."""
    opt = ScriptedOptimizer(neutral(5))
    models["set"](opt)
    first = api.train(world["skill"], world["suite"], **flags(epochs=5))
    path = first.run_dir / "state.json"
    state = json.loads(path.read_text())
    state["status"], state["test"] = "running", {}
    path.write_text(json.dumps(state))
    again = ScriptedOptimizer([edits_reply(HELPFUL)])
    models["set"](again)
    resumed = api.resume(first.run_id)
    assert again.prompts == []
    assert resumed.summary["stopped_early"] == first.summary["stopped_early"]
    assert resumed.summary["test"] == first.summary["test"]
    assert [st["step"] for st in resumed.summary["steps"]] == [0, 1, 2, 3]


def test_the_plan_says_a_run_may_stop_early(world, models):
    plan = api.plan(world["skill"], world["suite"], **flags())
    (note,) = [n for n in plan.notes if "stall" in n]
    assert note.startswith("a run may stop early on a stall: after 3 steps in a row")
    never = api.plan(world["skill"], world["suite"], **flags(stall_patience=0))
    assert not [n for n in never.notes if "stall" in n]
