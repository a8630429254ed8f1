"""Model names to `Model`s: names registered in-process (`register_model`), then
a registered provider's prefix (`local/…`, `scripted/…`, a plugin's), then the
providers' APIs: `openai/…` (also `openai/<alias>` with an `api_base`) and
`anthropic/…` through their own SDKs (`direct`), every other provider (`ollama/…`,
`gemini/…`, …) through litellm, which is imported only then. A model's `client`
setting picks the way (`route`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from skillopt.config.sections import ModelSettings
from skillopt.errors import InputError, MissingCredentials
from skillopt.models.base import HasContextWindow, Model
from skillopt.models.remote import RemoteModel
from skillopt.plugins import PluginError, registry

_REGISTRY: dict[str, Callable[[], Model]] = {}


def register_model(name: str, factory: Callable[[], Model] | Model) -> None:
    """Make the exact name `name` resolvable in this process (tests, notebooks). A
    model instance is reused as is."""
    if isinstance(factory, Model):
        model = factory
        _REGISTRY[name] = lambda: model
    else:
        _REGISTRY[name] = factory


def unregister_model(name: str) -> None:
    _REGISTRY.pop(name, None)


def is_provider_model(name: str) -> bool:
    """Whether `resolve_model(name)` reaches a provider's API (through its SDK or
    litellm): not registered in this process, and not under a registered provider's
    prefix."""
    if not name or name in _REGISTRY:
        return False
    prefix = name.split("/", 1)[0] if "/" in name else None
    return not (prefix and registry().find("model", prefix) is not None)


def route(name: str, settings: ModelSettings, role: str = "model") -> str:
    """'sdk' or 'litellm': how the provider model `name` is reached. `client: auto`
    takes the provider's SDK for `openai/…` and `anthropic/…` unless a setting is one
    the SDK client cannot send as litellm would; `client: sdk` insists (an
    `InputError` says why it cannot); `client: litellm` always takes litellm."""
    if settings.client == "litellm":
        return "litellm"
    from skillopt.models import direct

    params = _params(settings)
    cannot = direct.unsupported(name, params) if direct.provider_of(name) else None
    if cannot == []:
        return "sdk"
    if settings.client == "sdk":
        why = (
            f"its settings {', '.join(cannot)} are sent only through litellm"
            if cannot
            else "only openai/… and anthropic/… models have one"
        )
        raise InputError(
            f"client: sdk cannot reach {name}: {why}; use client: auto or litellm", field=role
        )
    return "litellm"


def _params(settings: ModelSettings) -> dict[str, Any]:
    """The request parameters a model's settings give it (as `RemoteModel` builds them)."""
    base = {"temperature": settings.temperature, "max_tokens": settings.max_tokens}
    return {**{k: v for k, v in base.items() if v is not None}, **settings.params}


def resolve_model(
    name: str, settings: ModelSettings | None = None, *, role: str = "model"
) -> Model:
    """Build the model called `name`; unknown names raise `InputError` naming the
    `role` it was asked for (target, judge, optimizer)."""
    if not name or not name.strip():
        raise InputError("no model given", field=role)
    if name in _REGISTRY:
        return _REGISTRY[name]()
    settings = settings or ModelSettings()
    prefix = name.split("/", 1)[0] if "/" in name else None
    entry = registry().find("model", prefix) if prefix else None
    if entry is not None:
        try:
            built: Model = entry.build(
                Model, "has no `name`, `complete` and `fingerprint`", name, settings
            )
        except PluginError:
            raise
        except InputError as exc:
            if exc.field is None and exc.path is None and exc.item is None:
                raise InputError(str(exc), field=role) from None
            raise
        return built
    client = route(name, settings, role)
    api_key = None
    if settings.api_key_env:
        api_key = os.environ.get(settings.api_key_env)
        if not api_key or not api_key.strip():
            raise MissingCredentials(
                f"{settings.api_key_env} is not set: needed by {role} {name} (its `api_key_env`)"
            )
    cls: type[RemoteModel]
    if client == "sdk":
        from skillopt.models.anthropic_client import AnthropicModel
        from skillopt.models.openai_client import OpenAIModel

        cls = OpenAIModel if name.startswith("openai/") else AnthropicModel
    else:
        from skillopt.models.litellm_model import LiteLLMModel, check_model_name

        check_model_name(name, role)
        cls = LiteLLMModel
    return cls(
        name,
        api_base=settings.api_base,
        api_key=api_key,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        timeout=settings.timeout,
        retries=settings.retries,
        backoff=settings.backoff,
        extra=settings.params,
        prompt_cache=settings.prompt_cache,
    )


def context_window(model: Model) -> int | None:
    """How many input tokens `model` takes, when it says (None when unknown)."""
    if not isinstance(model, HasContextWindow):
        return None
    try:
        window = model.context_window()
    except Exception:  # a model that cannot tell
        return None
    return window if isinstance(window, int) and window > 0 else None
