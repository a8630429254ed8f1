"""`skillopt train --dry-run`: what a run would do and roughly cost, with no model call.

The counts are upper bounds before the rollout store: repeated evaluations (the
incumbent on validation, unchanged skills on train tasks) are served from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from skillopt.config import Settings
from skillopt.optimize.schedule import edit_budget, steps_per_epoch
from skillopt.skill.document import Skill
from skillopt.suite.task import Suite

OPTIMIZER_OUTPUT_TOKENS = 600
OPTIMIZER_TEMPLATE_TOKENS = 700


@dataclass
class Plan:
    n_train: int
    n_val: int
    n_test: int
    epochs: int
    steps_per_epoch: int
    total_steps: int
    budgets: list[int]
    target_rollouts: int
    optimizer_calls: int
    target_tokens: int
    optimizer_tokens: int
    cost: float | None
    cost_note: str
    notes: list[str] = field(default_factory=list)
    # variables the run would need and that are not set, one line each: the run
    # itself would refuse to start (`skillopt.credentials`)
    missing_keys: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def make_plan(
    skill: Skill, suite: Suite, s: Settings, target_name: str, optimizer_name: str
) -> Plan:
    train, val, test = suite.split("train"), suite.split("val"), suite.split("test")
    per_epoch = steps_per_epoch(len(train), s.batch_size)
    total = per_epoch * s.epochs
    budgets = [
        edit_budget(i, total, max_edits=s.lr, min_edits=s.min_lr, schedule=s.schedule)
        for i in range(total)
    ]
    batch = min(s.batch_size, len(train))
    val_rollouts = len(val) * s.samples
    slow_n = min(s.batch_size, len(train))
    rollouts = val_rollouts  # the initial skill on validation
    rollouts += total * (batch + val_rollouts)  # train batch + candidate on val
    if s.slow_update:
        rollouts += s.epochs * (2 * slow_n + val_rollouts)
    rollouts += 3 * len(test) * s.samples  # no skill, initial, best on test
    # a step reflects on its f failures in ceil(f/m) calls (its solved tasks ride along
    # in them): most when the whole batch fails
    per_step_calls = math.ceil(batch / s.minibatch_size)
    # a slow update at each epoch end that changed the skill (at most every epoch),
    # notes at each epoch end but the last (where nothing reads them)
    calls = total * per_step_calls + (s.epochs if s.slow_update else 0) + s.epochs - 1
    if optimizer_name == "exemplars":
        calls = 0

    tasks = suite.tasks
    avg_prompt = sum(_tokens(t.prompt) for t in tasks) / max(1, len(tasks))
    avg_expected = sum(_tokens(str(t.expected or "")) for t in tasks) / max(1, len(tasks))
    per_rollout_in = _tokens(skill.body) + avg_prompt
    per_rollout_out = max(16, avg_expected * 2)
    target_tokens = int(rollouts * (per_rollout_in + per_rollout_out))
    per_call_in = (
        OPTIMIZER_TEMPLATE_TOKENS
        + _tokens(skill.body)
        + s.minibatch_size * (avg_prompt + 2 * avg_expected + 40)
    )
    optimizer_tokens = int(calls * (per_call_in + OPTIMIZER_OUTPUT_TOKENS))

    cost, note = _estimate(target_name, rollouts * per_rollout_in, rollouts * per_rollout_out)
    if calls:
        ocost, onote = _estimate(
            optimizer_name, calls * per_call_in, calls * OPTIMIZER_OUTPUT_TOKENS
        )
        cost = None if cost is None or ocost is None else cost + ocost
        note = "; ".join(n for n in (note, onote) if n)
    notes = [
        "rollout counts are upper bounds: the store serves repeated evaluations "
        "(the incumbent on validation, unchanged skills on train tasks)"
    ]
    if s.stall_patience:
        notes.append(
            f"a run may stop early on a stall: after {s.stall_patience} steps in a row that "
            "show the optimizer the same failing training tasks of the same skill and give "
            "no better candidate, training ends and the test split is scored (stall_patience; "
            "0: never)"
        )
    if s.harness != "chat":
        notes.append(
            f"the {s.harness} harness runs an agent per task: its tokens and cost "
            "are the agent's and are not estimated here (each task's usage is "
            "recorded from the CLI's output)"
        )
    return Plan(
        len(train),
        len(val),
        len(test),
        s.epochs,
        per_epoch,
        total,
        budgets,
        rollouts,
        calls,
        target_tokens,
        optimizer_tokens,
        cost,
        note,
        notes,
    )


def _estimate(model: str, tokens_in: float, tokens_out: float) -> tuple[float | None, str]:
    if model.startswith("scripted/"):
        return 0.0, ""
    from skillopt.models.litellm_model import import_litellm

    try:
        cin, cout = import_litellm().cost_per_token(
            model=model, prompt_tokens=int(tokens_in), completion_tokens=int(tokens_out)
        )
        return float(cin + cout), ""
    except Exception:
        return None, f"no price known for {model}"
