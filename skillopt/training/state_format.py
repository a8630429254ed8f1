"""How every version of `state.json` is read: the migrations of older versions and
the reader of the current one.

Invariants:
- `MIGRATIONS[i]` turns version i + 1 into version i + 2 (one named function per
  version, append only); data of any older version is migrated in memory and read
  as the current one.
- Reading checks every field: the first missing, unknown or mistyped one is one
  `InputError` naming the file and the field; nothing is guessed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

from skillopt.errors import InputError
from skillopt.optimize.memory import Memory
from skillopt.training.checkpoint import (
    ADDED_IN_V2,
    Accounting,
    BudgetStop,
    EarlyStop,
    Pending,
    Revision,
    SkippedNote,
    SplitScore,
)
from skillopt.training.records import is_int, is_num, kind_of, read
from skillopt.training.steps import StepRecord, read_step

STATE_VERSION = 2
# stopped: a budget stopped the run (`stop` says which and where); resuming continues it
STATUSES = ("new", "running", "stopped", "finished")


# ---------------------------------------------------------------------- migrations
def m001_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
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
MIGRATIONS: list[Callable[[dict[str, Any]], dict[str, Any]]] = [m001_v1_to_v2]


def current(data: object, path: object) -> dict[str, Any]:
    """Checkpoint data of any known version, migrated to the current one."""
    if not isinstance(data, dict):
        raise Reader(path).error("", f"expected a JSON object, got {kind_of(data)}")
    version = data.get("version")
    if not is_int(version) or version < 1:
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
    return data


# ---------------------------------------------------------------------- reading
_TYPES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "int": ("a whole number", is_int),
    "num": ("a number", is_num),
    "num?": ("a number or null", lambda v: v is None or is_num(v)),
    "bool": ("true or false", lambda v: isinstance(v, bool)),
    "str": ("a string", lambda v: isinstance(v, str)),
    "list": ("a list", lambda v: isinstance(v, list)),
    "dict": ("an object", lambda v: isinstance(v, dict)),
    "dict?": ("an object or null", lambda v: v is None or isinstance(v, dict)),
}


class Reader:
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

    def get(self, data: dict[str, Any], key: str, kind: str, where: str = "") -> Any:
        name = f"{where}.{key}" if where else key
        if key not in data:
            raise self.error(name, "missing")
        what, ok = _TYPES[kind]
        value = data[key]
        if not ok(value):
            raise self.error(name, f"expected {what}, got {kind_of(value)}")
        return value

    def only(self, data: dict[str, Any], keys: set[str], where: str = "") -> None:
        for key in data:
            if key not in keys:
                raise self.error(f"{where}.{key}" if where else key, "unknown field")

    def obj(self, data: dict[str, Any], key: str, where: str = "") -> dict[str, Any]:
        value: dict[str, Any] = self.get(data, key, "dict", where)
        return value

    def revision(self, data: dict[str, Any], key: str) -> Revision:
        return read(Revision, self.obj(data, key), key, self.error)

    def status(self, data: dict[str, Any]) -> Any:
        status = self.get(data, "status", "str")
        if status not in STATUSES:
            raise self.error("status", f"expected one of {', '.join(STATUSES)}, got {status!r}")
        return status

    def support(self, data: dict[str, Any]) -> tuple[tuple[str, str], ...]:
        out = []
        for i, pair in enumerate(self.get(data, "support", "list")):
            if not (
                isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)
            ):
                raise self.error(f"support[{i}]", "expected a [path, digest] pair")
            out.append((pair[0], pair[1]))
        return tuple(out)

    def steps(self, data: dict[str, Any]) -> list[StepRecord]:
        steps = self.get(data, "steps", "list")
        return [read_step(rec, f"steps[{i}]", self.error) for i, rec in enumerate(steps)]

    def pending(self, data: dict[str, Any]) -> Pending | None:
        p = self.get(data, "pending", "dict?")
        if p is None:
            return None
        self.only(p, {"step", "proposals", "slow_update", "repair"}, "pending")
        proposals = p.get("proposals")
        if proposals is not None and not (
            isinstance(proposals, list) and all(isinstance(x, dict) for x in proposals)
        ):
            raise self.error("pending.proposals", "expected a list of objects")
        slow = p.get("slow_update")
        if slow is not None and not isinstance(slow, dict):
            raise self.error("pending.slow_update", f"expected an object, got {kind_of(slow)}")
        repair = p.get("repair")
        if repair is not None and not isinstance(repair, dict):
            raise self.error("pending.repair", f"expected an object, got {kind_of(repair)}")
        return Pending(self.get(p, "step", "int", "pending"), proposals, slow, repair)

    def memory(self, data: dict[str, Any]) -> Memory:
        m = self.obj(data, "memory")
        # `gated` was added within version 2: absent in earlier checkpoints (none known)
        self.only(m, {"rejected", "not_applied", "meta_notes", "accepted", "gated"}, "memory")
        for key in m:
            self.get(m, key, "list", "memory")
        return Memory.from_dict(m)

    def accounting(self, data: dict[str, Any]) -> Accounting:
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
                if f.name in a or f.name not in ADDED_IN_V2  # those read as 0 when absent
            }
        )

    def skipped_notes(self, data: dict[str, Any]) -> list[SkippedNote]:
        notes = self.get(data, "skipped_notes", "list")
        return [
            read(SkippedNote, n, f"skipped_notes[{i}]", self.error) for i, n in enumerate(notes)
        ]

    def notes_owed(self, data: dict[str, Any]) -> list[int]:
        """Added within version 2: absent in its earlier checkpoints, read as none owed
        (their notes were taken at each epoch end)."""
        owed = data.get("notes_owed", [])
        if not isinstance(owed, list) or not all(is_int(e) and e >= 1 for e in owed):
            raise self.error("notes_owed", f"expected a list of epoch numbers, got {owed!r}")
        return list(owed)

    def stopped_early(self, data: dict[str, Any]) -> EarlyStop | None:
        """Added within version 2: absent in its earlier checkpoints, read as None."""
        stop = data.get("stopped_early")
        if stop is None:
            return None
        if not isinstance(stop, dict):
            raise self.error("stopped_early", f"expected an object or null, got {kind_of(stop)}")
        return read(EarlyStop, stop, "stopped_early", self.error)

    def stop(self, data: dict[str, Any]) -> BudgetStop | None:
        """Added within version 2: why a budget stopped the run, read as None when absent."""
        stop = self.get(data, "stop", "dict?") if "stop" in data else None
        return None if stop is None else read(BudgetStop, stop, "stop", self.error)

    def test(self, data: dict[str, Any]) -> dict[str, SplitScore]:
        out = {}
        for name, score in self.obj(data, "test").items():
            where = f"test.{name}"
            if not isinstance(score, dict):
                raise self.error(where, f"expected an object, got {kind_of(score)}")
            passed = score.get("passed")
            if passed is not None and not (
                isinstance(passed, dict) and all(isinstance(v, bool) for v in passed.values())
            ):
                raise self.error(f"{where}.passed", "expected an object of task id: true/false")
            wall_s = score.get("wall_s")
            if wall_s is not None and not is_num(wall_s):
                raise self.error(f"{where}.wall_s", f"expected a number, got {kind_of(wall_s)}")
            out[name] = SplitScore(
                self.get(score, "mean", "num?", where),
                self.get(score, "n", "int", where),
                self.get(score, "pass_rate", "num?", where),
                passed,
                wall_s,
            )
        return out
