"""The training checkpoint as typed values: what `state.json` holds, and how every
version of it is read back.

Invariants:
- `TrainState.to_dict()` is the checkpoint in the current format (`STATE_VERSION`);
  `from_dict` reads it and every older version, which is migrated in memory (one
  named function per version, in `MIGRATIONS`) and written in the current format
  at the next save.
- A checkpoint this code cannot read (a newer or unknown version, a missing or
  mistyped field) is one `InputError` naming the file and the field; nothing is
  guessed and nothing is resumed from it.
- A field added within a version (`stopped_early`, `notes_owed`, `stop`, the
  accounting's `optimizer_served` and `*_cached_tokens`) is written only when it is set
  and read as its default when absent: checkpoints of that version written before
  it existed still load, and an older skillopt of the same version still reads
  every checkpoint the field does not concern. A version is bumped only for a
  change a default cannot bridge.
- Step records stay JSON objects (`StepRecord`): they are the run's evidence log,
  appended once per step with a shape per kind of step, and read by the report and
  the optimizer's epoch notes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from skillopt.errors import InputError
from skillopt.optimize.memory import Memory

if TYPE_CHECKING:
    from skillopt.rollouts.spend import Spend
    from skillopt.runs.rundir import RunDir
    from skillopt.skill.document import Skill

STATE_VERSION = 2
# stopped: a budget stopped the run (`stop` says which and where); resuming continues it
STATUSES = ("new", "running", "stopped", "finished")
Status = Literal["new", "running", "stopped", "finished"]


class _StepHead(TypedDict):
    step: int
    kind: str  # initial | step | slow_update
    epoch: int
    decision: str  # initial | accepted | rejected | no_candidate | skipped (slow update)


class StepRecord(_StepHead, total=False):
    """One recorded step (the initial skill, a step or a slow update) and its
    evidence; which keys a record has depends on its kind and decision."""

    reason: str
    val: float  # the initial skill's
    n: int  # the initial skill's
    commit: str
    skill_hash: str
    wall_s: float  # seconds the step took (in the process that recorded it)
    budget: int
    train_mean: float | None
    failures: int
    failing: list[str]  # the failing training tasks' ids, sorted (for the stall rule)
    incumbent_hash: str  # the skill the step started from
    successes: int
    unscored: int
    proposals: list[dict]  # Proposal.to_dict() each
    dropped: list[dict]  # {edit, reason}
    apply: list[dict]  # EditResult.to_dict() each
    gate: dict  # Decision.to_dict()
    guidance: str | None  # slow update
    skipped: str | None  # slow update
    calls: int  # slow update


@dataclass(frozen=True)
class Revision:
    """A revision of the skill the run keeps track of: its text, content hash and
    mean validation score (None until scored)."""

    text: str
    hash: str
    val: float | None = None

    @classmethod
    def of(cls, skill: Skill) -> Revision:
        return cls(skill.text, skill.hash)

    def to_dict(self) -> dict:
        return {"text": self.text, "hash": self.hash, "val": self.val}


@dataclass(frozen=True)
class Pending:
    """Optimizer replies of the step in progress, paid for and checkpointed before the
    step is recorded, so a restart reuses them instead of asking again: the
    reflection proposals of a step, or the guidance of a slow update."""

    step: int
    proposals: list[dict] | None = None  # Proposal.to_dict() each
    slow_update: dict | None = None  # TextResult.to_dict()

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"step": self.step}
        if self.proposals is not None:
            out["proposals"] = self.proposals
        if self.slow_update is not None:
            out["slow_update"] = self.slow_update
        return out


@dataclass(frozen=True)
class SkippedNote:
    """Epoch-end notes the optimizer could not give, and why."""

    epoch: int
    reason: str


@dataclass(frozen=True)
class EarlyStop:
    """The run stopped before its last epoch: after which step, in which epoch, why."""

    step: int
    epoch: int
    reason: str


@dataclass(frozen=True)
class SplitScore:
    """One skill's result on the test split: its mean, tasks scored and pass rate;
    whether each scored task passed (`passed`, in task order: the report compares
    skills task by task) and the seconds scoring took (`wall_s`). The last two were
    added within version 2: None in checkpoints written before them, and written
    only when set."""

    mean: float | None
    n: int
    pass_rate: float | None
    passed: dict[str, bool] | None = None
    wall_s: float | None = None

    def totals(self) -> dict[str, Any]:
        """Mean, tasks scored and pass rate (what the summary and events show)."""
        return {"mean": self.mean, "n": self.n, "pass_rate": self.pass_rate}

    def to_dict(self) -> dict:
        out = self.totals()
        if self.passed is not None:
            out["passed"] = dict(self.passed)
        if self.wall_s is not None:
            out["wall_s"] = self.wall_s
        return out


@dataclass(frozen=True)
class Accounting:
    """What the run has spent, from the store's ledger totals and the step records."""

    optimizer_calls: int = 0
    optimizer_input_tokens: int = 0
    optimizer_output_tokens: int = 0
    optimizer_cost: float | None = None
    optimizer_served: int = 0  # replies served from the store (no call paid)
    skipped_minibatches: int = 0
    target_rollouts: int = 0
    cached_rollouts: int = 0
    unscored_rollouts: int = 0
    target_calls: int = 0
    target_input_tokens: int = 0
    target_output_tokens: int = 0
    target_cost: float | None = None
    # added within version 2 (written only when nonzero): input tokens read from the
    # provider's prompt cache, part of the `*_input_tokens` above
    target_cached_tokens: int = 0
    optimizer_cached_tokens: int = 0

    @classmethod
    def from_ledger(cls, spend: Spend, steps: list[StepRecord]) -> Accounting:
        target, opt = spend.target, spend.optimizer
        skipped = sum(1 for rec in steps for p in rec.get("proposals") or [] if p.get("skipped"))
        return cls(
            optimizer_calls=opt.calls,
            optimizer_input_tokens=opt.input_tokens,
            optimizer_output_tokens=opt.output_tokens,
            optimizer_cost=opt.cost,
            optimizer_served=opt.cached,
            skipped_minibatches=skipped,
            target_rollouts=target.rollouts,
            cached_rollouts=target.cached,
            unscored_rollouts=target.unscored,
            target_calls=target.calls,
            target_input_tokens=target.input_tokens,
            target_output_tokens=target.output_tokens,
            target_cost=target.cost,
            target_cached_tokens=target.cached_input_tokens,
            optimizer_cached_tokens=opt.cached_input_tokens,
        )

    def to_dict(self) -> dict:
        """Every field, except the ones added within version 2 while they are 0: a
        run without prompt caching writes the accounting an older skillopt reads."""
        return {k: v for k, v in asdict(self).items() if v or k not in _ADDED_IN_V2}


