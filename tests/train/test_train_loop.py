"""Training end to end through `skillopt.api.train` with scripted models."""

from __future__ import annotations

import json

import git
import pytest
from train.world import HARMFUL, HELPFUL, NEUTRAL, PARTIAL, ScriptedOptimizer, edits_reply, flags

from skillopt import api
from skillopt.errors import InputError
from skillopt.skill.document import Skill


def decisions(result):
    return [(s["step"], s["decision"]) for s in result.summary["steps"]]


def test_helpful_accepted_harmful_and_tie_rejected(world, models):
    opt = ScriptedOptimizer([edits_reply(HARMFUL), edits_reply(NEUTRAL), edits_reply(HELPFUL)])
    models["set"](opt)
    # every validation task scored: the evidence below is of all four
    result = api.train(world["skill"], world["suite"], **flags(gate_full=True))
    steps = {s["step"]: s for s in result.summary["steps"]}
    assert steps[0]["decision"] == "initial" and steps[0]["val"] == 0.5
    assert steps[1]["decision"] == "rejected" and steps[1]["delta"] == -0.5
    assert steps[2]["decision"] == "rejected" and "tie" in steps[2]["reason"]
    assert steps[3]["decision"] == "accepted" and steps[3]["val"] == 1.0
    assert result.summary["best_val"] == 1.0
    test = result.summary["test"]
    assert test["no_skill"]["mean"] == 0.5 and test["initial"]["mean"] == 0.5
    assert test["best"]["mean"] == 1.0 and test["best"]["n"] == 4
    best = (result.run_dir / "best" / "SKILL.md").read_text()
    assert HELPFUL in best and HARMFUL not in best and NEUTRAL not in best
    assert best.startswith("---\nname: words\ndescription: Demo skill. Use it for tests.\n---\n")
    state = json.loads((result.run_dir / "state.json").read_text())
    gate = state["steps"][1]["gate"]
    assert gate["n"] == 4 and gate["pass_to_fail"] == ["keep-3", "keep-4"]
    assert gate["p_value"] == 1.0
    assert (result.run_dir / "report.md").read_text().count("| rejected |") == 2


def test_the_racing_gate_decides_as_the_full_gate_on_fewer_rollouts(world, models, tmp_path):
    """The default gate stops scoring a candidate once the rest of the validation
    tasks cannot change the decision: the same decisions and best skill as
    --gate-full, fewer candidate rollouts, and the rejections say when they settled."""
    runs = {}
    for full in (True, False):
        models["set"](
            ScriptedOptimizer([edits_reply(HARMFUL), edits_reply(NEUTRAL), edits_reply(HELPFUL)])
        )
        runs[full] = api.train(
            world["skill"],
            world["suite"],
            # one rollout at a time: with more, those in flight when it settles finish too
            **flags(gate_full=full, concurrency=1, store=str(tmp_path / f"{full}.sqlite")),
        )
    full, raced = runs[True].summary, runs[False].summary
    assert decisions(runs[True]) == decisions(runs[False])
    assert full["best_skill_hash"] == raced["best_skill_hash"]
    assert raced["accounting"]["target_rollouts"] < full["accounting"]["target_rollouts"]
    steps = {s["step"]: s for s in raced["steps"]}
    # the harmful edit loses the first two tasks it is scored on (the incumbent's
    # failures, where it cannot gain, first): settled after 2 of 4
    assert steps[1]["reason"].endswith("(settled after 2 of 4 validation tasks)")
    state = json.loads((runs[False].run_dir / "state.json").read_text())
    assert state["steps"][1]["gate"]["unrun"] == 2 and state["steps"][1]["gate"]["n"] == 2
    # an accepted candidate is always scored on every task
    assert steps[3]["decision"] == "accepted" and steps[3]["val"] == 1.0
    assert "unrun" not in state["steps"][3]["gate"]


