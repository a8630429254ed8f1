"""Listing the runs under a runs directory (`skillopt runs`): each run's status,
scores, rollouts and cost.

Invariant: listing never fails for one run: a run whose files cannot be read is
listed as `unreadable`, with why, and the others are listed as usual.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from skillopt.errors import InputError
from skillopt.runs.read import runs_dir
from skillopt.runs.rundir import RunDir
from skillopt.skill.document import Skill
from skillopt.training.state import TrainState

# what `RunInfo.status` says, and what each means for `skillopt train --resume`
RUN_STATUSES = ("finished", "stopped", "interrupted", "unreadable")


@dataclass(frozen=True)
class RunInfo:
    """One run under a runs directory, as `skillopt runs` lists it.

    `status` is one of `RUN_STATUSES`: `finished`; `stopped` (a budget stopped it:
    `stopped_by` names which, e.g. `--max-target-rollouts`; it continues with
    `skillopt train --resume RUN` and a larger budget); `interrupted` (its checkpoint
    says it was still running: the process was killed or stopped with Ctrl-C, and
    `--resume` continues it; a run in progress in another process reads the same,
    since nothing records a live process); `unreadable` (its `run.yaml` or
    `state.json` cannot be read: `reason` says why, and every other field it could
    not read is None). Scores are in [0, 1]; rollouts and costs are the run's
    accounting as of its last checkpoint (an interrupted run may have spent a little
    more); costs in US dollars, None when no call had a known price
    (`cost_complete` False: some calls had none)."""

    id: str
    path: Path
    status: str
    reason: str = ""  # what stopped it, what to do, or why it cannot be read
    skill: str | None = None  # the skill's name
    suite: str | None = None  # the suite's file name
    target: str | None = None
    optimizer: str | None = None
    started_at: float | None = None  # seconds since the epoch
    stopped_by: str | None = None  # the budget's flag, for a stopped run
    val_initial: float | None = None
    val_best: float | None = None
    test_best: float | None = None  # mean on the test split; None: not run
    test_no_skill: float | None = None
    target_rollouts: int | None = None  # run by the target
    cached_rollouts: int | None = None  # served from the rollout store
    target_cost: float | None = None
    optimizer_cost: float | None = None
    cost: float | None = None  # target + optimizer
    cost_complete: bool = True

    @property
    def started(self) -> str:
        """When it started, in UTC: `2026-12-03 14:15`; empty when unknown."""
        if self.started_at is None:
            return ""
        return time.strftime("%Y-%m-%d %H:%M", time.gmtime(self.started_at))

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON form (`skillopt runs --json`): every field, `path` as a
        string, and `started` (UTC, `YYYY-MM-DD HH:MM`) beside `started_at`."""
        out: dict[str, Any] = {}
        for name, value in asdict(self).items():
            out[name] = str(value) if isinstance(value, Path) else value
            if name == "started_at":
                out["started"] = self.started or None
        return out


def list_runs(run_dir: str | Path | None = None) -> list[RunInfo]:
    """Every run under `run_dir` (default: the configured runs directory), newest
    first. A run is a directory holding `run.yaml`; anything else there (the audit
    repository, the rollout store) is not listed. A run whose files cannot be read
    is listed as `unreadable` with the reason, never raised: one broken run does
    not hide the others. No runs directory: no runs."""
    base = runs_dir(run_dir)
    if not base.is_dir():
        return []
    found = [run_info(RunDir(p)) for p in base.iterdir() if (p / "run.yaml").is_file()]

    def newest(info: RunInfo) -> tuple[float, str]:
        when = info.started_at
        if when is None:  # unreadable: when its files last changed
            with contextlib.suppress(OSError):
                when = (info.path / "run.yaml").stat().st_mtime
        return (when or 0.0, info.id)

    return sorted(found, key=newest, reverse=True)


def run_info(run: RunDir) -> RunInfo:
    """One run's `RunInfo`, from its `run.yaml` and checkpoint (the same figures as
    its `summary.json`, which an interrupted run has not written); `unreadable`,
    with the reason, when they cannot be read."""
    try:
        state = TrainState.load(run)
        config = run.config()
    except InputError as exc:
        return RunInfo(run.run_id, run.path, "unreadable", _one_line(exc))
    if state is None:
        return RunInfo(
            run.run_id, run.path, "unreadable", "no checkpoint (state.json): it never started"
        )
    try:
        return _info(run, config, state)
    except Exception as exc:  # a run.yaml edited out of shape: listed, never raised
        where = run.path / "run.yaml"
        return RunInfo(run.run_id, run.path, "unreadable", f"{where}: {_one_line(exc)}")


def _info(run: RunDir, config: dict[str, Any], state: TrainState) -> RunInfo:
    from skillopt.runs import summary as report

    s = report.summary(state, config)
    acct = s["accounting"]
    stop = state.stop if state.status == "stopped" else None
    stopped_by = stop.budget if stop is not None else None
    if state.status == "finished":
        status, reason = "finished", ""
    elif state.status == "stopped":
        status = "stopped"
        where = stop.where if stop is not None else None
        larger = f" {stopped_by} <larger>" if stopped_by else ""
        reason = (
            f"{stopped_by or 'a budget'} reached{f' before {where}' if where else ''}; "
            f"continue it with `skillopt train --resume {run.run_id}{larger}`"
        )
    else:  # new or running, left behind by a process that did not finish
        status = "interrupted"
        reason = f"continue it with `skillopt train --resume {run.run_id}`"
    test = s["test"]
    target_cost, opt_cost = acct.get("target_cost"), acct.get("optimizer_cost")
    known = [c for c in (target_cost, opt_cost) if c is not None]
    return RunInfo(
        id=run.run_id,
        path=run.path,
        status=status,
        reason=reason,
        skill=Skill.parse(state.initial.text, root=Path(s["skill"] or run.path)).name,
        suite=Path(s["suite"]).name if s.get("suite") else None,
        target=_name(s, "target"),
        optimizer=_name(s, "optimizer"),
        started_at=s.get("started_at"),
        stopped_by=stopped_by,
        val_initial=s["initial_val"],
        val_best=s["best_val"],
        test_best=(test.get("best") or {}).get("mean"),
        test_no_skill=(test.get("no_skill") or {}).get("mean"),
        target_rollouts=acct.get("target_rollouts", 0),
        cached_rollouts=acct.get("cached_rollouts", 0),
        target_cost=target_cost,
        optimizer_cost=opt_cost,
        cost=sum(known) if known else None,
        # a call with no known price makes the sum a lower bound
        cost_complete=(target_cost is not None or not acct.get("target_calls"))
        and (opt_cost is not None or not acct.get("optimizer_calls")),
    )


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _name(summary: dict[str, Any], key: str) -> str | None:
    """A model's name as the run recorded it; a run.yaml edited out of shape (a
    number there) makes the run unreadable, not the listing."""
    value = summary.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"settings.{key}: expected a name, got {type(value).__name__}")
    return value
