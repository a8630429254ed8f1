"""A skill scored on every combination of targets and harnesses (`skillopt eval
--target A --target B --harness chat --harness claude-code`): each cell is an
ordinary evaluation, the bare model beside the skill, and `validate` can hold every
cell to its thresholds.

Invariants: every cell is checked before the first model call (a bad suite, an
unknown harness or model name stops the command there, as a single eval does); a
cell that cannot run here (its key is not set, its agent CLI is not installed, its
tasks all fail for one cause) is kept as an unscored cell with its one-line reason,
never a crash and never a 0; each cell's rollouts are cached in the rollout store as
a single eval's are, so a second run of the same matrix calls no model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from skillopt.errors import HarnessError, InputError, MissingCredentials
from skillopt.eval.checks import Check, ValidateResult
from skillopt.eval.context import Warn, load, resolve_target, settings_for
from skillopt.eval.results import EvalResult
from skillopt.rollouts.engine import Observer, RolloutEvent
from skillopt.suite.task import Suite

# what makes one cell unable to run while the others can: no key for its model, no
# agent CLI for its harness, or every task of it failing for one cause
CANNOT_RUN = (MissingCredentials, HarnessError)


@dataclass(frozen=True)
class Row:
    """One split of a cell as the matrix table shows it: the bare model, the skill,
    the paired difference, and the skill's load rate where the traces tell it."""

    split: str
    no_skill: float | None
    skill: float | None
    delta: float | None
    n: int
    tasks: int
    unscored: int
    load_rate: float | None
    loaded: str  # `3/4` (tasks whose trace shows the skill loaded), "" untraced

    def to_dict(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "no_skill": self.no_skill,
            "skill": self.skill,
            "delta": self.delta,
            "n": self.n,
            "tasks": self.tasks,
            "unscored": self.unscored,
            "load_rate": self.load_rate,
        }


@dataclass(frozen=True)
class Cell:
    """One target on one harness: its evaluation, or why it could not run."""

    target: str  # "" when the settings' default target was used
    harness: str
    result: EvalResult | None = None
    reason: str = ""  # why nothing ran, when `result` is None

    @property
    def label(self) -> str:
        return f"{self.target or 'default'} · {self.harness}"

    @property
    def rows(self) -> list[Row]:
        if self.result is None:
            return []
        out = []
        for c in self.result.comparisons:
            skill, bare = (
                self.result.result("skill", c.split),
                self.result.result("no-skill", c.split),
            )
            if skill is None or bare is None:
                continue
            loads = skill.loads
            out.append(
                Row(
                    split=c.split,
                    no_skill=bare.mean,
                    skill=skill.mean,
                    delta=c.delta,
                    n=c.n,
                    tasks=skill.tasks,
                    unscored=skill.unscored + bare.unscored,
                    load_rate=loads.rate,
                    loaded=f"{loads.loaded}/{loads.tasks}" if loads.tasks else "",
                )
            )
        return out

    @property
    def scored(self) -> bool:
        """Whether at least one rollout of the cell was scored."""
        return self.result is not None and any(r.scored for r in self.result.all_rollouts)

    @property
    def why_unscored(self) -> str:
        """The reason shown for a cell with nothing scored: why it could not run, or
        the first error of its rollouts."""
        if self.reason or self.result is None:
            return self.reason
        errors = [r.error for r in self.result.all_rollouts if not r.scored and r.error]
        return errors[0] if errors else "no task was scored"

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "harness": self.harness,
            "scored": self.scored,
            "reason": self.why_unscored if not self.scored else None,
            "rows": [r.to_dict() for r in self.rows],
            "result": None if self.result is None else self.result.to_dict(),
        }


@dataclass(frozen=True)
class MatrixResult:
    """A skill on every (target, harness) cell of a suite's split, in the order the
    targets and harnesses were given (targets outer)."""

    skill: str
    skill_hash: str
    suite: str
    split: str
    cells: list[Cell]

    @property
    def agents(self) -> bool:
        """Whether any cell's traces tell whether the skill loaded (the load column)."""
        return any(row.loaded for cell in self.cells for row in cell.rows)

    def to_dict(self) -> dict[str, Any]:
        return {
            "skill": self.skill,
            "skill_hash": self.skill_hash,
            "suite": self.suite,
            "split": self.split,
            "cells": [c.to_dict() for c in self.cells],
        }


