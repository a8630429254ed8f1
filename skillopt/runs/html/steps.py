"""The run page's step-by-step parts: each step with its decision, facts, edits and
diff (`steps_section`), and every line of the best skill with the step and edit
that brought it (`blame_section`).

Invariant: every text that came from a run (reasons, rationales, edits, skill
lines) is escaped before it is placed in the page.
"""

from __future__ import annotations

from html import escape
from typing import Any

from skillopt._util import display
from skillopt.runs.html.charts import attr
from skillopt.runs.html.document import diff_html
from skillopt.runs.summary import decision_label, duration


def _edits_table(edits: list[dict[str, Any]]) -> str:
    if not edits:
        return '<p class="muted">No edit was applied.</p>'
    rows = []
    credited = any(e.get("verdict") for e in edits)  # a step that gated its edits apart
    for i, e in enumerate(edits):
        where = e.get("section") or e.get("anchor") or ""
        evidence = ", ".join(e.get("evidence") or [])
        verdict = f"<td>{escape(str(e.get('verdict') or ''))}</td>" if credited else ""
        rows.append(
            f'<tr><td class="num">{i}</td>'
            f"<td>{escape(str(e.get('op')))}</td><td>{escape(str(where))}</td>"
            f"<td>{escape(str(e.get('status')))}{': ' + escape(e['detail']) if e.get('detail') else ''}</td>"
            f"{verdict}<td>{escape(str(e.get('rationale') or ''))}</td>"
            f"<td><code>{escape(evidence)}</code></td></tr>"
        )
    return (
        '<table class="edits"><thead><tr><th class="num">#</th><th>op</th><th>where</th>'
        "<th>status</th>"
        + ("<th>verdict</th>" if credited else "")
        + "<th>rationale</th><th>evidence tasks</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _trials(trials: list[dict[str, Any]]) -> str:
    """A decomposed step's candidates in one line each: which edits, the decision,
    gains and losses."""
    if not trials:
        return ""
    items = "".join(
        f"<li>{escape(str(t.get('label')))}: {escape(str(t.get('decision')))} "
        f"({len(t.get('gains') or [])} gained, {len(t.get('regressions') or [])} lost"
        f"{', ' + display.delta(t['delta']) if t.get('delta') is not None else ''})</li>"
        for t in trials
    )
    return f'<p class="muted">Candidates gated at this step:</p><ul class="trials">{items}</ul>'


def steps_section(d: dict[str, Any]) -> str:
    out = []
    for s in d["steps"]:
        kind = "slow update · " if s["kind"] == "slow_update" else ""
        score = (
            f"val {display.score(s['val'])}" if s.get("val") is not None else "no validation score"
        )
        delta = f" ({display.delta(s['delta'])})" if s.get("delta") is not None else ""
        head = (
            f"<summary><b>step {s['step']}</b> · {escape(kind)}"
            f'<span class="decision-{attr(s["decision"])}">{escape(decision_label(s["decision"]))}</span>'
            f' · {escape(score)}{escape(delta)} · <span class="muted">{escape(s["reason"])}</span>'
            "</summary>"
        )
        facts = []
        if s.get("p_value") is not None:
            facts.append(f"p {display.p_value(s['p_value'])}")
        if s.get("n") is not None:
            facts.append(f"n {s['n']}")
        if s.get("train_mean") is not None:
            facts.append(f"train batch mean {display.score(s['train_mean'])}")
        if s.get("fail_to_pass") or s.get("pass_to_fail"):
            facts.append(display.flips(s["fail_to_pass"], s["pass_to_fail"]))
        if s.get("commit"):
            facts.append(f"commit {s['commit'][:10]}")
        if s.get("wall_s") is not None:
            facts.append(duration(s["wall_s"]))
        body = f'<p class="muted">{escape(" · ".join(facts))}</p>'
        if s["kind"] != "initial":
            body += _trials(s.get("trials") or [])
            body += _edits_table(s["edits"])
        body += (
            diff_html(s["diff"])
            if s.get("commit")
            else ('<p class="muted">Nothing was committed at this step.</p>')
        )
        opened = " open" if s["decision"] == "accepted" else ""
        out.append(
            f'<details class="step" id="step-{s["step"]}" data-step="{s["step"]}"{opened}>'
            f"{head}{body}</details>"
        )
    return "".join(out)


def blame_section(d: dict[str, Any]) -> str:
    lines = d["blame"]
    if not lines:
        return '<p class="empty">The run has no committed skill yet.</p>'
    steps = {s["step"]: s for s in d["steps"]}
    rows = []
    for b in lines:
        s = steps.get(b["step"], {})
        origin = "initial" if b["step"] == 0 else f"step {b['step']}"
        edit = "" if b["edit"] is None else f"edit {b['edit']} ({b['op']})"
        if b["step"] and b["op"] == "guidance":
            edit = "slow-update guidance"
        tip = origin
        if b["rationale"]:
            tip += f": {b['rationale']}"
        if b["evidence"]:
            tip += f"\nevidence: {', '.join(b['evidence'])}"
        if s.get("reason"):
            tip += f"\n{decision_label(s.get('decision', ''))}: {s['reason']}"
        rows.append(
            f'<tr class="blame-line from-{b["step"]}" data-step="{b["step"]}" '
            f'data-tip="{attr(tip)}"><td class="lineno">{b["line"]}</td>'
            f'<td><a href="#step-{b["step"]}">{escape(origin)}</a></td>'
            f"<td>{escape(edit)}</td>"
            f'<td class="muted">{escape(_short(b["rationale"]))}</td>'
            f'<td class="text">{escape(b["text"]) or " "}</td></tr>'
        )
    return (
        '<p class="muted">Every line of the best skill, with the step and edit that '
        "brought it (from the run's git history). Hover a line for its rationale and "
        "evidence; the step links to its evidence.</p>"
        '<table class="blame"><thead><tr><th class="num">line</th><th>from</th><th>edit</th>'
        "<th>rationale</th><th>text</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def _short(text: str, width: int = 60) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"
