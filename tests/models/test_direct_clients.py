"""`openai/…` and `anthropic/…` through the providers' SDKs (`models/direct`) against
the same through litellm, over real HTTP to the loopback fakes: the same requests,
answers, usage, cached tokens, costs, fingerprints and store keys; the same
retries and failure kinds; JSON replies the optimizer parses to the same objects;
and a whole `skillopt eval` of such a model never imports litellm."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes.anthropic_api import FakeAnthropic, Turn, prompt_text
from fakes.openai_server import FakeOpenAI, Reply
from helpers import write_skill, write_suite

from skillopt import evaluate
from skillopt.config import ModelSettings, Settings
from skillopt.errors import InputError, ModelError
from skillopt.harness.chat import ChatHarness
from skillopt.models import prices, resolve_model
from skillopt.models.anthropic_client import AnthropicModel
from skillopt.models.litellm_model import LiteLLMModel
from skillopt.models.openai_client import OpenAIModel
from skillopt.optimize.reflect import LLMOptimizer
from skillopt.optimize.replies import EDITS_SCHEMA, parse_edits
from skillopt.store.rollouts import RolloutStore

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
GPT = "openai/gpt-4o-mini"
SONNET = "anthropic/claude-sonnet-4-5"
RULE = "Answer with the input in capital letters and nothing else, no quotes or prose.\n"
LONG = RULE * 70  # over Anthropic's 1,024-token minimum by any estimate
CLIENTS = ("sdk", "litellm")


def both(name: str, api_base: str, **settings) -> tuple:
    """The model `name` as each client reaches it (sdk, litellm), same settings."""
    settings.setdefault("backoff", 0.01)
    return tuple(
        resolve_model(name, ModelSettings(api_base=api_base, client=client, **settings))
        for client in CLIENTS
    )


def shout_openai(body: dict) -> str:
    return body["messages"][-1]["content"].rsplit(" ", 1)[-1].upper()


def shout(body: dict) -> Turn:
    return Turn.text(prompt_text(body).rsplit(" ", 1)[-1].upper())


def run_eval(root: Path, name: str, api_base: str, client: str, store: RolloutStore, **model):
    skill = write_skill(root / "skills", "caps", body=LONG)
    items = [
        {"id": f"t{i}", "input": f"word{i}", "expected": f"WORD{i}", "split": "test"}
        for i in range(4)
    ]
    suite = write_suite(root / "suite.yaml", items, prompt="Shout: {input}")
    settings = Settings(
        target=name,
        concurrency=1,  # in order: the first call writes the cache, the others read it
        models={name: ModelSettings(api_base=api_base, client=client, backoff=0.01, **model)},
    )
    (result,) = evaluate(skill, suite, settings=settings, store=store).results
    return result


def summary(result) -> list[tuple]:
    return [
        (r.task_id, r.key, r.answer, r.score, r.usage, r.model_calls)
        for r in sorted(result.rollouts, key=lambda r: r.task_id)
    ]


def costs(result) -> list[float]:
    return [r.cost for r in sorted(result.rollouts, key=lambda r: r.task_id)]


# ------------------------------------------------------------- the same eval


@pytest.mark.parametrize("cached_tokens", [None, 8])
def test_an_openai_eval_is_the_same_through_either_client(tmp_path, cached_tokens):
    results, sent = {}, {}
    with FakeOpenAI(shout_openai, cached_tokens=cached_tokens) as server:  # one api_base
        for client in CLIENTS:
            with RolloutStore(":memory:") as store:
                results[client] = run_eval(tmp_path, GPT, server.base_url, client, store)
            sent[client] = [(r["path"], r["body"], r["auth"]) for r in server.requests]
            server.requests.clear()
    sdk, lite = results["sdk"], results["litellm"]
    assert sdk.mean == lite.mean == 1.0
    assert sent["sdk"] == sent["litellm"]  # the same requests
    assert summary(sdk) == summary(lite)  # answers, usage, cached tokens, store keys
    assert costs(sdk) == pytest.approx(costs(lite), rel=0, abs=1e-12)
    assert all(c is not None and c > 0 for c in costs(sdk))
    assert sdk.cached_tokens == lite.cached_tokens == 4 * (cached_tokens or 0)


def header(record: dict, name: str) -> str | None:
    return next((v for k, v in record["headers"].items() if k.lower() == name), None)


@pytest.mark.parametrize("cache", [False, True])
def test_an_anthropic_eval_is_the_same_through_either_client(tmp_path, cache):
    results, sent = {}, {}
    with FakeAnthropic(side_responder=shout, cache=cache) as api:
        for client in CLIENTS:
            api._cached.clear()  # an empty prompt cache: each sees one write, then reads
            with RolloutStore(":memory:") as store:
                results[client] = run_eval(tmp_path, SONNET, api.url, client, store)
            sent[client] = api.api_requests()
            api.requests.clear()
    sdk, lite = results["sdk"], results["litellm"]
    assert sdk.mean == lite.mean == 1.0
    assert [r["body"] for r in sent["sdk"]] == [r["body"] for r in sent["litellm"]]
    assert [r["usage"] for r in sent["sdk"]] == [r["usage"] for r in sent["litellm"]]
    assert summary(sdk) == summary(lite)
    assert costs(sdk) == pytest.approx(costs(lite), rel=0, abs=1e-12)
    for rec in sent["sdk"]:  # the skill as one system block marked for the cache
        system = rec["body"]["system"]
        assert system == [
            {"type": "text", "text": LONG.strip(), "cache_control": {"type": "ephemeral"}}
        ]
        assert rec["body"]["max_tokens"] == prices.max_output_tokens(SONNET) == 64000
        assert header(rec, "anthropic-version") == header(sent["litellm"][0], "anthropic-version")
        assert header(rec, "x-api-key") == "sk-local"
    if cache:
        writes = sent["sdk"][0]["usage"]["cache_creation_input_tokens"]
        assert writes > 0 and sdk.cached_tokens == lite.cached_tokens == 3 * writes
    else:
        assert sdk.cached_tokens == lite.cached_tokens == 0


def test_a_rollout_stored_through_one_client_is_a_hit_through_the_other(tmp_path):
    with FakeOpenAI(shout_openai) as server:
        with RolloutStore(tmp_path / "store.sqlite") as store:
            first = run_eval(tmp_path / "a", GPT, server.base_url, "sdk", store)
        assert len(server.requests) == 4
        with RolloutStore(tmp_path / "store.sqlite") as store:
            again = run_eval(tmp_path / "a", GPT, server.base_url, "litellm", store)
        assert len(server.requests) == 4  # nothing sent: every rollout came from the store
    assert [r.key for r in first.rollouts] == [r.key for r in again.rollouts]


@pytest.mark.parametrize(
    "name, settings",
    [
        (GPT, {}),
        (GPT, {"temperature": 0.0, "max_tokens": 50, "params": {"seed": 7}}),
        ("openai/llama", {"api_key_env": "FAKE_KEY", "params": {"extra_headers": {"a": "b"}}}),
        (SONNET, {"temperature": 0.2, "prompt_cache": False}),
    ],
)
def test_fingerprints_are_the_same(name, settings, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "sk-secret-value")
    sdk, lite = (
        resolve_model(name, ModelSettings(api_base="http://127.0.0.1:9/v1", client=c, **settings))
        for c in ("auto", "litellm")
    )
    assert isinstance(lite, LiteLLMModel)
    assert sdk.fingerprint() == lite.fingerprint()
    assert ChatHarness(sdk).fingerprint() == ChatHarness(lite).fingerprint()


# ------------------------------------------------------------- request shapes


@pytest.mark.parametrize(
    "name, settings, expect",
    [
        (GPT, {"temperature": 0.2, "max_tokens": 20}, {"temperature": 0.2, "max_tokens": 20}),
        ("openai/my-alias", {"params": {"seed": 3, "stop": ["x"]}}, {"seed": 3, "stop": ["x"]}),
        # reasoning models: max_tokens is sent as max_completion_tokens
        ("openai/gpt-5-mini", {"max_tokens": 40}, {"max_completion_tokens": 40}),
        # an o-series model without system messages gets the system text as a user turn
        ("openai/o3-mini", {"max_tokens": 40}, {"max_completion_tokens": 40}),
    ],
)
def test_openai_requests_are_the_same(name, settings, expect):
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    with FakeOpenAI() as server:
        sdk, lite = both(name, server.base_url, **settings)
        assert isinstance(sdk, OpenAIModel)
        schema = {"type": "object", "properties": {"a": {"type": "string"}}}
        for model in (sdk, lite):
            model.complete(messages, **model.json_params(schema, "x"))
        one, two = (r["body"] for r in server.requests)
    assert one == two
    assert {k: one[k] for k in expect} == expect
    assert one["model"] == name.split("/", 1)[1]
    system = "user" if name == "openai/o3-mini" else "system"
    assert one["messages"][0] == {"role": system, "content": "be brief"}


def test_openai_json_modes_are_litellms():
    schema = {"type": "object"}
    for name in (GPT, "openai/gpt-4", "openai/o1", "openai/o3-mini", "openai/gpt-5", "openai/x"):
        sdk = OpenAIModel(name, api_base="http://127.0.0.1:9")
        assert sdk.json_params(schema, "n") == LiteLLMModel(name).json_params(schema, "n"), name
        assert sdk.context_window() == LiteLLMModel(name).context_window(), name


def test_anthropic_requests_are_the_same():
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "two"},
        {"role": "user", "content": "three"},
        {"role": "user", "content": "four"},
    ]
    with FakeAnthropic(side_responder=shout) as api:
        for settings in ({}, {"temperature": 0.0, "max_tokens": 99}):
            sdk, lite = both("anthropic/claude-haiku-4-5", api.url, **settings)
            assert isinstance(sdk, AnthropicModel)
            for model in (sdk, lite):
                model.complete(messages)
        bodies = [r["body"] for r in api.api_requests()]
    assert bodies[0] == bodies[1] and bodies[2] == bodies[3]
    assert bodies[0]["system"] == [{"type": "text", "text": "be brief"}]  # short: unmarked
    assert bodies[0]["max_tokens"] == prices.max_output_tokens("anthropic/claude-haiku-4-5")
    assert bodies[0]["messages"][-1]["content"] == [
        {"type": "text", "text": "three"},
        {"type": "text", "text": "four"},
    ]
    assert (bodies[2]["temperature"], bodies[2]["max_tokens"]) == (0.0, 99)


# ------------------------------------------------------------- JSON replies


NOTES = {"notes": "- capitals matter"}
EDITS = {
    "edits": [
        {
            "op": "add",
            "anchor": None,
            "section": "Rules",
            "content": "- Reply in capitals.",
            "rationale": "the items expect capitals",
            "evidence": ["t1"],
        }
    ]
}


def json_for(prompt: str) -> dict:
    return NOTES if '"notes"' in prompt or "notes" in prompt.lower() else EDITS


def test_openai_json_replies_parse_to_the_same_object():
    with FakeOpenAI(lambda body: json.dumps(json_for(body["messages"][-1]["content"]))) as srv:
        for model in both(GPT, srv.base_url):
            notes = LLMOptimizer(model).meta_notes(1, "history")
            assert (notes.text, notes.skipped) == (NOTES["notes"], None)
            reply = model.complete("edits please", **model.json_params(EDITS_SCHEMA, "skill_edits"))
            assert parse_edits(reply.text, "failures") == parse_edits(json.dumps(EDITS), "failures")
        formats = [r["body"]["response_format"] for r in srv.requests]
    assert formats[0] == formats[2] and formats[0]["type"] == "json_schema"


def test_anthropic_json_replies_come_from_a_forced_tool_and_parse_the_same():
    def tool(body: dict) -> Turn:  # the SDK client: one tool, which the model must call
        (offered,) = body["tools"]
        return Turn.tool_use(offered["name"], json_for(prompt_text(body)))

    def native(body: dict) -> Turn:  # litellm: native structured output, a JSON text
        return Turn.text(json.dumps(json_for(prompt_text(body))))

    with FakeAnthropic(tool, side_responder=native) as api:
        sdk, lite = both(SONNET, api.url)
        results = {}
        for client, model in zip(CLIENTS, (sdk, lite)):
            notes = LLMOptimizer(model).meta_notes(1, "history")
            reply = model.complete("edits please", **model.json_params(EDITS_SCHEMA, "skill_edits"))
            results[client] = (notes.text, notes.skipped, parse_edits(reply.text, "failures"))
            assert reply.finish_reason == "stop"
        sent = api.api_requests()
    assert (
        results["sdk"]
        == results["litellm"]
        == (
            NOTES["notes"],
            None,
            parse_edits(json.dumps(EDITS), "failures"),
        )
    )
    edits_request = sent[1]["body"]
    assert edits_request["tools"] == [
        {
            "name": "skill_edits",
            "description": edits_request["tools"][0]["description"],
            "input_schema": EDITS_SCHEMA,
        }
    ]
    assert edits_request["tool_choice"] == {"type": "tool", "name": "skill_edits"}
    assert "tools" not in sent[3]["body"]  # litellm asked for native structured output


# ------------------------------------------------------------- retries and failures


class OpenAISide:
    name = GPT

    def __enter__(self):
        self.fake = FakeOpenAI().__enter__()
        self.url = self.fake.base_url
        return self

    def __exit__(self, *exc):
        self.fake.__exit__(*exc)

    def script(self, *replies):
        self.fake.script = list(replies)

    def error(self, status, message="error", headers=None):
        return Reply(status, error=message, headers=headers or {})

    def empty(self):
        return Reply(body={"choices": []})

    def requests(self):
        return len(self.fake.requests)


class AnthropicSide:
    name = SONNET

    def __enter__(self):
        self.queue: list[Turn] = []
        self.fake = FakeAnthropic(self.next, side_responder=self.next).__enter__()
        self.url = self.fake.url
        return self

    def next(self, body):
        return self.queue.pop(0) if self.queue else Turn.text(prompt_text(body))

    def __exit__(self, *exc):
        self.fake.__exit__(*exc)

    def script(self, *turns):
        self.queue = list(turns)

    def error(self, status, message=None, headers=None):
        return Turn.error(status, message=message, headers=headers)

    def empty(self):
        return Turn.raw({"type": "error-free but no message"})

    def requests(self):
        return len(self.fake.api_requests())


SIDES = [OpenAISide, AnthropicSide]


@pytest.fixture(params=[(side, client) for side in SIDES for client in CLIENTS], ids=str)
def fake(request):
    side, client = request.param
    with side() as s:
        s.client = client
        s.model = lambda retries=3: resolve_model(
            s.name, ModelSettings(api_base=s.url, client=s.client, backoff=0.01, retries=retries)
        )
        yield s


def test_a_rate_limit_with_retry_after_then_success(fake):
    fake.script(fake.error(429, "slow down", {"retry-after": "0.3"}))
    start = time.perf_counter()
    reply = fake.model().complete("ping")
    assert time.perf_counter() - start >= 0.3  # the server's wait, not the 0.01 backoff
    assert (reply.text, reply.attempts, fake.requests()) == ("ping", 2, 2)


def test_server_errors_then_success(fake):
    fake.script(fake.error(500), fake.error(503))
    reply = fake.model().complete("ping")
    assert (reply.text, reply.attempts, fake.requests()) == ("ping", 3, 3)


def test_an_empty_200_is_retried(fake):
    fake.script(fake.empty())
    reply = fake.model().complete("ping")
    assert (reply.text, reply.attempts, fake.requests()) == ("ping", 2, 2)


@pytest.mark.parametrize(
    "status, message, kind",
    [
        (401, "invalid api key", "auth"),
        (403, "no permission", "auth"),
        (402, "payment required", "quota"),
        (429, "You exceeded your current quota (insufficient_quota)", "quota"),
        (400, "Your credit balance is too low to access the API.", "quota"),
        (404, "no such model", "not_found"),
        (400, "bad field", "bad_request"),
        (400, "prompt is too long: 300000 tokens > 200000 maximum", "context_window"),
    ],
)
def test_failures_no_retry_can_fix_are_asked_once_and_classified_alike(fake, status, message, kind):
    fake.script(*[fake.error(status, message)] * 3)
    with pytest.raises(ModelError) as info:
        fake.model().complete("ping")
    err = info.value
    assert (err.kind, err.retryable, err.attempts, fake.requests()) == (kind, False, 1, 1)
    assert message.split(" (")[0] in str(err)


def test_retries_run_out_with_the_kind_and_the_count(fake):
    fake.script(*[fake.error(529)] * 4)
    with pytest.raises(ModelError) as info:
        fake.model(retries=2).complete("ping")
    assert (info.value.kind, info.value.attempts, fake.requests()) == ("server", 3, 3)
    assert "after 3 attempts" in str(info.value)


@pytest.mark.parametrize("name", [GPT, SONNET])
def test_no_key_at_all_is_an_auth_failure_and_nothing_is_sent(no_keys, monkeypatch, name):
    def no_waiting(seconds):
        raise AssertionError(f"retried after {seconds:.1f}s")

    with FakeOpenAI() as server, FakeAnthropic() as api:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)  # where a request would go
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setattr(time, "sleep", no_waiting)
        model = resolve_model(name, ModelSettings(client="sdk"))
        with pytest.raises(ModelError) as info:
            model.complete("hi")
        assert server.requests == [] and api.api_requests() == []
    assert (info.value.kind, info.value.retryable, info.value.attempts) == ("auth", False, 1)


def test_the_providers_variables_are_read(no_keys, monkeypatch):
    with FakeOpenAI() as server, FakeAnthropic(side_responder=shout) as api:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-from-env")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url + "/v1")  # litellm accepts either
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
        assert resolve_model(GPT).complete("hi").text == "hi"
        assert resolve_model(SONNET).complete("shout: hi").text == "HI"
        assert server.requests[0]["auth"] == "Bearer sk-openai-from-env"
        assert header(api.api_requests()[0], "x-api-key") == "sk-ant-from-env"


# ------------------------------------------------------------- which client


def test_the_client_setting_and_the_routing():
    def built(name, **settings):
        return type(resolve_model(name, ModelSettings(**settings))).__name__

    assert built(GPT) == "OpenAIModel"
    assert built("openai/local", api_base="http://127.0.0.1:9/v1") == "OpenAIModel"
    assert built(SONNET) == "AnthropicModel"
    assert built(GPT, client="litellm") == "LiteLLMModel"
    assert built("mistral/mistral-small-latest") == "LiteLLMModel"  # every other provider
    # settings the SDK client would send otherwise than litellm keep a model on litellm
    assert built(GPT, params={"logit_bias": {"1": 2}}) == "LiteLLMModel"
    assert built("openai/gpt-5-mini", temperature=0.0) == "LiteLLMModel"
    assert built(SONNET, params={"stop": ["x"]}) == "LiteLLMModel"
    with pytest.raises(InputError, match="logit_bias.*client: auto or litellm"):
        resolve_model(GPT, ModelSettings(client="sdk", params={"logit_bias": {}}), role="target")
    with pytest.raises(InputError, match="only openai/… and anthropic/…"):
        resolve_model("mistral/mistral-small-latest", ModelSettings(client="sdk"))


def eval_imports(tmp_path, name: str, env: dict[str, str], yaml_text: str = "") -> tuple:
    """Run `skillopt eval` of `name` in a child process; (exit code, output, the
    modules it imported that matter here)."""
    skill = write_skill(tmp_path / "skills", "caps", body=RULE)
    items = [{"id": "t1", "input": "word", "expected": "WORD", "split": "test"}]
    suite = write_suite(tmp_path / "suite.yaml", items, prompt="Shout: {input}")
    (tmp_path / "skillopt.yaml").write_text(yaml_text)
    watch = ("litellm", "openai", "anthropic")
    code = (
        "import atexit, runpy, sys\n"
        f"atexit.register(lambda: print('IMPORTED', [m for m in {watch!r} if m in sys.modules],"
        " file=sys.stderr))\n"
        f"sys.argv = ['skillopt', 'eval', {str(skill)!r}, '--tasks', {str(suite)!r},"
        f" '--target', {name!r}, '--split', 'test', '--store', 'store.sqlite']\n"
        "runpy.run_module('skillopt', run_name='__main__')\n"
    )
    child = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=child,
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("IMPORTED"))
    return done.returncode, done.stdout + done.stderr, eval(line.split(" ", 1)[1])


def test_an_openai_or_anthropic_eval_never_imports_litellm(tmp_path, no_keys):
    with FakeOpenAI(shout_openai) as server, FakeAnthropic(side_responder=shout) as api:
        env = {
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-test-openai",
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "sk-test-anthropic",
        }
        code, out, imported = eval_imports(tmp_path / "o", GPT, env)
        assert code == 0, out
        assert imported == ["openai"] and len(server.requests) == 1
        code, out, imported = eval_imports(tmp_path / "a", SONNET, env)
        assert code == 0, out
        assert imported == ["anthropic"] and len(api.api_requests()) == 1
        # a provider only litellm reaches imports it, then
        other = "mistral/mistral-small-latest"
        yaml_text = f"models:\n  {other}: {{api_base: '{server.base_url}'}}\n"
        code, out, imported = eval_imports(tmp_path / "m", other, env, yaml_text)
        assert code == 0, out
        assert "litellm" in imported and len(server.requests) == 2
