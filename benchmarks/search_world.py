"""The world of `search_benchmark.py`: six kinds of input, a chat target that knows a
kind exactly when the skill holds that kind's rule, and an optimizer model that
proposes the right rules but replaces a fraction of its edits with harmful ones.

- The suite: 6 kinds × 10 items pinned to splits (train 4, val 3, test 3), 60 items
  whose ids (`t-001` …) are shuffled so that an id does not tell the kind. Each
  kind has one transform and one rule line that teaches it (`KINDS`).
- The target (`target`, a `(messages) -> str` for `ScriptedModel`, the chat
  harness): the skill is its system message; it answers an item right exactly
  when the skill holds the item's rule line (whitespace-insensitive) and no
  sabotage line for its kind, and otherwise echoes the input. It finds the item
  by its input in the world's table.
- The initial skill holds the rule of kind 0 only: 1 kind in 6 is right.
- The optimizer (`NoisyOptimizer`) follows only what its prompt shows. Asked for
  `{"edits": …}`, it reads the tasks shown (`## Task <id>`, the fenced input, the
  `Score: … (pass|fail)` line) and proposes, for each kind among the failed ones,
  in order of appearance and at most as many as the prompt's `at most N edits`,
  an `add` of that kind's rule under `## Rules` with the failed tasks of that kind
  as evidence. Each slot is replaced, with probability `harm`, by a harmful edit:
  the `delete` of a right rule the skill holds (a kind not among the failed ones
  when there is one), or, when the skill holds none, the `add` of a sabotage line.
  A harmful edit cites the slot's failed tasks (falsely) with probability
  `harm_evidence`, else no evidence. Asked for `{"guidance": …}` it gives one
  bullet that changes nothing for the target, for `{"notes": …}` one line, and
  for anything else `{"edits": []}`; a repair re-ask is answered like the request.
- Draws are reproducible and independent of the order of concurrent calls: each
  slot's `random.Random` is seeded by the run seed, the step the prompt names,
  the ids of the failed tasks shown and the slot. The optimizer is memoryless: the
  same prompt gets the same reply, and it may propose an edit that was rejected.
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

SPLITS = ("train",) * 4 + ("val",) * 3 + ("test",) * 3  # per kind
WORDS = (
    "amber basin cedar delta ember fable grove harbor island jungle kettle lantern "
    "meadow nickel orchid pepper quartz river saddle timber umber velvet willow yonder "
    "zephyr anchor bramble copper dune falcon glacier hollow ivory juniper"
).split()


@dataclass(frozen=True)
class Kind:
    """One kind of input: how its inputs look, its transform, the rule that teaches
    it and the line that sabotages it."""

    looks: str
    answer: str
    make: Callable[[random.Random], tuple[str, str]]

    @property
    def rule(self) -> str:
        return f"- For inputs that look like {self.looks}, answer {self.answer}."

    @property
    def sabotage(self) -> str:
        return f"- For inputs that look like {self.looks}, answer the input unchanged."


def _reverse(rng: random.Random) -> tuple[str, str]:
    x = " ".join(rng.sample(WORDS, 2))
    return x, x[::-1]


def _upper(rng: random.Random) -> tuple[str, str]:
    x = rng.choice(WORDS).capitalize()
    return x, x.upper()


def _digits(rng: random.Random) -> tuple[str, str]:
    letters = rng.sample("abcdefghkmnprstwxyz", 4)
    digits = [str(rng.randint(1, 9)) for _ in range(4)]
    x = "".join(a + b for a, b in zip(letters, digits))
    return x, "".join(digits)


def _sum(rng: random.Random) -> tuple[str, str]:
    nums = [rng.randint(1, 40) for _ in range(rng.randint(3, 4))]
    return ",".join(map(str, nums)), str(sum(nums))


def _initials(rng: random.Random) -> tuple[str, str]:
    words = rng.sample(WORDS, 3)
    return "-".join(words), "".join(w[0] for w in words).upper()


def _length(rng: random.Random) -> tuple[str, str]:
    word = rng.choice(WORDS) + rng.choice(WORDS)[:3]
    return f"[{word}]", str(len(word))


KINDS = (
    Kind("two lowercase words", "the whole text written backwards", _reverse),
    Kind("one capitalised word", "the word in capital letters", _upper),
    Kind("letters and digits mixed", "the digits only, in order", _digits),
    Kind("numbers separated by commas", "their sum", _sum),
    Kind("words joined by hyphens", "the capitalised first letters", _initials),
    Kind("a word in square brackets", "the number of letters in it", _length),
)


@dataclass(frozen=True)
class Item:
    id: str
    input: str
    expected: str
    kind: int
    split: str


def items(seed: int = 30) -> tuple[Item, ...]:
    """The world's 60 items, ids shuffled so that an id does not tell the kind."""
    rng, rows, seen = random.Random(seed), [], set()
    for k, kind in enumerate(KINDS):
        for split in SPLITS:
            while True:
                x, y = kind.make(rng)
                if x not in seen and x != y:
                    break
            seen.add(x)
            rows.append((x, y, k, split))
    rng.shuffle(rows)  # so that t-001, t-002 … do not follow the kinds
    return tuple(Item(f"t-{n + 1:03d}", *row) for n, row in enumerate(rows))