def test_a_race_decides_on_the_same_tasks_at_any_concurrency(world, models, tmp_path):
    """Rollouts in flight when a race settles are kept but are not evidence: the
    decisions, reasons and evidence are those of one rollout at a time."""
    gates = {}
    for concurrency in (1, 4):
        models["set"](
            ScriptedOptimizer([edits_reply(HARMFUL), edits_reply(NEUTRAL), edits_reply(HELPFUL)])
        )
        result = api.train(
            world["skill"],
            world["suite"],
            **flags(concurrency=concurrency, store=str(tmp_path / f"{concurrency}.sqlite")),
        )
        state = json.loads((result.run_dir / "state.json").read_text())
        gates[concurrency] = [(s["reason"], s.get("gate")) for s in state["steps"][1:]]
    assert gates[1] == gates[4]


def test_memory_reaches_the_next_prompt_and_survives_in_state(world, models):
    opt = ScriptedOptimizer([edits_reply(HARMFUL), edits_reply(HELPFUL)])
    models["set"](opt)
    result = api.train(world["skill"], world["suite"], **flags(epochs=2, gate_full=True))
    failure_prompts = [p for p in opt.prompts if "Tasks the agent FAILED" in p]
    assert HARMFUL not in failure_prompts[0].split("# What you know")[1]
    memory_part = failure_prompts[1].split("# What you know from earlier steps")[1]
    assert "REJECTED" in memory_part and HARMFUL in memory_part and "-0.500" in memory_part
    state = json.loads((result.run_dir / "state.json").read_text())
    assert state["memory"]["rejected"][0]["edit"]["content"] == f"- {HARMFUL}"


def test_not_applied_edits_are_told_back_as_not_applied(world, models):
    bad_anchor = json.dumps(
        {
            "edits": [
                {
                    "op": "replace",
                    "anchor": "text that is not there",
                    "section": None,
                    "content": "x",
                    "rationale": "r",
                    "evidence": [],
                }
            ]
        }
    )
    opt = ScriptedOptimizer([bad_anchor, edits_reply(HELPFUL)])
    models["set"](opt)
    result = api.train(world["skill"], world["suite"], **flags(epochs=2))
    assert decisions(result)[1] == (1, "no_candidate")
    second = [p for p in opt.prompts if "Tasks the agent FAILED" in p][1]
    assert "NOT APPLIED" in second and "anchor_not_found" in second
    assert "REJECTED" not in second


def test_budget_clips_the_proposal(world, models):
    many = edits_reply(HELPFUL, "Note one.", "Note two.", "Note three.", "Note four.")
    models["set"](ScriptedOptimizer([many]))
    result = api.train(world["skill"], world["suite"], **flags(epochs=1, lr=2, min_lr=2))
    state = json.loads((result.run_dir / "state.json").read_text())
    step = state["steps"][1]
    assert step["budget"] == 2
    assert [a["edit"]["content"] for a in step["apply"]] == [f"- {HELPFUL}", "- Note one."]
    clipped = [d for d in step["dropped"] if "budget of 2" in d["reason"]]
    assert len(clipped) == 3


def test_an_edit_carrying_too_much_is_dropped_and_the_optimizer_told(world, models):
    ten = "\n".join(f"- Note {i}." for i in range(10))  # over the default 8 lines per edit
    opt = ScriptedOptimizer([edits_reply(ten[2:]), edits_reply(HELPFUL)])
    models["set"](opt)
    result = api.train(world["skill"], world["suite"], **flags(epochs=2))
    assert decisions(result)[1] == (1, "no_candidate")
    state = json.loads((result.run_dir / "state.json").read_text())
    [dropped] = state["steps"][1]["dropped"]
    assert dropped["edit"]["content"] == ten  # whole, never cut short
    assert dropped["reason"] == (
        "too large: 10 non-blank lines of content, over the limit of 8 per edit"
    )
    first, second = [p for p in opt.prompts if "Tasks the agent FAILED" in p][:2]
    assert (
        "Size: at most 8 non-blank lines of `content` per edit (and 4000 characters) and 24"
        in first
    )
    assert "NOT APPLIED" in second and "too large: 10 non-blank lines" in second


