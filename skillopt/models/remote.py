"""What every model reached over a provider's API shares, whichever client sends the
request (litellm, or the OpenAI and Anthropic SDKs in `direct`): the settings, the
fingerprint, the retry loop, the classification of failures, and Anthropic's
prompt-cache marker.

Invariants:
- Our own loop is the only retry layer (litellm's and the SDKs' are turned off):
  rate limits, server errors, timeouts, dropped connections and empty replies are
  retried with exponential backoff and jitter, honouring `Retry-After`; auth, quota
  and request errors are not, nor is a call made with no key at all (a client may
  report that as a server or connection error): it is an auth failure. After the
  last attempt a `ModelError` carries the kind and the number of requests made.
- The fingerprint is the model name, its sampling `params` (secrets as digests) and
  its `api_base`: the same whichever client is used, so stored rollouts stay valid
  when the client changes. Timeouts, retries, backoff, prompt caching and the client
  never enter it.
- Prompt caching changes what a call costs, not what it answers. Anthropic caches
  only a prefix marked with `cache_control`, so a leading system message (the chat
  harness's skill, the same in every rollout) long enough to be cached is sent as one
  text block carrying an ephemeral marker (see `cache_marked`).
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

from skillopt._util import secrets
from skillopt.errors import ModelError

T = TypeVar("T")

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 529}
# how providers say an account is out of money (OpenAI: 429 insufficient_quota;
# Anthropic: 400 "credit balance is too low")
QUOTA = re.compile(
    r"insufficient[_ ]quota|exceeded your current quota|credit balance|"
    r"billing|payment required|insufficient[_ ](funds|credit)",
    re.I,
)
# how litellm and the provider SDKs say no key was sent at all; litellm raises it as
# an InternalServerError (OpenAI: "Missing credentials") or a connection error
# (Gemini: "Missing Gemini API key"), the Anthropic SDK as a TypeError ("Could not
# resolve authentication method"); a retry would not make a key appear
NO_KEY = re.compile(
    r"missing credentials|missing [\w ]{0,20}api[_ ]key|api_key client option must be set|"
    r"no (api )?key is set|api key (is )?(not set|missing|required)|"
    r"could not resolve authentication method",
    re.I,
)
# how OpenAI and Anthropic say a prompt is longer than the model takes (the phrases
# litellm maps to ContextWindowExceededError for them)
CONTEXT = re.compile(
    r"maximum context length|context[_ ]length[_ ]exceeded|exceed(s|ed)? context limit|"
    r"maximum context limit|longer than the model's context length|prompt is too long|"
    r"input is too long",
    re.I,
)


class EmptyResponse(Exception):
    """A successful HTTP response that holds no reply (no choices, no message)."""


def classify(exc: Exception, status: int | None, hint: str | None) -> tuple[str, bool]:
    """(kind, retryable) of a failed request. `status` is its HTTP status when there
    was one; `hint` what the client's exception type says (first match of: timeout,
    rate_limit, context_window, auth, not_found, connection, server), or None."""
    if isinstance(exc, EmptyResponse):
        return "empty_response", True
    text = str(exc)
    if NO_KEY.search(text):
        return "auth", False  # no retry makes a key appear
    if hint == "timeout":
        return "timeout", True
    if status == 402 or (status in (400, 429) and QUOTA.search(text)):
        return "quota", False  # no retry refills an account
    if hint == "rate_limit" or status == 429:
        return "rate_limit", True
    if hint == "context_window":
        return "context_window", False
    if hint == "auth" or status in (401, 403):
        return "auth", False
    if hint == "not_found" or status == 404:  # no such model here
        return "not_found", False
    if hint == "connection" and not isinstance(status, int):
        return "connection", True
    if isinstance(status, int):
        if status in RETRY_STATUS or status >= 500:
            return "server", True
        return "bad_request", False
    if hint in ("server", "connection"):
        return "server", True
    return "error", False


def retry_after(exc: Exception) -> float | None:
    """The seconds a failed response's `Retry-After` header asks to wait, if any (an
    SDK keeps the response on the exception; litellm keeps, for some providers, only
    its headers, in `litellm_response_headers`)."""
    response = getattr(exc, "response", None)
    for headers in (
        getattr(response, "headers", None),
        getattr(exc, "litellm_response_headers", None),
    ):
        value = headers.get("retry-after") if headers is not None else None
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            return None
    return None


def short(exc: Exception | str) -> str:
    """An exception's message on one line, without litellm's module prefix, clipped."""
    text = str(exc).replace("\n", " ").strip()
    if text.startswith("litellm."):
        text = text[len("litellm.") :]
    return text[:300]


class RemoteModel:
    """A chat model behind a provider's API. Subclasses send one request
    (`_send(messages, params) -> Completion`, raising on failure) and say what
    their client's exceptions mean (`_hint(exc) -> str | None`); `complete` retries.

    `params` (temperature, max_tokens, extra arguments) go into the fingerprint;
    `timeout`, `retries`, the backoff settings and `prompt_cache` do not.
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
        extra: dict[str, Any] | None = None,
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

    def fingerprint(self) -> dict[str, Any]:
        # a header or key in `params` changes nothing about the output but is a secret:
        # the store keeps a digest of it, never the value
        fp = {"name": self.name, **secrets.redact(self.params, replace_with=secrets.digest)}
        if self.api_base:
            fp["api_base"] = self.api_base
        return fp

    def __repr__(self) -> str:  # never show the key
        return f"{type(self).__name__}({self.name!r})"

    def _hint(self, exc: Exception) -> str | None:
        return None

    def _describe(self, exc: Exception) -> str:
        """What a `ModelError` says of the failure, on one line."""
        return short(exc)

    def _classify(self, exc: Exception) -> tuple[str, bool]:
        status = getattr(exc, "status_code", None)
        return classify(exc, status if isinstance(status, int) else None, self._hint(exc))

    def _retrying(self, send: Callable[[int], T]) -> T:
        """`send(attempts)` until it returns, retrying what `_classify` calls
        retryable up to `retries` times; then a `ModelError`."""
        attempt = 0
        while True:
            try:
                return send(attempt + 1)
            except Exception as exc:
                kind, retryable = self._classify(exc)
                if not retryable or attempt >= self.retries:
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise ModelError(
                        f"{self.name}: {kind}{tries}: {self._describe(exc)}",
                        kind=kind,
                        retryable=retryable,
                        attempts=attempt + 1,
                    ) from exc
                delay = min(self.backoff_max, self.backoff * 2**attempt) * (0.5 + random.random())
                hinted = retry_after(exc)
                if hinted is not None:  # the server said when to come back
                    delay = min(self.backoff_max, hinted)
                time.sleep(delay)
                attempt += 1


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
    sent as one text block marked `cache_control: ephemeral` (which becomes the
    request's `system` block list); otherwise `messages` as given.

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
