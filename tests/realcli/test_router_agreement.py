"""How often the router harness chooses the skill the REAL Claude Code and Codex CLIs
load, on the routing fixture (tests/routing_rule.py: a skill under test, a library of
three overlapping skills, eight requests).

Both sides apply one rule (the most content words shared with the request) to what
they are shown: the router's scripted model to the router's listing, the loopback
fakes to the listing the real CLI put in its request (Claude Code's system message,
Codex's `<skills_instructions>`), and the fake loads its choice the way each CLI's
model does (the Skill tool; a `cat` of SKILL.md). So the figure measures whether the
router shows the choice the same skills and words the CLI does, bundled skills of the
CLI included; it says nothing of how a real model judges.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import routing_rule
from conftest import claude_model, codex_model, real_cli, run_eval
from fakes.anthropic_api import FakeAnthropic
from fakes.responses_api import FakeResponses

KEY = "FAKE_PROVIDER_KEY"


def choices(out: Path) -> dict[str, str]:
    return {r["task_id"]: r["answer"] for r in json.loads(out.read_text())["rollouts"]}


def router_choices(me: Path, library: Path, suite: Path) -> dict[str, str]:
    target = ("--target", "scripted/routing_rule:router")
    res, _ = run_eval(
        "router", me, "--tasks", suite, *target, "--library", library, "--json", "r.json"
    )
    assert res.exit_code == 0, res.output
    return choices(Path("r.json"))


@pytest.fixture
def fixture(isolated):
    return routing_rule.write_fixture(isolated)


def test_router_agrees_with_the_real_claude_code(home, fixture, monkeypatch):
    cli = real_cli("claude")
    monkeypatch.setenv("PATH", f"{cli.parent}{os.pathsep}{os.environ['PATH']}")
    for var in list(os.environ):
        if var.startswith(("ANTHROPIC_", "CLAUDE_")):
            monkeypatch.delenv(var)
    me, library, suite = fixture
    with FakeAnthropic(claude_model) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-0123456789")
        res, _ = run_eval(
            "claude-code", me, "--tasks", suite, "--library", library, "--json", "c.json"
        )
    assert res.exit_code == 0, res.output
    cli_chose, router_chose = choices(Path("c.json")), router_choices(me, library, suite)
    agree = sum(cli_chose[q] == router_chose[q] for q in router_chose)
    assert (agree, len(router_chose)) == (8, 8), (cli_chose, router_chose)
    invoked = {
        r["task_id"]
        for r in json.loads(Path("c.json").read_text())["rollouts"]
        if r["skill_invoked"]
    }
    assert invoked == {"q1", "q6", "q7"}  # read from the CLI's own stream events


def test_router_agrees_with_the_real_codex(home, fixture, monkeypatch):
    cli = real_cli("codex")
    monkeypatch.setenv("PATH", f"{cli.parent}{os.pathsep}{os.environ['PATH']}")
    for var in list(os.environ):
        if var.startswith(("OPENAI_", "CODEX_")):
            monkeypatch.delenv(var)
    monkeypatch.setenv(KEY, "sk-fake-provider-0123456789")
    me, library, suite = fixture
    with FakeResponses(codex_model) as api:
        api.write_config(home / ".codex", env_key=KEY)
        res, _ = run_eval("codex", me, "--tasks", suite, "--library", library, "--json", "x.json")
    assert res.exit_code == 0, res.output
    cli_chose, router_chose = choices(Path("x.json")), router_choices(me, library, suite)
    agree = sum(cli_chose[q] == router_chose[q] for q in router_chose)
    assert (agree, len(router_chose)) == (8, 8), (cli_chose, router_chose)
    invoked = {
        r["task_id"]
        for r in json.loads(Path("x.json").read_text())["rollouts"]
        if r["skill_invoked"]
    }
    assert invoked == {"q1", "q6", "q7"}
