"""Scripted targets for the tests of `executor: ray`, referenced by name
(`scripted/ray_targets:<fn>`) and imported on the cluster's workers (the tests'
runtime_env puts tests/ on their PYTHONPATH). An input `<word> <dir>` names a
directory the target leaves marks in, so a test can see, from outside, which
worker ran what."""

from __future__ import annotations

import os
import time
from pathlib import Path


def _task(messages) -> tuple[str, Path | None]:
    word, _, where = messages[-1]["content"].partition(" ")
    return word, Path(where) if where else None


def dies_once(messages):
    """Answers the word in capitals; for `die <dir>`, the first attempt writes its
    worker's pid to `<dir>/pid` and waits to be killed; a later one answers."""
    word, where = _task(messages)
    if word == "die" and where is not None and not (where / "pid").exists():
        (where / "pid.tmp").write_text(str(os.getpid()))
        os.rename(where / "pid.tmp", where / "pid")
        time.sleep(120)
    return word.upper()


def waits_for_ctrl_c(messages):
    """Writes `<dir>/started-<pid>`, then sleeps; a KeyboardInterrupt (a cancelled
    Ray task) leaves `<dir>/interrupted-<pid>` before it goes on."""
    word, where = _task(messages)
    if where is not None:
        (where / f"started-{os.getpid()}").write_text("")
        try:
            time.sleep(600)  # longer than any test waits: only a Ctrl-C ends it
        except KeyboardInterrupt:
            (where / f"interrupted-{os.getpid()}").write_text("")
            raise
    return word.upper()


def where_it_ran(messages):
    """Leaves `<dir>/<node id>-<pid>-<word>` and answers the word in capitals, after
    a nap long enough that three tasks of a batch overlap even on a loaded machine
    (the head has room for two, so the third goes to the second node; with a
    shorter nap a slow start let each task end before the third began, and every
    task ran on the head)."""
    import ray

    word, where = _task(messages)
    time.sleep(1.5)
    if where is not None:
        node = ray.get_runtime_context().get_node_id()
        (where / f"{node}-{os.getpid()}-{word}").write_text("")
    return word.upper()


def notes_when(messages):
    """Leaves `<dir>/<word>` holding when it started and ended (time.time(), on the
    one machine the test cluster runs on), around a 0.4 s nap."""
    word, where = _task(messages)
    start = time.time()
    time.sleep(0.4)
    if where is not None:
        (where / word).write_text(f"{start} {time.time()}")
    return word.upper()
