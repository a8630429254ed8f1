"""`skillopt train --dry-run`: what a run would do and roughly cost, with no model call.

The counts are upper bounds before the rollout store: repeated evaluations (the
incumbent on validation, unchanged skills on train tasks) are served from it. The
plan follows the optimizer it is given: epoch-end slow updates and notes only when
the optimizer offers them (`SlowUpdater`, `NoteTaker`), model calls only when it
has a model. A description run (`--part description`) asks for one description per
step and has no slow update and no notes. A model that runs here or answers from a script costs $0; only a
provider model whose price litellm's table does not know has an unknown cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from skillopt.config import Settings
from skillopt.models.base import Model
from skillopt.optimize.schedule import TriggerPart, edit_budget, steps_per_epoch
from skillopt.rollouts.budget import FLAGS, Budget, Priors, duration_text, usd
from skillopt.skill.document import Skill
from skillopt.suite.task import Suite

OPTIMIZER_OUTPUT_TOKENS = 600
OPTIMIZER_TEMPLATE_TOKENS = 700
# model providers whose models cost nothing: the embedded model runs on this machine,
# scripted answers are a program's
FREE_PROVIDERS = {"local": "runs on this machine", "scripted": "scripted answers"}


@dataclass(frozen=True)
class Stage:
    """One stage's upper bound: `count` rollouts (role target) or calls (optimizer)."""

    stage: str  # baseline, rollouts, reflect (describe), gate, slow update, notes, test
    role: str
    count: int
    unit: str
    tokens: int
    cost: float | None  # USD; None when the price is unknown


