"""The run page's answers: every task of every step (and of the test split) in one
table filterable by step, split, outcome, flip and task, each row opening what the
target was sent, its answer, the expected value, score and feedback, the incumbent
beside the candidate (`answers_section`: the filters and an empty table, which the
page's script fills); and the compact form of the answers the page embeds for its
script to draw (`embedded`).

Invariants: the rows are drawn by the page's script from the page's JSON, only
those that match the filters and a few hundred at a time (a large run has
thousands); the texts they open (prompts, answers, feedback: text from a model or a
suite) travel in that JSON, each distinct text once (a skill, however many prompts
it opened), and the script puts them in the page as text, never as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from skillopt.rollouts.view import Answer, outcome_of, shown
from skillopt.runs.answers import RunAnswers, Side, TaskView
from skillopt.runs.html.charts import attr

OUTCOMES = ("pass", "fail", "unscored", "not run")
SPLITS = ("train", "val", "test")
# what each array of the embedded answers holds, in order (also in the JSON, as
# `fields`): a name in `names` is an index into the list of that name, a text an
# index into `texts`, a prompt one index or a list of indices whose texts joined
# are the prompt; an answer's trailing nulls are left out
FIELDS = {
    "row": ["place", "split", "task", "outcome", "flip", "expected: text", "sides"],
    "side": ["label", "skill", "outcome", "score", "answers"],
    "answer": [
        "sample",
        "outcome",
        "score",
        "prompt",
        "answer: text",
        "feedback: text",
        "error: text",
    ],
}
_NAMES = ("places", "splits", "outcomes", "flips", "labels", "skills")


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


def _number(value: float | None) -> float | int | None:
    """A score as JSON writes it shortest (`1`, not `1.0`)."""
    return int(value) if value is not None and float(value).is_integer() else value


def _trimmed(values: list[Any]) -> list[Any]:
    while values and values[-1] is None:
        values.pop()
    return values


class _Encoder:
    """The answers as arrays of indices: the texts, and a list per kind of name."""

    def __init__(self) -> None:
        self.texts = _Texts()
        self.names = {n: _Texts() for n in _NAMES}
        for s in SPLITS:
            self.names["splits"](s)
        for o in OUTCOMES:
            self.names["outcomes"](o)
        # the same prompt recurs at every step its skill and task ran together
        self._prompts: dict[str, int | list[int]] = {}

    def name(self, kind: str, value: str | None) -> int | None:
        return self.names[kind](value)

    def prompt(self, a: Answer) -> int | list[int]:
        """The prompt as the texts it is made of: each message's content apart from
        what surrounds it, so that a skill (the system message of every task it ran)
        is kept once, not once per task; their texts joined are the prompt exactly."""
        if a.prompt in self._prompts:
            return self._prompts[a.prompt]
        prompt, at, parts = a.prompt, 0, []
        for m in a.messages:
            content = str(m["content"])
            found = prompt.find(content, at) if content else -1
            if found < 0:
                continue
            if found > at:
                parts.append(prompt[at:found])
            parts.append(content)
            at = found + len(content)
        if at < len(prompt) or not parts:
            parts.append(prompt[at:])
        idx = [i for i in map(self.texts, parts) if i is not None]
        self._prompts[prompt] = idx[0] if len(idx) == 1 else idx
        return self._prompts[prompt]

    def answer(self, a: Answer) -> list[Any]:
        t = self.texts
        return _trimmed(
            [
                a.sample,
                self.name("outcomes", a.outcome),
                _number(a.score),
                self.prompt(a),
                t(a.answer),
                t(a.feedback or None),
                t(a.error),
            ]
        )

    def side(self, s: Side) -> list[Any]:
        outcome, score = outcome_of(s.answers)
        return [
            self.name("labels", s.label),
            self.name("skills", s.skill_hash[:12]),
            self.name("outcomes", outcome),
            _number(score),
            [self.answer(a) for a in s.answers],
        ]

    def row(self, v: TaskView) -> list[Any]:
        sides = [self.side(s) for s in v.sides]
        return [
            self.name("places", v.where),
            self.name("splits", v.split),
            v.task_id,
            # the outcome of the side this place is about (`TaskView.outcome`)
            sides[-1][2] if sides else self.name("outcomes", v.outcome),
            self.name("flips", v.flip),
            self.texts(None if v.expected is None else shown(v.expected)),
            sides,
        ]


def embedded(found: RunAnswers) -> dict[str, Any]:
    """The answers as the page embeds them: a row, a side and an answer each an
    array (`FIELDS`), their names and long texts indices into short lists."""
    enc = _Encoder()
    rows = [enc.row(v) for v in found.views]
    lists = {n: enc.names[n].texts for n in _NAMES}
    return {"note": found.note, "fields": FIELDS, **lists, "rows": rows, "texts": enc.texts.texts}


def _select(name: str, label: str, options: Sequence[tuple[str, str]]) -> str:
    opts = "".join(f'<option value="{attr(v)}">{escape(t)}</option>' for v, t in options)
    return f'<label>{escape(label)} <select data-filter="{attr(name)}">{opts}</select></label>'


def answers_section(d: dict[str, Any]) -> str:
    """The filters, an empty table and a button for more rows: the page's script
    draws the rows that match from the page's JSON."""
    a = d.get("answers") or {}
    rows = a.get("rows") or []
    if not rows:
        why = a.get("note") or "no rollout of this run was found in its store"
        return f'<p class="empty">No answers to show: {escape(why)}.</p>'
    names = a.get("splits") or []
    present = {names[r[1]] for r in rows}
    splits = [s for s in SPLITS if s in present]
    filters = (
        '<div class="answer-filters">'
        + _select("where", "step", [("", "all"), *((p, p) for p in a.get("places") or [])])
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
        + '<span class="answer-count muted"></span></div>'
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
        + f'<noscript><p class="empty">The {len(rows):,} answers need the page\'s script: '
        "open the page in a browser with scripts on, or read them with "
        "<code>skillopt show RUN STEP --task ID</code>.</p></noscript>"
        + '<table class="answers"><thead><tr><th>step</th><th>split</th><th>task</th>'
        "<th>outcome</th><th>flip</th><th>skills</th></tr></thead><tbody></tbody></table>"
        '<p><button type="button" class="answer-more" hidden>show more</button></p>'
    )
