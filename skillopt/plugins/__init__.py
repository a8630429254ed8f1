"""Plugins: how scorers, harnesses, optimizers, gates and model providers are found
by name.

Every component skillopt knows is in one `Registry`, the built-ins included: they
are registered by `skillopt.plugins.builtins.register`, through the same calls a plugin
makes. A plugin is an installed distribution with an entry point in the group
`skillopt` that names a function `register(registry)` (or a module holding one):

    [project.entry-points.skillopt]
    levenshtein = "skillopt_levenshtein:register"

Why a registry of our own rather than pluggy hooks: every extension point here is
"a name resolves to one factory" (a suite's `scorer: levenshtein`, `--harness
mine`, `--gate bayes`, `--target myprovider/x`), so what is needed is a table of
names that knows where each came from (`skillopt plugins`), refuses a second
registration of a name, and imports a component only when it is used (a component
may be given as a `"module:attr"` string). Hooks call every implementation and
merge the results: the wrong shape for a lookup by name, and they would import
every plugin's components at start-up.

Invariants:
- Built-ins are registered first; a plugin can never replace a built-in, nor a
  name another plugin registered first (the later registration is refused and
  reported, the rest of that plugin still loads).
- A plugin that fails to load or register never breaks a run that does not use
  it: the failure is kept in `Registry.problems`, logged, and shown by
  `skillopt plugins`; its names stay unknown.
- Entry points are read once per process, on the first lookup of a name that is
  not built in, or when everything is listed. A lookup of a built-in name reads
  no entry point.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from skillopt.plugins.catalog import (
    BUILTIN,
    GROUP,
    KINDS,
    Entry,
    PluginError,
    Problem,
    Registry,
)


@dataclass(frozen=True)
class Listing:
    """What `skillopt plugins` shows: every component with its origin, and the
    plugins (or names) that could not be registered."""

    entries: list[Entry]
    problems: list[Problem]


def listing() -> Listing:
    reg = registry()
    entries = sorted(reg.entries(), key=lambda e: (KINDS.index(e.kind), e.origin != BUILTIN))
    return Listing(entries, list(reg.problems))


_REGISTRY: Registry | None = None
_REGISTRY_LOCK = threading.Lock()


def registry() -> Registry:
    """The process's registry, with the built-ins registered (plugins are read on
    first need)."""
    global _REGISTRY
    if _REGISTRY is None:
        with _REGISTRY_LOCK:
            if _REGISTRY is None:
                from skillopt.plugins import builtins

                reg = Registry()
                builtins.register(reg)
                _REGISTRY = reg
    return _REGISTRY


def reset() -> None:
    """Forget the registry: the next lookup registers the built-ins and reads the
    plugins again (tests that install a plugin mid-process)."""
    global _REGISTRY
    with _REGISTRY_LOCK:
        _REGISTRY = None


__all__ = [
    "BUILTIN",
    "GROUP",
    "KINDS",
    "Entry",
    "Listing",
    "PluginError",
    "Problem",
    "Registry",
    "listing",
    "registry",
]
