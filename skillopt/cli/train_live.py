"""The live view of `skillopt train`: a stage per batch of rollouts with its count
and clock, a line per decision, and the run's ETA once a step has finished.

Invariant: an observer only (it reads train events and draws); a line is printed
through the display, never over the bar.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from skillopt import api
from skillopt._util import display
from skillopt.cli.eta import RunEta
from skillopt.cli.progress import Display

if TYPE_CHECKING:
    from skillopt.api.events import Decided, TrainEvent


class TrainProgress:
    """The live view of a run: each batch of rollouts and each stage without rollouts
    (reflection, notes) is a stage of the display with its own count and clock; each
    decision is a line printed through the display, never over the bar. A live bar
    says what the run has come to on a line of its own under the bar (the best
    validation score, the epoch and, once a step has finished, when the run should
    be done: `run ETA 3m 05s`), so that a narrow terminal cuts none of it; a log
    puts the best score and the epoch after each stage and gives no estimate."""

    def __init__(self, progress: Display):
        self.progress = progress
        self.epochs: int | None = None
        self.epoch = ""
        self.best: float | None = None
        self.eta = RunEta(progress.clock)
        progress.follow(self.run_line)

    def _describe(self, what: str) -> str:
        """What runs; in a log, then the best validation score and the epoch (a live
        bar has them on its run line)."""
        parts = [what.replace("no_skill", "no skill").replace("_", " ")]
        if not self.progress.live:
            parts += self._run_parts()
        return " · ".join(parts)

    def _run_parts(self) -> list[str]:
        parts = [f"best val {display.score(self.best)}"] if self.best is not None else []
        return parts + ([self.epoch] if self.epoch else [])

    def run_line(self, stage_left: float | None) -> str:
        """The line under a live bar: the best validation score, the epoch and the
        time the run has left, which is never less than the stage's own (the run's
        estimate counts down from the last step; a slow stage can outlast it)."""
        parts = self._run_parts()
        left = self.eta.left()
        if left is not None:
            parts.append(f"run ETA {eta_text(max(left, stage_left or 0.0))}")
        return " · ".join(parts)

    def __call__(self, ev: TrainEvent) -> None:
        # the event classes load when a run begins, not when the command line starts
        from skillopt.api.events import (
            GateDecision,
            InitialDecision,
            NoCandidate,
            ProposalMade,
            RolloutDone,
            RunStarted,
            Stage,
            Stopped,
        )

        match ev:
            case RunStarted():
                self.epochs = ev.epochs
                self.eta.started(ev.steps, ev.splits)
                if ev.splits and not ev.resumed:
                    self.progress.print(display.split_sizes(ev.splits))
            case Stage():
                # a notes stage names the finished epoch whose notes it takes, taken
                # lazily at the next epoch's first optimizer call: not where the run is
                if ev.epoch is not None and ev.stage != "notes":
                    self.epoch = f"epoch {ev.epoch}" + (f"/{self.epochs}" if self.epochs else "")
                self.eta.stage(ev)
                what = f"step {ev.step} · {ev.stage}" if ev.step is not None else ev.stage
                self.progress.stage(self._describe(what))
            case RolloutDone():
                self.progress.count(ev.label, ev.done, ev.total, self._describe(ev.label))
            case InitialDecision() | NoCandidate() | GateDecision():
                self.eta.decision(ev)
                self.best = ev.best
                self.progress.print(decision_line(ev))
            case Stopped():
                self.progress.print(stopped_line(ev.step, ev.epoch, ev.reason, ev.budget))
            case ProposalMade(secrets=int(n)) if n:
                what = "guidance" if ev.call == "slow_update" else "edits"
                self.progress.print(
                    f"step {ev.step:<3} [yellow]removed[/] {n} secret value{'s' if n != 1 else ''} "
                    f"from the optimizer's {what} (replaced with ***)"
                )
            case ProposalMade(skipped=str(skipped)) if skipped:
                what = (
                    "meta notes"
                    if ev.call == "notes"
                    else f"{ev.call} minibatch of {len(ev.tasks)} tasks"
                )
                self.progress.print(
                    f"step {ev.step:<3} [yellow]skipped[/] {what} — {escape(skipped)}"
                )


def eta_text(seconds: float) -> str:
    """`7s`, `42s`, `3m 05s`, `1h 02m`: whole seconds (an estimate has no tenths)."""
    return f"{round(seconds)}s" if seconds < 10 else api.duration(seconds)


def stopped_line(step: int, epoch: int | None, reason: str, budget: str | None = None) -> str:
    """The line of a run that stopped: by a budget (`budget` names its flag), or early
    (a stall) after `step` of `epoch`."""
    if budget:
        return f"[yellow]stopped: budget[/] after step {step} — {escape(reason)}"
    return f"[yellow]stopped early[/] after step {step} (epoch {epoch}) — {escape(reason)}"


def decision_line(ev: Decided) -> str:
    """The line of a decision: the initial skill's score, a step that made no
    candidate (and why), or the gate's verdict with its numbers."""
    from skillopt.api.events import GateDecision, InitialDecision

    if isinstance(ev, InitialDecision):
        return f"step 0   initial      val {display.score(ev.val)}"
    label = "slow " if ev.step_kind == "slow_update" else ""
    if not isinstance(ev, GateDecision):  # no candidate, or a skipped slow update
        what = "no candidate" if ev.decision == "no_candidate" else "skipped"
        return f"step {ev.step:<3} {label}{what} — {escape(ev.reason)}"
    color = "green" if ev.accepted else "red"
    if ev.trial:  # a decomposed step's later candidate: which of its edits
        label += f"({escape(ev.trial)}) "
    delta = ev.delta
    # the p-value is shown only where it decides (the `paired` gate): under `strict`,
    # `margin` and `no-regression` an "accepted, p=0.500" reads as a contradiction
    p = ev.p_value if ev.gate not in ("strict", "margin", "no-regression") else None
    shown = f" ({display.delta(delta)})" if delta is not None else ""
    reason = ev.reason
    if shown and reason.endswith(shown):  # "better on validation (+0.083)": said once
        reason = reason[: -len(shown)]
    held = ev.held  # `--part both`: the other part's score, which must not fall
    kept = (
        f" · {escape(str(held.get('part')))} {display.score(held.get('incumbent_mean'))}"
        f"→{display.score(held.get('candidate_mean'))}"
        if held
        else ""
    )
    return (
        f"step {ev.step:<3} {label}[{color}]{ev.decision:<9}[/] "
        f"{escape(ev.gated_on or 'val')} {display.score(ev.val)}"
        + shown
        + (f" p={display.p_value(p, floor=True)}" if p is not None else "")
        + flips_text(ev.fail_to_pass, ev.pass_to_fail)
        + kept
        + f" · best {display.score(ev.best)} — {escape(reason)}"
    )


def flips_text(gains: tuple[str, ...] | None, regressions: tuple[str, ...] | None) -> str:
    """` · fail→pass 3 · pass→fail 1 (keep-3)`: the tasks a candidate gained and the
    ones it broke (named: they are what to look at), apart, so a tie of 3 gains and
    3 losses does not read as a candidate that changed nothing. Empty when no task
    flipped, or in a log from before decisions carried them."""
    if not gains and not regressions:
        return ""
    broke = f" ({escape(display.ids(list(regressions or ()), 3))})" if regressions else ""
    return f" · fail→pass {len(gains or ())} · pass→fail {len(regressions or ())}{broke}"
