"""`train --part description`: a trigger suite, the router harness with a scripted
router model (the shared routing rule: the listed skill sharing the most content
words with the query, two at least), a scripted optimizer that writes descriptions,
and a library skill whose description collides with the trained one."""

from __future__ import annotations

import json
import subprocess

import pytest
import routing_rule
from helpers import write_suite
from typer.testing import CliRunner

import skillopt
from skillopt.cli.main import app
from skillopt.models import ScriptedModel, register_model, unregister_model
from skillopt.skill.document import Skill

runner = CliRunner()
BODY, START, GOOD = (
    routing_rule.DESCRIBE_BODY,
    routing_rule.DESCRIBE_START,
    routing_rule.DESCRIBE_GOOD,
)
BAD = "Checks <invoice> totals. " + "x" * 2000


@pytest.fixture
def world(isolated):
    world = routing_rule.write_describe_fixture(isolated)  # receipt-scanner collides
    tasks = write_suite(
        isolated / "tasks" / "tasks.yaml", [{"id": "a", "input": "x", "expected": "y"}]
    )
    return {**world, "tasks": tasks}


@pytest.fixture
def optimizer():
    """A scripted optimizer whose replies the test queues (the last one repeats)."""
    replies: list[str] = []

    def answer(messages):
        return replies.pop(0) if len(replies) > 1 else replies[0]

    model = ScriptedModel(answer, name="scripted/describer")
    register_model("scripted/describer", model)
    yield model, replies
    unregister_model("scripted/describer")


def reply(description: str) -> str:
    return json.dumps({"description": description, "rationale": "separate it from receipts"})


def options(world, **extra):
    return {
        "target": "scripted/routing_rule:router",
        "harness": "router",
        "optimizer": "scripted/describer",
        "part": "description",
        "agent": {"library": [str(world["library"])]},
        "epochs": 2,
        "batch_size": 4,
        "concurrency": 1,
        **extra,
    }


def audit_texts(result) -> list[str]:
    """SKILL.md as committed by each audit commit, oldest first."""
    repo, branch = result.audit_repo, result.branch
    shas = subprocess.run(
        ["git", "-C", repo, "rev-list", "--reverse", branch],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    out = []
    for sha in shas:
        files = subprocess.run(
            ["git", "-C", repo, "ls-tree", "-r", "--name-only", sha],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        skill_md = next(f for f in files if f.endswith("SKILL.md"))
        out.append(
            subprocess.run(
                ["git", "-C", repo, "show", f"{sha}:{skill_md}"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
    return out


def test_a_description_that_misses_is_trained_into_one_that_fires(world, optimizer):
    model, replies = optimizer
    replies += [reply(BAD), reply(GOOD)]
    result = skillopt.train(world["skill"], world["suite"], **options(world))
    s = result.summary
    assert s["part"] == "description"
    assert s["description"] == {"initial": START, "best": GOOD, "collisions": ["receipt-scanner"]}
    assert s["initial_val"] == 0.75 and s["best_val"] == 1.0
    assert s["test"]["initial"]["mean"] == 0.5 and s["test"]["best"]["mean"] == 1.0
    best = (result.run_dir / "best" / "SKILL.md").read_text()
    original = (world["skill"] / "SKILL.md").read_text()
    assert best == original.replace(f"description: {START}", f"description: {GOOD}")
    assert Skill.parse(best).body == BODY
    # the optimizer saw the misfire, its load rate, the collision and the limits
    first = model.calls[0].messages[-1]["content"]
    assert "[t2] SHOULD load it; loaded in 0/1 runs" in first
    assert "(loaded instead: receipt-scanner)" in first
    assert "- receipt-scanner: Reads scanned receipt" in first and "[COLLIDES" in first
    assert "1 to 1024 characters; no `<` or `>`" in first and "third person" in first
    assert "[v1]" not in first  # validation queries never reach it
    # the lint-failing description was told back once, and never gated
    repair = model.calls[1].messages[-1]["content"]
    assert "must not contain '<' or '>'" in repair and "at most 1024 characters" in repair
    texts = audit_texts(result)
    assert len(texts) == 2 and all(Skill.parse(t).body == BODY for t in texts)
    assert [Skill.parse(t).description for t in texts] == [START, GOOD]
    report = (result.run_dir / "report.md").read_text()
    assert "## Description" in report and "Collided with: `receipt-scanner`" in report
    assert f"- Best: {GOOD}" in report


def test_a_lint_failing_description_is_never_gated(world, optimizer):
    model, replies = optimizer
    replies += [reply(BAD)]
    result = skillopt.train(world["skill"], world["suite"], **options(world, epochs=1))
    step = result.summary["steps"][1]
    assert step["decision"] == "no_candidate"
    assert "fails lint" in step["reason"] and "told why once" in step["reason"]
    assert model.call_count == 2  # the proposal and its one repair ask
    assert len(audit_texts(result)) == 1  # only the initial skill was committed
    assert result.summary["best_val"] == result.summary["initial_val"]


def test_resume_of_a_killed_description_run_reuses_the_paid_reply(world, optimizer):
    model, replies = optimizer
    calls = {"n": 0}

    def killed(messages):
        calls["n"] += 1
        if calls["n"] == 2:  # killed while waiting for the repair reply
            raise KeyboardInterrupt
        return reply(BAD)

    register_model("scripted/describer", ScriptedModel(killed, name="scripted/describer"))
    res = runner.invoke(
        app,
        [
            "train",
            str(world["skill"]),
            "--tasks",
            str(world["suite"]),
            "--target",
            "scripted/routing_rule:router",
            "--harness",
            "router",
            "--optimizer",
            "scripted/describer",
            "--part",
            "description",
            "--library",
            str(world["library"]),
            "--epochs",
            "2",
            "--batch-size",
            "4",
        ],
    )
    assert res.exit_code != 0 and "--resume" in res.stderr
    run_id = res.stderr.split("--resume ")[1].split("`")[0].strip()
    register_model("scripted/describer", model)
    replies += [reply(GOOD)]
    again = runner.invoke(app, ["train", "--resume", run_id])
    assert again.exit_code == 0, again.stderr
    assert "collided with: receipt-scanner" in again.stdout
    assert model.call_count == 1  # the first reply came from the checkpoint
    assert "lint" in model.calls[0].messages[-1]["content"]  # asked as the repair
    summary = json.loads(
        (next((world["skill"].parents[1] / "runs").glob(f"{run_id}*")) / "summary.json").read_text()
    )
    assert summary["description"]["best"] == GOOD


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["--part", "description", "--tasks", "{tasks}"],
            "--part description trains on a trigger suite",
        ),
        (["--tasks", "{suite}"], "a trigger suite scores whether the agent loads the skill"),
        (["--part", "both", "--tasks", "{suite}"], "--part both trains the body on tasks"),
        (
            ["--part", "description", "--tasks", "{suite}", "--optimizer", "exemplars"],
            "the optimizer exemplars cannot write a description",
        ),
    ],
)
def test_each_refusal_is_one_line_before_any_call(world, optimizer, args, said):
    model, _ = optimizer
    filled = [a.format(**{k: str(v) for k, v in world.items()}) for a in args]
    base = [
        "train",
        str(world["skill"]),
        "--target",
        "scripted/routing_rule:router",
        "--harness",
        "router",
    ]
    if "--optimizer" not in filled:
        base += ["--optimizer", "scripted/describer"]
    res = runner.invoke(app, [*base, *filled])
    assert res.exit_code == 2, res.stderr
    assert res.stderr.count("\n") == 1 and said in res.stderr
    assert model.call_count == 0 and not (world["skill"].parents[1] / "runs").exists()
