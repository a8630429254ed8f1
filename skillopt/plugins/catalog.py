"""The catalogue of components: one `Entry` per (kind, name), where each came from,
and the `Registry` that holds them, refuses a second registration of a name and
loads a component only when it is looked up (the process's registry, with the
built-ins registered, is `skillopt.plugins.registry()`).

Invariants:
- A name is registered once; a plugin's failure is a `Problem` kept in the
  registry, never an exception that breaks a run not using it.
- A plugin's own code (its `register`, the import of a component it named) runs
  in a thread of its own under a time bound (`SKILLOPT_PLUGIN_SECONDS`, default
  10): whatever it raises, `SystemExit` and `KeyboardInterrupt` included, is the
  plugin's failure and never the command's; one that does not return in time is
  reported and left behind. It registers into a table of its own, merged into the
  registry only when `register` returned, so nothing a late or failed plugin does
  reaches the registry.
- A plugin's factory that raises anything but an `InputError` (a gate, harness,
  optimizer or model provider being built) is a `PluginError` naming it.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import threading
from collections.abc import Callable
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
PLUGIN_SECONDS = 10.0  # a plugin's register, or a component's import, may take this long


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

            def fetch() -> Any:
                obj: Any = importlib.import_module(module_name)
                return attrgetter(attr)(obj) if attr else obj  # "mod:Class.build"

            if self.origin == BUILTIN:
                ref = fetch()  # our own modules: a failure here is a bug, shown as one
            else:
                ran = bounded(fetch, f"import {ref}")
                if ran.failure is not None:
                    raise PluginError(
                        f"the {self.kind} {self.name!r} from {self.origin} cannot be loaded "
                        f"({ref}): {ran.failure}"
                    )
                ref = ran.value
        self._loaded = ref
        return ref

    def build(self, contract: type[Any], needs: str, *args: Any) -> Any:
        """What this component's factory builds from `args`, checked against
        `contract` (`check_built`); a failure as `call` says."""
        return self.check_built(self.call(self.load(), *args), contract, needs)

    def call(
        self,
        code: Callable[..., Any],
        *args: Any,
        passes: tuple[type[BaseException], ...] = (InputError,),
    ) -> Any:
        """`code(*args)`, where `code` is this component's own (its factory, its
        class). A plugin's code that raises anything but `passes` (by default an
        `InputError`: the plugin's own word on bad settings, already a clear
        message) is a `PluginError` naming it; a built-in's error is its own."""
        if self.origin == BUILTIN:
            return code(*args)
        try:
            return code(*args)
        except passes:
            raise
        except (Exception, SystemExit) as exc:
            raise PluginError(
                f"the {self._label} {self.name!r} from {self.origin} failed to build: "
                f"{_described(exc)}"
            ) from None

    @property
    def _label(self) -> str:
        return "model provider" if self.kind == "model" else self.kind

    def check_built(self, built: Any, contract: type[Any], needs: str) -> Any:
        """`built` (what this component's factory returned) when it meets `contract`;
        else a `PluginError` naming the component, its origin and what it lacks."""
        if not isinstance(built, contract):
            raise PluginError(
                f"the {self._label} {self.name!r} from {self.origin} built {built!r}, which {needs}"
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

    def __init__(self, *, origin: str = BUILTIN) -> None:
        self._entries: dict[tuple[str, str], Entry] = {}
        self.problems: list[Problem] = []
        self._origin = origin
        # a plugin's own table (`add_plugin`) reads no other plugin
        self._plugins_read = origin != BUILTIN
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
        module holding one) with a table of its own, in a thread under the time
        bound; merge what it registered when it returned, else keep a problem."""
        own = Registry(origin=origin)

        def register() -> None:
            target = load()
            call = target.register if isinstance(target, _Registers) else target
            if not callable(call):
                raise TypeError(f"{target!r} is neither a function nor a module with register()")
            call(own)

        ran = bounded(register, f"plugin {origin}")
        if ran.failure is not None:  # a broken plugin must not break skillopt
            self._problem(origin, f"could not be loaded: {ran.failure}")
            return
        self.problems.extend(own.problems)
        for key, entry in own._entries.items():
            existing = self._entries.get(key)
            if existing is not None:
                kind, name = key
                self._problem(
                    origin,
                    f"the {kind} {name!r} is already registered by {existing.origin}; ignored",
                )
            else:
                self._entries[key] = entry

    def _problem(self, origin: str, message: str) -> None:
        self.problems.append(Problem(origin, message))
        log.warning("plugin %s: %s", origin, message)

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
            self._problem(self._origin, message)
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


@dataclass(frozen=True)
class Ran:
    """What a bounded call (`bounded`) gave: its value, or why it gave none."""

    value: Any = None
    failure: str | None = None  # "RuntimeError: boom", "SystemExit: 7", "did not finish …"


def plugin_seconds() -> float:
    """The time bound on a plugin's own code (`SKILLOPT_PLUGIN_SECONDS`)."""
    raw = os.environ.get("SKILLOPT_PLUGIN_SECONDS", "")
    try:
        value = float(raw) if raw.strip() else PLUGIN_SECONDS
    except ValueError:
        raise InputError(
            f"SKILLOPT_PLUGIN_SECONDS must be a number of seconds, not {raw!r}"
        ) from None
    return value if value > 0 else PLUGIN_SECONDS


def bounded(call: Callable[[], Any], what: str) -> Ran:
    """Run a plugin's `call` in a daemon thread of its own for at most
    `plugin_seconds()`. Every exception it raises is its failure: in its own thread,
    `SystemExit` or `KeyboardInterrupt` can only have come from the plugin (the
    user's Ctrl-C reaches the main thread, which is waiting in `join` and so stops
    as it should). A call still running at the bound is left behind: the thread
    is a daemon, and the caller uses nothing it may still produce."""
    box: list[Ran] = []

    def run() -> None:
        try:
            box.append(Ran(value=call()))
        except BaseException as exc:  # whatever a plugin raises is its own
            box.append(Ran(failure=_described(exc)))

    seconds = plugin_seconds()
    worker = threading.Thread(target=run, name=what, daemon=True)
    worker.start()
    worker.join(seconds)
    if not box:
        return Ran(failure=f"did not finish within {seconds:g} s ({what}); left behind")
    return box[0]


def _described(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
