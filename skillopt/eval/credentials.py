"""Credentials checked before the first model call: every role a command uses that
reaches a provider's API (the target of a chat harness, the judge, an LLM
optimizer) must have its key, or the command refuses to start in one line naming the
variable and where the model came from:

    OPENAI_API_KEY is not set: needed by --target openai/gpt-4o-mini

Invariant: nothing is called, resolved or written before this check, and no
variable's value is read out. Objects passed in code in place of names, registered
models (`local/…`, `scripted/…`, a plugin's) and registered optimizers need no key
here; what a provider needs is decided in `skillopt.models.keys`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from skillopt.config import Settings
from skillopt.errors import MissingCredentials
from skillopt.suite.task import Suite


@dataclass(frozen=True)
class Use:
    """One model a command would call: its role, its name and where the name came
    from, as the user would recognise it."""

    role: str  # target | judge | optimizer
    model: str
    # (layer, where) as in `Settings.origins`, plus ("run", "run <id>") and ("text",
    # words shown as they are); None: unknown
    origin: tuple[str, str] | None = None

    def by(self) -> str:
        """`--target openai/x`, `SKILLOPT_TARGET=openai/x`, or `target openai/x (from
        skillopt.yaml)`."""
        layer, where = self.origin or ("", "")
        if layer == "flag":
            return f"{where} {self.model}"
        if layer == "env":
            return f"{where}={self.model}"
        if layer in ("file", "suite"):
            shown = _short(where)
            where = f"the defaults of {shown}" if layer == "suite" else shown
        return f"{self.role} {self.model}" + (f" (from {where})" if where else "")


def uses(
    suite: Suite,
    settings: Settings,
    *,
    training: bool = False,
    passed: Mapping[str, object | None] | None = None,
    origin: str | None = None,
) -> list[Use]:
    """The models a command on `suite` calls by name under `settings`: the target
    (when the harness calls it itself), the judge (when a task is judged) and, when
    `training`, the optimizer. `passed` holds the objects given in place of names
    (`target`, `harness`, `judge`, `optimizer`): a role with one is left out.
    `origin` says where settings without recorded origins came from (`run <id>`
    for a resumed run)."""
    from skillopt.harness import takes_model

    def where(role: str) -> tuple[str, str] | None:
        return settings.origins.get(role) or (("run", origin) if origin else None)

    given = {role for role, obj in (passed or {}).items() if obj is not None}
    found: list[Use] = []
    target = not given & {"target", "harness"}
    if target and settings.target and takes_model(settings.harness):
        found.append(Use("target", settings.target, where("target")))
    if "judge" not in given:
        judged = [(t, s) for t in suite.tasks for s in t.scorer.leaves() if s.name == "judge"]
        by_item = next(((t, s) for t, s in judged if s.params.model), None)
        if by_item is not None:
            item, scorer = by_item
            found.append(
                Use(
                    "judge",
                    str(scorer.params.model),
                    ("text", f"the scorer of item {item.id!r} in {_short(str(suite.path))}"),
                )
            )
        elif judged and settings.judge:
            found.append(Use("judge", settings.judge, where("judge")))
        elif judged and suite.judge:
            found.append(Use("judge", suite.judge, ("text", _short(str(suite.path)))))
    optimizer = training and "optimizer" not in given
    if optimizer and settings.optimizer and not _registered_optimizer(settings.optimizer):
        found.append(Use("optimizer", settings.optimizer, where("optimizer")))
    return found


def missing(
    suite: Suite,
    settings: Settings,
    *,
    training: bool = False,
    passed: Mapping[str, object | None] | None = None,
    origin: str | None = None,
    env: Mapping[str, str] | None = None,
) -> list[str]:
    """What `require` would refuse, one line per missing variable naming every use
    that needs it (the dry run shows them as warnings); [] when every key is there.
    The arguments are those of `uses`."""
    from skillopt.models.keys import describe
    from skillopt.models.keys import missing as missing_keys
    from skillopt.models.resolve import is_provider_model

    needs: dict[tuple[str, ...], list[Use]] = {}
    for use in uses(suite, settings, training=training, passed=passed, origin=origin):
        if not is_provider_model(use.model):
            continue
        for group in missing_keys(use.model, settings.model_settings(use.model), env):
            needs.setdefault(group, []).append(use)
    return [
        f"{describe(group)} is not set: needed by {_and([u.by() for u in users])}"
        for group, users in needs.items()
    ]


def require(
    suite: Suite,
    settings: Settings,
    *,
    training: bool = False,
    passed: Mapping[str, object | None] | None = None,
    origin: str | None = None,
) -> None:
    """Refuse to start, with `MissingCredentials` (exit code 2, one line), when a
    model the command would call has no key. The arguments are those of `uses`."""
    lines = missing(suite, settings, training=training, passed=passed, origin=origin)
    if lines:
        raise MissingCredentials("; ".join(lines))


def _registered_optimizer(name: str) -> bool:
    from skillopt.plugins import registry

    return registry().find("optimizer", name) is not None


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _short(path: str) -> str:
    """`path` relative to the working directory when it is inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path(os.getcwd()).resolve()))
    except (ValueError, OSError):
        return path
