"""litellm's price table read as data (`skillopt.models.prices`), held against what
the installed litellm computes from the same table: every OpenAI and Anthropic chat
model, with and without prompt caching, past the long-prompt thresholds and at each
service tier; and reading it never imports litellm."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt.models import prices
from skillopt.models.base import Usage
from skillopt.models.litellm_model import import_litellm

ROOT = Path(__file__).resolve().parents[2]
CHAT = sorted(
    (entry["litellm_provider"], name)
    for name, entry in prices.table().items()
    if entry.get("litellm_provider") in ("openai", "anthropic") and entry.get("mode") == "chat"
)
# (whole prompt, output, read from the cache, written to it): small, cached, and
# past the 100k and 272k thresholds some models price higher
USAGES = [
    (1000, 200, 0, 0),
    (1000, 200, 300, 0),
    (5000, 10, 800, 1200),
    (150_000, 10, 0, 0),
    (300_000, 50, 1000, 2000),
]


def litellm_cost(provider, name, usage, written, tier=None, **fields) -> float:
    """What litellm charges for a reply with this usage, given as its response
    parsing builds it (Anthropic: the cache reads and writes inside the prompt)."""
    litellm = import_litellm()
    from litellm.types.utils import PromptTokensDetailsWrapper
    from litellm.types.utils import Usage as LiteLLMUsage

    read = usage.cached_input_tokens
    details = PromptTokensDetailsWrapper(
        cached_tokens=read,
        cache_creation_tokens=written,
        text_tokens=usage.input_tokens - read - written,
    )
    used = LiteLLMUsage(
        prompt_tokens=usage.input_tokens,
        completion_tokens=usage.output_tokens,
        total_tokens=usage.total,
        prompt_tokens_details=details if (read or written) else None,
        cache_creation_input_tokens=written,
        cache_read_input_tokens=read,
        **fields,
    )
    cin, cout = litellm.cost_per_token(
        model=name, custom_llm_provider=provider, usage_object=used, service_tier=tier
    )
    return float(cin + cout)


@pytest.mark.parametrize("provider, name", CHAT, ids=[f"{p}/{n}" for p, n in CHAT])
def test_costs_are_litellms_for_every_openai_and_anthropic_chat_model(provider, name):
    priced = 0
    for tier in (None, "priority", "flex"):
        for whole, out, read, written in USAGES:
            if provider == "openai" and written:
                continue  # OpenAI reports no cache writes
            usage = Usage(whole, out, read)
            mine = prices.cost(
                f"{provider}/{name}", usage, cache_written=written, service_tier=tier
            )
            theirs = litellm_cost(provider, name, usage, written, tier)
            if mine is None:  # no per-token price: unknown here, where litellm says 0
                assert theirs == 0.0
                continue
            priced += 1
            assert mine == pytest.approx(theirs, rel=1e-12, abs=1e-15), (tier, usage, written)
    assert priced or name == "openai/container"  # priced per session, not per token


def test_the_surcharges_of_region_and_speed_are_litellms():
    name = next(
        n for p, n in CHAT if "fast" in (prices.entry(n) or {}).get("provider_specific_entry", {})
    )
    usage = Usage(4000, 100, 1000)
    for geo, speed in (("us", None), ("global", None), (None, "fast"), ("us", "fast")):
        factor = prices.multiplier(name, geo=geo, speed=speed)
        mine = prices.cost(name, usage, cache_written=500, surcharge=factor)
        theirs = litellm_cost("anthropic", name, usage, 500, inference_geo=geo, speed=speed)
        assert mine == pytest.approx(theirs, rel=1e-12), (geo, speed)
    assert prices.multiplier(name, geo="us") > 1.0


def test_lookup_by_name_then_without_the_providers_prefix():
    assert prices.entry("openai/gpt-4o-mini") is prices.entry("gpt-4o-mini")
    assert prices.entry("anthropic/claude-sonnet-4-5") is prices.entry("claude-sonnet-4-5")
    assert prices.entry("anthropic/gpt-4o-mini") is None  # not an Anthropic model
    assert prices.entry("openai/no-such-model") is None
    assert prices.provider("gpt-4o-mini") == "openai"
    assert prices.cost("openai/no-such-model", Usage(10, 10)) is None  # unknown, never 0


def test_limits_and_capabilities_are_litellms():
    litellm = import_litellm()
    for name in ("openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5", "openai/gpt-4"):
        info = litellm.get_model_info(name)
        assert prices.context_window(name) == (info.get("max_input_tokens") or info["max_tokens"])
        assert prices.max_output_tokens(name) == litellm.get_max_tokens(name.split("/")[1])
        assert prices.supports_response_schema(name) == litellm.supports_response_schema(name)
    assert prices.context_window("openai/no-such-model") is None


def test_cost_uses_the_whole_prompt_and_the_cached_part():
    p = prices.prices("openai/gpt-4o-mini")
    assert p is not None and p.cache_read < p.input
    cost = prices.cost("openai/gpt-4o-mini", Usage(1000, 10, 400))
    assert cost == pytest.approx(600 * p.input + 400 * p.cache_read + 10 * p.output)


def test_reading_the_table_does_not_import_litellm():
    code = (
        "import sys; from skillopt.models import prices; "
        "assert prices.cost('openai/gpt-4o-mini', __import__('skillopt.models.base', "
        "fromlist=['Usage']).Usage(10, 10)) > 0; print('litellm' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's skillopt
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.strip() == "False"
