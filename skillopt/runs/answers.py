"""Every answer of a run, per step and task (`skillopt show RUN STEP --task`, the
report's answers): the prompt as the target saw it, its answer, the expected value,
score and feedback, the incumbent beside the candidate at each gate, and the test
split's no-skill, initial and best skills side by side.

Sources: the checkpoint says which skill (by hash) each step ran on which tasks
(the gate's per-task scores, the test split's), `events.jsonl` which training tasks
each step's batch held, and the rollout store the rollouts themselves: those the
run used (`uses`), with the task as it was run (its fingerprint).

Invariant: reading only, and nothing here raises on a run that is odd but readable:
a store that is gone, or an old one that did not record what the run used, leaves
the answers empty and says why in `note`.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillopt.errors import InputError
from skillopt.rollouts.record import Rollout
from skillopt.rollouts.view import Answer, answer_of, outcome_of
from skillopt.runs.rundir import RunDir
from skillopt.skill.document import Skill
from skillopt.training.state import TrainState
from skillopt.training.steps import BatchRecord, InitialRecord, SlowUpdateRecord

TEST = "test"  # the test split's place among the steps
_TRAIN_LABEL = re.compile(r"^step (\d+) · train( \(beyond the batch\))?$")
_TEST_LABEL = re.compile(r"^test · ")
FLIPS = ("fail→pass", "pass→fail")


@dataclass(frozen=True)
class Side:
    """One skill's rollouts of a task: `label` says which skill it is at that step
    (initial, incumbent, candidate; no skill, initial, best on the test split)."""

    label: str
    skill_hash: str
    answers: tuple[Answer, ...]

    @property
    def outcome(self) -> str:
        return outcome_of(self.answers)[0]

    @property
    def score(self) -> float | None:
        return outcome_of(self.answers)[1]

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "skill_hash": self.skill_hash,
            "outcome": self.outcome,
            "score": self.score,
            "answers": [a.to_dict() for a in self.answers],
        }


@dataclass(frozen=True)
class TaskView:
    """A task at one step (`step` None: the test split): its split, expected value,
    the skills that ran it (the one that decides last), and its flip between the
    last two (the incumbent and the candidate; the initial and the best skill)."""

    step: int | None
    split: str
    task_id: str
    expected: Any
    sides: tuple[Side, ...]
    flip: str | None = None

    @property
    def where(self) -> str:
        return TEST if self.step is None else f"step {self.step}"

    @property
    def outcome(self) -> str:
        """The outcome of the skill this place is about (the candidate, the best)."""
        return self.sides[-1].outcome

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "where": self.where,
            "split": self.split,
            "task_id": self.task_id,
            "outcome": self.outcome,
            "flip": self.flip,
            "expected": self.expected,
            "sides": [s.to_dict() for s in self.sides],
        }


@dataclass(frozen=True)
class RunAnswers:
    """Every task of every step of a run; `note` says why answers are missing."""

    run_id: str
    views: tuple[TaskView, ...]
    note: str | None = None

    def at(self, step: int | None) -> list[TaskView]:
        return [v for v in self.views if v.step == step]

    def places(self) -> list[str]:
        """The places that have tasks: `step 0`, …, `test`."""
        seen: list[str] = []
        for v in self.views:
            if v.where not in seen:
                seen.append(v.where)
        return seen


def store_path(run: RunDir, config: dict[str, Any]) -> tuple[Path | None, str]:
    """The rollout store the run recorded, found as given (relative to the current
    directory) or beside the runs directory; (None, why) when there is none here."""
    store = (config.get("settings") or {}).get("store")
    if not store or store == ":memory:":
        return None, "the run kept its rollouts in memory only"
    path = Path(store)
    places = [path] if path.is_absolute() else [path, run.path.parent.parent / path]
    for place in places:
        if place.is_file():
            return place, ""
    return None, f"the rollout store ({store}) is not here"


def of_run(ref: str | Path, run_dir: str | Path | None = None) -> RunAnswers:
    """The answers of the run `ref` (an id under `run_dir`, or a directory)."""
    from skillopt.runs.read import find_run

    run = find_run(ref, run_dir)
    state = TrainState.load(run)
    if state is None:
        raise InputError(f"run {run.run_id} has no checkpoint yet: no answers", path=run.path)
    try:
        events = run.events()
    except InputError:  # the training batches go unnamed; the gates and test still show
        events = []
    return read(run, state, events)


def tasks_at(
    ref: str | Path, step: int | str, task: str | None = None, run_dir: str | Path | None = None
) -> list[TaskView]:
    """The tasks of one step (`test`: the test split), or the one task `task` of it
    (one entry per split it ran in there); an `InputError` naming what the run has
    when there is no such step or task."""
    found = of_run(ref, run_dir)
    where = TEST if str(step) == TEST else f"step {step}"
    views = [v for v in found.views if v.where == where]
    if not views:
        if found.note:
            raise InputError(f"run {found.run_id}: {found.note}")
        places = found.places()
        raise InputError(
            f"run {found.run_id} has no tasks at {where} (places with tasks: "
            f"{_listed([p.removeprefix('step ') for p in places])})"
        )
    if task is None:
        return views
    picked = [v for v in views if v.task_id == task]
    if not picked:
        ids = sorted({v.task_id for v in views})
        raise InputError(
            f"run {found.run_id} has no task {task!r} at {where} (its tasks: {_listed(ids)})"
        )
    return picked


def _listed(names: Sequence[str], most: int = 12) -> str:
    shown = ", ".join(names[:most])
    return shown + (f", and {len(names) - most} more" if len(names) > most else "")


def read(run: RunDir, state: TrainState, events: Sequence[dict[str, Any]]) -> RunAnswers:
    """The answers of `run` (its checkpoint `state`, its `events`)."""
    path, why = store_path(run, run.config())
    if path is None:
        return RunAnswers(run.run_id, (), f"{why}: no answers to show")
    from skillopt.store.rollouts import RolloutStore

    try:
        with RolloutStore(path) as db:
            used = db.used_by(run.run_id)
    except (InputError, OSError, sqlite3.Error) as exc:
        return RunAnswers(run.run_id, (), f"the store {path} could not be read ({exc})")
    if not used:
        return RunAnswers(
            run.run_id, (), f"the store {path} holds no record of the rollouts this run used"
        )
    return RunAnswers(run.run_id, tuple(_views(state, events, _Found(used))))


class _Found:
    """The run's rollouts by (skill hash, task id), with each task as it was run."""

    def __init__(self, used: list[tuple[Rollout, dict[str, Any]]]):
        self.by: dict[tuple[str, str], list[Answer]] = {}
        self.expected: dict[str, Any] = {}
        for rollout, fp in used:
            task = _part(fp, "task")
            name = _part(_part(fp, "harness"), "target").get("name")
            expected = task.get("expected")
            self.expected.setdefault(rollout.task_id, expected)
            answer = answer_of(rollout, expected, name if isinstance(name, str) else None)
            self.by.setdefault((rollout.skill_hash, rollout.task_id), []).append(answer)

    def side(self, label: str, skill_hash: str, task: str) -> Side:
        found = sorted(self.by.get((skill_hash, task), []), key=lambda a: a.sample)
        return Side(label, skill_hash, tuple(found))


