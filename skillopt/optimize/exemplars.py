"""The `exemplars` optimizer: no model calls; it teaches by worked examples.

From failed training rollouts it proposes edits that add examples (the task as
the agent saw it → the expected answer) to an `## Examples` section, two to an
edit (`per_edit`), so a step's edit budget of 4 lays down 8: a skill with no
examples gets a diverse seed at once. It picks for coverage: one example per
kind of input (its character shape) in turn, kinds the skill has no example of
first, and within a kind the failure most like the other failures that no example
resembles yet (`_coverage_gain`), so a step covers as many kinds of failure as it
has room for. Once the section is full (`max_examples`, 16) a new example swaps
out the most similar one, and near-duplicate examples are deleted. It sees a
step's failures in one request (`whole_batch`): with no model context to fill,
minibatches would only split the choice.

When nothing is left to add (every failure's example is in the skill, nearly
repeats one, or was rejected twice), or when the run is stuck (`STUCK` steps in a
row on the same skill rejected or without a candidate: adding has stopped paying),
it ablates: the candidate is the skill with
one example taken out — first one whose answer the model gave to a training task
it failed, else the one most like another — so the gate measures that example and
keeps the skill without it when that scores higher. It runs under the same
budget, gate, memory and audit as an LLM optimizer, and never proposes a skill
the gate has already rejected (the memory keeps each rejected candidate's hash).

What it gets against random few-shot on suites it was not tuned on is measured
by `benchmarks/quality_benchmark.py`.

Examples are written in the exact shape of the embedded model's completion cue
(`Input: …` / `Output: …`), so a base model continues the pattern.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection
from typing import Any

from skillopt.optimize.base import STUCK, Proposal, ProposalRequest
from skillopt.optimize.examples import (
    EXAMPLE_PATTERN,
    SECTION,
    Example,
    describe_shape,
    examples_in,
    shape,
    similarity,
)
from skillopt.optimize.memory import Memory
from skillopt.skill.document import text_key
from skillopt.skill.edits import Edit, apply_edits


class ExemplarOptimizer:
    """`max_examples` caps the section; `near` is the trigram similarity above which
    two inputs count as near-duplicates; `per_edit` examples share one `add` edit, so
    a step's edit budget adds up to budget × per_edit examples (the first step, on a
    skill with no examples yet, lays down a diverse seed that way)."""

    name = "exemplars"
    # no context to fill: a step's failures come in one request, so its picks cover
    # the whole batch rather than one minibatch each
    whole_batch = True

    def __init__(self, max_examples: int = 16, near: float = 0.8, per_edit: int = 2):
        self.max_examples = max_examples
        self.near = near
        self.per_edit = per_edit

    @classmethod
    def build(cls, settings: object, meter: object = None) -> ExemplarOptimizer:
        """The registry's factory: no settings, no model calls to meter."""
        return cls()

    def propose(self, request: ProposalRequest) -> Proposal:
        """Examples for the failures of `request`, never making a skill the gate has
        already rejected: when the first choice would rebuild one, its lowest-ranked
        example makes way for the next, until the candidate is new or nothing is left
        (then `skipped` says why)."""
        if request.kind != "failures" or request.budget <= 0:
            return Proposal()
        rejected = request.memory.rejected_skills()
        gated = request.memory.gated_keys()
        if request.stuck >= STUCK:  # adding has stopped paying: measure an example's worth
            ablation = self._ablation(request, rejected)
            if ablation is not None:
                return Proposal(edits=[ablation])
        held_back: set[str] = set()
        repeated: int | None = None  # the step whose rejected skill a choice would rebuild
        passed_over: dict[str, str] = {}  # input -> why it is not picked
        while True:
            passed_over.clear()
            picks = self._pick(request, held_back, passed_over)
            edits = self._edits(request, picks)
            if not edits:
                break
            made = apply_edits(request.skill, edits)[0]
            step = rejected.get(made.hash) if rejected else None
            if step is None and text_key(made.text) in gated:  # a subset the gate decided
                step = request.step
            if step is None:
                return Proposal(edits=edits)
            repeated = step
            if not picks:  # deletes alone rebuild it: nothing else to offer
                break
            held_back.add(picks[-1][0].input)
        ablation = self._ablation(request, rejected)
        if ablation is not None:
            return Proposal(edits=[ablation])
        if repeated is None:
            return Proposal(skipped=_nothing_to_add(passed_over))
        return Proposal(
            skipped=f"no new candidate: every choice of examples for these failures rebuilds "
            f"a skill the gate already rejected (step {repeated})"
        )

    def _ablation(self, request: ProposalRequest, rejected: dict[str, int]) -> Edit | None:
        """When no example is left to add: one example taken out, so the gate measures
        what it is worth (and keeps the skill without it if that is better). First an
        example whose answer the model gave to a training task it failed (it imitates
        that example where it should not), then the example most like another one;
        never an ablation the gate already rejected."""
        existing = examples_in(request.skill)
        wrong = Counter(  # the failures' answers
            (r.answer or "").strip() for r in request.rollouts if r.scored and not r.passed
        )
        if len(existing) < 2 or not wrong:
            return None
        texts = [e.text for e in existing]

        def likeness(i: int) -> float:
            return max(
                (similarity(existing[i].input, o.input) for j, o in enumerate(existing) if j != i),
                default=0.0,
            )

        order = sorted(
            range(len(existing)), key=lambda i: (-wrong[existing[i].output], -likeness(i))
        )
        for i in order:
            ex = existing[i]
            if texts.count(ex.text) > 1:
                continue  # an exact twin: its anchor would be ambiguous
            edit = Edit(
                "delete",
                anchor=ex.text,
                rationale=(
                    f"ablation: the model gave this example's answer to {wrong[ex.output]} "
                    "failed training task(s)"
                    if wrong[ex.output]
                    else "ablation: the skill without this example, the one most like another"
                ),
                source="exemplars",
            )
            if apply_edits(request.skill, [edit])[0].hash not in rejected:
                return edit
        return None

    def _pick(
        self,
        request: ProposalRequest,
        held_back: Collection[str] = (),
        passed_over: dict[str, str] | None = None,
    ) -> list[tuple[Example, str]]:
        """The failures' examples to add, best first, in `_round_robin` order, up to
        budget × `per_edit`.
        Inputs in `held_back` are not picked; `passed_over` receives why each input
        that could not be picked was not."""
        why = passed_over if passed_over is not None else {}
        existing = examples_in(request.skill)
        rejected = _rejected_inputs(request.memory)
        tried = {i for i, n in rejected.items() if n >= 2}  # rejected twice: not again
        candidates = []
        for r in request.rollouts:
            task = request.tasks[r.task_id]
            if task.expected is None:
                why.setdefault(task.prompt.strip(), "no_expected")
                continue
            answer = (
                json.dumps(task.expected, ensure_ascii=False)  # JSON, not a repr
                if isinstance(task.expected, (dict, list))
                else str(task.expected)
            )
            candidates.append((Example(task.prompt.strip(), answer.strip()), r))
        limit = request.budget * self.per_edit
        picks: list[tuple[Example, str]] = []
        lines = 0  # what the picks add; an example over the limits would be dropped unapplied
        covered = {shape(e.input) for e in existing}
        gain = _coverage_gain([c[0].input for c in candidates], [e.input for e in existing])
        for ex, r in _round_robin(candidates, covered, rejected, gain):
            if ex.input in tried:
                why.setdefault(ex.input, "rejected")
                continue
            if ex.input in held_back:
                why.setdefault(ex.input, "rebuilds")
                continue
            if any(ex.input == e.input for e in existing):
                why.setdefault(ex.input, "present")
                continue
            if any(similarity(ex.input, e.input) >= self.near for e in existing):
                why.setdefault(ex.input, "near")
                continue
            if any(similarity(ex.input, p.input) >= self.near for p, _ in picks):
                continue
            size = Edit("add", content=ex.text).lines
            if size > request.max_edit_lines or lines + size > request.max_step_lines:
                why.setdefault(ex.input, "too_long")
                continue
            lines += size
            picks.append((ex, r.task_id))
            if len(picks) >= limit:
                break
        return picks

    def _edits(self, request: ProposalRequest, picks: list[tuple[Example, str]]) -> list[Edit]:
        """The picks placed (added, or swapped in when the section is full), then
        near-duplicate deletes with the budget left over."""
        existing = examples_in(request.skill)
        edits = self._place(existing, picks, request)
        room = request.budget - len(edits)
        if room > 0:
            touched = {e.anchor for e in edits if e.anchor}
            edits += self._dedupe(existing, room, touched)
        return edits

    def _place(
        self, existing: list[Example], picks: list[tuple[Example, str]], request: ProposalRequest
    ) -> list[Edit]:
        """Adds while the section has room, `per_edit` examples (within the edit's line
        limit) to an edit; then a swap per pick for the most similar example; at most
        `request.budget` edits in all."""
        free = max(0, self.max_examples - len(existing))
        adding, swapping = picks[:free], picks[free:]
        groups: list[list[tuple[Example, str]]] = []
        for ex, task_id in adding:
            last = groups[-1] if groups else None
            size = (
                sum(Edit("add", content=e.text).lines for e, _ in last or [])
                + Edit("add", content=ex.text).lines
            )
            if last and len(last) < self.per_edit and size <= request.max_edit_lines:
                last.append((ex, task_id))
            else:
                groups.append([(ex, task_id)])
        edits = [
            Edit(
                "add",
                section=SECTION,
                content="\n\n".join(e.text for e, _ in group),
                rationale=(
                    "worked examples for failed cases"
                    if len(group) > 1
                    else "worked example for a failed case"
                )
                + " (input: "
                + "; ".join(describe_shape(shape(e.input)) for e, _ in group)
                + ")",
                evidence=tuple(t for _, t in group),
                source="exemplars",
            )
            for group in groups
        ]
        replaceable = list(existing)
        for ex, task_id in swapping:
            if not replaceable:
                break
            target = max(replaceable, key=lambda e: similarity(e.input, ex.input))
            replaceable.remove(target)
            edits.append(
                Edit(
                    "replace",
                    anchor=target.text,
                    content=ex.text,
                    rationale="the section is full: swap the most similar example "
                    "for a failed case",
                    evidence=(task_id,),
                    source="exemplars",
                )
            )
        return edits[: request.budget]

    def _dedupe(self, existing: list[Example], room: int, touched: set[str]) -> list[Edit]:
        """Delete examples that nearly repeat an earlier one (not one this proposal
        already replaces, and not an exact twin, whose text would be ambiguous)."""
        edits: list[Edit] = []
        texts = [e.text for e in existing]
        for i, ex in enumerate(existing):
            if len(edits) >= room:
                break
            if ex.text in touched or texts.count(ex.text) > 1:
                continue
            if any(similarity(ex.input, other.input) >= self.near for other in existing[:i]):
                edits.append(
                    Edit(
                        "delete",
                        anchor=ex.text,
                        rationale="near-duplicate example",
                        source="exemplars",
                    )
                )
        return edits


