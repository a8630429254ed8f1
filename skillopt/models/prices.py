"""litellm's bundled price and context-window table, read as data: what a model
costs and how many tokens it takes, without importing litellm (which takes seconds).

Invariants:
- litellm is never executed here. Its package directory is found with
  `importlib.util.find_spec` and the table it loads itself under
  `LITELLM_LOCAL_MODEL_COST_MAP=True` (which skillopt always sets) is read once per
  process, so a price here is the price litellm would use in the same process.
- A model is looked up by its exact name, then by the name without its provider
  prefix when that entry belongs to the provider (`openai/gpt-4o-mini` is
  `gpt-4o-mini`, an `openai` entry). Unknown models get None, never a guess of 0.
- `cost` is litellm's arithmetic for OpenAI and Anthropic replies: the uncached
  input at the input price, cache reads at the cache-read price, cache writes at the
  cache-write price (either missing: the input price), the output at the output
  price; all four at the model's higher rates once the whole prompt passes one of
  its `_above_<n>_tokens` thresholds, and at the served tier's rates (priority,
  flex, …) where the table has them.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillopt.models.base import Usage

TABLE_FILE = "model_prices_and_context_window_backup.json"
# service tiers with their own rates, as litellm names their keys (fast is priority)
_TIER_SUFFIX = {
    "flex": "flex",
    "balanced": "balanced",
    "priority": "priority",
    "fast": "priority",
    "ultrafast": "ultrafast",
}
TIERS = frozenset(_TIER_SUFFIX)
# key suffixes of rates for other ways of buying (tiers, batches): never thresholds
_OTHER_SUFFIXES = ("_flex", "_balanced", "_priority", "_ultrafast", "_batches")
_RATES = (
    "input_cost_per_token",
    "output_cost_per_token",
    "cache_read_input_token_cost",
    "cache_creation_input_token_cost",
)

_lock = threading.Lock()
_table: dict[str, dict[str, Any]] | None = None


def table() -> Mapping[str, dict[str, Any]]:
    """The whole table, model name to entry ({} when litellm is not installed)."""
    global _table
    if _table is None:
        with _lock:
            if _table is None:
                _table = _load()
    return _table


def _load() -> dict[str, dict[str, Any]]:
    try:
        spec = importlib.util.find_spec("litellm")  # finds the package, runs nothing
    except (ImportError, ValueError):
        return {}
    for where in (spec.submodule_search_locations or []) if spec else []:
        path = Path(where) / TABLE_FILE
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            return {k: v for k, v in data.items() if isinstance(v, dict) and k != "sample_spec"}
    return {}


def entry(model: str) -> dict[str, Any] | None:
    """The table's entry for `model`: by its exact name, else by the name without its
    provider prefix when that entry is the provider's; None when unknown."""
    found = table().get(model)
    if found is not None:
        return found
    prefix, _, rest = model.partition("/")
    if rest:
        found = table().get(rest)
        if found is not None and found.get("litellm_provider") == prefix:
            return found
    return None


def provider(model: str) -> str | None:
    """The provider the table files `model` under (`gpt-4o` → openai), or None."""
    found = entry(model)
    value = found.get("litellm_provider") if found else None
    return value if isinstance(value, str) else None


def _number(found: Mapping[str, Any], key: str) -> float | None:
    value = found.get(key)
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _int_field(model: str, *keys: str) -> int | None:
    found = entry(model)
    for key in keys:
        value = found.get(key) if found else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def context_window(model: str) -> int | None:
    """How many input tokens `model` takes (`max_input_tokens`, else `max_tokens`)."""
    return _int_field(model, "max_input_tokens", "max_tokens")


def max_output_tokens(model: str) -> int | None:
    """The most tokens `model` may answer with (`max_output_tokens`), or None."""
    return _int_field(model, "max_output_tokens")


def supports(model: str, capability: str) -> bool:
    """Whether the table says `model` has `capability` (`supports_<capability>`)."""
    found = entry(model)
    return bool(found and found.get(f"supports_{capability}") is True)


def supports_response_schema(model: str) -> bool:
    """Whether the provider constrains `model`'s replies to a JSON schema."""
    return supports(model, "response_schema")