def test_git_history_matches_the_decisions(world, models):
    repo = git.Repo.init(world["root"])
    (world["root"] / ".gitignore").write_text("runs/\n")
    repo.index.add([".gitignore", "skills/words/SKILL.md", "tasks/words.yaml"])
    user_commit = repo.index.commit("user work")
    (world["root"] / "notes.txt").write_text("uncommitted work")
    head_before = repo.head.commit.hexsha
    models["set"](
        ScriptedOptimizer([edits_reply(HARMFUL), edits_reply(NEUTRAL), edits_reply(HELPFUL)])
    )
    result = api.train(world["skill"], world["suite"], **flags(gate_full=True))

    assert result.audit_repo == str(world["root"])
    assert repo.head.commit.hexsha == head_before and repo.active_branch.name in ("master", "main")
    assert repo.untracked_files == ["notes.txt"] and not repo.is_dirty()
    branch = f"skillopt/{result.run_id}"
    first_parent = list(repo.iter_commits(branch, first_parent=True))
    assert [c.hexsha for c in first_parent][-1] == user_commit.hexsha
    ours = first_parent[:-1][::-1]  # initial, then accepted only
    trailers = [
        dict(line.split(": ", 1) for line in c.message.splitlines() if line.startswith("Skillopt-"))
        for c in ours
    ]
    assert [(t["Skillopt-Step"], t["Skillopt-Decision"]) for t in trailers] == [
        ("0", "initial"),
        ("3", "accepted"),
    ]
    assert trailers[1]["Skillopt-Val"] == "0.500 -> 1.000 (n=4)"
    assert trailers[1]["Skillopt-Edits"] == "1 applied, 0 skipped"
    rejected = sorted(
        r.path
        for r in repo.references
        if r.path.startswith(f"refs/skillopt/{result.run_id}/rejected/")
    )
    assert rejected == [
        f"refs/skillopt/{result.run_id}/rejected/1",
        f"refs/skillopt/{result.run_id}/rejected/2",
    ]
    rej = repo.commit(f"refs/skillopt/{result.run_id}/rejected/1")
    assert "Skillopt-Decision: rejected" in rej.message and "Skillopt-Delta: -0.500" in rej.message
    assert rej.parents[0].hexsha == ours[0].hexsha  # hangs off the incumbent
    # each commit changes only the skill directory
    diff = repo.git.diff(user_commit.hexsha, branch, "--stat")
    assert "skills/words/SKILL.md" in diff and diff.count("|") == 1
    total = len(ours) + len(rejected)
    assert total == 4  # initial + three candidates

    history = api.run_history(result.run_id)
    assert [(c.step, c.decision) for c in history] == [
        (0, "initial"),
        (1, "rejected"),
        (2, "rejected"),
        (3, "accepted"),
    ]
    assert HELPFUL in api.run_diff(result.run_id)
    assert HARMFUL in api.run_diff(result.run_id, 1)
    shown = api.run_step(result.run_id, 1)
    assert "[applied] add under 'Rules'" in shown.message
    assert "Flips pass->fail (2): keep-3, keep-4" in shown.message


def test_a_skill_in_a_linked_worktree_trains_into_the_shared_repository(world, models, tmp_path):
    """In a `git worktree`, objects live in the main repository's .git, not in the
    worktree's own git directory."""
    repo = git.Repo.init(world["root"])
    (world["root"] / ".gitignore").write_text("runs/\n")
    repo.index.add([".gitignore", "skills/words/SKILL.md", "tasks/words.yaml"])
    repo.index.commit("user work")
    linked = tmp_path / "linked"
    repo.git.worktree("add", "-b", "side", str(linked))
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    result = api.train(
        linked / "skills" / "words", linked / "tasks" / "words.yaml", **flags(epochs=1)
    )
    assert [s["decision"] for s in result.summary["steps"]] == ["initial", "accepted"]
    branch = f"skillopt/{result.run_id}"
    assert HELPFUL in repo.git.show(f"{branch}:skills/words/SKILL.md")  # seen from main
    assert git.Repo(linked).active_branch.name == "side"


