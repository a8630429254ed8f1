"""Model access: the `Model` contract (`base`), names resolved to models
(`resolve`), the embedded model (`local`), provider APIs through their SDKs
(`direct`) or litellm (`litellm_model`), both on `remote`, litellm's price table
read as data (`prices`), and scripted stand-ins (`scripted`).

Importing this package is cheap: the contract types load at once, everything else
(settings, the plugin registry, litellm) on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skillopt.models.base import Completion, Model, Usage

if TYPE_CHECKING:
    from skillopt.models.metered import MeteredModel
    from skillopt.models.resolve import (
        context_window,
        register_model,
        resolve_model,
        unregister_model,
    )
    from skillopt.models.scripted import ScriptedModel

_LAZY = {
    "MeteredModel": "skillopt.models.metered",
    "ScriptedModel": "skillopt.models.scripted",
    "context_window": "skillopt.models.resolve",
    "register_model": "skillopt.models.resolve",
    "resolve_model": "skillopt.models.resolve",
    "unregister_model": "skillopt.models.resolve",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return vars(importlib.import_module(module))[name]


__all__ = [
    "Completion",
    "MeteredModel",
    "Model",
    "ScriptedModel",
    "Usage",
    "context_window",
    "register_model",
    "resolve_model",
    "unregister_model",
]
