"""Candidate tasks from the exchanges of the user's sessions: each request with the
context the agent had, what it did and how the session went on, redacted, with
near-duplicates merged.

Invariants: every text of a candidate has been through `_util.redact.redact` (and
`clean`) before it is clipped to its size, so no cut can leave half a secret
behind, and the count of each kind redacted is kept; near-duplicates are found with
`suite.similar.groups` on the redacted requests, and the candidate kept for a group
(its first) lists every session the request was seen in.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from skillopt._util.redact import redact
from skillopt._util.text import clean, clip
from skillopt.harvest.sessions import Exchange
from skillopt.suite.similar import THRESHOLD, groups, normalise

LIMITS = {"request": 4000, "answer": 1500, "next": 500, "error": 300, "path": 300}
# the user's next turn reads as a correction of what the agent did
CORRECTION = re.compile(
    r"^\s*(?:no|nope|wrong|stop|undo|revert)\b|\bthat'?s (?:not|wrong|incorrect)\b|"
    r"\b(?:that|this|it) (?:is|was) (?:wrong|incorrect|not right|not what)\b|"
    r"\bnot what I\b|\binstead\b|\bstill (?:fail|broken|wrong|not|doesn|isn|does)|"
    r"\b(?:doesn'?t|didn'?t|does not|did not|won'?t) work\b|\btry again\b|"
    r"\byou (?:forgot|missed|broke|didn'?t)\b|\bI said\b|\bI asked\b",
    re.I,
)


@dataclass(frozen=True)
class Seen:
    """One time a request was asked: in which agent's session, when, in which file."""

    agent: str
    session: str
    at: str
    file: str


@dataclass(frozen=True)
class Candidate:
    """A request of the user's that may become a task, redacted and clipped."""

    id: str
    request: str
    cwd: str
    reads: tuple[str, ...]
    tools: tuple[tuple[str, int], ...]
    answer: str
    signals: tuple[str, ...]  # "corrected", "tool-error", "retry", "interrupted"
    signal: str  # the signals in words
    seen: tuple[Seen, ...]
    rubric: str = ""
    rubric_note: str = ""  # why a rubric draft is missing

    @property
    def scorer(self) -> str:
        """The scorer the user will likely want: `contains` for a short one-line
        answer, `judge` (a rubric) otherwise."""
        short = self.answer and "\n" not in self.answer.strip() and len(self.answer) <= 80
        return "contains" if short else "judge"


@dataclass(frozen=True)
class Candidates:
    """The candidates of a harvest, with what redaction and merging did."""

    items: tuple[Candidate, ...]
    redactions: dict[str, int]  # by kind
    merged: int  # candidates merged into another as near-duplicates
    found: int  # requests found, before merging
    corrections: int = 0  # requests that corrected the one before: its signal, no task


def candidates(exchanges: Sequence[Exchange], threshold: float = THRESHOLD) -> Candidates:
    """The candidates of `exchanges`, redacted, near-duplicates merged."""
    counts: Counter[str] = Counter()
    # a turn that corrects the one before it ("no, that's wrong: …") is that
    # request's signal, not a task of its own: alone it refers to nothing
    corrections = {
        (e.file, e.next_request)
        for e in exchanges
        if e.next_request and CORRECTION.search(e.next_request[:2000])
    }
    tasks = [e for e in exchanges if (e.file, e.request) not in corrections]
    made = [_candidate(e, counts) for e in tasks]
    made = [c for c in made if c.request.strip()]
    # the earliest asking of a request stands for the rest
    made.sort(key=lambda c: (c.seen[0].at, c.id))
    merges: dict[int, Candidate] = {}
    dropped: set[int] = set()
    for group in groups([c.request for c in made], threshold):
        merges[group[0]] = _merge(made[group[0]], [made[i] for i in group[1:]])
        dropped.update(group[1:])
    kept = [merges.get(i, c) for i, c in enumerate(made) if i not in dropped]
    folded = len(exchanges) - len(tasks)
    return Candidates(
        tuple(kept), dict(sorted(counts.items())), len(dropped), len(made) + folded, folded
    )


def scrubbed(text: str, limit: int, counts: Counter[str]) -> str:
    """`text` redacted (counted in `counts`), made storable and clipped to `limit`:
    redaction runs on a little more than is kept, so a secret cut by the clip has
    been replaced whole."""
    window = clean(text[: limit + 512])[0]
    redacted, found = redact(window)
    counts.update(found)
    return clip(redacted, limit, "…").strip()


def candidate_id(request: str) -> str:
    """A stable id for a request: the same request harvested again gets the same id."""
    digest = hashlib.sha256(normalise(request).encode("utf-8", "replace")).hexdigest()
    return f"h-{digest[:10]}"


def _candidate(e: Exchange, counts: Counter[str]) -> Candidate:
    request = scrubbed(e.request, LIMITS["request"], counts)
    signals, words = [], []
    nxt = scrubbed(e.next_request, LIMITS["next"], counts) if e.next_request else ""
    if nxt and CORRECTION.search(e.next_request[:2000]):
        signals.append("corrected")
        words.append(f"the user then said: {clip(nxt, 160)!r}")
    if e.failures:
        signals.append("tool-error")
        first = scrubbed(e.errors[0], LIMITS["error"], counts) if e.errors else ""
        plural = "s" if e.failures != 1 else ""
        words.append(f"{e.failures} tool error{plural}" + (f": {first!r}" if first else ""))
    if e.retries:
        signals.append("retry")
        words.append(f"{e.retries} repeated tool call{'s' if e.retries != 1 else ''}")
    if e.interrupted:
        signals.append("interrupted")
        words.append("the user interrupted the turn")
    if not e.answer:
        words.append("no final answer")
    return Candidate(
        id=candidate_id(request),
        request=request,
        cwd=scrubbed(e.cwd, LIMITS["path"], counts),
        reads=tuple(scrubbed(r, LIMITS["path"], counts) for r in e.reads),
        tools=tuple((scrubbed(name, 80, counts), n) for name, n in e.tools),
        answer=scrubbed(e.answer, LIMITS["answer"], counts),
        signals=tuple(signals),
        signal="; ".join(words) or "went through: no correction, error or retry",
        seen=(
            Seen(
                e.agent,
                scrubbed(e.session, 80, counts),
                e.at,
                scrubbed(e.file, 1024, counts),
            ),
        ),
    )


def _merge(first: Candidate, rest: Sequence[Candidate]) -> Candidate:
    signals = tuple(dict.fromkeys(s for c in (first, *rest) for s in c.signals))
    times = len(rest) + 1
    more = [s for s in signals if s not in first.signals]
    also = f"; the others also: {', '.join(more)}" if more else ""
    return replace(
        first,
        signals=signals,
        signal=f"{first.signal} (asked {times} times{also})",
        seen=tuple(s for c in (first, *rest) for s in c.seen),
    )
