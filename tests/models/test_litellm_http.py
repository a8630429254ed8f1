"""An `openai/…` model over real HTTP against a loopback OpenAI-compatible server,
through each client: litellm (`LiteLLMModel`) and the OpenAI SDK (`OpenAIModel`)."""

from __future__ import annotations

import threading
import time

import pytest
from fakes.openai_server import FakeOpenAI, Reply

from skillopt.config import ModelSettings
from skillopt.errors import InputError, ModelError
from skillopt.models import resolve_model
from skillopt.models.litellm_model import LiteLLMModel
from skillopt.models.openai_client import OpenAIModel


@pytest.fixture(params=[LiteLLMModel, OpenAIModel], ids=["litellm", "sdk"])
def server(request):
    with FakeOpenAI() as srv:
        srv.client = request.param
        yield srv


def model(server, name="openai/fake-model", **kw):
    kw.setdefault("backoff", 0.01)
    kw.setdefault("retries", 3)
    kw.setdefault("timeout", 5)
    return server.client(name, api_base=server.base_url, **kw)


def test_plain_call_returns_text_usage_and_unknown_cost(server):
    m = model(server, temperature=0.0, max_tokens=20)
    reply = m.complete(
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}]
    )
    assert reply.text == "hello there"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (11, 3)
    assert reply.cost is None  # the price map does not know "fake-model": unknown, not 0
    assert reply.latency_s > 0
    req = server.requests[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["body"]["messages"][0] == {"role": "system", "content": "be brief"}
    assert req["body"]["temperature"] == 0.0
    assert req["body"]["max_tokens"] == 20
    assert req["auth"] == "Bearer sk-local"


def test_rate_limit_then_success_is_retried(server):
    server.script = [Reply(429, error="slow down", headers={"retry-after": "0"})]
    reply = model(server).complete("ping")
    assert reply.text == "ping"
    assert len(server.requests) == 2


def test_server_errors_are_retried_with_backoff(server):
    server.script = [Reply(500), Reply(503)]
    start = time.perf_counter()
    reply = model(server, backoff=0.05).complete("ping")
    assert reply.text == "ping"
    assert len(server.requests) == 3
    # two sleeps of backoff * 2**attempt * jitter(0.5..1.5): at least 0.025 + 0.05
    assert time.perf_counter() - start >= 0.07


def test_retry_after_header_is_honoured(server):
    server.script = [Reply(429, headers={"retry-after": "0.4"})]
    start = time.perf_counter()
    model(server, backoff=0.0).complete("ping")
    assert time.perf_counter() - start >= 0.4


def test_retries_exhausted_raise_model_error(server):
    server.script = [Reply(429, error="quota")] * 3
    with pytest.raises(ModelError) as info:
        model(server, retries=2).complete("ping")
    assert info.value.kind == "rate_limit"
    assert "after 3 attempts" in str(info.value)
    assert len(server.requests) == 3


def test_auth_error_is_not_retried(server):
    server.script = [Reply(401, error="invalid api key")]
    with pytest.raises(ModelError) as info:
        model(server).complete("ping")
    assert info.value.kind == "auth"
    assert not info.value.retryable
    assert "invalid api key" in str(info.value)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "reply",
    [
        Reply(
            429,
            error="You exceeded your current quota, please check your plan and billing details.",
        ),
        Reply(400, error="Your credit balance is too low to access the API."),
        Reply(402, error="payment required"),
    ],
)
def test_an_exhausted_quota_is_not_retried(server, reply):
    server.script = [reply] * 5
    with pytest.raises(ModelError) as info:
        model(server).complete("ping")
    assert (info.value.kind, info.value.retryable) == ("quota", False)
    assert len(server.requests) == 1


def test_an_unknown_model_is_not_found_and_not_retried(server):
    server.script = [Reply(404, error="The model `gpt-9` does not exist")]
    with pytest.raises(ModelError) as info:
        model(server).complete("ping")
    assert info.value.kind == "not_found"
    assert len(server.requests) == 1


def test_bad_request_is_not_retried(server):
    server.script = [Reply(400, error="bad field")]
    with pytest.raises(ModelError) as info:
        model(server).complete("ping")
    assert info.value.kind == "bad_request"
    assert len(server.requests) == 1


def test_timeout_is_retried_then_reported(server):
    server.script = [Reply(delay=1.5), Reply(delay=1.5)]
    with pytest.raises(ModelError) as info:
        model(server, timeout=0.3, retries=1).complete("ping")
    assert info.value.kind == "timeout"
    assert len(server.requests) == 2


def test_known_model_gets_a_price(server):
    reply = model(server, name="openai/gpt-4o-mini").complete("ping")
    assert reply.cost is not None and reply.cost > 0


def test_safe_from_many_threads(server):
    m = model(server)
    results: dict[int, str] = {}

    def call(i):
        results[i] = m.complete(f"message {i}").text

    threads = [threading.Thread(target=call, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: f"message {i}" for i in range(16)}


def test_fingerprint_has_sampling_params_not_retries(server):
    a = model(server, temperature=0.2, retries=1, timeout=3)
    b = model(server, temperature=0.2, retries=5, timeout=60)
    c = model(server, temperature=0.7)
    assert a.fingerprint() == b.fingerprint()
    assert a.fingerprint() != c.fingerprint()
    assert "sk-" not in repr(a)


def test_resolve_model_uses_settings_and_key_env(server, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "sk-from-env")
    m = resolve_model(
        "openai/fake-model", ModelSettings(api_base=server.base_url, api_key_env="FAKE_KEY")
    )
    assert m.complete("hi").text == "hi"
    assert server.requests[0]["auth"] == "Bearer sk-from-env"


def test_resolve_model_missing_key_env_is_input_error(server):
    with pytest.raises(InputError, match="NOT_SET_ANYWHERE"):
        resolve_model(
            "openai/fake-model",
            ModelSettings(api_base=server.base_url, api_key_env="NOT_SET_ANYWHERE"),
        )


def test_unknown_model_name_is_input_error():
    with pytest.raises(InputError, match="unknown model 'no-such-provider-model'") as info:
        resolve_model("no-such-provider-model", role="target")
    assert str(info.value).startswith("target:")
