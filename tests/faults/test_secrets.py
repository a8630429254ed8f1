"""Secrets never leave: a provider that echoes the key in its error, a key passed as a
request header in a model's `params`, a key read through `api_key_env` — none of
them reaches the rollout store, the run files, the fingerprint or the console."""

from __future__ import annotations

import json
import sqlite3

import pytest
import yaml
from fakes.openai_server import FakeOpenAI, Reply
from helpers import write_skill, write_suite
from typer.testing import CliRunner

from skillopt._util import secrets
from skillopt._util.text import safe
from skillopt.cli.main import app

KEY = "sk-proj-test-Zx81QmLr0b2Y7kVf"
HEADER_SECRET = "hdr-secret-5be1e7a0c4d2"


@pytest.fixture
def world(isolated):
    skill = write_skill(isolated / "skills", "demo")
    suite = write_suite(
        isolated / "tasks" / "t.yaml",
        [{"id": f"t{i}", "input": f"q{i}", "expected": f"q{i}", "split": "test"} for i in range(3)],
    )
    return {"root": isolated, "skill": skill, "suite": suite}


def everything_written(root) -> str:
    """Every byte skillopt left on disk under `root` (store rows included), as text;
    not the user's own skillopt.yaml, where the secret was written on purpose."""
    parts = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and ".git" not in path.parts and path.name != "skillopt.yaml":
            parts.append(path.read_bytes().decode("utf-8", "replace"))
    store = root / "runs" / "rollouts.sqlite"
    if store.exists():
        db = sqlite3.connect(store)
        for table in ("rollouts",):
            for row in db.execute(f"SELECT * FROM {table}"):
                parts.append(json.dumps(row, default=str))
    return "\n".join(parts)


def test_a_provider_echoing_the_key_in_its_error_leaks_it_nowhere(world, monkeypatch):
    monkeypatch.setenv("SKILLOPT_TEST_KEY", KEY)
    with FakeOpenAI() as server:
        server.script = [Reply(500, error=f"upstream rejected key {KEY}: try again")] * 30
        (world["root"] / "skillopt.yaml").write_text(
            "models:\n"
            f"  openai/m: {{api_base: '{server.base_url}', api_key_env: SKILLOPT_TEST_KEY, "
            "backoff: 0.001, retries: 0}\n"
        )
        result = CliRunner().invoke(
            app,
            [
                "eval",
                str(world["skill"]),
                "--tasks",
                str(world["suite"]),
                "--target",
                "openai/m",
                "--json",
                "out.json",
            ],
        )
        assert server.requests[0]["auth"] == f"Bearer {KEY}"  # the key itself was used
    assert "upstream rejected key ***" in result.output
    assert KEY not in result.output
    written = everything_written(world["root"])
    assert "upstream rejected key ***" in written
    assert KEY not in written


def test_a_header_secret_in_params_is_redacted_in_run_files_and_fingerprints(world):
    suite = write_suite(
        world["root"] / "tasks" / "t2.yaml",
        [
            {
                "id": f"t{i}",
                "input": f"q{i}",
                "expected": f"q{i}",
                "split": ["train", "val", "test"][i % 3],
            }
            for i in range(6)
        ],
    )

    def answer(body):
        if "optimizer" in body["messages"][0]["content"]:
            return json.dumps({"edits": [], "notes": ""})
        return body["messages"][-1]["content"]

    with FakeOpenAI(answer) as server:
        (world["root"] / "skillopt.yaml").write_text(
            yaml.safe_dump(
                {
                    "models": {
                        "openai/m": {
                            "api_base": server.base_url,
                            "params": {"extra_headers": {"X-Gateway-Auth": HEADER_SECRET}},
                        },
                        "openai/o": {"api_base": server.base_url},
                    }
                }
            )
        )
        done = CliRunner().invoke(
            app,
            [
                "train",
                str(world["skill"]),
                "--tasks",
                str(suite),
                "--target",
                "openai/m",
                "--optimizer",
                "openai/o",
                "--epochs",
                "1",
                "--no-slow-update",
            ],
        )
        assert done.exit_code == 0, done.output
        sent = [r["headers"] for r in server.requests if r["body"]["model"] == "m"]
    # the header still reaches the provider: redaction is for what skillopt keeps
    assert sent and all(h.get("x-gateway-auth") == HEADER_SECRET for h in sent)
    assert HEADER_SECRET not in done.output
    assert HEADER_SECRET not in everything_written(world["root"])
    run_yaml = next((world["root"] / "runs").glob("*/run.yaml")).read_text()
    assert "X-Gateway-Auth: '***'" in run_yaml
    db = sqlite3.connect(world["root"] / "runs" / "rollouts.sqlite")
    fingerprints = [json.loads(f) for (f,) in db.execute("SELECT fingerprint FROM rollouts")]
    headers = {json.dumps(f["harness"]["target"].get("extra_headers")) for f in fingerprints}
    assert headers == {json.dumps({"X-Gateway-Auth": secrets.digest(HEADER_SECRET)})}


def test_a_changed_header_secret_changes_no_fingerprint_value_it_shows():
    a = secrets.redact(
        {"extra_headers": {"Authorization": "Bearer one-two-three-four"}},
        replace_with=secrets.digest,
    )
    b = secrets.redact(
        {"extra_headers": {"Authorization": "Bearer five-six-seven-eight"}},
        replace_with=secrets.digest,
    )
    assert a != b  # a different key may mean a different deployment: not the same rollout
    assert "one-two" not in json.dumps(a)


def test_scrub_blanks_environment_secrets_and_registered_values(monkeypatch):
    monkeypatch.setenv("ACME_API_KEY", "acme-0123456789abcdef")
    monkeypatch.setenv("HOME_DIRECTORY", "/home/not-a-secret")
    secrets.register("registered-secret-value")
    text = "a acme-0123456789abcdef b registered-secret-value c /home/not-a-secret"
    assert safe(text) == "a *** b *** c /home/not-a-secret"
    assert secrets.scrub("short") == "short"