def grid(targets: Sequence[str], harnesses: Sequence[str]) -> list[tuple[str, str]]:
    """Every (target, harness) pair, targets outer; an empty list stands for the
    settings' own value ("")."""
    ts = list(dict.fromkeys(targets)) or [""]
    hs = list(dict.fromkeys(harnesses)) or [""]
    return [(t, h) for t in ts for h in hs]


def check_cells(
    suite: Suite, cells: Sequence[tuple[str, str]], overrides: Mapping[str, Any]
) -> dict[tuple[str, str], tuple[str, str, str]]:
    """Every cell checked before anything runs: an unknown harness or model name is
    an `InputError` (nothing ran); a cell whose key is missing, or whose harness
    cannot take its target (a model skillopt runs itself, handed to an agent CLI),
    gets its reason. Each cell maps to (its target and harness as the settings
    resolve them, its reason or "")."""
    from skillopt.eval import credentials
    from skillopt.harness import build_harness, takes_model
    from skillopt.plugins import registry

    found: dict[tuple[str, str], tuple[str, str, str]] = {}
    for target, harness in cells:
        settings = settings_for(suite, cell_overrides(overrides, target, harness))
        found[(target, harness)] = (settings.target or "", settings.harness, "")
        if registry().find("harness", settings.harness) is None:
            names = ", ".join(registry().names("harness"))
            raise InputError(
                f"unknown harness {settings.harness!r}; choose one of: {names}", field="--harness"
            )
        try:
            credentials.require(suite, settings)
            model = resolve_target(settings) if takes_model(settings.harness) else None
        except MissingCredentials as exc:
            found[(target, harness)] = (settings.target or "", settings.harness, str(exc))
            continue
        try:  # built, never run: what it refuses is this pairing, not a name
            build_harness(settings, model)
        except (InputError, HarnessError) as exc:
            found[(target, harness)] = (settings.target or "", settings.harness, str(exc))
    return found


def cell_overrides(overrides: Mapping[str, Any], target: str, harness: str) -> dict[str, Any]:
    flags = dict(overrides)
    if target:
        flags["target"] = target
    if harness:
        flags["harness"] = harness
    return flags


def labelled(observers: Sequence[Observer], prefix: str) -> list[Observer]:
    """The observers, each told which cell an event is of (`A · chat · skill · test`)."""

    def tell(event: RolloutEvent) -> None:
        for observer in observers:
            observer(replace(event, label=f"{prefix} · {event.label}"))

    return [tell] if observers else []


def once(warn: Warn | None) -> Warn | None:
    """`warn`, saying each line once: every cell lints the same skill and suite."""
    if warn is None:
        return None
    seen: set[str] = set()

    def say(line: str) -> None:
        if line not in seen:
            seen.add(line)
            warn(line)

    return say


def evaluate_matrix(
    skill: str | Path,
    suite: str | Path | Suite,
    overrides: Mapping[str, Any],
    *,
    targets: Sequence[str],
    harnesses: Sequence[str],
    split: str = "test",
    observers: Sequence[Observer] = (),
    warn: Warn | None = None,
) -> MatrixResult:
    """See `skillopt.api.evaluate_matrix`."""
    from skillopt.eval.run import evaluate
    from skillopt.skill.document import Skill

    the_suite = load(suite)
    the_skill = Skill.load(skill)
    pairs = grid(targets, harnesses)
    checked = check_cells(the_suite, pairs, overrides)
    say = once(warn)
    cells = []
    for target, harness in pairs:
        name, runs_on, why = checked[(target, harness)]
        cell = Cell(name, runs_on, reason=why)
        if not cell.reason:
            try:
                result = evaluate(
                    skill,
                    the_suite,
                    cell_overrides(overrides, target, harness),
                    split=split,
                    compare_no_skill=True,
                    observers=labelled(observers, cell.label),
                    warn=say,
                )
                cell = replace(cell, target=result.target, harness=result.harness, result=result)
            except CANNOT_RUN as exc:
                cell = replace(cell, reason=str(exc))
        cells.append(cell)
    return MatrixResult(the_skill.name, the_skill.hash, the_suite.name, split, cells)


