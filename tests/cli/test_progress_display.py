"""`skillopt.cli.progress` with a hand-moved clock: each stage its own clock and count,
the estimate of time left, the layout at 80 columns, and when a log gets a line."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from skillopt._util import display
from skillopt.cli import common
from skillopt.cli.eta import RunEta, expected_test_time, remaining, run_eta
from skillopt.cli.progress import (
    INTERVAL_ENV,
    LiveDisplay,
    PlainDisplay,
    interval_from_env,
    numbers,
    status,
)
from skillopt.cli.train_live import TrainProgress, eta_text
from skillopt.errors import InputError
from skillopt.training.events import (
    GateDecision,
    InitialDecision,
    NoCandidate,
    RolloutDone,
    RunStarted,
    Stage,
)


class Clock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def terminal(width: int = 80) -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=width, color_system=None)


def log() -> Console:
    return Console(file=io.StringIO(), width=200)


def lines(console: Console) -> list[str]:
    return console.file.getvalue().splitlines()  # type: ignore[attr-defined]


def test_durations_and_time_left():
    assert display.clock(0) == "0:00:00"
    assert display.clock(70.9) == "0:01:10"
    assert display.clock(12 * 3600 + 5) == "12:00:05"
    assert display.clock(-3) == "0:00:00"
    assert display.clock(None) == "—" and display.clock(None, none="-:--:--") == "-:--:--"
    assert remaining(70, 24, 48) == 70
    assert remaining(10, 0, 48) is None and remaining(None, 3, 4) is None
    assert remaining(10, 3, None) is None and remaining(10, 4, 4) == 0
    assert numbers(24, 48, 70) == "24/48 0:01:10 eta 0:01:10"
    assert numbers(3, 48, 9) == " 3/48 0:00:09 eta 0:02:15"
    assert numbers(0, 48, 1) == " 0/48 0:00:01 eta -:--:--"
    assert numbers(0, None, 12) == "0:00:12"
    assert (
        status("val initial", 24, 48, 70)
        == "val initial: 24/48 rollouts · 0:01:10 elapsed · ~0:01:10 left"
    )
    assert status("val initial", 48, 48, 140) == "val initial: 48/48 rollouts · 0:02:20"
    assert status("step 3 · reflect", 0, None, 31) == "step 3 · reflect: 0:00:31 elapsed"


def rows(live: LiveDisplay, width: int = 80) -> list[str]:
    """The bar line and the run's line under it, as a terminal of `width` columns
    shows them now."""
    console = terminal(width)
    console.print(live.progress.get_renderable())
    return [row.rstrip() for row in lines(console)]


def shown(live: LiveDisplay, width: int = 80) -> str:
    """The bar line as a terminal of `width` columns shows it now."""
    return rows(live, width)[0]


def test_each_stage_has_its_own_clock_even_with_equal_totals():
    """The bug: one task for the whole run froze elapsed time at the first stage's end
    (`0:03:12` for minutes) whenever the next stage had the same total."""
    clock = Clock()
    live = LiveDisplay(terminal(), clock=clock)
    live.stage("baseline")
    for done in range(1, 13):
        clock.now += 16
        live.count("baseline · val", done, 12, "baseline · val")
    assert shown(live).endswith(" 12/12 0:03:12 eta 0:00:00")
    clock.now += 100
    assert shown(live).endswith(" 12/12 0:03:12 eta 0:00:00")  # finished: its time stays

    live.stage("step 1 · reflect")  # a stage without a count: a clock of its own
    clock.now += 300
    assert shown(live).startswith("step 1 · reflect ━") and shown(live).endswith(" 0:05:00")
    live.stage("step 1 · gate")
    clock.now += 10  # the first rollout of the next batch takes 10 s: it counts
    live.count("step 1 · val (candidate)", 1, 12, "step 1 · val (candidate)")
    assert len(live.progress.tasks) == 1  # a fresh task, not the finished one
    assert live.elapsed == 10
    assert shown(live).endswith("  1/12 0:00:10 eta 0:01:50")

    # the same label again, counting from the start: another batch, another clock
    clock.now += 110
    live.count("step 1 · val (candidate)", 12, 12, "step 1 · val (candidate)")
    clock.now += 5
    live.count("step 1 · val (candidate)", 1, 12, "step 1 · val (candidate)")
    assert shown(live).endswith("  1/12 0:00:05 eta 0:00:55")


def test_the_numbers_stay_whole_at_80_columns_and_the_description_is_cut():
    clock = Clock()
    console = terminal(80)
    live = LiveDisplay(console, clock=clock)
    long = "step 12 · val (candidate) · best val 0.625 · epoch 3/4 · " + "x" * 60
    clock.now += 5
    live.count("a", 1, 144, long)
    clock.now += 60
    live.count("a", 13, 144, long)
    row = shown(live, 80)
    assert len(row) <= 80
    assert row.endswith(" 13/144 0:01:05 eta 0:10:55")
    assert row.startswith("step 12 · val (candidate)") and "…" in row
    live = LiveDisplay(terminal(150), clock=clock)
    live.count("a", 13, 144, "test · best")
    row = shown(live, 150)
    assert row.startswith("test · best ━") and row.endswith(" 13/144 0:00:00 eta 0:00:00")
    assert row.count("━") + row.count("╸") + row.count("╺") <= 40


def test_lines_printed_under_a_live_bar_go_to_its_console_not_stdout(capsys):
    console = terminal()
    live = LiveDisplay(console, clock=Clock())
    live.print("step 0   initial      val 0.500")
    assert "step 0   initial      val 0.500" in console.file.getvalue()  # type: ignore[attr-defined]
    assert capsys.readouterr().out == ""


def test_a_log_gets_a_line_per_quarter_per_interval_and_per_finished_stage():
    clock = Clock()
    console = log()
    plain = PlainDisplay(30, clock=clock, console=console, heartbeat=False)
    # a quick batch: only its last line (quarters come faster than interval / 6 = 5 s)
    for done in range(1, 9):
        clock.now += 0.5
        plain.count("step 1 · train", done, 8, "step 1 · train")
    assert lines(console) == ["step 1 · train: 8/8 rollouts · 0:00:04"]

    # a slow batch of 40: a line at each quarter, and one after 30 s without a line
    console = log()
    plain = PlainDisplay(30, clock=clock, console=console, heartbeat=False)
    for done in range(1, 41):
        clock.now += 2 if done <= 10 else 40 if done == 11 else 1
        plain.count("val", done, 40, "val")
    assert lines(console) == [
        "val: 10/40 rollouts · 0:00:20 elapsed · ~0:01:00 left",  # a quarter
        "val: 11/40 rollouts · 0:01:00 elapsed · ~0:02:38 left",  # 40 s since the last
        "val: 20/40 rollouts · 0:01:09 elapsed · ~0:01:09 left",
        "val: 30/40 rollouts · 0:01:19 elapsed · ~0:00:26 left",
        "val: 40/40 rollouts · 0:01:29",
    ]


def test_a_quiet_stage_is_reported_every_interval():
    clock = Clock()
    console = log()
    plain = PlainDisplay(30, clock=clock, console=console, heartbeat=False)
    plain.tick()
    assert lines(console) == []  # no stage yet
    plain.stage("step 3 · reflect")
    clock.now += 29
    plain.tick()
    assert lines(console) == []
    clock.now += 1
    plain.tick()
    clock.now += 10
    plain.tick()
    assert lines(console) == ["step 3 · reflect: 0:00:30 elapsed"]
    clock.now += 20
    plain.tick()
    assert lines(console)[-1] == "step 3 · reflect: 0:01:00 elapsed"
    plain.stage("step 3 · gate")
    clock.now += 2
    plain.count("step 3 · val", 4, 4, "step 3 · val")
    clock.now += 100
    plain.tick()  # a finished stage is not reported again
    assert lines(console)[-1] == "step 3 · val: 4/4 rollouts · 0:00:02"


def test_interval_zero_reports_every_rollout_and_a_bad_value_is_an_input_error(monkeypatch):
    console = log()
    plain = PlainDisplay(0, clock=Clock(), console=console, heartbeat=False)
    for done in (1, 2, 3):
        plain.count("val", done, 3, "val")
    assert len(lines(console)) == 3
    assert interval_from_env() == 30
    monkeypatch.setenv(INTERVAL_ENV, "5")
    assert interval_from_env() == 5
    monkeypatch.setenv(INTERVAL_ENV, "soon")
    with pytest.raises(InputError, match=f"{INTERVAL_ENV}: 'soon' is not a number of seconds"):
        interval_from_env()


def test_train_progress_describes_the_stage_first_and_prints_decisions_through_the_display():
    clock = Clock()
    console = terminal()
    live = LiveDisplay(console, clock=clock)
    view = TrainProgress(live)
    view(RunStarted(epochs=3, steps=6))
    view(Stage(stage="baseline"))
    view(RolloutDone(label="baseline · val", done=1, total=4))
    assert live.progress.tasks[0].description == "baseline · val"
    view(InitialDecision(val=0.5, best=0.5))
    view(Stage(stage="reflect", step=1, epoch=1))
    assert live.progress.tasks[0].description == "step 1 · reflect"
    assert rows(live)[1] == "best val 0.500 · epoch 1/3"
    view(Stage(stage="test"))
    view(RolloutDone(label="test · no_skill", done=1, total=4))
    assert live.progress.tasks[0].description == "test · no skill"
    assert rows(live)[1] == "best val 0.500 · epoch 1/3"
    assert "step 0   initial      val 0.500" in console.file.getvalue()  # type: ignore[attr-defined]


def test_output_stays_scrubbed_while_a_live_display_redirects_the_streams(monkeypatch):
    """Under a live bar sys.stdout and sys.stderr are rich's redirects; the consoles
    must still write through `safe`, not to the raw stream behind the redirect."""
    from rich.file_proxy import FileProxy

    secret = "sk-test-" + "a1b2c3d4e5f6g7h8i9j0k1l2"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    raw = io.StringIO()
    proxy = FileProxy(terminal(), raw)
    monkeypatch.setattr("sys.stderr", proxy)
    assert not hasattr(common.err.file, "rich_proxied_file")
    common.err.print(f"provider said: bad key {secret}")
    assert secret not in raw.getvalue() and "provider said" in raw.getvalue()


def test_decision_line_shows_the_p_value_only_where_it_decides_and_the_delta_once():
    from skillopt.cli.train_live import decision_line

    def step(**fields) -> GateDecision:
        given = {"step": 2, "step_kind": "step", "decision": "accepted", "accepted": True}
        return GateDecision(**given, delta=0.25, val=0.75, **fields)

    strict = decision_line(
        step(p_value=0.5, gate="strict", best=0.75, reason="better on validation (+0.250)")
    )
    assert "p=" not in strict
    assert strict.count("+0.250") == 1 and strict.endswith("— better on validation")
    paired = decision_line(
        step(
            p_value=0.031, gate="paired", best=0.75, reason="better by +0.250 with p=0.031 <= 0.05"
        )
    )
    assert " p=0.031 · best" in paired and paired.endswith("p=0.031 <= 0.05")
    # a checkpoint written before the gate was in the event: the p-value still shows
    assert "p=0.500" in decision_line(step(p_value=0.5, best=0.75, reason="x"))


def test_run_eta_is_the_mean_step_times_the_steps_left_plus_the_test_split():
    assert run_eta(60, 0, 5) is None  # no step timed yet: no estimate
    assert run_eta(60, 2, 4) == 120  # 30 s a step, 4 steps left
    assert run_eta(60, 2, 4, test=45) == 165
    assert run_eta(60, 2, 0, test=45) == 45  # the steps are done: the test split is left
    assert run_eta(60, 2, -1) == 0  # more steps than planned (a resumed plan) count none
    # the test split scores three skills (no skill, initial, best): as many passes as
    # the baseline's validation pass, per task; a resumed run takes a step for a pass
    assert expected_test_time(n_val=4, n_test=8, val_pass=10, step=99) == 3 * 10 * 8 / 4
    assert expected_test_time(n_val=4, n_test=4, val_pass=None, step=20) == 60
    assert expected_test_time(n_val=4, n_test=0, val_pass=10, step=20) == 0
    assert [eta_text(s) for s in (0.4, 7.6, 42, 185, 3720)] == [
        "0s",
        "8s",
        "42s",
        "3m 05s",
        "1h 02m",
    ]


def test_run_eta_counts_steps_over_the_plan_from_a_resumed_step():
    clock = Clock()
    eta = RunEta(clock)
    eta.started(10, {"train": 8, "val": 4, "test": 4})
    # resumed at step 7 of 10 (epoch 2 of 5 steps, k 2): no baseline was timed here
    eta.stage(Stage(stage="rollout", step=8, epoch=2, k=2, per_epoch=5))
    clock.now += 30
    assert eta.left() is None
    eta.decision(
        NoCandidate(
            step=8, step_kind="step", decision="no_candidate", reason="", val=None, best=None
        )
    )
    # 3 steps left at 30 s, and one pass (a step's time, 30 s) per test skill
    assert eta.left() == 3 * 30 + 3 * 30
    clock.now += 100
    assert eta.left() == 80  # counts down between steps
    clock.now += 1000
    assert eta.left() == 0


def test_the_live_bar_shows_the_runs_eta_once_a_step_is_done_and_a_log_never_does():
    def feed(view: TrainProgress, clock: Clock) -> None:
        view(RunStarted(epochs=2, steps=4, splits={"val": 4, "test": 4}))
        view(Stage(stage="baseline"))
        clock.now += 10  # the baseline validation pass: 10 s for 4 tasks
        view(RolloutDone(label="baseline · val", done=4, total=4))
        view(InitialDecision(val=0.5, best=0.5))
        view(Stage(stage="rollout", step=1, epoch=1, k=1, per_epoch=2))
        view(RolloutDone(label="step 1 · train", done=1, total=8))
        clock.now += 60
        view(
            GateDecision(
                step=1,
                step_kind="step",
                decision="accepted",
                accepted=True,
                val=0.75,
                best=0.75,
                reason="better",
            )
        )
        view(Stage(stage="rollout", step=2, epoch=1, k=2, per_epoch=2))
        clock.now += 5
        view(RolloutDone(label="step 2 · train", done=1, total=8))

    clock = Clock()
    live = LiveDisplay(terminal(), clock=clock)
    view = TrainProgress(live)
    feed(view, clock)
    # 3 steps left at 60 s, the test split 3 × 10 s, 5 s ago: 205 s
    assert live.progress.tasks[0].description == "step 2 · train"
    assert rows(live, 80)[1] == "best val 0.750 · epoch 1/2 · run ETA 3m 25s"

    clock = Clock()
    console = log()
    plain = PlainDisplay(0, clock=clock, console=console, heartbeat=False)
    view = TrainProgress(plain)
    feed(view, clock)
    assert plain.description == "step 2 · train · best val 0.750 · epoch 1/2"
    assert not any("ETA" in line for line in lines(console))


def test_at_80_columns_the_run_line_keeps_best_val_epoch_and_an_eta_no_less_than_the_stages():
    clock = Clock()
    live = LiveDisplay(terminal(), clock=clock)
    view = TrainProgress(live)
    view(RunStarted(epochs=4, steps=8, splits={"val": 12, "test": 12}))
    view(Stage(stage="baseline"))
    clock.now += 10
    view(RolloutDone(label="baseline · val", done=12, total=12))
    view(InitialDecision(val=0.5, best=0.625))
    view(Stage(stage="rollout", step=1, epoch=3, k=1, per_epoch=2))
    clock.now += 20
    view(
        NoCandidate(
            step=1, step_kind="step", decision="no_candidate", reason="", val=None, best=0.625
        )
    )
    # the run's estimate (7 steps at 20 s, then the test split) runs out while a slow
    # validation batch still has 0:00:43 to go by its own pace
    view(Stage(stage="gate", step=12, epoch=3))
    clock.now += 400
    view(RolloutDone(label="step 12 · val (candidate)", done=8, total=144))
    clock.now += 2
    view(RolloutDone(label="step 12 · val (candidate)", done=130, total=144))
    bar, run = rows(live, 80)
    assert len(bar) <= 80 and len(run) <= 80
    assert bar.startswith("step 12 · val (candidate) ") and bar.endswith(" eta 0:00:43")
    assert view.eta.left() == 0
    assert run == "best val 0.625 · epoch 3/4 · run ETA 43s"


def test_a_long_decision_line_wraps_between_words_never_inside_a_number():
    console = terminal(80)
    live = LiveDisplay(console, clock=Clock())
    line = (
        "step 2   rejected  val — (+0.000) · best 0.667 — cannot beat the incumbent: "
        "+0.000 on the 4 tasks scored (settled after 4 of 12 validation tasks)"
    )
    live.print(line)
    printed = lines(console)
    assert len(printed) == 2 and all(len(row) <= 80 for row in printed)
    assert [w for row in printed for w in row.split()] == line.split()
