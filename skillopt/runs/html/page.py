"""The report as one self-contained HTML page: inline CSS, inline SVG charts, a
few lines of inline script (tooltips), and the report's data as JSON. It opens
from disk with the network off; nothing is fetched.

Invariant: every piece of text that came from a run (reasons, edits, task ids,
skill lines, settings) is escaped; the embedded JSON cannot close its script
element (`<` is written as `\\u003c`).
"""

from __future__ import annotations

import difflib
import json
import time
from collections.abc import Callable
from html import escape
from typing import Any

from skillopt._util import display
from skillopt.runs.html import charts
from skillopt.runs.html.charts import attr
from skillopt.runs.html.data import NOT_RUN
from skillopt.runs.summary import decision_label, duration, gate_rule

_CSS = """
:root { --fg:#1d2330; --muted:#5c6577; --line:#dfe3ea; --pass:#1a8a3a; --fail:#c23b3b;
  --unscored:#d4a21a; --notrun:#eef0f3; --bg:#fff; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
  background: var(--bg); margin: 0; }
header { padding: 18px 28px 10px; border-bottom: 1px solid var(--line); }
header h1 { font-size: 20px; margin: 0 0 6px; }
header > * { max-width: 1180px; }
nav { padding: 6px 28px; border-bottom: 1px solid var(--line); position: sticky; top: 0;
  background: #fafbfc; z-index: 2; }
nav a { margin-right: 14px; color: var(--muted); text-decoration: none; }
nav a:hover { color: var(--fg); }
main { padding: 6px 28px 40px; max-width: 1180px; }
section { margin-top: 26px; }
h2 { font-size: 16px; margin: 0 0 8px; }
.facts { display: flex; flex-wrap: wrap; gap: 6px 24px; color: var(--muted); }
.facts b { color: var(--fg); font-weight: 600; }
.status-finished { color: var(--pass); } .status-stopped, .status-running { color: #b0700d; }
table { border-collapse: collapse; }
th, td { padding: 3px 8px; border-bottom: 1px solid var(--line); text-align: left;
  vertical-align: top; }
th { font-weight: 600; color: var(--muted); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.chart { max-width: 100%; height: auto; }
.chart .grid { stroke: #eceff3; } .chart .axis { stroke: #9aa3b2; }
.chart .tick { font-size: 11px; fill: var(--muted); }
.chart .label { font-size: 12px; fill: var(--fg); }
.chart .point, .chart .test-bar, .chart .spend-point { cursor: default; }
.legend span { margin-right: 14px; color: var(--muted); }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 50%;
  margin-right: 4px; vertical-align: -1px; }
.grid-wrap { overflow-x: auto; }
table.outcomes td.cell { width: 22px; min-width: 22px; height: 18px; padding: 0;
  border: 1px solid #fff; }
table.outcomes th.task { font-family: ui-monospace, Menlo, monospace; font-size: 12px;
  font-weight: 400; white-space: nowrap; }
table.outcomes th.stepcol { font-size: 11px; padding: 2px; text-align: center; }
td.pass { background: var(--pass); } td.fail { background: var(--fail); }
td.unscored { background: var(--unscored); }
td.not-run { background: var(--notrun); } td.none { background: #fff; }
td.flip { outline: 2px solid #111; outline-offset: -3px; }
tr.flaky th.task::after { content: " ↯"; color: var(--unscored); }
.swatch { display: inline-block; width: 12px; height: 12px; vertical-align: -2px;
  margin: 0 4px 0 10px; }
details.step { border: 1px solid var(--line); border-radius: 6px; margin: 8px 0;
  padding: 6px 10px; }
details.step summary { cursor: pointer; }
details.step[open] { background: #fcfcfd; }
.decision-accepted { color: var(--pass); font-weight: 600; }
.decision-rejected { color: var(--fail); font-weight: 600; }
.decision-initial { color: #3b6fd4; font-weight: 600; }
.decision-no_candidate, .decision-skipped { color: var(--muted); font-weight: 600; }
pre { font: 12px/1.4 ui-monospace, Menlo, Consolas, monospace; margin: 6px 0;
  overflow-x: auto; background: #f6f8fa; padding: 8px; border-radius: 4px; }
pre.diff span { display: block; white-space: pre; }
pre.diff .add { background: #e6f6ea; } pre.diff .del { background: #fbe9e9; }
pre.diff .hunk { color: #6f42c1; } pre.diff .meta { color: var(--muted); }
table.blame td.text { font: 12px/1.4 ui-monospace, Menlo, Consolas, monospace;
  white-space: pre-wrap; }
table.blame tr.from-0 td { color: var(--muted); }
table.blame td.lineno { color: var(--muted); text-align: right; }
.muted { color: var(--muted); }
code { font: 12px ui-monospace, Menlo, Consolas, monospace; background: #f1f3f6;
  padding: 1px 4px; border-radius: 3px; }
#tip { position: fixed; pointer-events: none; background: #1d2330; color: #fff;
  padding: 6px 9px; border-radius: 4px; font-size: 12px; white-space: pre-line;
  max-width: 440px; display: none; z-index: 10; }
.side { display: grid; grid-template-columns: 1fr 1fr; gap: 14px; }
"""