@dataclass(frozen=True)
class ValidateCell:
    """One (target, harness) of a matrix `validate`: its result, or why it could not
    run."""

    target: str
    harness: str
    result: ValidateResult | None = None
    reason: str = ""

    @property
    def label(self) -> str:
        return f"{self.target or 'default'} · {self.harness}"

    @property
    def checks(self) -> list[Check]:
        """The cell's checks after lint (lint is the skill's, the same in every cell);
        a cell that could not run fails its `scored` check with the reason."""
        if self.result is None:
            return [Check("scored", False, f"could not run: {self.reason}")]
        return [c for c in self.result.checks if c.name != "lint"]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "harness": self.harness,
            "passed": self.passed,
            "reason": self.reason or None,
            "checks": [c.__dict__ for c in self.checks],
            "result": None if self.result is None else self.result.to_dict(),
        }


@dataclass(frozen=True)
class MatrixValidation:
    """`skillopt validate` over every cell: lint once, then each cell's checks; it
    passes when lint and every check of every cell pass."""

    skill: str
    suite: str
    split: str
    lint: Check
    cells: list[ValidateCell]

    @property
    def passed(self) -> bool:
        return self.lint.passed and all(c.passed for c in self.cells)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    @property
    def failures(self) -> list[str]:
        """Each failed check in one line naming its cell."""
        out = [] if self.lint.passed else [f"lint: {self.lint.detail}"]
        for cell in self.cells:
            out += [f"{c.name} [{cell.label}]: {c.detail}" for c in cell.checks if not c.passed]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "skill": self.skill,
            "suite": self.suite,
            "split": self.split,
            "lint": self.lint.__dict__,
            "failures": self.failures,
            "cells": [c.to_dict() for c in self.cells],
        }


def validate_matrix(
    skill: str | Path,
    suite: str | Path,
    overrides: Mapping[str, Any],
    *,
    targets: Sequence[str],
    harnesses: Sequence[str],
    split: str = "test",
    observers: Sequence[Observer] = (),
    warn: Warn | None = None,
    **thresholds: Any,
) -> MatrixValidation:
    """See `skillopt.api.validate_matrix`. `thresholds` are `validate`'s (min_score,
    baseline, max_regressions, min_load_rate), held in every cell."""
    from skillopt.eval.validate import validate
    from skillopt.skill.lint import lint_source

    the_suite = load(suite)
    pairs = grid(targets, harnesses)
    say = once(warn)
    cells: list[ValidateCell] = []
    # lint first, as a single validate does: a skill with lint errors costs no call
    errors = [p for p in lint_source(Path(skill)) if p.severity == "error"]
    lint = Check(
        "lint",
        not errors,
        "no errors"
        if not errors
        else f"{len(errors)} error(s): " + "; ".join(str(p) for p in errors[:3]),
    )
    if errors:
        return MatrixValidation(Path(skill).name, the_suite.name, split, lint, [])
    checked = check_cells(the_suite, pairs, overrides)
    for target, harness in pairs:
        name, runs_on, why = checked[(target, harness)]
        cell = ValidateCell(name, runs_on, reason=why)
        if not cell.reason:
            try:
                result = validate(
                    skill,
                    suite,
                    split=split,
                    overrides=cell_overrides(overrides, target, harness),
                    observers=labelled(observers, cell.label),
                    warn=say,
                    **thresholds,
                )
                cell = replace(cell, target=result.target, harness=result.harness, result=result)
            except CANNOT_RUN as exc:
                cell = replace(cell, reason=str(exc))
        cells.append(cell)
    return MatrixValidation(Path(skill).name, the_suite.name, split, lint, cells)
