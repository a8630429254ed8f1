"""Ctrl-C during `skillopt eval` in a real process: exit 130, nothing scored is
lost, and the same command resumes from the store."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from helpers import write_skill, write_suite

TESTS = Path(__file__).resolve().parents[1]


def scored_rows(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT COUNT(*) FROM rollouts WHERE status = 'scored'").fetchone()[
                0
            ]
    except sqlite3.OperationalError:
        return 0


def test_sigint_keeps_finished_rollouts_and_rerun_resumes(isolated):
    """Six rollouts finish, the next ones wait (`gated`) until the run has said it
    was interrupted: no race between Ctrl-C and the run's end on a busy machine."""
    skill = write_skill(isolated / "skills", "slow")
    items = [
        {"id": f"t{i:02d}", "input": f"q{i}", "expected": "A", "split": "test"} for i in range(40)
    ]
    suite = write_suite(isolated / "suite.yaml", items)
    gate = isolated / "gate"
    env = {**os.environ, "PYTHONPATH": str(TESTS), "SKILLOPT_TEST_GATE": str(gate)}
    cmd = [
        sys.executable,
        "-m",
        "skillopt",
        "eval",
        str(skill),
        "--tasks",
        str(suite),
        "--target",
        "scripted/scripted_targets:gated",
        "--concurrency",
        "2",
        "--json",
        "out.json",
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    db = isolated / "runs" / "rollouts.sqlite"
    try:
        deadline = time.monotonic() + 300  # generous for a loaded machine; never reached
        while scored_rows(db) < 6:
            assert time.monotonic() < deadline, "six rollouts never finished"
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        assert proc.stderr is not None
        err = ""
        for line in proc.stderr:  # ends at the run's last word if it never says it
            err += line
            if "interrupted" in line:
                break
        gate.write_text("")  # the waiting rollouts end, and with them the process
        out, rest = proc.communicate(timeout=300)
        err += rest
    finally:
        gate.write_text("")
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "rerun the same command" in err
    assert "Traceback" not in err
    saved = scored_rows(db)
    assert 6 <= saved < 40

    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads((isolated / "out.json").read_text())["results"][0]
    assert result["cached"] >= saved  # finished rollouts were not redone
    assert result["model_calls"] == 40 - result["cached"]
    assert result["n"] == 40 and result["mean"] == 1.0
