"""Credit per edit: a step's candidate is gated whole, and when the gate rejects it
after it gained somewhere, subsets of its edits are gated to find the part that
helps. Every edit ends with its own verdict, recorded (state, commit, reports) and
told to the optimizer.

Invariants:
- An edit that names no failing training task of the step (a delete or replace
  whose evidence names none of them) is never gated together with edits that do:
  it is held back, and the optimizer is told why. So is a delete in a step that
  also adds or rewrites: it only takes away what the skill says, and the tasks an
  optimizer cites for it are no proof (optimizers propose deleting right rules and
  cite the failures they were shown), so it is gated alone, in a step of its own.
- Subsets are gated only when the whole candidate raised some validation task's
  score: without a gain, no part of it can beat the incumbent. They are raced like
  any candidate, the tasks the whole changed first, so a subset that cannot win
  stops after the tasks it could change.
- The first subset the gate accepts settles the step, in the order the evidence
  suggests: each edit left out in turn (the most suspect first), then each edit
  alone (the least suspect first); at most `MAX_TRIALS` candidates a step, and
  never one whose text (whitespace aside) the gate has already decided.
- A whole candidate the gate accepts although it broke validation tasks (gains
  outweighed losses) is not kept blindly: each edit is left out in turn (the most
  suspect first), raced against the whole, and the first that beats it is kept
  instead, since it beats the incumbent too (the mean gate alone would keep an
  edit that broke a task).
- Trials are committed once all are decided, rejected ones first, so the commit
  that settled the step carries every edit's verdict. A resumed step decides its
  trials again from the rollout store (nothing paid twice) and finds its commits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from skillopt._util import display
from skillopt.optimize.gate import Decision
from skillopt.optimize.merge import MergeResult
from skillopt.skill.document import Skill, text_key
from skillopt.skill.edits import ApplyReport, Edit, apply_edits
from skillopt.training.core import RunCore
from skillopt.training.decide import Build, Judge, Measured
from skillopt.training.events import Stage

MAX_TRIALS = 8  # candidates one step may gate: the whole and up to 7 subsets
HELD_BACK = (
    "held back: it names no failing training task in `evidence`, so it was not gated "
    "with the edits that do; name the failing tasks it fixes"
)
HELD_APART = (
    "held back: a delete is not gated together with edits that add or rewrite (they "
    "went first); propose it alone if it is still needed"
)


@dataclass(frozen=True)
class StepEdits:
    """A step's edits as the gate will see them: merged within the step's budget
    (`merged`), applied to the incumbent (`report`), split into those gated first
    (`group`, 1-based among the applied ones) and those held back with why (`held`),
    and the candidate of the first with its own apply report."""

    merged: MergeResult
    report: ApplyReport
    group: tuple[int, ...]
    held: dict[int, str]
    candidate: Skill
    candidate_report: ApplyReport

    @property
    def applied(self) -> list[Edit]:
        return [r.edit for r in self.report.applied]


def supported(edit: Edit, failing: set[str]) -> bool:
    """Whether `edit` may be gated with others: an addition, or a delete or replace
    whose evidence names a failing training task of the step."""
    return edit.op == "add" or bool(failing.intersection(edit.evidence))


def split(edits: Sequence[Edit], failing: set[str]) -> tuple[tuple[int, ...], dict[int, str]]:
    """(the edits gated first, the edits held back with why), as 1-based numbers: the
    supported edits, deletes held apart when some edit adds or rewrites; all of them
    when none is left."""
    numbers = tuple(range(1, len(edits) + 1))
    held = {i: HELD_BACK for i in numbers if not supported(edits[i - 1], failing)}
    rest = [i for i in numbers if i not in held]
    if any(edits[i - 1].op != "delete" for i in rest):
        held.update({i: HELD_APART for i in rest if edits[i - 1].op == "delete"})
    first = tuple(i for i in numbers if i not in held)
    if not first:
        return numbers, {}
    return first, held


def _suspicion(edit: Edit, failing: set[str]) -> tuple[int, int, int, int]:
    """Higher is more suspect: unsupported, then a delete over a replace over an add,
    then fewer minibatches proposing it, then fewer failing tasks named."""
    op = {"delete": 2, "replace": 1}.get(edit.op, 0)
    named = len(failing.intersection(edit.evidence))
    return (0 if supported(edit, failing) else 1, op, -edit.support, -named)


def subsets(
    edits: Sequence[Edit], group: Sequence[int], failing: set[str]
) -> list[tuple[int, ...]]:
    """The subsets of `group` (1-based edit numbers) to gate after the whole was
    rejected, in order: each edit left out (most suspect first; for three or more),
    then each edit alone (least suspect first)."""
    if len(group) < 2:
        return []
    order = sorted(group, key=lambda i: (_suspicion(edits[i - 1], failing), i))
    leave_out = (
        [tuple(i for i in group if i != j) for j in reversed(order)] if len(group) >= 3 else []
    )
    return leave_out + [(i,) for i in order]


def label(subset: Sequence[int], group: Sequence[int], total: int) -> str:
    """A trial's edits in words: "all 3 edits", "edit 2 alone", "without edit 2"."""
    if len(subset) == total:
        return f"all {total} edits" if total > 1 else "the edit"
    if len(subset) == 1:
        return f"edit {subset[0]} alone"
    if len(subset) == len(group) - 1:
        (missing,) = set(group) - set(subset)
        return f"without edit {missing}"
    return "edits " + ", ".join(map(str, subset))


