"""`skillopt tasks triggers --from-library`: a starter trigger suite for review, drafted
from the skill's description (should trigger) and the library's (should not), in the
shape of `<stem>-triggers.yaml`, every item marked for review, never over a file."""

from __future__ import annotations

from pathlib import Path

import pytest
import routing_rule
import yaml
from helpers import write_skill
from typer.testing import CliRunner

from skillopt.cli.main import app
from skillopt.starter.triggers import requests


def cli(*args: object):
    return CliRunner().invoke(app, ["tasks", "triggers", *map(str, args)])


@pytest.mark.parametrize(
    ("description", "drafted"),
    [
        ("Adds up invoice totals.", ["Add up invoice totals."]),
        (
            "Processes refunds. Use when a refund is asked for.",
            ["Process refunds.", "A refund is asked for."],
        ),
        ("Use this skill for CSV exports.", ["Help me with CSV exports."]),
        ("Use it to rotate keys.", ["Rotate keys."]),
        ("Queries the ledger.", ["Query the ledger."]),
        ("Analysis of logs.", ["Analysis of logs."]),  # not a verb: left as written
        ("One. Two! Three? Four.", ["One.", "Two.", "Three."]),  # three at most
    ],
)
def test_a_description_is_drafted_into_requests(description, drafted):
    assert requests(description) == drafted


def test_writes_a_trigger_suite_for_review_with_its_counts(isolated):
    me, library, _ = routing_rule.write_fixture(isolated)
    res = cli("--skill", me, "--from-library", library)
    assert res.exit_code == 0, res.output
    out = Path("tasks/invoice-totals-triggers.yaml")
    assert f"wrote {out}: 2 should trigger invoice-totals" in res.output
    assert "6 should not (from 3 library skills: csv-cleaner, receipt-scanner, tax-forms)" in (
        res.output
    )
    text = out.read_text()
    data = yaml.safe_load(text)
    assert data["name"] == "invoice-totals-triggers"
    assert set(data) == {"name", "items"}
    assert all(set(item) == {"id", "query", "should_trigger"} for item in data["items"])
    assert [i["should_trigger"] for i in data["items"]] == [True] * 2 + [False] * 6
    assert data["items"][0]["query"] == "Add up invoice line items and checks invoice totals."
    assert text.count("# review: from the description of") == len(data["items"])
    assert len({i["id"] for i in data["items"]}) == 8


def test_refuses_to_overwrite(isolated):
    me, library, _ = routing_rule.write_fixture(isolated)
    target = isolated / "mine.yaml"
    target.write_text("keep me\n")
    res = cli("--skill", me, "--from-library", library, "-o", target)
    assert res.exit_code == 2 and "already exists" in res.output
    assert target.read_text() == "keep me\n"
    assert cli("--skill", me, "--from-library", library, "-o", target, "--force").exit_code == 0
    assert "should_trigger" in target.read_text()


def test_a_library_holding_the_skill_itself_is_one_line(isolated):
    me, library, _ = routing_rule.write_fixture(isolated)
    write_skill(library, "invoice-totals", description="A copy. Use for copies.")
    res = cli("--skill", me, "--from-library", library)
    assert res.exit_code == 2 and "the library holds a skill named 'invoice-totals'" in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert not Path("tasks/invoice-totals-triggers.yaml").exists()


def test_an_empty_library_warns_that_there_are_no_negatives(isolated):
    me, _, _ = routing_rule.write_fixture(isolated)
    (isolated / "empty").mkdir()
    res = cli("--skill", me, "--from-library", isolated / "empty")
    assert res.exit_code == 0 and "0 should not" in res.output
    assert "add some by hand" in res.output


def test_a_broken_library_skill_is_warned_and_left_out(isolated):
    me, library, _ = routing_rule.write_fixture(isolated)
    (library / "broken").mkdir()
    (library / "broken" / "SKILL.md").write_text("---\nname: broken\n---\nbody\n")
    res = cli("--skill", me, "--from-library", library)
    assert res.exit_code == 0 and "library skill" in res.output and "broken skipped" in res.output
    assert "not-broken" not in Path("tasks/invoice-totals-triggers.yaml").read_text()
