"""The few exception types skillopt raises, each with a message that names the fix.

Invariant: a `SkilloptError` message is one line a user can act on; the CLI prints
it as is and exits with `exit_code`. Per-task failures (a model timeout, a bad
reply) are *outcomes* recorded as data, never these exceptions, unless they are
systemic (a missing binary, an unknown model) and no task could succeed.
`first_error` words what pydantic rejected for such a message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class SkilloptError(Exception):
    """Base error: `str(err)` is the whole message shown to the user. Messages often
    quote what a provider or program said, so they are made safe on construction:
    no known secret value and no character that cannot be printed or stored.
    `details` are lines printed under the message (the lint problems of a skill)."""

    exit_code = 1
    details: tuple[str, ...] = ()

    def __init__(self, message: object = "", *args: object):
        from skillopt._util.text import safe

        super().__init__(safe(str(message)), *args)


class InputError(SkilloptError):
    """A file or flag the user wrote is wrong (suite, skill, config, model name).

    The message names the file, the item and the field.
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        path: object = None,
        item: str | None = None,
        field: str | None = None,
        line: int | None = None,
    ):
        self.path = path
        self.item = item
        self.field = field
        self.line = line
        super().__init__(_locate(message, path, item, field, line))


def _locate(
    message: str, path: object, item: str | None, field: str | None, line: int | None
) -> str:
    where = []
    if path is not None:
        where.append(f"{path}:{line}" if line else str(path))
    if item is not None:
        where.append(f"item {item!r}")
    if field is not None:
        # a setting or flag on its own reads best bare ("target: unknown model …")
        where.append(f"field {field!r}" if where else field)
    return ": ".join([*where, message]) if where else message


def first_error(exc: ValidationError, messages: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The first problem pydantic found, as (the dotted path of its field, its
    message): `("agent.timeout", "Input should be a valid number")`. The path is ""
    for the object as a whole. `messages` rewords errors by their pydantic type, e.g.
    `{"extra_forbidden": "unknown setting"}`, where pydantic's own wording would not
    tell a user what to fix."""
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"])
    # a validator's own words, without the prefix pydantic puts before them
    message = str(err["msg"]).removeprefix("Value error, ")
    return field, (messages or {}).get(err["type"], message)


class MissingCredentials(InputError):
    """A model the command would call has no key: the variable it needs is not set
    (`OPENAI_API_KEY is not set: needed by --target openai/gpt-4o-mini`). Raised
    before the first model call, so nothing ran and nothing was paid."""

    def __init__(self, message: str):
        super().__init__(message)


class ModelError(SkilloptError):
    """A model call failed after its retries (provider error, timeout, bad auth).

    For one task this becomes an *unscored* rollout, never a score of 0.
    `retryable` says whether a later run may succeed by simply trying again.
    """

    def __init__(
        self, message: str, *, kind: str = "error", retryable: bool = True, attempts: int = 1
    ):
        self.kind = kind
        self.retryable = retryable
        self.attempts = attempts  # provider requests made before giving up
        super().__init__(message)


class ScorerError(SkilloptError):
    """A scorer could not judge an answer (a judge model failed, a verifier is missing).

    Recorded as an unscored rollout: the answer was neither right nor wrong.
    """


class BadSkill(InputError):
    """The skill has lint errors, so nothing is scored with it (no model is called)."""

    def __init__(self, message: str, problems: Sequence[object], *, path: object = None):
        self.problems = problems
        self.details = tuple(str(p) for p in problems)
        super().__init__(message, path=path)


class HarnessError(SkilloptError):
    """The harness cannot run at all (missing binary, unusable configuration)."""

    exit_code = 2


class Interrupted(SkilloptError):
    """The user stopped the run (Ctrl-C); the message says how to continue."""

    exit_code = 130


class NothingScored(SkilloptError):
    """Not one rollout could be scored: every task failed the same way (a key, a
    quota, a server), so training would only spend money on noise."""


class SystemicFailure(HarnessError):
    """Task after task failed the same way (bad key, exhausted quota, missing
    program): the run stops instead of collecting unscored rollouts. The finished
    rollouts stay in the store."""
