"""`skillopt train`, `log`, `diff`, `show` through the CLI."""

from __future__ import annotations

from train.world import HARMFUL, HELPFUL, ScriptedOptimizer, edits_reply, train_args
from typer.testing import CliRunner

from skillopt.cli.main import app

runner = CliRunner()


def test_a_raced_rejection_shows_no_val_score_and_says_when_it_settled(world, models):
    models["set"](ScriptedOptimizer([edits_reply(HARMFUL), edits_reply(HELPFUL)]))
    res = runner.invoke(app, train_args(world, "--epochs", "2"))
    assert res.exit_code == 0, res.output
    assert (
        "step 1   rejected  val — (+0.000) · best 0.500 — cannot beat the incumbent: "
        "+0.000 on the 2 tasks scored (settled after 2 of 4 validation tasks)"
    ) in res.stdout
    assert "step 2   accepted  val 1.000 (+0.500)" in res.stdout
    assert "validation 0.500 → 1.000" in res.stdout
    # the log says that the raced step's scores are those of the tasks it ran
    run_id = res.stdout.split("history: git log skillopt/")[1].split()[0]
    log = runner.invoke(app, ["log", run_id])
    (row,) = [line for line in log.stdout.splitlines() if line.split()[:2] == ["1", "rejected"]]
    assert row.split()[2:6] == ["0.000→0.000", "+0.000", "1.0000", "2/4"], log.stdout
    assert (
        "step 1 raced: its val and Δ are on the 2 tasks scored, of 4; the rest could not "
        "change the decision"
    ) in log.stdout