@dataclass(kw_only=True)
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
    cost: float | None  # USD; 0.0 when every model is free, None when a price is unknown
    cost_note: str
    notes: list[str] = field(default_factory=list)
    slow_updates: int = 0  # epoch-end slow updates the run may make (0: the optimizer has none)
    optimizer: str = ""  # the optimizer's name
    optimizer_note: str = ""  # why it makes no model call, when it makes none
    # variables the run would need and that are not set, one line each: the run
    # itself would refuse to start (`skillopt.eval.credentials`)
    missing_keys: list[str] = field(default_factory=list)
    stages: list[Stage] = field(default_factory=list)  # the upper bounds per stage and role
    budget: list[str] = field(default_factory=list)  # what the budget does to the plan

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["stages"] = [st.__dict__ for st in self.stages]
        return out


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def make_plan(skill: Skill, suite: Suite, s: Settings, target_name: str, optimizer: object) -> Plan:
    """The plan of a run of `optimizer` (an `Optimizer`): its epoch-end stages and
    model calls are the ones that optimizer really makes."""
    from skillopt.optimize.base import NoteTaker, Optimizer, SlowUpdater
    from skillopt.optimize.exemplars import ExemplarOptimizer
    from skillopt.optimize.reflect import LLMOptimizer

    optimizer_name = optimizer.name if isinstance(optimizer, Optimizer) else str(optimizer)
    # a provider model named as the optimizer but not built (its key is missing: the
    # dry run still plans it) is the LLM optimizer
    unbuilt_llm = isinstance(optimizer, str) and "/" in optimizer
    describes = s.part == "description"
    # a description run keeps the body, where a slow update writes its guidance, and
    # its steps never read the optimizer's notes (`training/description`), so it asks
    # for none
    slow = s.slow_update and not describes and (isinstance(optimizer, SlowUpdater) or unbuilt_llm)
    takes_notes = not describes and (isinstance(optimizer, NoteTaker) or unbuilt_llm)
    calls_model = isinstance(optimizer, LLMOptimizer) or unbuilt_llm
    train, val, test = suite.split("train"), suite.split("val"), suite.split("test")
    per_epoch = steps_per_epoch(len(train), s.batch_size)
    total = per_epoch * s.epochs
    budgets = [  # a description step proposes one description, whatever the schedule
        1
        if describes
        else edit_budget(i, total, max_edits=s.lr, min_edits=s.min_lr, schedule=s.schedule)
        for i in range(total)
    ]
    batch = min(s.batch_size, len(train))
    val_rollouts = len(val) * s.samples
    slow_n = min(s.batch_size, len(train))
    rollouts = val_rollouts  # the initial skill on validation
    rollouts += total * (batch + val_rollouts)  # train batch + candidate on val
    if slow:
        rollouts += s.epochs * (2 * slow_n + val_rollouts)
    rollouts += 3 * len(test) * s.samples  # no skill, initial, best on test
    # a step reflects on its f failures in ceil(f/m) calls (its solved tasks ride along
    # in them): most when the whole batch fails; a description step asks once, with
    # every misfire of its batch
    per_step_calls = 1 if describes else math.ceil(batch / s.minibatch_size)
    # a slow update at each epoch end that changed the skill (at most every epoch),
    # notes at each epoch end but the last (where nothing reads them)
    calls = total * per_step_calls if calls_model else 0
    calls += (s.epochs if slow else 0) + (s.epochs - 1 if takes_notes else 0)

    both = TriggerPart.of(suite, s, total, val_rollouts) if s.part == "both" else None
    if both is not None:  # the description's steps, taken in turn with the body's
        rollouts += both.rollouts
        calls += both.steps if calls_model else 0

    per_rollout_in, per_rollout_out, per_call_in = _unit_tokens(skill, suite, s)
    target_tokens = int(rollouts * (per_rollout_in + per_rollout_out))
    optimizer_tokens = int(calls * (per_call_in + OPTIMIZER_OUTPUT_TOKENS))

    def target(stage: str, n: int) -> Stage:
        tokens = n * (per_rollout_in + per_rollout_out)
        cost = _estimate(target_name, n * per_rollout_in, n * per_rollout_out)[0]
        return Stage(stage, "target", n, "rollouts", int(tokens), cost)

    def opt(stage: str, n: int) -> Stage:
        tokens = n * (per_call_in + OPTIMIZER_OUTPUT_TOKENS)
        cost = _estimate(optimizer_name, n * per_call_in, n * OPTIMIZER_OUTPUT_TOKENS)[0]
        return Stage(stage, "optimizer", n, "calls", int(tokens), cost)

    stages = [
        target("baseline", val_rollouts),
        target("rollouts", total * batch),
        *(
            [opt("describe" if describes else "reflect", total * per_step_calls)]
            if calls_model and total
            else []
        ),
        target("gate", total * val_rollouts),
    ]
    if both is not None:  # the body's steps above, the description's here
        stages += [target("trigger queries", both.rollouts), opt("describe", both.steps)]
    if slow:
        stages += [
            target("slow update", s.epochs * (2 * slow_n + val_rollouts)),
            opt("slow update", s.epochs),
        ]
    if takes_notes and s.epochs > 1:
        stages.append(opt("notes", s.epochs - 1))
    stages.append(target("test", 3 * len(test) * s.samples))
    stages = [st for st in stages if st.count]

    cost, tnote = _estimate(target_name, rollouts * per_rollout_in, rollouts * per_rollout_out)
    parts = [f"target {tnote}"]
    if calls:
        ocost, onote = _estimate(
            optimizer_name, calls * per_call_in, calls * OPTIMIZER_OUTPUT_TOKENS
        )
        cost = None if cost is None or ocost is None else cost + ocost
        parts.append(f"optimizer {onote}")
    note = "; ".join(parts)
    if calls:
        calls_note = ""
    elif isinstance(optimizer, ExemplarOptimizer) or (calls_model and not total):
        calls_note = f"{optimizer_name} calls no model"
    else:
        calls_note = f"{optimizer_name} is not a model: its calls are not estimated"
    notes = [
        "rollout counts are upper bounds: the store serves repeated evaluations "
        "(the incumbent on validation, unchanged skills on train tasks)",
        "not counted above: a proposed description that fails lint is asked for again "
        "once (one more optimizer call), and a step whose batch loaded as it should "
        "runs the skill on the rest of the training split to find misfires; a budget "
        "bounds them all"
        if describes
        else "not counted above: a step whose candidate the gate rejects after a gain "
        "may gate up to 7 subsets of its edits (each raced, stopped once it cannot win), "
        "a step whose batch passed entirely runs the skill on the rest of the training "
        "split, and a candidate that repeats one already gated costs one more optimizer "
        "call; a budget bounds them all",
    ]
    if describes and s.slow_update:
        notes.append(
            "no slow update and no notes: a description run writes only the description "
            "(a slow update writes guidance into the body)"
        )
    if s.slow_update and not slow and not describes:
        notes.append(f"no slow update: the {optimizer_name} optimizer writes no epoch-end guidance")
    if s.stall_patience:
        notes.append(
            f"a run may stop early on a stall: after {s.stall_patience} steps in a row that "
            "show the optimizer the same failing training tasks of the same skill and give "
            "no better candidate, training ends and the test split is scored (stall_patience; "
            "0: never)"
        )
    if s.harness not in ("chat", "router"):  # the router is one chat call per task
        notes.append(
            f"the {s.harness} harness runs an agent per task: its tokens and cost "
            "are the agent's and are not estimated here (each task's usage is "
            "recorded from the CLI's output)"
        )
    return Plan(
        n_train=len(train),
        n_val=len(val),
        n_test=len(test),
        epochs=s.epochs,
        steps_per_epoch=per_epoch + (both.per_epoch if both else 0),
        total_steps=total + (both.steps if both else 0),
        budgets=budgets + [1] * (both.steps if both else 0),
        target_rollouts=rollouts,
        optimizer_calls=calls,
        target_tokens=target_tokens,
        optimizer_tokens=optimizer_tokens,
        cost=cost,
        cost_note=note,
        notes=notes,
        slow_updates=s.epochs if slow else 0,
        optimizer=optimizer_name,
        optimizer_note=calls_note,
        stages=stages,
        budget=_binding(Budget.of(s), rollouts, calls, cost),
    )


