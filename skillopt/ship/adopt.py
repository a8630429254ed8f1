"""Write a run's best skill back into the skill directory it was trained from
(`skillopt adopt`), for its author to review and commit.

Invariant: the working tree's SKILL.md is never overwritten when it changed since
the run started, unless `force` is given (the refusal carries the diff of those
edits); protection markers are kept, since the source is trained again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from skillopt.errors import InputError
from skillopt.runs.rundir import RunDir
from skillopt.ship.diffs import text_diff
from skillopt.ship.refusals import Refused
from skillopt.skill.document import SKILL_FILE
from skillopt.training.state import TrainState


@dataclass
class AdoptResult:
    run_id: str
    path: Path  # the skill directory in the working tree
    action: str  # updated | unchanged
    diff: str
    in_git: bool = False  # the skill directory is inside a git working tree


def adopt(run: RunDir, *, force: bool = False) -> AdoptResult:
    """Write a run's best SKILL.md back into the skill directory it was trained from."""
    config = run.config()
    state = TrainState.load(run)
    best_dir = run.path / "best"
    if not (best_dir / SKILL_FILE).is_file():
        raise InputError(
            "the run has no best skill yet (it has not finished); continue it "
            f"with `skillopt train --resume {run.run_id}`",
            path=run.path,
        )
    best = _read(best_dir / SKILL_FILE)
    skill_dir = Path(config["skill"])
    target = skill_dir / SKILL_FILE
    current = _read(target) if target.is_file() else ""
    if current == best:
        return AdoptResult(run.run_id, skill_dir, "unchanged", "")
    diff = text_diff(current, best, str(target))
    initial = state.initial.text if state is not None else None
    if initial is not None and current != initial and not force:
        raise Refused(
            f"{target} changed since run {run.run_id} started; not overwritten "
            "(pass --force to replace your edits with the run's best)",
            text_diff(initial, current, str(target)),
        )
    skill_dir.mkdir(parents=True, exist_ok=True)
    target.write_text(best, encoding="utf-8")
    return AdoptResult(run.run_id, skill_dir, "updated", diff, in_git=_in_git(skill_dir))


def _in_git(path: Path) -> bool:
    """Whether `path` is inside a git working tree: a repository's `.git` (with its
    HEAD: an empty `.git` folder is no repository), or the `.git` file of a worktree
    or submodule, in it or above it."""
    here = path.resolve()
    return any(
        (d / ".git" / "HEAD").is_file() or (d / ".git").is_file() for d in (here, *here.parents)
    )


def _read(path: Path) -> str:
    """A SKILL.md's text; an `InputError` naming it when it is not UTF-8 text."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 (byte {exc.start})", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