def outcome(d: Decision) -> str:
    """A decision's gains and losses in words, with counts only."""
    gains, losses = d.flips
    text = f"{gains} validation task{'s' if gains != 1 else ''} gained, {losses} lost"
    text += f" ({display.delta(d.delta)})" if d.delta is not None else ""
    if d.unrun:
        text += f", settled with {d.unrun} not run"
    return text


def gained(d: Decision) -> bool:
    """Whether the candidate scored higher than the incumbent on some task."""
    return any(c > i for i, c in d.per_task.values() if i is not None and c is not None)


@dataclass(frozen=True)
class EditCredit:
    """What the gate found of one edit of a step."""

    edit: int  # 1-based, in the order the step applied its edits
    verdict: str  # accepted | rejected | held_back | untested
    why: str
    evidence: tuple[str, ...] = ()

    def line(self) -> str:
        return f"edit {self.edit} {self.verdict.replace('_', ' ')}: {self.why}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "edit": self.edit,
            "verdict": self.verdict,
            "why": self.why,
            "evidence": list(self.evidence),
        }


def credit(
    edits: Sequence[Edit], held: Mapping[int, str], trials: Sequence[Measured]
) -> list[EditCredit]:
    """Each edit's verdict from the trials the step gated (the accepted one, if any,
    last)."""
    won = trials[-1] if trials[-1].accepted else None
    whole = trials[0]
    decomposed = len(trials) > 1
    out = []
    for i, edit in enumerate(edits, 1):
        alone = next((t for t in trials if t.edits == (i,)), None)
        if i in held:
            verdict, why = "held_back", held[i]
        elif won is not None and i in won.edits:
            how = "alone" if won.edits == (i,) else f"with {won.label}"
            verdict, why = "accepted", f"{how}, {outcome(won.decision)}"
        elif alone is not None:
            verdict, why = "rejected", f"gated alone: {outcome(alone.decision)}"
        elif won is not None:
            verdict = "rejected"
            why = (
                f"left out: {won.label} passed the gate without it, while the candidate "
                f"with it did not ({outcome(whole.decision)})"
            )
        elif decomposed:
            verdict, why = "untested", "not gated apart from the step's other edits"
        else:
            together = "gated alone" if whole.edits == (i,) else f"gated with {whole.label}"
            verdict, why = "rejected", f"{together}: {outcome(whole.decision)}"
        out.append(EditCredit(i, verdict, why, edit.evidence))
    return out


def trial_record(m: Measured, sha: str) -> dict[str, Any]:
    d = m.decision
    return {
        "trial": m.trial,
        "edits": list(m.edits),
        "label": m.label,
        "decision": "accepted" if d.accepted else "rejected",
        "reason": d.reason,
        "val": None if d.unrun else d.candidate_mean,
        "delta": d.delta,
        "gains": list(d.fail_to_pass),
        "regressions": list(d.pass_to_fail),
        **({"unrun": d.unrun} if d.unrun else {}),
        "commit": sha,
        "skill_hash": m.candidate.hash,
    }


