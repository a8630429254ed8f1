"""Model names to `Model`s: names registered in-process (`register_model`), then
a registered provider's prefix (`local/…`, `scripted/…`, a plugin's), then litellm
(`openai/…`, `anthropic/…`, `ollama/…`, `openai/<alias>` with an `api_base`)."""

from __future__ import annotations

import os
from collections.abc import Callable

from skillopt.config import ModelSettings
from skillopt.errors import InputError, MissingCredentials
from skillopt.models.base import HasContextWindow, Model
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


def goes_to_litellm(name: str) -> bool:
    """Whether `resolve_model(name)` hands the name to litellm: not registered in
    this process, and not under a registered provider's prefix."""
    if not name or name in _REGISTRY:
        return False
    prefix = name.split("/", 1)[0] if "/" in name else None
    return not (prefix and registry().find("model", prefix) is not None)


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
            model = entry.load()(name, settings)
        except PluginError:
            raise
        except InputError as exc:
            if exc.field is None and exc.path is None and exc.item is None:
                raise InputError(str(exc), field=role) from None
            raise
        return entry.check_built(model, Model, "has no `name`, `complete` and `fingerprint`")
    from skillopt.models.litellm_model import LiteLLMModel, check_model_name

    check_model_name(name, role)
    api_key = None
    if settings.api_key_env:
        api_key = os.environ.get(settings.api_key_env)
        if not api_key or not api_key.strip():
            raise MissingCredentials(
                f"{settings.api_key_env} is not set: needed by {role} {name} (its `api_key_env`)"
            )
    return LiteLLMModel(
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
