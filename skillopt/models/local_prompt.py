"""How the embedded base model is prompted: completion-style, the skill (the system
message) first, then the task behind an answer cue, and how that shape is told to
the optimizer.

Invariant: `completion_parts` is the one place the prompt is drawn; `template`,
`format_example` and `describe` show exactly what it draws. A change here changes
what the model answers: bump `PROMPT_FORMAT` (it is in every fingerprint).
"""

from __future__ import annotations

from skillopt.models.base import Prompt, as_messages

NAME = "local/gemma-3-270m"
# bump when the completion prompt changes: it is in every fingerprint. v2: a skill's
# protection markers no longer reach the prompt (the harness sends Skill.for_target);
# a skill without them gets the same prompt as in v1
PROMPT_FORMAT = "v2"

SKILL_PLACEHOLDER = "<the skill body>"
TASK_PLACEHOLDER = "<the task>"


def cue(task: str) -> str:
    """The task behind the answer cue: what the model reads after the skill, and
    continues after `Output:`."""
    return f"Input: {task.strip()}\nOutput:"


def format_example(task_prompt: str, answer: str) -> str:
    """One worked example in the exact shape of the completion prompt's cue, so a
    base model continues the pattern."""
    return f"{cue(task_prompt)} {answer.strip()}"


def completion_parts(prompt: Prompt) -> tuple[str, str]:
    """The completion prompt in its two parts: the skill text (the system message)
    with the blank line after it, shared by every task of a skill, then the task
    behind the answer cue. The model evaluates them as two batches."""
    messages = as_messages(prompt)
    system = "\n\n".join(
        m["content"].strip()
        for m in messages
        if m.get("role") == "system" and m.get("content", "").strip()
    )
    task = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    return (f"{system}\n\n" if system else ""), cue(task)


def completion_prompt(prompt: Prompt) -> str:
    """Skill text (the system message), then the task behind the answer cue."""
    head, tail = completion_parts(prompt)
    return head + tail


def template() -> str:
    """The completion prompt for placeholder messages (`SKILL_PLACEHOLDER` as the
    system message, `TASK_PLACEHOLDER` as the user message): the exact shape every
    prompt has, drawn by `completion_prompt` itself."""
    return completion_prompt(
        [
            {"role": "system", "content": SKILL_PLACEHOLDER},
            {"role": "user", "content": TASK_PLACEHOLDER},
        ]
    )


def describe(*, temperature: float, max_tokens: int) -> str:
    """How the embedded model reads a skill and a task, for the optimizer: the
    template and the example shape come from `template` and `format_example`."""
    sampling = "greedy decoding" if temperature == 0 else f"temperature {temperature:g}"
    example = format_example("<an input>", "<its answer>")
    return (
        f"`{NAME}` is a small *base* model (Gemma 3 270M), not an instruction-tuned "
        "chat model: it continues text rather than following instructions. The system "
        "message (the skill body) and the user message (the task) become one completion "
        "prompt, always exactly this template:\n\n"
        f"```text\n{template()}\n```\n\n"
        f"It writes its answer after `Output:` ({sampling}, at most {max_tokens} tokens) "
        "and stops at the end of the first line, so an answer is a single line. It "
        "imitates the text right before the cue: worked examples in exactly the cue's "
        "shape, each an input and its answer,\n\n"
        f"```text\n{example}\n```\n\n"
        "are what it continues best; rules and explanations in prose tend to help it "
        "far less. The last lines of the skill sit directly before the cue."
    )
