"""A checkpoint written by an earlier skillopt (version 1) resumes where it stopped and
is saved in the current format; one this skillopt cannot read stops `--resume` in one
line, before any model call."""

from __future__ import annotations

import json
import re

import pytest
from train.world import HARMFUL, HELPFUL, ScriptedOptimizer, edits_reply, flags
from typer.testing import CliRunner

from skillopt import api
from skillopt.cli.main import app
from skillopt.skill.document import Skill

runner = CliRunner()


def crashed_run(world, models):
    """A run stopped inside step 2 (epoch 2): step 1 rejected, epoch 1's notes taken."""
    models["set"](ScriptedOptimizer([edits_reply(HARMFUL), edits_reply(HELPFUL)], crash_at=2))
    with pytest.raises(RuntimeError, match="simulated crash"):
        api.train(world["skill"], world["suite"], **flags(epochs=3))
    return next(p for p in (world["root"] / "runs").iterdir() if (p / "run.yaml").exists())


def version_1(world, run_dir) -> dict:
    """The crashed run's checkpoint as skillopt wrote version 1."""
    skill = Skill.load(world["skill"])
    commits = {c.step: c for c in api.run_history(run_dir.name)}
    harmful = {
        "op": "add",
        "anchor": None,
        "section": "Rules",
        "content": f"- {HARMFUL}",
        "rationale": "seen in failures",
        "evidence": [],
        "source": "failures",
        "support": 1,
    }
    revision = {"text": skill.text, "hash": skill.hash, "val": 0.5}
    return {
        "version": 1,
        "status": "running",
        "epoch": 1,
        "k": 0,
        "step": 1,
        "slow_done": False,
        "notes_done": False,
        "incumbent": revision,
        "initial": revision,
        "epoch_start": revision,
        "support": [],
        "steps": [
            {
                "step": 0,
                "kind": "initial",
                "epoch": 0,
                "val": 0.5,
                "n": 4,
                "commit": commits[0].sha,
                "decision": "initial",
            },
            {
                "step": 1,
                "kind": "step",
                "epoch": 1,
                "budget": 4,
                "train_mean": 0.5,
                "failures": 4,
                "successes": 4,
                "unscored": 0,
                "proposals": [
                    {
                        "edits": [harmful],
                        "skipped": None,
                        "raw": "",
                        "calls": 1,
                        "input_tokens": 0,
                        "output_tokens": 0,
                        "cost": None,
                        "replaced": 0,
                        "error_kind": None,
                    }
                ],
                "dropped": [],
                "apply": [{"edit": harmful, "status": "applied", "detail": ""}],
                "decision": "rejected",
                "reason": "worse on validation (-0.500)",
                "gate": {
                    "accepted": False,
                    "reason": "worse on validation (-0.500)",
                    "mode": "strict",
                    "n": 4,
                    "incumbent_mean": 0.5,
                    "candidate_mean": 0.0,
                    "delta": -0.5,
                    "p_value": 1.0,
                    "fail_to_pass": [],
                    "pass_to_fail": ["keep-3", "keep-4"],
                    "per_task": {},
                },
                "commit": commits[1].sha,
                "skill_hash": commits[1].evidence.skill_hash,
            },
        ],
        "pending": None,
        "memory": {
            "rejected": [
                {
                    "step": 1,
                    "edit": harmful,
                    "delta": -0.5,
                    "reason": "worse on validation (-0.500)",
                }
            ],
            "not_applied": [],
            "meta_notes": [{"epoch": 1, "notes": "- adds under Rules are judged on val"}],
        },
        "accounting": {
            "optimizer_calls": 3,
            "optimizer_input_tokens": 0,
            "optimizer_output_tokens": 0,
            "optimizer_cost": None,
            "skipped_minibatches": 0,
            "target_rollouts": 16,
            "cached_rollouts": 0,
            "unscored_rollouts": 0,
            "target_calls": 16,
            "target_input_tokens": 0,
            "target_output_tokens": 0,
            "target_cost": None,
        },
        "started_at": 1767268800.0,
    }


