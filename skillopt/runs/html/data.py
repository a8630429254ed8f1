"""A run's report data: every number the HTML report (and `skillopt blame`) shows,
gathered from the run's own records into one JSON-able dict.

Sources, and what each gives:
- `state.json` (the checkpoint): the steps, their decisions, gate evidence
  (per-task validation scores, flips, p-values), edits with their apply status,
  the test split;
- `run.yaml`: what the run was given (already redacted when written; redacted
  again here);
- `events.jsonl`: which validation rollouts passed, were unscored or came from
  the store, per step;
- the store's ledger (when the store can be found): what was paid and when, so
  spend can be drawn step by step; and the rollouts the run used, for its answers
  (`skillopt.runs.answers`);
- the audit repository: each candidate's skill diff and the blame of the best.

Invariant: nothing here raises on a run that is odd but readable (an old run
without per-task results, a run still going, a store that is gone): a missing
source leaves its part of the page empty and says why in `notes`.
"""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillopt._util import secrets
from skillopt.errors import InputError
from skillopt.runs import answers
from skillopt.runs.answers import store_path
from skillopt.runs.html.blame import blame_lines
from skillopt.runs.html.viewer import embedded
from skillopt.runs.read import open_run
from skillopt.runs.rundir import RunDir
from skillopt.runs.sections import step_edits, step_trials
from skillopt.runs.summary import summary as run_summary
from skillopt.store.audit import Audit
from skillopt.training.state import TrainState
from skillopt.training.steps import (
    BatchRecord,
    GateRecord,
    InitialRecord,
    SlowUpdateRecord,
    StepRecord,
    gate_of,
)

if TYPE_CHECKING:
    from skillopt.store.ledger import LedgerRow

_VAL_LABEL = re.compile(r"^step (\d+) · val \((candidate|incumbent)\)$")
_BASELINE_LABEL = "baseline · val"

# the states a validation cell can be in
PASS, FAIL, UNSCORED, NOT_RUN, NO_CANDIDATE = "pass", "fail", "unscored", "not run", "none"


def build(
    ref: str | Path,
    run_dir: str | Path | None = None,
    *,
    ledger: list[LedgerRow] | None = None,
) -> dict[str, Any]:
    """The report data of the run `ref` (an id under `run_dir`, or a directory).
    `ledger`: the run's spend rows (`RolloutStore.spend_timeline`) when the caller
    has the store open; otherwise the store the run recorded is read if it exists."""
    run, audit = open_run(ref, run_dir)
    return collect(run, audit, ledger=ledger)


def collect(run: RunDir, audit: Audit, *, ledger: list[LedgerRow] | None = None) -> dict[str, Any]:
    config = run.config()
    state = TrainState.load(run)
    if state is None:
        raise InputError(
            f"run {run.run_id} has no checkpoint yet: nothing to report", path=run.path
        )
    notes: list[str] = []
    summ = run_summary(state, config)
    events = _events(run, notes)
    records = {rec.step: rec for rec in state.steps}
    if ledger is None:
        ledger = _ledger(run, config, notes)
    steps = _steps(state, audit, notes)
    return {
        "version": 1,
        "generated_at": time.time(),
        "run_id": run.run_id,
        "title": f"{Path(str(config.get('skill') or run.run_id)).name} · {run.run_id}",
        "summary": summ,
        "steps": steps,
        "grid": grid(state, events),
        # every answer, per step and task (the page's answers viewer)
        "answers": embedded(answers.read(run, state, events)),
        "spend": spend(state, events, ledger),
        "test": _test(state),
        "blame": blame_lines(audit, records),
        "best_text": state.incumbent.text,
        "settings": secrets.redact(config.get("settings") or {}),
        "files": _files(run, audit, config),
        "notes": notes,
    }


def _events(run: RunDir, notes: list[str]) -> list[dict[str, Any]]:
    try:
        return run.events()
    except InputError as exc:
        notes.append(f"events.jsonl could not be read ({exc}): no per-task grid")
        return []


def _ledger(run: RunDir, config: dict[str, Any], notes: list[str]) -> list[LedgerRow]:
    """The run's spend rows from the store it recorded (`answers.store_path`); []
    when it is gone."""
    place, why = store_path(run, config)
    if place is None:
        if (config.get("settings") or {}).get("store") not in (None, "", ":memory:"):
            notes.append(
                f"{why}: spend per step is counted from events.jsonl, without tokens and cost"
            )
        return []
    from skillopt.store.rollouts import RolloutStore

    try:
        with RolloutStore(place) as db:
            return db.spend_timeline(run.run_id)
    except (InputError, OSError, sqlite3.Error) as exc:
        notes.append(
            f"the store {place} could not be read ({exc}): spend per step is "
            "counted from events.jsonl"
        )
        return []


