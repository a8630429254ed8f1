"""Inline SVG charts for the HTML report: drawn here as text, so the page needs no
script library and opens from disk with no network.

Every mark people can point at carries `data-tip` (the page's tooltip) and a
`<title>` (the browser's own, for when scripts are off). All text is escaped:
reasons, task ids and rationales come from models and suites.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from skillopt._util import display

# decision → (mark, colour)
MARKS = {
    "initial": ("circle", "#3b6fd4"),
    "accepted": ("circle", "#1a8a3a"),
    "rejected": ("cross", "#c23b3b"),
    "no_candidate": ("ring", "#8a8a8a"),
    "skipped": ("ring", "#8a8a8a"),
}
SERIES = ("#3b6fd4", "#d47a1a")  # runs A and B when two are compared


def attr(text: object) -> str:
    return escape(str(text), quote=True)


@dataclass(frozen=True)
class Frame:
    """A plot area: `width` × `height` pixels, margins for the axes, and the data
    ranges the axes span."""

    x0: float
    x1: float
    y0: float = 0.0
    y1: float = 1.0
    width: int = 720
    height: int = 260
    left: int = 48
    right: int = 16
    top: int = 14
    bottom: int = 36

    def x(self, v: float) -> float:
        span = (self.x1 - self.x0) or 1.0
        return round(self.left + (v - self.x0) / span * (self.width - self.left - self.right), 1)

    def y(self, v: float) -> float:
        span = (self.y1 - self.y0) or 1.0
        inner = self.height - self.top - self.bottom
        return round(self.top + (1 - (v - self.y0) / span) * inner, 1)

    def axes(self, x_ticks: Sequence[tuple[float, str]], x_label: str, y_label: str) -> str:
        parts = []
        for v in (0.0, 0.25, 0.5, 0.75, 1.0):
            y = self.y(self.y0 + v * (self.y1 - self.y0))
            parts.append(
                f'<line class="grid" x1="{self.left}" x2="{self.width - self.right}" '
                f'y1="{y}" y2="{y}"/>'
                f'<text class="tick" x="{self.left - 6}" y="{y + 4}" text-anchor="end">'
                f"{self.y0 + v * (self.y1 - self.y0):.2f}</text>"
            )
        base = self.height - self.bottom
        for v, label in x_ticks:
            x = self.x(v)
            parts.append(
                f'<line class="axis" x1="{x}" x2="{x}" y1="{base}" y2="{base + 4}"/>'
                f'<text class="tick" x="{x}" y="{base + 16}" text-anchor="middle">'
                f"{attr(label)}</text>"
            )
        parts.append(
            f'<line class="axis" x1="{self.left}" x2="{self.width - self.right}" '
            f'y1="{base}" y2="{base}"/>'
            f'<text class="label" x="{(self.left + self.width - self.right) / 2}" '
            f'y="{self.height - 4}" text-anchor="middle">{attr(x_label)}</text>'
            f'<text class="label" transform="rotate(-90)" x="{-(self.top + base) / 2}" '
            f'y="12" text-anchor="middle">{attr(y_label)}</text>'
        )
        return "".join(parts)

    def svg(self, body: str, name: str, label: str) -> str:
        return (
            f'<svg class="chart {attr(name)}" role="img" aria-label="{attr(label)}" '
            f'viewBox="0 0 {self.width} {self.height}" width="{self.width}" '
            f'height="{self.height}" xmlns="http://www.w3.org/2000/svg">{body}</svg>'
        )


def mark(kind: str, x: float, y: float, colour: str, r: float = 5.0) -> str:
    if kind == "cross":
        d = r * 0.9
        return (
            f'<path d="M{x - d},{y - d}L{x + d},{y + d}M{x - d},{y + d}L{x + d},{y - d}" '
            f'stroke="{colour}" stroke-width="2.4" fill="none"/>'
            f'<circle cx="{x}" cy="{y}" r="{r + 2}" fill="transparent"/>'
        )
    fill = "#fff" if kind == "ring" else colour
    return f'<circle cx="{x}" cy="{y}" r="{r}" fill="{fill}" stroke="{colour}" stroke-width="2"/>'


def step_ticks(last: int) -> list[tuple[float, str]]:
    every = max(1, -(-last // 12))
    return [(float(s), str(s)) for s in range(0, last + 1, every)]


def step_tip(s: dict[str, Any]) -> str:
    """A step's tooltip: decision, reason, scores, delta, p-value and flips."""
    kind = "slow update · " if s["kind"] == "slow_update" else ""
    lines = [f"step {s['step']} · {kind}{s['decision'].replace('_', ' ')}"]
    if s.get("val") is not None:
        lines.append(f"validation {display.score(s['val'])}")
    elif s.get("partial") is not None:
        lines.append(
            f"no validation score: the race settled with {s['unrun']} tasks not run "
            f"({display.score(s['partial'])} on the tasks scored)"
        )
    if s.get("delta") is not None:
        lines.append(
            f"Δ {display.delta(s['delta'])} · p {display.p_value(s.get('p_value'), none='n/a')}"
            f" · n {s.get('n')}"
        )
    if s.get("fail_to_pass") or s.get("pass_to_fail"):
        lines.append(display.flips(s.get("fail_to_pass") or [], s.get("pass_to_fail") or []))
    if s.get("best") is not None:
        lines.append(f"best so far {display.score(s['best'])}")
    if s.get("reason"):
        lines.append(s["reason"])
    return "\n".join(lines)