def _coverage_gain(failing: list[str], existing: list[str]) -> dict[str, float]:
    """For each failing input, how much it would add to the skill's coverage of the
    failures: the sum, over the failing inputs, of how much more similar it is to
    each than the closest example already in the skill. An input like many failures
    that no example resembles yet scores highest (the typical case of a failure
    kind the skill does not cover); an outlier, or one an example already covers,
    scores low."""
    cover = {f: max((similarity(f, e) for e in existing), default=0.0) for f in failing}
    return {
        c: sum(max(0.0, similarity(c, f) - cover[f]) for f in failing if f != c) for c in failing
    }


def _round_robin(
    candidates: list[tuple[Example, Any]],
    covered: set[str],
    rejected: dict[str, int],
    gain: dict[str, float],
) -> list[tuple[Example, Any]]:
    """The candidates in the order to pick them: one per input shape in turn (shapes
    the skill has no example of first, then the shape whose best candidate has the
    larger coverage `gain`), so a step's picks cover as many kinds of input as it has
    room for; within a shape, never-rejected first, then by `gain`, then batch order
    (a seeded shuffle)."""
    by_shape: dict[str, list[tuple[Example, Any]]] = {}
    for c in sorted(candidates, key=lambda c: (c[0].input in rejected, -gain[c[0].input])):
        by_shape.setdefault(shape(c[0].input), []).append(c)
    queues = sorted(
        by_shape.values(),
        key=lambda q: (shape(q[0][0].input) in covered, -gain[q[0][0].input]),
    )
    out: list[tuple[Example, Any]] = []
    while queues:
        out += [q.pop(0) for q in queues]
        queues = [q for q in queues if q]
    return out