def _steps(state: TrainState, audit: Audit, notes: list[str]) -> list[dict[str, Any]]:
    commits = {c.step: c for c in audit.history()}
    best = None
    out = []
    for rec in state.steps:
        step = rec.step
        gate = gate_of(rec)
        unrun = gate.unrun if gate is not None else None
        val = (
            rec.val
            if isinstance(rec, InitialRecord)
            else gate.candidate_mean
            if gate is not None
            else None
        )
        if unrun:
            val = None
        if rec.decision in ("initial", "accepted") and val is not None:
            best = val
        commit = commits.get(step)
        diff = ""
        if commit is not None:
            try:
                diff = audit.diff(commit.parent if step > 0 else None, commit.sha)
            except Exception as exc:  # a repository pruned under us: the rest still shows
                notes.append(f"step {step}: its diff could not be read ({exc})")
        edits = step_edits(rec)
        out.append(
            {
                "step": step,
                "kind": rec.kind,
                "epoch": rec.epoch,
                "decision": rec.decision,
                "reason": "" if isinstance(rec, InitialRecord) else rec.reason,
                "val": val,
                "partial": gate.candidate_mean if gate is not None and unrun else None,
                "incumbent": gate.incumbent_mean if gate is not None else None,
                "best": best,
                "delta": gate.delta if gate is not None else None,
                "p_value": gate.p_value if gate is not None else None,
                "n": gate.n
                if gate is not None
                else rec.n
                if isinstance(rec, InitialRecord)
                else None,
                "unrun": unrun,
                "fail_to_pass": list(gate.fail_to_pass) if gate is not None else [],
                "pass_to_fail": list(gate.pass_to_fail) if gate is not None else [],
                "train_mean": rec.train_mean if isinstance(rec, BatchRecord) else None,
                "failing": list(rec.failing or ()) if isinstance(rec, BatchRecord) else [],
                "commit": commit.sha if commit is not None else None,
                "wall_s": rec.wall_s,
                "edits": edits,
                # a decomposed step's candidates: which edits, what the gate said
                "trials": step_trials(rec),
                "diff": diff,
            }
        )
    return out


def grid(state: TrainState, events: list[dict[str, Any]]) -> dict[str, Any]:
    """The task × step grid of validation outcomes: per step the candidate's (the
    initial skill's at step 0) outcome on every validation task: pass, fail,
    unscored (an infrastructure failure), not run (a raced gate settled before it)
    or none (the step made no candidate). `flaky`: the tasks one skill (the same
    text, by hash) both passed and failed: across samples, or when the incumbent
    was scored again at a later step."""
    incumbents = {
        rec.step: rec.incumbent_hash
        for rec in state.steps
        if isinstance(rec, BatchRecord) and rec.incumbent_hash
    }
    seen: dict[int, dict[str, list[dict[str, Any]]]] = {}
    # the verdicts each skill (by hash) got on each task, to find the flaky ones
    verdicts: dict[tuple[str, str], set[bool]] = {}
    skill_at = {0: state.initial.hash}
    for rec in state.steps:
        if isinstance(rec, (BatchRecord, SlowUpdateRecord)) and rec.skill_hash:
            skill_at[rec.step] = rec.skill_hash
    for ev in events:
        if ev.get("event") != "rollout" or ev.get("stage") not in ("baseline", "gate"):
            continue
        label = ev.get("label") or ""
        m = _VAL_LABEL.match(label)
        step = 0 if label == _BASELINE_LABEL else int(m.group(1)) if m else None
        task = ev.get("task_id")
        if step is None or not isinstance(task, str):
            continue
        role = m.group(2) if m else "candidate"
        skill = incumbents.get(step) if role == "incumbent" else skill_at.get(step)
        if skill and isinstance(ev.get("passed"), bool):
            verdicts.setdefault((skill, task), set()).add(ev["passed"])
        if role == "candidate":
            seen.setdefault(step, {}).setdefault(task, []).append(ev)
    flaky = sorted({t for (_, t), v in verdicts.items() if len(v) == 2})
    tasks: list[str] = []
    for rec in state.steps:
        gate = gate_of(rec)
        for t in gate.per_task if gate is not None else {}:
            if t not in tasks:
                tasks.append(t)
    for per in seen.values():
        for t in per:
            if t not in tasks:
                tasks.append(t)
    tasks.sort()
    columns = []
    for rec in state.steps:
        step = rec.step
        gate = gate_of(rec)
        per_task = gate.per_task if gate is not None else {}
        evs = seen.get(step, {})
        cells = {}
        for t in tasks:
            cells[t] = _cell(rec, t, per_task.get(t), evs.get(t, []), gate)
        columns.append({"step": step, "decision": rec.decision, "cells": cells})
    return {"tasks": tasks, "columns": columns, "flaky": flaky}


