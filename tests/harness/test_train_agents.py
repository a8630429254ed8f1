"""Training end to end through each agent harness: the stand-in CLIs (and a command
agent) read the candidate skill from where their agent looks for it, so a helpful
edit raises the score only if it really reached the agent's workspace."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from fakes.agent_cli import HELPFUL
from helpers import write_skill
from train.world import ScriptedOptimizer, edits_reply, flags, models, world  # noqa: F401

from skillopt import api
from skillopt.errors import HarnessError

FAKES = Path(__file__).resolve().parent.parent / "fakes"

COMMAND_AGENT = f"""
import json, pathlib, sys
sys.path.insert(0, {str(FAKES)!r})
from agent_cli import brain
skill_file, task_file, steps_file = sys.argv[1:4]
skill = pathlib.Path(skill_file).read_text() if skill_file else ""
answer, _ = brain(pathlib.Path(task_file).read_text(), skill)
with open(steps_file, "w") as f:
    f.write(json.dumps({{"type": "command", "command": "read " + skill_file,
                        "output": skill[:200]}}) + "\\n")
print(answer)
"""


def setup_command(root: Path) -> None:
    script = root / "agent.py"
    script.write_text(COMMAND_AGENT, encoding="utf-8")
    (root / "skillopt.yaml").write_text(
        yaml.safe_dump(
            {
                "command": {
                    "argv": [
                        sys.executable,
                        str(script),
                        "{skill_file}",
                        "{task_file}",
                        "{steps_file}",
                    ]
                }
            }
        )
    )


@pytest.mark.parametrize("harness", ["claude-code", "codex", "command"])
def test_training_through_an_agent_harness(world, models, agents, harness):
    if harness == "command":
        setup_command(world["root"])
    opt = ScriptedOptimizer([edits_reply(HELPFUL)])
    models["set"](opt)
    result = api.train(
        world["skill"], world["suite"], **flags(epochs=1, harness=harness, target=None)
    )
    steps = {s["step"]: s for s in result.summary["steps"]}
    assert steps[0]["decision"] == "initial" and steps[0]["val"] == 0.5
    assert steps[1]["decision"] == "accepted" and steps[1]["val"] == 1.0
    test = result.summary["test"]
    assert test["initial"]["mean"] == 0.5 and test["best"]["mean"] == 1.0
    assert HELPFUL in (result.run_dir / "best" / "SKILL.md").read_text()

    # the optimizer read what the agent did, not only its answers
    failures = next(p for p in opt.prompts if "Tasks the agent FAILED" in p)
    assert "Agent's steps:" in failures
    expected_step = {
        "claude-code": 'Skill({"skill": "words"})',
        "codex": "cat .agents/skills/words/SKILL.md",
        "command": "read ",
    }[harness]
    assert expected_step in failures
    if harness != "command":
        assert "Skill invoked: yes" in failures
        calls = agents.calls("claude" if harness == "claude-code" else "codex")
        assert any(HELPFUL in c["skills"].get("words", "") for c in calls)
        assert all(set(c["skills"]) <= {"words"} for c in calls)

    # failed tasks' workspaces stay with the run; passing ones are gone
    kept = sorted(p.name for p in (result.run_dir / "workspaces").iterdir())
    assert kept and all(name.startswith("word-") for name in kept)
    config = yaml.safe_load((result.run_dir / "run.yaml").read_text())
    assert config["settings"]["harness"] == harness


def test_resume_through_an_agent_harness_reuses_stored_rollouts(
    world,
    models,
    agents,
):
    opt = ScriptedOptimizer([edits_reply(HELPFUL)], crash_at=1)
    models["set"](opt)
    with pytest.raises(RuntimeError, match="simulated crash"):
        api.train(world["skill"], world["suite"], **flags(epochs=1, harness="codex", target=None))
    ran_before = len(agents.calls("codex"))
    run_id = sorted(
        p.name for p in (world["root"] / "runs").iterdir() if (p / "state.json").is_file()
    )[0]
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    result = api.resume(run_id)
    assert result.summary["best_val"] == 1.0
    resumed = agents.calls("codex")[ran_before:]
    # the initial skill's train and validation rollouts were stored before the crash:
    # after resuming, the initial skill only runs on the test split
    initial_runs = {c["stdin"] for c in resumed if HELPFUL not in c["skills"].get("words", "")}
    assert initial_runs and all(p.endswith(("-5", "-6")) for p in initial_runs)


def test_without_isolation_a_personal_copy_of_the_skill_stops_training_before_anything_runs(
    world, models, agents, isolated, monkeypatch
):
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    write_skill(isolated.parent / "home" / ".claude" / "skills", "words", body="# Old\n")
    opt = ScriptedOptimizer([edits_reply(HELPFUL)])
    models["set"](opt)
    with pytest.raises(HarnessError, match="holds a user-level skill named 'words'"):
        api.train(
            world["skill"],
            world["suite"],
            **flags(epochs=1, harness="claude-code", target=None, agent={"isolate": False}),
        )
    assert agents.calls("claude") == [] and opt.prompts == []
    assert not (world["root"] / "runs").exists() or not any(
        (p / "run.yaml").exists() for p in (world["root"] / "runs").iterdir()
    )


@pytest.mark.parametrize("harness", ["claude-code", "codex"])
def test_an_agent_run_replays_with_no_agent_installed(world, models, agents, harness):
    """The CLI's version is in every rollout's fingerprint, and a replay runs no
    program to ask it: it is taken from the recording, so the run reproduces, from
    its id and from a bundle, with the stand-in CLIs gone."""
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    result = api.train(
        world["skill"], world["suite"], **flags(epochs=1, harness=harness, target=None)
    )
    run_id = result.run_dir.name
    packed = api.bundle(run_id, world["root"] / "run.tar.gz")
    for name in ("claude", "codex"):  # nothing may run them now
        (agents.bin / name).unlink()
    for ref in (run_id, str(packed)):
        replayed = api.replay(ref)
        assert replayed.verdict == "reproduced", replayed.first_difference
        assert replayed.model_calls == 0 and replayed.served["rollouts"] > 0
