"""Provider prompt caching of the skill, through each client (the provider's SDK and
litellm) against loopback fakes: Anthropic gets a long skill as a system block
marked `cache_control`, OpenAI-style servers get the messages unchanged, cached
tokens come back in the usage and are priced at the cache-read price (litellm's
price map), and none of it touches the fingerprint."""

from __future__ import annotations

import pytest
from fakes.anthropic_api import FakeAnthropic, Turn, prompt_text
from fakes.openai_server import FakeOpenAI
from helpers import write_skill, write_suite

from skillopt import evaluate
from skillopt.config import ModelSettings, Settings
from skillopt.harness.chat import ChatHarness
from skillopt.models import resolve_model
from skillopt.models.anthropic_client import AnthropicModel
from skillopt.models.litellm_model import (
    LiteLLMModel,
    cache_marked,
    cache_minimum,
    import_litellm,
)
from skillopt.store.rollouts import RolloutStore

SONNET = "anthropic/claude-sonnet-4-5"
RULE = "Answer with the input in capital letters and nothing else, no quotes or prose.\n"
LONG = RULE * 70  # 5,670 characters: over 1,024 tokens by any estimate
SHORT = RULE * 20  # 1,620 characters: under 1,024 tokens by any estimate


def shout(body: dict) -> Turn:
    return Turn.text(prompt_text(body).rsplit(" ", 1)[-1].upper())


@pytest.fixture(params=["sdk", "litellm"])
def client(request):
    return request.param


def run_eval(tmp_path, api_base: str, body: str, *, n: int = 4, name=SONNET, **model):
    skill = write_skill(tmp_path / "skills", "caps", body=body)
    items = [
        {"id": f"t{i}", "input": f"word{i}", "expected": f"WORD{i}", "split": "test"}
        for i in range(n)
    ]
    suite = write_suite(tmp_path / "suite.yaml", items, prompt="Shout: {input}")
    settings = Settings(
        target=name,
        concurrency=1,  # in order: the first call writes the cache, the others read it
        models={name: ModelSettings(api_base=api_base, backoff=0.01, **model)},
    )
    with RolloutStore(":memory:") as store:
        return evaluate(skill, suite, settings=settings, store=store)


def price(usage: dict) -> float:
    """What Anthropic bills for one reply's usage, at litellm's prices for the model."""
    p = import_litellm().model_cost["claude-sonnet-4-5"]
    return (
        usage["input_tokens"] * p["input_cost_per_token"]
        + usage["cache_creation_input_tokens"] * p["cache_creation_input_token_cost"]
        + usage["cache_read_input_tokens"] * p["cache_read_input_token_cost"]
        + usage["output_tokens"] * p["output_cost_per_token"]
    )


def test_a_long_skill_is_sent_marked_for_the_cache_and_billed_at_the_read_price(tmp_path, client):
    with FakeAnthropic(side_responder=shout, cache=True) as api:
        result = run_eval(tmp_path, api.url, LONG, client=client)
        sent = api.api_requests()
    (r,) = result.results
    assert r.mean == 1.0 and r.n == 4
    assert len(sent) == 4
    for rec in sent:
        system = rec["body"]["system"]
        assert isinstance(system, list) and len(system) == 1
        assert system[0]["type"] == "text" and system[0]["text"] == LONG.strip()
        assert system[0]["cache_control"] == {"type": "ephemeral"}
    usages = [rec["usage"] for rec in sent]
    assert usages[0]["cache_creation_input_tokens"] > 0 == usages[0]["cache_read_input_tokens"]
    assert all(
        u["cache_read_input_tokens"] == usages[0]["cache_creation_input_tokens"] for u in usages[1:]
    )
    # the cached tokens come back as part of the whole prompt's input tokens
    by_task = {ro.task_id: ro for ro in r.rollouts}
    assert [by_task[f"t{i}"].usage.cached_input_tokens for i in range(4)] == [
        u["cache_read_input_tokens"] for u in usages
    ]
    assert [by_task[f"t{i}"].usage.input_tokens for i in range(4)] == [
        u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
        for u in usages
    ]
    assert r.cached_tokens == 3 * usages[0]["cache_creation_input_tokens"]
    assert r.summary()["cached_tokens"] == r.cached_tokens
    # cost: litellm's, at the cache-read price for the reads (a tenth of the input price)
    p = import_litellm().model_cost["claude-sonnet-4-5"]
    assert p["cache_read_input_token_cost"] < p["input_cost_per_token"] / 5
    assert by_task["t1"].cost == pytest.approx(price(usages[1]), rel=1e-9)
    assert r.cost == pytest.approx(sum(price(u) for u in usages), rel=1e-9)
    uncached = sum(
        price(
            {
                **u,
                "input_tokens": u["input_tokens"]
                + u["cache_creation_input_tokens"]
                + u["cache_read_input_tokens"],
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            }
        )
        for u in usages
    )
    assert r.cost < uncached


