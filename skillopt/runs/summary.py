"""The run's summary (`summary.json`) and Markdown report (`report.md`), both built
from the checkpoint state alone, so a finished run can be re-reported any time.

Invariant: a decision reads the same everywhere people see it (`decision_label`:
`no candidate`, as the console prints it); the data keep their keys
(`no_candidate` in `summary.json` and `state.json`).
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from skillopt._util import display
from skillopt._util.display import NA
from skillopt.runs.sections import (
    decomposed,
    description_section,
    description_summary,
    edit_lines,
    edits_by_verdict,
    secrets_section,
    test_section,
    verdict_section,
)
from skillopt.training.checkpoint import SplitScore
from skillopt.training.state import TrainState
from skillopt.training.steps import (
    BatchRecord,
    InitialRecord,
    SlowUpdateRecord,
    StepRecord,
    apply_of,
    gate_of,
)

_GATE_RULES = {
    "strict": "a candidate replaces the incumbent when its mean validation score is "
    "higher on the same tasks; ties are rejected. The p-value is shown as evidence "
    "only: this gate does not test it",
    "margin": "a candidate replaces the incumbent when its mean validation score is "
    "higher by more than {min_delta:g} on the same tasks; the p-value is shown as "
    "evidence only",
    "paired": "a candidate replaces the incumbent when its mean validation score is "
    "higher by more than {min_delta:g} on the same tasks and a one-sided paired "
    "permutation test gives p ≤ {alpha:g}",
    "no-regression": "a candidate replaces the incumbent when its mean validation score "
    "is higher on the same tasks and it turns no validation task from pass to fail; ties "
    "are rejected",
}


def decision_label(decision: str) -> str:
    """A decision as people read it: `no_candidate` → `no candidate`."""
    return decision.replace("_", " ")


def decision_counts(decisions: dict[str, int]) -> str:
    """`3 accepted, 2 no candidate, 1 rejected` (the console's and the report's)."""
    return ", ".join(f"{n} {decision_label(d)}" for d, n in decisions.items()) or "none"


def gate_rule(
    name: str, min_delta: float = 0.0, alpha: float = 0.05, max_regressions: int | None = None
) -> str:
    """What the gate called `name` keeps, in one sentence (with the regression
    allowance, when one was set, which every built-in gate applies)."""
    rule = _GATE_RULES.get(name)
    if rule is not None:
        text, m = rule.format(min_delta=min_delta, alpha=alpha), max_regressions
        if m is None:
            return text
        allowed = f"{m} validation tasks from pass to fail (`--max-regressions {m}`)"
        if name == "no-regression":
            return text.replace("no validation task from pass to fail", f"at most {allowed}")
        return f"{text}; a candidate that turns more than {allowed} is rejected"
    try:
        from skillopt.plugins import registry

        entry = registry().find("gate", name)
    except Exception:  # a broken plugin never stops a report
        entry = None
    help_text = entry.help if entry is not None else ""
    return help_text or "a gate from a plugin or passed in code: see its documentation"


def flips(before: SplitScore | None, after: SplitScore | None) -> dict[str, Any] | None:
    """The tasks that flipped from `before` to `after` among those both scored, or
    None when either has no per-task results (a run from before they were kept)."""
    if before is None or after is None or before.passed is None or after.passed is None:
        return None
    both = [t for t in after.passed if t in before.passed]
    return {
        "n": len(both),
        "fail_to_pass": [t for t in both if not before.passed[t] and after.passed[t]],
        "pass_to_fail": [t for t in both if before.passed[t] and not after.passed[t]],
    }


def _applied(rec: StepRecord) -> list[dict[str, Any]]:
    return [a["edit"] for a in apply_of(rec) if a.get("status") == "applied"]


def _candidate_edits(rec: StepRecord) -> list[dict[str, Any]]:
    """The edits that made a step's candidate (a slow update's: its guidance)."""
    if isinstance(rec, SlowUpdateRecord):
        return [{"op": "guidance", "content": rec.guidance}] if _applied(rec) else []
    return _applied(rec)


def summary(state: TrainState, config: dict[str, Any]) -> dict[str, Any]:
    """The run's summary from its state and its recorded config (`run.yaml`)."""
    steps = state.steps
    settings = config.get("settings", {})
    decisions: dict[str, int] = {}
    for rec in steps:
        if not isinstance(rec, InitialRecord):
            decisions[rec.decision] = decisions.get(rec.decision, 0) + 1
    edits: dict[str, list[dict[str, Any]]] = {"accepted": [], "rejected": []}
    for rec in steps:
        if isinstance(rec, BatchRecord) and decomposed(rec):
            for kind, entry in edits_by_verdict(rec):
                edits[kind].append(entry)
        elif isinstance(rec, (BatchRecord, SlowUpdateRecord)) and rec.decision in edits:
            for e in _candidate_edits(rec):
                entry = {"step": rec.step, **e}
                if rec.decision == "rejected":
                    entry["reason"] = rec.reason
                edits[rec.decision].append(entry)
    test_wall = [s.wall_s for s in state.test.values() if s.wall_s is not None]
    step_wall = [rec.wall_s for rec in steps if rec.wall_s is not None]
    return {
        "run_id": config.get("run_id"),
        "skill": config.get("skill"),
        "suite": config.get("suite"),
        "target": settings.get("target"),
        "optimizer": settings.get("optimizer"),
        "gate": {
            "name": (config.get("objects") or {}).get("gate") or settings.get("gate", "strict"),
            "min_delta": settings.get("min_delta", 0.0),
            "alpha": settings.get("alpha", 0.05),
            # absent while unset, as in the summaries of runs from before it existed
            **{k: v for k, v in settings.items() if k == "max_regressions" and v is not None},
        },
        # "stopped: budget" when a budget stopped it (`stop` says which and where)
        "status": f"stopped: {state.stop.reason}"
        if state.status == "stopped" and state.stop
        else state.status,
        "stop": state.stop.to_dict() if state.stop is not None else None,
        "started_at": state.started_at,
        "stopped_early": None if state.stopped_early is None else asdict(state.stopped_early),
        **({"suite_warnings": list(w)} if (w := config.get("suite_warnings")) else {}),
        "initial_val": state.initial.val,
        "best_val": state.incumbent.val,
        "best_skill_hash": state.incumbent.hash,
        "test": {name: score.totals() for name, score in state.test.items()},
        # best against initial on the test split: what `validate --baseline` counts
        "test_flips": flips(state.test.get("initial"), state.test.get("best")),
        "decisions": decisions,
        "steps": [_step(rec) for rec in steps],
        "accepted_edits": edits["accepted"],
        "rejected_edits": edits["rejected"],
        "skipped": skipped_calls(state),
        # seconds spent on the steps and the test split (a resumed step counts from
        # its restart), None for a run recorded before steps were timed
        "wall_s": round(sum(step_wall) + sum(test_wall), 3) if step_wall else None,
        "accounting": state.accounting.to_dict(),
        **description_summary(state, config),
    }