# tooltips from data-tip: the only script on the page
_SCRIPT = """
(function () {
  var tip = document.getElementById("tip");
  var STATES = ["pass", "fail", "unscored", "not-run", "none"];
  function cellTip(el) {
    var state = "";
    for (var i = 0; i < STATES.length; i++) {
      if (el.classList.contains(STATES[i])) state = STATES[i].replace("-", " ");
    }
    if (state === "none") state = "no candidate";
    var text = el.parentNode.getAttribute("data-task") + " · step " +
      el.getAttribute("data-step") + ": " + state;
    if (el.getAttribute("data-score")) text += " (" + el.getAttribute("data-score") + ")";
    if (el.getAttribute("data-flip")) {
      text += " · " + el.getAttribute("data-flip") + " against the incumbent";
    }
    return text;
  }
  function find(el) {
    while (el && el !== document) {
      if (el.getAttribute && el.getAttribute("data-tip")) return el;
      if (el.classList && el.classList.contains("cell")) return el;
      el = el.parentNode;
    }
    return null;
  }
  document.addEventListener("mouseover", function (ev) {
    var el = find(ev.target);
    if (!el) { tip.style.display = "none"; return; }
    tip.textContent = el.getAttribute("data-tip") || cellTip(el);
    tip.style.display = "block";
  });
  document.addEventListener("mousemove", function (ev) {
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 460) + "px";
    tip.style.top = (ev.clientY + 14) + "px";
  });
  document.addEventListener("mouseout", function (ev) {
    if (!find(ev.relatedTarget)) tip.style.display = "none";
  });
})();
"""


def _json(data: Any) -> str:
    text = json.dumps(data, ensure_ascii=False, default=str, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _doc(title: str, header: str, nav: list[tuple[str, str]], body: str, data: Any) -> str:
    links = "".join(f'<a href="#{attr(a)}">{escape(t)}</a>' for a, t in nav)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # nothing may load from anywhere: the page is whole as written
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<header>{header}</header><nav>{links}</nav><main>{body}</main>"
        '<div id="tip" role="tooltip"></div>'
        f'<script type="application/json" id="skillopt-data">{_json(data)}</script>'
        f"<script>{_SCRIPT}</script></body></html>\n"
    )


def _fact(label: str, value: str) -> str:
    return f"<span>{escape(label)} <b>{value}</b></span>"


def _path(value: object) -> str:
    """A file's name, its whole path on hover (and under Settings & files)."""
    text = str(value)
    name = text.rstrip("/").rsplit("/", 1)[-1] or text
    return f'<code title="{attr(text)}">{escape(name)}</code>'


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
        _fact("skill", _path(s.get("skill"))),
        _fact("suite", _path(s.get("suite"))),
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
        f"{escape(gate_rule(str(gate.get('name')), gate.get('min_delta') or 0.0, gate.get('alpha') or 0.05))}"
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
        ("test", "Test split", _test_section(d)),
        ("steps", "Steps", _steps_section(d)),
        ("blame", "Blame", _blame_section(d)),
        ("settings", "Settings & files", _settings_section(d)),
    ]
    body = "".join(
        f'<section id="{a}"><h2>{escape(t)}</h2>{html}</section>' for a, t, html in sections
    )
    return _doc(
        f"skillopt · {d['run_id']}", header, [(a, t) for a, t, _ in sections], body, _page_data(d)
    )


