"""The progress of a long command: a live bar in a terminal, plain lines in a log.

A command opens one `Display` (`open_display()`), its observers feed it stages and
counts, and every line the command prints meanwhile (a training decision) goes
through `Display.print`. What the user sees depends on where output goes:

- stdout and stderr both a terminal: a live bar on stderr, and lines printed
  meanwhile go through the bar's own console, so each lands on a line of its own
  above the bar instead of being glued to its last frame.
- anything else (a CI log, `> file`, `| tee`): nothing moves the cursor. Lines go to
  stdout; progress goes to stderr as plain lines (`val: 24/48 rollouts · 0:01:10
  elapsed · ~0:01:10 left`) when a stage ends, every `interval` seconds within it
  (also while no rollout finishes), and at each quarter of it at most every
  `interval / 6` seconds. `SKILLOPT_PROGRESS_INTERVAL` sets the interval (30 s).

Under the live bar a command may keep a line of its own (`Display.follow`): `skillopt
train` shows there the best score, the epoch and when the whole run should be done
(`cli/eta.RunEta`, once a step has finished), so a narrow terminal cuts none of it;
a log never gets that estimate, so what a log shows does not change from run to run.

Invariants: each stage has its own clock and count (each batch of rollouts is a stage
of its own), so elapsed time and the estimate of time left are the stage's; a line
given to `print` reaches stdout exactly once, or, with the bar live, the terminal
once, wrapped between words; at any width the numbers (done/total, elapsed, time left) stay whole and the
description is what gets cut. Every time comes from the display's clock, which
tests replace.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Optional

from rich.console import Console, Group, RenderableType
from rich.progress import Progress, ProgressColumn, Task, TaskID
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from skillopt._util import display
from skillopt.cli.common import err, out
from skillopt.cli.eta import Clock, remaining
from skillopt.errors import InputError

# a line under the live bar, given the seconds the stage has left (None: unknown)
Footer = Callable[[Optional[float]], str]

INTERVAL_ENV = "SKILLOPT_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 30.0
MIN_BAR, MAX_BAR = 10, 40


def counts(done: float, total: float | None) -> str:
    """`done/total` with done right-aligned to the width of total (`  3/12`)."""
    if total is None:
        return ""
    return f"{int(done):>{len(str(int(total)))}}/{int(total)}"


def numbers(done: float, total: float | None, elapsed: float | None) -> str:
    """The right-hand side of the live bar: `12/48 0:01:10 eta 0:03:30`, or the
    elapsed time alone for a stage without a count."""
    clock = display.clock(elapsed or 0.0)
    if total is None:
        return clock
    left = display.clock(remaining(elapsed, done, total), none="-:--:--")
    return f"{counts(done, total)} {clock} eta {left}"


def status(description: str, done: int, total: int | None, elapsed: float) -> str:
    """One plain progress line for a log."""
    if total is None:
        return f"{description}: {display.clock(elapsed)} elapsed"
    head = f"{description}: {done}/{total} rollouts · {display.clock(elapsed)}"
    if done >= total:
        return head
    left = remaining(elapsed, done, total)
    return head + " elapsed" + (f" · ~{display.clock(left)} left" if left is not None else "")


class Display:
    """The current stage (what, how far, since when) and where lines go. `stage`
    begins a stage without a count; `count` begins one by itself when a new batch
    of rollouts reports. `live`: a bar redrawn in place (a terminal), not log lines."""

    live = False

    def __init__(self, clock: Clock = time.monotonic):
        self.clock = clock
        self.footer: Footer | None = None
        self.lock = threading.RLock()
        self.key: object = None
        self.description = ""
        self.done = 0
        self.total: int | None = None
        self.started = self.last = clock()
        self.ended: float | None = None

    def __enter__(self) -> Display:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    @property
    def elapsed(self) -> float:
        """Seconds the stage has run (until its last item, once finished)."""
        return (self.clock() if self.ended is None else self.ended) - self.started

    def stage(self, description: str) -> None:
        """Begin a stage without a count (reflection, notes): its clock starts now."""
        with self.lock:
            now = self.clock()
            self._begin(object(), description, None, now)
            self.last = now

    def count(self, key: str, done: int, total: int, description: str) -> None:
        """`done` of `total` items of batch `key`. Another key, another total or a
        count that went back means a new batch: a new stage."""
        with self.lock:
            now = self.clock()
            if key != self.key or total != self.total or done < self.done:
                # a batch first reports when its first rollout is done: it began when
                # whatever came before it ended
                self._begin(key, description, total, self.last)
            self.description, self.done = description, done
            self.ended = now if done >= total else None
            self.last = now
            self.advanced()

    def _begin(self, key: object, description: str, total: int | None, started: float) -> None:
        self.key, self.description, self.done, self.total = key, description, 0, total
        self.started, self.ended = started, None
        self.began()

    def follow(self, footer: Footer) -> None:
        """Show `footer` (what the whole command has come to, given the seconds the
        stage has left) on a line under a live bar; a log shows no footer."""
        self.footer = footer

    def print(self, text: str) -> None:
        """A line of the command's output (rich markup), printed as the display allows."""
        out.print(text, soft_wrap=not out.is_terminal)

    # what a kind of display does when a stage begins or advances
    def began(self) -> None:
        pass

    def advanced(self) -> None:
        pass


