"""The entry points that read runs back: the list (`skillopt runs`), a run's story
(`log`, `show`, `diff`, `blame`), its HTML report, and `prune`; and the few words
the command line says about a run's summary.

Invariant: reading never changes a run (only `prune_runs` deletes, and only git
refs, never a run directory); the modules that read are imported when a function
runs, not with the api.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillopt.runs.answers import RunAnswers, TaskView
    from skillopt.runs.listing import RunInfo
    from skillopt.runs.prune import Pruned
    from skillopt.runs.read import RunStep
    from skillopt.store.audit import AuditCommit


def runs_dir(run_dir: str | Path | None = None) -> Path:
    """The runs directory: `run_dir`, else the settings' (`runs` by default)."""
    from skillopt.runs import read as runs

    return runs.runs_dir(run_dir)


def list_runs(*, run_dir: str | Path | None = None) -> list[RunInfo]:
    """Every run under the runs directory, newest first (`skillopt runs`): its skill,
    suite, models, status (finished, stopped, interrupted or unreadable), scores,
    rollouts and cost. A run that cannot be read is listed as `unreadable`."""
    from skillopt.runs import listing

    return listing.list_runs(run_dir)


def run_config(run: str | Path, *, run_dir: str | Path | None = None) -> dict[str, Any]:
    """A run's recorded settings (`run.yaml`: skill, suite, models, …)."""
    from skillopt.runs.read import find_run

    return find_run(run, run_dir).config()


def run_history(run: str | Path, *, run_dir: str | Path | None = None) -> list[AuditCommit]:
    """The training story of a run (one commit per candidate), read back from git."""
    from skillopt.runs import read as runs

    return runs.history(run, run_dir)


def run_diff(run: str | Path, step: int | None = None, *, run_dir: str | Path | None = None) -> str:
    """The skill diff of one step (against its parent), or of the whole run."""
    from skillopt.runs import read as runs

    return runs.diff(run, step, run_dir)


def run_step(run: str | Path, step: int, *, run_dir: str | Path | None = None) -> AuditCommit:
    """The audit commit of one step (its message holds the evidence)."""
    from skillopt.runs import read as runs

    return runs.step(run, step, run_dir)


def run_log(run: str | Path, *, run_dir: str | Path | None = None) -> list[RunStep]:
    """Every step of a run (`skillopt log`): its decision and reason, and its audit
    commit when it made a candidate."""
    from skillopt.runs import read as runs

    return runs.steps(run, run_dir)


def run_log_step(run: str | Path, step: int, *, run_dir: str | Path | None = None) -> RunStep:
    """One step of a run (`skillopt show`), committed or not."""
    from skillopt.runs import read as runs

    return runs.find_step(run, step, run_dir)


def run_answers(run: str | Path, *, run_dir: str | Path | None = None) -> RunAnswers:
    """Every answer of a run, per step and task (the report's answers): the prompt as
    the target saw it, the answer, expected value, score and feedback, the incumbent
    beside the candidate at each gate and the test split's skills side by side."""
    from skillopt.runs import answers

    return answers.of_run(run, run_dir)


def run_tasks(
    run: str | Path,
    step: int | str,
    *,
    task: str | None = None,
    run_dir: str | Path | None = None,
) -> list[TaskView]:
    """The tasks of one step of a run (`skillopt show RUN STEP`; `step` "test": the
    test split), or with `task` that one task there; an `InputError` naming the
    places or tasks the run has when there is no such step or task."""
    from skillopt.runs import answers

    return answers.tasks_at(run, step, task, run_dir)


def best_val(steps: Sequence[RunStep]) -> float | None:
    """The best validation score among a run's steps (None: none was scored)."""
    from skillopt.runs import read as runs

    return runs.best_val(steps)


def run_report(
    run: str | Path,
    other: str | Path | None = None,
    *,
    out: str | Path | None = None,
    run_dir: str | Path | None = None,
) -> Path:
    """Write a run's HTML report (`skillopt report`): `report.html` in the run's
    directory unless `out` is given; with `other`, the page comparing the two runs
    (`compare-<other>.html` in the first run's directory). Returns its path."""
    from skillopt.runs import html as htmlreport

    if other is None:
        return htmlreport.write_report(run, run_dir, out=out)
    return htmlreport.write_comparison(run, other, run_dir, out=out)


def run_blame(run: str | Path, *, run_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """Every line of the run's best skill with the step and edit that introduced it
    (`skillopt blame`): dicts with `line`, `text`, `step`, `decision`, `commit`,
    `edit` (index among the step's applied edits, or None), `op`, `rationale`,
    `evidence`."""
    from skillopt.runs.html.blame import blame_lines
    from skillopt.runs.read import open_run
    from skillopt.training.state import TrainState

    found, audit = open_run(run, run_dir)
    state = TrainState.load(found)
    records = {rec.step: rec for rec in state.steps} if state is not None else {}
    return blame_lines(audit, records)


def prune_runs(
    *,
    run_dir: str | Path | None = None,
    repos: Sequence[str | Path] = (),
    keep: int | None = None,
    older_than_days: float | None = None,
    everything: bool = False,
    dry_run: bool = False,
) -> list[Pruned]:
    """Delete the git refs runs left behind (`skillopt prune`): those of runs whose
    directory is gone, and with `keep` / `older_than_days` / `everything` more (see
    `skillopt.runs.prune.prune`)."""
    from skillopt.runs.prune import prune

    return prune(
        run_dir=run_dir,
        repos=repos,
        keep=keep,
        older_than_days=older_than_days,
        everything=everything,
        dry_run=dry_run,
    )


# ---------------------------------------------------------------------- a summary in words
def duration(seconds: float | None) -> str:
    """`0.4s`, `42s`, `3m 05s`, `1h 02m`; empty when unknown."""
    from skillopt.runs import summary

    return summary.duration(seconds)


def decision_counts(decisions: dict[str, int]) -> str:
    """`3 accepted, 2 no candidate, 1 rejected`: a run summary's decisions."""
    from skillopt.runs import summary

    return summary.decision_counts(decisions)


def cached_tokens_line(accounting: dict[str, Any]) -> str | None:
    """The tokens read from a provider's prompt cache, when there were any."""
    from skillopt.runs import summary

    return summary.cached_tokens_line(accounting)


def estimated_line(accounting: dict[str, Any]) -> str | None:
    """Which part of a run's totals is estimated (calls in flight at a kill), if any."""
    from skillopt.runs import summary

    return summary.estimated_line(accounting)