def _step(rec: StepRecord) -> dict[str, Any]:
    gate = gate_of(rec)
    batch = rec if isinstance(rec, BatchRecord) else None
    initial = rec if isinstance(rec, InitialRecord) else None
    if gate is not None:
        # a raced rejection scored the candidate on some tasks only: no val score
        val = None if gate.unrun else gate.candidate_mean
    else:
        val = initial.val if initial is not None else None
    return {
        "step": rec.step,
        "kind": rec.kind,
        "epoch": rec.epoch,
        "decision": rec.decision,
        "reason": None if isinstance(rec, InitialRecord) else rec.reason,
        "budget": batch.budget if batch is not None else None,
        "train_mean": batch.train_mean if batch is not None else None,
        "commit": _commit(rec),
        "val": val,
        "delta": gate.delta if gate is not None else None,
        "p_value": gate.p_value if gate is not None else None,
        "fail_to_pass": list(gate.fail_to_pass) if gate is not None else None,
        "pass_to_fail": list(gate.pass_to_fail) if gate is not None else None,
        # each edit's verdict, for a step that gated its edits apart or held some back
        **({"credit": batch.credit} if batch is not None and decomposed(batch) else {}),
        "wall_s": rec.wall_s,
        # absent while none, as in the summaries of runs from before it was counted
        **(
            {"secrets": rec.secrets}
            if isinstance(rec, (BatchRecord, SlowUpdateRecord)) and rec.secrets
            else {}
        ),
    }


