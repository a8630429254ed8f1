"""Training with the target and the optimizer both reached over real HTTP on a
loopback OpenAI-compatible server, through each client (the OpenAI SDK, litellm)."""

from __future__ import annotations

import json

import pytest
from fakes.openai_server import FakeOpenAI, Reply
from train.world import HELPFUL, follow_skill

from skillopt import api


def answer(body):
    messages = body["messages"]
    if "You are the optimizer" in messages[0]["content"]:
        prompt = messages[-1]["content"]
        if '"notes"' in prompt:
            return json.dumps({"notes": "- capitals matter"})
        if "Tasks the agent FAILED" in prompt:
            return json.dumps(
                {
                    "edits": [
                        {
                            "op": "add",
                            "anchor": "- Reply with the item only.",
                            "section": None,
                            "content": f"- {HELPFUL}",
                            "rationale": "word items are expected in capitals",
                            "evidence": ["word-0"],
                        }
                    ]
                }
            )
        return json.dumps({"edits": []})
    return follow_skill(messages)


@pytest.mark.parametrize("client", ["auto", "litellm"])
def test_train_over_http(world, client):
    with FakeOpenAI(answer) as server:
        server.script = [Reply(503, error="warming up")]  # the first call is retried
        settings = f"{{api_base: '{server.base_url}', backoff: 0.01, client: {client}}}"
        (world["root"] / "skillopt.yaml").write_text(
            f"models:\n  openai/target-m: {settings}\n  openai/optimizer-m: {settings}\n"
        )
        result = api.train(
            world["skill"],
            world["suite"],
            **{
                "target": "openai/target-m",
                "optimizer": "openai/optimizer-m",
                "epochs": 2,
                "batch_size": 40,
                "minibatch_size": 40,
                "slow_update": False,
                "concurrency": 2,
            },
        )
        opt_requests = [
            r["body"]
            for r in server.requests
            if "You are the optimizer" in r["body"]["messages"][0]["content"]
        ]
    # the accepted step saturates validation: epoch 2 is not run
    assert [s["decision"] for s in result.summary["steps"]] == ["initial", "accepted"]
    assert result.summary["stopped_early"]["reason"].startswith("validation saturated")
    assert result.summary["test"]["best"]["mean"] == 1.0
    assert result.summary["test"]["no_skill"]["mean"] == 0.5
    # the provider's JSON mode was asked for; the target got no such parameter
    assert all(
        r.get("response_format", {}).get("type") in ("json_object", "json_schema")
        for r in opt_requests
    )
    target_requests = [r["body"] for r in server.requests if r["body"]["model"] == "target-m"]
    assert target_requests and all("response_format" not in r for r in target_requests)
    acct = result.summary["accounting"]
    assert acct["optimizer_calls"] == len(opt_requests) - 0
    assert acct["optimizer_input_tokens"] == 11 * acct["optimizer_calls"]
    assert acct["target_cost"] is None  # no price known for these names