def test_a_version_1_checkpoint_resumes_and_is_saved_as_version_2(world, models):
    run_dir = crashed_run(world, models)
    v1 = version_1(world, run_dir)
    (run_dir / "state.json").write_text(json.dumps(v1))

    resumed = ScriptedOptimizer([edits_reply(HELPFUL)])
    models["set"](resumed)
    result = api.resume(run_dir.name, concurrency=flags()["concurrency"])

    assert [(s["step"], s["decision"]) for s in result.summary["steps"]] == [
        (0, "initial"),
        (1, "rejected"),
        (2, "accepted"),  # validation saturated: no step 3
    ]
    assert result.summary["initial_val"] == 0.5 and result.summary["best_val"] == 1.0
    assert resumed.failure_calls == 1  # step 1 is not redone
    memory = [p for p in resumed.prompts if "Tasks the agent FAILED" in p][0]
    memory = memory.split("# What you know from earlier steps")[1]
    assert "REJECTED" in memory and HARMFUL in memory  # the version-1 memory
    assert "adds under Rules are judged on val" in memory
    assert [c.step for c in api.run_history(result.run_id)] == [0, 1, 2]

    saved = json.loads((run_dir / "state.json").read_text())
    assert saved["version"] == 2
    assert saved["status"] == "finished" and saved["skipped_notes"] == []
    assert saved["test"]["best"]["mean"] == 1.0
    assert saved["steps"][:2] == v1["steps"]  # the records as version 1 wrote them
    assert saved["memory"]["rejected"] == v1["memory"]["rejected"]
    assert saved["started_at"] == v1["started_at"]


def test_a_checkpoint_inside_a_step_with_a_successes_proposal_resumes_without_calls(world, models):
    """A checkpoint from when a step still asked a separate successes call: stopped
    after step 2's reflection, its pending proposals (failures and successes) are
    reused as they are, and the step is judged without asking the optimizer again."""
    run_dir = crashed_run(world, models)
    v1 = version_1(world, run_dir)

    def proposal(edit):
        return {"edits": [edit], "skipped": None, "raw": "", "calls": 1}

    def add(content, source):
        return {
            "op": "add",
            "anchor": None,
            "section": "Rules",
            "content": content,
            "rationale": "r",
            "evidence": [],
            "source": source,
            "support": 1,
        }

    v1["pending"] = {
        "step": 2,
        "proposals": [
            proposal(add(f"- {HELPFUL}", "failures")),
            proposal(add("- Keep other items exactly as given.", "successes")),
        ],
    }
    (run_dir / "state.json").write_text(json.dumps(v1))

    resumed = ScriptedOptimizer([])
    models["set"](resumed)
    result = api.resume(run_dir.name, concurrency=flags()["concurrency"])

    assert [(s["step"], s["decision"]) for s in result.summary["steps"]][:3] == [
        (0, "initial"),
        (1, "rejected"),
        (2, "accepted"),
    ]
    assert resumed.failure_calls == 0  # step 2 reused its finished calls
    saved = json.loads((run_dir / "state.json").read_text())
    step2 = next(s for s in saved["steps"] if s["step"] == 2)
    sources = [e["source"] for p in step2["proposals"] for e in p["edits"]]
    assert sources == ["failures", "successes"]


@pytest.mark.parametrize(
    "change, expected",
    [
        (
            lambda v1: v1.update(version=3),
            r"state\.json: field 'version': checkpoint version 3 was written by a newer "
            r"skillopt \(this one reads versions 1 to 2\); upgrade skillopt",
        ),
        (
            lambda v1: v1["incumbent"].update(val="high"),
            r"state\.json: field 'incumbent\.val': malformed checkpoint: expected a number or "
            r"null, got a string; the run cannot be resumed \(start a new run\)",
        ),
    ],
    ids=["newer-version", "mistyped-field"],
)
def test_an_unreadable_checkpoint_stops_resume_in_one_line(world, models, change, expected):
    run_dir = crashed_run(world, models)
    v1 = version_1(world, run_dir)
    change(v1)
    (run_dir / "state.json").write_text(json.dumps(v1))
    calls = models["target"].call_count
    res = runner.invoke(app, ["train", "--resume", run_dir.name], terminal_width=400)
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and f"runs/{run_dir.name}/state.json" in res.stderr
    assert res.stderr.startswith("error: ")
    assert re.search(expected, res.stderr), res.stderr
    assert models["target"].call_count == calls