def _cell(
    rec: StepRecord, task: str, pair: Any, evs: list[dict[str, Any]], gate: GateRecord | None
) -> dict[str, Any]:
    if not isinstance(rec, InitialRecord) and gate is None:
        return {"state": NO_CANDIDATE, "score": None}
    fail_to_pass = gate.fail_to_pass if gate is not None else ()
    pass_to_fail = gate.pass_to_fail if gate is not None else ()
    score = None
    if isinstance(pair, list) and len(pair) == 2:
        score = pair[1]
    scored = [e for e in evs if e.get("scored")]
    if score is None and scored:
        values = [e["score"] for e in scored if isinstance(e.get("score"), (int, float))]
        score = sum(values) / len(values) if values else None
    if score is None:
        if evs:
            return {"state": UNSCORED, "score": None}
        return {"state": NOT_RUN, "score": None}
    verdicts = [e["passed"] for e in scored if isinstance(e.get("passed"), bool)]
    if verdicts:  # as the gate counts a task over samples: passed by at least half
        passed = sum(verdicts) * 2 >= len(verdicts)
    elif task in fail_to_pass:
        passed = True
    elif task in pass_to_fail:
        passed = False
    else:  # a run from before rollout events said whether they passed
        passed = score >= 1.0
    flip = "fail→pass" if task in fail_to_pass else "pass→fail" if task in pass_to_fail else None
    return {"state": PASS if passed else FAIL, "score": score, "flip": flip}


def spend(
    state: TrainState, events: list[dict[str, Any]], ledger: list[LedgerRow]
) -> list[dict[str, Any]]:
    """Cumulative spend at the end of each step (its decision), and after the test
    split: target rollouts run and served from the store, optimizer calls, tokens
    and cost. From the ledger when there is one, else counted from the events
    (rollouts and optimizer calls only)."""
    ends: list[tuple[str, float]] = []
    for ev in events:
        if ev.get("event") == "decision" and isinstance(ev.get("t"), (int, float)):
            ends.append((f"step {ev.get('step')}", ev["t"]))
        elif ev.get("event") == "finished" and isinstance(ev.get("t"), (int, float)):
            ends.append(("test", ev["t"]))
    # a resumed step is decided again: its last decision counts
    last: dict[str, float] = {}
    for name, t in ends:
        last[name] = t
    points = sorted(last.items(), key=lambda kv: kv[1])
    out = []
    for name, t in points:
        if ledger:
            rows = [r for r in ledger if r.at <= t]
            target = [r for r in rows if r.role == "target"]
            opt = [r for r in rows if r.role != "target"]
            cost = [r.cost for r in rows if r.cost is not None]
            out.append(
                {
                    "at": name,
                    "rollouts": sum(1 for r in target if r.kind == "rollout"),
                    "from_store": sum(r.rollouts or 0 for r in target if r.kind == "cached"),
                    "optimizer_calls": sum(r.calls or 0 for r in opt),
                    "tokens": sum((r.input_tokens or 0) + (r.output_tokens or 0) for r in rows),
                    "cost": round(sum(cost), 6) if cost else None,
                    "source": "ledger",
                }
            )
        else:
            rolled = [e for e in events if e.get("event") == "rollout" and e.get("t", 0) <= t]
            calls = [e for e in events if e.get("event") == "proposal" and e.get("t", 0) <= t]
            out.append(
                {
                    "at": name,
                    "rollouts": sum(1 for e in rolled if not e.get("cached")),
                    "from_store": sum(1 for e in rolled if e.get("cached")),
                    "optimizer_calls": sum(int(e.get("calls") or 0) for e in calls),
                    "tokens": None,
                    "cost": None,
                    "source": "events",
                }
            )
    return out


def _test(state: TrainState) -> list[dict[str, Any]]:
    out = []
    for name, label in (("no_skill", "no skill"), ("initial", "initial"), ("best", "best")):
        score = state.test.get(name)
        if score is not None:
            out.append({"name": name, "label": label, **score.totals()})
    return out


def _files(run: RunDir, audit: Audit, config: dict[str, Any]) -> dict[str, str]:
    return {
        "skill": str(config.get("skill")),
        "suite": str(config.get("suite")),
        "run directory": str(run.path.resolve()),
        "checkpoint": str((run.path / "state.json").resolve()),
        "best skill": str((run.path / "best" / "SKILL.md").resolve()),
        "summary": str((run.path / "summary.json").resolve()),
        "report (Markdown)": str((run.path / "report.md").resolve()),
        "audit repository": str(audit.location),
        "branch": audit.branch,
    }
