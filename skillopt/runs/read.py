"""Reading runs back: the runs under a runs directory (`list_runs`), a run by id or
directory, its steps (from its checkpoint and its git history), one step's commit,
diffs, and its best skill. Tidying the git refs that runs leave behind is
`skillopt.runs.prune`'s.

Invariant: a step is what `state.json` recorded, joined with its audit commit when
it made a candidate. A step that made none (no candidate, a skipped slow update)
has no commit, and everything that shows it says why. Listing runs never fails
for one run: a run whose files cannot be read is listed as `unreadable`, with why.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from skillopt._util import display
from skillopt.config import resolve_settings
from skillopt.errors import InputError
from skillopt.runs.rundir import RunDir
from skillopt.skill.document import Skill
from skillopt.skill.edits import Edit
from skillopt.training.state import TrainState
from skillopt.training.steps import (
    BatchRecord,
    InitialRecord,
    StepRecord,
    apply_of,
    gate_commit,
    gate_of,
)

if TYPE_CHECKING:  # the audit is opened only by the commands that read it
    from skillopt.store.audit import Audit, AuditCommit


def find_run(ref: str | Path, run_dir: str | Path | None = None) -> RunDir:
    """A run by directory, or by id under `run_dir` (default: the configured runs
    directory)."""
    return RunDir.find(str(ref), runs_dir(run_dir))


def runs_dir(run_dir: str | Path | None = None) -> Path:
    """`run_dir`, or the configured runs directory."""
    base = resolve_settings({"run_dir": str(run_dir) if run_dir is not None else None})
    return Path(base.run_dir)


def open_run(ref: str | Path, run_dir: str | Path | None = None) -> tuple[RunDir, Audit]:
    """(RunDir, Audit) of a run given by id or directory."""
    from skillopt.store.audit import Audit

    run = find_run(ref, run_dir)
    audit_conf = run.config().get("audit") or {}
    audit = Audit.open(audit_conf["repo"], run.run_id, audit_conf["skill_path"])
    return run, audit


@dataclass(frozen=True)
class RunStep:
    """One step of a run: its decision and reason, and its audit commit when it made
    a candidate (`commit` None: no candidate, or a skipped slow update). `record` is
    the step's evidence as `state.json` holds it (None for a commit the checkpoint
    has not recorded yet)."""

    step: int
    kind: str  # initial | step | slow_update
    epoch: int | None
    decision: str  # initial | accepted | rejected | no_candidate | skipped
    reason: str
    commit: AuditCommit | None
    record: StepRecord | None = field(default=None, compare=False)

    def describe(self) -> str:
        """One sentence on what happened at a step with no commit:
        `step 3 made no candidate: no failures to learn from and no edit proposed`."""
        what = "slow update" if self.kind == "slow_update" else "step"
        if self.decision == "skipped":
            happened = f"{what} {self.step} was skipped"
        elif self.decision == "no_candidate":
            happened = f"{what} {self.step} made no candidate"
        else:
            happened = f"{what} {self.step}: {self.decision.replace('_', ' ')}"
        return f"{happened}: {self.reason}" if self.reason else happened

    @property
    def val(self) -> float | None:
        """The mean validation score this step measured: the initial skill's at step
        0, else its candidate's; None when it scored none (no candidate, a skipped
        slow update, a raced rejection that scored the candidate on some tasks only)."""
        rec = self.record
        if rec is not None:
            if isinstance(rec, InitialRecord):
                return rec.val
            gate = gate_of(rec)
            return None if gate is None or gate.unrun else gate.candidate_mean
        return self.commit.evidence.val if self.commit is not None else None

    def evidence(self) -> list[str]:
        """What a step with no commit still recorded, a line each: its training batch,
        the optimizer calls it made, and the edits proposed but not applied."""
        rec = self.record
        lines = []
        if isinstance(rec, BatchRecord):
            lines.append(
                f"train batch: mean {display.score(rec.train_mean)}, {rec.failures} failed, "
                f"{rec.successes} passed, {rec.unscored} unscored"
            )
            if rec.proposals:
                skipped = [p for p in rec.proposals if p.get("skipped")]
                lines.append(
                    f"optimizer calls: {len(rec.proposals)}"
                    + (f", {len(skipped)} skipped ({skipped[0]['skipped']})" if skipped else "")
                )
            for d in rec.dropped:
                lines.append(f"[dropped] {Edit.from_dict(d['edit']).describe()} — {d['reason']}")
        for a in apply_of(rec) if rec is not None else []:
            detail = f" — {a['detail']}" if a.get("detail") else ""
            lines.append(f"[{a['status']}] {Edit.from_dict(a['edit']).describe()}{detail}")
        return lines


def best_val(steps: Sequence[RunStep]) -> float | None:
    """The best skill's validation score after `steps`: the last accepted candidate's
    (the gate makes it the incumbent with that score), else the initial skill's."""
    for s in reversed(steps):
        if s.decision in ("accepted", "initial"):
            return s.val
    return None