class StepGate:
    """Gates a step's edits: the whole first, then subsets (see the module)."""

    def __init__(self, core: RunCore, judge: Judge):
        self.core = core
        self.judge = judge

    def run(
        self,
        step: int,
        epoch: int,
        incumbent: Skill,
        step_edits: StepEdits,
        failing: set[str],
        build: Build,
    ) -> None:
        """Gate the candidate of the edits gated first, then subsets of them while it is
        rejected; commit, settle and record the step with every edit's verdict."""
        core = self.core
        edits, held, group = step_edits.applied, step_edits.held, step_edits.group
        candidate, report = step_edits.candidate, step_edits.candidate_report
        n = len(edits)
        core.stage(Stage(stage="gate", step=step))
        whole = Measured(
            1,
            group,
            label(group, group, n) if not held else f"the {len(group)} edits gated first",
            candidate,
            report,
            self.judge.measure(incumbent, candidate, step),
        )
        trials = [whole]
        if whole.accepted and whole.decision.pass_to_fail and len(group) > 1:
            trials = self.prune(step, incumbent, edits, group, failing, whole)
        elif not whole.accepted and gained(whole.decision):
            first_seen = [*whole.decision.fail_to_pass, *whole.decision.pass_to_fail]
            seen = {text_key(candidate.text)}
            for subset in subsets(edits, group, failing):
                if len(trials) >= MAX_TRIALS or trials[-1].accepted:
                    break
                made = self.fresh(incumbent, edits, subset, seen)
                if made is None:
                    continue
                cand, rep = made
                decision = self.judge.measure(incumbent, cand, step, first_seen)
                trials.append(
                    Measured(len(trials) + 1, subset, label(subset, group, n), cand, rep, decision)
                )
        verdicts = credit(edits, held, trials)
        lines = [c.line() for c in verdicts] if len(trials) > 1 or held else []
        shas = [
            self.judge.commit(step, epoch, "step", m, lines if m is trials[-1] else ())
            for m in trials
        ]
        self._remember(step, edits, trials, verdicts)
        self.judge.settle(
            step,
            "step",
            trials,
            shas,
            build,
            trial_records=[trial_record(m, s) for m, s in zip(trials, shas)]
            if len(trials) > 1
            else None,
            credit=[c.to_dict() for c in verdicts],
            memory=False,
        )

    def prune(
        self,
        step: int,
        incumbent: Skill,
        edits: Sequence[Edit],
        group: tuple[int, ...],
        failing: set[str],
        whole: Measured,
    ) -> list[Measured]:
        """The trials of an accepted whole that broke validation tasks: each edit left
        out in turn, raced against the whole; the first that beats it is accepted and
        the whole is recorded as passed over for it."""
        judge = self.judge
        base = judge.val_outcomes(whole.candidate, f"step {step} · val (candidate)")
        inc = judge.val_outcomes(incumbent, f"step {step} · val (incumbent)")
        order = sorted(group, key=lambda i: (_suspicion(edits[i - 1], failing), i), reverse=True)
        tried = 0
        for j in order:
            if tried >= MAX_TRIALS - 1:
                break
            subset = tuple(i for i in group if i != j)
            made = self.fresh(incumbent, edits, subset)
            if made is None:
                continue
            cand, rep = made
            tried += 1
            better, outcomes = judge.against(base, cand, step, whole.decision.pass_to_fail)
            if not better.accepted:
                continue
            decision = judge.gate.decide(inc, outcomes)
            if not decision.accepted:  # cannot happen with a built-in gate: it beat the whole
                continue
            passed_over = replace(
                whole.decision,
                accepted=False,
                reason=(
                    f"passed the gate ({whole.decision.reason}), but "
                    f"{label(subset, group, len(edits))} scored higher "
                    f"({display.delta(better.delta)} over it): kept instead"
                ),
            )
            lost = replace(whole, decision=passed_over)
            return [
                lost,
                Measured(2, subset, label(subset, group, len(edits)), cand, rep, decision),
            ]
        return [whole]

    def fresh(
        self,
        incumbent: Skill,
        edits: Sequence[Edit],
        subset: tuple[int, ...],
        seen: set[str] | None = None,
    ) -> tuple[Skill, ApplyReport] | None:
        """The candidate of `subset` (1-based edit numbers) and its apply report, or None
        when it is not worth a gate: an edit of it no longer applies alone, it is the
        incumbent, or its text (whitespace aside) was gated already, in this run or
        among this step's trials (`seen`, which it joins)."""
        cand, rep = apply_edits(incumbent, [edits[i - 1] for i in subset])
        key = text_key(cand.text)
        if rep.not_applied or cand.hash == incumbent.hash or key in (seen or ()):
            return None
        if self.core.memory.gated_at(key) is not None:
            return None
        if seen is not None:
            seen.add(key)
        return cand, rep

    def _remember(
        self,
        step: int,
        edits: Sequence[Edit],
        trials: Sequence[Measured],
        verdicts: Sequence[EditCredit],
    ) -> None:
        """Tell the memory each edit's verdict: the accepted ones as accepted, the
        held-back ones as not applied (with why), the rest as rejected with the
        whole candidate's decision and their own verdict."""
        memory, whole = self.core.memory, trials[0]
        won = trials[-1] if trials[-1].accepted else None
        if won is not None:
            d = won.decision
            kept = [edits[i - 1] for i in won.edits]
            memory.accept(step, kept, d.delta, val=d.candidate_mean, flips=d.flips)
        d = whole.decision
        for c in verdicts:
            edit = edits[c.edit - 1]
            if c.verdict == "held_back":
                memory.skip(step, edit, c.why)
            elif c.verdict != "accepted":
                memory.reject(
                    step,
                    [edit],
                    d.delta,
                    d.reason,
                    flips=d.flips,
                    skill_hash=whole.candidate.hash,
                    verdict=c.why if len(trials) > 1 else None,
                )
