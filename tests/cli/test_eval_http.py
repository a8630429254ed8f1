"""`skillopt eval` over real HTTP, against a loopback server configured in a project
file (no internet, no key), through each client: the provider's SDK (the default,
`client: auto`) and litellm."""

from __future__ import annotations

import json

import pytest
from fakes.anthropic_api import FakeAnthropic, Turn, prompt_text
from fakes.openai_server import FakeOpenAI, Reply
from helpers import write_skill, write_suite
from typer.testing import CliRunner

from skillopt.cli.main import app


def answer(body):
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    text = body["messages"][-1]["content"].removeprefix("Shout: ")
    return text.upper() if "capitals" in system else text


@pytest.fixture(params=["auto", "litellm"])
def client(request):
    return request.param


def test_eval_over_http_with_a_rate_limit_on_the_way(isolated, client):
    skill = write_skill(isolated / "skills", "shout", body="Reply in capitals, nothing else.\n")
    items = [
        {"id": f"s{i}", "input": f"go team {i}", "expected": f"GO TEAM {i}", "split": "test"}
        for i in range(5)
    ]
    suite = write_suite(isolated / "tasks" / "shout.yaml", items, prompt="Shout: {input}")
    with FakeOpenAI(answer) as server:
        server.script = [Reply(429, headers={"retry-after": "0"}, error="slow down")]
        (isolated / "skillopt.yaml").write_text(
            "target: openai/loopback\nconcurrency: 2\n"
            f"models:\n  openai/loopback: {{api_base: '{server.base_url}', backoff: 0.01, "
            f"client: {client}}}\n"
        )
        res = CliRunner().invoke(
            app,
            ["eval", str(skill), "--tasks", str(suite), "--compare-no-skill", "--json", "r.json"],
        )
        assert res.exit_code == 0, res.output
        assert len(server.requests) == 11  # 10 rollouts + 1 retried 429
        data = json.load(open("r.json"))
        res_by = {r["variant"]: r for r in data["results"]}
        assert res_by["skill"]["mean"] == 1.0 and res_by["no-skill"]["mean"] == 0.0
        assert res_by["skill"]["tokens"] == 5 * 14
        assert res_by["skill"]["cost"] is None  # unknown price: shown as n/a, never $0
        assert "n/a" in res.stdout
        assert "cached tokens" not in res.stdout  # the server reported none
        assert data["comparisons"][0]["delta"] == 1.0
        first = server.requests[-1]["body"]
        assert first["model"] == "loopback"

        again = CliRunner().invoke(app, ["eval", str(skill), "--tasks", str(suite)])
        assert again.exit_code == 0
        assert len(server.requests) == 11  # everything came from the store


def test_eval_shows_the_tokens_read_from_anthropics_prompt_cache(isolated, client):
    body = "Reply in capitals, nothing else.\n" * 150  # long enough to be cached
    skill = write_skill(isolated / "skills", "shout", body=body)
    items = [
        {"id": f"s{i}", "input": f"go{i}", "expected": f"GO{i}", "split": "test"} for i in range(3)
    ]
    suite = write_suite(isolated / "tasks" / "shout.yaml", items, prompt="Shout: {input}")

    def shout(request):
        return Turn.text(prompt_text(request).removeprefix("Shout: ").upper())

    with FakeAnthropic(side_responder=shout, cache=True) as api:
        (isolated / "skillopt.yaml").write_text(
            "target: anthropic/claude-sonnet-4-5\nconcurrency: 1\n"
            f"models:\n  anthropic/claude-sonnet-4-5: {{api_base: '{api.url}', client: {client}}}\n"
        )
        res = CliRunner().invoke(
            app, ["eval", str(skill), "--tasks", str(suite), "--json", "r.json"]
        )
        usages = [r["usage"] for r in api.api_requests()]
    assert res.exit_code == 0, res.output
    (result,) = json.load(open("r.json"))["results"]
    read = sum(u["cache_read_input_tokens"] for u in usages)
    assert read > 0 and result["cached_tokens"] == read and result["mean"] == 1.0
    whole = sum(
        u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
        for u in usages
    )
    assert (
        f"cached tokens (skill · test): {read:,} of {whole:,} input tokens read from the "
        "provider's prompt cache" in " ".join(res.stdout.split())
    )