def score_chart(steps: list[dict[str, Any]], *, series: int = 0, frame: Frame | None = None) -> str:
    """Validation score per step: one mark per step (by decision; a step with no
    validation score, hollow on the best-so-far line), and the best-so-far line."""
    last = max((s["step"] for s in steps), default=0)
    f = frame or Frame(0, max(last, 1))
    body = [f.axes(step_ticks(last), "step", "validation score")]
    body.append(_best_line(steps, f, SERIES[series] if frame else "#555"))
    body += _points(steps, f, series)
    return f.svg("".join(body), "score-chart", "validation score per step")


def _best_line(steps: list[dict[str, Any]], f: Frame, colour: str) -> str:
    pts: list[str] = []
    best = None
    for s in steps:
        if s.get("best") is None:
            continue
        x, y = f.x(s["step"]), f.y(s["best"])
        if best is not None:
            pts.append(f"{x},{f.y(best)}")
        pts.append(f"{x},{y}")
        best = s["best"]
    if not pts:
        return ""
    return (
        f'<polyline class="best-line" points="{" ".join(pts)}" fill="none" '
        f'stroke="{colour}" stroke-width="1.5" stroke-dasharray="5 3"/>'
    )


def _points(steps: list[dict[str, Any]], f: Frame, series: int) -> list[str]:
    out = []
    for s in steps:
        kind, colour = MARKS.get(s["decision"], ("ring", "#8a8a8a"))
        value: float = s["val"] if s.get("val") is not None else s.get("best") or 0.0
        if s.get("val") is None:
            kind = "ring"
        tip = step_tip(s)
        out.append(
            f'<g class="point" data-series="{series}" data-step="{s["step"]}" '
            f'data-decision="{attr(s["decision"])}" data-tip="{attr(tip)}">'
            f"<title>{escape(tip)}</title>{mark(kind, f.x(s['step']), f.y(value), colour)}</g>"
        )
    return out


