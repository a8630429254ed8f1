"""What the optimizer is asked, and when: its calls run on their own concurrency, and
no call is spent where its answer could not be used."""

from __future__ import annotations

import json
import threading

import yaml
from train.world import (
    HELPFUL,
    NEUTRAL,
    PARTIAL,
    ScriptedOptimizer,
    edits_reply,
    flags,
    neutral,
)
from typer.testing import CliRunner

from skillopt import api
from skillopt.cli.main import app
from skillopt.optimize.base import Proposal, ProposalRequest


class Overlapping:
    """An optimizer object that records how many of its calls run at once: each call
    waits (up to a timeout) for a second one to arrive, so calls that may overlap do."""

    name = "overlapping"

    def __init__(self, parties: int = 2, timeout: float = 2.0):
        self.lock = threading.Lock()
        self.active = 0
        self.most = 0
        self.kinds: list[str] = []
        self.barrier = threading.Barrier(parties, timeout=timeout)

    def propose(self, request: ProposalRequest) -> Proposal:
        with self.lock:
            self.kinds.append(request.kind)
            self.active += 1
            self.most = max(self.most, self.active)
        try:
            self.barrier.wait()
        except threading.BrokenBarrierError:
            pass  # alone: the calls ran one after another
        finally:
            with self.lock:
                self.active -= 1
        return Proposal()


def test_reflections_run_at_once_even_when_rollouts_run_one_at_a_time(world, models):
    opt = Overlapping()
    settings = flags(epochs=1, minibatch_size=2, concurrency=1, optimizer_concurrency=2)
    api.train(world["skill"], world["suite"], **(settings | {"optimizer": opt}))
    assert opt.kinds == ["failures", "failures"]  # 4 failures in minibatches of 2
    assert opt.most == 2


def test_optimizer_concurrency_is_a_flag_recorded_with_the_run(world, models):
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    res = CliRunner().invoke(
        app,
        [
            "train",
            str(world["skill"]),
            "--tasks",
            str(world["suite"]),
            "--target",
            "scripted/test-target",
            "--optimizer",
            "scripted/test-optimizer",
            "--epochs",
            "1",
            "--no-slow-update",
            "--concurrency",
            "1",
            "--optimizer-concurrency",
            "3",
        ],
    )
    assert res.exit_code == 0, res.output
    run_id = res.stdout.split("history: git log skillopt/")[1].split()[0]
    config = yaml.safe_load((world["root"] / "runs" / run_id / "run.yaml").read_text())
    assert config["settings"]["concurrency"] == 1
    assert config["settings"]["optimizer_concurrency"] == 3
    plan = api.plan(world["skill"], world["suite"], **flags(optimizer_concurrency=5))
    assert plan.total_steps == 3  # accepted by the dry run's keywords too


def guidance_prompts(opt: ScriptedOptimizer) -> list[str]:
    return [p for p in opt.prompts if '"guidance"' in p]


def notes_prompts(opt: ScriptedOptimizer) -> list[str]:
    return [p for p in opt.prompts if '"notes"' in p]


def test_no_slow_update_when_the_epoch_left_the_skill_unchanged(world, models):
    """Epoch 1 rejects its only candidate: its slow update would compare the skill with
    itself, so it is recorded as skipped with no call, no rollout and no gate. Epoch 2
    accepts one, and its slow update runs."""
    opt = ScriptedOptimizer([edits_reply(NEUTRAL), edits_reply(PARTIAL)], guidance=f"- {HELPFUL}")
    models["set"](opt)
    result = api.train(world["skill"], world["suite"], **flags(epochs=2, slow_update=True))
    steps = result.summary["steps"]
    assert [(s["step"], s["kind"], s["decision"]) for s in steps] == [
        (0, "initial", "initial"),
        (1, "step", "rejected"),
        (2, "slow_update", "skipped"),
        (3, "step", "accepted"),
        (4, "slow_update", "accepted"),
    ]
    assert steps[2]["reason"] == "the skill has not changed since epoch 1 began"
    assert len(guidance_prompts(opt)) == 1  # epoch 2's only
    state = json.loads((result.run_dir / "state.json").read_text())
    assert "gate" not in state["steps"][2] and "commit" not in state["steps"][2]
    labels = {
        json.loads(line).get("label")
        for line in (result.run_dir / "events.jsonl").read_text().splitlines()
    }
    assert "slow update 1 · before" not in labels and "slow update 2 · before" in labels
    assert result.summary["decisions"]["skipped"] == 1
    assert "| 2 | slow update | 1 |" in (result.run_dir / "report.md").read_text()


