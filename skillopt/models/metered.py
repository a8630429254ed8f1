"""A model wrapper that reports every call, answered or failed, as it happens.

Invariant: the report is made before `complete` returns or raises, so a ledger fed
by it (the rollout store's `spend` table) holds every paid call even when the
process is killed right after: a run's accounting is never lost with a checkpoint.
A meter that `Reserves` is told of each call *before* it is sent as well, so a call
in flight when the process is killed is counted too (the provider may bill it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from skillopt.errors import ModelError
from skillopt.models.base import (
    Completion,
    HasContextWindow,
    JsonMode,
    Model,
    Prompt,
    SelfChecking,
    Usage,
)

# (provider requests made, usage, cost in USD or None when unknown)
Meter = Callable[[int, Usage, "float | None"], None]


@runtime_checkable
class Reserves(Protocol):
    """A meter that records a call before it is sent (`reserve`, which gives the
    reservation) and settles it with the call's report instead of being called."""

    def reserve(self) -> int: ...

    def settle(self, reservation: int, calls: int, usage: Usage, cost: float | None) -> None: ...


class ModelWrapper:
    """A model around `self.model`: its name and fingerprint, and its optional
    capabilities offered whether it has them or not."""

    model: Model
    name: str

    def fingerprint(self) -> dict[str, Any]:
        return self.model.fingerprint()

    def json_params(self, schema: dict[str, Any], name: str) -> dict[str, Any]:
        return self.model.json_params(schema, name) if isinstance(self.model, JsonMode) else {}

    def check(self) -> None:
        if isinstance(self.model, SelfChecking):
            self.model.check()

    def context_window(self) -> int | None:
        if isinstance(self.model, HasContextWindow):
            return self.model.context_window()
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r})"


class MeteredModel(ModelWrapper):
    """`model`, with `meter` called once per `complete` (a failed call reports its
    requests at no cost: providers do not bill refused requests). A meter that
    `Reserves` reserves each call before it is sent and settles it instead; a call
    that neither returns nor fails as a `ModelError` (the process is interrupted
    mid-call) stays reserved: counted at its estimate."""

    def __init__(self, model: Model, meter: Meter):
        self.model = model
        self.name = model.name
        self._meter = meter

    def complete(self, prompt: Prompt, **params: Any) -> Completion:
        meter = self._meter
        reservation = meter.reserve() if isinstance(meter, Reserves) else None
        try:
            reply = self.model.complete(prompt, **params)
        except ModelError as exc:
            self._report(reservation, exc.attempts, Usage(), 0.0)
            raise
        self._report(reservation, reply.attempts, reply.usage, reply.cost)
        return reply

    def _report(
        self, reservation: int | None, calls: int, usage: Usage, cost: float | None
    ) -> None:
        if reservation is not None and isinstance(self._meter, Reserves):
            self._meter.settle(reservation, calls, usage, cost)
        else:
            self._meter(calls, usage, cost)
