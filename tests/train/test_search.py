"""A search that survives a noisy optimizer: a step's edits are credited one by one,
a repeated candidate never reaches the gate, and a saturated run stops training."""

from __future__ import annotations

import json

import pytest
from train.world import (
    HELPFUL,
    NEUTRAL,
    ScriptedOptimizer,
    edits_reply,
    flags,
    follow_skill,
    neutral,
)

from skillopt import api
from skillopt.models import ScriptedModel, register_model, unregister_model
from skillopt.store.trailers import StepTrailers

BREAKS_KEEP = "Write KEEP items in capitals."  # capitalises keep items: breaks them


def credit_target(messages) -> str:
    """The world's target, and one more rule: `BREAKS_KEEP` turns every keep item into
    capitals (wrong), so it loses exactly the tasks the world's start already passes."""
    system, text = messages[0]["content"], messages[-1]["content"]
    answer = follow_skill(messages)
    if BREAKS_KEEP in system and text.startswith("keep-"):
        answer = answer.upper()
    return answer


@pytest.fixture
def target():
    register_model("scripted/credit-target", ScriptedModel(credit_target))
    yield "scripted/credit-target"
    unregister_model("scripted/credit-target")


def events(run_dir, name):
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == name]


def test_a_two_edit_candidate_with_one_harmful_edit_ends_with_the_good_edit_accepted(
    world, models, target
):
    """The whole gains the 2 word tasks and loses the 2 keep tasks (a tie): the step
    gates its edits apart, keeps the helpful one, and says why for each."""
    opt = ScriptedOptimizer([edits_reply(HELPFUL, BREAKS_KEEP)])
    models["set"](opt)
    result = api.train(world["skill"], world["suite"], **flags(target=target, epochs=1))
    state = json.loads((result.run_dir / "state.json").read_text())
    step = state["steps"][1]
    assert step["decision"] == "accepted" and step["gate"]["candidate_mean"] == 1.0
    assert [(t["label"], t["decision"], t["gains"], t["regressions"]) for t in step["trials"]] == [
        ("all 2 edits", "rejected", ["word-3", "word-4"], ["keep-3", "keep-4"]),
        ("edit 1 alone", "accepted", ["word-3", "word-4"], []),
    ]
    assert [(c["edit"], c["verdict"]) for c in step["credit"]] == [(1, "accepted"), (2, "rejected")]
    assert step["credit"][1]["why"].startswith("left out: edit 1 alone passed the gate without it")
    best = (result.run_dir / "best" / "SKILL.md").read_text()
    assert HELPFUL in best and BREAKS_KEEP not in best
    # both candidates are committed; the one that settled the step carries every verdict
    history = api.run_history(result.run_id)
    first, second = [c for c in history if c.step == 1]
    assert (first.decision, second.decision) == ("rejected", "accepted")
    ev = StepTrailers.parse(second.message)
    assert ev.trial == 2 and ev.credit is not None
    assert ev.credit.startswith("edit 1 accepted: alone, 2 validation tasks gained, 0 lost")
    assert StepTrailers.parse(first.message).trial is None
    # the optimizer is told the harmful edit's own verdict; report.md shows both verdicts
    (rejected,) = state["memory"]["rejected"]
    assert BREAKS_KEEP in rejected["edit"]["content"] and rejected["verdict"].startswith("left out")
    report = (result.run_dir / "report.md").read_text()
    assert "edit 2 rejected: left out: edit 1 alone passed the gate without it" in report
    page = (result.run_dir / "report.html").read_text()
    assert "rejected: left out: edit 1 alone passed the gate without it" in page
    assert "Candidates gated at this step:" in page
    # a decision event per candidate, the second naming its edits
    gates = events(result.run_dir, "decision")
    assert [(g.get("trial"), g["accepted"]) for g in gates if g["step"] == 1] == [
        (None, False),
        ("edit 1 alone", True),
    ]


def test_the_console_names_the_candidate_a_decomposed_step_kept(world, models, target):
    from train.world import train_args
    from typer.testing import CliRunner

    from skillopt.cli.main import app

    models["set"](ScriptedOptimizer([edits_reply(HELPFUL, BREAKS_KEEP)]))
    res = CliRunner().invoke(app, [*train_args(world, target=target), "--epochs", "1"])
    assert res.exit_code == 0, res.output
    lines = [" ".join(line.split()) for line in res.stdout.splitlines()]
    assert any(
        ln.startswith("step 1 rejected val 0.500 (+0.000) · fail→pass 2 · pass→fail 2")
        for ln in lines
    )
    assert any(ln.startswith("step 1 (edit 1 alone) accepted val 1.000 (+0.500)") for ln in lines)


