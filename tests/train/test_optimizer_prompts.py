"""What the optimizer is told during a scripted training run: the target, where the
run stands, its memory, and never a validation or test task."""

from __future__ import annotations

import json
import re

import pytest
from train.world import HARMFUL, PARTIAL, ScriptedOptimizer, edits_reply, flags

from skillopt import api
from skillopt.suite.loader import load_suite

# accepted as one multi-line block: it must reach later prompts whole; it fixes half of
# the word items, so the last epoch still has failures to reflect on
BLOCK = f"{PARTIAL}\n- Keep other items exactly as given.\n\n  For example `word-9` → `WORD-9`."


@pytest.fixture
def run(world, models):
    bad_anchor = json.dumps(
        {
            "edits": [
                {
                    "op": "replace",
                    "anchor": "text that is not there",
                    "section": None,
                    "content": "- Keep it short.",
                    "rationale": "r",
                    "evidence": [],
                }
            ]
        }
    )
    opt = ScriptedOptimizer([edits_reply(HARMFUL), bad_anchor, edits_reply(BLOCK)], guidance="")
    models["set"](opt)
    result = api.train(
        world["skill"], world["suite"], **flags(epochs=4, slow_update=True, gate_full=True)
    )
    return opt, result, load_suite(world["suite"])


def test_no_validation_or_test_task_reaches_any_optimizer_prompt(run):
    opt, result, suite = run
    kinds = {
        "failures": "Tasks the agent FAILED",
        "solved sample": "# Solved tasks to keep solved\n",
        "slow update": '"guidance"',
        "notes": '"notes"',
    }
    for kind, marker in kinds.items():  # every kind of prompt was written
        assert any(marker in p for p in opt.prompts), kind
    held_out = [t for t in suite.tasks if t.split in ("val", "test")]
    assert held_out
    for prompt in opt.prompts:
        text = prompt.lower()
        for t in held_out:
            for value in (t.id, t.prompt, str(t.input), str(t.expected)):
                assert value.lower() not in text, (t.id, value)
    # the run did gate: the decisions behind the memory had validation tasks flip
    gates = [s for s in result.summary["steps"] if s["decision"] in ("accepted", "rejected")]
    assert len(gates) >= 2


def test_failures_prompts_show_solved_training_tasks_to_keep(run):
    """Each failures prompt shows, in its own section, a sample of the batch's solved
    training tasks (id, input, pass): only training tasks, none of the failed ones."""
    opt, result, suite = run
    by_id = {t.id: t for t in suite.tasks}
    reflect = [p for p in opt.prompts if "# Tasks the agent FAILED" in p]
    assert reflect
    shown = set()
    for prompt in reflect:
        failed, solved = prompt.split("# Tasks the agent FAILED")[1].split(
            "# Solved tasks to keep solved\n"
        )
        solved = solved.split("# Where the run stands")[0]
        ids = re.findall(r"^## Task (\S+)$", solved, re.MULTILINE)
        assert 0 < len(ids) <= 3  # a small sample
        failing = set(re.findall(r"^## Task (\S+)$", failed, re.MULTILINE))
        assert failing and not failing & set(ids)
        for task_id in ids:
            task = by_id[task_id]
            assert task.split == "train", task_id
            assert f"```\n{task.prompt}\n```" in solved
        assert solved.count("(pass).") == len(ids) and "(fail)" not in solved
        shown |= set(ids)
    step_ids = {t for s in result.summary["steps"] for t in s.get("failing", [])}
    assert shown and not shown & step_ids  # never a task that step failed


def test_reflection_prompts_carry_target_state_and_whole_memory(run):
    opt, result, _ = run
    reflect = [p for p in opt.prompts if "# Where the run stands" in p]
    for prompt in opt.prompts:
        assert "The target is the model `scripted/test-target`, called through the chat" in (prompt)
    steps = {s["step"]: s for s in result.summary["steps"]}
    assert steps[1]["decision"] == "rejected" and steps[5]["decision"] == "accepted"
    # 4 epochs of one step each, plus an epoch-end slow update each: 8 step numbers
    first = reflect[0].split("# Where the run stands\n\n")[1]
    assert first.startswith(
        "Step 1 of 8 (epoch 1 of 4). Validation score of the current skill: 0.500; "
        "best so far: 0.500."
    )
    last = reflect[-1]
    assert "Step 7 of 8 (epoch 4 of 4). Validation score of the current skill: 0.750" in last
    memory = last.split("# What you know from earlier steps")[1]
    # the accepted block summed up in one line (the skill holds it whole); the
    # rejected edit with its flip counts; the misplaced one
    assert f"```\n- {BLOCK}\n```" not in memory
    (summary,) = [ln for ln in memory.splitlines() if ln.startswith("- add under 'Rules'")]
    assert "Write odd WORD items in capitals." in summary and "word-9" not in summary
    assert "Step 5 — accepted, validation delta +0.250 (1 fail → pass, 0 pass → fail)" in memory
    assert "Step 1 — rejected (worse on validation (-0.500)), validation delta -0.500 (0 fail " in (
        memory
    )
    assert "(0 fail → pass, 2 pass → fail)" in memory
    assert "```\ntext that is not there\n```" in memory and "anchor_not_found" in memory
    # the notes history of an epoch shows the edit that could not be applied, unnested
    notes = [p for p in opt.prompts if '"notes"' in p and "What happened in epoch 2" in p][0]
    assert "```\ntext that is not there\n```" in notes and "Not applied: anchor_not_found" in notes
    assert not [ln for ln in notes.splitlines() if ln.startswith("    -")]
