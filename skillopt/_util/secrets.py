"""Secret values skillopt knows, and `scrub`, which blanks them out of any text.

Invariant: no value skillopt knows to be secret is stored (rollout store, run
files, git) or printed. Known secrets are the values of environment variables
whose names look secret (`*_API_KEY`, `*_TOKEN`, `*_SECRET*`, `*PASSWORD*`, …),
keys read through a model's `api_key_env`, and header values in a model's
`params`, registered with `register` when they are read. Values shorter than
`MIN_LENGTH` are not treated as secrets: blanking "1" or "true" everywhere would
garble text and hide nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

MASK = "***"
MIN_LENGTH = 8
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.I)
HEADER_KEYS = ("headers", "extra_headers", "default_headers")

_registered: set[str] = set()
_lock = threading.Lock()
_cache: tuple[frozenset[str], re.Pattern[str] | None] = (frozenset(), None)


def secret_name(name: str) -> bool:
    """Whether a setting or variable called `name` holds a secret (a name that merely
    points at one, like `api_key_env`, does not)."""
    return bool(SECRET_NAME.search(name)) and not name.lower().endswith("_env")


def register(value: Any) -> None:
    """Treat `value` as a secret from now on (in this process)."""
    if isinstance(value, str) and len(value) >= MIN_LENGTH:
        with _lock:
            _registered.add(value)


def register_params(params: Mapping[str, Any]) -> None:
    """Register the secrets in a model's `params`: exactly what `redact` blanks (every
    header value and every value under a secret-looking name)."""

    def keep(value: Any) -> str:
        register(str(value))
        return MASK

    redact(params, replace_with=keep)


_env_cache: tuple[object, frozenset[str]] = ((), frozenset())


def _environment_secrets() -> frozenset[str]:
    """The process environment's secret values, recomputed only when the environment
    changed (`scrub` runs for every stored row: decoding and matching every variable
    each time would cost more than the write)."""
    global _env_cache
    raw = getattr(os.environ, "_data", None)  # CPython's undecoded mapping
    snapshot = tuple(raw.items()) if isinstance(raw, dict) else None
    cached_snapshot, values = _env_cache
    if snapshot is not None and snapshot == cached_snapshot:
        return values
    values = frozenset(v for k, v in os.environ.items() if len(v) >= MIN_LENGTH and secret_name(k))
    if snapshot is not None:
        _env_cache = (snapshot, values)
    return values


def known() -> frozenset[str]:
    """Every secret value known now: registered ones and the environment's."""
    with _lock:
        return _environment_secrets() | _registered


def _pattern() -> re.Pattern[str] | None:
    global _cache
    values = known()
    cached_values, pattern = _cache
    if values == cached_values:
        return pattern
    # longest first, so a secret that contains another is blanked whole
    pattern = (
        re.compile("|".join(re.escape(v) for v in sorted(values, key=len, reverse=True)))
        if values
        else None
    )
    _cache = (values, pattern)
    return pattern


def scrub(text: str) -> str:
    """`text` with every known secret value replaced by `***`."""
    return scrub_count(text)[0]


def scrub_count(text: str) -> tuple[str, int]:
    """(`text` with every known secret value replaced by `***`, how many occurrences
    were replaced): what a caller needs to say that it removed some."""
    if not text:
        return text, 0
    pattern = _pattern()
    return pattern.subn(MASK, text) if pattern is not None else (text, 0)


def digest(value: Any) -> str:
    """A stand-in for a secret in a fingerprint: equal secrets give equal digests, and
    the digest does not give the secret away."""
    return "sha256:" + hashlib.sha256(str(value).encode("utf-8", "replace")).hexdigest()[:16]


def redact(value: Any, *, replace_with: Callable[[Any], str] = lambda v: MASK) -> Any:
    """A copy of a settings-like value with secrets replaced: values under a
    secret-looking key and every header value. `replace_with` gives the stand-in
    (`***` for files people read, `digest` for fingerprints)."""
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            name = str(k)
            if name.lower() in HEADER_KEYS and isinstance(v, Mapping):
                out[k] = {hk: replace_with(hv) for hk, hv in v.items()}
            elif secret_name(name) and v and not isinstance(v, (Mapping, list)):
                out[k] = replace_with(v)
            else:
                out[k] = redact(v, replace_with=replace_with)
        return out
    if isinstance(value, list):
        return [redact(v, replace_with=replace_with) for v in value]
    return value