def test_outside_a_repository_history_lives_in_runs(world, models):
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    result = api.train(world["skill"], world["suite"], **flags(epochs=1))
    assert result.audit_repo.endswith("runs/audit.git")
    assert not (world["root"] / ".git").exists()
    repo = git.Repo(result.audit_repo)
    assert repo.bare
    tip = repo.commit(f"skillopt/{result.run_id}")
    assert sorted(b.path for b in tip.tree.traverse() if b.type == "blob") == [
        "skills/words/SKILL.md"
    ]


def test_resume_after_a_crash_redoes_no_finished_work(world, models):
    calls_before: list[tuple[str, str]] = []
    target = models["target"]
    crashing = ScriptedOptimizer([edits_reply(HARMFUL), edits_reply(HELPFUL)], crash_at=2)
    models["set"](crashing)
    with pytest.raises(RuntimeError, match="simulated crash"):
        api.train(world["skill"], world["suite"], **flags(epochs=3))
    calls_before = [(m.messages[0]["content"], m.messages[-1]["content"]) for m in target.calls]
    assert crashing.failure_calls == 2
    run_dir = next(p for p in (world["root"] / "runs").iterdir() if (p / "run.yaml").exists())
    state = json.loads((run_dir / "state.json").read_text())
    assert state["step"] == 1 and state["steps"][1]["decision"] == "rejected"

    resumed_opt = ScriptedOptimizer([edits_reply(HELPFUL)])
    models["set"](resumed_opt)
    target.calls.clear()
    result = api.resume(run_dir.name, concurrency=flags()["concurrency"])
    calls_after = [(m.messages[0]["content"], m.messages[-1]["content"]) for m in target.calls]
    assert not set(calls_before) & set(calls_after)  # no finished rollout was run again
    # step 1 is not redone: one failures prompt (step 2), whose acceptance saturates
    # validation, so step 3 is not run
    assert resumed_opt.failure_calls == 1
    assert decisions(result) == [
        (0, "initial"),
        (1, "rejected"),
        (2, "accepted"),
    ]
    assert result.summary["stopped_early"]["reason"].startswith("validation saturated")
    assert result.summary["best_val"] == 1.0
    history = api.run_history(result.run_id)
    assert [c.step for c in history] == [0, 1, 2]  # every step committed exactly once


def test_resume_does_not_ask_again_for_notes_already_paid_for(world, models):
    """Epoch 1's notes are asked for before epoch 2's first reflection, which then
    crashes: the resumed run reflects on step 2 again but reads the notes it has."""
    crashing = ScriptedOptimizer(
        [edits_reply(HARMFUL), edits_reply(HELPFUL)], notes="- harmful rules fail", crash_at=2
    )
    models["set"](crashing)
    with pytest.raises(RuntimeError, match="simulated crash"):
        api.train(world["skill"], world["suite"], **flags(epochs=3))
    assert len([p for p in crashing.prompts if '"notes"' in p]) == 1
    run_dir = next(p for p in (world["root"] / "runs").iterdir() if (p / "run.yaml").exists())
    state = json.loads((run_dir / "state.json").read_text())
    assert state["memory"]["meta_notes"] == [{"epoch": 1, "notes": "- harmful rules fail"}]
    assert "notes_owed" not in state

    resumed_opt = ScriptedOptimizer([edits_reply(HELPFUL)])
    models["set"](resumed_opt)
    result = api.resume(run_dir.name, concurrency=flags()["concurrency"])
    assert [p for p in resumed_opt.prompts if '"notes"' in p] == []
    assert resumed_opt.failure_calls == 1
    assert "harmful rules fail" in resumed_opt.prompts[0]
    assert result.summary["best_val"] == 1.0


