"""Two runs side by side (`skillopt report A --compare B`): the settings in which
they differ first, then score curves on one chart, test results, cost and outcome,
and the diff between their best skills.

Invariant: runs of different suites are still compared, and the page says so
first: their scores are not on the same tasks.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from html import escape
from typing import Any

from skillopt._util import display
from skillopt.runs.html import charts
from skillopt.runs.html.document import diff_html, document, page_data, path_code
from skillopt.runs.html.settings import differing


def render_compare(a: dict[str, Any], b: dict[str, Any]) -> str:
    """Two runs side by side: score curves on one chart, test results, cost, and
    the diff between their best skills."""
    runs = [a, b]
    header = (
        f"<h1>Comparison · {escape(a['run_id'])} vs {escape(b['run_id'])}</h1>"
        f'<p class="muted">suites: {path_code(a["summary"].get("suite"))}'
        f" · {path_code(b['summary'].get('suite'))}</p>"
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
    differ = differing(a.get("settings") or {}, b.get("settings") or {})
    settings = (
        '<table class="differ"><thead><tr><th></th>'
        + "".join(f"<th>{escape(d['run_id'])}</th>" for d in runs)
        + "</tr></thead><tbody>"
        + "".join(
            f"<tr><th><code>{escape(k)}</code></th><td><code>{escape(va)}</code></td>"
            f"<td><code>{escape(vb)}</code></td></tr>"
            for k, va, vb in differ
        )
        + "</tbody></table>"
        if differ
        else '<p class="muted">The two runs have the same settings.</p>'
    )
    if differ:  # what to read the numbers against, before the numbers
        header += (
            f"<p>They differ in {len(differ)} setting{'s' if len(differ) != 1 else ''}: "
            + ", ".join(f"<code>{escape(k)}</code>" for k, _, _ in differ[:6])
            + (" …" if len(differ) > 6 else "")
            + "</p>"
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
        ("settings", "Settings that differ", settings),
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
        ("diff", "Best skills", diff_html(diff)),
    ]
    body = "".join(
        f'<section id="{x}"><h2>{escape(t)}</h2>{html}</section>' for x, t, html in sections
    )
    # each run's answers are its own page's: the comparison draws none of them
    data = {"runs": [{k: v for k, v in page_data(d).items() if k != "answers"} for d in runs]}
    return document(
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