def _page_data(d: dict[str, Any]) -> dict[str, Any]:
    """What the page embeds as JSON: the report's data without the bulky parts the
    page already shows (diffs, the best skill's text)."""
    steps = [{k: v for k, v in s.items() if k != "diff"} for s in d["steps"]]
    return {k: v for k, v in d.items() if k not in ("steps", "best_text")} | {"steps": steps}


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
        f"{escape(display.spent(acct.get('optimizer_cost'), acct.get('optimizer_calls', 0)))}.</p>"
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


def _diff_html(text: str) -> str:
    if not text.strip():
        return '<p class="muted">No change to the skill.</p>'
    out = []
    for line in text.splitlines():
        if line.startswith(("+++", "---", "diff ", "index ", "new file")):
            css = "meta"
        elif line.startswith("@@"):
            css = "hunk"
        elif line.startswith("+"):
            css = "add"
        elif line.startswith("-"):
            css = "del"
        else:
            css = "ctx"
        out.append(f'<span class="{css}">{escape(line) or " "}</span>')
    return f'<pre class="diff">{"".join(out)}</pre>'


def _edits_table(edits: list[dict[str, Any]]) -> str:
    if not edits:
        return '<p class="muted">No edit was applied.</p>'
    rows = []
    for i, e in enumerate(edits):
        where = e.get("section") or e.get("anchor") or ""
        evidence = ", ".join(e.get("evidence") or [])
        rows.append(
            f'<tr><td class="num">{i}</td>'
            f"<td>{escape(str(e.get('op')))}</td><td>{escape(str(where))}</td>"
            f"<td>{escape(str(e.get('status')))}{': ' + escape(e['detail']) if e.get('detail') else ''}</td>"
            f"<td>{escape(str(e.get('rationale') or ''))}</td>"
            f"<td><code>{escape(evidence)}</code></td></tr>"
        )
    return (
        '<table class="edits"><thead><tr><th class="num">#</th><th>op</th><th>where</th>'
        "<th>status</th><th>rationale</th><th>evidence tasks</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _steps_section(d: dict[str, Any]) -> str:
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
            body += _edits_table(s["edits"])
        body += (
            _diff_html(s["diff"])
            if s.get("commit")
            else ('<p class="muted">Nothing was committed at this step.</p>')
        )
        opened = " open" if s["decision"] == "accepted" else ""
        out.append(
            f'<details class="step" id="step-{s["step"]}" data-step="{s["step"]}"{opened}>'
            f"{head}{body}</details>"
        )
    return "".join(out)


def _blame_section(d: dict[str, Any]) -> str:
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


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(value, dict):
        out: list[tuple[str, str]] = []
        for k, v in value.items():
            out += _flatten(v, f"{prefix}{k}.")
        return out or [(prefix.rstrip("."), "{}")]
    return [(prefix.rstrip("."), json.dumps(value, ensure_ascii=False, default=str))]


def _settings_section(d: dict[str, Any]) -> str:
    files = "".join(
        f"<tr><th>{escape(k)}</th><td><code>{escape(v)}</code></td></tr>"
        for k, v in d["files"].items()
    )
    settings = "".join(
        f"<tr><th><code>{escape(k)}</code></th><td><code>{escape(v)}</code></td></tr>"
        for k, v in _flatten(d["settings"])
    )
    notes = "".join(f"<li>{escape(n)}</li>" for n in d.get("notes") or [])
    return (
        (f'<ul class="notes">{notes}</ul>' if notes else "")
        + f'<div class="side"><div><h3>Files</h3><table class="files">{files}</table></div>'
        f'<div><h3>Settings (secrets blanked)</h3><table class="settings">{settings}</table>'
        "</div></div>"
    )


def render_compare(a: dict[str, Any], b: dict[str, Any]) -> str:
    """Two runs side by side: score curves on one chart, test results, cost, and
    the diff between their best skills."""
    runs = [a, b]
    header = (
        f"<h1>Comparison · {escape(a['run_id'])} vs {escape(b['run_id'])}</h1>"
        f'<p class="muted">suites: {_path(a["summary"].get("suite"))}'
        f" · {_path(b['summary'].get('suite'))}</p>"
    )
    if not same_suite(a, b):
        header += (
            '<p class="status-stopped">The two runs were trained on different suites: '
            "their scores are not on the same tasks.</p>"
        )
    rows = []
    fields: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("target", lambda d: str(d["summary"].get("target"))),
        ("optimizer", lambda d: str(d["summary"].get("optimizer"))),
        ("status", lambda d: str(d["summary"].get("status"))),
        ("steps", lambda d: str(len(d["steps"]) - 1)),
        (
            "validation initial → best",
            lambda d: (
                f"{display.score(d['summary'].get('initial_val'))} → "
                f"{display.score(d['summary'].get('best_val'))}"
            ),
        ),
    ]
    for name in ("no_skill", "initial", "best"):
        fields.append((f"test · {name.replace('_', ' ')}", _test_cell(name)))
    fields += [
        (
            "target rollouts run",
            lambda d: str(d["summary"]["accounting"].get("target_rollouts", 0)),
        ),
        ("from the store", lambda d: str(d["summary"]["accounting"].get("cached_rollouts", 0))),
        ("optimizer calls", lambda d: str(d["summary"]["accounting"].get("optimizer_calls", 0))),
        ("cost", _cost),
    ]
    for label, get in fields:
        rows.append(
            f"<tr><th>{escape(label)}</th>"
            + "".join(f'<td class="num">{escape(get(d))}</td>' for d in runs)
            + "</tr>"
        )
    table = (
        '<table class="compare"><thead><tr><th></th>'
        + "".join(f'<th class="num">{escape(d["run_id"])}</th>' for d in runs)
        + f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    diff = "".join(
        difflib.unified_diff(
            a["best_text"].splitlines(keepends=True),
            b["best_text"].splitlines(keepends=True),
            f"{a['run_id']}/best/SKILL.md",
            f"{b['run_id']}/best/SKILL.md",
        )
    )
    sections = [
        ("score", "Validation", charts.compare_chart([(d["run_id"], d["steps"]) for d in runs])),
        ("numbers", "Test, cost and outcome", table),
        (
            "test",
            "Test split",
            '<div class="side">'
            + "".join(
                f"<div><h3>{escape(d['run_id'])}</h3>{charts.test_bars(d['test'])}</div>"
                for d in runs
            )
            + "</div>",
        ),
        ("diff", "Best skills", _diff_html(diff)),
    ]
    body = "".join(
        f'<section id="{x}"><h2>{escape(t)}</h2>{html}</section>' for x, t, html in sections
    )
    data = {"runs": [_page_data(d) for d in runs]}
    return _doc(
        f"skillopt · {a['run_id']} vs {b['run_id']}",
        header,
        [(x, t) for x, t, _ in sections],
        body,
        data,
    )


def same_suite(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two runs' reports are of the same suite (by its file)."""
    return bool(a["summary"].get("suite") == b["summary"].get("suite"))


def _test_cell(name: str) -> Callable[[dict[str, Any]], str]:
    def get(d: dict[str, Any]) -> str:
        for t in d["test"]:
            if t["name"] == name:
                return f"{display.score(t.get('mean'))} (pass {display.pct(t.get('pass_rate'))}, n {t.get('n')})"
        return "—"

    return get


def _cost(d: dict[str, Any]) -> str:
    acct = d["summary"].get("accounting") or {}
    costs = [acct.get("target_cost"), acct.get("optimizer_cost")]
    known = [c for c in costs if c is not None]
    return display.money(sum(known)) if known else "unknown"
