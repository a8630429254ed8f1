"""The catalogue of components: one `Entry` per (kind, name), where each came from,
and the `Registry` that holds them, refuses a second registration of a name and
loads a component only when it is looked up (the process's registry, with the
built-ins registered, is `skillopt.plugins.registry()`).

Invariant: a name is registered once; a plugin's failure is a `Problem` kept in
the registry, never an exception that breaks a run not using it.
"""

from __future__ import annotations

import importlib
import logging
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import attrgetter
from types import BuiltinFunctionType, FunctionType, MethodType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from skillopt.errors import InputError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint  # slow to import: only when plugins are read

log = logging.getLogger("skillopt")

GROUP = "skillopt"
KINDS = ("scorer", "harness", "optimizer", "gate", "model")
BUILTIN = "skillopt (built-in)"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_NAMED_BY_THEMSELVES = (type, FunctionType, BuiltinFunctionType, MethodType)


class PluginError(InputError):
    """A component that is registered but cannot be loaded or is misdeclared."""


@dataclass
class Entry:
    """One registered component. `ref` is the component itself, or a
    `"module:attr"` string imported on first use."""

    kind: str
    name: str
    ref: Any
    origin: str
    help: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    _loaded: Any = field(default=None, repr=False)

    def load(self) -> Any:
        """The component, importing it on first use; `PluginError` when it cannot be."""
        if self._loaded is not None:
            return self._loaded
        ref = self.ref
        if isinstance(ref, str):
            module_name, _, attr = ref.partition(":")
            try:
                obj: Any = importlib.import_module(module_name)
                if attr:  # a dotted path inside the module: "mod:Class.build"
                    obj = attrgetter(attr)(obj)
            except Exception as exc:  # an import error inside a plugin is its own
                raise PluginError(
                    f"the {self.kind} {self.name!r} from {self.origin} cannot be loaded "
                    f"({ref}): {type(exc).__name__}: {exc}"
                ) from None
            ref = obj
        self._loaded = ref
        return ref

    def check_built(self, built: Any, contract: type[Any], needs: str) -> Any:
        """`built` (what this component's factory returned) when it meets `contract`;
        else a `PluginError` naming the component, its origin and what it lacks."""
        if not isinstance(built, contract):
            label = "model provider" if self.kind == "model" else self.kind
            raise PluginError(
                f"the {label} {self.name!r} from {self.origin} built {built!r}, which {needs}"
            )
        return built

    @property
    def where(self) -> str:
        """Where the component lives, for listings."""
        ref = self.ref
        if isinstance(ref, str):
            return ref
        # a class or a function is named by itself, anything else by its class
        named = ref if isinstance(ref, _NAMED_BY_THEMSELVES) else type(ref)
        module, qual = named.__module__ or "", named.__qualname__
        return f"{module}:{qual}" if module else qual


@dataclass(frozen=True)
class Problem:
    """A plugin (or one of its names) that could not be registered."""

    origin: str
    message: str


