"""Provider models through litellm: the only module that imports litellm.

Invariants:
- litellm is imported lazily, with `LITELLM_LOCAL_MODEL_COST_MAP=True` set first so
  the import never reaches the network and prices are deterministic.
- Our own loop is the only retry layer (litellm's and the SDK's are turned off):
  rate limits, server errors, timeouts and connection failures are retried with
  exponential backoff and jitter, honouring `Retry-After`; auth and request errors
  are not retried, nor is a call made with no key at all (litellm raises that as a
  server error), which is an auth failure. After the last attempt a `ModelError` carries the reason.
- Cost comes from litellm's price map when it knows the model; otherwise None.
  litellm prices the input tokens a provider read from its prompt cache at the
  model's cache-read price and those it wrote at its cache-write price.
- Prompt caching (`prompt_cache`, on by default) never enters the fingerprint: it
  changes what a call costs, not what it answers. Anthropic caches only a prefix
  marked with `cache_control`, so a leading system message (the chat harness's skill,
  the same in every rollout) long enough to be cached is sent as one text block
  carrying an ephemeral marker (see `cache_marked`). OpenAI-style providers cache a
  long stable prefix by themselves: their messages are sent unchanged.
- `Usage.input_tokens` is the whole prompt (uncached, read from the cache and
  written to it); `Usage.cached_input_tokens` is the part read from the cache.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from typing import Any

from skillopt import secrets
from skillopt.errors import InputError, ModelError
from skillopt.models.base import Completion, Prompt, Usage, as_messages

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


_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 529}
# how providers say an account is out of money (OpenAI: 429 insufficient_quota;
# Anthropic: 400 "credit balance is too low")
_QUOTA = re.compile(
    r"insufficient[_ ]quota|exceeded your current quota|credit balance|"
    r"billing|payment required|insufficient[_ ](funds|credit)",
    re.I,
)


# how litellm and the provider SDKs say no key was sent at all; litellm raises it as
# an InternalServerError (OpenAI: "Missing credentials") or a connection error
# (Gemini: "Missing Gemini API key"), which would otherwise be retried as a server fault
_NO_KEY = re.compile(
    r"missing credentials|missing [\w ]{0,20}api[_ ]key|api_key client option must be set|"
    r"no (api )?key is set|api key (is )?(not set|missing|required)",
    re.I,
)


# Anthropic's minimum cacheable prompt, in tokens, by model family (its prompt caching
# docs): a marked prefix shorter than this is not cached (and not refused). Models not
# listed get the smallest minimum: a marker that turns out too early is ignored free.
_CACHE_MINIMUM = (
    (re.compile(r"haiku-4[-.]5|opus-4[-.][56]"), 4096),
    (re.compile(r"haiku|sonnet-4[-.]6"), 2048),
)
_CACHE_MINIMUM_DEFAULT = 1024  # Sonnet 4.5, 4 and 3.7, Opus 4.1 and 4
# characters per token assumed when estimating a prompt's length: English prose runs
# about 3.5 to 4 characters per token, so this errs long (towards marking a prompt)
_CHARS_PER_TOKEN = 3


def cache_minimum(model: str) -> int:
    """Anthropic's minimum cacheable prompt for `model`, in tokens."""
    for pattern, tokens in _CACHE_MINIMUM:
        if pattern.search(model):
            return tokens
    return _CACHE_MINIMUM_DEFAULT


