"""The run's summary (`summary.json`) and Markdown report (`report.md`), both built
from the checkpoint state alone, so a finished run can be re-reported any time."""

from __future__ import annotations

from dataclasses import asdict

from skillopt import display
from skillopt.display import NA
from skillopt.optimize.state import TrainState
from skillopt.skill.edits import Edit


def summary(state: TrainState, config: dict) -> dict:
    """The run's summary from its state and its recorded config (`run.yaml`)."""
    steps = state.steps
    decisions: dict[str, int] = {}
    for rec in steps:
        if rec["kind"] != "initial":
            decisions[rec["decision"]] = decisions.get(rec["decision"], 0) + 1
    accepted_edits = []
    for rec in steps:
        if rec.get("decision") == "accepted":
            for a in rec.get("apply", []):
                if a["status"] == "applied":
                    accepted_edits.append({"step": rec["step"], **a["edit"]})
            if rec["kind"] == "slow_update":
                accepted_edits.append(
                    {"step": rec["step"], "op": "guidance", "content": rec.get("guidance")}
                )
    return {
        "run_id": config.get("run_id"),
        "skill": config.get("skill"),
        "suite": config.get("suite"),
        "target": config.get("settings", {}).get("target"),
        "optimizer": config.get("settings", {}).get("optimizer"),
        "status": state.status,
        "stopped_early": None if state.stopped_early is None else asdict(state.stopped_early),
        "initial_val": state.initial.val,
        "best_val": state.incumbent.val,
        "best_skill_hash": state.incumbent.hash,
        "test": {name: asdict(score) for name, score in state.test.items()},
        "decisions": decisions,
        "steps": [
            {
                k: rec.get(k)
                for k in (
                    "step",
                    "kind",
                    "epoch",
                    "decision",
                    "reason",
                    "budget",
                    "train_mean",
                    "commit",
                )
            }
            | {
                "val": (rec.get("gate") or {}).get("candidate_mean", rec.get("val")),
                "delta": (rec.get("gate") or {}).get("delta"),
                "p_value": (rec.get("gate") or {}).get("p_value"),
            }
            for rec in steps
        ],
        "accepted_edits": accepted_edits,
        "skipped": skipped_calls(state),
        "accounting": state.accounting.to_dict(),
    }


def skipped_calls(state: TrainState) -> list[dict]:
    """Every optimizer request that gave nothing usable, with its reason: a failed
    call or a reply that stayed invalid after the repair re-ask."""
    out = []
    for rec in state.steps:
        for p in rec.get("proposals") or []:
            if p.get("skipped"):
                out.append({"step": rec["step"], "what": "minibatch", "reason": p["skipped"]})
        if rec.get("kind") == "slow_update" and rec.get("skipped"):
            out.append({"step": rec["step"], "what": "slow update", "reason": rec["skipped"]})
    for note in state.skipped_notes:
        out.append({"step": None, "what": f"notes after epoch {note.epoch}", "reason": note.reason})
    return out


def markdown(summary: dict) -> str:
    s = summary
    acct = s["accounting"]
    lines = [
        f"# Training report: {s['run_id']}",
        "",
        f"- Skill: `{s['skill']}`",
        f"- Suite: `{s['suite']}`",
        f"- Target: `{s['target']}` · optimizer: `{s['optimizer']}`",
        f"- Validation: {display.score(s['initial_val'], none=NA)} (initial) → "
        f"{display.score(s['best_val'], none=NA)} (best)",
    ]
    stop = s.get("stopped_early")
    if stop:
        lines.append(
            f"- Stopped early after step {stop['step']} (epoch {stop['epoch']}): {stop['reason']}"
        )
    lines.append("")
    test = s.get("test") or {}
    if test:
        lines += ["## Test split", "", "| skill | mean | pass rate | n |", "|---|---:|---:|---:|"]
        for name, label in (("no_skill", "no skill"), ("initial", "initial"), ("best", "best")):
            t = test.get(name)
            if t:
                lines.append(
                    f"| {label} | {display.score(t['mean'], none=NA)} | "
                    f"{display.pct(t['pass_rate'], none=NA)} | {t['n']} |"
                )
        lines.append("")
    lines += [
        "## Steps",
        "",
        "| step | kind | epoch | budget | train | val | Δ | p | decision |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for st in s["steps"]:
        lines.append(
            f"| {st['step']} | {st['kind']} | {st['epoch']} | {st.get('budget') or ''} | "
            f"{display.score(st.get('train_mean'), none=NA)} | "
            f"{display.score(st.get('val'), none=NA)} | "
            f"{display.delta(st.get('delta'), none=NA)} | "
            f"{display.p_value(st.get('p_value'), none=NA)} | "
            f"{st['decision']} |"
        )
    lines += [
        "",
        "Decisions: " + (", ".join(f"{k} {v}" for k, v in s["decisions"].items()) or "none"),
        "",
    ]
    lines += ["## Accepted edits", ""]
    if not s["accepted_edits"]:
        lines.append("None: the best skill is the initial skill.")
    for e in s["accepted_edits"]:
        if e["op"] == "guidance":
            lines.append(f"- step {e['step']}: slow-update guidance:")
            lines += [f"  > {line}" for line in (e.get("content") or "").splitlines()]
        else:
            lines.append(f"- step {e['step']}: {Edit.from_dict(e).describe(120)}")
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
    lines += [
        "",
        "## Cost",
        "",
        f"- Target rollouts run: {acct.get('target_rollouts', 0)} "
        f"(+{acct.get('cached_rollouts', 0)} from the store, "
        f"{acct.get('unscored_rollouts', 0)} unscored)",
        f"- Target tokens: {acct.get('target_input_tokens', 0):,} in, "
        f"{acct.get('target_output_tokens', 0):,} out; cost "
        f"{display.money(acct.get('target_cost'), digits=4, none='unknown')}",
        f"- Optimizer calls: {acct.get('optimizer_calls', 0)} "
        f"({acct.get('skipped_minibatches', 0)} minibatches skipped); tokens "
        f"{acct.get('optimizer_input_tokens', 0):,} in, "
        f"{acct.get('optimizer_output_tokens', 0):,} out; cost "
        f"{display.money(acct.get('optimizer_cost'), digits=4, none='unknown')}",
        "",
    ]
    return "\n".join(lines)
