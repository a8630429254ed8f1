"""Reproductions, with real processes, of races between processes that share a rollout
store or a runs directory: first use of a new store or audit repository, two evals of
the same skill at once, and a claimer killed while it holds leases.

Each test fails on the code before the fix: the first-open races raised `table
rollouts already exists` / `InvalidGitRepositoryError`, two evals paid every rollout
twice, and without leases a second process never waits for the first.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import write_skill, write_suite

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses fork and kill -9")

PROCESSES = 6
ROUNDS = 20


def _rounds(barrier, errors, open_one) -> None:
    """One worker: for each round, wait until every worker is ready, then open at once."""
    for r in range(ROUNDS):
        try:
            barrier.wait(timeout=30)
        except Exception:  # another worker broke the barrier; its error is reported
            return
        try:
            open_one(r)
        except BaseException as exc:
            errors.put(f"round {r}: {type(exc).__name__}: {exc}")


def _race(open_one) -> list[str]:
    """Run `open_one(round)` in PROCESSES forked processes released together, ROUNDS
    times; return the errors they met."""
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(PROCESSES)
    errors = ctx.Queue()
    procs = [
        ctx.Process(target=_rounds, args=(barrier, errors, open_one)) for _ in range(PROCESSES)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    found = []
    while not errors.empty():
        found.append(errors.get())
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    return found


def test_a_new_store_opened_by_many_processes_at_once(tmp_path):
    from skillopt.store.rollouts import RolloutStore
    from skillopt.store.schema import MIGRATIONS

    def open_store(r):
        RolloutStore(tmp_path / f"r{r}" / "rollouts.sqlite").close()

    assert _race(open_store) == []
    for r in range(ROUNDS):  # each database migrated once, completely
        with RolloutStore(tmp_path / f"r{r}" / "rollouts.sqlite") as store:
            names = [row[0] for row in store._db.execute("SELECT name FROM migrations")]
        assert sorted(names) == sorted(m.__name__ for m in MIGRATIONS)


def test_a_new_audit_repository_created_by_many_processes_at_once(tmp_path):
    from skillopt.store.audit import Audit

    skill_dir = write_skill(tmp_path / "skills", "caps")  # not inside a git repository

    def create(r):
        audit = Audit.create(skill_dir, tmp_path / f"r{r}" / "runs", "run")
        assert audit.repo.bare and audit.tip() is None

    assert _race(create) == []
    for r in range(ROUNDS):
        runs = tmp_path / f"r{r}" / "runs"
        # no temp left over; runs/ was made here, so it ignores itself (store.run.output_dir)
        assert sorted(p.name for p in runs.iterdir()) == [".gitignore", "audit.git"]


# ---------------------------------------------------------------- shared rollouts
TARGET = """\
import os, time

def _log(text):
    with open(os.environ["RACE_LOG"], "a") as f:
        f.write(f"{os.getpid()} {time.time():.6f} {text}\\n")

_log("start")  # imported when the target is resolved, before any rollout runs


def slow(messages):
    _log("call " + messages[-1]["content"])
    time.sleep(0.05)
    return messages[-1]["content"].upper()


def hangs_in_first(messages):
    _log("call " + messages[-1]["content"])
    if os.environ.get("RACE_HANG"):
        time.sleep(120)
    return messages[-1]["content"].upper()
"""

RUNNER = """\
import json, sys
from skillopt import api
from skillopt.store.rollouts import RolloutStore

skill, suite, store_path, out, ttl = sys.argv[1:6]
store = RolloutStore(store_path, lease_ttl=float(ttl))
result = api.evaluate(skill, suite, split="test", store=store,
                      **{"target": "scripted/race_target:hangs_in_first",
                             "concurrency": 1})
