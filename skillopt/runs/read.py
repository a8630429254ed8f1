"""Reading runs back: a run by id or directory, its steps (from its checkpoint and
its git history), one step's commit, diffs, and its best skill. Listing the runs under a runs directory is
`skillopt.runs.listing`'s, tidying the git refs that runs leave behind
`skillopt.runs.prune`'s.

Invariant: a step is what `state.json` recorded, joined with its audit commit when
it made a candidate. A step that made none (no candidate, a skipped slow update)
has no commit, and everything that shows it says why. A run's files are checked
where they are read (`run.yaml` by `RunDir.record`, `state.json` by `TrainState`,
the audit by `Audit`): a corrupt one is one `InputError` naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

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
    place = run.record().audit
    return run, Audit.open(place.repo, run.run_id, place.skill_path)


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

    @property
    def unrun(self) -> int:
        """Validation tasks a raced gate did not run (0: not raced, or not recorded):
        the step's scores are then those of the tasks it ran."""
        rec = self.record
        gate = gate_of(rec) if rec is not None else None
        return gate.unrun if gate is not None else 0

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
