"""How long a long command has left: a stage at its pace so far (`remaining`), and
a whole training run from its events (`RunEta`).

Invariant: every estimate is a pure function of counts and the times the caller's
clock gave (tests replace the clock); an estimate errs long rather than short.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skillopt.api.events import Decided, Stage

Clock = Callable[[], float]


def remaining(elapsed: float | None, done: float, total: float | None) -> float | None:
    """Seconds left in a stage at its mean pace so far; None before the first item."""
    if total is None or elapsed is None or done <= 0:
        return None
    return max(0.0, elapsed * (total - done) / done)


def run_eta(elapsed: float, timed: int, left: int, test: float = 0.0) -> float | None:
    """Seconds until a training run is done: the `left` steps still to run at the mean
    pace of the `timed` steps that took `elapsed` seconds, plus `test`, the test
    split's expected seconds; None before a step has been timed."""
    if timed <= 0:
        return None
    return elapsed / timed * max(0, left) + max(0.0, test)


# the skills the test split scores at the end of a run: no skill, initial, best
TEST_SKILLS = 3


def expected_test_time(n_val: int, n_test: int, val_pass: float | None, step: float) -> float:
    """The expected seconds of the test split of `n_test` tasks, which scores up to
    `TEST_SKILLS` skills (fewer when the best is the initial skill: an estimate
    errs long). Assumed: a test task takes what a validation task took in the
    baseline pass (`val_pass` seconds for `n_val` tasks, at the same concurrency
    and samples). With no timed baseline (a resumed run), one validation pass is
    assumed to take one mean `step` (a train batch and a gate)."""
    if n_test <= 0:
        return 0.0
    per_pass = step if val_pass is None else val_pass
    return TEST_SKILLS * per_pass * n_test / max(1, n_val)


class RunEta:
    """When a training run should be done, from its events: the plan's number of
    steps (`run_started`), the wall time of each step finished in this process
    (from its first stage to its decision, so slow updates and notes between steps
    are spread over the steps) and the test split's estimate (`expected_test_time`).
    `left()` counts down from the last estimate, which each finished step renews."""

    def __init__(self, clock: Clock = time.monotonic):
        self.clock = clock
        self.steps = 0  # regular steps in the plan (slow updates are not counted)
        self.n_val = self.n_test = 0
        self.val_pass: float | None = None  # seconds the baseline validation took
        self._baseline: float | None = None
        self._first: float | None = None  # when the first step of this process began
        self._current = 0  # the step in progress, counted over the whole plan (1-based)
        self.timed = 0  # steps finished in this process
        self.estimate: float | None = None
        self._at = 0.0

    def started(self, steps: int, splits: dict[str, int] | None) -> None:
        self.steps = steps
        self.n_val = (splits or {}).get("val", 0)
        self.n_test = (splits or {}).get("test", 0)

    def stage(self, ev: Stage) -> None:
        now = self.clock()
        if ev.stage == "baseline":
            self._baseline = now
        elif ev.stage == "rollout" and ev.k is not None and ev.per_epoch is not None:
            # a step begins: epoch and k are 1-based, and a resumed run starts mid-plan
            epoch = ev.epoch if ev.epoch is not None else 1
            self._current = (epoch - 1) * ev.per_epoch + ev.k
            if self._first is None:
                self._first = now

    def decision(self, ev: Decided) -> None:
        now = self.clock()
        if ev.step_kind == "initial" and self._baseline is not None:
            self.val_pass = now - self._baseline
        elif ev.step_kind == "step" and self._first is not None:
            self.timed += 1
            elapsed = now - self._first
            test = expected_test_time(self.n_val, self.n_test, self.val_pass, elapsed / self.timed)
            self.estimate = run_eta(elapsed, self.timed, self.steps - self._current, test)
            self._at = now

    def left(self) -> float | None:
        """Seconds left now, counting down from the last estimate (never below 0)."""
        if self.estimate is None:
            return None
        return max(0.0, self.estimate - (self.clock() - self._at))