def test_slow_update_is_gated(world, models):
    # the step's edit is accepted (0.5 -> 0.75), so the epoch changed the skill
    harmful = ScriptedOptimizer([edits_reply(PARTIAL)], guidance=f"- {HARMFUL}")
    models["set"](harmful)
    result = api.train(world["skill"], world["suite"], **flags(epochs=1, slow_update=True))
    slow = [s for s in result.summary["steps"] if s["kind"] == "slow_update"]
    assert len(slow) == 1 and slow[0]["decision"] == "rejected"
    best = (result.run_dir / "best" / "SKILL.md").read_text()
    assert "Lessons from training" not in best

    helpful = ScriptedOptimizer([edits_reply(PARTIAL)], guidance=f"- {HELPFUL}")
    models["set"](helpful)
    # a store of its own: in the first one, the same optimizer (by name) asked the same
    # slow-update prompt, and its stored reply would be served again
    result = api.train(
        world["skill"],
        world["suite"],
        **flags(epochs=1, slow_update=True, store="runs/other.sqlite"),
    )
    slow = [s for s in result.summary["steps"] if s["kind"] == "slow_update"]
    assert slow[0]["decision"] == "accepted" and slow[0]["val"] == 1.0
    best = Skill.load(result.run_dir / "best")
    assert "<!-- skillopt:protected guidance -->" in best.body and HELPFUL in best.body


def test_meta_notes_reach_the_next_epoch(world, models):
    opt = ScriptedOptimizer(
        [edits_reply(NEUTRAL), edits_reply(HELPFUL)], notes="- neutral advice does nothing"
    )
    models["set"](opt)
    api.train(world["skill"], world["suite"], **flags(epochs=2))
    second = [p for p in opt.prompts if "Tasks the agent FAILED" in p][1]
    assert "After epoch 1:\n- neutral advice does nothing" in second


def test_bad_optimizer_replies_are_skipped_and_the_run_goes_on(world, models):
    unknown_op = json.dumps(
        {
            "edits": [
                {
                    "op": "rewrite",
                    "anchor": "x",
                    "section": None,
                    "content": "y",
                    "rationale": "",
                    "evidence": [],
                }
            ]
        }
    )
    opt = ScriptedOptimizer(
        [("not json at all", "still not json"), (unknown_op, unknown_op), edits_reply(HELPFUL)]
    )
    models["set"](opt)
    result = api.train(world["skill"], world["suite"], **flags())
    assert decisions(result)[1:] == [(1, "no_candidate"), (2, "no_candidate"), (3, "accepted")]
    state = json.loads((result.run_dir / "state.json").read_text())
    skipped = [p["skipped"] for s in state["steps"][1:3] for p in s["proposals"] if p["skipped"]]
    assert skipped[0].startswith("invalid reply after one repair: the reply contains no JSON")
    assert skipped[1].startswith("invalid reply after one repair: edits.0.op")
    assert result.summary["accounting"]["skipped_minibatches"] == 2
    assert result.summary["accounting"]["optimizer_calls"] >= 5  # two repairs happened


def test_target_failures_are_unscored_not_zero(world, models):
    from train.world import follow_skill

    from skillopt.errors import ModelError

    def flaky(messages):
        if messages[-1]["content"] == "keep-0":
            raise ModelError("provider overloaded", kind="server")
        return follow_skill(messages)

    models["target"]._fn = flaky
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    result = api.train(world["skill"], world["suite"], **flags(epochs=1))
    acct = result.summary["accounting"]
    assert acct["unscored_rollouts"] >= 1
    state = json.loads((result.run_dir / "state.json").read_text())
    assert state["steps"][1]["unscored"] == 1
    assert state["steps"][1]["train_mean"] == pytest.approx(3 / 7)  # 7 scored, 3 pass


