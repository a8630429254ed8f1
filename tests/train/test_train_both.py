"""`train --part both`: a task suite naming its trigger suite (`triggers:`), the
routed harness (a scripted chat model that first picks a skill by the shared routing
rule, then answers with the skill it picked), and a scripted optimizer that writes
descriptions and body edits. Each part is gated on its own validation items and must
not make the other part's score fall."""

from __future__ import annotations

import json
import shutil

import pytest
from helpers import write_skill
from train.both_world import BODY, FIRES, RULE, Optimizer, target, write_world
from typer.testing import CliRunner

import skillopt
from skillopt.cli.main import app
from skillopt.models import ScriptedModel, register_model, unregister_model
from skillopt.skill.document import Skill
from skillopt.suite.loader import load_suite

runner = CliRunner()


@pytest.fixture
def world(isolated):
    return write_world(isolated)


@pytest.fixture
def models():
    register_model("scripted/invoice-agent", ScriptedModel(target, name="scripted/invoice-agent"))
    holder: dict = {}

    def optimize(messages):
        return holder["opt"](messages)

    register_model(
        "scripted/both-optimizer", ScriptedModel(optimize, name="scripted/both-optimizer")
    )
    yield holder
    unregister_model("scripted/invoice-agent")
    unregister_model("scripted/both-optimizer")


def options(world, **extra):
    return {
        "target": "scripted/invoice-agent",
        "harness": "routed",
        "optimizer": "scripted/both-optimizer",
        "part": "both",
        "agent": {"library": [str(world["library"])]},
        "epochs": 2,
        "batch_size": 4,
        "concurrency": 1,
        "slow_update": False,
        **extra,
    }


def test_the_suite_names_its_trigger_suite(world):
    suite = load_suite(world["suite"])
    assert not suite.is_triggers and suite.trigger_suite is not None
    assert suite.trigger_suite.is_triggers
    assert [t.id for t in suite.trigger_suite.split("val")] == ["v1", "v2", "v3", "v4"]


def test_both_parts_train_in_turn_each_gated_and_holding_the_other(world, models):
    models["opt"] = opt = Optimizer([FIRES])
    result = skillopt.train(world["skill"], world["suite"], **options(world))
    s = result.summary
    steps = {st["step"]: st for st in s["steps"]}
    # a tasks' batch, then a trigger queries' batch, in turn
    assert opt.asked[:2] == ["body", "description"]
    # step 1: the rule in a body the router never picks changes nothing: a tie
    assert steps[1]["decision"] == "rejected"
    # step 2: the description that fires, gated on the trigger queries, tasks held
    assert steps[2]["decision"] == "accepted"
    # step 3: the rule again, now read: the tasks pass, the trigger queries held
    assert steps[3]["decision"] == "accepted"
    assert s["initial_val"] == 0.0 and s["best_val"] == 1.0
    assert s["test"]["initial"]["mean"] == 0.0 and s["test"]["best"]["mean"] == 1.0
    best = Skill.parse((result.run_dir / "best" / "SKILL.md").read_text())
    assert best.description == FIRES and RULE in best.body
    assert s["part"] == "both" and s["description"]["best"] == FIRES
    assert s["triggers"]["initial"]["recall"] == 0.0 and s["triggers"]["best"]["recall"] == 1.0
    state = json.loads((result.run_dir / "state.json").read_text())
    gates = {r["step"]: r.get("gate") for r in state["steps"]}
    # each gate says what it held: the other part's items, scored before and after
    assert gates[2]["held"] == {
        "part": "tasks", "n": 2, "incumbent_mean": 0.0, "candidate_mean": 0.0
    }  # fmt: skip
    assert gates[3]["held"]["part"] == "trigger queries" and gates[3]["held"]["n"] == 4
    assert gates[3]["held"]["candidate_mean"] == gates[3]["held"]["incumbent_mean"] == 1.0
    report = (result.run_dir / "report.md").read_text()
    assert "Test trigger queries, best: precision 1.00 · recall 1.00" in report