def cache_marked(messages: list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """`messages` with a leading system message long enough to be cached by Anthropic
    sent as one text block marked `cache_control: ephemeral`, which litellm passes on
    as Anthropic's `system` block list; otherwise `messages` as given.

    Long enough: an estimated `len(text) // 3` tokens reaching the model's minimum
    (`cache_minimum`). The estimate errs long because a marker on a prompt below
    the minimum costs nothing (the API ignores it), while a prompt left unmarked
    pays the full input price on every call."""
    if not messages or messages[0].get("role") != "system":
        return messages
    text = messages[0].get("content")
    if not isinstance(text, str) or len(text) // _CHARS_PER_TOKEN < cache_minimum(model):
        return messages
    block = {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}
    return [{**messages[0], "content": [block]}, *messages[1:]]


class EmptyResponse(Exception):
    """A successful HTTP response that holds no reply (no choices, no message)."""


def _classify(exc: Exception) -> tuple[str, bool]:
    """(kind, retryable) for a litellm / SDK exception."""
    if isinstance(exc, EmptyResponse):
        return "empty_response", True
    litellm = import_litellm()
    status = getattr(exc, "status_code", None)
    if _NO_KEY.search(str(exc)):
        return "auth", False  # no retry makes a key appear
    if isinstance(exc, litellm.Timeout):
        return "timeout", True
    if status == 402 or (status in (400, 429) and _QUOTA.search(str(exc))):
        return "quota", False  # no retry refills an account
    if isinstance(exc, litellm.RateLimitError) or status == 429:
        return "rate_limit", True
    if isinstance(exc, litellm.ContextWindowExceededError):
        return "context_window", False
    if isinstance(exc, (litellm.AuthenticationError, litellm.PermissionDeniedError)) or status in (
        401,
        403,
    ):
        return "auth", False
    if isinstance(exc, litellm.NotFoundError) or status == 404:  # no such model here
        return "not_found", False
    if isinstance(exc, litellm.APIConnectionError) and not isinstance(status, int):
        return "connection", True
    if isinstance(status, int):
        if status in _RETRY_STATUS or status >= 500:
            return "server", True
        return "bad_request", False
    if isinstance(
        exc,
        (litellm.InternalServerError, litellm.ServiceUnavailableError, litellm.APIConnectionError),
    ):
        return "server", True
    return "error", False


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    value = headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


class LiteLLMModel:
    """A chat model reached through `litellm.completion`.

    `params` (temperature, max_tokens, …) go into the fingerprint; `timeout`,
    `retries` and the backoff settings do not.
    """

    def __init__(
        self,
        name: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout: float = 120.0,
        retries: int = 4,
        backoff: float = 1.0,
        backoff_max: float = 30.0,
        extra: dict | None = None,
        prompt_cache: bool = True,
    ):
        self.name = name
        self.api_base = api_base
        self._api_key = api_key
        self.params: dict[str, Any] = {
            k: v
            for k, v in {"temperature": temperature, "max_tokens": max_tokens}.items()
            if v is not None
        }
        self.params.update(extra or {})
        secrets.register(api_key)
        secrets.register_params(self.params)
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.prompt_cache = prompt_cache  # not in the fingerprint: the answer is the same
        self._provider: str | None = None

    @property
    def provider(self) -> str:
        """The provider litellm routes this model to ('' when it cannot say)."""
        if self._provider is None:
            try:
                self._provider = str(import_litellm().get_llm_provider(self.name)[1])
            except Exception:  # not a name litellm routes: the call will say so
                self._provider = ""
        return self._provider

    def fingerprint(self) -> dict:
        # a header or key in `params` changes nothing about the output but is a secret:
        # the store keeps a digest of it, never the value
        fp = {"name": self.name, **secrets.redact(self.params, replace_with=secrets.digest)}
        if self.api_base:
            fp["api_base"] = self.api_base
        return fp

    def __repr__(self) -> str:  # never show the key
        return f"LiteLLMModel({self.name!r})"

    def context_window(self) -> int | None:
        """The model's input-token limit from litellm's model map (None if unknown)."""
        try:
            info = import_litellm().get_model_info(self.name)
        except Exception:  # not in the map
            return None
        return info.get("max_input_tokens") or info.get("max_tokens")

    def json_params(self, schema: dict, name: str) -> dict:
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

    def complete(self, prompt: Prompt, **params) -> Completion:
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
        attempt = 0
        while True:
            start = time.perf_counter()
            try:
                response = litellm.completion(**kwargs)
                return self._completion(response, time.perf_counter() - start, attempt + 1)
            except Exception as exc:
                kind, retryable = _classify(exc)
                if not retryable or attempt >= self.retries:
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise ModelError(
                        f"{self.name}: {kind}{tries}: {_short(exc)}",
                        kind=kind,
                        retryable=retryable,
                        attempts=attempt + 1,
                    ) from exc
                delay = min(self.backoff_max, self.backoff * 2**attempt) * (0.5 + random.random())
                hinted = _retry_after(exc)
                if hinted is not None:  # the server said when to come back
                    delay = min(self.backoff_max, hinted)
                time.sleep(delay)
                attempt += 1

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


def _short(exc: Exception) -> str:
    text = str(exc).replace("\n", " ").strip()
    for prefix in ("litellm.",):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    return text[:300]