def _commit(rec: StepRecord) -> str | None:
    """The audit commit a step recorded: the initial skill's, or its candidate's."""
    if isinstance(rec, (InitialRecord, BatchRecord, SlowUpdateRecord)):
        return rec.commit
    return None


def skipped_calls(state: TrainState) -> list[dict[str, Any]]:
    """Every optimizer request that gave nothing usable, with its reason: a failed
    call or a reply that stayed invalid after the repair re-ask."""
    out = []
    for rec in state.steps:
        for p in rec.proposals if isinstance(rec, BatchRecord) else []:
            if p.get("skipped"):
                out.append({"step": rec.step, "what": "minibatch", "reason": p["skipped"]})
        if isinstance(rec, SlowUpdateRecord) and rec.skipped:
            out.append({"step": rec.step, "what": "slow update", "reason": rec.skipped})
    for note in state.skipped_notes:
        out.append({"step": None, "what": f"notes after epoch {note.epoch}", "reason": note.reason})
    return out


def duration(seconds: float | None) -> str:
    """`0.4s`, `42s`, `3m 05s`, `1h 02m`; empty when unknown."""
    if seconds is None:
        return ""
    if seconds < 10:
        return f"{seconds:.1f}s"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s // 3600}h {s % 3600 // 60:02d}m"


