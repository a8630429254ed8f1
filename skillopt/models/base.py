"""The one small model interface every part of skillopt talks to.

Contract: `Model.complete(messages_or_prompt) -> Completion`. It either returns
text with usage, cost and latency, or raises `ModelError` after its own retries.
It must be safe to call from many threads at once. `fingerprint()` names exactly
what changes the output (model and sampling parameters), never retries or
timeouts, so the rollout store can tell identical evaluations apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Union, runtime_checkable

from skillopt._util.text import clean

Messages = list[dict[str, Any]]
Prompt = Union[Messages, str]


@dataclass(frozen=True)
class Usage:
    """Tokens of one call (or a sum of calls).

    `input_tokens` is the whole prompt, however the provider billed it: the tokens
    read from its prompt cache (`cached_input_tokens`, billed at a lower price) and
    those written to it are parts of it, not additions to it."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0  # of input_tokens, read from the provider's prompt cache

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
        )


@dataclass(frozen=True)
class Completion:
    """A model's reply. The text is made storable on construction (every model, ours
    or a user's, builds one): lone UTF-16 surrogates and NULs, which no UTF-8 file or
    database can hold, are replaced with U+FFFD and counted in `replaced`."""

    text: str
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None  # USD; None when the price is unknown (never guessed as 0)
    latency_s: float = 0.0
    model: str = ""
    finish_reason: str | None = None
    replaced: int = 0  # characters of the reply replaced because they cannot be stored
    attempts: int = 1  # provider requests made for this reply (retries included)

    def __post_init__(self) -> None:
        text = self.text if isinstance(self.text, str) else str(self.text)
        text, n = clean(text)
        object.__setattr__(self, "text", text)
        if n:
            object.__setattr__(self, "replaced", self.replaced + n)


@runtime_checkable
class Model(Protocol):
    name: str

    def complete(self, prompt: Prompt, **params: Any) -> Completion:
        """Return the model's reply, or raise `ModelError` (after retries)."""
        ...

    def fingerprint(self) -> dict[str, Any]:
        """Model name and the sampling parameters that change its output."""
        ...


# Optional capabilities, checked with `isinstance`; a model offers one by defining
# the method.


@runtime_checkable
class SelfChecking(Protocol):
    """A model that can find out before any task whether it can run at all (the
    embedded model loads its weights)."""

    def check(self) -> None:
        """Raise `ModelError` or `InputError` if no call can succeed."""
        ...


@runtime_checkable
class JsonMode(Protocol):
    """A model whose provider can be asked for JSON replies."""

    def json_params(self, schema: dict[str, Any], name: str) -> dict[str, Any]:
        """Request arguments asking for a reply matching `schema` ({} when none)."""
        ...


@runtime_checkable
class HasContextWindow(Protocol):
    """A model that knows how many input tokens it takes."""

    def context_window(self) -> int | None:
        """The input-token limit; None when unknown."""
        ...


def as_messages(prompt: Prompt) -> Messages:
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return prompt


def last_user_text(prompt: Prompt) -> str:
    if isinstance(prompt, str):
        return prompt
    for msg in reversed(prompt):
        if msg.get("role") == "user":
            content = msg.get("content")
            return content if isinstance(content, str) else str(content)
    return ""