def test_the_skipped_slow_update_is_printed_with_its_reason(world, models):
    models["set"](ScriptedOptimizer([edits_reply(NEUTRAL)], guidance=f"- {HELPFUL}"))
    res = CliRunner().invoke(
        app,
        [
            "train",
            str(world["skill"]),
            "--tasks",
            str(world["suite"]),
            "--target",
            "scripted/test-target",
            "--optimizer",
            "scripted/test-optimizer",
            "--epochs",
            "1",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "step 2   slow skipped — the skill has not changed since epoch 1 began" in res.stdout
    assert "decisions: 1 rejected, 1 skipped" in res.stdout


def test_no_notes_after_the_last_epoch(world, models):
    opt = ScriptedOptimizer(neutral(3), notes="- neutral advice does nothing")
    models["set"](opt)
    result = api.train(world["skill"], world["suite"], **flags(epochs=3))
    notes = notes_prompts(opt)
    assert len(notes) == 2  # after epochs 1 and 2, read by epochs 2 and 3
    state = json.loads((result.run_dir / "state.json").read_text())
    assert [n["epoch"] for n in state["memory"]["meta_notes"]] == [1, 2]


def test_one_call_per_failures_minibatch_shows_the_successes_and_none_without_failures(
    world, models
):
    """Step 1 has 4 failures and 4 successes in minibatches of 2: two failures calls,
    each showing a sample of the solved tasks, and no call of their own. The helpful
    rule accepted saturates validation: no step 2, no call at all."""
    opt = ScriptedOptimizer([edits_reply(HELPFUL)])
    models["set"](opt)
    result = api.train(world["skill"], world["suite"], **flags(epochs=2, minibatch_size=2))
    assert [s["decision"] for s in result.summary["steps"]] == ["initial", "accepted"]
    assert opt.failure_calls == 2
    assert not [p for p in opt.prompts if "Tasks the agent SOLVED" in p]  # no successes call
    reflect = [p for p in opt.prompts if "Tasks the agent FAILED" in p]
    assert len(reflect) == 2
    for prompt in reflect:
        failed, solved = prompt.split("# Tasks the agent FAILED")[1].split(
            "# Solved tasks to keep solved"
        )
        solved = solved.split("# Where the run stands")[0]
        assert failed.count("## Task word-") == 2 and "## Task keep-" not in failed
        assert solved.count("## Task keep-") == 2 and "## Task word-" not in solved
        assert "(pass)" in solved and "(fail)" not in solved
    state = json.loads((result.run_dir / "state.json").read_text())
    assert [len(s.get("proposals", [])) for s in state["steps"][1:]] == [2]
    # failures (2), and no notes on epoch 1: epoch 2 asks nothing, so nothing would
    # read them
    assert result.summary["accounting"]["optimizer_calls"] == 2


def test_the_slow_update_sees_the_agents_answers_before_and_after(world, models):
    opt = ScriptedOptimizer([edits_reply(PARTIAL)], guidance=f"- {NEUTRAL}")
    models["set"](opt)
    api.train(world["skill"], world["suite"], **flags(epochs=1, slow_update=True))
    (prompt,) = guidance_prompts(opt)
    compared = prompt.split("# How the two did on the same training tasks")[1]
    improved = compared.split("Improved (2):")[1].split("Regressed (0):")[0]
    assert "word-1: input 'word-1' → expected 'WORD-1'" in improved
    assert "answer before 'word-1' → after 'WORD-1'" in improved
    failing = compared.split("Still failing (2):")[1].split("Still passing")[0]
    assert "answer before 'word-0' → after 'word-0'" in failing
    assert "Still passing (4):" in compared and "keep-0" not in compared  # counted only


def test_the_plan_bounds_the_calls_a_run_makes(world, models):
    """The dry run's upper bound holds the worst case of each rule: a batch that fails
    whole, a slow update every epoch, notes after all epochs but the last."""
    settings = flags(epochs=3, batch_size=4, minibatch_size=2, slow_update=True)
    plan = api.plan(world["skill"], world["suite"], **settings)
    assert plan.total_steps == 2 * 3
    # 4 failures in 2 calls per step (no successes call); 3 slow updates; 2 notes
    assert plan.optimizer_calls == 6 * 2 + 3 + 2
    odd = api.plan(world["skill"], world["suite"], **(settings | {"batch_size": 5}))
    assert odd.optimizer_calls == 6 * 3 + 3 + 2  # 5 failures in 3 calls
    one = api.plan(world["skill"], world["suite"], **(settings | {"batch_size": 1}))
    assert one.optimizer_calls == 8 * 3 * 1 + 3 + 2


def test_no_notes_when_no_later_call_would_read_them(world, models):
    """Epoch 1 accepts the helpful rule, which saturates validation: epochs 2 to 4
    are not run, so epoch 1's notes are never asked for."""
    opt = ScriptedOptimizer([edits_reply(HELPFUL)])
    models["set"](opt)
    result = api.train(world["skill"], world["suite"], **flags(epochs=4))
    assert [s["decision"] for s in result.summary["steps"]][1:] == ["accepted"]
    assert notes_prompts(opt) == []
    assert len(opt.prompts) == 1  # the failures call of step 1 (solved tasks folded in)
    state = json.loads((result.run_dir / "state.json").read_text())
    assert state["memory"]["meta_notes"] == [] and state.get("notes_owed", []) == []


def test_notes_are_asked_for_just_before_the_next_epochs_first_reflection(world, models):
    """One step per epoch, each rejected: epoch N's notes are asked for right before
    epoch N + 1's first reflection, on epoch N's steps only, and that reflection
    reads them."""
    opt = ScriptedOptimizer(neutral(3), notes="- neutral advice does nothing")
    models["set"](opt)
    api.train(world["skill"], world["suite"], **flags(epochs=3))

    def kind(prompt: str) -> str:
        return "failures" if "Tasks the agent FAILED" in prompt else "notes"

    assert [kind(p) for p in opt.prompts] == ["failures", "notes"] * 2 + ["failures"]
    first, second = notes_prompts(opt)
    assert "What happened in epoch 1" in first and "Step 1 (step)" in first
    assert "Step 2" not in first
    assert "What happened in epoch 2" in second and "Step 2 (step)" in second
    assert "Step 1" not in second and "Step 3" not in second
    assert "neutral advice does nothing" not in opt.prompts[0]
    assert "neutral advice does nothing" in opt.prompts[2]  # epoch 2's first reflection


def test_a_slow_update_that_repeats_the_guidance_is_not_gated(world, models):
    """The skill already holds guidance (from an earlier run); the slow update gives
    it back spaced differently: no candidate, no validation rollouts for it."""
    from skillopt.skill.document import Skill
    from skillopt.skill.edits import set_guidance

    path = world["skill"] / "SKILL.md"
    skill = set_guidance(Skill.load(world["skill"]), "- Keep answers short.")
    path.write_text(skill.text, encoding="utf-8")
    opt = ScriptedOptimizer([edits_reply(PARTIAL)], guidance="-   Keep answers  short.\n\n")
    models["set"](opt)
    result = api.train(world["skill"], world["suite"], **flags(epochs=1, slow_update=True))
    slow = [s for s in result.summary["steps"] if s["kind"] == "slow_update"]
    assert [(s["decision"], s["reason"]) for s in slow] == [
        ("no_candidate", "the guidance is the one the skill holds already")
    ]
    assert len(guidance_prompts(opt)) == 1
    labels = [
        json.loads(line).get("label")
        for line in (result.run_dir / "events.jsonl").read_text().splitlines()
    ]
    assert not any(str(label).startswith(f"step {slow[0]['step']} · val") for label in labels)
