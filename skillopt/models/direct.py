"""`openai/…` and `anthropic/…` models through the providers' own SDKs, without
litellm: the same requests litellm sends for them, at a fraction of the start-up.

Invariants:
- A model here answers, fails, retries and fingerprints exactly as `LiteLLMModel`
  does for the same settings (`remote.RemoteModel`): stored rollouts stay valid
  whichever client made them. The SDKs' own retries are off.
- Each client sends what litellm sends for the same call (`openai/…`: the messages
  and parameters as given, `max_tokens` as `max_completion_tokens` for OpenAI's
  reasoning models; `anthropic/…`: system messages as a `system` block list, content
  as text blocks, `max_tokens` from the settings or the model's maximum output).
  Settings this module cannot send the way litellm would (`unsupported`) keep a
  model on litellm.
- Prices, context windows and JSON support come from litellm's table read as data
  (`prices`); a reply's cost is litellm's arithmetic over its usage.
- Anthropic JSON replies come from one forced tool call whose input is the reply,
  serialised as JSON text: what the optimizer parses from any other model.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from skillopt.models import prices
from skillopt.models.base import Completion, Prompt, Usage, as_messages
from skillopt.models.remote import CONTEXT, EmptyResponse, RemoteModel, cache_marked, short

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
# the Messages API version litellm sends (the SDK's own default is newer)
ANTHROPIC_VERSION = "2023-06-01"
# litellm's max_tokens for an Anthropic model its table does not know
DEFAULT_ANTHROPIC_MAX_TOKENS = 128000
# litellm's stand-in for an empty message, which the Messages API refuses
_EMPTY = "[System: Empty message content sanitised to satisfy protocol]"
_STOP_REASONS = {
    "stop_sequence": "stop",
    "end_turn": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "compaction": "length",
    "pause_turn": "length",
    "model_context_window_exceeded": "length",
}


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
        allowed = OPENAI_REASONING_PARAMS if _reasoning(name.partition("/")[2]) else OPENAI_PARAMS
    else:
        return sorted(params)
    return sorted(k for k in params if k not in allowed)


def _reasoning(model_id: str) -> bool:
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


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _served_tier(served: Any, requested: Any) -> str | None:
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


class _SDKModel(RemoteModel):
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


class OpenAIModel(_SDKModel):
    """An `openai/…` model (or `openai/<alias>` on a server at `api_base`) through the
    OpenAI SDK's chat completions."""

    provider = "openai"
    _SDK_ARGS = OPENAI_PARAMS | {"response_format", "user", "service_tier", "reasoning_effort"}

    def _make_client(self) -> Any:
        import openai

        base = (
            self.api_base or os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE")
        )
        return openai.OpenAI(
            api_key=self._key(),
            base_url=base or None,
            organization=os.environ.get("OPENAI_ORGANIZATION") or None,
            timeout=self.timeout,
            max_retries=0,
        )

    def json_params(self, schema: dict[str, Any], name: str) -> dict[str, Any]:
        """JSON replies as `LiteLLMModel.json_params` asks for them: the model's schema
        mode where the table says it has one, else plain JSON mode (none for an
        o-series model without schema mode)."""
        if prices.supports_response_schema(self.name):
            return {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": name, "schema": schema, "strict": True},
                }
            }
        if _reasoning(self.model_id) and not any(m in self.model_id for m in ("gpt-5", "gpt-6")):
            return {}
        return {"response_format": {"type": "json_object"}}

    def complete(self, prompt: Prompt, **params: Any) -> Completion:
        merged = {**self.params, **params}
        messages = as_messages(prompt)
        if _reasoning(self.model_id):
            if "max_tokens" in merged:
                merged["max_completion_tokens"] = merged.pop("max_tokens")
            if self.model_id[0] == "o" and not prices.supports(self.model_id, "system_messages"):
                messages = [
                    {"role": "user", "content": m["content"]} if m.get("role") == "system" else m
                    for m in messages
                ]
        if self.model_id in ("gpt-4", "gpt-3.5-turbo-16k"):
            merged.pop("response_format", None)  # litellm drops it for these two
        body: dict[str, Any] = {"model": self.model_id, "messages": messages}
        extra = {k: v for k, v in merged.items() if k not in self._SDK_ARGS}
        body.update((k, v) for k, v in merged.items() if k in self._SDK_ARGS)
        if extra:
            body["extra_body"] = extra
        requested_tier = merged.get("service_tier")
        return self._call(body, lambda d, t, n: self._completion(d, t, n, requested_tier))

    def _post(self, client: Any, body: dict[str, Any]) -> Any:
        return client.chat.completions.with_raw_response.create(**body)

    def _completion(self, data: Any, latency: float, attempts: int, tier: Any) -> Completion:
        choices = data.get("choices") if isinstance(data, dict) else None
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(message, dict):  # a 200 with nothing in it: try again
            raise EmptyResponse("the provider answered with no choices (an empty reply)")
        usage = _dict(data.get("usage"))
        read = _int(_dict(usage.get("prompt_tokens_details")).get("cached_tokens"))
        tokens = Usage(
            max(_int(usage.get("prompt_tokens")), read), _int(usage.get("completion_tokens")), read
        )
        served = data.get("model")
        return Completion(
            text=message.get("content") or "",
            usage=tokens,
            cost=prices.cost(
                self._priced_as(served),
                tokens,
                service_tier=_served_tier(data.get("service_tier"), tier),
            ),
            latency_s=latency,
            model=served if isinstance(served, str) and served else self.name,
            finish_reason=first.get("finish_reason") if isinstance(first, dict) else None,
            attempts=attempts,
        )