ITEMS = items()
BY_INPUT = {i.input: i for i in ITEMS}
BY_ID = {i.id: i for i in ITEMS}
BODY = (
    "# Transforms\n\nEach input has one transform; reply with the result only.\n\n"
    f"## Rules\n\n{KINDS[0].rule}\n"
)


def write_world(root: Path) -> tuple[Path, Path]:
    """The skill and the suite, written under `root` (never into the bundled ones)."""
    skill = root / "skills" / "transforms"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: transforms\ndescription: Transform an input by its kind. Use when "
        "an input must be answered with its transform.\n---\n" + BODY,
        encoding="utf-8",
    )
    suite = root / "tasks" / "transforms.yaml"
    suite.parent.mkdir(parents=True)
    rows = [{"id": i.id, "input": i.input, "expected": i.expected, "split": i.split} for i in ITEMS]
    suite.write_text(
        yaml.safe_dump({"name": "transforms", "scorer": "exact", "items": rows}, sort_keys=False),
        encoding="utf-8",
    )
    return skill, suite


def norm(text: str | None) -> str:
    return " ".join((text or "").split())


def holds(skill: str, line: str) -> bool:
    """Whether `skill` holds `line`, whitespace-insensitive."""
    return norm(line) in norm(skill)


def right(skill: str, kind: int) -> bool:
    return holds(skill, KINDS[kind].rule) and not holds(skill, KINDS[kind].sabotage)


def target(messages: list[dict]) -> str:
    """The target: the right answer when the skill teaches the item's kind, else the
    input unchanged."""
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    task = messages[-1]["content"].strip()
    item = BY_INPUT.get(task)
    if item is None or not right(system, item.kind):
        return task
    return item.expected


# ---------------------------------------------------------------------------- optimizer
_SKILL = re.compile(r"^```(?:markdown|md)\n(.*?)^```", re.MULTILINE | re.DOTALL)
_TASK = re.compile(
    r"^## Task (\S+)\n[^\n]*:\n```\n(.*?)\n```(.*?)^Score: [\d.]+ \((pass|fail)\)",
    re.MULTILINE | re.DOTALL,
)
GUIDANCE = "- Apply the rule that matches the input."
NOTE = "- Rules for the kinds that fail are what moves the score."


class NoisyOptimizer:
    """`(messages) -> str`: the replies of the module docstring. `log` holds
    (kind, reply) per call."""

    def __init__(self, seed: int, harm: float, harm_evidence: float = 0.5):
        self.seed, self.harm, self.harm_evidence = seed, harm, harm_evidence
        self.log: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def __call__(self, messages: list[dict]) -> str:
        prompt = messages[1]["content"] if len(messages) > 2 else messages[-1]["content"]
        asks = re.findall(r'(?m)^\s*\{\s*"(\w+)"\s*:', prompt)
        kind = asks[-1] if asks else ""
        if kind == "guidance":
            reply = json.dumps({"guidance": GUIDANCE})
        elif kind == "notes":
            reply = json.dumps({"notes": NOTE})
        else:
            try:
                edits = self.edits(prompt) if kind == "edits" else []
            except Exception:  # a prompt it does not understand: no edit, never a crash
                edits = []
            reply = json.dumps({"edits": edits})
        with self._lock:
            self.log.append((kind or "unknown", reply))
        return reply

    def edits(self, prompt: str) -> list[dict]:
        skill_match = _SKILL.search(prompt)
        skill = skill_match.group(1) if skill_match else ""
        failed: dict[int, list[str]] = {}  # kind -> failed task ids, in order shown
        for m in _TASK.finditer(prompt):
            item = BY_INPUT.get(m.group(2).strip())
            if m.group(4) == "fail" and item is not None:
                failed.setdefault(item.kind, []).append(m.group(1))
        budget = re.search(r"at most (\d+)\s+(?:\w+\s+){0,2}edits", prompt)
        kinds = list(failed)[: int(budget.group(1)) if budget else None]
        step = re.search(r"\bStep (\d+)", prompt)
        shown = ",".join(sorted(i for ids in failed.values() for i in ids))
        out = []
        for slot, k in enumerate(kinds):
            rng = random.Random(f"{self.seed}:{step.group(1) if step else 0}:{shown}:{slot}")
            if rng.random() < self.harm:
                out.append(self.harmful(skill, set(failed), failed[k], rng))
            else:
                out.append(_add(KINDS[k].rule, f"teaches {KINDS[k].looks}", failed[k]))
        return out

    def harmful(self, skill: str, failing: set[int], ids: list[str], rng: random.Random) -> dict:
        """A delete of a right rule the skill holds (another kind than the failed ones
        when it can), else the add of a sabotage line."""
        evidence = ids if rng.random() < self.harm_evidence else []
        held = [k for k in range(len(KINDS)) if right(skill, k)]
        pool = [k for k in held if k not in failing] or held
        if pool:
            k = rng.choice(pool)
            return {
                "op": "delete",
                "anchor": KINDS[k].rule,
                "section": None,
                "content": None,
                "rationale": "this rule is too narrow and confuses the agent",
                "evidence": evidence,
            }
        k = rng.randrange(len(KINDS))
        return _add(KINDS[k].sabotage, "keep such inputs as they are", evidence)


def _add(line: str, why: str, evidence: list[str]) -> dict:
    return {
        "op": "add",
        "anchor": None,
        "section": "Rules",
        "content": line,
        "rationale": why,
        "evidence": evidence,
    }