def _part(fp: dict[str, Any], key: str) -> dict[str, Any]:
    """A fingerprint's part (the task, the harness); {} when a row lacks it."""
    part = fp.get(key)
    return part if isinstance(part, dict) else {}


def _labelled(events: Sequence[dict[str, Any]], pattern: re.Pattern[str]) -> dict[str, list[str]]:
    """The task ids of the rollout events whose label matches, by label, in order."""
    out: dict[str, list[str]] = {}
    for ev in events:
        label, task = ev.get("label"), ev.get("task_id")
        if ev.get("event") != "rollout" or not isinstance(label, str):
            continue
        if isinstance(task, str) and pattern.match(label):
            ids = out.setdefault(label, [])
            if task not in ids:
                ids.append(task)
    return out


def _views(state: TrainState, events: Sequence[dict[str, Any]], found: _Found) -> list[TaskView]:
    train: dict[int, list[str]] = {}
    for label, ids in _labelled(events, _TRAIN_LABEL).items():
        m = _TRAIN_LABEL.match(label)
        if m:
            train.setdefault(int(m.group(1)), []).extend(sorted(ids))
    baseline = _labelled(events, re.compile(r"^baseline · val$")).get("baseline · val", [])
    out: list[TaskView] = []
    incumbent = state.initial.hash
    for rec in state.steps:
        if isinstance(rec, InitialRecord):
            tasks = baseline or sorted(_val_tasks(state))
            for t in tasks:
                side = found.side("initial", incumbent, t)
                out.append(TaskView(rec.step, "val", t, found.expected.get(t), (side,)))
            continue
        if not isinstance(rec, (BatchRecord, SlowUpdateRecord)):
            continue
        before = incumbent
        if isinstance(rec, BatchRecord):
            before = rec.incumbent_hash or incumbent
            for t in train.get(rec.step, []):
                side = found.side("incumbent", before, t)
                out.append(TaskView(rec.step, "train", t, found.expected.get(t), (side,)))
        gate = rec.gate
        if gate is not None and rec.skill_hash:
            for t in sorted(gate.per_task):
                flip = (
                    FLIPS[0]
                    if t in gate.fail_to_pass
                    else FLIPS[1]
                    if t in gate.pass_to_fail
                    else None
                )
                sides = (
                    found.side("incumbent", before, t),
                    found.side("candidate", rec.skill_hash, t),
                )
                out.append(TaskView(rec.step, "val", t, found.expected.get(t), sides, flip))
        if rec.decision == "accepted" and rec.skill_hash:
            incumbent = rec.skill_hash
    return out + _test_views(state, events, found)


def _val_tasks(state: TrainState) -> set[str]:
    return {
        t
        for rec in state.steps
        if isinstance(rec, (BatchRecord, SlowUpdateRecord)) and rec.gate is not None
        for t in rec.gate.per_task
    }


def _test_views(
    state: TrainState, events: Sequence[dict[str, Any]], found: _Found
) -> list[TaskView]:
    if not state.test:
        return []
    tasks: set[str] = set()
    for ids in _labelled(events, _TEST_LABEL).values():
        tasks.update(ids)
    for score in state.test.values():
        tasks.update(score.passed or {})
    skills = {"no_skill": Skill.empty().hash, "initial": state.initial.hash}
    skills["best"] = state.incumbent.hash
    names = [n for n in ("no_skill", "initial", "best") if n in state.test]
    out = []
    for t in sorted(tasks):
        sides = tuple(found.side(n.replace("_", " "), skills[n], t) for n in names)
        flip = None
        if "initial" in names and "best" in names:
            pair = (sides[names.index("initial")].outcome, sides[names.index("best")].outcome)
            flip = {("fail", "pass"): FLIPS[0], ("pass", "fail"): FLIPS[1]}.get(pair)
        out.append(TaskView(None, TEST, t, found.expected.get(t), sides, flip))
    return out
