"""What a finished run tells: the train summary, report.md, `log` and `show`, and
that their test flips are what `validate --baseline` then counts."""

from __future__ import annotations

import json

import git
import pytest
from train.world import HARMFUL, HELPFUL, ScriptedOptimizer, edits_reply, follow_skill, train_args
from typer.testing import CliRunner

from skillopt.cli.common import out
from skillopt.cli.main import app
from skillopt.models import Completion, ScriptedModel, Usage, register_model, unregister_model

runner = CliRunner()
SHOUT_SIX = "Shout item six."


def shouting_target(messages) -> str:
    """The world's target, plus one rule that helps nothing in validation and breaks
    the test item keep-6 (it expects `keep-6`)."""
    answer = follow_skill(messages)
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    return answer.upper() if SHOUT_SIX in system and answer.endswith("-6") else answer


@pytest.fixture
def shouting():
    register_model("scripted/shouting-target", ScriptedModel(shouting_target))
    yield "scripted/shouting-target"
    unregister_model("scripted/shouting-target")


def train(world, target, *extra):
    res = runner.invoke(app, train_args(world, *extra, target=target))
    assert res.exit_code == 0, res.output
    run_id = res.stdout.split("history: git log skillopt/")[1].split()[0]
    return res.stdout, run_id, world["root"] / "runs" / run_id


def test_test_flips_are_shown_and_are_what_validate_counts(world, models, shouting):
    """The README's path: train a committed skill, adopt the best, gate it in CI with
    `validate --baseline master`. The accepted skill fixes word-5 and word-6 on the
    test split but breaks keep-6: the summary and report.md name all three, and
    validate fails with `--max-regressions 0` and passes with the count shown."""
    repo = git.Repo.init(world["root"], initial_branch="master")
    (world["root"] / ".gitignore").write_text("runs/\n")
    repo.index.add([".gitignore", "skills/words/SKILL.md", "tasks/words.yaml"])
    repo.index.commit("the skill as written")
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL, SHOUT_SIX)]))
    out, run_id, run = train(world, shouting, "--epochs", "2")

    flips = "fail→pass 2: word-5, word-6 · pass→fail 1: keep-6"
    assert f"best vs initial (n=4): {flips}" in out
    assert "--max-regressions 1 admits these tasks" in out
    report = (run / "report.md").read_text()
    assert f"Best against initial (n=4): {flips}" in report
    assert "`--max-regressions 1` admits these tasks" in report
    summary = json.loads((run / "summary.json").read_text())
    assert summary["test_flips"] == {
        "n": 4,
        "fail_to_pass": ["word-5", "word-6"],
        "pass_to_fail": ["keep-6"],
    }

    # the run's best/ itself passes validate's lint, though not named after its skill
    best = runner.invoke(
        app,
        ["validate", str(run / "best"), "--tasks", str(world["suite"]), "--target", shouting],
    )
    assert best.exit_code == 0, best.output
    assert "must equal the skill directory name" not in best.output

    adopted = runner.invoke(app, ["adopt", run_id])
    assert adopted.exit_code == 0, adopted.output

    def validate(*extra):
        return runner.invoke(
            app,
            [
                "validate",
                str(world["skill"]),
                "--tasks",
                str(world["suite"]),
                "--target",
                shouting,
                "--baseline",
                "master",
                *extra,
            ],
        )

    strict = validate("--max-regressions", "0")
    assert strict.exit_code == 1 and "1 regression(s) > 0: keep-6" in strict.stdout
    assert validate("--max-regressions", "1").exit_code == 0


def test_report_names_the_gate_reasons_flips_commits_rejected_edits_and_time(world, models):
    nothing = json.dumps({"edits": []})
    models["set"](ScriptedOptimizer([edits_reply(HARMFUL), nothing, edits_reply(HELPFUL)]))
    # every validation task scored, so the reasons are those of the whole split
    out, run_id, run = train(world, "scripted/test-target", "--epochs", "3", "--gate-full")
    state = json.loads((run / "state.json").read_text())
    commits = {rec["step"]: rec["commit"][:8] for rec in state["steps"] if rec.get("commit")}
    report = (run / "report.md").read_text()

    # the gate and its rule: "accepted, p=0.250" is not a contradiction under strict
    assert "- Gate: `strict`: a candidate replaces the incumbent when its mean" in report
    assert "The p-value is shown as evidence only: this gate does not test it" in report
    rows = {
        int(cells[1]): [c.strip() for c in cells[2:-1]]
        for cells in (line.split("|") for line in report.splitlines())
        if len(cells) > 2 and cells[1].strip().isdigit()
    }
    head = [c.strip() for c in report.split("| step |")[1].splitlines()[0].split("|")[:-1]]
    col = {name: i for i, name in enumerate(head)}
    rejected, idle, accepted = rows[1], rows[2], rows[3]
    assert rejected[col["decision"]] == "rejected"
    assert rejected[col["reason"]] == "worse on validation (-0.500)"
    assert (rejected[col["fail→pass"]], rejected[col["pass→fail"]]) == ("0", "2")
    assert (accepted[col["fail→pass"]], accepted[col["pass→fail"]]) == ("2", "0")
    assert rejected[col["commit"]] == commits[1] and accepted[col["commit"]] == commits[3]
    assert rows[0][col["commit"]] == commits[0]
    # a step the optimizer proposed nothing for: the console's words, its reason, no commit
    assert idle[col["decision"]] == "no candidate"
    assert idle[col["reason"]] == "the optimizer proposed no edit"
    assert idle[col["commit"]] == "" and idle[col["fail→pass"]] == ""
    assert all(r[col["time"]].endswith("s") for r in rows.values())
    assert "no_candidate" not in report
    assert "Decisions: 1 rejected, 1 no candidate, 1 accepted" in report
    assert "decisions: 1 rejected, 1 no candidate, 1 accepted" in out
    assert "spent on steps and tests" in report
    # the rejected edit, with why it was rejected
    rejected_section = report.split("## Rejected edits\n")[1].split("\n## ")[0]
    assert (
        f"- step 1 (worse on validation (-0.500)): add under 'Rules': '- {HARMFUL}'"
        in rejected_section
    )
    assert HELPFUL not in rejected_section
    # the progress label of the bare model's test pass reads as the table does
    labels = {
        json.loads(line).get("label")
        for line in (run / "events.jsonl").read_text().splitlines()
        if '"rollout"' in line
    }
    assert "test · no skill" in labels and not any("no_skill" in str(x) for x in labels)


