"""The parts of the reports that list things: report.md's test split, accepted
and rejected edits and each edit's verdict in the steps that gated their edits apart
(`training/credit`), the steps whose edits held secret values (how many, never
which), and a step's edits and candidates as the run page shows them.

Invariant: a record without verdicts (an old run's, or a step that gated its edits
together) renders as it always did.
"""

from __future__ import annotations

from typing import Any

from skillopt._util import display
from skillopt._util.display import NA
from skillopt.skill.document import Skill
from skillopt.skill.edits import Edit
from skillopt.training.state import TrainState
from skillopt.training.steps import (
    BatchRecord,
    SkippedSlowUpdate,
    SlowUpdateRecord,
    StepRecord,
    apply_of,
)


def decomposed(rec: BatchRecord) -> bool:
    """Whether a step's edits were credited apart: it gated several candidates, or
    held some edits back."""
    return bool(rec.trials) or any(c.get("verdict") == "held_back" for c in rec.credit or [])


def edits_by_verdict(rec: BatchRecord) -> list[tuple[str, dict[str, Any]]]:
    """A step's applied edits as ("accepted" | "rejected", entry) by their own verdict
    (`rec.credit`): a step accepted with a subset of its edits rejected the rest."""
    applied = [a["edit"] for a in rec.apply if a.get("status") == "applied"]
    out = []
    for c in rec.credit or []:
        n = c.get("edit", 0)
        if not 1 <= n <= len(applied) or c.get("verdict") == "held_back":
            continue
        entry = {"step": rec.step, **applied[n - 1]}
        if c.get("verdict") == "accepted":
            out.append(("accepted", entry))
        else:
            out.append(("rejected", {**entry, "reason": c.get("why", rec.reason)}))
    return out


def verdict_section(steps: list[dict[str, Any]]) -> list[str]:
    """`## Verdict per edit`: one line per edit of each step that credited its edits
    apart; nothing when no step did."""
    credited = [st for st in steps if st.get("credit")]
    if not credited:
        return []
    lines = ["", "## Verdict per edit", ""]
    for st in credited:
        lines.append(f"- step {st['step']}:")
        for c in st["credit"]:
            lines.append(f"  - edit {c['edit']} {str(c['verdict']).replace('_', ' ')}: {c['why']}")
    return lines


def secrets_section(steps: list[dict[str, Any]]) -> list[str]:
    """The steps whose proposed edits (or guidance) held known secret values, blanked
    before anything was applied: how many, never which."""
    blanked = [st for st in steps if st.get("secrets")]
    if not blanked:
        return []
    lines = [
        "",
        "## Secret values removed",
        "",
        "Known secret values (keys and tokens from the environment or the model settings) "
        "that the optimizer put in its edits, replaced with `***` before any edit was "
        "applied, committed or stored:",
        "",
    ]
    for st in blanked:
        n, slow = st["secrets"], st["kind"] == "slow_update"
        kind, what = ("slow update", "guidance") if slow else ("step", "edits")
        plural = "s" if n != 1 else ""
        lines.append(
            f"- step {st['step']} ({kind}): {n} secret value{plural} removed from the {what}"
        )
    return lines


def test_section(s: dict[str, Any]) -> list[str]:
    test = s.get("test") or {}
    if not test:
        return []
    lines = ["## Test split", "", "| skill | mean | pass rate | n |", "|---|---:|---:|---:|"]
    for name, label in (("no_skill", "no skill"), ("initial", "initial"), ("best", "best")):
        t = test.get(name)
        if t:
            lines.append(
                f"| {label} | {display.score(t['mean'], none=NA)} | "
                f"{display.pct(t['pass_rate'], none=NA)} | {t['n']} |"
            )
    lines.append("")
    f = s.get("test_flips")
    if f is not None:
        lines += [f"Best against initial (n={f['n']}): {flips_line(f)}", ""]
        if f["pass_to_fail"]:
            lines += [
                f"`skillopt validate --baseline` against the initial skill fails with "
                f"`--max-regressions 0` on this split; `--max-regressions "
                f"{len(f['pass_to_fail'])}` admits these tasks.",
                "",
            ]
    return lines


