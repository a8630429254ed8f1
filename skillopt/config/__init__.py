"""Run settings, resolved along one path: defaults < project file < suite
`defaults:` < `SKILLOPT_*` environment < command-line flags. The sections of
the harnesses and of each model are in `config.sections`.

Invariants: every layer is validated by the same pydantic model (`extra="forbid"`,
so a typo fails loudly, naming the file and key); secrets never live here — a
model's key is named by the environment variable that holds it (`api_key_env`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from skillopt._util.layers import find_upwards, merge_layer, read_yaml_mapping
from skillopt.config.sections import (
    AgentSettings,
    ClaudeCodeSettings,
    CodexSettings,
    CommandSettings,
    ModelSettings,
)
from skillopt.errors import InputError, first_error

PROJECT_FILE = "skillopt.yaml"
M = TypeVar("M", bound=BaseModel)


class RaySettings(BaseModel):
    """`ray:` — the cluster `executor: ray` runs rollouts on."""

    model_config = ConfigDict(extra="forbid")
    address: str = Field(
        "auto",
        description="'auto' (the cluster `ray start` made on this machine), "
        "'ray://host:10001' (a remote cluster's client server), 'local' (start a private "
        "cluster in this process for the run)",
    )
    num_cpus_per_rollout: float = Field(1.0, ge=0, description="CPUs each rollout reserves")
    runtime_env: dict[str, Any] = Field(
        default_factory=dict,
        description="Ray's runtime_env for the workers (env_vars, pip, working_dir, …)",
    )
    max_retries: int = Field(
        3,
        ge=0,
        description="times Ray runs a rollout again whose worker or node died; after "
        "that it is unscored",
    )


class Settings(BaseModel):
    """Everything a command needs besides its positional arguments."""

    model_config = ConfigDict(extra="forbid")
    target: str | None = None
    harness: str = "chat"
    judge: str | None = None
    concurrency: int = Field(8, ge=1, le=1024)
    samples: int = Field(1, ge=1)
    executor: Literal["local", "ray"] = Field(
        "local", description="where rollouts run: this machine's threads, or a Ray cluster"
    )
    ray: RaySettings = Field(default_factory=RaySettings)
    store: str = "runs/rollouts.sqlite"
    models: dict[str, ModelSettings] = Field(default_factory=dict)
    # training (skillopt train)
    part: Literal["body", "description", "both"] = Field(
        "body",
        description="what training changes: the body (on a task suite), the frontmatter's "
        "description (on a trigger suite), or both (on a task suite naming its trigger "
        "suite with `triggers:`)",
    )
    optimizer: str | None = None
    optimizer_concurrency: int = Field(
        4,
        ge=1,
        le=256,
        description="optimizer calls run at once (a step's reflections); independent of "
        "`concurrency`, which bounds rollouts",
    )
    epochs: int = Field(4, ge=1)
    batch_size: int = Field(40, ge=1)
    minibatch_size: int = Field(8, ge=1)
    lr: int = Field(4, ge=1, description="maximum edits per step")
    min_lr: int = Field(2, ge=1)
    schedule: Literal["constant", "linear", "cosine"] = "cosine"
    max_edit_lines: int = Field(8, ge=1, description="non-blank lines of content one edit may add")
    max_step_lines: int = Field(24, ge=1, description="non-blank lines all edits of a step may add")
    gate: str = Field(
        "strict", description="strict, margin, paired, no-regression, or a plugin's gate"
    )
    min_delta: float = Field(0.0, ge=0)
    max_regressions: int | None = Field(
        None,
        ge=0,
        description="validation tasks a candidate may turn from pass to fail (as in "
        "`skillopt validate`): the no-regression gate allows 0 when unset; with strict, "
        "margin or paired it applies only when set",
    )
    gate_full: bool = Field(
        False,
        description="score every validation task of every candidate (no racing); the "
        "decisions are the same either way",
    )
    alpha: float = Field(0.05, gt=0, lt=1)
    seed: int = 0
    run_dir: str = "runs"
    slow_update: bool = True
    stall_patience: int = Field(
        3,
        ge=0,
        description="stop training early after this many steps in a row that showed the "
        "optimizer the same failing training tasks of the same skill and gave no better "
        "candidate; 0: never",
    )
    # spend control (`skillopt.rollouts.budget`): None is no limit
    budget_usd: float | None = Field(
        None, gt=0, description="USD the run may spend, every role together (train, eval, validate)"
    )
    max_target_rollouts: int | None = Field(
        None, ge=0, description="target rollouts the run may pay for (store hits are free)"
    )
    max_optimizer_calls: int | None = Field(
        None, ge=0, description="optimizer calls the run may make"
    )
    time_limit: float | None = Field(
        None, description="wall-clock limit of one invocation: seconds, or e.g. '45m', '2h'"
    )
    allow_long_skill: bool = Field(
        False,
        description="score a skill longer than the target's context window (or, when the "
        "window is unknown, than 1,000,000 tokens); refused otherwise",
    )
    strict_splits: bool = Field(
        False,
        description="refuse a suite whose val or test items nearly repeat items of an "
        "earlier split (`skillopt.suite.hygiene`) instead of warning",
    )
    allow_unpriced: bool = Field(
        False,
        description="with budget_usd, run even when a model's price is unknown (the budget "
        "then covers the priced calls only)",
    )
    # agent harnesses
    agent: AgentSettings = Field(default_factory=AgentSettings)
    claude_code: ClaudeCodeSettings = Field(default_factory=ClaudeCodeSettings)
    codex: CodexSettings = Field(default_factory=CodexSettings)
    command: CommandSettings = Field(default_factory=CommandSettings)
    # plugin harnesses' own sections (`<section>:` in skillopt.yaml), validated by the
    # settings model the plugin registered; read with `section(name, Model)`
    sections: dict[str, dict[str, Any]] = Field(default_factory=dict)

    # what resolving the settings decided on the user's behalf, to be said once
    _notices: list[str] = PrivateAttr(default_factory=list)
    # where each model role's name came from, to name it in messages: (layer, where)
    _origins: dict[str, tuple[str, str]] = PrivateAttr(default_factory=dict)

    def model_post_init(self, context: Any) -> None:
        if isinstance(context, _Resolved):  # built by `resolve_settings`
            self._notices = list(context.notices)
            self._origins = dict(context.origins)

    @property
    def notices(self) -> list[str]:
        return self._notices

    @property
    def origins(self) -> dict[str, tuple[str, str]]:
        """Where `target`, `judge` and `optimizer` were set, when resolved from layers:
        ("flag", "--target"), ("env", "SKILLOPT_TARGET"), ("file", path of the
        project file) or ("suite", path of the suite whose `defaults:` set it)."""
        return self._origins

    def model_settings(self, name: str) -> ModelSettings:
        return self.models.get(name) or ModelSettings()

    def section(self, name: str, model: type[M]) -> M:
        """A plugin harness's settings section, as its settings model."""
        return model.model_validate(self.sections.get(name) or {})

    @field_validator("time_limit", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> float | None:
        if value is None:
            return None
        from skillopt.rollouts.budget import parse_duration

        return parse_duration(value)

    @field_validator("min_lr")
    @classmethod
    def _min_lr_within_lr(cls, value: int, info: ValidationInfo) -> int:
        # only a min_lr given is checked (a default one follows lr down, `edit_budget`);
        # one layer alone is not (a later layer may raise lr): the merged result is
        lr = info.data.get("lr")
        if not isinstance(info.context, _Layer) and isinstance(lr, int) and value > lr:
            raise ValueError(
                f"min_lr ({value}) is above lr ({lr}): the edits a step may apply decay "
                "from lr down to min_lr"
            )
        return value

    @field_validator("gate")
    @classmethod
    def _known_gate(cls, value: str) -> str:
        from skillopt.plugins import registry

        reg = registry()
        if reg.find("gate", value) is None:
            raise ValueError(
                f"unknown gate {value!r}; choose one of: {', '.join(reg.names('gate'))}"
            )
        return value


@dataclass(frozen=True)
class _Resolved:
    """What `resolve_settings` hands to the `Settings` it builds besides the values."""

    notices: list[str]
    origins: dict[str, tuple[str, str]]


class _Layer:
    """The validation context of one layer on its own (`_checked`)."""


ROLES = ("target", "judge", "optimizer")  # settings that name a model (or an optimizer)

# the settings the environment may set, each as SKILLOPT_<KEY> (SKILLOPT_RUN_DIR=…)
_ENV_KEYS = (
    "target harness judge concurrency samples executor store optimizer run_dir seed "
    "budget_usd time_limit"
).split()
_ENV = {f"SKILLOPT_{key.upper()}": key for key in _ENV_KEYS}


def resolve_settings(
    flags: Mapping[str, Any] | None = None,
    *,
    suite_defaults: Mapping[str, Any] | None = None,
    suite_path: Path | None = None,
    project_file: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Merge the layers (later wins) and validate the result."""
    environ: Mapping[str, str] = os.environ if env is None else env
    merged: dict[str, Any] = {}
    origins: dict[str, tuple[str, str]] = {}

    def came_from(layer: Mapping[str, Any], kind: str, where: str | None = None) -> None:
        for key in ROLES:
            if layer.get(key):
                origins[key] = (kind, where or f"--{key}")  # a flag is named after its key

    project_file = project_file if project_file is not None else find_upwards(PROJECT_FILE)
    if project_file is not None:
        data = _checked(read_yaml_mapping(project_file, "settings"), project_file)
        for key in ("store", "run_dir"):  # paths in the file are relative to it
            if key in data and not Path(data[key]).is_absolute():
                data[key] = str(project_file.parent / data[key])
        _merge(merged, data)
        came_from(data, "file", str(project_file))
    suite_target = None
    if suite_defaults:
        where = f"{suite_path}: defaults" if suite_path else "suite defaults"
        layer = _checked(dict(suite_defaults), where)
        _merge(merged, layer)
        came_from(layer, "suite", str(suite_path or "the suite"))
        suite_target = suite_defaults.get("target")
    for var, key in _ENV.items():
        if environ.get(var):
            merged[key] = environ[var]
            came_from({key: environ[var]}, "env", var)
    _merge(merged, {k: v for k, v in (flags or {}).items() if v is not None})
    came_from(flags or {}, "flag")
    notices: list[str] = []
    target = merged.get("target")
    if (
        target is not None
        and target == suite_target
        and merged.get("harness") in CLI_HARNESSES
        and str(target).split("/", 1)[0] in SELF_RUN_PROVIDERS
        and not (flags or {}).get("target")
    ):
        # a suite written for the chat harness names a model skillopt runs itself; an
        # agent CLI cannot, so it runs its own default model instead
        del merged["target"]
        notices.append(
            f"the suite's default target {target!r} is a model skillopt runs itself, "
            f"which the {merged['harness']} harness cannot hand to its CLI: using the "
            "CLI's own default model (pass --target to choose one)"
        )
    known = {k: v for k, v in origins.items() if merged.get(k)}
    try:
        # what was decided and where names came from are given at construction
        return Settings.model_validate(merged, context=_Resolved(notices, known))
    except ValidationError as exc:
        field, msg = first_error(exc)
        raise InputError(f"invalid setting: {msg}", field=field) from None


CLI_HARNESSES = ("claude-code", "codex")  # hand the target to a CLI as its --model
SELF_RUN_PROVIDERS = ("local", "scripted")  # models skillopt runs itself, not a CLI


SECTIONS = ("agent", "claude_code", "codex", "command")  # merged key by key across layers


_merge = partial(merge_layer, by_name=("models", "sections"), by_key=SECTIONS)


def _checked(data: dict[str, Any], where: object) -> dict[str, Any]:
    """One layer as written, validated there (so an error names `where`), with the
    sections of plugin harnesses moved under `sections` (`skillopt.plugins.sections`;
    the plugins are read only when a key is not one of ours)."""
    unknown = [k for k in data if k not in Settings.model_fields]
    if unknown:
        from skillopt.plugins.sections import lift_sections

        data = lift_sections(data, unknown, where)
    try:
        Settings.model_validate(data, context=_Layer())
    except ValidationError as exc:
        field, msg = first_error(exc, {"extra_forbidden": "unknown setting"})
        raise InputError(msg, path=where, field=field) from None
    return data


__all__ = [
    "PROJECT_FILE",
    "AgentSettings",
    "ClaudeCodeSettings",
    "CodexSettings",
    "CommandSettings",
    "ModelSettings",
    "RaySettings",
    "Settings",
    "resolve_settings",
]
