"""The report of one run as one self-contained HTML page: its facts, then a section
each for validation, spend, tasks × steps, every task's answers, the test split,
the steps, blame, and settings & files. The frame (inline style and script, the
embedded JSON) is `document`'s; the steps and blame are drawn by `steps`, the
answers by `viewer`, the charts by `charts`.

Invariant: every piece of text that came from a run (reasons, edits, task ids,
skill lines, settings) is escaped; the embedded JSON cannot close its script
element (`<` is written as `\\u003c`).
"""

from __future__ import annotations

import time
from html import escape
from typing import Any

from skillopt._util import display
from skillopt.runs.html import charts
from skillopt.runs.html.charts import attr
from skillopt.runs.html.data import NOT_RUN
from skillopt.runs.html.document import document, page_data, path_code
from skillopt.runs.html.settings import shown_settings
from skillopt.runs.html.steps import blame_section, steps_section
from skillopt.runs.html.viewer import answers_section
from skillopt.runs.summary import duration, estimated_line, gate_rule


def _fact(label: str, value: str) -> str:
    return f"<span>{escape(label)} <b>{value}</b></span>"


def _status(s: dict[str, Any]) -> str:
    status = str(s.get("status") or "")
    base = status.split(":")[0]
    return f'<span class="status-{attr(base)}">{escape(status)}</span>'


def render(d: dict[str, Any]) -> str:
    """The report page of one run (`d` as `data.collect` gives it)."""
    s = d["summary"]
    gate = s.get("gate") or {}
    test = {t["name"]: t for t in d["test"]}
    best_test = test.get("best", {}).get("mean")
    started = (
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(s["started_at"]))
        if s.get("started_at")
        else "—"
    )
    facts = [
        _fact("status", _status(s)),
        _fact("skill", path_code(s.get("skill"))),
        _fact("suite", path_code(s.get("suite"))),
        _fact("target", f"<code>{escape(str(s.get('target')))}</code>"),
        _fact("optimizer", f"<code>{escape(str(s.get('optimizer')))}</code>"),
        _fact(
            "validation",
            f"{display.score(s.get('initial_val'))} → {display.score(s.get('best_val'))}",
        ),
        _fact("test (best)", display.score(best_test)),
        _fact("started", escape(started)),
        _fact("time", escape(duration(s.get("wall_s")) or "—")),
    ]
    header = (
        f"<h1>Training report · {escape(d['run_id'])}</h1>"
        f'<div class="facts">{"".join(facts)}</div>'
        f'<p class="muted">Gate <code>{escape(str(gate.get("name")))}</code>: '
        f"{escape(gate_rule(str(gate.get('name')), gate.get('min_delta') or 0.0, gate.get('alpha') or 0.05, gate.get('max_regressions')))}"
        "</p>"
    )
    stop = s.get("stop")
    if stop and str(s.get("status", "")).startswith("stopped"):
        header += (
            f'<p class="status-stopped">Stopped by the budget {escape(str(stop.get("budget")))} '
            f"after step {escape(str(stop.get('step')))} ({escape(str(stop.get('detail')))}): "
            f"continue it with <code>skillopt train --resume {escape(d['run_id'])}</code> and a "
            "larger budget.</p>"
        )
    sections = [
        ("score", "Validation", _score_section(d)),
        ("spend", "Spend", _spend_section(d)),
        ("grid", "Tasks × steps", _grid_section(d)),
        ("answers", "Answers", answers_section(d)),
        ("test", "Test split", _test_section(d)),
        ("steps", "Steps", steps_section(d)),
        ("blame", "Blame", blame_section(d)),
        ("settings", "Settings & files", _settings_section(d)),
    ]
    body = "".join(
        f'<section id="{a}"><h2>{escape(t)}</h2>{html}</section>' for a, t, html in sections
    )
    return document(
        f"skillopt · {d['run_id']}", header, [(a, t) for a, t, _ in sections], body, page_data(d)
    )


def _legend() -> str:
    items = [
        ("initial", "initial"),
        ("accepted", "accepted"),
        ("rejected", "rejected"),
        ("no_candidate", "no candidate / no validation score (hollow)"),
    ]
    return (
        '<p class="legend">'
        + "".join(
            f'<span><i style="background:{charts.MARKS[k][1]}"></i>{escape(t)}</span>'
            for k, t in items
        )
        + "<span>- - best so far</span></p>"
    )


def _score_section(d: dict[str, Any]) -> str:
    return _legend() + charts.score_chart(d["steps"])


