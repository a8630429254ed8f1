"""Trigger suites and the load rate through the CLI with the stand-in agent CLIs:
`eval` on a trigger suite (precision, recall, each query's load rate, in text and
`--json`), a harness that cannot tell, explicit invocation refused, and `validate
--min-load-rate` on a task suite failing and passing as the rate implies (JUnit and
the summary too).

The stand-ins load the skill only when the prompt holds one of `invoke_when`'s
words: claude emits its Skill tool call, codex its read of the SKILL.md, as the
real CLIs were seen to (formats.md)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from fakes.agent_cli import HELPFUL
from helpers import write_skill, write_suite
from typer.testing import CliRunner

from skillopt.cli.main import app

runner = CliRunner()

# three that should load the skill (one says no topic word: a miss), three that
# should not (one says "capital": a false load)
QUERIES = [
    {"id": "s-caps", "query": "write word-1 in capitals", "should_trigger": True},
    {"id": "s-upper", "query": "capitalise word-2 for me", "should_trigger": True},
    {"id": "s-shout", "query": "make word-3 LOUD", "should_trigger": True},
    {"id": "n-weather", "query": "what is the weather in Oslo", "should_trigger": False},
    {"id": "n-sum", "query": "add 2 and 3", "should_trigger": False},
    {"id": "n-city", "query": "what is the capital of France", "should_trigger": False},
]
ALL = {"seed": 1, "train": 0.0, "val": 0.0, "test": 1.0}


@pytest.fixture
def triggers(agents, isolated):
    for cli in ("claude", "codex"):
        agents.configure(cli, invoke_when=["capital"])
    skill = write_skill(
        isolated / "skills",
        "caps",
        body=f"# Caps\n\n- {HELPFUL}\n",
        description="Writes words in capitals. Use it when asked for capitals.",
    )
    suite = write_suite(isolated / "tasks" / "caps-triggers.yaml", QUERIES, split=ALL)
    return skill, suite


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


# claude's run takes a second or more (12 agent processes): the quick loop runs codex
@pytest.mark.parametrize("harness", [pytest.param("claude-code", marks=pytest.mark.slow), "codex"])
def test_eval_reports_precision_recall_and_each_querys_load_rate(triggers, isolated, harness):
    skill, suite = triggers
    res = run("eval", skill, "--tasks", suite, "--harness", harness, "--samples", "2", "--concurrency", "6",
              "--json", "out.json")  # fmt: skip
    assert res.exit_code == 0, res.output
    text = " ".join(res.stdout.split())
    # tp 4 (s-caps, s-upper ×2), fn 2 (s-shout ×2), fp 2 (n-city ×2)
    assert (
        "triggers (skill · test): precision 0.67 · recall 0.67 · 3 should load, 3 should not"
        in text
    )
    assert "s-caps should load loaded 2/2" in text
    assert "s-shout should load loaded 0/2 misfire" in text
    assert "n-city should not load loaded 2/2 misfire" in text
    assert (
        "n-sum should not load loaded 0/2" in text
        and "n-sum should not load loaded 0/2 misfire" not in text
    )
    assert "skill loaded in" not in text  # a trigger suite's report says it all
    assert "warning" not in res.stderr
    data = json.loads((isolated / "out.json").read_text())
    result = data["results"][0]
    assert result["mean"] == pytest.approx(4 / 6)
    report = result["triggers"]
    assert report["precision"] == pytest.approx(2 / 3) and report["recall"] == pytest.approx(2 / 3)
    assert report["missed"] == ["s-shout"] and report["spurious"] == ["n-city"]
    city = next(q for q in report["queries"] if q["id"] == "n-city")
    assert (city["should_trigger"], city["loaded"], city["traced"], city["load_rate"]) == (
        False, 2, 2, 1.0,
    )  # fmt: skip
    assert [r["sample"] for r in city["rollouts"]] == [0, 1]
    assert all(r["skill_invoked"] is True for r in city["rollouts"])


def test_a_harness_that_cannot_tell_leaves_trigger_queries_unscored(triggers, isolated):
    skill, suite = triggers
    res = run("eval", skill, "--tasks", suite, "--harness", "chat", "-t",
              "scripted/scripted_targets:follows_skill")  # fmt: skip
    # every query fails the same way, so the run stops early, saying why, and none is a 0
    assert res.exit_code == 2, res.output
    said = " ".join(res.output.split())
    assert "the run's trace does not show whether the skill was loaded" in said
    assert "unscored, not zeros" in said and "internal error" not in said


def test_explicit_invocation_refuses_a_trigger_suite(triggers, isolated):
    skill, suite = triggers
    (isolated / "skillopt.yaml").write_text("agent:\n  invoke: explicit\n")
    res = run("eval", skill, "--tasks", suite, "--harness", "claude-code")
    assert res.exit_code == 2
    assert "agent.invoke: explicit" in res.output and "always loads" in res.output
    assert "internal error" not in res.output


@pytest.fixture
def tasks(agents, isolated):
    """Five tasks; the agent loads the skill for the two that say "capital"."""
    for cli in ("claude", "codex"):
        agents.configure(cli, invoke_when=["capital"])
    skill = write_skill(isolated / "skills", "caps", body=f"# Caps\n\n- {HELPFUL}\n")
    items = [
        {"id": f"t{i}", "input": f"word-{i}" + (" in capitals" if i < 2 else ""),
         "expected": f"WORD-{i}"}
        for i in range(5)
    ]  # fmt: skip
    return skill, write_suite(isolated / "tasks" / "caps.yaml", items, split=ALL)


def test_validate_min_load_rate_fails_and_passes_as_the_rate_implies(tasks, isolated):
    skill, suite = tasks
    res = run("validate", skill, "--tasks", suite, "--harness", "claude-code",
              "--min-load-rate", "0.5", "--junit", "j.xml", "--summary", "s.md")  # fmt: skip
    assert res.exit_code == 1, res.output
    assert "skill loaded in 2/5 tasks" in res.stdout
    assert "FAIL min-load-rate: skill loaded in 2/5 tasks (0.40) < 0.50" in res.stdout
    assert "validate failed" in res.stdout
    stderr = " ".join(res.stderr.split())
    assert "warning: the skill loaded in only 2/5 tasks" in stderr
    assert "name and description" in stderr
    checks = ET.parse(isolated / "j.xml").getroot().find("testsuite[@name='skillopt.checks']")
    case = checks.find("testcase[@name='min-load-rate']")
    assert case.find("failure").get("message") == "skill loaded in 2/5 tasks (0.40) < 0.50"
    props = {p.get("name"): p.get("value") for p in ET.parse(isolated / "j.xml").iter("property")}
    assert props["load_rate"] == "0.4000"
    summary = (isolated / "s.md").read_text()
    assert "❌ min-load-rate: skill loaded in 2/5 tasks (0.40) < 0.50" in summary
    assert "| skill loaded | 2/5 tasks |" in summary

    res = run("validate", skill, "--tasks", suite, "--harness", "codex",
              "--min-load-rate", "0.4", "--json", "v.json")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "pass min-load-rate: skill loaded in 2/5 tasks (0.40) ≥ 0.40" in res.stdout
    data = json.loads((isolated / "v.json").read_text())
    assert data["result"]["load"] == {
        "loaded": 2, "tasks": 5, "rate": 0.4, "loaded_rollouts": 2, "rollouts": 5,
    }  # fmt: skip
    assert data["checks"][-1]["name"] == "min-load-rate" and data["checks"][-1]["passed"]


def test_min_load_rate_without_a_trace_fails_with_its_reason(tasks):
    skill, suite = tasks
    res = run("validate", skill, "--tasks", suite, "--harness", "chat", "-t",
              "scripted/scripted_targets:follows_skill", "--min-load-rate", "0.1")  # fmt: skip
    assert res.exit_code == 1, res.output
    assert "FAIL min-load-rate: no scored rollout's trace shows whether the skill loaded" in (
        " ".join(res.stdout.split())
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--min-load-rate", "1.5"], "between 0 and 1"),
        (["--min-load-rate", "0.5", "--tasks-is-triggers"], "use --min-score"),
    ],
)
def test_min_load_rate_refusals_are_usage_errors(tasks, triggers, args, says):
    skill, suite = tasks
    if "--tasks-is-triggers" in args:
        args = [a for a in args if a != "--tasks-is-triggers"]
        suite = triggers[1]
    res = run("validate", skill, "--tasks", suite, "--harness", "claude-code", *args)
    assert res.exit_code == 2, res.output
    assert says in res.output and "internal error" not in res.output


def test_explicit_invocation_refuses_min_load_rate(tasks, isolated):
    skill, suite = tasks
    (isolated / "skillopt.yaml").write_text("agent:\n  invoke: explicit\n")
    res = run("validate", skill, "--tasks", suite, "--harness", "claude-code",
              "--min-load-rate", "0.5")  # fmt: skip
    assert res.exit_code == 2 and "agent.invoke: auto" in res.output


def test_under_explicit_invocation_the_load_rate_says_so(tasks, isolated):
    skill, suite = tasks
    (isolated / "skillopt.yaml").write_text("agent:\n  invoke: explicit\n")
    res = run("eval", skill, "--tasks", suite, "--harness", "claude-code")
    assert res.exit_code == 0, res.output
    # the CLI expanded /caps for every task, whatever the task says
    assert "skill loaded in 5/5 tasks (skill · test; named in the prompt)" in res.stdout
    assert "warning" not in res.stderr


def test_validate_on_a_trigger_suite_reports_its_queries(triggers, isolated):
    skill, suite = triggers
    res = run("validate", skill, "--tasks", suite, "--harness", "codex", "--min-score", "0.8", "--concurrency", "6",
              "--summary", "s.md", "--junit", "j.xml", "--json", "v.json")  # fmt: skip
    assert res.exit_code == 1, res.output  # 4/6 queries right: mean 0.667 < 0.8
    said = " ".join(res.stdout.split())
    assert "skill: mean 0.667 · pass 66.7% · scored 6/6 · precision 0.67 · recall 0.67" in said
    assert "n-city should not load loaded 1/1 misfire" in said
    assert "FAIL min-score" in said and "loaded in" not in said
    summary = (isolated / "s.md").read_text()
    assert "| precision | 0.67 |" in summary and "| recall | 0.67 |" in summary
    assert "| `s-shout` | yes | 0/1 | ❌ misfire |" in summary
    assert "| `n-sum` | no | 0/1 | ✅ |" in summary
    cases = ET.parse(isolated / "j.xml").getroot().iter("testcase")
    failed = {c.get("name") for c in cases if c.find("failure") is not None}
    assert failed == {"s-shout", "n-city", "min-score"}
    data = json.loads((isolated / "v.json").read_text())
    assert data["result"]["triggers"]["spurious"] == ["n-city"]