def _records(run: RunDir) -> list[StepRecord]:
    """The step records of the run's checkpoint; none if it has none or cannot be
    read (the git history is still shown)."""
    try:
        state = TrainState.load(run)
    except InputError:
        return []
    return list(state.steps) if state is not None else []


def steps(ref: str | Path, run_dir: str | Path | None = None) -> list[RunStep]:
    """Every step of a run, in order: the candidates committed to git and the
    steps that made none, each with its reason."""
    run, audit = open_run(ref, run_dir)
    history = audit.history()
    # a decomposed step gated several candidates: its commit is the one its record
    # names (the subset that settled it), else its last
    commits = {c.step: c for c in history}
    by_sha = {c.sha: c for c in history}
    out = {}
    for rec in _records(run):
        recorded = None if isinstance(rec, InitialRecord) else gate_commit(rec)
        out[rec.step] = RunStep(
            rec.step,
            rec.kind,
            rec.epoch,
            rec.decision,
            "" if isinstance(rec, InitialRecord) else rec.reason,
            by_sha.get(recorded or "") or commits.get(rec.step),
            rec,
        )
    for number, c in commits.items():  # committed, not yet in the checkpoint
        if number not in out:
            ev = c.evidence
            out[number] = RunStep(number, ev.kind or "initial", ev.epoch, c.decision, "", c)
    return [out[k] for k in sorted(out)]


def find_step(ref: str | Path, step: int, run_dir: str | Path | None = None) -> RunStep:
    """One step of a run; an `InputError` naming the recorded steps when it has none."""
    found = steps(ref, run_dir)
    for s in found:
        if s.step == step:
            return s
    recorded = f"0 to {found[-1].step}" if found else "none"
    raise InputError(f"run {str(ref)!r} has no step {step} (recorded steps: {recorded})")


def history(ref: str | Path, run_dir: str | Path | None = None) -> list[AuditCommit]:
    """The training story of a run, read back from git."""
    _, audit = open_run(ref, run_dir)
    return audit.history()


def diff(ref: str | Path, step: int | None = None, run_dir: str | Path | None = None) -> str:
    """The skill diff of one step (against its parent), or of the whole run."""
    _, audit = open_run(ref, run_dir)
    if step is None:
        accepted = audit.accepted()
        if not accepted:
            raise InputError(f"run {str(ref)!r} has no commits yet")
        return audit.diff(accepted[0].sha, accepted[-1].sha)
    commit = step_commit(audit, ref, step, run_dir)
    return audit.diff(commit.parent if step > 0 else None, commit.sha)


def step(ref: str | Path, step: int, run_dir: str | Path | None = None) -> AuditCommit:
    """The audit commit of one step (its message holds the evidence)."""
    _, audit = open_run(ref, run_dir)
    return step_commit(audit, ref, step, run_dir)


def step_commit(
    audit: Audit, ref: str | Path, step: int, run_dir: str | Path | None = None
) -> AuditCommit:
    """The commit of `step` (of a decomposed step, the candidate that settled it);
    when it has none, an `InputError` saying what happened at that step (or that the
    run has no such step)."""
    found = find_step(ref, step, run_dir)
    if found.commit is not None:
        return found.commit
    commit = audit.find_step(step)
    if commit is not None:
        return commit
    raise InputError(f"run {str(ref)!r}: {found.describe()}; nothing was committed")


def load_skill_or_run(ref: str | Path, run_dir: str | Path | None = None) -> Skill:
    """A skill from its directory (or SKILL.md), or a run's best skill by run id/dir."""
    path = Path(ref)
    if path.exists() and not (path / "run.yaml").is_file():
        return Skill.load(path)
    try:
        run = find_run(ref, run_dir)
    except InputError:
        raise InputError(
            f"{str(ref)!r} is neither a skill (a directory with SKILL.md) nor a "
            "run (a run directory or id)"
        ) from None
    best = run.path / "best"
    if not (best / "SKILL.md").is_file():
        raise InputError(
            f"run {run.run_id} has no best skill yet; continue it with "
            f"`skillopt train --resume {run.run_id}`",
            path=run.path,
        )
    return Skill.load(best)


# ---------------------------------------------------------------------- listing
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
        config = run.config()
        if not isinstance(config, dict):
            raise InputError("run.yaml does not hold a mapping", path=run.path / "run.yaml")
        state = TrainState.load(run)
    except (InputError, OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
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
        target=s.get("target"),
        optimizer=s.get("optimizer"),
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