def _spend_section(d: dict[str, Any]) -> str:
    rows = []
    for p in d["spend"]:
        tokens = "" if p["tokens"] is None else f"{p['tokens']:,}"
        cost = "—" if p["cost"] is None else display.money(p["cost"])
        rows.append(
            f'<tr><td>{escape(p["at"])}</td><td class="num">{p["rollouts"]}</td>'
            f'<td class="num">{p["from_store"]}</td><td class="num">{p["optimizer_calls"]}</td>'
            f'<td class="num">{tokens}</td><td class="num">{cost}</td></tr>'
        )
    acct = d["summary"].get("accounting") or {}
    total = (
        f"<p>Run total: {acct.get('target_rollouts', 0)} target rollouts run, "
        f"{acct.get('cached_rollouts', 0)} from the store, "
        f"{acct.get('unscored_rollouts', 0)} unscored; {acct.get('optimizer_calls', 0)} "
        f"optimizer calls; target cost "
        f"{escape(display.spent(acct.get('target_cost'), acct.get('target_calls', 0)))}, "
        f"optimizer cost "
        f"{escape(display.spent(acct.get('optimizer_cost'), acct.get('optimizer_calls', 0)))}."
        + (f" {escape(est[0].upper() + est[1:])}." if (est := estimated_line(acct)) else "")
        + "</p>"
    )
    table = (
        '<table class="spend"><thead><tr><th>after</th><th class="num">rollouts run</th>'
        '<th class="num">from the store</th><th class="num">optimizer calls</th>'
        '<th class="num">tokens</th><th class="num">cost</th></tr></thead><tbody>'
        + "".join(rows)
        + "</tbody></table>"
        if rows
        else ""
    )
    return total + charts.spend_chart(d["steps"], d["spend"]) + table


def _grid_section(d: dict[str, Any]) -> str:
    g = d["grid"]
    if not g["tasks"]:
        return '<p class="empty">No per-task validation results were recorded.</p>'
    head = "".join(
        f'<th class="stepcol"><a href="#step-{c["step"]}">{c["step"]}</a></th>'
        for c in g["columns"]
    )
    rows = []
    for t in g["tasks"]:
        cells = []
        for c in g["columns"]:
            cell = c["cells"].get(t) or {"state": NOT_RUN}
            css = cell["state"].replace(" ", "-") + (" flip" if cell.get("flip") else "")
            # the tooltip is put together by the page's script from the row's task,
            # the column's step, the class and these: a long run has many cells
            extra = ""
            if cell.get("score") is not None and cell["score"] not in (0.0, 1.0):
                extra += f' data-score="{display.score(cell["score"])}"'
            if cell.get("flip"):
                extra += f' data-flip="{attr(cell["flip"])}"'
            cells.append(f'<td class="cell {css}" data-step="{c["step"]}"{extra}></td>')
        flaky = t in g.get("flaky", [])
        rows.append(
            f'<tr class="task-row{" flaky" if flaky else ""}" data-task="{attr(t)}">'
            f'<th class="task">{escape(t)}</th>{"".join(cells)}</tr>'
        )
    legend = (
        '<p class="legend">'
        '<span class="swatch" style="background:var(--pass)"></span>pass'
        '<span class="swatch" style="background:var(--fail)"></span>fail'
        '<span class="swatch" style="background:var(--unscored)"></span>unscored'
        '<span class="swatch" style="background:var(--notrun)"></span>not run (the race '
        "settled first)"
        '<span class="swatch" style="border:1px solid #ccc"></span>no candidate'
        '<span class="swatch" style="outline:2px solid #111;outline-offset:-3px"></span>'
        "flipped against the incumbent · ↯ flaky: the same skill scored this task both "
        "ways</p>"
    )
    return (
        legend + '<div class="grid-wrap"><table class="outcomes"><thead><tr><th>task \\ step</th>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _test_section(d: dict[str, Any]) -> str:
    flips = d["summary"].get("test_flips")
    extra = ""
    if flips is not None:
        extra = (
            f"<p>Best against initial (n={flips['n']}): "
            f"{escape(display.flips(flips['fail_to_pass'], flips['pass_to_fail']))}</p>"
        )
    return charts.test_bars(d["test"]) + extra


_CHANGED = ' class="changed"'


def _settings_section(d: dict[str, Any]) -> str:
    files = "".join(
        f"<tr><th>{escape(k)}</th><td><code>{escape(v)}</code></td></tr>"
        for k, v in d["files"].items()
    )
    shown, left_out = shown_settings(d["settings"])
    settings = "".join(
        f"<tr{_CHANGED if changed else ''}><th><code>{escape(k)}</code></th>"
        f"<td><code>{escape(v)}</code></td></tr>"
        for k, v, changed in shown
    )
    omitted = (
        '<p class="muted">Not shown, at their defaults and unused by this run\'s harness '
        "and executor: " + ", ".join(f"<code>{escape(s)}.*</code>" for s in left_out) + "</p>"
        if left_out
        else ""
    )
    notes = "".join(f"<li>{escape(n)}</li>" for n in d.get("notes") or [])
    return (
        (f'<ul class="notes">{notes}</ul>' if notes else "")
        + f'<div class="side"><div><h3>Files</h3><table class="files">{files}</table></div>'
        f"<div><h3>Settings (secrets blanked; <b>bold</b>: changed from the default)</h3>"
        f'<table class="settings">{settings}</table>{omitted}'
        "</div></div>"
    )