def spend_chart(steps: list[dict[str, Any]], spend: list[dict[str, Any]]) -> str:
    """Best validation score so far against the target rollouts paid for so far:
    what each rollout bought."""
    best = {f"step {s['step']}": s.get("best") for s in steps}
    pts: list[tuple[dict[str, Any], float]] = [
        (p, b) for p in spend if (b := best.get(p["at"])) is not None
    ]
    if not pts:
        return '<p class="empty">No spend recorded per step.</p>'
    top = max(p["rollouts"] for p, _ in pts) or 1
    f = Frame(0, top)
    ticks = [(top * i / 4, f"{round(top * i / 4)}") for i in range(5)]
    body = [f.axes(ticks, "target rollouts run (cumulative)", "best validation")]
    line = " ".join(f"{f.x(p['rollouts'])},{f.y(b)}" for p, b in pts)
    body.append(f'<polyline points="{line}" fill="none" stroke="#3b6fd4" stroke-width="1.5"/>')
    for p, b in pts:
        cost = "" if p.get("cost") is None else f" · cost {display.money(p['cost'])}"
        tip = (
            f"{p['at']}: best {display.score(b)} after {p['rollouts']} rollouts run "
            f"(+{p['from_store']} from the store), {p['optimizer_calls']} optimizer calls{cost}"
        )
        body.append(
            f'<g class="spend-point" data-tip="{attr(tip)}"><title>{escape(tip)}</title>'
            f"{mark('circle', f.x(p['rollouts']), f.y(b), '#3b6fd4', 4)}</g>"
        )
    return f.svg("".join(body), "spend-chart", "best validation against rollouts run")


def test_bars(test: list[dict[str, Any]], labels: Sequence[str] = ()) -> str:
    """The test split: one bar per skill (no skill, initial, best), with mean, pass
    rate and n."""
    if not test:
        return '<p class="empty">The test split was not run.</p>'
    width, row, left = 720, 30, 170
    height = row * len(test) + 28
    inner = width - left - 150
    body = []
    for i, t in enumerate(test):
        y = 8 + i * row
        mean = t.get("mean") or 0.0
        w = round(inner * max(0.0, min(1.0, mean)), 1)
        name = labels[i] if labels else t["label"]
        text = (
            f"{display.score(t.get('mean'))} · pass {display.pct(t.get('pass_rate'))} · "
            f"n {t.get('n')}"
        )
        colour = {"best": "#1a8a3a", "initial": "#3b6fd4"}.get(t["name"], "#8a8a8a")
        body.append(
            f'<g class="test-bar" data-skill="{attr(t["name"])}" data-tip="{attr(name + ": " + text)}">'
            f"<title>{escape(name + ': ' + text)}</title>"
            f'<text class="label" x="{left - 8}" y="{y + 17}" text-anchor="end">{escape(name)}</text>'
            f'<rect x="{left}" y="{y + 4}" width="{inner}" height="{row - 10}" fill="#eef0f3"/>'
            f'<rect x="{left}" y="{y + 4}" width="{w}" height="{row - 10}" fill="{colour}"/>'
            f'<text class="tick" x="{left + inner + 8}" y="{y + 17}">{escape(text)}</text></g>'
        )
    return (
        f'<svg class="chart test-chart" role="img" aria-label="test split" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(body)}</svg>'
    )


def compare_chart(runs: Sequence[tuple[str, list[dict[str, Any]]]]) -> str:
    """Two (or more) runs' validation per step on one frame, a colour each."""
    last = max((s["step"] for _, steps in runs for s in steps), default=0)
    f = Frame(0, max(last, 1))
    body = [f.axes(step_ticks(last), "step", "validation score")]
    for i, (run_id, steps) in enumerate(runs):
        colour = SERIES[i % len(SERIES)]
        body.append(_best_line(steps, f, colour))
        for s in steps:
            value: float | None = s["val"] if s.get("val") is not None else s.get("best")
            if value is None:
                continue
            kind = "circle" if s.get("val") is not None else "ring"
            tip = f"{run_id}\n{step_tip(s)}"
            body.append(
                f'<g class="point" data-series="{i}" data-step="{s["step"]}" '
                f'data-tip="{attr(tip)}"><title>{escape(tip)}</title>'
                f"{mark(kind, f.x(s['step']), f.y(value), colour, 4)}</g>"
            )
        y = f.top + 4 + 16 * i
        body.append(
            f'<rect x="{f.width - 250}" y="{y}" width="12" height="10" fill="{colour}"/>'
            f'<text class="tick" x="{f.width - 232}" y="{y + 9}">{escape(run_id)}</text>'
        )
    return f.svg("".join(body), "score-chart compare", "validation score per step, both runs")