def test_a_short_skill_is_sent_as_it_is(tmp_path, client):
    with FakeAnthropic(side_responder=shout, cache=True) as api:
        result = run_eval(tmp_path, api.url, SHORT, n=2, client=client)
        sent = api.api_requests()
    assert result.results[0].mean == 1.0
    for rec in sent:
        assert "cache_control" not in str(rec["body"])
        assert rec["usage"]["cache_read_input_tokens"] == 0
    assert result.results[0].cached_tokens == 0


def test_prompt_cache_off_sends_no_marker_and_keeps_the_fingerprint(tmp_path, client):
    with FakeAnthropic(side_responder=shout, cache=True) as api:
        off = run_eval(tmp_path / "off", api.url, LONG, n=2, prompt_cache=False, client=client)
        on = run_eval(tmp_path / "on", api.url, LONG, n=2, client=client)
        sent = api.api_requests()
    assert ["cache_control" in str(rec["body"]) for rec in sent] == [False, False, True, True]
    assert off.results[0].cached_tokens == 0 and on.results[0].cached_tokens > 0
    # the same rollouts: a rollout stored with caching on is a hit with it off
    assert {r.key for r in off.results[0].rollouts} == {r.key for r in on.results[0].rollouts}
    for cls in (LiteLLMModel, AnthropicModel):
        cached = cls(SONNET, api_base=api.url)
        plain = cls(SONNET, api_base=api.url, prompt_cache=False)
        assert cached.fingerprint() == plain.fingerprint()
        assert ChatHarness(cached).fingerprint() == ChatHarness(plain).fingerprint()


@pytest.mark.parametrize("client, cls", [("auto", AnthropicModel), ("litellm", LiteLLMModel)])
def test_the_setting_reaches_the_model(client, cls):
    base = "http://127.0.0.1:9"
    on = resolve_model(SONNET, ModelSettings(api_base=base, client=client))
    off = resolve_model(SONNET, ModelSettings(api_base=base, prompt_cache=False, client=client))
    assert isinstance(on, cls) and on.prompt_cache is True
    assert isinstance(off, cls) and off.prompt_cache is False


def test_openai_style_requests_keep_the_skill_first_and_read_cached_tokens(tmp_path, client):
    with FakeOpenAI(cached_tokens=8) as server:
        result = run_eval(
            tmp_path, server.base_url, LONG, n=2, name="openai/gpt-4o-mini", client=client
        )
        sent = [r["body"]["messages"] for r in server.requests]
    for messages in sent:  # the skill is the stable prefix: first, a plain string
        assert messages[0] == {"role": "system", "content": LONG.strip()}
        assert messages[1]["role"] == "user"
        assert "cache_control" not in str(messages)
    r = result.results[0]
    assert [ro.usage.cached_input_tokens for ro in r.rollouts] == [8, 8]
    assert [ro.usage.input_tokens for ro in r.rollouts] == [11, 11]  # cached tokens inside
    p = import_litellm().model_cost["gpt-4o-mini"]
    one = 3 * p["input_cost_per_token"] + 8 * p["cache_read_input_token_cost"]
    assert r.rollouts[0].cost == pytest.approx(one + 3 * p["output_cost_per_token"], rel=1e-9)


def test_without_cached_tokens_the_usage_is_as_before():
    with FakeOpenAI() as server:
        reply = LiteLLMModel("openai/fake-model", api_base=server.base_url).complete("hi")
    assert (reply.usage.input_tokens, reply.usage.cached_input_tokens) == (11, 0)


@pytest.mark.parametrize(
    "model, minimum",
    [
        ("anthropic/claude-sonnet-4-5", 1024),
        ("anthropic/claude-opus-4-1-20250805", 1024),
        ("anthropic/claude-3-5-haiku-20241022", 2048),
        ("anthropic/claude-haiku-4-5", 4096),
        ("anthropic/claude-opus-4-5", 4096),
    ],
)
def test_the_marker_needs_the_models_minimum(model, minimum):
    assert cache_minimum(model) == minimum
    user = {"role": "user", "content": "task"}
    below = [{"role": "system", "content": "x" * (3 * minimum - 1)}, user]
    at = [{"role": "system", "content": "x" * (3 * minimum)}, user]
    assert cache_marked(below, model) == below
    marked = cache_marked(at, model)
    assert marked[1] is user and marked[0]["role"] == "system"
    assert marked[0]["content"] == [
        {"type": "text", "text": "x" * (3 * minimum), "cache_control": {"type": "ephemeral"}}
    ]
    assert at[0]["content"] == "x" * (3 * minimum)  # the caller's messages are not changed


def test_only_a_leading_system_string_is_marked():
    long = "y" * 10_000
    assert cache_marked([{"role": "user", "content": long}], SONNET) == [
        {"role": "user", "content": long}
    ]
    blocks = [{"role": "system", "content": [{"type": "text", "text": long}]}]
    assert cache_marked(blocks, SONNET) == blocks
    assert cache_marked([], SONNET) == []
