"""What `skillopt validate` decides and on what: the `Check` and `ValidateResult`
records, the threshold checks, and the baseline the skill is compared with (a
path, or the skill as it is at a git ref).

Invariant: a check is data (its name, whether it passed and why), never an
exception; an unknown baseline ref or a baseline path without a SKILL.md is an
`InputError`, raised before any model call.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt._util import display
from skillopt.errors import InputError
from skillopt.eval.results import Comparison, SplitResult
from skillopt.rollouts.outcomes import TaskOutcome, task_outcomes
from skillopt.ship.diffs import diff_stat
from skillopt.skill.document import SKILL_FILE, Skill, resolve_skill_file
from skillopt.skill.lint import Problem
from skillopt.suite.task import Task


@dataclass
class Check:
    """One gate of `skillopt validate`: its name, whether it passed, and why."""

    name: str  # lint | scored | min-score | max-regressions | min-load-rate
    passed: bool
    detail: str


@dataclass
class ValidateResult:
    """Everything `validate` found: lint problems, the checks, the skill's (and the
    baseline's) scores on the split, and the diff between the two skills. `passed`
    and `exit_code` follow from the checks alone."""

    skill: str
    skill_hash: str
    skill_path: str
    suite: str
    split: str
    target: str
    harness: str
    lint: list[Problem]
    checks: list[Check]
    result: SplitResult | None = None
    baseline: SplitResult | None = None
    baseline_label: str | None = None
    baseline_note: str | None = None  # e.g. the skill does not exist at the ref
    comparison: Comparison | None = None
    diff: str = ""
    tasks: dict[str, Task] = field(default_factory=dict)
    wall_s: float = 0.0
    invoke: str = "auto"  # `agent.invoke`: the load rate means something under `auto`

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def to_dict(self) -> dict[str, Any]:
        def split(r: SplitResult | None) -> dict[str, Any] | None:
            return None if r is None else r.summary()

        return {
            "passed": self.passed,
            "skill": self.skill,
            "skill_hash": self.skill_hash,
            "skill_path": self.skill_path,
            "suite": self.suite,
            "split": self.split,
            "target": self.target,
            "harness": self.harness,
            "invoke": self.invoke,
            "checks": [c.__dict__ for c in self.checks],
            "lint": [
                {
                    "path": str(p.path),
                    "line": p.line,
                    "field": p.field,
                    "severity": p.severity,
                    "message": p.message,
                }
                for p in self.lint
            ],
            "result": split(self.result),
            "baseline": split(self.baseline),
            "baseline_label": self.baseline_label,
            "baseline_note": self.baseline_note,
            "comparison": self.comparison.summary() if self.comparison else None,
            "diff_stat": [
                {"file": f, "added": a, "removed": r} for f, a, r in diff_stat(self.diff)
            ],
            "tasks": [
                _task_record(o, self)
                for o in (task_outcomes(self.result.rollouts).values() if self.result else [])
            ],
        }


def _task_record(outcome: TaskOutcome, res: ValidateResult) -> dict[str, Any]:
    c = res.comparison
    return {
        "id": outcome.task_id,
        "value": outcome.value,
        "passed": outcome.passed,
        "regression": bool(c and outcome.task_id in c.pass_to_fail),
        "fixed": bool(c and outcome.task_id in c.fail_to_pass),
    }


def threshold_checks(
    result: SplitResult,
    comparison: Comparison | None,
    min_score: float | None,
    max_regressions: int | None,
    min_load_rate: float | None = None,
) -> list[Check]:
    """The checks after lint: something was scored, the mean reaches `min_score`,
    no more than `max_regressions` tasks went pass→fail against the baseline, and the
    skill loaded in at least `min_load_rate` of the traced tasks (each only when
    asked for)."""
    checks = []
    if result.mean is None:
        checks.append(
            Check(
                "scored",
                False,
                f"none of {result.tasks} tasks could be scored "
                f"({result.unscored} unscored rollouts)",
            )
        )
        return checks
    checks.append(Check("scored", True, f"{result.n}/{result.tasks} tasks scored"))
    if min_score is not None:
        ok = result.mean >= min_score
        checks.append(
            Check(
                "min-score",
                ok,
                f"mean {display.score(result.mean)} {'≥' if ok else '<'} "
                f"{display.score(min_score)}",
            )
        )
    if max_regressions is not None and comparison is not None:
        n = len(comparison.pass_to_fail)
        ok = n <= max_regressions
        detail = f"{n} regression(s) {'≤' if ok else '>'} {max_regressions}"
        if comparison.pass_to_fail:
            detail += ": " + ", ".join(comparison.pass_to_fail[:10])
        checks.append(Check("max-regressions", ok, detail))
    if min_load_rate is not None:
        checks.append(_load_check(result, min_load_rate))
    return checks


def _load_check(result: SplitResult, min_load_rate: float) -> Check:
    loads = result.loads
    if loads.rate is None:
        return Check(
            "min-load-rate",
            False,
            "no scored rollout's trace shows whether the skill loaded (an agent harness "
            "that records its trace tells: claude-code or codex with `agent.trace: true`)",
        )
    ok = loads.rate >= min_load_rate
    return Check(
        "min-load-rate",
        ok,
        f"skill {loads.phrase()} ({display.score(loads.rate, 2)}) {'≥' if ok else '<'} "
        f"{display.score(min_load_rate, 2)}",
    )


@contextlib.contextmanager
def resolve_baseline(
    skill: Skill, ref: str | None
) -> Iterator[tuple[Skill | None, str | None, str | None]]:
    """(baseline skill, label, note): the skill at a path, or at a git ref of the
    repository holding `skill` (materialised in a temporary directory)."""
    if ref is None:
        yield None, None, None
        return
    as_path = Path(ref)
    if as_path.exists():
        try:
            resolve_skill_file(as_path)
        except InputError:
            raise InputError(
                f"{ref!r} is a path but holds no SKILL.md", field="--baseline"
            ) from None
        yield Skill.load(as_path), ref, None
        return
    with tempfile.TemporaryDirectory(prefix="skillopt-baseline-") as tmp:
        found = materialise_at_ref(skill.root, ref, Path(tmp))
        if found is None:
            yield None, ref, f"the skill does not exist at {ref} (new skill): no comparison"
        else:
            yield Skill.load(found), ref, None


def materialise_at_ref(skill_dir: Path | None, ref: str, into: Path) -> Path | None:
    """Write the skill directory as it is at git `ref` under `into`; None when the
    skill does not exist there. An unknown ref or no repository is an `InputError`."""
    import git

    if skill_dir is None:
        raise InputError("--baseline REF needs a skill on disk", field="--baseline")
    try:
        repo = git.Repo(skill_dir, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise InputError(
            f"--baseline {ref!r} is neither a path nor usable as a git ref: "
            f"{skill_dir} is not inside a git repository",
            field="--baseline",
        ) from None
    try:
        commit = repo.commit(ref)
    except (git.BadName, git.BadObject, ValueError, git.GitCommandError):
        raise InputError(
            f"unknown git ref {ref!r} (not a branch, tag or commit of "
            f"{repo.working_tree_dir}, and not a path)",
            field="--baseline",
        ) from None
    if repo.working_tree_dir is None:  # a bare repository: no working tree to be in
        raise InputError(
            f"--baseline {ref!r} needs {skill_dir} inside a git working tree",
            field="--baseline",
        )
    rel = Path(os.path.relpath(skill_dir.resolve(), Path(repo.working_tree_dir).resolve()))
    try:
        tree = commit.tree / rel.as_posix() if rel.as_posix() != "." else commit.tree
    except KeyError:
        return None
    if not isinstance(tree, git.Tree):
        return None
    dest = into / skill_dir.name
    for blob in tree.traverse():
        if not isinstance(blob, git.Blob):
            continue
        out = dest / Path(blob.path).relative_to(rel)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(blob.data_stream.read())
    if not (dest / SKILL_FILE).is_file():
        return None
    return dest
