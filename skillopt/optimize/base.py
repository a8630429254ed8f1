"""The optimizer contract: what a training step asks (`ProposalRequest`, with the
run's `RunContext`), what comes back (`Proposal`, `TextResult`), and the `Optimizer`
Protocol with its optional capabilities (`SlowUpdater`, `NoteTaker`, `WholeBatch`,
`CallsModel`).

Any object with `name` and `propose` is an optimizer (`skillopt.train(...,
optimizer=obj)` or a plugin); the trainer asks for the optional capabilities with
`isinstance`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from skillopt._util.secrets import scrub, scrub_count
from skillopt.harness.base import Describes, ShowsTask
from skillopt.models.base import Usage
from skillopt.optimize.memory import Memory
from skillopt.rollouts.record import Rollout
from skillopt.skill.document import Skill
from skillopt.skill.edits import LINE_CHARS, MAX_EDIT_LINES, MAX_STEP_LINES, Edit
from skillopt.suite.task import Task


@dataclass(frozen=True)
class RunContext:
    """What an optimizer is told besides its minibatch and memory: the target (how a
    skill and a task reach it) and where the run stands. Scores and counts only:
    never a validation or test task."""

    target: str = ""  # the harness's `describe_target()`; "" when it cannot describe itself
    task_as_seen: Callable[[str], str] | None = None  # a task's prompt as the target reads it
    total_steps: int = 0  # the last step number the run plans; 0 when unknown
    epochs: int = 0
    val: float | None = None  # the incumbent's validation score

    @property
    def completion(self) -> bool:
        """Whether the target continues a completion prompt (a base model reading the
        skill, then the task behind an answer cue) rather than following a chat: it
        learns from worked examples right before its cue far more than from prose."""
        return self.task_as_seen is not None and self.task_as_seen("x") != "x"

    @classmethod
    def of(cls, harness: object, *, total_steps: int, epochs: int, val: float | None) -> RunContext:
        """The context of a run on `harness`, which describes its target when it can."""
        return cls(
            harness.describe_target() if isinstance(harness, Describes) else "",
            harness.task_as_seen if isinstance(harness, ShowsTask) else None,
            total_steps,
            epochs,
            val,
        )


NO_CONTEXT = RunContext()
STUCK = 2  # unproductive steps in a row on one skill after which a step changes strategy


@dataclass
class ProposalRequest:
    skill: Skill
    kind: str  # failures (the trainer's only kind) | successes (asked only by a caller)
    rollouts: list[Rollout]
    tasks: dict[str, Task]
    budget: int
    memory: Memory
    step: int = 0
    epoch: int = 0
    context: RunContext = NO_CONTEXT
    # what an edit, and all edits of the step, may add (non-blank lines of content);
    # the step drops a larger edit unapplied (`merge_edits`)
    max_edit_lines: int = MAX_EDIT_LINES
    max_step_lines: int = MAX_STEP_LINES
    # solved training tasks of the same batch, shown beside the failures as behaviour
    # the edits must not break (not to be fixed, and no call of their own)
    protect: list[Rollout] = field(default_factory=list)
    # what the step says to this call besides the rest: a repair ask says the edits
    # first proposed rebuilt a candidate the gate had already decided
    note: str = ""
    # steps in a row on this same skill that the gate rejected or that gave no
    # candidate: from `STUCK` on, an optimizer should change strategy (take out or
    # rewrite rather than add more of the same)
    stuck: int = 0

    @property
    def edit_limits(self) -> str:
        """The limits in words, for a prompt."""
        return (
            f"at most {self.max_edit_lines} non-blank lines of `content` per edit (and "
            f"{self.max_edit_lines * LINE_CHARS} characters) and "
            f"{self.max_step_lines} lines for all your edits together"
        )


@dataclass
class Proposal:
    edits: list[Edit] = field(default_factory=list)
    skipped: str | None = None  # why this minibatch produced nothing usable
    calls: int = 0  # provider requests made, failed ones included
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    raw: str = ""
    error_kind: str | None = None  # the failed call's kind (auth, quota, …), when one failed
    replaced: int = 0  # characters of the replies that could not be stored (U+FFFD now)
    secrets: int = 0  # known secret values blanked in its edits (`without_secrets`)

    def without_secrets(self, skill: Skill | None = None) -> Proposal:
        """This proposal with every known secret value blanked in its edits and raw
        reply, and `secrets` counting the values blanked in the edits (what the step
        reports: never the values themselves). Anchors are blanked too unless `skill`,
        the skill the edits apply to, holds a known secret itself (its author's key):
        there an anchor may quote it to edit that very line."""
        anchors = skill is None or scrub_count(skill.text)[1] == 0
        edits, removed = [], 0
        for edit in self.edits:
            clean, n = edit.without_secrets(anchor=anchors)
            edits.append(clean)
            removed += n
        return replace(self, edits=edits, raw=scrub(self.raw), secrets=self.secrets + removed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "edits": [e.to_dict() for e in self.edits],
            "skipped": self.skipped,
            "calls": self.calls,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "cost": self.cost,
            "raw": self.raw,
            "error_kind": self.error_kind,
            "replaced": self.replaced,
            **_cached(self.usage),
            # absent while none, as in the checkpoints of runs from before it existed
            **({"secrets": self.secrets} if self.secrets else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Proposal:
        return cls(
            [Edit.from_dict(e) for e in d["edits"]],
            d.get("skipped"),
            d.get("calls", 0),
            Usage(
                d.get("input_tokens", 0),
                d.get("output_tokens", 0),
                d.get("cached_input_tokens", 0),
            ),
            d.get("cost"),
            d.get("raw", ""),
            d.get("error_kind"),
            d.get("replaced", 0),
            d.get("secrets", 0),
        )


@dataclass
class TextResult:
    """A slow-update guidance or meta-notes reply."""

    text: str | None
    skipped: str | None = None
    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    error_kind: str | None = None
    replaced: int = 0
    secrets: int = 0  # known secret values blanked in its text (`without_secrets`)

    def without_secrets(self) -> TextResult:
        """This result with every known secret value blanked in its text, and
        `secrets` counting them (guidance becomes part of a skill; notes reach later
        prompts and the checkpoint)."""
        if self.text is None:
            return self
        text, removed = scrub_count(self.text)
        return replace(self, text=text, secrets=self.secrets + removed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "skipped": self.skipped,
            "calls": self.calls,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "cost": self.cost,
            "error_kind": self.error_kind,
            "replaced": self.replaced,
            **_cached(self.usage),
            **({"secrets": self.secrets} if self.secrets else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TextResult:
        return cls(
            d.get("text"),
            d.get("skipped"),
            d.get("calls", 0),
            Usage(
                d.get("input_tokens", 0),
                d.get("output_tokens", 0),
                d.get("cached_input_tokens", 0),
            ),
            d.get("cost"),
            d.get("error_kind"),
            d.get("replaced", 0),
            d.get("secrets", 0),
        )


@runtime_checkable
class Optimizer(Protocol):
    """Turns scored training rollouts into proposed edits.

    Contract: `propose` never raises for a bad reply or a failed call: it returns a
    `Proposal` whose `skipped` says why nothing usable came back (and `error_kind`
    the failed call's kind, so a hopeless one, a bad key, stops the run). It sees
    training rollouts only and never mutates the skill. The trainer blanks every known
    secret value in what it returns (`Proposal.without_secrets`) before any edit is
    applied, kept or shown."""

    name: str

    def propose(self, request: ProposalRequest) -> Proposal:
        """Edits for one minibatch; never raises for a bad reply or failed call."""
        ...


# Optional capabilities, checked with `isinstance`: an optimizer offers one by
# defining its method or attribute.


@runtime_checkable
class WholeBatch(Protocol):
    """An optimizer that asks for all of a step's failures in one `propose` call
    (`whole_batch = True`) rather than one call per `minibatch_size` of them: one with
    no model context to fill, like `exemplars`, chooses better seeing them all."""

    whole_batch: bool


@runtime_checkable
class CallsModel(Protocol):
    """An optimizer whose proposals are calls to `model` (a budget of optimizer calls
    counts them; an optimizer without a model spends none)."""

    model: object


@runtime_checkable
class SlowUpdater(Protocol):
    """An optimizer that writes longitudinal guidance at each epoch's end (the
    protected block of the skill)."""

    def slow_update(
        self,
        skill: Skill,
        previous: Skill,
        comparison: str,
        memory: Memory,
        context: RunContext = NO_CONTEXT,
    ) -> TextResult:
        """Guidance text (`TextResult.text`), or a result whose `skipped` says why
        there is none; never raises."""
        ...


@runtime_checkable
class NoteTaker(Protocol):
    """An optimizer that keeps notes across epochs (never shown to the agent)."""

    def meta_notes(self, epoch: int, history: str, context: RunContext = NO_CONTEXT) -> TextResult:
        """Notes carried into the next epoch's prompts; never raises."""
        ...


def _cached(usage: Usage) -> dict[str, int]:
    """`cached_input_tokens` when there are some: a record without prompt caching keeps
    the keys it always had."""
    return {"cached_input_tokens": usage.cached_input_tokens} if usage.cached_input_tokens else {}