@dataclass(frozen=True)
class Prices:
    """USD per token of one request: uncached input, output, and input read from and
    written to the provider's prompt cache."""

    input: float
    output: float
    cache_read: float
    cache_write: float


def prices(model: str, prompt_tokens: int = 0, service_tier: str | None = None) -> Prices | None:
    """`model`'s per-token prices for a request whose whole prompt is `prompt_tokens`
    long, served at `service_tier` (None: standard); None when the table has no
    per-token price for it."""
    found = entry(model)
    if found is None or all(_number(found, key) is None for key in _RATES[:2]):
        return None
    suffix = _TIER_SUFFIX.get((service_tier or "").lower())

    def rate(key: str, default: float | None) -> float | None:
        if suffix:  # the tier's own rate, else the standard one
            tiered = _number(found, f"{key}_{suffix}")
            if tiered is not None:
                return tiered
        value = _number(found, key)
        return default if value is None else value

    costs: dict[str, float | None] = {
        "input_cost_per_token": rate("input_cost_per_token", 0.0),
        "output_cost_per_token": rate("output_cost_per_token", 0.0),
        "cache_read_input_token_cost": rate("cache_read_input_token_cost", None),
        "cache_creation_input_token_cost": rate("cache_creation_input_token_cost", None),
    }
    for threshold, label in _thresholds(found, suffix):
        if prompt_tokens > threshold:  # the whole prompt is past it: its rates apply
            for key in _RATES:
                costs[key] = rate(f"{key}_above_{label}_tokens", costs[key])
    base_in = costs["input_cost_per_token"] or 0.0
    read = costs["cache_read_input_token_cost"]
    write = costs["cache_creation_input_token_cost"]
    return Prices(
        input=base_in,
        output=costs["output_cost_per_token"] or 0.0,
        cache_read=base_in if read is None else read,
        cache_write=base_in if write is None else write,
    )


def _thresholds(found: Mapping[str, Any], suffix: str | None) -> list[tuple[float, str]]:
    """(tokens, label as in the keys) of each `_above_<label>_tokens` rate of the
    entry (those of other tiers and of batches left out), smallest first."""
    out: set[tuple[float, str]] = set()
    for key in found:
        if not key.startswith(tuple(f"{r}_above_" for r in _RATES)) or "_tokens" not in key:
            continue
        if key.endswith(_OTHER_SUFFIXES) and not (suffix and key.endswith(f"_{suffix}")):
            continue
        if found.get(key) is None:
            continue
        label = key.rsplit("_above_", 1)[1].split("_tokens")[0]
        try:
            tokens = float(label.replace("k", "")) * (1000 if "k" in label else 1)
        except ValueError:
            continue
        out.add((tokens, label))
    return sorted(out)


def multiplier(model: str, *, geo: str | None = None, speed: str | None = None) -> float:
    """The surcharge on every token of a reply served in region `geo` (Anthropic's
    `inference_geo`, e.g. 1.1 for `us`) or at `speed` `fast`, as the table's
    `provider_specific_entry` gives it; 1.0 otherwise."""
    found = entry(model)
    extra = found.get("provider_specific_entry") if found else None
    if not isinstance(extra, dict):
        return 1.0
    factor = 1.0
    if speed == "fast":
        factor *= float(extra.get("fast", 1.0))
    if isinstance(geo, str) and geo.lower() not in ("global", "not_available"):
        factor *= float(extra.get(geo.lower(), 1.0))
    return factor


def cost(
    model: str,
    usage: Usage,
    *,
    cache_written: int = 0,
    service_tier: str | None = None,
    surcharge: float = 1.0,
) -> float | None:
    """USD for one reply of `model` with `usage` (whose `input_tokens` is the whole
    prompt, `cached_input_tokens` the part read from the cache), `cache_written` of
    its input tokens written to the cache; None when the price is unknown."""
    p = prices(model, usage.input_tokens, service_tier)
    if p is None:
        return None
    read = usage.cached_input_tokens
    uncached = max(usage.input_tokens - read - cache_written, 0)
    prompt = float(uncached) * p.input + float(read) * p.cache_read
    if cache_written:
        prompt += float(cache_written) * p.cache_write
    completion = float(usage.output_tokens) * p.output
    if surcharge != 1.0:
        prompt *= surcharge
        completion *= surcharge
    return prompt + completion
