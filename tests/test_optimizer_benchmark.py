"""benchmarks/optimizer_benchmark.py: its figures agree with each other on a real
run, unchanged-skill gates and unused calls are counted right on constructed runs,
and its scripted optimizer writes examples in the shape the prompt shows."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module("optimizer_benchmark")


def test_figures_of_a_run_are_consistent(bench, isolated):
    spec = bench.suites()["names"]
    f = bench.run(spec, "careful", isolated / "names", epochs=1)
    assert f["optimizer_calls"] == f["calls_logged"] == sum(f["calls_by_kind"].values())
    assert f["gains"] >= 1 and f["calls_per_gain"] == round(f["optimizer_calls"] / f["gains"], 2)
    assert f["gains"] <= f["gates"] <= f["steps"] + f["slow_updates"]
    assert f["unused_calls"] == sum(f["unused"].values()) <= f["optimizer_calls"]
    assert f["unused"]["notes"] == 0  # none are taken after the final (here the only) epoch
    assert f["unchanged_gates"] == 0
    assert f["test"]["best"] >= f["test"]["initial"]
    t = bench.totals([f, f])
    assert t["optimizer_calls"] == 2 * f["optimizer_calls"]
    assert t["calls_per_gain"] == round(t["optimizer_calls"] / t["gains"], 2)


def _edit(content):
    return {"op": "add", "anchor": None, "section": "Examples", "content": content}


def test_unchanged_gates_and_unused_calls_on_a_constructed_run(bench):
    applied = [{"edit": _edit("x"), "status": "applied"}]
    steps = [
        {"step": 0, "kind": "initial", "epoch": 0, "decision": "initial"},
        # epoch 1: accepted, so its slow update compares a changed skill (not counted)
        {"step": 1, "kind": "step", "epoch": 1, "decision": "accepted", "skill_hash": "h1",
         "proposals": [{"calls": 1, "edits": [_edit("x")]}, {"calls": 1, "edits": []}],
         "apply": applied},
        {"step": 2, "kind": "slow_update", "epoch": 1, "decision": "rejected",
         "skill_hash": "h2", "calls": 1, "apply": []},
        # epoch 2: nothing accepted, yet a slow update is gated (counted) ...
        {"step": 3, "kind": "step", "epoch": 2, "decision": "rejected", "skill_hash": "h3",
         "proposals": [{"calls": 2, "edits": [_edit("y")]}],
         "apply": [{"edit": _edit("y"), "status": "applied"}]},
        {"step": 4, "kind": "slow_update", "epoch": 2, "decision": "rejected",
         "skill_hash": "h4", "calls": 1, "apply": []},
        # ... and a candidate equal to the incumbent is gated (counted); epoch 3's slow
        # update gives nothing (its call unused, no gate)
        {"step": 5, "kind": "step", "epoch": 3, "decision": "rejected", "skill_hash": "h1",
         "proposals": [{"calls": 1, "edits": [_edit("z")]}],
         "apply": [{"edit": _edit("x"), "status": "applied"}]},
        {"step": 6, "kind": "slow_update", "epoch": 3, "decision": "no_candidate", "calls": 1},
    ]  # fmt: skip
    assert bench.unchanged_gates(steps, "h0") == 2
    notes = [json.dumps({"notes": f"- Epoch {e}: noted"}) for e in (1, 2, 3)]
    log = [("notes", "prompt", notes[0]), ("edits", "… Epoch 1: noted …", "{}")]
    log += [("notes", "prompt", notes[1]), ("notes", "prompt", notes[2])]
    state = {
        "initial": {"hash": "h0", "val": 0.0},
        "incumbent": {"hash": "h1", "val": 0.5},
        "steps": steps,
        "accounting": {"optimizer_calls": 12, "target_rollouts": 7},
    }
    f = bench.figures(state, log)
    assert f["gains"] == 1 and f["gates"] == 5 and f["unchanged_gates"] == 2
    assert f["calls_by_kind"] == {"reflect": 5, "slow_update": 3, "notes": 4}
    # step 1's empty proposal and step 5's (its edit was not the one applied); epoch 3's
    # slow update; notes of epochs 2 and 3 (no prompt showed them) and the call the
    # ledger has beyond the log
    assert f["unused"] == {"reflect": 2, "slow_update": 1, "notes": 3}
    assert f["self_compared_slow_update_calls"] == 2  # epochs 2 and 3
    assert f["calls_per_gain"] == 12.0


FAILURE = """# Current skill

```markdown
# Names

Rewrite the name.
```

{target}# Tasks the agent FAILED with this skill

## Task n-1
Input (as the agent saw it):
```
john smith
```
Expected answer:
```
Smith, John
```
Agent's answer:
```
John Smith
```
Score: 0.00 (fail). Feedback: expected 'Smith, John'

Propose at most 2 edits.

{{"edits": [{{"op": "add|delete|replace", "anchor": "exact text or null"}}]}}
"""


@pytest.mark.parametrize(
    ("target", "content"),
    [
        ("", "- For `john smith`, answer `Smith, John`."),
        ("The target reads the skill, then `Input: <task>` / `Output:`.\n\n", None),
        (
            "The target sees:\n```\n<skill>\n\nQ: {input}\nA:\n```\n\n",
            "Q: john smith\nA: Smith, John",
        ),
    ],
)
def test_the_scripted_optimizer_writes_the_shape_the_prompt_shows(bench, target, content):
    opt = bench.CarefulOptimizer()
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": ""}]
    messages[1]["content"] = FAILURE.format(target=target)
    edits = json.loads(opt(messages))["edits"]
    assert [e["content"] for e in edits] == [content or "Input: john smith\nOutput: Smith, John"]
    assert edits[0]["evidence"] == ["n-1"]
    assert opt.log[0][0] == "edits"


def test_the_scripted_optimizer_writes_examples_for_failed_tasks_only(bench, tmp_path):
    """The solved sample beside the failures (rendered as the trainer renders it) is
    behaviour to keep: the careful optimizer writes no example for it."""
    from helpers import write_suite

    from skillopt.models import ScriptedModel
    from skillopt.optimize.memory import Memory
    from skillopt.optimize.reflect import LLMOptimizer, ProposalRequest
    from skillopt.rollouts.engine import Rollout
    from skillopt.skill.document import Skill
    from skillopt.suite.loader import load_suite

    path = write_suite(
        tmp_path / "names.yaml",
        [
            {"id": "n-1", "input": "john smith", "expected": "Smith, John", "split": "train"},
            {"id": "n-2", "input": "ada byron", "expected": "Byron, Ada", "split": "train"},
        ],
        prompt="{input}",
    )
    tasks = {t.id: t for t in load_suite(path).tasks}

    def ran(task_id, answer, score):
        return Rollout(
            key=f"k-{task_id}",
            task_id=task_id,
            split="train",
            sample=0,
            skill_hash="h",
            scored=True,
            score=score,
            passed=score >= 1.0,
            feedback="",
            answer=answer,
        )

    careful = bench.CarefulOptimizer()
    skill = Skill.parse("---\nname: names\ndescription: d\n---\n# Names\n\nRewrite.\n")
    request = ProposalRequest(
        skill, "failures", [ran("n-1", "John Smith", 0.0)], tasks, 2, Memory()
    )
    # passed, though not to the letter: only its `Score … (pass)` line says it was solved
    request.protect = [ran("n-2", "byron, ada", 1.0)]
    proposal = LLMOptimizer(ScriptedModel(careful)).propose(request)
    assert [e.content for e in proposal.edits] == ["- For `john smith`, answer `Smith, John`."]
    assert "Byron" in careful.log[0][1]  # the solved task was shown