# why a failure's example is not proposed, for one failure and for several
_PASSED_OVER = {
    "no_expected": ("has no expected answer", "have no expected answer"),
    "rejected": ("was rejected twice by the gate", "were rejected twice by the gate"),
    "rebuilds": ("would rebuild a rejected skill", "would rebuild a rejected skill"),
    "present": ("is already an example in the skill", "are already examples in the skill"),
    "near": ("nearly repeats an example in the skill", "nearly repeat examples in the skill"),
    "too_long": ("is longer than the edit limits allow", "are longer than the edit limits allow"),
}


def _nothing_to_add(passed_over: dict[str, str]) -> str | None:
    """Why no example was proposed when every failure was passed over, in words
    ('no example to add for these failures: 2 were rejected twice by the gate'); None
    when there was no failure."""
    if not passed_over:
        return None
    counts = Counter(passed_over.values())
    return "no example to add for these failures: " + "; ".join(
        f"{n} {_PASSED_OVER[code][n != 1]}" for code, n in counts.most_common()
    )


def _rejected_inputs(memory: Memory) -> dict[str, int]:
    """How often the gate rejected a candidate holding each example input. A
    rejection blames the whole candidate, not one example, so an example waits
    behind fresh ones after one rejection and is dropped after two."""
    out: dict[str, int] = {}
    for r in memory.rejected:
        for m in EXAMPLE_PATTERN.finditer(r["edit"].get("content") or ""):
            key = m.group("input").strip()
            out[key] = out.get(key, 0) + 1
    return out