def test_a_repeated_candidate_never_reaches_the_gate(world, models):
    """Step 2 proposes step 1's rejected edit again: the optimizer is asked once more
    (told so), proposes it a third time, and the step makes no candidate; no
    validation rollout is spent on it."""
    same = edits_reply(NEUTRAL)
    opt = ScriptedOptimizer([same, same, same])
    models["set"](opt)
    result = api.train(world["skill"], world["suite"], **flags(epochs=2))
    state = json.loads((result.run_dir / "state.json").read_text())
    step2 = state["steps"][2]
    assert step2["decision"] == "no_candidate"
    assert step2["reason"].startswith(
        "repeats the candidate the gate rejected at step 1 (whitespace aside); asked once more"
    )
    assert len(step2["proposals"]) == 2  # the step's call and its one repair ask
    (repair,) = [p for p in opt.prompts if "NOTE: the edits proposed" in p]
    assert "rebuild exactly the skill the validation gate rejected at step 1" in repair
    labels = [e["label"] for e in events(result.run_dir, "rollout")]
    assert not [x for x in labels if x.startswith("step 2 · val")]
    assert len([c for c in api.run_history(result.run_id) if c.step == 2]) == 0


def test_a_repair_ask_that_gives_something_new_is_gated(world, models):
    opt = ScriptedOptimizer([edits_reply(NEUTRAL), edits_reply(NEUTRAL), edits_reply(HELPFUL)])
    models["set"](opt)
    result = api.train(world["skill"], world["suite"], **flags(epochs=2))
    steps = result.summary["steps"]
    assert [s["decision"] for s in steps] == ["initial", "rejected", "accepted"]


def test_a_saturated_run_makes_no_more_training_rollouts(world, models):
    """Step 1 reaches 1.000 on validation: no later step, slow update or notes runs,
    and the test split is scored as usual."""
    opt = ScriptedOptimizer([edits_reply(HELPFUL)], guidance="- Be brief.")
    models["set"](opt)
    result = api.train(world["skill"], world["suite"], **flags(epochs=3, slow_update=True))
    s = result.summary
    assert [st["decision"] for st in s["steps"]] == ["initial", "accepted"]
    assert s["stopped_early"]["step"] == 1
    assert s["stopped_early"]["reason"].startswith("validation saturated: the skill scores 1.000")
    labels = {e["label"] for e in events(result.run_dir, "rollout")}
    assert not [x for x in labels if x.startswith(("step 2", "slow update"))]
    assert len(opt.prompts) == 1  # one reflection: no slow update, no notes
    assert s["test"]["best"]["mean"] == 1.0
    assert "validation saturated" in (result.run_dir / "report.md").read_text()


def test_a_delete_is_held_apart_from_an_addition(world, models, target):
    """A delete citing the failing tasks beside an addition: the addition is gated
    alone, the delete held back with its reason, which the optimizer reads next."""
    reply = json.loads(edits_reply(HELPFUL))
    reply["edits"].append(
        {
            "op": "delete",
            "anchor": "- Reply with the item only.",
            "rationale": "seen in failures",
            "evidence": ["word-0"],
        }
    )
    opt = ScriptedOptimizer([json.dumps(reply)])
    models["set"](opt)
    result = api.train(world["skill"], world["suite"], **flags(target=target, epochs=1))
    state = json.loads((result.run_dir / "state.json").read_text())
    step = state["steps"][1]
    assert step["decision"] == "accepted" and "trials" not in step
    assert [(c["edit"], c["verdict"]) for c in step["credit"]] == [
        (1, "accepted"),
        (2, "held_back"),
    ]
    best = (result.run_dir / "best" / "SKILL.md").read_text()
    assert "- Reply with the item only." in best
    (held,) = state["memory"]["not_applied"]
    assert held["reason"].startswith("held back: a delete is not gated together with edits")


def test_a_batch_without_failures_reflects_on_failures_elsewhere_in_the_training_split(
    world, models
):
    """Batches of 2: a batch of two keep items fails nothing, so its step shows the
    optimizer the word items the skill fails elsewhere in the training split."""
    opt = ScriptedOptimizer(neutral(4))
    models["set"](opt)
    result = api.train(
        world["skill"], world["suite"], **flags(epochs=1, batch_size=2, minibatch_size=2)
    )
    rollouts = events(result.run_dir, "rollout")
    beyond = {int(e["label"].split()[1]) for e in rollouts if "(beyond the batch)" in e["label"]}
    assert beyond  # some batch held no failure
    state = json.loads((result.run_dir / "state.json").read_text())
    for rec in state["steps"]:
        if rec["step"] in beyond:
            assert rec["failures"] == 2 and all(t.startswith("word-") for t in rec["failing"])
            assert rec["proposals"] and rec["decision"] == "rejected"


def test_the_optimizer_is_told_when_the_run_is_stuck(world, models):
    """Steps 1 and 2 tie on the same skill: step 3's reflection is told to change
    strategy; step 2's is not."""
    opt = ScriptedOptimizer(neutral(3))
    models["set"](opt)
    api.train(world["skill"], world["suite"], **flags(epochs=3, stall_patience=0))
    reflections = [p for p in opt.prompts if "Tasks the agent FAILED" in p]
    assert ["Change strategy" in p for p in reflections] == [False, False, True]
    # and what the last rejected candidate answered on the failures it was meant to fix
    assert (
        "What the candidate rejected at step 2 answered on these failed tasks" in (reflections[2])
    )
    assert "- word-0: 'word-0' (still fails)" in reflections[2]
    assert "answered on these failed tasks" not in reflections[1]