_ADDED_IN_V2 = frozenset({"target_cached_tokens", "optimizer_cached_tokens", "optimizer_served"})


@dataclass
class TrainState:
    """Everything a run needs to continue where it stopped. The trainer changes it
    in place and saves it after every step (`save`); `--resume` loads it (`load`)."""

    status: Status
    epoch: int  # the epoch in progress, from 0 (== epochs once training is done)
    k: int  # the next batch of that epoch
    step: int  # the last recorded step number (0: the initial skill)
    slow_done: bool  # this epoch's slow update is recorded
    # this epoch's optimizer notes were taken at its end: only checkpoints written
    # before notes were taken lazily set it; it keeps them from being owed again
    notes_done: bool
    incumbent: Revision  # the best skill so far: only the gate replaces it
    initial: Revision
    epoch_start: Revision  # the incumbent when this epoch began (for the slow update)
    support: tuple[tuple[str, str], ...]  # the skill's supporting files (path, digest)
    steps: list[StepRecord]
    pending: Pending | None
    memory: Memory
    accounting: Accounting
    started_at: float
    skipped_notes: list[SkippedNote] = field(default_factory=list)
    test: dict[str, SplitScore] = field(default_factory=dict)  # no_skill, initial, best
    stopped_early: EarlyStop | None = None  # set when a stall ended training early
    # finished epochs (1-based) whose notes a later optimizer call would read and that
    # no call has read yet: they are asked for just before the next call, then dropped
    notes_owed: list[int] = field(default_factory=list)
    # why a budget stopped the run (status "stopped"): {reason, budget, where, detail, step}
    stop: dict | None = None

    @classmethod
    def new(cls, skill: Skill) -> TrainState:
        """The state of a run that has not started: the skill is all three revisions."""
        rev = Revision.of(skill)
        return cls(
            status="new",
            epoch=0,
            k=0,
            step=0,
            slow_done=False,
            notes_done=False,
            incumbent=rev,
            initial=rev,
            epoch_start=rev,
            support=skill.support,
            steps=[],
            pending=None,
            memory=Memory(),
            accounting=Accounting(),
            started_at=time.time(),
        )

    # -- files -------------------------------------------------------------------------
    @classmethod
    def load(cls, run: RunDir) -> TrainState | None:
        """The run's checkpoint, or None if it has none yet."""
        data = run.load_state()
        return None if data is None else cls.from_dict(data, path=run.state_path)

    def save(self, run: RunDir) -> None:
        run.save_state(self.to_dict())

    # -- the format --------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The checkpoint as JSON data, in the current format. Step records and memory
        are shared, not copied: serialise the result before changing the state."""
        data = {
            "version": STATE_VERSION,
            "status": self.status,
            "epoch": self.epoch,
            "k": self.k,
            "step": self.step,
            "slow_done": self.slow_done,
            "notes_done": self.notes_done,
            "incumbent": self.incumbent.to_dict(),
            "initial": self.initial.to_dict(),
            "epoch_start": self.epoch_start.to_dict(),
            "support": [list(x) for x in self.support],
            "steps": self.steps,
            "pending": None if self.pending is None else self.pending.to_dict(),
            "memory": self.memory.to_dict(),
            "accounting": self.accounting.to_dict(),
            "started_at": self.started_at,
            "skipped_notes": [asdict(n) for n in self.skipped_notes],
            "test": {name: score.to_dict() for name, score in self.test.items()},
        }
        if self.stopped_early is not None:  # added within version 2: only when set
            data["stopped_early"] = asdict(self.stopped_early)
        if self.notes_owed:  # added within version 2: only when set
            data["notes_owed"] = list(self.notes_owed)
        if self.stop is not None:  # added within version 2: only when set
            data["stop"] = dict(self.stop)
        return data

    @classmethod
    def from_dict(cls, data: Any, *, path: object = None) -> TrainState:
        """A state from checkpoint data of any known version. `path` is the file it
        came from, named in the error when the data cannot be read."""
        r = _Reader(path)
        if not isinstance(data, dict):
            raise r.error("", f"expected a JSON object, got {_kind(data)}")
        version = data.get("version")
        if not _is_int(version) or version < 1:
            raise InputError(
                f"unknown checkpoint version {version!r} (this skillopt reads versions 1 "
                f"to {STATE_VERSION}); the run cannot be resumed (start a new run)",
                path=path,
                field="version",
            )
        if version > STATE_VERSION:
            raise InputError(
                f"checkpoint version {version} was written by a newer skillopt (this one "
                f"reads versions 1 to {STATE_VERSION}); upgrade skillopt to resume the run",
                path=path,
                field="version",
            )
        for migrate in MIGRATIONS[version - 1 :]:
            data = migrate(data)
        return r.state(data)


# ---------------------------------------------------------------------- migrations
def m001_v1_to_v2(data: dict) -> dict:
    """Version 1 wrote `skipped_notes` and `test` only once they had content, and its
    accounting had other keys before the spend ledger (it is recomputed from the
    ledger at the next save); version 2 always writes every field."""
    out = dict(data)
    out.setdefault("skipped_notes", [])
    out.setdefault("test", {})
    acct = out.get("accounting")
    if isinstance(acct, dict):
        out["accounting"] = {k: acct.get(k, v) for k, v in Accounting().to_dict().items()}
    out["version"] = 2
    return out


# MIGRATIONS[i] turns version i + 1 into version i + 2; append only
MIGRATIONS: list[Callable[[dict], dict]] = [m001_v1_to_v2]


# ---------------------------------------------------------------------- reading
def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_TYPES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "int": ("a whole number", _is_int),
    "num": ("a number", _is_num),
    "num?": ("a number or null", lambda v: v is None or _is_num(v)),
    "bool": ("true or false", lambda v: isinstance(v, bool)),
    "str": ("a string", lambda v: isinstance(v, str)),
    "list": ("a list", lambda v: isinstance(v, list)),
    "dict": ("an object", lambda v: isinstance(v, dict)),
    "dict?": ("an object or null", lambda v: v is None or isinstance(v, dict)),
}


class _Reader:
    """Reads checkpoint data of the current version into typed values; the first
    missing, unknown or mistyped field is an `InputError` naming the file and it."""

    def __init__(self, path: object):
        self.path = path

    def error(self, where: str, message: str) -> InputError:
        return InputError(
            f"malformed checkpoint: {message}; the run cannot be resumed (start a new run)",
            path=self.path,
            field=where or None,
        )

    def get(self, data: dict, key: str, kind: str, where: str = "") -> Any:
        name = f"{where}.{key}" if where else key
        if key not in data:
            raise self.error(name, "missing")
        what, ok = _TYPES[kind]
        value = data[key]
        if not ok(value):
            raise self.error(name, f"expected {what}, got {_kind(value)}")
        return value

    def only(self, data: dict, keys: set[str], where: str = "") -> None:
        for key in data:
            if key not in keys:
                raise self.error(f"{where}.{key}" if where else key, "unknown field")

    def obj(self, data: dict, key: str, where: str = "") -> dict:
        return self.get(data, key, "dict", where)

    def revision(self, data: dict, key: str) -> Revision:
        rev = self.obj(data, key)
        self.only(rev, {"text", "hash", "val"}, key)
        return Revision(
            self.get(rev, "text", "str", key),
            self.get(rev, "hash", "str", key),
            self.get(rev, "val", "num?", key),
        )

    def state(self, data: dict) -> TrainState:
        names = {f.name for f in fields(TrainState)} | {"version"}
        self.only(data, names)
        status = self.get(data, "status", "str")
        if status not in STATUSES:
            raise self.error("status", f"expected one of {', '.join(STATUSES)}, got {status!r}")
        return TrainState(
            status=status,
            epoch=self.get(data, "epoch", "int"),
            k=self.get(data, "k", "int"),
            step=self.get(data, "step", "int"),
            slow_done=self.get(data, "slow_done", "bool"),
            notes_done=self.get(data, "notes_done", "bool"),
            incumbent=self.revision(data, "incumbent"),
            initial=self.revision(data, "initial"),
            epoch_start=self.revision(data, "epoch_start"),
            support=self.support(data),
            steps=self.steps(data),
            pending=self.pending(data),
            memory=self.memory(data),
            accounting=self.accounting(data),
            started_at=self.get(data, "started_at", "num"),
            skipped_notes=self.skipped_notes(data),
            test=self.test(data),
            stopped_early=self.stopped_early(data),
            notes_owed=self.notes_owed(data),
            stop=self.get(data, "stop", "dict?") if "stop" in data else None,
        )

    def support(self, data: dict) -> tuple[tuple[str, str], ...]:
        out = []
        for i, pair in enumerate(self.get(data, "support", "list")):
            if not (
                isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)
            ):
                raise self.error(f"support[{i}]", "expected a [path, digest] pair")
            out.append((pair[0], pair[1]))
        return tuple(out)

    def steps(self, data: dict) -> list[StepRecord]:
        steps = self.get(data, "steps", "list")
        for i, rec in enumerate(steps):
            where = f"steps[{i}]"
            if not isinstance(rec, dict):
                raise self.error(where, f"expected an object, got {_kind(rec)}")
            self.get(rec, "step", "int", where)
            self.get(rec, "kind", "str", where)
            self.get(rec, "decision", "str", where)
        return list(steps)

    def pending(self, data: dict) -> Pending | None:
        p = self.get(data, "pending", "dict?")
        if p is None:
            return None
        self.only(p, {"step", "proposals", "slow_update"}, "pending")
        proposals = p.get("proposals")
        if proposals is not None and not (
            isinstance(proposals, list) and all(isinstance(x, dict) for x in proposals)
        ):
            raise self.error("pending.proposals", "expected a list of objects")
        slow = p.get("slow_update")
        if slow is not None and not isinstance(slow, dict):
            raise self.error("pending.slow_update", f"expected an object, got {_kind(slow)}")
        return Pending(self.get(p, "step", "int", "pending"), proposals, slow)

    def memory(self, data: dict) -> Memory:
        m = self.obj(data, "memory")
        self.only(m, {"rejected", "not_applied", "meta_notes", "accepted"}, "memory")
        for key in m:
            self.get(m, key, "list", "memory")
        return Memory.from_dict(m)

    def accounting(self, data: dict) -> Accounting:
        a = self.obj(data, "accounting")
        self.only(a, {f.name for f in fields(Accounting)}, "accounting")
        # a counter added within version 2 (`optimizer_served`) reads as its default
        # when absent: the accounting is recomputed from the ledger at the next save
        return Accounting(
            **{
                f.name: self.get(
                    a, f.name, "num?" if f.name.endswith("_cost") else "int", "accounting"
                )
                for f in fields(Accounting)
                if f.name in a or f.name not in _ADDED_IN_V2  # those read as 0 when absent
            }
        )

    def skipped_notes(self, data: dict) -> list[SkippedNote]:
        out = []
        for i, note in enumerate(self.get(data, "skipped_notes", "list")):
            where = f"skipped_notes[{i}]"
            if not isinstance(note, dict):
                raise self.error(where, f"expected an object, got {_kind(note)}")
            out.append(
                SkippedNote(
                    self.get(note, "epoch", "int", where), self.get(note, "reason", "str", where)
                )
            )
        return out

    def notes_owed(self, data: dict) -> list[int]:
        """Added within version 2: absent in its earlier checkpoints, read as none owed
        (their notes were taken at each epoch end)."""
        owed = data.get("notes_owed", [])
        if not isinstance(owed, list) or not all(_is_int(e) and e >= 1 for e in owed):
            raise self.error("notes_owed", f"expected a list of epoch numbers, got {owed!r}")
        return list(owed)

    def stopped_early(self, data: dict) -> EarlyStop | None:
        """Added within version 2: absent in its earlier checkpoints, read as None."""
        stop = data.get("stopped_early")
        if stop is None:
            return None
        where = "stopped_early"
        if not isinstance(stop, dict):
            raise self.error(where, f"expected an object or null, got {_kind(stop)}")
        self.only(stop, {"step", "epoch", "reason"}, where)
        return EarlyStop(
            self.get(stop, "step", "int", where),
            self.get(stop, "epoch", "int", where),
            self.get(stop, "reason", "str", where),
        )

    def test(self, data: dict) -> dict[str, SplitScore]:
        out = {}
        for name, score in self.obj(data, "test").items():
            where = f"test.{name}"
            if not isinstance(score, dict):
                raise self.error(where, f"expected an object, got {_kind(score)}")
            passed = score.get("passed")
            if passed is not None and not (
                isinstance(passed, dict) and all(isinstance(v, bool) for v in passed.values())
            ):
                raise self.error(f"{where}.passed", "expected an object of task id: true/false")
            wall_s = score.get("wall_s")
            if wall_s is not None and not _is_num(wall_s):
                raise self.error(f"{where}.wall_s", f"expected a number, got {_kind(wall_s)}")
            out[name] = SplitScore(
                self.get(score, "mean", "num?", where),
                self.get(score, "n", "int", where),
                self.get(score, "pass_rate", "num?", where),
                passed,
                wall_s,
            )
        return out
