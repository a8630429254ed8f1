"""`train --part description` through the agent harnesses, with the stand-in CLIs
(tests/fakes/agent_cli.py) choosing among the installed skills by the shared routing
rule (`choose_by_description`): the skill under test and the library's, each read
from its SKILL.md where the real CLI looks, loaded with the Skill tool call (claude)
or the read of its SKILL.md (codex) that the real CLIs emit. A scripted optimizer
writes the description; receipt-scanner, in the library, collides with it."""

from __future__ import annotations

import json

import pytest
import routing_rule

from skillopt.rollouts.record import Rollout
from skillopt.skill.document import Skill
from skillopt.training.description import loaded_instead

START, GOOD = routing_rule.DESCRIBE_START, routing_rule.DESCRIBE_GOOD


# each runs some 26 agent processes: a second or more
@pytest.mark.slow
@pytest.mark.parametrize("harness", ["claude-code", "codex"])
def test_a_description_is_trained_through_an_agent_cli(agents, isolated, describer, harness):
    cli = "claude" if harness == "claude-code" else "codex"
    agents.configure(cli, choose_by_description=True)
    items = routing_rule.DESCRIBE_ITEMS + routing_rule.MORE_HELD_OUT
    world = routing_rule.write_describe_fixture(isolated, items)
    res = routing_rule.train_description(world, harness)
    assert res.exit_code == 0, res.output
    said = " ".join(res.stdout.split())
    assert "validation 0.750 → 1.000" in said, res.output
    assert "collided with: receipt-scanner (misfired training queries loaded it instead)" in said
    assert "stopped early" not in said  # its one step was the last: nothing was skipped
    run = routing_rule.run_dir(isolated, res.stdout)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["description"] == {
        "initial": START,
        "best": GOOD,
        "collisions": ["receipt-scanner"],
    }
    assert summary["steps"][1]["decision"] == "accepted"
    assert (summary["test"]["initial"]["mean"], summary["test"]["best"]["mean"]) == (0.75, 1.0)
    # only the description changed: the body is byte for byte the original's
    original = (world["skill"] / "SKILL.md").read_text()
    best = (run / "best" / "SKILL.md").read_text()
    assert best == original.replace(f"description: {START}", f"description: {GOOD}")
    assert Skill.parse(best).body == routing_rule.DESCRIBE_BODY
    # the optimizer was shown the miss and what the agent loaded instead: the Skill
    # tool call (claude) or the read of receipt-scanner's SKILL.md (codex)
    asked = describer.calls[0].messages[-1]["content"]
    assert (
        "[t2] SHOULD load it; loaded in 0/1 runs: Add up the line items of this receipt for "
        "the invoice (loaded instead: receipt-scanner)"
    ) in asked
    # the agent chose from the description it found installed: the candidate's reached it
    calls = agents.calls(cli)
    assert any(GOOD in c["skills"]["invoice-totals"] for c in calls)
    assert all("receipt-scanner" in c["skills"] for c in calls)
    # precision and recall on the held-out queries before and after, from the store
    before = routing_rule.eval_triggers(world["skill"], world, harness)["results"][0]["triggers"]
    after = routing_rule.eval_triggers(run / "best", world, harness)
    assert len(agents.calls(cli)) == len(calls)  # nothing run again
    assert (before["precision"], before["recall"], before["missed"]) == (1.0, 0.5, ["x1"])
    triggers = after["results"][0]["triggers"]
    assert (triggers["precision"], triggers["recall"], triggers["missed"]) == (1.0, 1.0, [])
    loaded = {r["task_id"]: r["skill_invoked"] for r in after["rollouts"]}
    assert loaded == {"x1": True, "x2": False, "x3": True, "x4": False}


def traced(*steps: dict, answer: str = "") -> Rollout:
    return Rollout(
        key="k", task_id="q", split="train", sample=0, skill_hash="h", scored=True,
        score=0.0, passed=False, answer=answer,
        trajectory={"skill_invoked": False, "steps": list(steps)},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("steps", "loaded"),
    [
        # claude: the Skill tool (a plugin's `plugin:name` too), or a Read of SKILL.md
        ([{"type": "tool_use", "tool": "Skill", "input": {"skill": "tax-forms"}}], ["tax-forms"]),
        ([{"type": "tool_use", "tool": "Skill", "input": {"skill": "p:tax-forms"}}], ["tax-forms"]),
        (
            [{"type": "tool_use", "tool": "Read",
              "input": {"file_path": "/w/.claude/skills/tax-forms/SKILL.md"}}],
            ["tax-forms"],
        ),
        # codex: a command that read the file and succeeded, each skill once
        (
            [{"type": "command", "command": "/bin/bash -lc 'cat /w/.agents/skills/tax-forms/SKILL.md'",
              "exit_code": 0, "status": "completed"}] * 2,
            ["tax-forms"],
        ),
        # a command the sandbox refused, or one still running, loaded nothing
        (
            [{"type": "command", "command": "cat .agents/skills/tax-forms/SKILL.md",
              "exit_code": 8, "status": "failed"},
             {"type": "command", "command": "cat .agents/skills/csv-cleaner/SKILL.md",
              "status": "in_progress"}],
            [],
        ),
        # a skill not installed beside it is no collision
        ([{"type": "command", "command": "cat skills/other/SKILL.md", "exit_code": 0}], []),
    ],
)  # fmt: skip
def test_what_an_agent_loaded_instead_is_read_from_its_trace(steps, loaded):
    assert loaded_instead(traced(*steps), ["csv-cleaner", "tax-forms"]) == loaded


def test_the_routers_answer_is_what_it_loaded_instead():
    assert loaded_instead(traced(answer="csv-cleaner"), ["csv-cleaner", "tax-forms"]) == [
        "csv-cleaner"
    ]


def test_the_run_shows_the_library_its_harness_installs(isolated, describer):
    """A harness given in code brings its own library: the description run finds its
    collisions there, not in a second reading of `agent.library` (unset here)."""
    import skillopt
    from skillopt.harness.router import RouterHarness
    from skillopt.models import ScriptedModel
    from skillopt.skill.library import load_library

    world = routing_rule.write_describe_fixture(isolated)
    model = ScriptedModel(routing_rule.router, name="scripted/router")
    harness = RouterHarness(model, load_library([str(world["library"])]))
    result = skillopt.train(
        world["skill"], world["suite"], harness=harness, optimizer="scripted/describer",
        part="description", epochs=1, batch_size=4,
    )  # fmt: skip
    assert result.summary["description"]["collisions"] == ["receipt-scanner"]
    asked = describer.calls[0].messages[-1]["content"]
    assert "- receipt-scanner: Reads scanned receipt images" in asked


def test_a_skipped_library_skill_is_warned_of_once(isolated, describer):
    world = routing_rule.write_describe_fixture(isolated)
    broken = world["library"] / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("---\nname: Broken_Name\ndescription: x\n---\nbody\n")
    res = routing_rule.train_description(
        world, "router", "--target", "scripted/routing_rule:router"
    )
    assert res.exit_code == 0, res.output
    assert res.stderr.count("warning: library skill") == 1, res.stderr
    assert "collided with: receipt-scanner" in res.stdout
