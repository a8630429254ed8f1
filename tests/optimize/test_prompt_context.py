"""What every optimizer prompt says about the target (the harness's description,
the task as the target read it) and, in the reflection prompts, where the run
stands (step, scores, accepted and rejected edits whole, flip counts)."""

from __future__ import annotations

import pytest
from helpers import have_local, write_suite

from skillopt.config import Settings
from skillopt.harness import build_harness
from skillopt.harness.chat import ChatHarness
from skillopt.models import ScriptedModel, local, local_prompt
from skillopt.optimize.base import NO_CONTEXT, RunContext
from skillopt.optimize.memory import Memory
from skillopt.optimize.prompting import NOT_DESCRIBED
from skillopt.optimize.reflect import LLMOptimizer, ProposalRequest
from skillopt.rollouts.engine import Rollout
from skillopt.skill.document import Skill
from skillopt.skill.edits import Edit
from skillopt.suite.loader import load_suite

SKILL = Skill.parse(
    "---\nname: codes\ndescription: Normalise product codes.\n---\n# Codes\n\n- Uppercase.\n"
)
NOTHING = '{"edits": []}'
BLOCK = "Input: tj 192\nOutput: TJ-192\n\nInput: ab 7\nOutput: AB-7\n" + "x" * 120


@pytest.fixture
def tasks(tmp_path):
    path = write_suite(
        tmp_path / "codes.yaml",
        [{"id": "pc-1", "input": "abc 123", "expected": "ABC-123", "split": "train"}],
        prompt="Normalise this product code: {input}",
    )
    return {t.id: t for t in load_suite(path).tasks}


def failed(task_id: str = "pc-1") -> Rollout:
    return Rollout(
        key="k",
        task_id=task_id,
        split="train",
        sample=0,
        skill_hash="h",
        scored=True,
        score=0.0,
        passed=False,
        feedback="wrong",
        answer="abc123",
    )


def reflect_prompt(tasks, context: RunContext = NO_CONTEXT, memory=None, step=3, epoch=1) -> str:
    model = ScriptedModel([NOTHING])
    request = ProposalRequest(
        SKILL, "failures", [failed()], tasks, 2, memory or Memory(), step, epoch, context
    )
    LLMOptimizer(model).propose(request)
    return model.calls[0].messages[-1]["content"]


def all_prompts(tasks, context: RunContext) -> dict[str, str]:
    """The user prompt of every kind the LLM optimizer writes, with `context`."""
    model = ScriptedModel([NOTHING, NOTHING, '{"guidance": "- g"}', '{"notes": "- n"}'])
    opt = LLMOptimizer(model)
    for kind in ("failures", "successes"):
        opt.propose(ProposalRequest(SKILL, kind, [failed()], tasks, 2, Memory(), 1, 0, context))
    opt.slow_update(SKILL, SKILL, "pc-1 improved", Memory(), context)
    opt.meta_notes(1, "Step 1 (step): accepted", context)
    kinds = ("failures", "successes", "slow_update", "meta_notes")
    return {k: c.messages[-1]["content"] for k, c in zip(kinds, model.calls)}


# ---------------------------------------------------------------------------- target
@pytest.mark.skipif(not have_local(), reason='needs pip install -e ".[local]"')
def test_embedded_model_prompt_has_the_cue_template_and_the_task_behind_the_cue(tasks):
    context = RunContext.of(ChatHarness(local.LocalModel()), total_steps=6, epochs=3, val=0.5)
    prompts = all_prompts(tasks, context)
    task = tasks["pc-1"]
    for kind, prompt in prompts.items():
        assert "`local/gemma-3-270m`" in prompt, kind
        assert f"```text\n{local_prompt.template()}\n```" in prompt, kind
        assert "<the skill body>\n\nInput: <the task>\nOutput:" in prompt, kind
    # the reflection prompts show the task as the model read it: the formatter's cue
    cue = local_prompt.completion_prompt(task.prompt)
    assert cue == "Input: Normalise this product code: abc 123\nOutput:"
    for kind in ("failures", "successes"):
        assert (
            f"Input (as the agent saw it, right after the skill):\n```\n{cue}\n```"
            in (prompts[kind])
        )


def test_claude_code_prompt_names_the_install_path_and_loading_by_description(tmp_path, tasks):
    settings = Settings(harness="claude-code", target="sonnet", run_dir=str(tmp_path / "r"))
    context = RunContext.of(build_harness(settings), total_steps=6, epochs=3, val=0.5)
    for kind, prompt in all_prompts(tasks, context).items():
        assert "`.claude/skills/<name>/SKILL.md`" in prompt, kind
        assert "decides from the description whether to load the skill" in prompt, kind
        assert "`sonnet`" in prompt, kind
    # an agent reads the task as it is
    assert "Input (as the agent saw it):\n```\nNormalise this product code: abc 123\n```" in (
        reflect_prompt(tasks, context)
    )


