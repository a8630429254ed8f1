"""Regressions counted, and a gate for them: a candidate that gains 3 validation tasks
and breaks 1 is kept by the mean (`strict`) and refused by `no-regression` unless
`--max-regressions` allows it; every place a decision is shown names both counts."""

from __future__ import annotations

import json

import pytest
from helpers import write_suite
from train.world import ScriptedOptimizer, edits_reply, flags, system_of
from typer.testing import CliRunner

from skillopt import api
from skillopt.cli.main import app
from skillopt.errors import InputError
from skillopt.models import ScriptedModel, register_model, unregister_model

# the edit that helps three validation tasks and breaks one: the target capitalises
# word items (expected in capitals) and every item numbered 3, keep-3 among them
# (expected unchanged)
MIXED = "Write WORD items in capitals, and item 3 too."
TARGET = "scripted/regress-target"
runner = CliRunner()


def follow(messages) -> str:
    text = messages[-1]["content"]
    if MIXED in system_of(messages) and (text.startswith("word-") or text.endswith("-3")):
        return text.upper()
    return text


@pytest.fixture
def mixed(world, models):
    """The words skill on a suite whose validation split is word-3, word-4, word-5
    (failed by the initial skill) and keep-3, keep-4 (passed): the MIXED edit turns
    the three word items fail → pass and keep-3 pass → fail (0.400 → 0.800)."""
    splits = {"train": [0, 1, 2], "val": [3, 4, 5], "test": [6]}
    items = [
        {"id": f"{kind}-{i}", "input": f"{kind}-{i}", "expected": f"{kind}-{i}", "split": split}
        for split, numbers in splits.items()
        for i in numbers
        for kind in ("word", "keep")
    ]
    for item in items:
        if item["id"].startswith("word-"):
            item["expected"] = item["expected"].upper()
    items = [i for i in items if i["id"] != "keep-5"]  # one pass → fail task only
    suite = write_suite(world["root"] / "tasks" / "mixed.yaml", items)
    register_model(TARGET, ScriptedModel(follow, name=TARGET))
    yield {**world, "suite": suite, "set": models["set"]}
    unregister_model(TARGET)


def run(mixed, **options):
    mixed["set"](ScriptedOptimizer([edits_reply(MIXED)]))
    return api.train(mixed["skill"], mixed["suite"], **flags(epochs=1, target=TARGET, **options))


def step_one(result) -> dict:
    state = json.loads((result.run_dir / "state.json").read_text())
    return state["steps"][1]


def test_the_mean_keeps_what_no_regression_refuses(mixed):
    strict = run(mixed, gate="strict", gate_full=True)
    step = step_one(strict)
    assert step["decision"] == "accepted" and strict.summary["best_val"] == pytest.approx(0.8)
    assert step["gate"]["fail_to_pass"] == ["word-3", "word-4", "word-5"]
    assert step["gate"]["pass_to_fail"] == ["keep-3"]

    refused = run(mixed, gate="no-regression", gate_full=True)
    step = step_one(refused)
    assert step["decision"] == "rejected" and refused.summary["best_val"] == pytest.approx(0.4)
    assert step["reason"] == (
        "better by +0.400 but gains 3, loses 1 (pass → fail): more than --max-regressions 0"
    )
    assert step["gate"]["mode"] == "no-regression"
    assert MIXED not in (refused.run_dir / "best" / "SKILL.md").read_text()

    allowed = run(mixed, gate="no-regression", max_regressions=1)
    step = step_one(allowed)
    assert step["decision"] == "accepted" and allowed.summary["best_val"] == pytest.approx(0.8)
    assert step["reason"].startswith("gains 3, loses 1 (pass → fail), within --max-regressions 1")
    assert allowed.summary["gate"] == {
        "name": "no-regression",
        "min_delta": 0.0,
        "alpha": 0.05,
        "max_regressions": 1,
    }
    assert "max_regressions" not in strict.summary["gate"]  # absent while unset