def test_a_free_model_costs_0_everywhere_and_an_unpriced_one_na(world, models):
    """The scripted models cost exactly 0 per call: `$0` in the summary and the report,
    never `$0.0000`. A model with no price shows `n/a` (and only then)."""
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    out, _, run = train(world, "scripted/test-target", "--epochs", "1")
    report = (run / "report.md").read_text()
    assert "cost: target $0, optimizer $0" in out
    assert report.count("cost $0\n") == 2
    assert "cached tokens" not in out + report  # no provider cache: nothing said of one
    assert "$0.0000" not in out + report and "n/a" not in out.split("cost:")[1]

    register_model("scripted/unpriced", ScriptedModel(follow_skill, cost=None))
    try:
        out, _, run = train(world, "scripted/unpriced", "--epochs", "1")
    finally:
        unregister_model("scripted/unpriced")
    assert "cost: target n/a, optimizer $0" in out
    assert "out; cost n/a\n" in (run / "report.md").read_text()


def cached(fn, cached_tokens: int):
    """`fn`'s replies as completions whose prompt was read from a provider's cache
    but for 10 tokens."""

    def reply(messages):
        return Completion(fn(messages), Usage(cached_tokens + 10, 2, cached_tokens), cost=0.0)

    return reply


def test_cached_tokens_are_counted_and_shown_per_role(world, models):
    opt = ScriptedOptimizer([edits_reply(HELPFUL)])
    models["set"](cached(opt, 400))
    register_model("scripted/caching", ScriptedModel(cached(follow_skill, 90)))
    try:
        out, _, run = train(world, "scripted/caching", "--epochs", "1")
    finally:
        unregister_model("scripted/caching")
    acct = json.loads((run / "summary.json").read_text())["accounting"]
    state = json.loads((run / "state.json").read_text())["accounting"]
    assert acct["target_rollouts"] > 0 and acct["optimizer_calls"] > 0
    assert (
        acct["target_cached_tokens"] == 90 * acct["target_calls"] == state["target_cached_tokens"]
    )
    assert acct["target_input_tokens"] == 100 * acct["target_calls"]
    assert acct["optimizer_cached_tokens"] == 400 * acct["optimizer_calls"]
    assert (
        f"cached tokens: target {acct['target_cached_tokens']:,} of "
        f"{acct['target_input_tokens']:,} input tokens, optimizer "
        f"{acct['optimizer_cached_tokens']:,} of {acct['optimizer_input_tokens']:,} "
        "input tokens" in out
    )
    report = (run / "report.md").read_text()
    assert (
        f"- Target tokens: {acct['target_input_tokens']:,} in "
        f"({acct['target_cached_tokens']:,} cached tokens), " in report
    )
    assert f"{acct['optimizer_input_tokens']:,} in ({acct['optimizer_cached_tokens']:,} cached" in (
        report
    )


def test_log_and_show_tell_steps_that_made_no_candidate(world, models, monkeypatch):
    nothing = json.dumps({"edits": []})
    models["set"](ScriptedOptimizer([edits_reply(HARMFUL), nothing, edits_reply(HELPFUL)]))
    _, run_id, _ = train(world, "scripted/test-target", "--epochs", "3", "--gate-full")

    log = runner.invoke(app, ["log", run_id])
    assert log.exit_code == 0, log.output
    rows = [line.split() for line in log.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [r[:2] for r in rows] == [
        ["0", "initial"],
        ["1", "rejected"],
        ["2", "no"],
        ["3", "accepted"],
    ]
    assert rows[2][2:] == ["candidate"]  # no val, no commit: nothing was gated
    # at 80 columns the reasons follow the table; on a wide terminal they are a column
    assert "step 2: the optimizer proposed no edit" in log.stdout
    assert "step 1: worse on validation (-0.500)" in log.stdout
    monkeypatch.setattr(out, "_width", 140)
    wide = runner.invoke(app, ["log", run_id])
    rows = {line.split()[0]: line for line in wide.stdout.splitlines() if line[:4].strip()}
    assert rows["step"].split()[-1] == "reason"
    assert rows["2"].split()[:3] == ["2", "no", "candidate"]
    assert rows["2"].endswith("the optimizer proposed no edit")
    assert rows["1"].rstrip().endswith("worse on validation (-0.500)")

    show = runner.invoke(app, ["show", run_id, "2"])
    assert show.exit_code == 0, show.output
    assert show.stdout.startswith("step 2 made no candidate: the optimizer proposed no edit\n")
    assert "train batch: mean 0.500, 4 failed, 4 passed, 0 unscored" in show.stdout

    diff = runner.invoke(app, ["diff", run_id, "2"])
    assert diff.exit_code == 2
    assert "step 2 made no candidate: the optimizer proposed no edit" in diff.stderr
    assert "nothing was committed" in diff.stderr
    missing = runner.invoke(app, ["show", run_id, "9"])
    assert missing.exit_code == 2 and "has no step 9 (recorded steps: 0 to 3)" in missing.stderr