def _binding(budget: Budget, rollouts: int, calls: int, cost: float | None) -> list[str]:
    """What the budget does to this plan, in lines: which limit binds first (the one
    the plan's upper bounds cross soonest) or that none does."""
    if not budget.is_set:
        return []
    crossed = []  # (share of the plan the limit allows, flag, words)
    if budget.target_rollouts is not None and rollouts > budget.target_rollouts:
        crossed.append(
            (
                budget.target_rollouts / rollouts,
                FLAGS["target_rollouts"],
                f"{budget.target_rollouts:,} of at most {rollouts:,} rollouts",
            )
        )
    if budget.optimizer_calls is not None and calls > budget.optimizer_calls:
        crossed.append(
            (
                budget.optimizer_calls / calls,
                FLAGS["optimizer_calls"],
                f"{budget.optimizer_calls:,} of at most {calls:,} optimizer calls",
            )
        )
    lines = []
    if budget.usd is not None:
        if cost is None:
            lines.append(
                f"{FLAGS['usd']} {usd(budget.usd)}: the plan's cost is unknown, so it cannot "
                "say when it binds (the run refuses unpriced models unless --allow-unpriced)"
            )
        elif cost > budget.usd:
            crossed.append((budget.usd / cost, FLAGS["usd"], f"{usd(budget.usd)} of ≈${cost:.4f}"))
    if budget.time_limit is not None:
        lines.append(
            f"{FLAGS['time_limit']} {duration_text(budget.time_limit)}: checked before each "
            "batch (the plan cannot time the models)"
        )
    if crossed:
        share, flag, words = min(crossed)
        lines.insert(
            0,
            f"{flag} binds first: {words}; the run stops cleanly (exit 3) after about "
            f"{share:.0%} of the planned upper bound, resumable with a larger budget",
        )
    else:
        lines.insert(
            0, "no limit binds: the plan's upper bounds fit " + ", ".join(budget.describe())
        )
    return lines


@runtime_checkable
class _HoldsModel(Protocol):
    """A wrapper around a model (MeteredModel, StoredModel) or an optimizer that
    calls one (the LLM optimizer)."""

    model: object


