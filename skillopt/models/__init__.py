"""Model access: turn a model name into a `Model`.

Names: litellm names (`openai/…`, `anthropic/…`, `ollama/…`, `openai/<alias>` with
an `api_base`), `local/gemma-3-270m` (the embedded offline model), `scripted/echo` (answers with the prompt), `scripted/<module>:<fn>`
(a Python function `(messages) -> str`, for tests and benchmarks), and names
registered in-process with `register_model`.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable

from skillopt.config import ModelSettings
from skillopt.errors import InputError
from skillopt.models.base import Completion, Model, Usage, last_user_text
from skillopt.models.scripted import ScriptedModel

_REGISTRY: dict[str, Callable[[], Model]] = {}


def register_model(name: str, factory: Callable[[], Model] | Model) -> None:
    """Make `name` resolvable (tests, plug-ins). A model instance is reused as is."""
    if hasattr(factory, "complete"):
        _REGISTRY[name] = lambda: factory
    else:
        _REGISTRY[name] = factory


def unregister_model(name: str) -> None:
    _REGISTRY.pop(name, None)


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
    if name.startswith("scripted/"):
        return _scripted(name, role)
    if name.startswith("local/"):
        from skillopt.models import local

        if name != local.NAME:
            raise InputError(
                f"unknown local model {name!r}; the embedded model is {local.NAME}", field=role
            )
        extra = {
            k: v
            for k, v in {
                "temperature": settings.temperature,
                "max_tokens": settings.max_tokens,
            }.items()
            if v is not None
        }
        return local.LocalModel(**extra)
    from skillopt.models.litellm_model import LiteLLMModel, check_model_name

    check_model_name(name, role)
    api_key = None
    if settings.api_key_env:
        api_key = os.environ.get(settings.api_key_env)
        if not api_key:
            raise InputError(
                f"environment variable {settings.api_key_env} is not set",
                field=f"models.{name}.api_key_env",
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
    )


def context_window(model: Model) -> int | None:
    """How many input tokens `model` takes, when it says (None when unknown)."""
    window = getattr(model, "context_window", None)
    try:
        window = window() if callable(window) else window
    except Exception:  # a model that cannot tell
        return None
    return window if isinstance(window, int) and window > 0 else None


def _scripted(name: str, role: str) -> Model:
    ref = name[len("scripted/") :]
    if ref == "echo":
        return ScriptedModel(lambda messages: last_user_text(messages), name=name)
    if ":" not in ref:
        raise InputError(
            f"unknown scripted model {name!r}: use scripted/echo or scripted/<module>:<function>",
            field=role,
        )
    module_name, _, attr = ref.partition(":")
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"cannot load scripted model {name!r}: {exc}", field=role) from None
    return ScriptedModel(fn, name=name)


__all__ = [
    "Completion",
    "Model",
    "ScriptedModel",
    "Usage",
    "context_window",
    "register_model",
    "resolve_model",
    "unregister_model",
]
