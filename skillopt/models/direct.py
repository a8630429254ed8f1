"""`openai/…` and `anthropic/…` models through the providers' own SDKs, without
litellm: the same requests litellm sends for them, at a fraction of the start-up.

Invariants:
- A model here answers, fails, retries and fingerprints exactly as `LiteLLMModel`
  does for the same settings (`remote.RemoteModel`): stored rollouts stay valid
  whichever client made them. The SDKs' own retries are off.
- Each client (`openai_client`, `anthropic_client`) sends what litellm sends for
  the same call. Settings a client cannot send the way litellm would
  (`unsupported`) keep a model on litellm.
- Prices, context windows and JSON support come from litellm's table read as data
  (`prices`); a reply's cost is litellm's arithmetic over its usage.

This module holds what both clients share: which names and settings they serve,
and `SDKModel`, the client made once and the call through `RemoteModel`'s retries.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from skillopt.models import prices
from skillopt.models.base import Completion
from skillopt.models.remote import CONTEXT, EmptyResponse, RemoteModel, short

# a provider's JSON reply, its latency and the requests made -> the Completion
Parse = Callable[[Any, float, int], Completion]
# sampling parameters sent unchanged by litellm to OpenAI's chat models ...
OPENAI_PARAMS = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "seed",
        "stop",
        "frequency_penalty",
        "presence_penalty",
    }
)
# ... and to its reasoning models (o-series, gpt-5 and later), whose temperature
# and penalties litellm drops or rewrites by rules of its own
OPENAI_REASONING_PARAMS = frozenset({"max_tokens", "max_completion_tokens"})
ANTHROPIC_PARAMS = frozenset({"temperature", "max_tokens", "top_p", "top_k"})


def provider_of(name: str) -> str | None:
    """'openai' or 'anthropic' for a name this module can serve, else None."""
    prefix, _, rest = name.partition("/")
    return prefix if rest and prefix in ("openai", "anthropic") else None


def unsupported(name: str, params: dict[str, Any]) -> list[str]:
    """The settings (`temperature`, `max_tokens` and extra `params`) of model `name`
    that its SDK client cannot send the way litellm would; [] when it can send all."""
    provider = provider_of(name)
    if provider == "anthropic":
        allowed = ANTHROPIC_PARAMS
    elif provider == "openai":
        allowed = OPENAI_REASONING_PARAMS if is_reasoning(name.partition("/")[2]) else OPENAI_PARAMS
    else:
        return sorted(params)
    return sorted(k for k in params if k not in allowed)


def is_reasoning(model_id: str) -> bool:
    """Whether litellm treats `model_id` as an OpenAI reasoning model (o-series in
    its table, or gpt-5 and later except the chat variants)."""
    o_series = (
        len(model_id) > 1
        and model_id[0] == "o"
        and model_id[1].isdigit()
        and prices.table().get(model_id, {}).get("litellm_provider") == "openai"
    )
    gpt = any(m in model_id for m in ("gpt-5", "gpt-6")) and "gpt-5-chat" not in model_id
    return o_series or gpt


def as_count(value: object) -> int:
    """A token count from a provider's JSON: numbers only (not booleans), else 0."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def as_object(value: object) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def served_tier(served: object, requested: object) -> str | None:
    """The service tier a reply is priced at, as litellm picks it: the one the
    provider says it served when that has rates of its own, none when it says it
    served the standard tier, else the one asked for ('auto': none)."""
    if isinstance(served, str) and served.lower() in prices.TIERS:
        return served.lower()
    if isinstance(served, str) and served.lower() in ("default", "standard"):
        return None
    if isinstance(requested, str) and requested.lower() not in ("auto", ""):
        return requested.lower()
    return None


class SDKModel(RemoteModel):
    """A remote model whose requests go through a provider SDK's client, made once
    (the first call) and shared by every thread."""

    provider = ""

    def __init__(self, name: str, **settings: Any):
        super().__init__(name, **settings)
        self.model_id = name.partition("/")[2]
        self._client: Any = None
        self._client_lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (a Ray worker gets a copy): the SDK client and its lock are made
        anew there."""
        state = self.__dict__.copy()
        state["_client"] = None
        del state["_client_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._client_lock = threading.Lock()

    def _sdk(self) -> Any:
        """The SDK's client. Made inside the retry loop: one that cannot be made (no
        key) is a failed call, classified like any other."""
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    self._client = self._make_client()
        return self._client

    def _make_client(self) -> Any:
        raise NotImplementedError

    def _key(self) -> str | None:
        """A configured server gets a placeholder key, as litellm gives it; otherwise
        the configured key, or None for the SDK to read its variable."""
        return (self._api_key or "sk-local") if self.api_base else self._api_key

    def _hint(self, exc: Exception) -> str | None:
        """What an SDK exception's type says about a failure (`remote.classify`); the
        OpenAI and Anthropic SDKs name their exceptions alike."""
        names = {cls.__name__ for cls in type(exc).__mro__}
        status = getattr(exc, "status_code", None)
        if "APITimeoutError" in names or status == 408:  # litellm's Timeout, too
            return "timeout"
        if "RateLimitError" in names:
            return "rate_limit"
        if status in (None, 400, 413) and "APIStatusError" in names and CONTEXT.search(str(exc)):
            return "context_window"
        if names & {"AuthenticationError", "PermissionDeniedError"}:
            return "auth"
        if "NotFoundError" in names:
            return "not_found"
        if "APIConnectionError" in names:
            return "connection"
        if names & {"InternalServerError", "ServiceUnavailableError"}:
            return "server"
        return None

    def _describe(self, exc: Exception) -> str:
        """`AuthenticationError (401): invalid x-api-key` for an HTTP error (the
        provider's own message), else the exception's text."""
        body = getattr(exc, "body", None)  # the OpenAI SDK keeps only the error object
        error = body.get("error", body) if isinstance(body, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        status = getattr(exc, "status_code", None)
        if isinstance(message, str) and message and isinstance(status, int):
            return short(f"{type(exc).__name__} ({status}): {message}")
        return super()._describe(exc)

    def context_window(self) -> int | None:
        """The model's input-token limit from litellm's table (None if unknown)."""
        return prices.context_window(self.name)

    def _priced_as(self, served: Any) -> str:
        """The name a reply is priced under: the model the provider says answered when
        the table prices it, else the one asked for (as litellm does)."""
        if isinstance(served, str) and served:
            name = f"{self.provider}/{served}"
            if prices.prices(name) is not None:
                return name
        return self.name

    def _call(self, body: dict[str, Any], parse: Parse) -> Completion:
        def send(attempts: int) -> Completion:
            client = self._sdk()
            start = time.perf_counter()
            raw = self._post(client, body)
            latency = time.perf_counter() - start
            try:
                data = raw.http_response.json()
            except ValueError:
                raise EmptyResponse("the provider answered with no JSON (an empty reply)") from None
            return parse(data, latency, attempts)

        return self._retrying(send)

    def _post(self, client: Any, body: dict[str, Any]) -> Any:
        raise NotImplementedError
