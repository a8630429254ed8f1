"""A small world for the training tests: a skill, a suite, and scripted models whose
behaviour depends on what the skill says.

Items come in two kinds: `word-*` items expect the input in capitals, `keep-*`
items expect it unchanged. The target follows the skill literally: the line
"Write WORD items in capitals." makes it capitalise word items (helpful), "Write
odd WORD items in capitals." only those with an odd number (half as helpful), and
"Reverse every answer." makes it reverse everything (harmful). Anything else
changes nothing (a tie).
"""

from __future__ import annotations

import json
import shutil

import pytest
from helpers import write_skill, write_suite

from skillopt.errors import ModelError
from skillopt.models import ScriptedModel, register_model, unregister_model

HELPFUL = "Write WORD items in capitals."
PARTIAL = "Write odd WORD items in capitals."
HARMFUL = "Reverse every answer."
NEUTRAL = "Be polite."


def neutral(n: int) -> list[str]:
    """`n` optimizer replies, each a different edit that changes nothing (a tie each:
    the same edit twice would be a repeated candidate, refused before the gate)."""
    return [edits_reply(f"{NEUTRAL} ({i})") for i in range(1, n + 1)]


def system_of(messages) -> str:
    return next((m["content"] for m in messages if m["role"] == "system"), "")


def follow_skill(messages) -> str:
    system, text = system_of(messages), messages[-1]["content"]
    answer = text
    if HELPFUL in system and text.startswith("word-"):
        answer = answer.upper()
    if PARTIAL in system and text.startswith("word-") and int(text[5:]) % 2:
        answer = answer.upper()
    if HARMFUL in system:
        answer = answer[::-1]
    return answer


def edits_reply(*contents: str, section: str = "Rules") -> str:
    return json.dumps(
        {
            "edits": [
                {
                    "op": "add",
                    "anchor": None,
                    "section": section,
                    "content": f"- {c}",
                    "rationale": "seen in failures",
                    "evidence": [],
                }
                for c in contents
            ]
        }
    )


class ScriptedOptimizer:
    """Answers reflection prompts from a per-step plan: `plan[i]` is the reply to
    the i-th FAILURES prompt; successes prompts get no edits; slow-update and
    notes prompts get `guidance` / `notes`."""

    def __init__(
        self,
        plan: list,
        guidance: str | None = None,
        notes: str = "- keep going",
        crash_at: int | None = None,
        crash: type[BaseException] = RuntimeError,
    ):
        self.plan = list(plan)
        self.guidance = guidance
        self.notes = notes
        self.crash_at = crash_at
        self.crash = crash
        self.failure_calls = 0
        self.prompts: list[str] = []

    def __call__(self, messages) -> str:
        prompt = messages[1]["content"]
        self.prompts.append(messages[-1]["content"])
        if len(messages) > 2:  # a repair re-ask: answer from the same plan entry
            entry = self.plan[self.failure_calls - 1] if self.failure_calls else "[]"
            return entry[1] if isinstance(entry, tuple) else entry
        if "Tasks the agent FAILED" in prompt:
            self.failure_calls += 1
            if self.crash_at is not None and self.failure_calls == self.crash_at:
                raise self.crash("simulated crash")  # mid-run, inside a step
            entry = (
                self.plan[self.failure_calls - 1]
                if self.failure_calls <= len(self.plan)
                else json.dumps({"edits": []})
            )
            return entry[0] if isinstance(entry, tuple) else entry
        if "Tasks the agent SOLVED" in prompt:
            return json.dumps({"edits": []})
        if '"guidance"' in prompt:
            return json.dumps({"guidance": self.guidance or ""})
        if '"notes"' in prompt:
            return json.dumps({"notes": self.notes})
        raise ModelError(f"unexpected prompt: {prompt[:80]}")


@pytest.fixture
def world(isolated):
    skill = write_skill(
        isolated / "skills",
        "words",
        body="# Words\n\nRewrite the item you are given.\n\n## Rules\n\n"
        "- Reply with the item only.\n",
    )
    items = []
    for i in range(8):
        split = ["train", "train", "train", "val", "val", "test", "test", "train"][i]
        items.append(
            {"id": f"word-{i}", "input": f"word-{i}", "expected": f"WORD-{i}", "split": split}
        )
        items.append(
            {"id": f"keep-{i}", "input": f"keep-{i}", "expected": f"keep-{i}", "split": split}
        )
    suite = write_suite(isolated / "tasks" / "words.yaml", items)
    return {"root": isolated, "skill": skill, "suite": suite}


@pytest.fixture
def models():
    """Register a target and an optimizer; the test sets `opt.fn` before training."""
    target = ScriptedModel(follow_skill, name="scripted/test-target")
    holder: dict = {}

    def optimizer_fn(messages):
        return holder["fn"](messages)

    optimizer = ScriptedModel(optimizer_fn, name="scripted/test-optimizer")
    register_model("scripted/test-target", target)
    register_model("scripted/test-optimizer", optimizer)
    yield {"target": target, "optimizer": optimizer, "set": lambda fn: holder.update(fn=fn)}
    unregister_model("scripted/test-target")
    unregister_model("scripted/test-optimizer")


def flags(**extra):
    base = {
        "target": "scripted/test-target",
        "optimizer": "scripted/test-optimizer",
        "epochs": 3,
        "batch_size": 40,
        "minibatch_size": 40,
        "concurrency": 2,
        "slow_update": False,
    }
    base.update(extra)
    return base


def train_args(world, *extra, target: str = "scripted/test-target") -> list[str]:
    """`skillopt train` of the world's skill with the scripted optimizer: one step per
    epoch (the whole training split in one minibatch), no slow update."""
    return [
        "train",
        str(world["skill"]),
        "--tasks",
        str(world["suite"]),
        "--target",
        target,
        "--optimizer",
        "scripted/test-optimizer",
        "--batch-size",
        "40",
        "--minibatch-size",
        "40",
        "--no-slow-update",
        *extra,
    ]


def leave_only_the_bundle(world, tmp_path, monkeypatch):
    """The store, the runs and the suite (with its code) gone; cwd somewhere new."""
    for gone in ("runs", "store.sqlite"):
        path = tmp_path / gone
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    shutil.rmtree(world["root"] / "tasks")
    fresh = tmp_path / "elsewhere"
    fresh.mkdir()
    monkeypatch.chdir(fresh)
    return fresh