def test_an_allowance_applies_under_strict_and_the_race_stops_at_the_regression(mixed):
    result = run(mixed, gate="strict", max_regressions=0, concurrency=1)
    step = step_one(result)
    assert step["decision"] == "rejected"
    # the incumbent's three failures first, then keep-3: settled there, keep-4 unrun
    assert step["reason"] == (
        "gains 3, loses 1 (pass → fail): more than --max-regressions 0 "
        "(settled after 4 of 5 validation tasks)"
    )
    assert step["gate"]["unrun"] == 1 and step["gate"]["mode"] == "strict"


def test_a_negative_allowance_names_the_setting(mixed):
    with pytest.raises(InputError, match="max_regressions") as caught:
        run(mixed, max_regressions=-1)
    assert caught.value.field == "max_regressions"
    res = runner.invoke(app, ["train", "s", "--tasks", "t.yaml", "--max-regressions", "-1"])
    assert res.exit_code == 2 and "must be at least 0, got -1" in res.output


def test_the_console_log_and_reports_show_gains_and_regressions_apart(mixed):
    mixed["set"](ScriptedOptimizer([edits_reply(MIXED)]))
    args = ["train", str(mixed["skill"]), "--tasks", str(mixed["suite"]), "--target", TARGET]
    args += ["--optimizer", "scripted/test-optimizer", "--epochs", "1", "--no-slow-update"]
    res = runner.invoke(app, [*args, "--gate", "no-regression", "--gate-full"])
    assert res.exit_code == 0, res.output
    assert (
        "step 1   rejected  val 0.800 (+0.400) · fail→pass 3 · pass→fail 1 (keep-3) · "
        "best 0.400 — better by +0.400 but gains 3, loses 1 (pass → fail): more than "
        "--max-regressions 0"
    ) in " ".join(res.stdout.split("\n"))
    run_id = res.stdout.split("history: git log skillopt/")[1].split()[0]
    run_dir = mixed["root"] / "runs" / run_id

    log = runner.invoke(app, ["log", run_id])
    assert log.exit_code == 0, log.output
    row = next(line.split() for line in log.stdout.splitlines() if line.strip()[:2] == "1 ")
    assert row[:2] == ["1", "rejected"] and "+3" in row and "-1" in row

    report = (run_dir / "report.md").read_text()
    assert "- Gate: `no-regression`: " in report and "turns no validation task from pass" in report
    step = next(line for line in report.splitlines() if line.startswith("| 1 | step |"))
    assert "| 3 | 1 | rejected |" in step

    page = (run_dir / "report.html").read_text()
    assert "fail→pass 3: word-3, word-4, word-5 · pass→fail 1: keep-3" in page
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    gated = [e for e in events if e["event"] == "decision" and e.get("kind") == "step"]
    assert gated[0]["fail_to_pass"] == ["word-3", "word-4", "word-5"]
    assert gated[0]["pass_to_fail"] == ["keep-3"]


def test_a_tie_of_gains_and_regressions_reads_as_both_and_an_old_log_as_neither():
    from skillopt.api.events import GateDecision
    from skillopt.cli.train_live import decision_line
    from skillopt.training.events import event_json, read_event

    given = {"step": 4, "step_kind": "step", "decision": "rejected", "accepted": False}
    tie = GateDecision(
        **given,
        delta=0.0,
        gate="strict",
        val=0.5,
        best=0.5,
        reason="tie: no improvement on validation",
        fail_to_pass=("va-01", "va-02", "va-03"),
        pass_to_fail=("va-07", "va-11", "va-12", "va-13"),
    )
    line = decision_line(tie)
    assert "· fail→pass 3 · pass→fail 4 (va-07, va-11, va-12 … and 1 more) · best" in line
    # written and read back with its flips; a line from before them has none
    assert read_event({"event": "decision", **event_json(tie)}) == tie
    old = {k: v for k, v in event_json(tie).items() if k not in ("fail_to_pass", "pass_to_fail")}
    before = read_event({"event": "decision", **old})
    assert isinstance(before, GateDecision) and before.pass_to_fail is None
    assert "fail→pass" not in decision_line(before) and event_json(before) == old