class AnthropicModel(_SDKModel):
    """An `anthropic/…` model through the Anthropic SDK's Messages API."""

    provider = "anthropic"
    # named arguments of the SDK's `messages.create`; the rest (temperature, top_p,
    # top_k, which recent SDKs no longer name) go into the body as they are
    _SDK_ARGS = frozenset({"metadata", "stop_sequences"})

    def _make_client(self) -> Any:
        import anthropic

        base = self.api_base or os.environ.get("ANTHROPIC_API_BASE")
        base = base or os.environ.get("ANTHROPIC_BASE_URL")
        # the API version litellm asks for: the same request means the same thing
        headers: dict[str, Any] = {"anthropic-version": ANTHROPIC_VERSION}
        key = self._key() or (os.environ.get("ANTHROPIC_API_KEY") or "").strip() or None
        if key:  # an API key goes in x-api-key, as litellm sends it (the SDK: a bearer)
            headers.update({"x-api-key": key, "Authorization": anthropic.Omit()})
        return anthropic.Anthropic(  # no key: ANTHROPIC_AUTH_TOKEN, a bearer, or none
            api_key=key,
            base_url=_messages_root(base) if base else None,
            timeout=self.timeout,
            max_retries=0,
            default_headers=headers,
        )

    def json_params(self, schema: dict[str, Any], name: str) -> dict[str, Any]:
        """The same request arguments `LiteLLMModel.json_params` gives a Claude model;
        `complete` sends them as one tool the model is made to call."""
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": True},
            }
        }

    def max_tokens(self) -> int:
        """What to send as the required `max_tokens` when none is configured: the
        model's maximum output, as litellm sends it."""
        found = prices.max_output_tokens(self.name)
        if found is not None:
            return found
        try:
            return int(os.environ.get("DEFAULT_ANTHROPIC_CHAT_MAX_TOKENS", ""))
        except ValueError:
            return DEFAULT_ANTHROPIC_MAX_TOKENS

    def complete(self, prompt: Prompt, **params: Any) -> Completion:
        merged = {**self.params, **params}
        messages = as_messages(prompt)
        if self.prompt_cache:
            messages = cache_marked(messages, self.name)
        system, turns = anthropic_messages(messages)
        body: dict[str, Any] = {"model": self.model_id, "messages": turns}
        if system:
            body["system"] = system
        tool = _json_tool(merged.pop("response_format", None))
        if tool is not None:
            body["tools"] = [tool]
            body["tool_choice"] = {"type": "tool", "name": tool["name"]}
        body["max_tokens"] = merged.pop("max_tokens", None) or self.max_tokens()
        extra = {k: v for k, v in merged.items() if k not in self._SDK_ARGS}
        body.update((k, v) for k, v in merged.items() if k in self._SDK_ARGS)
        if extra:
            body["extra_body"] = extra
        tool_name = tool["name"] if tool else None
        return self._call(body, lambda d, t, n: self._completion(d, t, n, tool_name))

    def _post(self, client: Any, body: dict[str, Any]) -> Any:
        return client.messages.with_raw_response.create(**body)

    def _completion(self, data: Any, latency: float, attempts: int, tool: str | None) -> Completion:
        blocks = data.get("content") if isinstance(data, dict) else None
        if not isinstance(blocks, list):  # a 200 that is no message: try again
            raise EmptyResponse("the provider answered with no message (an empty reply)")
        blocks = [b for b in blocks if isinstance(b, dict)]
        stop = data.get("stop_reason")
        finish = _STOP_REASONS.get(stop, "stop") if isinstance(stop, str) else None
        answers = [
            b.get("input") for b in blocks if b.get("type") == "tool_use" and b.get("name") == tool
        ]
        if tool and answers:
            text = _json_answer(answers, tool)
            finish = "stop"  # the tool call is the reply
        else:
            text = "".join(str(b.get("text") or "") for b in blocks if b.get("type") == "text")
        usage = _dict(data.get("usage"))
        read = _int(usage.get("cache_read_input_tokens"))
        written = _int(usage.get("cache_creation_input_tokens"))
        tokens = Usage(
            _int(usage.get("input_tokens")) + read + written, _int(usage.get("output_tokens")), read
        )
        priced = self._priced_as(data.get("model"))
        served = data.get("model")
        return Completion(
            text=text,
            usage=tokens,
            cost=prices.cost(
                priced,
                tokens,
                cache_written=written,
                service_tier=_served_tier(usage.get("service_tier"), None),
                surcharge=prices.multiplier(
                    priced, geo=usage.get("inference_geo"), speed=usage.get("speed")
                ),
            ),
            latency_s=latency,
            model=served if isinstance(served, str) and served else self.name,
            finish_reason=finish,
            attempts=attempts,
        )


