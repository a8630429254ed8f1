"""Codex's own configuration: the user's config.toml as codex reads it (the active
profile laid over the top level), and the config.toml of a private CODEX_HOME that
keeps only its provider settings, written back as TOML.

Invariant: a config.toml codex itself could not read stops the run before any task
(`HarnessError`); a missing one is an empty configuration.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from skillopt.errors import HarnessError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CONFIG = "config.toml"
# The settings of a user's config.toml that say which model runs and how codex reaches
# and authenticates with its provider: all a private CODEX_HOME keeps.
PROVIDER_KEYS = (
    "model",
    "model_provider",
    "model_providers",
    "model_reasoning_effort",
    "model_reasoning_summary",
    "model_verbosity",
    "model_context_window",
    "model_max_output_tokens",
    "model_auto_compact_token_limit",
    "model_supports_reasoning_summaries",
    "preferred_auth_method",
    "forced_login_method",
    "forced_chatgpt_workspace_id",
    "chatgpt_base_url",
)


def read_config(path: Path) -> dict[str, Any]:
    """A codex config.toml, the active `profile`'s keys laid over the top level; {}
    when the file does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{path}: codex's config cannot be read: {exc}") from None
    try:
        config: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HarnessError(
            f"{path}: codex's config is not valid TOML ({exc}); codex would refuse it too"
        ) from None
    profiles = config.get("profiles")
    active = profiles.get(config.get("profile")) if isinstance(profiles, dict) else None
    if isinstance(active, dict):
        config = {**config, **active}
    return config


def provider_config(config: dict[str, Any]) -> dict[str, Any]:
    """What a private CODEX_HOME's config.toml holds: the provider settings of the
    user's; no analytics and no remote plugins (codex 0.171 otherwise contacts
    ab.chatgpt.com, chatgpt.com and github.com on every run), and a connection that
    cannot be made fails the turn instead of being retried without end."""
    kept = {k: config[k] for k in PROVIDER_KEYS if k in config}
    kept["analytics"] = {"enabled": False}
    kept["features"] = {"plugins": False, "unbounded_connection_retries": False}
    return kept


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def to_toml(data: dict[str, Any], prefix: tuple[str, ...] = ()) -> str:
    """`data` (as tomllib read it) written back as TOML: values first, then each
    nested table under its dotted header."""
    lines, tables = [], []
    for key, value in data.items():
        if isinstance(value, dict):
            tables.append((key, value))
        else:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    out = "\n".join(lines)
    for key, value in tables:
        path = (*prefix, key)
        body = to_toml(value, path)
        header = "[" + ".".join(_toml_key(k) for k in path) + "]"
        out += ("\n\n" if out else "") + header + ("\n" + body if body else "")
    return out + ("\n" if out and not prefix else "")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key)


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value))  # dates and times: codex's provider keys have none
