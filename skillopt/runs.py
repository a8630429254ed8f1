"""Reading runs back: a run by id or directory, its git history, one step's
commit, diffs, and its best skill."""

from __future__ import annotations

from pathlib import Path

from skillopt.config import resolve_settings
from skillopt.errors import InputError
from skillopt.skill.document import Skill
from skillopt.store.audit import Audit, AuditCommit
from skillopt.store.run import RunDir


def find_run(ref: str | Path, run_dir: str | Path | None = None) -> RunDir:
    """A run by directory, or by id under `run_dir` (default: the configured runs
    directory)."""
    base = resolve_settings({"run_dir": str(run_dir) if run_dir is not None else None})
    return RunDir.find(str(ref), Path(base.run_dir))


def open_run(ref: str | Path, run_dir: str | Path | None = None) -> tuple[RunDir, Audit]:
    """(RunDir, Audit) of a run given by id or directory."""
    run = find_run(ref, run_dir)
    audit_conf = run.config().get("audit") or {}
    audit = Audit.open(audit_conf["repo"], run.run_id, audit_conf["skill_path"])
    return run, audit


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
    commit = step_commit(audit, ref, step)
    return audit.diff(commit.parent if step > 0 else None, commit.sha)


def step(ref: str | Path, step: int, run_dir: str | Path | None = None) -> AuditCommit:
    """The audit commit of one step (its message holds the evidence)."""
    _, audit = open_run(ref, run_dir)
    return step_commit(audit, ref, step)


def step_commit(audit: Audit, ref: str | Path, step: int) -> AuditCommit:
    for commit in audit.history():
        if commit.step == step:
            return commit
    steps = ", ".join(str(c.step) for c in audit.history()) or "none"
    raise InputError(f"run {str(ref)!r} has no committed step {step} (committed steps: {steps})")


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
