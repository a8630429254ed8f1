"""The router harness: what the model is shown (Claude Code's listing, sorted, the
library's skills beside this one), how any reply is read into a choice, failures
unscored, the fingerprint, and a run through `skillopt eval` whose JSON says
whether the skill was chosen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import routing_rule
from helpers import have_local, write_skill
from typer.testing import CliRunner

from skillopt.cli.main import app
from skillopt.config import Settings
from skillopt.errors import ModelError
from skillopt.harness import build_harness
from skillopt.harness.router import LISTING, NONE, RouterHarness, listed, read_choice
from skillopt.models.scripted import ScriptedModel
from skillopt.skill.document import Skill
from skillopt.skill.library import Library, load_library
from skillopt.suite.task import Task

NAMES = ["csv-cleaner", "invoice-totals", "pdf", "pdf-tools"]


@pytest.mark.parametrize(
    ("reply", "choice"),
    [
        ("invoice-totals", "invoice-totals"),
        ("  Invoice-Totals\n", "invoice-totals"),
        ("`pdf-tools`", "pdf-tools"),
        ('"pdf"', "pdf"),
        ("**csv-cleaner**.", "csv-cleaner"),
        ("I would load the pdf-tools skill for this.", "pdf-tools"),
        ("Skill: pdf", "pdf"),
        ("/invoice-totals", "invoice-totals"),
        ('{"skill": "csv-cleaner"}', "csv-cleaner"),
        ("none", NONE),
        ("None of these fit.", NONE),
        ("No skill is needed here.", NONE),
        ("{'skill': null}", NONE),
        ("pdf-tools-pro", NONE),  # an unknown name is none, not its prefix
        ("load xlsx-writer", NONE),
        ("I'd pick csv-cleaner, or maybe pdf", "csv-cleaner"),  # the first one named
        ("Ich würde keinen Skill laden.", NONE),
        ("pdf\u200b-tools", "pdf"),  # a zero-width space splits the name
    ],
)
def test_any_reply_is_read_into_a_listed_name_or_none(reply, choice):
    assert read_choice(reply, NAMES) == choice


def skill(root: Path, name: str, description: str, extra: str = "") -> Skill:
    return Skill.load(write_skill(root, name, description=description, extra=extra))


def task(prompt: str = "Check the invoice total") -> Task:
    return Task(id="t1", input=prompt, expected="x", prompt=prompt, split="test", scorer=None)


@pytest.fixture
def lib(isolated) -> Library:
    root = isolated / "library"
    write_skill(root, "tax-forms", description="Fills in tax\n  forms. Use when due.")
    write_skill(root, "a-first", description="Sorts first.", extra="when_to_use: Always.\n")
    write_skill(
        root, "hidden", description="Never listed.", extra="disable-model-invocation: true\n"
    )
    return load_library([str(root)])


def test_the_model_sees_claude_codes_listing_sorted_with_this_skill_among_them(isolated, lib):
    model = ScriptedModel(default="invoice-totals")
    harness = RouterHarness(model, lib)
    me = skill(isolated / "skills", "invoice-totals", "Checks invoice totals.")
    traj = harness.run(me, task())
    system = model.calls[0].messages[0]["content"]
    assert system.startswith(
        f"{LISTING}\n\n"
        "- a-first: Sorts first. - Always.\n"
        "- invoice-totals: Checks invoice totals.\n"
        "- tax-forms: Fills in tax forms. Use when due.\n"
    )
    assert "hidden" not in system
    assert model.calls[0].messages[-1] == {"role": "user", "content": "Check the invoice total"}
    assert traj.answer == "invoice-totals" and traj.skill_invoked is True
    # the no-skill baseline lists the library alone; nothing it chooses is this skill
    bare = harness.run(Skill.empty(), task())
    assert "invoice-totals" not in model.calls[1].messages[0]["content"]
    assert bare.answer == NONE and bare.skill_invoked is False


def test_the_listing_does_not_depend_on_the_skill_under_test_being_last(isolated, lib):
    me = skill(isolated / "skills", "aaa-mine", "Mine.")
    assert [n for n, _ in listed(me, lib)] == ["a-first", "aaa-mine", "tax-forms"]


def test_an_empty_reply_or_a_failed_call_is_unscored(isolated):
    me = skill(isolated / "skills", "invoice-totals", "Checks invoice totals.")
    empty = RouterHarness(ScriptedModel(default="   \n")).run(me, task())
    assert empty.answer is None and empty.error and empty.error_kind == "bad_reply"

    def down(messages):
        raise ModelError("provider unavailable (503)", kind="server")

    failed = RouterHarness(ScriptedModel(down)).run(me, task())
    assert failed.answer is None and failed.error_kind == "server"

    def bug(messages):
        raise KeyError("oops")

    crashed = RouterHarness(ScriptedModel(bug)).run(me, task())
    assert crashed.answer is None and crashed.error_kind == "exception"


def test_the_fingerprint_holds_the_prompt_version_shape_and_library(isolated, lib):
    model = ScriptedModel(default="none")
    bare = RouterHarness(model).fingerprint()
    assert bare["harness"] == "router" and bare["prompt"] and bare["shape"] == "chat"
    assert "library" not in bare
    assert RouterHarness(model, lib).fingerprint()["library"] == lib.fingerprint()


def test_it_is_registered_and_reads_agent_library(isolated, lib):
    settings = Settings(harness="router", agent={"library": [str(isolated / "library")]})
    harness = build_harness(settings, ScriptedModel(default="none"))
    assert isinstance(harness, RouterHarness) and harness.library.names == lib.names


def test_eval_through_the_router_with_a_library_reports_the_choice(isolated):
    me, library, suite = routing_rule.write_fixture(isolated)
    res = CliRunner().invoke(
        app,
        [
            "eval",
            str(me),
            "--tasks",
            str(suite),
            "--harness",
            "router",
            "--target",
            "scripted/routing_rule:router",
            "--library",
            str(library),
            "--json",
            "out.json",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "skill loaded in 3/8 tasks (skill · test)" in res.output
    rollouts = json.loads(Path("out.json").read_text())["rollouts"]
    chosen = {r["task_id"]: r["answer"] for r in rollouts}
    assert chosen == {
        "q1": "invoice-totals",
        "q2": "receipt-scanner",
        "q3": "tax-forms",
        "q4": "csv-cleaner",
        "q5": "none",
        "q6": "invoice-totals",
        "q7": "invoice-totals",
        "q8": "csv-cleaner",
    }
    assert {r["task_id"] for r in rollouts if r["skill_invoked"]} == {"q1", "q6", "q7"}
    assert all(r["score"] == 1.0 for r in rollouts)


@pytest.mark.slow
@pytest.mark.skipif(not have_local(), reason="needs the embedded model (pip install .[local])")
def test_the_embedded_model_routes_offline(isolated):
    from skillopt.models.resolve import resolve_model

    me, library, _ = routing_rule.write_fixture(isolated)
    model = resolve_model("local/gemma-3-270m")
    harness = RouterHarness(model, load_library([str(library)]))
    assert harness.fingerprint()["shape"] == "completion"
    harness.check([Skill.load(me)])
    traj = harness.run(Skill.load(me), task(routing_rule.QUERIES[0][1]))
    assert traj.error is None
    assert traj.answer in {"invoice-totals", "receipt-scanner", "tax-forms", "csv-cleaner", NONE}
    assert traj.skill_invoked == (traj.answer == "invoice-totals")
