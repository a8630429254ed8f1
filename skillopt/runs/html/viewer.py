"""The run page's answers: every task of every step (and of the test split) in one
table filterable by step, split, outcome, flip and task, each row opening what the
target was sent, its answer, the expected value, score and feedback, the incumbent
beside the candidate (`answers_section`); and the compact form of the answers the
page embeds for its script to open (`embedded`).

Invariants: the table is drawn here with every run text escaped; the texts a row
opens (prompts, answers, feedback: text from a model or a suite) travel in the
page's JSON, each distinct text once (a skill is the prompt of every task it ran),
and the page's script puts them in the page as text, never as markup.
"""

from __future__ import annotations

from html import escape
from typing import Any

from skillopt._util import display
from skillopt.rollouts.view import shown
from skillopt.runs.answers import RunAnswers
from skillopt.runs.html.charts import attr

OUTCOMES = ("pass", "fail", "unscored", "not run")


class _Texts:
    """Each distinct text once, by index."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._at: dict[str, int] = {}

    def __call__(self, text: str | None) -> int | None:
        if text is None:
            return None
        if text not in self._at:
            self._at[text] = len(self.texts)
            self.texts.append(text)
        return self._at[text]


def embedded(found: RunAnswers) -> dict[str, Any]:
    """The answers as the page embeds them: rows whose long texts are indices into
    `texts`."""
    t = _Texts()
    rows = []
    for v in found.views:
        sides = []
        for s in v.sides:
            answers = [
                {
                    "sample": a.sample,
                    "outcome": a.outcome,
                    "score": a.score,
                    "prompt": t(a.prompt),
                    "answer": t(a.answer),
                    "feedback": t(a.feedback or None),
                    "error": t(a.error),
                }
                for a in s.answers
            ]
            sides.append(
                {
                    "label": s.label,
                    "hash": s.skill_hash[:12],
                    "outcome": s.outcome,
                    "score": s.score,
                    "answers": answers,
                }
            )
        rows.append(
            {
                "step": v.step,
                "where": v.where,
                "split": v.split,
                "task": v.task_id,
                "outcome": v.outcome,
                "flip": v.flip,
                "expected": t(None if v.expected is None else shown(v.expected)),
                "sides": sides,
            }
        )
    return {"note": found.note, "rows": rows, "texts": t.texts}


def _select(name: str, label: str, options: list[tuple[str, str]]) -> str:
    opts = "".join(f'<option value="{attr(v)}">{escape(t)}</option>' for v, t in options)
    return f'<label>{escape(label)} <select data-filter="{attr(name)}">{opts}</select></label>'


def _outcome(value: str, score: float | None) -> str:
    text = (
        value
        if score is None or value in ("unscored", "not run")
        else (f"{value} {display.score(score)}")
    )
    return f'<span class="oc {attr(value.replace(" ", "-"))}">{escape(text)}</span>'


def answers_section(d: dict[str, Any]) -> str:
    a = d.get("answers") or {}
    rows = a.get("rows") or []
    if not rows:
        why = a.get("note") or "no rollout of this run was found in its store"
        return f'<p class="empty">No answers to show: {escape(why)}.</p>'
    places: list[str] = []
    for r in rows:
        if r["where"] not in places:
            places.append(r["where"])
    splits = [s for s in ("train", "val", "test") if any(r["split"] == s for r in rows)]
    filters = (
        '<div class="answer-filters">'
        + _select("where", "step", [("", "all"), *((p, p) for p in places)])
        + _select("split", "split", [("", "all"), *((s, s) for s in splits)])
        + _select("outcome", "outcome", [("", "all"), *((o, o) for o in OUTCOMES)])
        + _select(
            "flip",
            "flip",
            [
                ("", "all"),
                ("any", "any flip"),
                ("fail→pass", "fail→pass"),
                ("pass→fail", "pass→fail"),
                ("none", "no flip"),
            ],
        )
        + '<label>task <input type="search" data-filter="task" placeholder="id contains"></label>'
        + f'<span class="answer-count muted">{len(rows)} of {len(rows)} shown</span></div>'
    )
    body = []
    for i, r in enumerate(rows):
        skills = " → ".join(
            f"{escape(s['label'])} {_outcome(s['outcome'], s['score'])}" for s in r["sides"]
        )
        flip = r["flip"] or ""
        body.append(
            f'<tr class="answer-row{" flipped" if flip else ""}" data-i="{i}" '
            f'data-where="{attr(r["where"])}" data-split="{attr(r["split"])}" '
            f'data-outcome="{attr(r["outcome"])}" data-flip="{attr(flip)}" '
            f'data-task="{attr(r["task"])}" tabindex="0">'
            f"<td>{escape(r['where'])}</td><td>{escape(r['split'])}</td>"
            f'<td class="task">{escape(r["task"])}</td>'
            f"<td>{_outcome(r['outcome'], None)}</td><td>{escape(flip)}</td>"
            f"<td>{skills}</td></tr>"
        )
    note = (
        '<p class="muted">Every task the run scored, step by step: at a gate the '
        "incumbent and the candidate on each validation task, on a training batch the "
        "incumbent, on the test split the skill-less model, the initial and the best "
        "skill. Click a row for the prompt as the target saw it, its answer, the "
        "expected value, score and feedback.</p>"
    )
    return (
        note
        + filters
        + '<table class="answers"><thead><tr><th>step</th><th>split</th><th>task</th>'
        "<th>outcome</th><th>flip</th><th>skills</th></tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table>"
    )
