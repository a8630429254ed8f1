"""`train --part description` through the REAL Claude Code and Codex CLIs, pointed at
the loopback fakes of their APIs.

The fake "model" applies the shared routing rule (tests/fakes/routing.py: the listed
skill sharing the most content words with the request, two at least) to the skill
listing the CLI put in its request (Claude Code's system message, Codex's
`<skills_instructions>`), and loads its choice the way each CLI's model does (the
Skill tool; a `cat` of SKILL.md). The skill under test starts with a description that
loses most of its requests to receipt-scanner, a library skill installed beside it
(`--library`); a scripted optimizer writes the description that wins them. So the
description reaches the model only through the CLI's own listing, and whether the
skill loaded is read from the CLI's own events.
"""

from __future__ import annotations

import json
import os
import time

import pytest
import routing_rule
from conftest import claude_model, codex_model, real_cli
from fakes import anthropic_api, responses_api
from fakes.anthropic_api import FakeAnthropic
from fakes.responses_api import FakeResponses

from skillopt.skill.document import Skill

pytestmark = pytest.mark.slow  # some 40 model calls through a real CLI each

KEY = "FAKE_PROVIDER_KEY"
START, GOOD = routing_rule.DESCRIBE_START, routing_rule.DESCRIBE_GOOD
ITEMS = routing_rule.DESCRIBE_ITEMS + routing_rule.MORE_HELD_OUT
ME = routing_rule.SKILL[0]


@pytest.fixture
def world(isolated):
    return routing_rule.write_describe_fixture(isolated, ITEMS)


def trained(world, isolated, describer, harness: str, requests):
    """Train through `harness`, check what every CLI must show, and return the
    held-out precision and recall (initial, best), read back from the store, and
    how long training took."""
    start = time.monotonic()
    res = routing_rule.train_description(world, harness)
    took = time.monotonic() - start
    assert res.exit_code == 0, res.output
    said = " ".join(res.stdout.split())
    assert "validation 0.750 → 1.000" in said, res.output
    assert "collided with: receipt-scanner (misfired training queries loaded it instead)" in said
    run = routing_rule.run_dir(isolated, res.stdout)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"][1]["decision"] == "accepted"
    assert summary["description"] == {
        "initial": START,
        "best": GOOD,
        "collisions": ["receipt-scanner"],
    }
    assert (summary["test"]["initial"]["mean"], summary["test"]["best"]["mean"]) == (0.75, 1.0)
    # the body is byte for byte the original's: only the description line changed
    original = (world["skill"] / "SKILL.md").read_text()
    best = (run / "best" / "SKILL.md").read_text()
    assert best == original.replace(f"description: {START}", f"description: {GOOD}")
    assert Skill.parse(best).body == routing_rule.DESCRIBE_BODY
    # the optimizer was shown the miss and what the real CLI loaded instead
    asked = describer.calls[0].messages[-1]["content"]
    assert (
        "[t2] SHOULD load it; loaded in 0/1 runs: Add up the line items of this receipt for "
        "the invoice (loaded instead: receipt-scanner)"
    ) in asked
    # precision and recall on the held-out queries, before and after: the train's own
    # test rollouts, served from the store (no request reaches the fake)
    paid = len(requests())
    before = routing_rule.eval_triggers(world["skill"], world, harness)["results"][0]["triggers"]
    after = routing_rule.eval_triggers(run / "best", world, harness)["results"][0]["triggers"]
    assert len(requests()) == paid
    return before, after, took


def scores(report: dict) -> tuple:
    return report["precision"], report["recall"], report["missed"], report["spurious"]


def test_claude_code_trains_a_description_that_fires(home, world, isolated, describer, monkeypatch):
    cli = real_cli("claude")
    monkeypatch.setenv("PATH", f"{cli.parent}{os.pathsep}{os.environ['PATH']}")
    for var in list(os.environ):
        if var.startswith(("ANTHROPIC_", "CLAUDE_")):
            monkeypatch.delenv(var)
    with FakeAnthropic(claude_model) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-0123456789")
        before, after, took = trained(
            world, isolated, describer, "claude-code", api.messages_requests
        )
    assert scores(before) == (1.0, 0.5, ["x1"], [])
    assert scores(after) == (1.0, 1.0, [], [])
    # the new description reached the fake only in the listing the CLI sent, and the
    # fake called the Skill tool for the skill under test on it
    bodies = api.messages_requests()
    listed = [b for b in bodies if anthropic_api.skill_descriptions(b).get(ME) == GOOD]
    assert listed and all("receipt-scanner" in anthropic_api.skills_listed(b) for b in listed)
    assert any(anthropic_api.skills_loaded(b) == [ME] for b in listed)
    assert any(
        anthropic_api.skills_loaded(b) == ["receipt-scanner"]
        for b in bodies
        if anthropic_api.skill_descriptions(b).get(ME) == START
    )
    print(f"claude-code: trained in {took:.1f}s over {len(bodies)} model calls")


def test_codex_trains_a_description_that_fires(home, world, isolated, describer, monkeypatch):
    cli = real_cli("codex")
    monkeypatch.setenv("PATH", f"{cli.parent}{os.pathsep}{os.environ['PATH']}")
    for var in list(os.environ):
        if var.startswith(("OPENAI_", "CODEX_")):
            monkeypatch.delenv(var)
    monkeypatch.setenv(KEY, "sk-fake-provider-0123456789")
    with FakeResponses(codex_model) as api:
        api.write_config(home / ".codex", env_key=KEY)
        before, after, took = trained(world, isolated, describer, "codex", api.turn_requests)
    assert scores(before) == (1.0, 0.5, ["x1"], [])
    assert scores(after) == (1.0, 1.0, [], [])
    # the new description reached the fake in codex's `<skills_instructions>`, and the
    # fake read the skill's SKILL.md through codex's shell on it
    bodies = api.turn_requests()
    listed = [b for b in bodies if responses_api.skill_descriptions(b).get(ME) == GOOD]
    assert listed and all("receipt-scanner" in responses_api.skills_listed(b) for b in listed)
    reads = {
        name
        for b in listed
        for name, path in responses_api.skill_files(b).items()
        for call in responses_api.function_calls(b)
        if str(path) in json.dumps(call)
    }
    assert ME in reads
    print(f"codex: trained in {took:.1f}s over {len(bodies)} model calls")