def flips_line(f: dict[str, Any]) -> str:
    """`fail→pass 10: a, b … and 2 more · pass→fail 1: c` (`f` as `flips` gives it)."""
    return display.flips(f["fail_to_pass"], f["pass_to_fail"])


def edit_lines(edits: list[dict[str, Any]]) -> list[str]:
    lines = []
    for e in edits:
        why = f" ({e['reason']})" if e.get("reason") else ""
        if e["op"] == "guidance":
            lines.append(f"- step {e['step']}{why}: slow-update guidance:")
            lines += [f"  > {line}" for line in (e.get("content") or "").splitlines()]
        else:
            lines.append(f"- step {e['step']}{why}: {Edit.from_dict(e).describe(120)}")
    return lines


def step_edits(rec: StepRecord) -> list[dict[str, Any]]:
    """A step's edits as the run page lists them: each with its apply status and, in a
    step that credited its edits apart, its verdict (a slow update's: its guidance)."""
    edits: list[dict[str, Any]] = []
    if isinstance(rec, SlowUpdateRecord):
        if rec.guidance:
            status = "applied" if apply_of(rec) else "not applied"
            edits.append(
                {
                    "op": "guidance",
                    "content": rec.guidance,
                    "status": status,
                    "rationale": "slow update: guidance from the epoch's results",
                    "evidence": [],
                    "detail": "",
                }
            )
    elif not isinstance(rec, SkippedSlowUpdate):
        verdicts = (
            {c.get("edit"): c for c in rec.credit or []} if isinstance(rec, BatchRecord) else {}
        )
        number = 0  # the edit's number among the applied ones, as credited
        for a in apply_of(rec):
            e = a.get("edit") or {}
            number += a.get("status") == "applied"
            verdict = verdicts.get(number) if a.get("status") == "applied" else None
            edits.append(
                {
                    "op": e.get("op"),
                    "section": e.get("section"),
                    "anchor": e.get("anchor"),
                    "content": e.get("content"),
                    "rationale": e.get("rationale"),
                    "evidence": list(e.get("evidence") or []),
                    "status": a.get("status"),
                    "detail": a.get("detail") or "",
                    **(
                        {"verdict": f"{verdict['verdict']}: {verdict['why']}".replace("_", " ")}
                        if verdict
                        else {}
                    ),
                }
            )
    return edits


def step_trials(rec: StepRecord) -> list[dict[str, Any]]:
    """A decomposed step's candidates: which edits, what the gate said."""
    if not isinstance(rec, BatchRecord):
        return []
    keys = ("label", "decision", "gains", "regressions", "delta")
    return [{k: t.get(k) for k in keys} for t in rec.trials or []]


def description_summary(state: TrainState, config: dict[str, Any]) -> dict[str, Any]:
    """A run that trained the description (`train --part description|both`): the
    initial and best descriptions, the installed skills its misfired queries loaded
    instead, and precision and recall on the test split's trigger queries; nothing for
    a body run (its summary keeps the keys it always had)."""
    part = (config.get("settings") or {}).get("part", "body")
    if part == "body":
        return {}
    collisions = {
        name for rec in state.steps if isinstance(rec, BatchRecord) for name in rec.collisions or ()
    }
    return {
        "part": part,
        "description": {
            "initial": Skill.parse(state.initial.text).description,
            "best": Skill.parse(state.incumbent.text).description,
            "collisions": sorted(collisions),
        },
        **({"triggers": state.triggers} if state.triggers else {}),
    }


def description_section(summary: dict[str, Any]) -> list[str]:
    """`## Description`: what a description run started from and ended with, and the
    installed skills it collided with."""
    d = summary.get("description")
    if not d:
        return []
    lines = ["## Description", "", f"- Initial: {d['initial']}", f"- Best: {d['best']}"]
    if d["collisions"]:
        names = ", ".join(f"`{n}`" for n in d["collisions"])
        lines.append(
            f"- Collided with: {names} (installed skills that misfired training queries "
            "loaded instead)"
        )
    for name, t in (summary.get("triggers") or {}).items():
        lines.append(
            f"- Test trigger queries, {name}: precision {display.score(t['precision'], 2)} · "
            f"recall {display.score(t['recall'], 2)} ({t['n']} queries)"
        )
    return [*lines, ""]