def test_a_target_that_does_not_describe_itself_says_so(tasks):
    class Bare:  # a harness with no `describe_target`
        name = "bare"

    context = RunContext.of(Bare(), total_steps=6, epochs=3, val=0.5)
    assert context.target == "" and context.task_as_seen is None
    for kind, prompt in all_prompts(tasks, context).items():
        assert (
            f"# The target\n\nThe skill is read by this target; write edits that work for it.\n\n{NOT_DESCRIBED}\n"
            in prompt
        ), kind


# ----------------------------------------------------------------------------- state
def test_reflection_prompt_shows_step_scores_and_memory_whole(tasks):
    memory = Memory()
    memory.accept(1, [Edit("add", section="Examples", content=BLOCK)], 0.25, val=0.75, flips=(2, 0))
    memory.reject(
        2,
        [Edit("add", anchor="- Uppercase.", content="- Hyphenate.\n- Never lowercase.")],
        0.0,
        "tie: no improvement on validation",
        flips=(1, 1),
    )
    memory.skip(2, Edit("delete", anchor="`#` heading"), "anchor_not_found")
    memory.note(1, "- examples helped\n- prose did not")
    context = RunContext(total_steps=9, epochs=3, val=0.75)
    prompt = reflect_prompt(tasks, context, memory, step=3, epoch=1)
    state = prompt.split("# Where the run stands\n\n")[1]
    assert state.startswith(
        "Step 3 of 9 (epoch 2 of 3). Validation score of the current skill: 0.750; "
        "best so far: 0.750."
    )
    # the accepted block is in the skill shown: the memory sums it up in one line
    assert f"```\n{BLOCK}\n```" not in prompt.split("# What you know from earlier steps")[1]
    assert "- add under 'Examples': 'Input: tj 192" in prompt
    assert "validation delta +0.250 (2 fail → pass, 0 pass → fail), validation score 0.750" in (
        prompt
    )
    # a tie shows its flips, and the rejected edit is whole too
    assert "validation delta +0.000 (1 fail → pass, 1 pass → fail)" in prompt
    assert "```\n- Hyphenate.\n- Never lowercase.\n```" in prompt
    assert "```\n`#` heading\n```" in prompt and "anchor_not_found" in prompt
    # notes are not a bullet inside a bullet
    assert "After epoch 1:\n- examples helped\n- prose did not" in prompt
    assert "- after epoch" not in prompt


def test_best_can_exceed_the_current_score(tasks):
    memory = Memory()
    memory.accept(1, [Edit("add", content="x")], 0.5, val=0.875)
    prompt = reflect_prompt(tasks, RunContext(total_steps=4, epochs=1, val=0.75), memory)
    assert "current skill: 0.750; best so far: 0.875." in prompt


def test_without_a_context_the_state_is_what_the_request_knows(tasks):
    prompt = reflect_prompt(tasks, step=2)
    assert "Step 2. Validation score of the current skill: n/a; best so far: n/a." in prompt
    assert NOT_DESCRIBED in prompt
    assert "{{" not in prompt


# ----------------------------------------------------------- strategy and guidance form
def test_a_stuck_step_is_told_to_change_strategy(tasks):
    model = ScriptedModel([NOTHING, NOTHING])
    opt = LLMOptimizer(model)
    for stuck in (1, 2):
        opt.propose(
            ProposalRequest(SKILL, "failures", [failed()], tasks, 2, Memory(), 3, 0, stuck=stuck)
        )
    calm, stuck = (c.messages[-1]["content"] for c in model.calls)
    assert "Change strategy" not in calm
    assert "NOTE: the last 2 steps on this same skill were all rejected" in stuck
    assert "take out or rewrite what the skill already says" in stuck


def test_the_slow_update_asks_a_completion_target_for_worked_examples_placed_last(tasks):
    """A target that reads the task behind a cue (a base model) is asked for worked
    examples in the cue's shape, placed last; a chat target for bullets."""
    completion = RunContext(task_as_seen=lambda t: f"Input: {t}\nOutput:")
    chat = RunContext(task_as_seen=None)
    assert completion.completion and not chat.completion
    asked = {
        name: all_prompts(tasks, ctx)["slow_update"].split("# Your job")[1]
        for name, ctx in (("completion", completion), ("chat", chat))
    }
    assert "Write the guidance as worked examples: at most 6" in asked["completion"]
    assert "at the very end of the skill, right before the cue" in asked["completion"]
    assert '{"guidance": "<a worked example in the cue\'s shape>' in asked["completion"]
    assert "at most 6 bullet points" in asked["chat"] and "worked examples:" not in asked["chat"]
    assert '{"guidance": "- first lesson\\n- second lesson"}' in asked["chat"]
