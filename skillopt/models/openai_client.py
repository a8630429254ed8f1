"""`openai/…` models through the OpenAI SDK's chat completions (see `direct` for what
every SDK client keeps the same as litellm).

Invariant: the request is the one litellm sends for the same call: the messages and
parameters as given, `max_tokens` as `max_completion_tokens` for OpenAI's reasoning
models (whose system messages become user messages where the table says they take
none), the SDK's named arguments as such and everything else in `extra_body`.
"""

from __future__ import annotations

import os
from typing import Any

from skillopt.models import prices
from skillopt.models.base import Completion, Prompt, Usage, as_messages
from skillopt.models.direct import (
    OPENAI_PARAMS,
    SDKModel,
    as_count,
    as_object,
    is_reasoning,
    served_tier,
)
from skillopt.models.remote import EmptyResponse


class OpenAIModel(SDKModel):
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
        if is_reasoning(self.model_id) and not any(m in self.model_id for m in ("gpt-5", "gpt-6")):
            return {}
        return {"response_format": {"type": "json_object"}}

    def complete(self, prompt: Prompt, **params: Any) -> Completion:
        merged = {**self.params, **params}
        messages = as_messages(prompt)
        if is_reasoning(self.model_id):
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
        usage = as_object(data.get("usage"))
        read = as_count(as_object(usage.get("prompt_tokens_details")).get("cached_tokens"))
        tokens = Usage(
            max(as_count(usage.get("prompt_tokens")), read),
            as_count(usage.get("completion_tokens")),
            read,
        )
        served = data.get("model")
        return Completion(
            text=message.get("content") or "",
            usage=tokens,
            cost=prices.cost(
                self._priced_as(served),
                tokens,
                service_tier=served_tier(data.get("service_tier"), tier),
            ),
            latency_s=latency,
            model=served if isinstance(served, str) and served else self.name,
            finish_reason=first.get("finish_reason") if isinstance(first, dict) else None,
            attempts=attempts,
        )
