"""The world of the `--part both` tests (tests/train/test_train_both.py, and the dry
run's in tests/optimize/test_plan.py): an invoice skill whose description misses and
whose body lacks the rule, a library skill it collides with, a task suite naming its
trigger suite, a scripted agent that routes by the shared rule and answers with the
skill it picked, and a scripted optimizer that writes descriptions and body edits."""

from __future__ import annotations

import json
import re

import routing_rule
from helpers import write_skill, write_suite

RULE = "Add every line item and reply with the total alone."
BODY = "# Invoice totals\n\nHelp with invoices.\n\n## Rules\n\n- Be brief.\n"
MISSES = routing_rule.DESCRIBE_START  # shares one word with the tasks: never picked
FIRES = routing_rule.DESCRIBE_GOOD
# the description fixture's queries but t4 (one query no skill fits is enough here)
TRIGGERS = [item for item in routing_rule.DESCRIBE_ITEMS if item[0] != "t4"]
TASKS = [
    ("a1", [3, 4, 5], "train"),
    ("a2", [10, 20], "train"),
    ("b1", [1, 2, 3], "val"),
    ("b2", [7, 8], "val"),
    ("c1", [2, 2, 2], "test"),
    ("c2", [5, 6], "test"),
]


def target(messages) -> str:
    """Routes by the shared rule when shown a listing; else answers an invoice task,
    adding its numbers only when its system message holds the rule."""
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    if routing_rule.LISTING in system:
        return routing_rule.router(messages)
    numbers = [int(n) for n in re.findall(r"\d+", messages[-1]["content"])]
    return str(sum(numbers)) if RULE in system else "The invoice looks fine."


def edits(content: str) -> str:
    edit = {"op": "add", "anchor": None, "section": "Rules", "content": f"- {content}"}
    return json.dumps({"edits": [{**edit, "rationale": "the totals were wrong", "evidence": []}]})


class Optimizer:
    """Writes the queued description for a description request and adds RULE for a
    failures request; no edit for anything else."""

    def __init__(self, descriptions: list[str]):
        self.descriptions = descriptions
        self.asked: list[str] = []

    def __call__(self, messages) -> str:
        prompt = messages[-1]["content"]
        if "# How a skill is chosen" in prompt:
            self.asked.append("description")
            text = self.descriptions.pop(0) if len(self.descriptions) > 1 else self.descriptions[0]
            return json.dumps({"description": text, "rationale": "fire on invoice sums"})
        if "Tasks the agent FAILED" in messages[1]["content"]:
            self.asked.append("body")
            return edits(RULE)
        self.asked.append("other")
        return json.dumps({"edits": []})


def write_world(isolated):
    """The skill (its description misses, its body lacks the rule), a library holding
    receipt-scanner, and the task suite naming its trigger suite, under `isolated`."""
    skill = write_skill(isolated / "skills", "invoice-totals", body=BODY, description=MISSES)
    name, description = routing_rule.LIBRARY[0]  # receipt-scanner: it collides
    write_skill(isolated / "library", name, description=description)
    queries = [{"id": i, "query": q, "should_trigger": t, "split": s} for i, q, t, s in TRIGGERS]
    write_suite(isolated / "tasks" / "invoices-triggers.yaml", queries)
    items = [
        {
            "id": i,
            "input": f"Add up the invoice line items {', '.join(map(str, ns))}",
            "expected": str(sum(ns)),
            "split": s,
        }
        for i, ns, s in TASKS
    ]
    suite = write_suite(isolated / "tasks" / "invoices.yaml", items)
    text = suite.read_text()
    suite.write_text(text.replace("items:", "triggers: invoices-triggers.yaml\nitems:", 1))
    return {"root": isolated, "skill": skill, "suite": suite, "library": isolated / "library"}
