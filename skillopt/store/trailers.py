"""The `Skillopt-*` trailers of an audit commit, written and read in one place.

Every candidate commit ends with trailers that carry its decision and evidence:

    Skillopt-Run: words-20260101-120000-ab12
    Skillopt-Step: 3
    Skillopt-Decision: accepted
    Skillopt-Epoch: 1
    Skillopt-Kind: step
    Skillopt-Gate: strict
    Skillopt-Val: 0.500 -> 1.000 (n=4)
    Skillopt-Delta: +0.500
    Skillopt-P-Value: 0.2500
    Skillopt-Flips: fail->pass 2, pass->fail 0
    Skillopt-Edits: 1 applied, 0 skipped
    Skillopt-Trial: 2
    Skillopt-Credit: edit 1 accepted; edit 2 gated alone: lost 2 validation tasks
    Skillopt-Skill-Hash: 1312…

`Trial` (the second or later candidate a step gated: a subset of its edits, when
the whole was rejected) and `Credit` (each edit's verdict, on the commit that
settled a decomposed step) are written only when set.

The initial commit has only Run, Step, Decision, `Val: 0.500 (n=4)` (one value,
nothing compared) and Skill-Hash.

Invariants: `StepTrailers.to_trailers()` writes exactly these lines, in this order,
for every commit skillopt has ever made (users and tests read them, so a change
here is a change of format); `StepTrailers.parse` never raises: a missing or
unreadable field (an old or hand-made commit) is None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from skillopt._util import display
from skillopt._util.display import NA

_TRAILER = re.compile(r"^(Skillopt-[A-Za-z-]+):\s?(.*)$")
_VAL = re.compile(r"^(?:(?P<incumbent>\S+) -> )?(?P<val>\S+) \(n=(?P<n>\d+)\)$")
_FLIPS = re.compile(r"^fail->pass (\d+), pass->fail (\d+)$")
_EDITS = re.compile(r"^(\d+) applied, (\d+) skipped$")


def parse_trailers(message: str) -> dict[str, str]:
    """Every `Skillopt-*` trailer of a commit message, as written (the last one wins)."""
    out = {}
    for line in message.splitlines():
        m = _TRAILER.match(line.strip())
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


@dataclass(frozen=True)
class StepTrailers:
    """One audit commit's decision and evidence, as typed values.

    `val` is the mean validation score of the commit's skill (the candidate's, or
    the initial skill's); `incumbent_val` is the score it was compared against.
    A commit is *gated* when it carries a gate: its Val compares incumbent and
    candidate, and its Delta, P-Value and Flips are written even when unknown
    (`n/a`). Every field is None when absent."""

    run: str | None = None
    step: int | None = None
    decision: str | None = None  # initial | accepted | rejected
    epoch: int | None = None
    kind: str | None = None  # step | slow_update
    gate: str | None = None  # the gate mode: strict | margin | paired
    val: float | None = None
    incumbent_val: float | None = None
    n: int | None = None  # validation tasks scored for both
    delta: float | None = None
    p_value: float | None = None
    fail_to_pass: int | None = None
    pass_to_fail: int | None = None
    edits_applied: int | None = None
    edits_skipped: int | None = None
    trial: int | None = None  # the step's 2nd, 3rd… gated candidate (None: its first)
    credit: str | None = None  # each edit's verdict, `; `-separated
    skill_hash: str | None = None

    @property
    def gated(self) -> bool:
        return self.gate is not None

    def to_trailers(self) -> dict[str, str]:
        """The trailers, in the order they are written; absent fields are left out."""
        gated = self.gated
        out: dict[str, str | None] = {
            "Skillopt-Run": self.run,
            "Skillopt-Step": _str(self.step),
            "Skillopt-Decision": self.decision,
            "Skillopt-Epoch": _str(self.epoch),
            "Skillopt-Kind": self.kind,
            "Skillopt-Gate": self.gate,
            "Skillopt-Val": self._val()
            if gated or self.val is not None or self.n is not None
            else None,
            "Skillopt-Delta": display.delta(self.delta, none=NA) if gated else None,
            "Skillopt-P-Value": display.p_value(self.p_value, 4, none=NA) if gated else None,
            "Skillopt-Flips": (
                f"fail->pass {self.fail_to_pass or 0}, pass->fail {self.pass_to_fail or 0}"
                if gated
                else None
            ),
            "Skillopt-Edits": (
                f"{self.edits_applied or 0} applied, {self.edits_skipped or 0} skipped"
                if self.edits_applied is not None or self.edits_skipped is not None
                else None
            ),
            "Skillopt-Trial": _str(self.trial) if self.trial and self.trial > 1 else None,
            "Skillopt-Credit": " ".join(self.credit.split()) if self.credit else None,
            "Skillopt-Skill-Hash": self.skill_hash,
        }
        return {k: v for k, v in out.items() if v is not None}

    def _val(self) -> str:
        compared = f"{display.score(self.incumbent_val, none=NA)} -> " if self.gated else ""
        return f"{compared}{display.score(self.val, none=NA)} (n={self.n or 0})"

    @classmethod
    def parse(cls, message: str) -> StepTrailers:
        """The trailers of a commit message; what is missing or unreadable is None."""
        t = parse_trailers(message)
        fields: dict[str, Any] = {
            "run": t.get("Skillopt-Run"),
            "step": _int(t.get("Skillopt-Step")),
            "decision": t.get("Skillopt-Decision"),
            "epoch": _int(t.get("Skillopt-Epoch")),
            "kind": t.get("Skillopt-Kind"),
            "gate": t.get("Skillopt-Gate"),
            "delta": _float(t.get("Skillopt-Delta")),
            "p_value": _float(t.get("Skillopt-P-Value")),
            "skill_hash": t.get("Skillopt-Skill-Hash"),
            "trial": _int(t.get("Skillopt-Trial")),
            "credit": t.get("Skillopt-Credit"),
        }
        if m := _VAL.match(t.get("Skillopt-Val", "")):
            fields.update(val=_float(m["val"]), incumbent_val=_float(m["incumbent"]), n=int(m["n"]))
        if m := _FLIPS.match(t.get("Skillopt-Flips", "")):
            fields.update(fail_to_pass=int(m[1]), pass_to_fail=int(m[2]))
        if m := _EDITS.match(t.get("Skillopt-Edits", "")):
            fields.update(edits_applied=int(m[1]), edits_skipped=int(m[2]))
        return cls(**fields)


def _str(value: int | None) -> str | None:
    return None if value is None else str(value)


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None and text != NA else None
    except ValueError:
        return None
