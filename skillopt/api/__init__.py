"""The library's entry points: everything the CLI does is one call here.

A facade only: each function takes explicit keywords, turns names-or-objects into
settings overrides and components, and calls the module that does the work
(`eval`, `training`, `ship`, `runs`). Settings resolve along one path (defaults <
skillopt.yaml < the suite's `defaults:` < `SKILLOPT_*` < these keywords);
`settings=` skips that and uses the `Settings` given as is. The keywords of
`train` and `plan` are one list, `TrainOptions`.

Anywhere a name is accepted, an object may be passed instead: a `Model` as
`target` or `judge`, a `Harness`, an `Optimizer`, a `Gate` (and a `RolloutStore`
as `store`). Every input is validated before the first model call.

Invariant: `import skillopt.api` loads no engine, no pydantic model and no git
(each function imports what it uses when it runs), so the command line starts
fast; the types below are for annotations (`from skillopt.api import TrainResult`
under TYPE_CHECKING).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillopt.api.harvest import HarvestResult, HarvestSuite, harvest, harvest_suite
from skillopt.api.inventory import builtin_origin, cluster_report, models, plugins
from skillopt.api.matrix import evaluate_matrix, matrix_html, validate_matrix
from skillopt.api.options import TRAIN_OPTIONS, BudgetOptions, Section, TrainOptions
from skillopt.api.runs import (
    best_val,
    cached_tokens_line,
    decision_counts,
    duration,
    estimated_line,
    list_runs,
    prune_runs,
    run_answers,
    run_blame,
    run_config,
    run_diff,
    run_history,
    run_log,
    run_log_step,
    run_report,
    run_step,
    run_tasks,
    runs_dir,
)
from skillopt.api.scoring import evaluate, junit_xml, lint, summary_markdown, validate
from skillopt.api.shipping import adopt, export
from skillopt.api.starting import SCORERS as INIT_SCORERS
from skillopt.api.starting import check_init, init, init_defaults
from skillopt.api.tasks import import_tasks
from skillopt.api.training import bundle, plan, replay, resume, train
from skillopt.api.triggers import draft_triggers
from skillopt.ship.refusals import TARGETS as EXPORT_TARGETS
from skillopt.ship.refusals import LintFailed, Refused

if TYPE_CHECKING:
    from skillopt.eval.checks import ValidateResult as ValidateResult
    from skillopt.eval.loading import TriggerReport as TriggerReport
    from skillopt.eval.matrix import MatrixResult as MatrixResult
    from skillopt.eval.matrix import MatrixValidation as MatrixValidation
    from skillopt.eval.results import EvalResult as EvalResult
    from skillopt.models.inventory import ModelInfo as ModelInfo
    from skillopt.optimize.plan import Plan as Plan
    from skillopt.plugins import Listing as Listing
    from skillopt.rollouts.cluster import NodeReport as NodeReport
    from skillopt.rollouts.engine import RolloutEvent as RolloutEvent
    from skillopt.rollouts.view import Answer as Answer
    from skillopt.runs.answers import RunAnswers as RunAnswers
    from skillopt.runs.answers import TaskView as TaskView
    from skillopt.runs.listing import RunInfo as RunInfo
    from skillopt.runs.prune import Pruned as Pruned
    from skillopt.runs.read import RunStep as RunStep
    from skillopt.ship.adopt import AdoptResult as AdoptResult
    from skillopt.ship.export import ExportResult as ExportResult
    from skillopt.skill.lint import Findings as Findings
    from skillopt.starter import Created as Created
    from skillopt.store.audit import AuditCommit as AuditCommit
    from skillopt.suite.importing import ImportResult as ImportResult
    from skillopt.training.events import TrainEvent as TrainEvent
    from skillopt.training.replay import ReplayResult as ReplayResult
    from skillopt.training.session import TrainResult as TrainResult

__all__ = [
    "EXPORT_TARGETS",
    "INIT_SCORERS",
    "HarvestResult",
    "HarvestSuite",
    "TRAIN_OPTIONS",
    "BudgetOptions",
    "LintFailed",
    "Refused",
    "Section",
    "TrainOptions",
    "adopt",
    "best_val",
    "builtin_origin",
    "bundle",
    "cached_tokens_line",
    "check_init",
    "estimated_line",
    "cluster_report",
    "decision_counts",
    "draft_triggers",
    "duration",
    "evaluate",
    "evaluate_matrix",
    "export",
    "init",
    "init_defaults",
    "harvest",
    "harvest_suite",
    "import_tasks",
    "junit_xml",
    "lint",
    "matrix_html",
    "list_runs",
    "models",
    "plan",
    "plugins",
    "prune_runs",
    "replay",
    "resume",
    "run_blame",
    "run_config",
    "run_diff",
    "run_history",
    "run_log",
    "run_log_step",
    "run_answers",
    "run_report",
    "run_tasks",
    "run_step",
    "runs_dir",
    "summary_markdown",
    "train",
    "validate",
    "validate_matrix",
]
