"""What a step's evidence says, in the words its readers need: the audit commit's
message and trailers (people and `skillopt log`), and the before/after comparison
the slow update shows the optimizer (inputs, expected answers and the agent's
answers: training tasks only)."""

from __future__ import annotations

from collections.abc import Sequence

from skillopt._util import display
from skillopt._util.display import NA
from skillopt._util.text import clip
from skillopt.optimize.gate import Decision
from skillopt.rollouts.outcomes import task_outcomes
from skillopt.rollouts.record import Rollout
from skillopt.skill.edits import ApplyReport
from skillopt.store.trailers import StepTrailers
from skillopt.suite.task import Task


def comparison(tasks: list[Task], before: Sequence[Rollout], after: Sequence[Rollout]) -> str:
    """The tasks grouped by how the skill's change moved them (improved, regressed,
    still failing; still passing counted only), each with its input, the expected
    answer and the agent's answers with the skill before and after the change."""
    was, now = task_outcomes(before), task_outcomes(after)
    said, says = _answers(before), _answers(after)
    groups: dict[str, list[str]] = {
        "improved": [],
        "regressed": [],
        "still failing": [],
        "still passing": [],
    }
    for t in tasks:
        b, a = was.get(t.id), now.get(t.id)
        if b is None or a is None or b.passed is None or a.passed is None:
            continue
        key = (
            "improved"
            if a.passed and not b.passed
            else "regressed"
            if b.passed and not a.passed
            else "still passing"
            if a.passed
            else "still failing"
        )
        groups[key].append(
            f"  - {t.id}: input {_quoted(t.prompt, 160)} → expected "
            f"{_quoted(str(t.expected), 80)}\n"
            f"    answer before {_quoted(said.get(t.id, ''), 160)} → after "
            f"{_quoted(says.get(t.id, ''), 160)}"
        )
    out = []
    for name, lines in groups.items():
        out.append(f"{name.capitalize()} ({len(lines)}):")
        out.extend(lines[:12] if name != "still passing" else [])
    return "\n".join(out)


def _answers(rollouts: Sequence[Rollout]) -> dict[str, str]:
    """Each task's first scored answer."""
    out: dict[str, str] = {}
    for r in rollouts:
        if r.scored:
            out.setdefault(r.task_id, r.answer or "")
    return out


def _quoted(text: str, limit: int) -> str:
    return repr(clip(text, limit))


def commit_message(
    step: int,
    epoch: int,
    kind: str,
    verdict: str,
    d: Decision,
    report: ApplyReport,
    gate: str,
    skill_hash: str,
    *,
    trial: int = 1,
    label: str = "",
    credit: Sequence[str] = (),
) -> tuple[str, str, StepTrailers]:
    """The subject, body and trailers of a gated candidate's audit commit: `trial`
    is its number among the step's candidates (a subset of the step's edits, `label`,
    when it is the second or later), `credit` each edit's verdict, on the commit
    that settled a decomposed step."""
    what = "slow update" if kind == "slow_update" else "step"
    val = (
        f"{display.score(d.incumbent_mean, none=NA)} -> {display.score(d.candidate_mean, none=NA)}"
    )
    part = f" ({label})" if trial > 1 and label else ""
    subject = f"{what} {step}{part}: {verdict} — val {val}" + (
        f" ({display.delta(d.delta)})" if d.delta is not None else ""
    )
    body = [d.reason[0].upper() + d.reason[1:] + ".", "", "Edits:"]
    for r in report.results:
        status = "applied" if r.applied else f"not applied: {r.status}"
        body.append(f"- [{status}] {r.edit.describe(100)}")
        if r.edit.rationale:
            body.append(f"  why: {r.edit.rationale}")
        if r.edit.evidence:
            body.append(f"  evidence: {', '.join(r.edit.evidence)}")
    body += [
        "",
        f"Flips fail->pass ({len(d.fail_to_pass)}): {', '.join(d.fail_to_pass) or '-'}",
        f"Flips pass->fail ({len(d.pass_to_fail)}): {', '.join(d.pass_to_fail) or '-'}",
    ]
    if credit:
        body += ["", "Verdict per edit of the step:", *(f"- {c}" for c in credit)]
    evidence = StepTrailers(
        step=step,
        decision=verdict,
        epoch=epoch + 1,
        kind=kind,
        gate=gate,
        val=d.candidate_mean,
        incumbent_val=d.incumbent_mean,
        n=d.n,
        delta=d.delta,
        p_value=d.p_value,
        fail_to_pass=len(d.fail_to_pass),
        pass_to_fail=len(d.pass_to_fail),
        edits_applied=len(report.applied),
        edits_skipped=len(report.not_applied),
        trial=trial if trial > 1 else None,
        credit="; ".join(credit) or None,
        skill_hash=skill_hash,
    )
    return subject, "\n".join(body), evidence
