"""Provider models through litellm: the only module that imports litellm.

Invariants:
- litellm is imported lazily, with `LITELLM_LOCAL_MODEL_COST_MAP=True` set first so
  the import never reaches the network and prices are deterministic.
- Retries, failure kinds, the fingerprint and the prompt-cache marker are those of
  every remote model (`remote`); litellm's own retries and the SDK's are turned
  off. A call made with no key at all (litellm raises that as a server error) is an
  auth failure.
- Cost comes from litellm's price map when it knows the model; otherwise None.
  litellm prices the input tokens a provider read from its prompt cache at the
  model's cache-read price and those it wrote at its cache-write price.
- OpenAI-style providers cache a long stable prefix by themselves: their messages
  are sent unchanged; Anthropic's leading system message is marked (`cache_marked`).
- `Usage.input_tokens` is the whole prompt (uncached, read from the cache and
  written to it); `Usage.cached_input_tokens` is the part read from the cache.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from skillopt.errors import InputError
from skillopt.models.base import Completion, Prompt, Usage, as_messages
from skillopt.models.remote import (  # noqa: F401  (cache_marked, cache_minimum: re-exported)
    EmptyResponse,
    RemoteModel,
    cache_marked,
    cache_minimum,
)

_import_lock = threading.Lock()
_litellm: Any = None


def import_litellm() -> Any:
    """Import litellm once, offline and quiet."""
    global _litellm
    if _litellm is None:
        with _import_lock:
            if _litellm is None:
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                import litellm

                litellm.suppress_debug_info = True
                litellm.telemetry = False
                _litellm = litellm
    return _litellm


def check_model_name(name: str, role: str = "model") -> None:
    """Raise `InputError` unless litellm can route `name` to a provider."""
    litellm = import_litellm()
    try:
        litellm.get_llm_provider(name)
    except Exception:
        raise InputError(
            f"unknown model {name!r}: use a litellm name such as "
            "'openai/gpt-4o-mini' or 'anthropic/claude-sonnet-4-5', "
            "or 'openai/<name>' with an api_base for an OpenAI-compatible server",
            field=role,
        ) from None


class LiteLLMModel(RemoteModel):
    """A chat model reached through `litellm.completion` (settings, fingerprint and
    retries: `RemoteModel`)."""

    _provider: str | None = None

    @property
    def provider(self) -> str:
        """The provider litellm routes this model to ('' when it cannot say)."""
        if self._provider is None:
            try:
                self._provider = str(import_litellm().get_llm_provider(self.name)[1])
            except Exception:  # not a name litellm routes: the call will say so
                self._provider = ""
        return self._provider

    def context_window(self) -> int | None:
        """The model's input-token limit from litellm's model map (None if unknown)."""
        try:
            info = import_litellm().get_model_info(self.name)
        except Exception:  # not in the map
            return None
        window: int | None = info.get("max_input_tokens") or info.get("max_tokens")
        return window

    def json_params(self, schema: dict[str, Any], name: str) -> dict[str, Any]:
        """Request arguments for JSON replies: the provider's schema mode where litellm
        says it has one, else plain JSON mode, else nothing (tolerant parsing)."""
        litellm = import_litellm()
        try:
            if litellm.supports_response_schema(model=self.name):
                return {
                    "response_format": {
                        "type": "json_schema",
                        "json_schema": {"name": name, "schema": schema, "strict": True},
                    }
                }
        except Exception:  # unknown model: litellm cannot say
            pass
        try:
            if "response_format" in (litellm.get_supported_openai_params(model=self.name) or []):
                return {"response_format": {"type": "json_object"}}
        except Exception:
            pass
        return {}

    def complete(self, prompt: Prompt, **params: Any) -> Completion:
        litellm = import_litellm()
        kwargs: dict[str, Any] = {**self.params, **params}
        messages = as_messages(prompt)
        if self.prompt_cache and self.provider == "anthropic":
            messages = cache_marked(messages, self.name)
        kwargs.update(
            model=self.name,
            messages=messages,
            timeout=self.timeout,
            num_retries=0,
            max_retries=0,
            drop_params=True,
        )
        if self.api_base:
            kwargs["api_base"] = self.api_base
            kwargs["api_key"] = self._api_key or "sk-local"
        elif self._api_key:
            kwargs["api_key"] = self._api_key

        def send(attempts: int) -> Completion:
            start = time.perf_counter()
            response = litellm.completion(**kwargs)
            return self._completion(response, time.perf_counter() - start, attempts)

        return self._retrying(send)

    def _hint(self, exc: Exception) -> str | None:
        """What litellm's exception type says about a failure (`remote.classify`)."""
        litellm = import_litellm()
        for kind, types in (
            ("timeout", (litellm.Timeout,)),
            ("rate_limit", (litellm.RateLimitError,)),
            ("context_window", (litellm.ContextWindowExceededError,)),
            ("auth", (litellm.AuthenticationError, litellm.PermissionDeniedError)),
            ("not_found", (litellm.NotFoundError,)),
            ("connection", (litellm.APIConnectionError,)),
            ("server", (litellm.InternalServerError, litellm.ServiceUnavailableError)),
        ):
            if isinstance(exc, types):
                return kind
        return None

    def _completion(self, response: Any, latency: float, attempts: int) -> Completion:
        choices = getattr(response, "choices", None) or []
        message = getattr(choices[0], "message", None) if choices else None
        if message is None:  # a 200 with nothing in it: the provider's fault, try again
            raise EmptyResponse("the provider answered with no choices (an empty reply)")
        return Completion(
            text=message.content or "",
            usage=_usage(getattr(response, "usage", None)),
            cost=self._cost(response),
            latency_s=latency,
            model=getattr(response, "model", self.name) or self.name,
            finish_reason=getattr(choices[0], "finish_reason", None),
            attempts=attempts,
        )

    def _cost(self, response: Any) -> float | None:
        hidden = getattr(response, "_hidden_params", None) or {}
        cost = hidden.get("response_cost")
        if cost is not None:
            return float(cost)
        try:
            return float(import_litellm().completion_cost(completion_response=response))
        except Exception:  # the price map does not know this model
            return None


def _usage(usage: Any) -> Usage:
    """Our `Usage` from litellm's. Cache reads are `prompt_tokens_details.cached_tokens`
    for every provider (litellm maps Anthropic's `cache_read_input_tokens` there too);
    Anthropic's cache writes are `cache_creation_input_tokens`.

    The input is the whole prompt. OpenAI counts cached tokens inside `prompt_tokens`;
    for Anthropic, whose `input_tokens` leave both cache reads and writes out, litellm
    adds them into `prompt_tokens` (and keeps the uncached rest as `text_tokens`).
    Where litellm gives that rest, the input is rebuilt from the three parts, so a
    litellm that summed them differently still yields the whole prompt; and it is
    never less than the cached tokens it contains."""
    prompt = _int(getattr(usage, "prompt_tokens", 0))
    details = getattr(usage, "prompt_tokens_details", None)
    read = _int(getattr(details, "cached_tokens", 0)) or _int(
        getattr(usage, "cache_read_input_tokens", 0)
    )
    written = _int(getattr(usage, "cache_creation_input_tokens", 0))
    rest = getattr(details, "text_tokens", None)
    if (read or written) and isinstance(rest, int) and hasattr(usage, "cache_read_input_tokens"):
        prompt = rest + read + written  # Anthropic's three parts
    return Usage(
        max(prompt, read + written),
        _int(getattr(usage, "completion_tokens", 0)),
        read,
    )


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
