"""A model wrapper that keeps every reply in the rollout store, keyed by the request,
so an identical request is answered from the store: a resumed run, a re-run with
the same settings, or a prompt asked twice costs nothing, and a finished run can be
replayed with no model call at all.

Invariants:
- The key is sha256 over the canonical JSON of the model's fingerprint, the
  messages and the call's parameters. A sampled model (temperature unset or above
  0) also keys on the attempt and on a salt (the run's seed): the n-th identical
  request of this process gets the n-th stored reply, so a re-run with the same
  seed sees the same sequence of samples, a repeated prompt within a run still
  draws a new one, and another seed draws new ones. A deterministic model
  (temperature 0) answers every repeat from the first reply.
- Only answers are stored; a failed call is not, and is asked again next time.
- A reply served from the store reports 0 provider requests and no cost (nothing
  was paid for it now); `on_served` is told, for the run's ledger.
- `offline` (replay): a request the store does not hold raises `ReplayMiss`
  instead of reaching the model.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from skillopt.errors import SkilloptError
from skillopt.models.base import Completion, Model, Prompt, Usage, as_messages
from skillopt.models.metered import ModelWrapper
from skillopt.rollouts.record import canonical_json


class ReplayMiss(SkilloptError):
    """A replay needed a model reply or a rollout the recording does not hold."""

    exit_code = 1


class ReplyStore(Protocol):
    def get_reply(self, key: str) -> dict[str, Any] | None: ...

    def put_reply(
        self,
        key: str,
        model: dict[str, Any],
        request: dict[str, Any],
        text: str,
        usage: Usage,
        cost: float | None,
        finish_reason: str | None = None,
    ) -> None: ...


def sampled(fingerprint: Mapping[str, Any], params: Mapping[str, Any]) -> bool:
    """Whether replies to one request may differ: a temperature above 0, or none set
    (the provider's default samples)."""
    temperature = params.get("temperature", fingerprint.get("temperature"))
    return not (isinstance(temperature, (int, float)) and temperature == 0)


class StoredModel(ModelWrapper):
    """`model`, with its replies kept in and served from the store `store()` returns
    (asked at each call, so the caller decides which store serves it). `on_used(key,
    served)` is told of each reply used, and whether it was served from the store."""

    def __init__(
        self,
        model: Model,
        store: Callable[[], ReplyStore],
        *,
        on_used: Callable[[str, bool], None] | None = None,
        offline: bool = False,
        salt: str = "",
    ):
        self.model = model
        self.salt = salt  # a sampled model's replies differ by it too (the run's seed)
        self.name = model.name
        self._store = store
        self._on_used = on_used
        self.offline = offline
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()

    def key(
        self, prompt: Prompt, params: dict[str, Any]
    ) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """(key, model fingerprint, request) of the next call with these arguments."""
        fp = self.model.fingerprint()
        request: dict[str, Any] = {"messages": as_messages(prompt), "params": params}
        if sampled(fp, params):
            base = canonical_json([fp, request])
            with self._lock:
                request["attempt"] = self._seen[base]
                self._seen[base] += 1
            if self.salt:
                request["salt"] = self.salt
        digest = hashlib.sha256(
            canonical_json({"model": fp, **request}).encode("utf-8", "surrogatepass")
        ).hexdigest()
        return digest, fp, request

    def complete(self, prompt: Prompt, **params: Any) -> Completion:
        key, fp, request = self.key(prompt, params)
        store = self._store()
        hit = store.get_reply(key)
        if hit is not None:
            if self._on_used is not None:
                self._on_used(key, True)
            return Completion(
                text=hit["text"],
                usage=Usage(hit["input_tokens"], hit["output_tokens"]),
                cost=0.0,
                model=self.name,
                finish_reason=hit["finish_reason"],
                attempts=0,
            )
        if self.offline:
            raise ReplayMiss(
                f"the recording holds no reply of {self.name} to this request "
                f"(key {key[:12]}): the run asked something it did not ask before"
            )
        reply = self.model.complete(prompt, **params)
        store.put_reply(key, fp, request, reply.text, reply.usage, reply.cost, reply.finish_reason)
        if self._on_used is not None:
            self._on_used(key, False)
        return reply