def _messages_root(base: str) -> str:
    """The SDK's base URL for a server litellm would reach at `base`: litellm posts
    to `<base>/v1/messages` unless `base` already ends with it; the SDK always adds
    `/v1/messages`."""
    base = base.rstrip("/")
    for tail in ("/v1/messages", "/v1"):
        if base.endswith(tail):
            return base[: -len(tail)]
    return base


def anthropic_messages(
    messages: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, turns) for the Messages API, as litellm builds them: every
    system message's text joins the `system` block list (blocks given as blocks,
    cache markers kept); string contents become one text block; consecutive turns of
    one role are merged into one; an empty content is replaced with litellm's
    stand-in, which the API accepts."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "system":
            if isinstance(content, str):
                if content:
                    system.append({"type": "text", "text": content})
            elif isinstance(content, list):
                system.extend(b for b in content if isinstance(b, dict))
            continue
        if isinstance(content, str):
            blocks = [{"type": "text", "text": content or _EMPTY}]
        elif isinstance(content, list) and content:
            blocks = list(content)
        else:
            blocks = [{"type": "text", "text": _EMPTY}]
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return system, turns


def _json_tool(response_format: Any) -> dict[str, Any] | None:
    """The one tool that carries a JSON reply matching `response_format`'s schema,
    or None when it asks for no schema."""
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return None
    spec = response_format.get("json_schema") or {}
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if not isinstance(schema, dict):
        return None
    name = str(spec.get("name") or "json_reply")
    return {
        "name": name,
        "description": "Give your reply as this tool's input, matching its schema.",
        "input_schema": schema,
    }


def _json_answer(inputs: list[Any], tool: str) -> str:
    """The reply text of the forced tool call(s): the input as JSON. A model that
    wrapped its answer in the tool's name is unwrapped; the fields of several calls
    are merged, as litellm merges them."""
    answer: Any = inputs[0]
    if len(inputs) > 1 and all(isinstance(i, dict) for i in inputs):
        answer = {k: v for i in inputs for k, v in i.items()}
    if isinstance(answer, dict) and list(answer) == [tool] and isinstance(answer[tool], dict):
        answer = answer[tool]
    return json.dumps(answer, ensure_ascii=False)
