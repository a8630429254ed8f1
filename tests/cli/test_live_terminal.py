"""The progress display as a person sees it: `skillopt train` and `eval` run in a real
80-column pseudo-terminal whose bytes go through a VT emulator (pyte), and with stdout
and stderr piped, as in a CI log."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from helpers import write_skill, write_suite
from ptyterm import run_in_pty

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"

DECISION = re.compile(r"step \d+ +(initial|accepted|rejected|no candidate|skipped)\b")
BAR = "━"
# the right-hand numbers of a bar: counts, elapsed time, and a real estimate of time left
NUMBERS = re.compile(r" (\d+)/(\d+) \d+:\d\d:\d\d eta \d+:\d\d:\d\d$")


def child_env(**extra: str) -> dict[str, str]:
    """This checkout first on the child's path (its `skillopt`, and the scripted targets)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)]), **extra}


def small_world(root: Path) -> tuple[Path, Path]:
    skill = write_skill(root / "skills", "caps", body="# Caps\n\nAnswer the code.\n")
    items = [
        {"id": f"{split}-{i}", "input": f"code {split} {i}", "split": split}
        for split in ("train", "val", "test")
        for i in range(4)
    ]
    for item in items:
        item["expected"] = item["input"].upper()
    return skill, write_suite(root / "caps.yaml", items)


def train_argv(skill: Path, suite: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "skillopt",
        "train",
        str(skill),
        "--tasks",
        str(suite),
        "--target",
        "scripted/scripted_targets:learns_from_examples",
        "--optimizer",
        "exemplars",
        "--epochs",
        "1",
        "--batch-size",
        "2",
        "--concurrency",
        "1",
        "--no-slow-update",
    ]


def test_train_in_an_80_column_terminal_keeps_decisions_apart_from_the_bar(isolated):
    skill, suite = small_world(isolated)
    screen = run_in_pty(train_argv(skill, suite), cwd=isolated, env=child_env(), cols=80)
    assert screen.returncode == 0, screen.text

    # the final screen: the transient bar is gone, each decision on a row of its own
    decisions = [row for row in screen.lines if DECISION.search(row)]
    assert [DECISION.search(r)[1] for r in decisions][:2] == ["initial", "accepted"], screen.text
    assert all(DECISION.match(row) for row in decisions), screen.text  # at column 0
    assert not any(BAR in row for row in screen.lines), screen.text
    assert "validation 0.000 → 1.000" in screen.text
    # the validation-size warning, wrapped between words (a terminal left to wrap it
    # cuts a word in two: `suit` / `e's`)
    start = next(i for i, row in enumerate(screen.lines) if row.startswith("warning: the val"))
    rows = screen.lines[start : start + 3]
    joined = " ".join(row.strip() for row in rows)
    assert joined.startswith("warning: the validation split has 4 tasks: a single task"), rows
    assert "raise the suite's `split: val` fraction)" in joined, rows

    # every frame drawn while it ran: no decision glued to a bar, or a bar to a decision
    for row in screen.seen:
        if DECISION.search(row):
            assert DECISION.match(row) and BAR not in row, row
    bars = [row for row in screen.seen if BAR in row]
    assert bars
    assert all(len(row) <= 80 for row in screen.seen)
    counted = [m for row in bars if (m := NUMBERS.search(row))]
    # whole counts and times at 80 columns, an estimate of time left after the first rollout
    assert any(int(m[1]) >= 1 and m[2] == "4" for m in counted), bars
    assert any("val (candidate)" in row and NUMBERS.search(row) for row in bars), bars


def test_eval_in_an_80_column_terminal(isolated):
    skill, suite = small_world(isolated)
    argv = [
        sys.executable,
        "-m",
        "skillopt",
        "eval",
        str(skill),
        "--tasks",
        str(suite),
        "--split",
        "all",
        "--compare-no-skill",
        "--target",
        "scripted/scripted_targets:learns_from_examples",
        "--concurrency",
        "1",
    ]
    screen = run_in_pty(argv, cwd=isolated, env=child_env(), cols=80)
    assert screen.returncode == 0, screen.text
    assert not any(BAR in row for row in screen.lines)
    assert screen.lines[0].startswith("caps ("), screen.text
    bars = [row for row in screen.seen if BAR in row]
    assert any(row.startswith("no-skill · test") and NUMBERS.search(row) for row in bars), bars
    assert any(row.startswith("skill · test") and NUMBERS.search(row) for row in bars), bars


def test_piped_output_gets_plain_progress_lines_and_each_decision_once(isolated):
    skill, suite = small_world(isolated)
    done = subprocess.run(
        train_argv(skill, suite),
        cwd=isolated,
        env=child_env(SKILLOPT_PROGRESS_INTERVAL="0"),  # a line at every rollout
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout + done.stderr  # no cursor moves, no colours
    progress = done.stderr.splitlines()
    clock = r"\d+:\d\d:\d\d"
    assert any(
        re.fullmatch(f"baseline · val: 1/4 rollouts · {clock} elapsed · ~{clock} left", p)
        for p in progress
    ), progress
    assert any(re.fullmatch(f"baseline · val: 4/4 rollouts · {clock}", p) for p in progress)
    assert any(
        re.fullmatch(
            r"step 1 · val \(candidate\) · best val 0\.000 · epoch 1/1: 4/4 rollouts .*", p
        )
        for p in progress
    ), progress
    decisions = [line for line in done.stdout.splitlines() if DECISION.search(line)]
    assert [DECISION.match(d)[1] for d in decisions][:2] == ["initial", "accepted"]
    for line in decisions:
        assert done.stdout.count(line) == 1 and line not in done.stderr
