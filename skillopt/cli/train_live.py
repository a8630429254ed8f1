"""The live view of `skillopt train`: a stage per batch of rollouts with its count
and clock, a line per decision, and the run's ETA once a step has finished.

Invariant: an observer only (it reads train events and draws); a line is printed
through the display, never over the bar.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.markup import escape

from skillopt import api
from skillopt._util import display
from skillopt.cli.eta import RunEta
from skillopt.cli.progress import Display

if TYPE_CHECKING:
    from skillopt.api import TrainEvent


class TrainProgress:
    """The live view of a run: each batch of rollouts and each stage without rollouts
    (reflection, notes) is a stage of the display with its own count and clock; each
    decision is a line printed through the display, never over the bar. A live bar
    also says when the run should be done (`run ETA 3m 05s`), once a step has
    finished; a log does not."""

    def __init__(self, progress: Display):
        self.progress = progress
        self.epochs: int | None = None
        self.epoch = ""
        self.best: float | None = None
        self.eta = RunEta(progress.clock)

    def _describe(self, what: str) -> str:
        """What runs first (it survives a narrow terminal), then the time the run has
        left (live only), the best validation score and the epoch."""
        parts = [what.replace("no_skill", "no skill").replace("_", " ")]
        left = self.eta.left() if self.progress.live else None
        if left is not None:
            parts.append(f"run ETA {eta_text(left)}")
        if self.best is not None:
            parts.append(f"best val {display.score(self.best)}")
        if self.epoch:
            parts.append(self.epoch)
        return " · ".join(parts)

    def __call__(self, ev: TrainEvent) -> None:
        d = ev.data
        if ev.kind == "run_started":
            self.epochs = d.get("epochs")
            self.eta.started(d.get("steps") or 0, d.get("splits"))
            if d.get("splits") and not d.get("resumed"):
                self.progress.print(display.split_sizes(d["splits"]))
        elif ev.kind == "stage":
            if "epoch" in d:
                self.epoch = f"epoch {d['epoch']}" + (f"/{self.epochs}" if self.epochs else "")
            self.eta.stage(d)
            what = f"step {d['step']} · {d['stage']}" if "step" in d else d["stage"]
            self.progress.stage(self._describe(what))
        elif ev.kind == "rollout":
            self.progress.count(d["label"], d["done"], d["total"], self._describe(d["label"]))
        elif ev.kind == "decision":
            self.eta.decision(d)
            self.best = d.get("best")
            self.progress.print(decision_line(d))
        elif ev.kind == "stopped":
            self.progress.print(stopped_line(d))
        elif ev.kind == "proposal" and d.get("skipped"):
            what = (
                "meta notes"
                if d["kind"] == "notes"
                else f"{d['kind']} minibatch of {len(d.get('tasks') or [])} tasks"
            )
            self.progress.print(
                f"step {d['step']:<3} [yellow]skipped[/] {what} — {escape(d['skipped'])}"
            )


def eta_text(seconds: float) -> str:
    """`7s`, `42s`, `3m 05s`, `1h 02m`: whole seconds (an estimate has no tenths)."""
    return f"{round(seconds)}s" if seconds < 10 else api.duration(seconds)


def stopped_line(stop: dict[str, Any]) -> str:
    if stop.get("budget"):
        return f"[yellow]stopped: budget[/] after step {stop['step']} — {escape(stop['reason'])}"
    return (
        f"[yellow]stopped early[/] after step {stop['step']} (epoch {stop['epoch']}) — "
        f"{escape(stop['reason'])}"
    )


def decision_line(d: dict[str, Any]) -> str:
    step = d["step"]
    if d.get("kind") == "initial":
        return f"step 0   initial      val {display.score(d.get('val'))}"
    label = "slow " if d.get("kind") == "slow_update" else ""
    decision = d.get("decision", "")
    if decision in ("no_candidate", "skipped"):
        what = "no candidate" if decision == "no_candidate" else "skipped"
        return f"step {step:<3} {label}{what} — {escape(d.get('reason', ''))}"
    color = "green" if d.get("accepted") else "red"
    delta = d.get("delta")
    # the p-value is shown only where it decides (the `paired` gate): under `strict` and
    # `margin` an "accepted, p=0.500" reads as a contradiction
    p = d.get("p_value") if d.get("gate") not in ("strict", "margin") else None
    shown = f" ({display.delta(delta)})" if delta is not None else ""
    reason = d.get("reason", "")
    if shown and reason.endswith(shown):  # "better on validation (+0.083)": said once
        reason = reason[: -len(shown)]
    return (
        f"step {step:<3} {label}[{color}]{decision:<9}[/] val {display.score(d.get('val'))}"
        + shown
        + (f" p={display.p_value(p, floor=True)}" if p is not None else "")
        + f" · best {display.score(d.get('best'))} — {escape(reason)}"
    )