json.dump([[r.task_id, r.score, r.cached] for r in result.all_rollouts], open(out, "w"))
"""


@pytest.fixture
def shared(isolated, monkeypatch):
    """A skill, a suite of `word<i>` tasks, a target module logging every call."""
    (isolated / "race_target.py").write_text(TARGET)
    (isolated / "runner.py").write_text(RUNNER)
    monkeypatch.setenv("RACE_LOG", str(isolated / "calls.log"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(isolated), *sys.path]))
    skill = write_skill(isolated / "skills", "caps", body="# Caps\n\nAnswer in capitals.\n")

    def suite(n):
        items = [{"id": f"w{i:03d}", "input": f"word{i}", "expected": f"WORD{i}"} for i in range(n)]
        return write_suite(
            isolated / "tasks" / f"caps{n}.yaml",
            items,
            split={"seed": 1, "train": 0.0, "val": 0.0, "test": 1.0},
        )

    return skill, suite


def read_log(path: Path) -> list[tuple[int, float, str]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        pid, at, text = line.split(" ", 2)
        rows.append((int(pid), float(at), text))
    return rows


def test_two_evals_of_the_same_skill_pay_each_rollout_once(shared, isolated):
    skill, suite = shared
    n = 60
    suite_path = suite(n)
    cmd = [
        sys.executable,
        "-m",
        "skillopt",
        "eval",
        str(skill),
        "--tasks",
        str(suite_path),
        "--target",
        "scripted/race_target:slow",
        "--store",
        "shared.sqlite",
        "--concurrency",
        "2",
    ]
    procs = [
        subprocess.Popen(
            [*cmd, "--json", f"out{i}.json"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        for i in range(2)
    ]
    for p in procs:
        out, _ = p.communicate(timeout=60)
        assert p.returncode == 0, out.decode()

    log = read_log(isolated / "calls.log")
    calls = [row for row in log if row[2].startswith("call ")]
    starts = sorted(at for _, at, text in log if text == "start")
    assert len(starts) == 2 and starts[1] < max(at for _, at, _ in calls)  # they overlapped
    assert len(calls) == n  # every rollout paid once, not once per process
    assert len({text for _, _, text in calls}) == n

    a, b = (json.loads((isolated / f"out{i}.json").read_text()) for i in range(2))
    assert a["results"][0]["mean"] == b["results"][0]["mean"] == 1.0
    score = {(r["task_id"], r["score"]) for r in a["rollouts"]}
    assert score == {(r["task_id"], r["score"]) for r in b["rollouts"]}
    fresh = sum(1 for d in (a, b) for r in d["rollouts"] if not r["cached"])
    assert fresh == n  # each rollout reported as paid by exactly one of the two
    assert a["results"][0]["model_calls"] + b["results"][0]["model_calls"] == n


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_a_killed_claimer_does_not_block_the_others(shared, isolated):
    skill, suite = shared
    n = 6
    suite_path = suite(n)
    log_path = isolated / "calls.log"
    ttl = 1.0

    def start(name, **env):
        return subprocess.Popen(
            [
                sys.executable,
                "runner.py",
                str(skill),
                str(suite_path),
                "shared.sqlite",
                f"{name}.json",
                str(ttl),
            ],
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )

    first = start("first", RACE_HANG="1")  # claims, then hangs inside its first rollout
    try:
        assert wait_for(lambda: any(t.startswith("call ") for _, _, t in read_log(log_path)))
        [(_, _, hung)] = [row for row in read_log(log_path) if row[2].startswith("call ")]
        second = start("second")
        try:
            # the second runs every rollout the first does not hold (a serial run
            # claims one rollout at a time)...
            assert wait_for(
                lambda: (
                    sum(
                        1
                        for pid, _, t in read_log(log_path)
                        if pid == second.pid and t.startswith("call ")
                    )
                    == n - 1
                )
            )
            # ...and leaves alone the one the first is running: its lease is renewed
            # while it lives, well past one TTL
            time.sleep(2 * ttl)
            assert second.poll() is None, second.communicate()[0].decode()
            assert hung not in {t for pid, _, t in read_log(log_path) if pid == second.pid}

            os.kill(first.pid, signal.SIGKILL)  # dies holding its lease
            first.wait(timeout=10)
            out, _ = second.communicate(timeout=15)  # takes over once the lease expires
            assert second.returncode == 0, out.decode()
        finally:
            if second.poll() is None:
                second.kill()
                second.wait()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()

    rows = json.loads((isolated / "second.json").read_text())
    assert len(rows) == n and all(score == 1.0 for _, score, _ in rows)
    second_calls = [t for pid, _, t in read_log(log_path) if pid == second.pid]
    assert hung in second_calls  # the killed claimer's rollout was run by the survivor
    assert len([t for t in second_calls if t.startswith("call ")]) == n
