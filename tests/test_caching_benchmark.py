"""benchmarks/caching_benchmark.py: on a small count, prompt caching costs less, by
exactly what Anthropic's prices in litellm's price map say."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from skillopt.models.litellm_model import import_litellm

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module("caching_benchmark")


@pytest.mark.parametrize("client", ["auto", "litellm"])
def test_caching_costs_less_by_the_price_arithmetic(bench, client):
    m = bench.measure(10, tokens=1200, client=client)
    on, off = m["cached"], m["uncached"]
    assert on["rollouts"] == off["rollouts"] == on["requests"] == off["requests"] == 10
    assert on["served_from_store"] == off["served_from_store"] == 0
    assert on["mean"] == off["mean"] == 1.0
    # the costs are the price map's arithmetic over the usage the API reported
    assert m["agrees"]
    assert on["cost"] == pytest.approx(on["priced"], rel=1e-9)
    assert off["cost"] == pytest.approx(off["priced"], rel=1e-9)
    # one write, then nine reads of the same prefix; nothing cached without the marker
    assert on["cache_writes"] > 1200 and on["cached_tokens"] == 9 * on["cache_writes"]
    assert off["cached_tokens"] == off["cache_writes"] == 0
    assert m["ratio"] == pytest.approx(on["cost"] / off["cost"]) and m["ratio"] < 1
    # the saving is the skill's tokens at the input price less what reading and
    # writing them cost instead (the marker makes the stand-in count a few more tokens)
    p = import_litellm().model_cost[bench.PRICES]
    w = on["cache_writes"]
    extra_in = on["input_tokens"] - off["input_tokens"]  # the marker, as counted
    saved = (
        10 * w * p["input_cost_per_token"]
        - w * p["cache_creation_input_token_cost"]
        - 9 * w * p["cache_read_input_token_cost"]
        - extra_in * p["input_cost_per_token"]
    )
    assert off["cost"] - on["cost"] == pytest.approx(saved, rel=1e-6)