def _cell(text: object) -> str:
    """Text for a Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text or "").split()).replace("|", "\\|")


def _count(ids: list[str] | None) -> str:
    return "" if ids is None else str(len(ids))


def _kind(kind: str) -> str:
    return "slow update" if kind == "slow_update" else kind


def markdown(summary: dict[str, Any]) -> str:
    s = summary
    acct = s["accounting"]
    gate = s.get("gate") or {"name": "strict", "min_delta": 0.0, "alpha": 0.05}
    lines = [
        f"# Training report: {s['run_id']}",
        "",
        f"- Skill: `{s['skill']}`",
        f"- Suite: `{s['suite']}`",
        f"- Target: `{s['target']}` · optimizer: `{s['optimizer']}`",
        f"- Gate: `{gate['name']}`: "
        + gate_rule(
            gate["name"],
            gate.get("min_delta") or 0.0,
            gate.get("alpha") or 0.05,
            gate.get("max_regressions"),
        ),
        f"- Validation: {display.score(s['initial_val'], none=NA)} (initial) → "
        f"{display.score(s['best_val'], none=NA)} (best)",
    ]
    lines += [f"- Warning (suite): {w}" for w in s.get("suite_warnings") or []]
    if s.get("started_at"):
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(s["started_at"]))
        took = f", {duration(s['wall_s'])} spent on steps and tests" if s.get("wall_s") else ""
        lines.append(f"- Started {started}{took}")
    budget_stop = s.get("stop")
    if budget_stop and str(s.get("status", "")).startswith("stopped"):
        lines.append(
            f"- **Stopped: budget** {budget_stop['budget']} after step {budget_stop['step']}, "
            f"before {budget_stop['where']} ({budget_stop['detail']}); "
            f"resume with a larger budget"
        )
    stop = s.get("stopped_early")
    if stop:
        lines.append(
            f"- Stopped early after step {stop['step']} (epoch {stop['epoch']}): {stop['reason']}"
        )
    lines += ["", *test_section(s), *description_section(s)]
    lines += [
        "## Steps",
        "",
        "Flips count the validation tasks that went fail→pass (gains) and pass→fail "
        "(regressions) from the incumbent to the candidate; commits are in the run's audit repository "
        "(`skillopt show RUN STEP`).",
        "",
        "| step | kind | epoch | budget | train | val | Δ | p | fail→pass | pass→fail "
        "| decision | reason | commit | time |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---:|",
    ]
    for st in s["steps"]:
        lines.append(
            f"| {st['step']} | {_kind(st['kind'])} | {st['epoch']} | {st.get('budget') or ''} | "
            f"{display.score(st.get('train_mean'), none=NA)} | "
            f"{display.score(st.get('val'), none=NA)} | "
            f"{display.delta(st.get('delta'), none=NA)} | "
            f"{display.p_value(st.get('p_value'), none=NA)} | "
            f"{_count(st.get('fail_to_pass'))} | {_count(st.get('pass_to_fail'))} | "
            f"{decision_label(st['decision'])} | {_cell(st.get('reason'))} | "
            f"{(st.get('commit') or '')[:8]} | {duration(st.get('wall_s'))} |"
        )
    lines += ["", f"Decisions: {decision_counts(s['decisions'])}", ""]
    lines += ["## Accepted edits", ""]
    if not s["accepted_edits"]:
        lines.append("None: the best skill is the initial skill.")
    lines += edit_lines(s["accepted_edits"])
    rejected = s.get("rejected_edits") or []
    if rejected:
        lines += ["", "## Rejected edits", ""]
        lines += edit_lines(rejected)
    lines += verdict_section(s["steps"])
    if s.get("skipped"):
        lines += [
            "",
            "## Skipped optimizer calls",
            "",
            "Requests that gave no usable reply (a failed call, or a reply still invalid "
            "after one repair re-ask):",
            "",
        ]
        for sk in s["skipped"]:
            where = f"step {sk['step']}, " if sk["step"] is not None else ""
            lines.append(f"- {where}{sk['what']}: {sk['reason']}")
    lines += secrets_section(s["steps"])
    lines += [
        "",
        "## Cost",
        "",
        f"- Target rollouts run: {acct.get('target_rollouts', 0)} "
        f"(+{acct.get('cached_rollouts', 0)} from the store, "
        f"{acct.get('unscored_rollouts', 0)} unscored)",
        f"- Target tokens: {acct.get('target_input_tokens', 0):,} in"
        f"{_from_cache(acct, 'target')}, "
        f"{acct.get('target_output_tokens', 0):,} out; cost "
        f"{display.spent(acct.get('target_cost'), acct.get('target_calls', 0))}",
        f"- Optimizer calls: {acct.get('optimizer_calls', 0)} "
        f"({acct.get('skipped_minibatches', 0)} minibatches skipped); tokens "
        f"{acct.get('optimizer_input_tokens', 0):,} in{_from_cache(acct, 'optimizer')}, "
        f"{acct.get('optimizer_output_tokens', 0):,} out; cost "
        f"{display.spent(acct.get('optimizer_cost'), acct.get('optimizer_calls', 0))}",
    ]
    estimated = estimated_line(acct)
    if estimated:
        lines.append(f"- {estimated[0].upper()}{estimated[1:]}")
    lines.append("")
    return "\n".join(lines)


def estimated_line(acct: dict[str, Any]) -> str | None:
    """Which part of the totals is an estimate: the rollouts and calls that were in
    flight when a process of the run was killed (the provider may have billed them),
    counted at their estimated price; None when nothing is estimated."""
    rollouts, calls = acct.get("target_estimated", 0), acct.get("optimizer_estimated", 0)
    if not rollouts and not calls:
        return None
    parts = [
        f"{n:,} {what}{'' if n == 1 else 's'}"
        for n, what in ((rollouts, "target rollout"), (calls, "optimizer call"))
        if n
    ]
    cost = display.money(acct.get("estimated_cost") or 0.0)
    return (
        f"estimated: {' and '.join(parts)} in flight when the run was killed, "
        f"counted as spent at their estimate ({cost} of the cost)"
    )


def _from_cache(acct: dict[str, Any], role: str) -> str:
    """How many of `role`'s input tokens the provider read from its prompt cache,
    said only when some were (a run without caching reads as it always did)."""
    n = acct.get(f"{role}_cached_tokens", 0)
    return f" ({n:,} cached tokens)" if n else ""


def cached_tokens_line(acct: dict[str, Any]) -> str | None:
    """One line on the prompt cache's share of the input tokens; None when no
    provider reported a cached token."""
    parts = [
        f"{role} {acct.get(f'{role}_cached_tokens', 0):,} of "
        f"{acct.get(f'{role}_input_tokens', 0):,} input tokens"
        for role in ("target", "optimizer")
        if acct.get(f"{role}_cached_tokens")
    ]
    return "cached tokens: " + ", ".join(parts) if parts else None