def test_input_errors_come_before_any_model_call(world, models):
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    bad = world["root"] / "bad.yaml"
    bad.write_text("items:\n  - {id: a, input: x}\n")
    with pytest.raises(InputError, match="field 'expected'"):
        api.train(world["skill"], bad, **flags())
    only_test = world["root"] / "test-only.yaml"
    only_test.write_text("items:\n  - {id: a, input: x, expected: x, split: test}\n")
    with pytest.raises(InputError, match="split 'train' is empty"):
        api.train(world["skill"], only_test, **flags())
    with pytest.raises(InputError, match="optimizer: unknown model"):
        api.train(world["skill"], world["suite"], **flags(optimizer="nope-model"))
    with pytest.raises(InputError, match="no optimizer"):
        api.train(world["skill"], world["suite"], **flags(optimizer=None))
    assert models["target"].call_count == 0 and models["optimizer"].call_count == 0
    assert not (world["root"] / "runs").exists()


def test_dry_run_plans_without_model_calls(world, models):
    plan = api.plan(world["skill"], world["suite"], **flags(epochs=4, lr=4, min_lr=2))
    assert (plan.n_train, plan.n_val, plan.n_test) == (8, 4, 4)
    assert plan.total_steps == 4 and plan.budgets == [4, 4, 3, 2]
    # initial val 4 + 4 steps * (8 train + 4 val) + test 3 * 4
    assert plan.target_rollouts == 4 + 4 * 12 + 12
    # one failures call per step (8 tasks, minibatches of 40), notes after each epoch
    # but the last
    assert plan.optimizer_calls == 4 * 1 + 3
    assert plan.cost == 0.0
    assert models["target"].call_count == 0 and models["optimizer"].call_count == 0
    assert not (world["root"] / "runs").exists()


def test_ctrl_c_says_how_to_resume(world, models):
    from skillopt.errors import Interrupted

    models["set"](ScriptedOptimizer([edits_reply(HARMFUL)], crash_at=1, crash=KeyboardInterrupt))
    with pytest.raises(Interrupted, match=r"skillopt train --resume words-\d{8}-\d{6}-"):
        api.train(world["skill"], world["suite"], **flags(epochs=2))


@pytest.mark.parametrize(
    "kind, expected, match",
    [
        ("server", "NothingScored", "first error: provider down"),  # each task fails on its own
        (
            "auth",
            "SystemicFailure",
            r"4 tasks in a row failed the same way \(auth\): provider down",
        ),
    ],
)
def test_nothing_scored_stops_before_spending_optimizer_calls(world, models, kind, expected, match):
    from skillopt import errors
    from skillopt.errors import ModelError

    calls = []

    def down(messages):
        calls.append(1)
        raise ModelError("provider down", kind=kind, retryable=False)

    models["target"]._fn = down
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    with pytest.raises(getattr(errors, expected), match=match):
        api.train(world["skill"], world["suite"], **flags(epochs=1))
    assert models["optimizer"].call_count == 0
    if kind == "auth":  # a split smaller than the breaker's 5: all of it, and no more
        assert len(calls) == 4


def test_a_best_skill_that_is_the_initial_one_is_not_scored_twice(world, models):
    models["set"](ScriptedOptimizer([edits_reply(NEUTRAL)]))
    result = api.train(world["skill"], world["suite"], **flags(epochs=1))
    assert [s["decision"] for s in result.summary["steps"]] == ["initial", "rejected"]
    test = result.summary["test"]
    assert test["best"] == test["initial"]
    labels = [
        json.loads(line).get("label")
        for line in (result.run_dir / "events.jsonl").read_text().splitlines()
    ]
    assert "test · initial" in labels and "test · best" not in labels