def test_train_prints_decisions_and_test_scores(world, models):
    models["set"](ScriptedOptimizer([edits_reply(HARMFUL), edits_reply(HELPFUL)]))
    # --gate-full: the rejected candidate is scored on every task, as shown below
    res = runner.invoke(app, train_args(world, "--epochs", "2", "--gate-full"))
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "tasks: train 8 · val 4 · test 4" in out
    assert "step 0   initial      val 0.500" in out
    assert "step 1   rejected  val 0.000 (-0.500)" in out
    assert "step 2   accepted  val 1.000 (+0.500)" in out
    assert "validation 0.500 → 1.000" in out
    rows = [line.split() for line in out.splitlines()]
    assert ["no", "skill", "0.500", "50.0%", "4"] in rows
    assert ["initial", "0.500", "50.0%", "4"] in rows
    assert ["best", "1.000", "100.0%", "4"] in rows
    assert "decisions: 1 rejected, 1 accepted" in out
    assert "history: git log skillopt/words-" in out
    # the audit repository as the user can reach it from here, not an absolute path
    assert out.rstrip().endswith("  (in runs/audit.git)"), out

    run_id = out.split("history: git log skillopt/")[1].split()[0]
    log = runner.invoke(app, ["log", run_id])
    assert log.exit_code == 0, log.output
    rows = [line.split() for line in log.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [(r[0], r[1]) for r in rows] == [("0", "initial"), ("1", "rejected"), ("2", "accepted")]
    assert "0.500→1.000" in log.stdout and "+0.500" in log.stdout

    diff = runner.invoke(app, ["diff", run_id])
    assert diff.exit_code == 0
    assert f"+- {HELPFUL}" in diff.stdout and HARMFUL not in diff.stdout
    step1 = runner.invoke(app, ["diff", run_id, "1"])
    assert f"+- {HARMFUL}" in step1.stdout

    show = runner.invoke(app, ["show", run_id, "1"])
    assert show.exit_code == 0
    assert "Skillopt-Decision: rejected" in show.stdout
    assert "[applied] add under 'Rules'" in show.stdout
    assert "Flips pass->fail" in show.stdout

    missing = runner.invoke(app, ["show", run_id, "9"])
    assert missing.exit_code == 2 and "has no step 9" in missing.stderr
    nope = runner.invoke(app, ["log", "no-such-run"])
    assert nope.exit_code == 2 and "no run 'no-such-run'" in nope.stderr


def test_dry_run_prints_the_plan(world, models):
    res = runner.invoke(app, train_args(world, "--dry-run", "--epochs", "4"))
    assert res.exit_code == 0, res.output
    assert "dry run: no model was called" in res.stdout
    assert "train 8 · val 4 · test 4" in res.stdout
    assert "edit budget per step: 4 4 3 2" in res.stdout
    assert "target rollouts: at most 64" in res.stdout
    assert models["target"].call_count == 0 and models["optimizer"].call_count == 0


def test_dry_run_with_resume_is_refused_before_anything_runs(world, models):
    res = runner.invoke(app, ["train", "--resume", "some-run", "--dry-run"])
    assert res.exit_code == 2
    assert "--dry-run plans a new run; --resume continues one" in res.stderr
    assert models["target"].call_count == 0 and models["optimizer"].call_count == 0


def test_bad_suite_fails_in_one_line_before_any_call(world, models):
    bad = world["root"] / "bad.yaml"
    bad.write_text("items:\n  - {id: a, input: x, expected: y, scorer: nope}\n")
    res = runner.invoke(
        app,
        [
            "train",
            str(world["skill"]),
            "--tasks",
            str(bad),
            "--target",
            "scripted/test-target",
            "--optimizer",
            "scripted/test-optimizer",
        ],
    )
    assert res.exit_code == 2
    assert res.stderr.count("\n") == 1 and "unknown scorer 'nope'" in res.stderr
    assert models["target"].call_count == 0


def test_resume_finished_run_reports_again(world, models):
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    first = runner.invoke(app, train_args(world, "--epochs", "1"))
    run_id = first.stdout.split("history: git log skillopt/")[1].split()[0]
    calls = models["target"].call_count
    again = runner.invoke(app, ["train", "--resume", run_id])
    assert again.exit_code == 0, again.output
    assert models["target"].call_count == calls
    assert "validation 0.500 → 1.000" in again.stdout


def test_a_runs_best_skill_is_scored_by_its_directory(world, models):
    """`skillopt eval runs/<run-id>/best`, as the README shows it: `best/` is not named
    after the skill, so it is linted under the skill's name, not refused for that."""
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    first = runner.invoke(app, train_args(world, "--epochs", "1"))
    run_id = first.stdout.split("history: git log skillopt/")[1].split()[0]
    res = runner.invoke(
        app,
        [
            "eval",
            f"runs/{run_id}/best",
            "--tasks",
            str(world["suite"]),
            "--target",
            "scripted/test-target",
            "--compare-no-skill",
        ],
    )
    assert res.exit_code == 0, res.output
    rows = [line.split() for line in res.stdout.splitlines()]
    assert ["test", "skill", "1.000", "100.0%", "4"] == next(
        r for r in rows if r[:2] == ["test", "skill"]
    )[:5]
    # a skill directory of the wrong name is still refused
    wrong = world["skill"].parent / "renamed"
    world["skill"].rename(wrong)
    res = runner.invoke(
        app,
        ["eval", str(wrong), "--tasks", str(world["suite"]), "--target", "scripted/test-target"],
    )
    assert res.exit_code == 2 and "must equal the skill directory name" in res.stderr


def test_a_trigger_suite_is_not_trained_on(world, models):
    """Its failures say the description did not make the agent load the skill; no edit
    of the body can change that, so training on one is refused before any call."""
    triggers = world["suite"].with_name("words-triggers.yaml")
    triggers.write_text(
        "name: words-triggers\nitems:\n"
        "  - {id: t1, query: rewrite this word in capitals, should_trigger: true}\n"
        "  - {id: t2, query: what is the weather, should_trigger: false}\n"
    )
    for extra in ([], ["--dry-run"]):
        args = train_args(world)
        args[args.index(str(world["suite"]))] = str(triggers)
        res = runner.invoke(app, [*args, *extra])
        assert res.exit_code == 2, res.output
        assert "a trigger suite scores whether the agent loads the skill" in res.output
        assert models["target"].call_count == 0