@runtime_checkable
class _Priced(Protocol):
    """A user's model that says whether its calls are priced (`priced = True`)."""

    priced: bool


def _innermost(model: object) -> object:
    """The model under every wrapper (or `model` itself: a name, a bare model)."""
    inner = model
    while isinstance(inner, _HoldsModel) and isinstance(inner.model, Model):
        inner = inner.model
    return inner


def price_known(model: object) -> bool:
    """Whether what `model` (a `Model`, or one wrapped in skillopt's metering) costs
    can be counted: it is free, or litellm's price table knows it, or it is a
    scripted model with a price, or it says so itself (`priced = True`)."""
    from skillopt.models.remote import RemoteModel
    from skillopt.models.scripted import ScriptedModel

    inner = _innermost(model)
    name = inner.name if isinstance(inner, Model) else ""
    if isinstance(inner, ScriptedModel):
        return inner.cost is not None
    if free_model(name) is not None:
        return True
    if isinstance(inner, RemoteModel):
        return _estimate(name, 1000, 1000)[0] is not None
    return isinstance(inner, _Priced) and inner.priced


def priors(skill: Skill, suite: Suite, s: Settings, target: object, optimizer: object) -> Priors:
    """The dry run's price per rollout and per optimizer call, for a budget to project
    with before the run has paid for anything (None where unknown). `target` and
    `optimizer` are models or model names."""
    rollout_in, rollout_out, call_in = _unit_tokens(skill, suite, s)
    return Priors(
        rollout_usd=_unit_price(target, rollout_in, rollout_out),
        call_usd=_unit_price(optimizer, call_in, OPTIMIZER_OUTPUT_TOKENS),
    )


def _unit_price(model: object, tokens_in: float, tokens_out: float) -> float | None:
    from skillopt.models.scripted import ScriptedModel

    inner = _innermost(model)
    if isinstance(inner, ScriptedModel):
        return inner.cost  # its price per call, as it says
    name = inner if isinstance(inner, str) else (inner.name if isinstance(inner, Model) else "")
    return _estimate(name, tokens_in, tokens_out)[0] if "/" in name else None


def _unit_tokens(skill: Skill, suite: Suite, s: Settings) -> tuple[float, float, float]:
    """Estimated (input tokens, output tokens) of one rollout, and input tokens of
    one optimizer call."""
    tasks = suite.tasks
    avg_prompt = sum(_tokens(t.prompt) for t in tasks) / max(1, len(tasks))
    avg_expected = sum(_tokens(str(t.expected or "")) for t in tasks) / max(1, len(tasks))
    per_rollout_in = _tokens(skill.body) + avg_prompt
    per_rollout_out = max(16, avg_expected * 2)
    per_call_in = (
        OPTIMIZER_TEMPLATE_TOKENS
        + _tokens(skill.body)
        + s.minibatch_size * (avg_prompt + 2 * avg_expected + 40)
    )
    if s.part == "description":  # the description and a batch of queries, never the body
        per_call_in = (
            OPTIMIZER_TEMPLATE_TOKENS
            + _tokens(skill.description)
            + s.batch_size * (avg_prompt + 20)
        )
    return per_rollout_in, per_rollout_out, per_call_in


def free_model(model: str) -> str | None:
    """Why `model` costs nothing ("runs on this machine"), or None when it may cost."""
    return FREE_PROVIDERS.get(model.split("/", 1)[0]) if "/" in model else None


def _estimate(model: str, tokens_in: float, tokens_out: float) -> tuple[float | None, str]:
    """(the cost in USD, what it is in words): 0.0 for a free model ("local/x: free,
    runs on this machine"), None when litellm's price table knows no price for it."""
    why = free_model(model)
    if why is not None:
        return 0.0, f"{model}: free, {why}"
    from skillopt.models import prices
    from skillopt.models.base import Usage

    cost = prices.cost(model, Usage(int(tokens_in), int(tokens_out)))
    if cost is None:
        return None, f"{model}: no price known"
    return cost, f"{model}: ≈${cost:.4f}"