class Registry:
    """The name tables. A plugin's `register(registry)` calls the methods below;
    skillopt looks names up with `find` / `load` / `names`."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], Entry] = {}
        self.problems: list[Problem] = []
        self._origin = BUILTIN
        self._plugins_read = False
        self._lock = threading.RLock()

    # -- what a plugin calls ---------------------------------------------------------------
    def scorer(self, name: str, scorer: Any, *, help: str = "") -> None:
        """A scorer class (a subclass of `skillopt.Scorer` whose `name` is `name`),
        used in a suite as `scorer: name` or `{type: name, ...params}`."""
        self._add("scorer", name, scorer, help)

    def harness(
        self,
        name: str,
        factory: Any,
        *,
        settings: Any = None,
        section: str | None = None,
        takes_model: bool = False,
        help: str = "",
    ) -> None:
        """A harness factory `(settings, target, keep_dir) -> Harness`, chosen with
        `--harness name`. With `settings` (a pydantic model class), the harness has
        its own settings section `section` (default: the name with `-` as `_`) in
        skillopt.yaml and a suite's `defaults:`, validated like every other setting;
        the factory reads it with `settings.section(section, Model)`. With
        `takes_model`, `target` is the resolved target `Model`; otherwise it is None
        and the harness hands `settings.target` (a name) to its own program."""
        options: dict[str, Any] = {"takes_model": takes_model}
        if settings is not None:
            options["settings"] = settings
            options["section"] = section or name.replace("-", "_")
        self._add("harness", name, factory, help, options)

    def optimizer(self, name: str, factory: Any, *, help: str = "") -> None:
        """An optimizer factory `(settings, meter) -> Optimizer`, chosen with
        `--optimizer name`. `meter`, when given, must be told of every model call the
        optimizer makes (`skillopt.models.MeteredModel` does it). A name that is not
        registered is taken as a model name: the LLM optimizer with that model."""
        self._add("optimizer", name, factory, help)

    def gate(self, name: str, factory: Any, *, help: str = "") -> None:
        """A gate factory `(settings) -> Gate`, chosen with `--gate name`."""
        self._add("gate", name, factory, help)

    def model_provider(self, prefix: str, factory: Any, *, help: str = "") -> None:
        """A model factory `(name, model_settings) -> Model` for every model name
        `prefix/...` (`--target prefix/x`, `--optimizer prefix/x`, a judge). Names
        of no registered provider go to the providers' APIs (`models.resolve`)."""
        if "/" in prefix:
            raise PluginError(f"a model provider prefix has no '/': {prefix!r}")
        self._add("model", prefix, factory, help)

    # -- lookups -----------------------------------------------------------------------------
    def find(self, kind: str, name: str) -> Entry | None:
        """The entry registered as `name`, reading the plugins first if it is not
        built in."""
        entry = self._entries.get((kind, name))
        if entry is None and not self._plugins_read:
            self.read_plugins()
            entry = self._entries.get((kind, name))
        return entry

    def load(self, kind: str, name: str) -> Any:
        """The component registered as `name`; `KeyError` when there is none."""
        entry = self.find(kind, name)
        if entry is None:
            raise KeyError(name)
        return entry.load()

    def names(self, kind: str) -> list[str]:
        """Every name of `kind`, built-ins first, plugins included."""
        self.read_plugins()
        return [name for (k, name) in self._entries if k == kind]

    def entries(self) -> list[Entry]:
        self.read_plugins()
        return list(self._entries.values())

    def sections(self) -> dict[str, Entry]:
        """Settings sections that harnesses declared, by section name."""
        self.read_plugins()
        return {
            e.options["section"]: e
            for e in self._entries.values()
            if e.kind == "harness" and "section" in e.options
        }

    def unregister(self, kind: str, name: str) -> None:
        """Forget a name (tests, a plugin being reloaded)."""
        self._entries.pop((kind, name), None)

    # -- loading -----------------------------------------------------------------------------
    def read_plugins(self) -> None:
        """Register every installed plugin (once per process)."""
        with self._lock:
            if self._plugins_read:
                return
            self._plugins_read = True
            for ep in _entry_points():
                dist = ep.dist
                origin = f"{dist.metadata['Name']} {dist.version}" if dist is not None else ep.value
                self.add_plugin(ep.load, origin)

    def add_plugin(self, load: Callable[[], Any], origin: str) -> None:
        """Call a plugin's `register` (what `load()` returns: the function, or a
        module holding one) with this registry; a failure is kept as a problem."""
        before = set(self._entries)
        try:
            target = load()
            register = target.register if isinstance(target, _Registers) else target
            if not callable(register):
                raise TypeError(f"{target!r} is neither a function nor a module with register()")
            with self._registering(origin):
                register(self)
        except Exception as exc:  # a broken plugin must not break skillopt
            for key in set(self._entries) - before:  # nothing half-registered stays
                del self._entries[key]
            message = f"could not be loaded: {type(exc).__name__}: {exc}"
            self.problems.append(Problem(origin, message))
            log.warning("plugin %s %s", origin, message)

    @contextmanager
    def _registering(self, origin: str) -> Iterator[None]:
        previous, self._origin = self._origin, origin
        try:
            yield
        finally:
            self._origin = previous

    def _add(
        self, kind: str, name: str, ref: Any, help: str, options: dict[str, Any] | None = None
    ) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise PluginError(
                f"a {kind} name is lower-case letters, digits, '_', '-' and '.': {name!r}"
            )
        if ref is None:
            raise PluginError(f"the {kind} {name!r} has no component")
        existing = self._entries.get((kind, name))
        if existing is not None:
            message = f"the {kind} {name!r} is already registered by {existing.origin}; ignored"
            if self._origin == BUILTIN:
                raise PluginError(message)
            self.problems.append(Problem(self._origin, message))
            log.warning("plugin %s: %s", self._origin, message)
            return
        self._entries[(kind, name)] = Entry(kind, name, ref, self._origin, help, options or {})


@runtime_checkable
class _Registers(Protocol):
    """What an entry point may name besides the function: a module (or any object)
    holding `register`."""

    register: Callable[[Registry], object]


def _entry_points() -> list[EntryPoint]:
    from importlib.metadata import entry_points  # read on first need, not at import

    seen: set[tuple[str, str]] = set()
    out: list[EntryPoint] = []
    for ep in entry_points(group=GROUP):
        if (ep.name, ep.value) not in seen:  # a distribution found twice on sys.path
            seen.add((ep.name, ep.value))
            out.append(ep)
    return out