def test_a_description_that_loses_the_tasks_is_rejected(world, models):
    # the incumbent fires on the tasks and reads the rule; the candidate fires on
    # every trigger query of the validation split but no longer on the tasks
    skill = write_skill(
        world["root"] / "skills2",
        "invoice-totals",
        body=BODY.replace("- Be brief.", f"- {RULE}"),
        description="Adds up numbers.",  # misses v1 (1 shared word), fires on the tasks
    )
    narrow = "Checks the tax sum of an invoice."  # fires on v1, on no task
    models["opt"] = Optimizer([narrow])
    result = skillopt.train(skill, world["suite"], **options(world, epochs=1))
    described = [st for st in result.summary["steps"] if st["kind"] == "step" and st["step"] == 2]
    assert described[0]["decision"] == "rejected"
    assert "would fall (1.000 → 0.000)" in described[0]["reason"]
    assert "--part both keeps each part from falling" in described[0]["reason"]
    best = Skill.parse((result.run_dir / "best" / "SKILL.md").read_text())
    assert best.description != narrow


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("triggers: invoices.yaml", "holds tasks: `triggers:` names a trigger suite"),
        ("triggers: ../elsewhere.yaml", "is outside the suite's folder"),
        ("triggers: nowhere.yaml", "no such trigger suite: 'nowhere.yaml'"),
    ],
)
def test_a_bad_triggers_key_is_one_line(world, change, said):
    text = world["suite"].read_text().replace("triggers: invoices-triggers.yaml", change)
    world["suite"].write_text(text)
    res = runner.invoke(app, ["eval", str(world["skill"]), "--tasks", str(world["suite"])])
    assert res.exit_code == 2
    assert res.stderr.count("\n") == 1 and said in res.stderr and "field 'triggers'" in res.stderr


def test_trigger_ids_must_differ_from_task_ids(world):
    path = world["root"] / "tasks" / "invoices-triggers.yaml"
    path.write_text(path.read_text().replace("id: v1", "id: b1"))
    with pytest.raises(skillopt.InputError, match=r"reuses task ids \(b1\)"):
        load_suite(world["suite"])


@pytest.mark.parametrize("which", ["triggers", "plain"])
def test_both_needs_a_task_suite_naming_its_triggers(world, models, which):
    models["opt"] = Optimizer([FIRES])
    suite = world["root"] / "tasks" / "invoices-triggers.yaml"
    if which == "plain":
        suite = world["suite"]
        suite.write_text(suite.read_text().replace("triggers: invoices-triggers.yaml\n", ""))
    args = ["train", str(world["skill"]), "--tasks", str(suite), "--part", "both"]
    args += ["--target", "scripted/invoice-agent", "--harness", "routed"]
    res = runner.invoke(app, [*args, "--optimizer", "scripted/both-optimizer"])
    assert res.exit_code == 2 and res.stderr.count("\n") == 1
    assert "--part both trains the body on tasks and the description on trigger" in res.stderr
    assert ("this suite holds trigger queries" in res.stderr) == (which == "triggers")
    assert not (world["root"] / "runs").exists()


def test_a_both_run_bundles_with_its_trigger_suite_and_replays(world, models, tmp_path):
    # the trigger suite in a folder below the task suite's: the bundle must carry it
    tasks = world["root"] / "tasks"
    (tasks / "triggers").mkdir()
    (tasks / "invoices-triggers.yaml").rename(tasks / "triggers" / "invoices.yaml")
    text = world["suite"].read_text()
    world["suite"].write_text(text.replace("invoices-triggers.yaml", "triggers/invoices.yaml"))
    models["opt"] = Optimizer([FIRES])
    store = tmp_path / "store.sqlite"
    run = skillopt.train(
        world["skill"], world["suite"], **options(world, run_dir=tmp_path / "runs", store=store)
    )
    out = tmp_path / "bundle" / "run.tar.gz"
    args = ["bundle", run.run_id, "--run-dir", str(tmp_path / "runs"), "-o", str(out)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    shutil.rmtree(tmp_path / "runs")
    store.unlink()
    shutil.rmtree(tasks)
    replayed = skillopt.replay(out)
    assert replayed.verdict == "reproduced", replayed.first_difference


def test_each_decision_line_says_what_it_gated_on_and_what_it_held(world, models):
    models["opt"] = Optimizer([FIRES])
    args = ["train", str(world["skill"]), "--tasks", str(world["suite"]), "--part", "both"]
    args += ["--target", "scripted/invoice-agent", "--harness", "routed", "--no-slow-update"]
    args += ["--optimizer", "scripted/both-optimizer", "--library", str(world["library"])]
    res = runner.invoke(app, [*args, "--epochs", "2", "--batch-size", "4"])
    assert res.exit_code == 0, res.output
    said = " ".join(res.stdout.split())
    assert "step 2 accepted trigger queries 1.000 (+0.250)" in said
    assert "· tasks 0.000→0.000 · best 0.000" in said
    assert "step 3 accepted val 1.000 (+1.000)" in said and "trigger queries 1.000→1.000" in said
    assert "test trigger queries (2): precision — → 1.00 · recall 0.00 → 1.00" in said
    # the epoch-1 notes, taken lazily in epoch 2, leave the progress in epoch 2
    assert "step 3 · val (incumbent) · best val 0.000 · epoch 2/2" in res.stderr
