"""The matrix of a skill over targets and harnesses as one self-contained HTML page
(`skillopt eval … --html FILE`): the table the terminal prints, and each task's
outcome with the skill in every cell, in the run report's frame and style.

Invariant: the page is the run report's frame (`runs.html.document`): whole as
written, nothing loads, every text from a suite, a model or an agent escaped.
"""

from __future__ import annotations

from html import escape
from typing import Any

from skillopt._util import display
from skillopt.eval.matrix import Cell, MatrixResult
from skillopt.rollouts.outcomes import task_outcomes
from skillopt.runs.html.charts import attr
from skillopt.runs.html.document import document


def render_matrix(result: MatrixResult) -> str:
    """The whole page: header, the matrix table, the per-task outcomes."""
    header = (
        f"<h1>Matrix · {escape(result.skill)} on {escape(result.suite)}</h1>"
        f'<p class="facts"><span>skill <b>{escape(result.skill_hash[:12])}</b></span>'
        f"<span>split <b>{escape(result.split)}</b></span>"
        f"<span>cells <b>{len(result.cells)}</b></span>"
        f"<span>scored <b>{sum(1 for c in result.cells if c.scored)}</b></span></p>"
    )
    sections = [
        ("matrix", "Target × harness", _table(result)),
        ("tasks", "Tasks with the skill", _tasks(result)),
    ]
    body = "".join(
        f'<section id="{x}"><h2>{escape(t)}</h2>{html}</section>' for x, t, html in sections
    )
    return document(
        f"skillopt · matrix · {result.skill}",
        header,
        [(x, t) for x, t, _ in sections],
        body,
        _data(result),
    )


def _table(result: MatrixResult) -> str:
    splits = {row.split for cell in result.cells for row in cell.rows}
    many = len(splits) > 1
    heads = ["target", "harness", *(["split"] if many else [])]
    nums = ["no skill", "skill", "Δ", "n", *(["load"] if result.agents else [])]
    head = "".join(f"<th>{escape(h)}</th>" for h in heads) + "".join(
        f'<th class="num">{escape(h)}</th>' for h in nums
    )
    rows = []
    for cell in result.cells:
        names = f"<td>{escape(cell.target or 'default')}</td><td>{escape(cell.harness)}</td>"
        if not cell.scored:
            span = len(heads) - 2 + len(nums)
            rows.append(
                f'<tr>{names}<td colspan={span} class="muted">unscored: '
                f"{escape(cell.why_unscored)}</td></tr>"
            )
            continue
        for row in cell.rows:
            css = "status-finished" if (row.delta or 0) > 0 else ""
            css = "status-stopped" if (row.delta or 0) < 0 else css
            values = [
                display.score(row.no_skill),
                display.score(row.skill),
                display.delta(row.delta),
                str(row.n),
                *([row.loaded or "—"] if result.agents else []),
            ]
            tds = "".join(
                f'<td class="num{" " + css if i == 2 and css else ""}">{escape(v)}</td>'
                for i, v in enumerate(values)
            )
            split = f"<td>{escape(row.split)}</td>" if many else ""
            rows.append(f"<tr>{names}{split}{tds}</tr>")
    return (
        f'<table class="compare"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _tasks(result: MatrixResult) -> str:
    """A task per row, a scored cell per column: green passed with the skill, red
    failed, amber unscored; hovering says the score and the bare model's."""
    cells = [c for c in result.cells if c.result is not None and c.scored]
    if not cells:
        return '<p class="muted">No cell was scored.</p>'
    outcomes = [_outcomes(c) for c in cells]
    ids = list(dict.fromkeys(t for o in outcomes for t in o))
    head = "".join(
        f'<th class="stepcol" title="{attr(c.label)}">{i + 1}</th>' for i, c in enumerate(cells)
    )
    legend = " · ".join(f"{i + 1}: {escape(c.label)}" for i, c in enumerate(cells))
    rows = []
    for task in ids:
        tds = []
        for cell, found in zip(cells, outcomes, strict=True):
            state, tip = found.get(task, ("not-run", "not run"))
            tds.append(
                f'<td class="cell {state}" data-tip="{attr(f"{task} · {cell.label}: {tip}")}"></td>'
            )
        rows.append(f'<tr><th class="task">{escape(task)}</th>{"".join(tds)}</tr>')
    return (
        f'<p class="muted">{legend}</p><div class="grid-wrap"><table class="outcomes">'
        f"<thead><tr><th></th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _outcomes(cell: Cell) -> dict[str, tuple[str, str]]:
    """Each task's state with the skill and the words of its tooltip."""
    if cell.result is None:
        return {}
    bare = {
        t: o
        for r in cell.result.results
        if r.variant == "no-skill"
        for t, o in task_outcomes(r.rollouts).items()
    }
    out = {}
    for r in cell.result.results:
        if r.variant != "skill":
            continue
        for task, o in task_outcomes(r.rollouts).items():
            state = "unscored" if o.value is None else ("pass" if o.passed else "fail")
            tip = f"{state} ({display.score(o.value)})"
            b = bare.get(task)
            if b is not None:
                tip += f"; without the skill {display.score(b.value)}"
            out[task] = (state, tip)
    return out


def _data(result: MatrixResult) -> dict[str, Any]:
    """What the page embeds: every cell's table rows and scores, without the
    rollouts (the JSON of `--json` has them)."""
    data = result.to_dict()
    for cell in data["cells"]:
        if cell["result"] is not None:
            cell["result"] = {k: v for k, v in cell["result"].items() if k != "rollouts"}
    return data
