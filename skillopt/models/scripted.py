"""A scripted model for tests and benchmarks: answers from a mapping, a function or
a queue, and records every call. Never a default for real training.

Invariant: thread-safe; the call history is in arrival order.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from skillopt.errors import ModelError
from skillopt.models.base import Completion, Prompt, Usage, as_messages, last_user_text


@dataclass(frozen=True)
class Call:
    messages: list[dict[str, Any]]
    params: dict[str, Any]
    at: float


class ScriptedModel:
    """`answers` is one of:
    - a mapping from the last user message to a reply (a value may be a list: a
      queue of replies for that prompt whose last reply repeats; an Exception
      value is raised);
    - a function `(messages) -> str | Completion` (it may raise `ModelError`);
    - an iterable of replies consumed in order.
    `default` answers prompts a mapping lacks; `latency` sleeps per call; `cost`
    is the price reported per call (scripted answers are free by default).
    """

    def __init__(
        self,
        answers: Any = None,
        *,
        name: str = "scripted/test",
        default: str | None = None,
        latency: float = 0.0,
        params: dict[str, Any] | None = None,
        cost: float | None = 0.0,
    ):
        self.name = name
        self.params = dict(params or {})
        self.default = default
        self.latency = latency
        self.cost = cost
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self._fn: Callable[[list[dict[str, Any]]], Any] | None = None
        self._map: dict[str, Any] | None = None
        self._queue: deque[Any] | None = None
        if callable(answers):
            self._fn = answers
        elif isinstance(answers, Mapping):
            self._map = {k: deque(v) if isinstance(v, list) else v for k, v in answers.items()}
        elif answers is not None:
            self._queue = deque(answers if isinstance(answers, Iterable) else [answers])

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (a Ray worker gets a copy): the lock is made anew there."""
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def fingerprint(self) -> dict[str, Any]:
        return {"name": self.name, **self.params}

    @property
    def call_count(self) -> int:
        with self._lock:
            return len(self.calls)

    def complete(self, prompt: Prompt, **params: Any) -> Completion:
        messages = as_messages(prompt)
        start = time.perf_counter()
        with self._lock:
            self.calls.append(Call(messages, params, time.time()))
            reply = self._next(messages)
        if self.latency:
            time.sleep(self.latency)
        if self._fn is not None:
            reply = self._fn(messages)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, Completion):
            return reply
        text = str(reply)
        usage = Usage(
            sum(len(str(m.get("content", "")).split()) for m in messages), len(text.split())
        )
        return Completion(
            text=text,
            usage=usage,
            cost=self.cost,
            latency_s=time.perf_counter() - start,
            model=self.name,
            finish_reason="stop",
        )

    def _next(self, messages: list[dict[str, Any]]) -> Any:
        if self._fn is not None:
            return None
        if self._map is not None:
            key = last_user_text(messages)
            value = self._map.get(key)
            if isinstance(value, deque):
                if value:
                    return value.popleft() if len(value) > 1 else value[0]
                value = None
            if value is None:
                if self.default is None:
                    return ModelError(
                        f"scripted model has no answer for {key[:80]!r}",
                        kind="scripted",
                        retryable=False,
                    )
                return self.default
            return value
        if self._queue:
            return self._queue.popleft()
        if self.default is not None:
            return self.default
        return ModelError("scripted model ran out of answers", kind="scripted", retryable=False)


def build(name: str, settings: object = None) -> ScriptedModel:
    """The registry's factory for `scripted/...` names: `scripted/echo` answers with
    the prompt; `scripted/<module>:<function>` calls `function(messages) -> str`."""
    import importlib

    from skillopt.errors import InputError

    ref = name[len("scripted/") :]
    if ref == "echo":
        return ScriptedModel(lambda messages: last_user_text(messages), name=name)
    if ":" not in ref:
        raise InputError(
            f"unknown scripted model {name!r}: use scripted/echo or scripted/<module>:<function>"
        )
    module_name, _, attr = ref.partition(":")
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"cannot load scripted model {name!r}: {exc}") from None
    return ScriptedModel(fn, name=name)
