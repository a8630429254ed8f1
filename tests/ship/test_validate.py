"""`skillopt validate`: every exit-code branch, a baseline at a git ref of a real
temporary repository, JUnit XML read back by junitparser, the Markdown summary."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from helpers import write_skill, write_suite
from junitparser import Failure, JUnitXml, Skipped
from typer.testing import CliRunner

from skillopt.cli.main import app
from skillopt.models import ScriptedModel, register_model, unregister_model

runner = CliRunner()
JUNIT_XSD = xmlschema.XMLSchema(str(Path(__file__).with_name("junit.xsd")))


def valid_junit(path) -> JUnitXml:
    """The report read back, after checking it against the JUnit schema and that every
    count attribute matches the testcases it sums up."""
    JUNIT_XSD.validate(str(path))
    root = ET.parse(path).getroot()
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        counts = {
            "tests": len(cases),
            "failures": sum(c.find("failure") is not None for c in cases),
            "errors": sum(c.find("error") is not None for c in cases),
            "skipped": sum(c.find("skipped") is not None for c in cases),
        }
        assert {k: int(suite.get(k)) for k in counts} == counts, suite.get("name")
        for k in totals:
            totals[k] += counts[k]
    assert {k: int(root.get(k)) for k in totals} == totals
    return JUnitXml.fromfile(str(path))


FOLLOW = "scripted/scripted_targets:follows_skill"
GOOD = "# Caps\n\nAnswer in capitals.\n"
BAD = "# Caps\n\nEcho the input.\n"


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def git(cwd, *args):
    subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@e",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@e",
            "HOME": str(cwd),
            "PATH": "/usr/bin:/bin",
        },
    )


@pytest.fixture
def repo(isolated):
    """A git repository whose `main` holds the good skill; the working tree can differ."""
    git(isolated, "init", "-q", "-b", "main")
    skill = write_skill(isolated / "skills", "caps", body=GOOD)
    (skill / "reference.md").write_text("notes\n")
    items = [{"id": f"w{i}", "input": f"word{i}", "expected": f"WORD{i}"} for i in range(4)]
    items.append({"id": "same", "input": "SAME", "expected": "SAME"})
    suite = write_suite(
        isolated / "tasks" / "caps.yaml",
        items,
        split={"seed": 1, "train": 0.0, "val": 0.0, "test": 1.0},
    )
    git(isolated, "add", "-A")
    git(isolated, "commit", "-qm", "good skill")
    return skill, suite


def set_body(skill, body):
    text = (skill / "SKILL.md").read_text()
    (skill / "SKILL.md").write_text(
        text.split("---\n", 2)[0] + "---\n" + text.split("---\n", 2)[1] + "---\n" + body
    )


def test_pass_with_min_score(repo):
    skill, suite = repo
    res = invoke("validate", skill, "--tasks", suite, "-t", FOLLOW, "--min-score", "0.9")
    assert res.exit_code == 0, res.output
    assert "pass min-score: mean 1.000 ≥ 0.900" in res.stdout
    assert "validate passed" in res.stdout


def test_below_min_score_exits_1(repo):
    skill, suite = repo
    set_body(skill, BAD)
    res = invoke("validate", skill, "--tasks", suite, "-t", FOLLOW, "--min-score", "0.5")
    assert res.exit_code == 1
    assert "FAIL min-score: mean 0.200 < 0.500" in res.stdout


def test_regression_against_main_exits_1_with_flips_and_diff(repo, isolated):
    skill, suite = repo
    set_body(skill, BAD)
    res = invoke(
        "validate",
        skill,
        "--tasks",
        suite,
        "-t",
        FOLLOW,
        "--baseline",
        "main",
        "--max-regressions",
        "1",
        "--summary",
        isolated / "out" / "summary.md",
        "--junit",
        isolated / "out" / "report.junit.xml",
    )
    assert res.exit_code == 1, res.output
    assert "baseline: mean 1.000" in res.stdout
    assert "Δ -0.800 (n=5) · fail→pass 0 · pass→fail 4: w0, w1, w2, w3" in res.stdout
    assert "FAIL max-regressions: 4 regression(s) > 1" in res.stdout
    md = (isolated / "out" / "summary.md").read_text()
    assert md.startswith("## skillopt validate: `caps` ❌ failed")
    assert "| mean | 0.200 | 1.000 | -0.800 |" in md
    assert "| pass rate | 20.0% | 100.0% | -80.0 pp |" in md
    assert "pass→fail 4 (`w0`, `w1`, `w2`, `w3`)" in md
    assert "**Skill vs baseline**: `caps/SKILL.md` +1 −1" in md
    assert "-Answer in capitals.\n+Echo the input." in md
    assert "- ❌ max-regressions: 4 regression(s) > 1: w0, w1, w2, w3" in md
    assert "- `w0` (0.00): expected 'WORD0', got 'word0'" in md

    xml = valid_junit(isolated / "out" / "report.junit.xml")
    suites = {s.name: s for s in xml}
    tasks = suites["skillopt.caps.test"]
    assert tasks.tests == 5 and tasks.failures == 4 and tasks.skipped == 0
    cases = {c.name: c for c in tasks}
    assert set(cases) == {"w0", "w1", "w2", "w3", "same"}
    assert cases["same"].is_passed
    (fail,) = cases["w0"].result
    assert isinstance(fail, Failure) and fail.type == "regression"
    assert "expected: WORD0" in fail.text and "answer: word0" in fail.text
    checks = {c.name: c for c in suites["skillopt.checks"]}
    assert checks["lint"].is_passed and not checks["max-regressions"].is_passed
    assert xml.tests == 8 and xml.failures == 5  # 5 tasks + lint, scored, max-regressions


def test_improvement_over_main_passes(repo):
    skill, suite = repo
    set_body(skill, BAD)
    git(skill.parent.parent, "commit", "-qam", "worse")
    set_body(skill, GOOD + "\nBe brief.\n")
    res = invoke(
        "validate",
        skill,
        "--tasks",
        suite,
        "-t",
        FOLLOW,
        "--baseline",
        "main",
        "--max-regressions",
        "0",
        "--json",
        "-",
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["passed"] is True
    assert data["comparison"]["fail_to_pass"] == ["w0", "w1", "w2", "w3"]
    assert data["comparison"]["delta"] == pytest.approx(0.8)
    assert data["diff_stat"] == [{"file": "caps/SKILL.md", "added": 3, "removed": 1}]
    assert {t["id"]: t["fixed"] for t in data["tasks"]}["w0"] is True


def test_baseline_at_a_path(repo, isolated):
    skill, suite = repo
    old = write_skill(isolated / "old", "caps", body=BAD)
    res = invoke(
        "validate",
        skill,
        "--tasks",
        suite,
        "-t",
        FOLLOW,
        "--baseline",
        old,
        "--max-regressions",
        "0",
    )
    assert res.exit_code == 0, res.output
    assert "fail→pass 4" in res.stdout


def test_a_new_skill_has_no_baseline_at_the_ref(repo, isolated):
    _, suite = repo
    new = write_skill(isolated / "skills", "fresh", body=GOOD)
    res = invoke(
        "validate",
        new,
        "--tasks",
        suite,
        "-t",
        FOLLOW,
        "--baseline",
        "main",
        "--max-regressions",
        "0",
    )
    assert res.exit_code == 0, res.output
    assert "the skill does not exist at main (new skill)" in res.stdout


def test_unknown_ref_exits_2_naming_it(repo):
    skill, suite = repo
    res = invoke("validate", skill, "--tasks", suite, "-t", FOLLOW, "--baseline", "no-such")
    assert res.exit_code == 2
    assert "unknown git ref 'no-such'" in res.stderr


def test_baseline_ref_outside_a_repository_exits_2(isolated):
    skill = write_skill(isolated / "skills", "caps", body=GOOD)
    suite = write_suite(
        isolated / "tasks" / "s.yaml", [{"id": "a", "input": "x", "expected": "X", "split": "test"}]
    )
    res = invoke("validate", skill, "--tasks", suite, "-t", FOLLOW, "--baseline", "main")
    assert res.exit_code == 2 and "not inside a git repository" in res.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--min-score", "1.5"], "--min-score: must be between 0 and 1"),
        (["--max-regressions", "0"], "--max-regressions needs --baseline"),
        (["--split", "val"], "split 'val' is empty"),
        (["--format", "xml"], "choose text or json"),
    ],
)
def test_usage_errors_exit_2(repo, args, message):
    skill, suite = repo
    res = invoke("validate", skill, "--tasks", suite, "-t", FOLLOW, *args)
    assert res.exit_code == 2 and message in res.output


def test_bad_suite_exits_2(repo, isolated):
    skill, _ = repo
    bad = isolated / "tasks" / "bad.yaml"
    bad.write_text("items:\n  - {id: a}\n")
    res = invoke("validate", skill, "--tasks", bad, "-t", FOLLOW)
    assert res.exit_code == 2 and "bad.yaml" in res.stderr and "'a'" in res.stderr


@pytest.mark.parametrize("make", ["missing", "empty"])
def test_a_missing_skill_exits_2_like_eval(repo, isolated, make):
    """No skill to gate is a usage error (exit 2, as eval, train and export say),
    not a skill that failed its checks (exit 1)."""
    _, suite = repo
    where = isolated / "skills" / "nosuch"
    if make == "empty":
        where.mkdir(parents=True)
    res = invoke("validate", where, "--tasks", suite, "-t", FOLLOW)
    assert res.exit_code == 2, res.output
    assert "nosuch" in res.stderr and "FAIL lint" not in res.output


def test_lint_errors_fail_before_any_model_call(isolated, tmp_path):
    model = ScriptedModel(lambda m: "x", name="scripted/counting")
    register_model("scripted/counting", model)
    try:
        bad = write_skill(isolated / "skills", "Bad_Name", body=GOOD)
        suite = write_suite(
            isolated / "tasks" / "s.yaml",
            [{"id": "a", "input": "x", "expected": "X", "split": "test"}],
        )
        res = invoke(
            "validate",
            bad,
            "--tasks",
            suite,
            "-t",
            "scripted/counting",
            "--junit",
            tmp_path / "j.xml",
            "--summary",
            tmp_path / "s.md",
        )
    finally:
        unregister_model("scripted/counting")
    assert res.exit_code == 1
    assert "error: name:" in res.stdout and "FAIL lint" in res.stdout
    assert model.call_count == 0
    xml = valid_junit(tmp_path / "j.xml")
    (checks,) = list(xml)
    assert checks.name == "skillopt.checks" and checks.failures == 1
    assert "lint errors, so no task was run" in (tmp_path / "s.md").read_text()


def test_unscored_tasks_are_skipped_not_failed(isolated, tmp_path):
    skill = write_skill(isolated / "skills", "caps", body=GOOD)
    suite = write_suite(
        isolated / "tasks" / "s.yaml",
        [
            {"id": "ok", "input": "fine", "expected": "FINE", "split": "test"},
            {"id": "down", "input": "boom", "expected": "BOOM", "split": "test"},
        ],
    )
    res = invoke(
        "validate",
        skill,
        "--tasks",
        suite,
        "-t",
        "scripted/scripted_targets:follows_skill_but_boom_fails",
        "--min-score",
        "1",
        "--junit",
        tmp_path / "j.xml",
    )
    assert res.exit_code == 0, res.output  # the unscored task is not a zero
    assert "unscored 1" in res.stdout
    cases = {c.name: c for s in valid_junit(tmp_path / "j.xml") for c in s}
    (skipped,) = cases["down"].result
    assert isinstance(skipped, Skipped) and "provider unavailable (503)" in skipped.message
    assert cases["ok"].is_passed


def test_nothing_scored_fails(isolated):
    skill = write_skill(isolated / "skills", "caps", body=GOOD)
    suite = write_suite(
        isolated / "tasks" / "s.yaml",
        [{"id": "down", "input": "boom", "expected": "BOOM", "split": "test"}],
    )
    res = invoke(
        "validate",
        skill,
        "--tasks",
        suite,
        "-t",
        "scripted/scripted_targets:follows_skill_but_boom_fails",
    )
    assert res.exit_code == 1 and "FAIL scored: none of 1 tasks could be scored" in res.stdout


def test_baseline_rollouts_come_from_the_store_the_second_time(repo, isolated):
    skill, suite = repo
    set_body(skill, BAD)
    args = [
        "validate",
        skill,
        "--tasks",
        suite,
        "-t",
        FOLLOW,
        "--baseline",
        "main",
        "--json",
        "-",
    ]
    first = json.loads(invoke(*args).stdout)
    second = json.loads(invoke(*args).stdout)
    assert first["baseline"]["cached"] == 0 and second["baseline"]["cached"] == 5
    assert second["result"]["cached"] == 5


def test_junit_stays_valid_with_markup_and_control_characters_in_answers(isolated, tmp_path):
    skill = write_skill(isolated / "skills", "caps", body=BAD)
    weird = 'a <b> & "c" ]]> \x1b[31m \x00 é'
    suite = write_suite(
        isolated / "tasks" / "s.yaml",
        [{"id": "weird", "input": weird, "expected": "X", "split": "test"}],
    )
    res = invoke("validate", skill, "--tasks", suite, "-t", FOLLOW, "--junit", tmp_path / "j.xml")
    assert res.exit_code == 0, res.output
    (case,) = [c for s in valid_junit(tmp_path / "j.xml") for c in s if c.name == "weird"]
    (fail,) = case.result
    # markup kept, controls dropped, and the NUL no file can hold replaced when stored
    assert 'answer: a <b> & "c" ]]> [31m \ufffd é' in fail.text


def test_the_schema_rejects_what_consumers_reject(tmp_path):
    """The schema has teeth: a report missing a count, or with its outcome elements
    out of order, does not pass."""
    bad = [
        '<testsuites><testsuite name="s" failures="0" errors="0" time="0" '
        'timestamp="2026-01-01T00:00:00" hostname="h"/></testsuites>',
        '<testsuites><testsuite name="s" tests="1" failures="1" errors="0" time="0" '
        'timestamp="2026-01-01T00:00:00" hostname="h"><testcase name="t" classname="c" '
        'time="0"><failure/><skipped/></testcase></testsuite></testsuites>',
        '<testsuites><testsuite name="s" tests="x" failures="0" errors="0" time="0" '
        'timestamp="2026-01-01T00:00:00" hostname="h"/></testsuites>',
    ]
    for text in bad:
        assert not JUNIT_XSD.is_valid(text), text


def test_through_claude_code_the_summary_says_whether_the_skill_was_invoked(agents, repo, isolated):
    skill, suite = repo
    res = invoke(
        "validate",
        skill,
        "--tasks",
        suite,
        "--harness",
        "claude-code",
        "--baseline",
        "main",
        "--summary",
        isolated / "s.md",
    )
    assert res.exit_code == 0, res.output
    assert "skill loaded in 5/5 tasks (main)" in res.stdout  # the baseline line
    assert "| skill loaded | 5/5 tasks | 5/5 tasks | |" in (isolated / "s.md").read_text()
    assert "warning" not in res.stderr
    agents.configure("claude", invoke=False)  # the agent stops loading the skill
    set_body(skill, GOOD + "\nBe brief.\n")
    res = invoke(
        "validate",
        skill,
        "--tasks",
        suite,
        "--harness",
        "claude-code",
        "--summary",
        isolated / "s.md",
    )
    assert "skill loaded in 0/5 tasks" in res.stdout
    summary = (isolated / "s.md").read_text()
    assert "| skill loaded | 0/5 tasks |" in summary
    # never loaded is loud: one warning line saying what it means and what to do
    assert "warning: the skill loaded in only 0/5 tasks (skill · test): the agent picks a" in (
        " ".join(res.stderr.split())
    )
    assert "⚠️ the skill loaded in only 0/5 tasks" in summary


def test_json_file_keeps_the_text_and_format_json_still_works(repo, isolated):
    """`--json FILE` (as `eval` writes it) leaves the readable text on stdout for the CI
    log; `--json -` and the older `--format json` print the JSON alone."""
    skill, suite = repo
    base = ["validate", skill, "--tasks", suite, "-t", FOLLOW, "--min-score", "0.5"]
    res = invoke(*base, "--json", isolated / "out" / "v.json")
    assert res.exit_code == 0, res.output
    assert "validate passed" in res.stdout
    assert f"wrote {isolated / 'out' / 'v.json'}" in res.stderr
    written = json.loads((isolated / "out" / "v.json").read_text())
    assert written["passed"] is True
    dash = invoke(*base, "--json", "-")
    old = invoke(*base, "--format", "json")
    for r in (dash, old):
        assert r.exit_code == 0, r.output
        data = json.loads(r.stdout)
        assert data["passed"] is True and data["result"]["mean"] == written["result"]["mean"]
    assert invoke(*base, "--format", "text").stdout.rstrip().endswith("validate passed")
