"""`anthropic/…` models through the Anthropic SDK's Messages API (see `direct` for
what every SDK client keeps the same as litellm).

Invariants:
- The request is the one litellm sends for the same call: system messages as a
  `system` block list, content as text blocks, consecutive turns of one role merged,
  `max_tokens` from the settings or the model's maximum output, the API version
  litellm asks for and an API key in `x-api-key`.
- A JSON reply comes from one forced tool call whose input is the reply, serialised
  as JSON text: what the optimizer parses from any other model.
"""

from __future__ import annotations

import json
import os
from typing import Any

from skillopt.models import prices
from skillopt.models.base import Completion, Prompt, Usage, as_messages
from skillopt.models.direct import SDKModel, as_count, as_object, served_tier
from skillopt.models.remote import EmptyResponse, cache_marked

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


class AnthropicModel(SDKModel):
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
        usage = as_object(data.get("usage"))
        read = as_count(usage.get("cache_read_input_tokens"))
        written = as_count(usage.get("cache_creation_input_tokens"))
        tokens = Usage(
            as_count(usage.get("input_tokens")) + read + written,
            as_count(usage.get("output_tokens")),
            read,
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
                service_tier=served_tier(usage.get("service_tier"), None),
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
