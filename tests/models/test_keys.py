"""Which variable a provider model needs (`skillopt.models.keys`), held against what
the installed litellm asks for; and a call made with no key at all, through the real
litellm, is an auth failure that is never retried."""

from __future__ import annotations

import time

import pytest
from fakes.openai_server import FakeOpenAI, Reply

from skillopt.config import ModelSettings
from skillopt.errors import ModelError
from skillopt.models import keys
from skillopt.models.litellm_model import LiteLLMModel, import_litellm


def missing(name, env=None, **settings):
    return keys.missing(name, ModelSettings(**settings), env)


@pytest.mark.parametrize("provider", keys.PROVIDERS, ids=lambda p: p.name)
def test_each_provider_needs_what_litellm_asks_for(no_keys, monkeypatch, provider):
    litellm = import_litellm()
    model = f"{provider.name}/some-model"
    asked = litellm.validate_environment(model=model)["missing_keys"]
    assert asked and set(asked) <= set(provider.keys)  # litellm names no other variable
    assert missing(model) == [provider.keys]
    for var in provider.keys:  # and any one of the alternatives satisfies both
        with monkeypatch.context() as env:
            env.setenv(var, "k")
            assert litellm.validate_environment(model=model)["missing_keys"] == []
            assert missing(model) == []


def test_a_blank_variable_is_not_set(no_keys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "  ")
    assert missing("openai/gpt-4o-mini") == [("OPENAI_API_KEY",)]
    assert keys.describe(("GEMINI_API_KEY", "GOOGLE_API_KEY")) == (
        "GEMINI_API_KEY (or GOOGLE_API_KEY)"
    )


def test_names_without_a_prefix_go_to_their_provider(no_keys):
    assert missing("gpt-4o-mini") == [("OPENAI_API_KEY",)]


def test_a_configured_server_needs_no_key_and_a_key_variable_is_the_only_one(no_keys):
    assert missing("openai/llama", api_base="http://127.0.0.1:8000/v1") == []
    assert missing("openai/m", api_key_env="MY_KEY") == [("MY_KEY",)]
    # the configured variable decides, whatever the provider's own holds
    assert missing("openai/m", {"OPENAI_API_KEY": "sk"}, api_key_env="MY_KEY") == [("MY_KEY",)]
    assert missing("openai/m", {"MY_KEY": "sk"}, api_key_env="MY_KEY") == []


def test_credentials_from_outside_the_environment_are_not_refused(no_keys):
    for name in ("ollama/llama3", "bedrock/anthropic.claude-v2", "azure/my-deployment"):
        assert missing(name) == [], name


def test_a_provider_outside_the_table_is_asked_to_litellm(no_keys, monkeypatch):
    assert missing("nvidia_nim/meta/llama3") == [("NVIDIA_NIM_API_KEY",)]
    monkeypatch.setenv("NVIDIA_NIM_API_KEY", "k")
    assert missing("nvidia_nim/meta/llama3") == []


def test_a_call_with_no_key_is_an_auth_failure_and_never_retried(no_keys, monkeypatch):
    """litellm raises a missing OpenAI key as an InternalServerError (HTTP 500): it
    must not be retried as a server fault, and nothing reaches the server."""

    def no_waiting(seconds):
        raise AssertionError(f"retried after {seconds:.1f}s")

    with FakeOpenAI() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)  # where a request would go
        monkeypatch.setattr(time, "sleep", no_waiting)
        model = LiteLLMModel("openai/gpt-4o-mini", retries=4)
        with pytest.raises(ModelError) as info:
            model.complete("hi")
        assert server.requests == []
    err = info.value
    assert (err.kind, err.retryable, err.attempts) == ("auth", False, 1)
    assert "Missing credentials" in str(err)


def test_a_401_from_the_server_is_auth_and_asked_once(no_keys):
    with FakeOpenAI() as server:
        server.script = [Reply(401, error="Incorrect API key provided")] * 3
        model = LiteLLMModel("openai/m", api_base=server.base_url, retries=4, backoff=5.0)
        with pytest.raises(ModelError) as info:
            model.complete("hi")
        assert len(server.requests) == 1
    assert (info.value.kind, info.value.retryable) == ("auth", False)