class StageColumn(ProgressColumn):
    """The whole bar line, laid out for the console's current width: the description
    (cut with an ellipsis when it does not fit), a bar of 10–40 cells, then the
    numbers, which are never cut; under it the display's footer, if any, drawn with
    the stage's time left at the same moment (so the two never disagree)."""

    def __init__(self, console: Console, display: Display | None = None):
        super().__init__()
        self.console = console
        self.display = display

    def render(self, task: Task) -> RenderableType:
        started, ended = task.fields.get("started"), task.fields.get("ended")
        elapsed = (
            task.elapsed
            if started is None
            else (task.get_time() if ended is None else ended) - started
        )
        right = numbers(task.completed, task.total, elapsed)
        width = self.console.width
        desc = Text(task.description, no_wrap=True, overflow="ellipsis")
        bar = min(MAX_BAR, max(MIN_BAR, width - len(right) - desc.cell_len - 2))
        room = max(1, width - len(right) - bar - 2)
        desc.truncate(room, overflow="ellipsis")
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(width=bar, no_wrap=True)
        grid.add_column(no_wrap=True)
        grid.add_row(
            desc,
            ProgressBar(
                total=task.total,
                completed=task.completed,
                width=bar,
                animation_time=task.get_time(),
            ),
            Text(right, no_wrap=True),
        )
        footer = self.display.footer if self.display is not None else None
        below = footer(remaining(elapsed, task.completed, task.total)) if footer else ""
        if not below:
            return grid
        return Group(grid, Text(below, no_wrap=True, overflow="ellipsis"))


class LiveDisplay(Display):
    """A transient bar on stderr with one rich task per stage; lines printed
    meanwhile go through the bar's console (stderr, the same terminal)."""

    live = True

    def __init__(self, console: Console = err, clock: Clock = time.monotonic):
        super().__init__(clock)
        self.console = console
        self.progress = Progress(
            StageColumn(console, self),
            console=console,
            transient=True,
            get_time=clock,
            redirect_stdout=True,
            redirect_stderr=True,
        )
        self.task: Optional[TaskID] = None

    def start(self) -> None:
        self.progress.start()

    def stop(self) -> None:
        self.progress.stop()

    def began(self) -> None:
        if self.task is not None:
            self.progress.remove_task(self.task)
        self.task = self.progress.add_task(
            self.description, total=self.total, started=self.started, ended=None
        )
        self.progress.refresh()

    def advanced(self) -> None:
        if self.task is not None:
            # drawn now, not at the next tick: every count is shown, even in a fast batch
            self.progress.update(
                self.task,
                completed=self.done,
                description=self.description,
                ended=self.ended,
                refresh=True,
            )

    def print(self, text: str) -> None:
        # wrapped at spaces, as the terminal would otherwise cut it anywhere, even
        # inside a number (`+0.0` / `00 on the 4 tasks scored`)
        self.console.print(text, soft_wrap=False, overflow="fold")


class PlainDisplay(Display):
    """Plain progress lines on stderr for a log; lines printed meanwhile go to stdout.
    With `heartbeat`, a thread reports a stage that has been quiet for `interval`
    seconds (a slow agent, a long optimizer call)."""

    def __init__(
        self,
        interval: float = DEFAULT_INTERVAL,
        *,
        clock: Clock = time.monotonic,
        console: Console = err,
        heartbeat: bool = True,
    ):
        super().__init__(clock)
        self.interval = interval
        self.console = console
        self.last_line: float | None = None
        self.quarter = 0
        self.active = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._heartbeat = heartbeat and interval > 0

    def start(self) -> None:
        if self._heartbeat:
            self._thread = threading.Thread(
                target=self._beat, name="skillopt-progress", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.active = False

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            self.tick()

    def _report(self, now: float) -> None:
        self.console.print(
            status(self.description, self.done, self.total, self.elapsed),
            soft_wrap=True,
            markup=False,
            highlight=False,
        )
        self.last_line = now

    def _quiet(self, now: float) -> float:
        """Seconds since the last line, or since the stage began if that is later."""
        return now - (self.started if self.last_line is None else max(self.started, self.last_line))

    def began(self) -> None:
        self.active = True
        self.quarter = 0

    def advanced(self) -> None:
        now = self.clock()
        total = self.total or 0
        quarter = 4 * self.done // total if total else 4
        quiet = self._quiet(now)
        if (
            self.done >= total
            or quiet >= self.interval
            or (quarter > self.quarter and quiet >= self.interval / 6)
        ):
            self._report(now)
        self.quarter = max(self.quarter, quarter)
        self.active = self.done < total  # a finished stage has nothing more to report

    def tick(self) -> None:
        """Report the current stage if it has been quiet for `interval` seconds."""
        with self.lock:
            now = self.clock()
            if self.active and self._quiet(now) >= self.interval:
                self._report(now)


def interval_from_env() -> float:
    raw = os.environ.get(INTERVAL_ENV, "").strip()
    if not raw:
        return DEFAULT_INTERVAL
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise InputError(f"{raw!r} is not a number of seconds (0 or more)", field=INTERVAL_ENV)
    return value


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def open_display() -> Display:
    """The live bar when stdout and stderr are both a terminal, plain lines otherwise."""
    interval = interval_from_env()
    if _isatty(sys.stdout) and _isatty(sys.stderr):
        return LiveDisplay()
    return PlainDisplay(interval)
