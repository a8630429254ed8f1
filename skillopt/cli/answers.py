"""Answers in the terminal (`skillopt show RUN STEP [--task ID]`, `skillopt eval
--show-failures`): a step's tasks with their outcome and flip, one task's prompt as
the target saw it, its answer, the expected value, score and feedback, the
incumbent beside the candidate.

Invariant: every text drawn here came from outside (a model, an agent, a suite) and
is escaped for rich's markup; long texts are cut to their head and tail, saying
how much was left out, unless `full`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.markup import escape
from rich.table import Table

from skillopt._util import display
from skillopt.cli.common import out

if TYPE_CHECKING:
    from skillopt.api import Answer, TaskView

# a prompt (the skill and the task) runs long: its head and its tail (where the task
# is) are what a reader looks for first
HEAD, TAIL, MAX_CHARS = 8, 8, 1200
_STYLE = {"pass": "green", "fail": "red", "unscored": "yellow"}


def outcome(value: str, score: float | None = None) -> str:
    """`pass 1.000` in colour (markup)."""
    text = value if score is None or value in ("unscored", "not run") else f"{value} {score:.3f}"
    style = _STYLE.get(value)
    return f"[{style}]{text}[/]" if style else text


def listing(views: list[TaskView]) -> None:
    """A step's tasks, a row each: split, task, each skill's outcome, flip."""
    labels: list[str] = []
    for v in views:
        for s in v.sides:
            if s.label not in labels:
                labels.append(s.label)
    table = Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), collapse_padding=True
    )
    table.add_column("split", no_wrap=True)
    table.add_column("task", overflow="fold")
    for label in labels:
        table.add_column(label, no_wrap=True)
    table.add_column("flip", no_wrap=True)
    for v in views:
        by = {s.label: s for s in v.sides}
        cells = [outcome(by[x].outcome, by[x].score) if x in by else "" for x in labels]
        table.add_row(v.split, escape(v.task_id), *cells, v.flip or "")
    out.print(table)


def task(view: TaskView, *, full: bool = False) -> None:
    """One task at one place: expected value, then each skill's prompt, answer,
    score and feedback (every sample of it)."""
    flip = f" · {view.flip}" if view.flip else ""
    out.print(
        f"[bold]{escape(view.task_id)}[/] · {view.where} · {view.split}{flip}", soft_wrap=True
    )
    first = next((a for s in view.sides for a in s.answers), None)
    expected = first.expected if first is not None else view.expected
    block("expected", display_value(expected), full=full)
    for side in view.sides:
        out.print()
        out.print(
            f"[bold]── {escape(side.label)}[/] ({side.skill_hash[:12]}) · "
            f"{outcome(side.outcome, side.score)}",
            soft_wrap=True,
        )
        if not side.answers:
            out.print("  (not run: no rollout of this skill on this task)")
        for a in side.answers:
            answer(a, full=full, samples=len(side.answers) > 1, expected=False)


def answer(a: Answer, *, full: bool = False, samples: bool = False, expected: bool = True) -> None:
    """One rollout: prompt, answer (or the error that left it unscored), expected,
    score and feedback."""
    if samples:
        out.print(f"  sample {a.sample}: {outcome(a.outcome, a.score)}")
    block("prompt", a.prompt or "(not recorded)", full=full)
    if a.error:
        block("error", a.error, full=full)
    block("answer", "(none)" if a.answer is None else a.answer, full=full)
    if expected:
        block("expected", display_value(a.expected), full=full)
    if a.scored:
        out.print(f"  score: {display.score(a.score)} ({a.outcome})")
    if a.feedback:
        block("feedback", a.feedback, full=full)


def display_value(value: object) -> str:
    if value is None:
        return "(not recorded)"
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value, ensure_ascii=False, default=str)


def block(label: str, text: str, *, full: bool) -> None:
    """`label: text` on one line when it fits one line, else the text indented under
    its label, cut to its head and tail unless `full`."""
    shown = text if full else cut(text)
    if "\n" not in shown and len(shown) <= 100:
        out.print(f"  {label}: {escape(shown)}", soft_wrap=True, highlight=False)
        return
    out.print(f"  {label}:")
    for line in shown.splitlines() or [""]:
        out.print(f"    {escape(line)}", soft_wrap=True, highlight=False)


def cut(text: str) -> str:
    """`text`, or its first and last lines with a line saying how many were left
    out (`--full` shows them)."""
    lines = text.splitlines()
    if len(lines) > HEAD + TAIL + 1:
        hidden = len(lines) - HEAD - TAIL
        lines = [*lines[:HEAD], f"… {hidden} more lines (--full shows them) …", *lines[-TAIL:]]
    joined = "\n".join(lines)
    if len(joined) > MAX_CHARS:
        left = len(joined) - MAX_CHARS
        joined = (
            joined[: MAX_CHARS // 2]
            + f" … {left} more characters (--full) … "
            + joined[-MAX_CHARS // 2 :]
        )
    return joined
