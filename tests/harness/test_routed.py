"""The routed harness: a task is routed (the router's listing and rule), then answered
with the body of the skill the model picked: this one, a library skill, or none. A
trigger query is the routing alone; a failed routing is the rollout's failure."""

from __future__ import annotations

from pathlib import Path

import routing_rule
from helpers import write_skill, write_suite

from skillopt.errors import ModelError
from skillopt.harness.routed import RoutedHarness
from skillopt.models.scripted import ScriptedModel
from skillopt.skill.document import Skill
from skillopt.skill.library import load_library
from skillopt.suite.loader import load_suite

ME = ("invoice-totals", "Adds up invoice line items and checks invoice totals.")


def agent(messages) -> str:
    """Routes by the shared rule; answers with the first line of its system message."""
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    if routing_rule.LISTING in system:
        return routing_rule.router(messages)
    return system.splitlines()[0] if system else "no skill"


def world(root: Path):
    me = Skill.load(write_skill(root / "skills", ME[0], description=ME[1], body="# Totals\n"))
    name, description = routing_rule.LIBRARY[0]  # receipt-scanner
    write_skill(root / "library", name, description=description, body="# Receipts\n")
    items = [
        {"id": "mine", "input": "Add up the invoice line items 3 and 4", "expected": "# Totals"},
        {"id": "theirs", "input": "Extract the line items from this receipt photo"},
        {"id": "nobody", "input": "Write a haiku about autumn"},
    ]
    for item in items[1:]:
        item["expected"] = "x"
    suite = write_suite(root / "tasks" / "t.yaml", items)
    queries = [{"id": "q", "query": "Check the invoice total", "should_trigger": True}]
    triggers = write_suite(root / "tasks" / "q.yaml", queries)
    return me, load_library([str(root / "library")]), load_suite(suite), load_suite(triggers)


def test_a_task_is_answered_with_the_skill_the_model_picked(isolated):
    me, library, suite, _ = world(isolated)
    model = ScriptedModel(agent, name="scripted/agent")
    harness = RoutedHarness(model, library)
    harness.check([me])
    mine, theirs, nobody = (harness.run(me, suite.get(i)) for i in ("mine", "theirs", "nobody"))
    assert (mine.answer, mine.skill_invoked, mine.info["picked"]) == ("# Totals", True, ME[0])
    assert (theirs.answer, theirs.skill_invoked) == ("# Receipts", False)
    assert theirs.info["picked"] == "receipt-scanner"
    assert (nobody.answer, nobody.skill_invoked, nobody.info["picked"]) == (
        "no skill",
        False,
        "none",
    )
    # two calls each (route, answer); the answer's messages are what it answered from
    assert mine.model_calls == 2 and model.call_count == 6
    assert mine.messages[0] == {"role": "system", "content": "# Totals"}
    # the no-skill baseline: this skill is not listed, so the next best one answers
    bare = harness.run(Skill.empty(), suite.get("mine"))
    assert bare.skill_invoked is False and bare.answer == "# Receipts"
    assert ME[0] not in model.calls[-2].messages[0]["content"]


def test_a_trigger_query_is_the_routing_alone(isolated):
    me, library, _, triggers = world(isolated)
    model = ScriptedModel(agent, name="scripted/agent")
    traj = RoutedHarness(model, library).run(me, triggers.get("q"))
    assert traj.skill_invoked is True and traj.answer == ME[0] and model.call_count == 1


def test_a_failed_routing_is_the_rollouts_failure(isolated):
    me, library, suite, _ = world(isolated)

    def down(messages):
        raise ModelError("provider unavailable (503)", kind="server")

    model = ScriptedModel(down, name="scripted/down")
    traj = RoutedHarness(model, library).run(me, suite.get("mine"))
    assert traj.error is not None and traj.answer is None and model.call_count == 1
    fp = RoutedHarness(model, library).fingerprint()
    assert fp["harness"] == "routed" and fp["router"]["harness"] == "router"
