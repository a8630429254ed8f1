"""A missing provider key stops a command before its first model call: one line
naming the variable and where the model came from, exit 2, nothing sent, nothing
written. The dry run warns instead (and exits 2 too), `skillopt models` lists the
variable of each provider, and a key refused while the run goes (401) stops it as
an auth failure, never retried. Real provider clients (the OpenAI SDK by default),
real processes for the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fakes.openai_server import FakeOpenAI, Reply
from helpers import write_skill, write_suite
from typer.testing import CliRunner

from skillopt import api
from skillopt.cli.main import app
from skillopt.models import keys

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
runner = CliRunner()


@pytest.fixture
def words(isolated, no_keys):
    skill = write_skill(isolated / "skills", "words")
    items = [
        {"id": f"w{i}", "input": f"w{i}", "expected": f"w{i}", "split": split}
        for i, split in enumerate(["train", "train", "val", "val", "test"])
    ]
    suite = write_suite(isolated / "tasks" / "words.yaml", items)
    return skill, suite


def skillopt(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m skillopt ARGS` in a child process importing this checkout."""
    child = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)])}
    return subprocess.run(
        [sys.executable, "-m", "skillopt", *args],
        env=child,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_eval_without_the_key_stops_in_one_line_before_any_request(words, isolated):
    """DeepSeek's client would send a request with no key at all (to the server
    DEEPSEEK_API_BASE names, here a loopback one that answers anything): the check
    refuses first."""
    skill, suite = words
    with FakeOpenAI() as server:
        res = skillopt(
            "eval",
            str(skill),
            "--tasks",
            str(suite),
            "--target",
            "deepseek/deepseek-chat",
            env={"DEEPSEEK_API_BASE": server.base_url},
        )
        assert res.returncode == 2, res.stderr
        assert res.stderr.splitlines() == [
            "error: DEEPSEEK_API_KEY is not set: needed by --target deepseek/deepseek-chat"
        ]
        assert server.requests == []
    assert not (isolated / "runs").exists()  # no store opened, nothing written

    # the same command with the key set reaches the server: the refusal was the check
    with FakeOpenAI() as server:
        os.environ["DEEPSEEK_API_BASE"] = server.base_url
        os.environ["DEEPSEEK_API_KEY"] = "sk-test"
        try:
            ok = runner.invoke(
                app, ["eval", str(skill), "--tasks", str(suite), "-t", "deepseek/deepseek-chat"]
            )
        finally:
            del os.environ["DEEPSEEK_API_BASE"], os.environ["DEEPSEEK_API_KEY"]
        assert ok.exit_code == 0, ok.output
        assert len(server.requests) == 1


def test_train_names_every_role_and_where_its_model_came_from(words, isolated):
    """The suite's defaults name the target, the flag the optimizer: one line, one
    variable, both uses; no run directory is made."""
    skill, suite = words
    data = yaml.safe_load(suite.read_text())
    data["defaults"] = {"target": "openai/gpt-4o-mini"}
    suite.write_text(yaml.safe_dump(data))
    res = skillopt("train", str(skill), "--tasks", str(suite), "--optimizer", "openai/gpt-4o")
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines() == [
        "error: OPENAI_API_KEY is not set: needed by target openai/gpt-4o-mini (from the "
        "defaults of tasks/words.yaml) and --optimizer openai/gpt-4o"
    ]
    assert not (isolated / "runs").exists()


def test_a_dry_run_prints_the_plan_and_warns_for_each_missing_key(words):
    skill, suite = words
    res = runner.invoke(
        app,
        [
            "train",
            str(skill),
            "--tasks",
            str(suite),
            "--target",
            "anthropic/claude-haiku-4-5",
            "--optimizer",
            "gemini/gemini-2.5-pro",
            "--dry-run",
        ],
    )
    assert res.exit_code == 2  # what the run itself would do
    assert "Plan (dry run: no model was called)" in res.stdout
    assert "optimizer calls: at most" in res.stdout
    assert res.stderr.splitlines() == [
        "warning: ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) is not set: needed by "
        "--target anthropic/claude-haiku-4-5 (the run would not start)",
        "warning: GEMINI_API_KEY (or GOOGLE_API_KEY) is not set: needed by "
        "--optimizer gemini/gemini-2.5-pro (the run would not start)",
    ]


def test_validate_names_the_judge_and_the_item_that_asks_for_it(words, isolated):
    skill, suite = words
    data = yaml.safe_load(suite.read_text())
    data["items"][-1]["scorer"] = {"type": "judge", "rubric": "same word", "model": "xai/grok-4"}
    suite.write_text(yaml.safe_dump(data))
    res = runner.invoke(
        app, ["validate", str(skill), "--tasks", str(suite), "--target", "scripted/echo"]
    )
    assert res.exit_code == 2
    assert res.stderr.strip() == (
        "error: XAI_API_KEY is not set: needed by judge xai/grok-4 (from the scorer "
        "of item 'w4' in tasks/words.yaml)"
    )


def test_the_python_api_raises_a_typed_error(words):
    from skillopt.errors import InputError, MissingCredentials

    skill, suite = words
    with pytest.raises(MissingCredentials, match=r"^MISTRAL_API_KEY is not set") as info:
        api.evaluate(skill, suite, target="mistral/mistral-small-latest")
    assert isinstance(info.value, InputError) and info.value.exit_code == 2


def test_a_model_on_its_own_server_needs_no_key(words):
    skill, suite = words
    with FakeOpenAI() as server:
        Path("skillopt.yaml").write_text(
            f"models:\n  openai/loop: {{api_base: '{server.base_url}'}}\n"
        )
        res = runner.invoke(app, ["eval", str(skill), "--tasks", str(suite), "-t", "openai/loop"])
        assert res.exit_code == 0, res.output
        assert len(server.requests) == 1


def test_a_refused_key_stops_the_run_unretried_and_resume_checks_the_key_first(
    words, isolated, monkeypatch
):
    """The server answers 401 to everything: two rollouts, one request each, and the
    run stops, checkpointed. Resuming it with the key gone fails in one line naming
    the run, before any request."""
    skill, suite = words
    with FakeOpenAI() as server:
        server.script = [Reply(401, error="Incorrect API key provided")] * 10
        Path("skillopt.yaml").write_text(
            "target: openai/loop\noptimizer: exemplars\nconcurrency: 1\n"
            f"models:\n  openai/loop: {{api_base: '{server.base_url}', api_key_env: LOOP_KEY}}\n"
        )
        monkeypatch.setenv("LOOP_KEY", "sk-revoked")
        res = runner.invoke(app, ["train", str(skill), "--tasks", str(suite)])
        assert res.exit_code == 2, res.output
        assert "2 tasks in a row failed the same way (auth)" in res.stderr
        assert len(server.requests) == 2  # one per task: a refused key is not retried
        run_id = next(
            p.name for p in (isolated / "runs").iterdir() if p.is_dir() and "words" in p.name
        )
        assert f"--resume {run_id}" in res.stderr

        monkeypatch.delenv("LOOP_KEY")
        again = runner.invoke(app, ["train", "--resume", run_id])
        assert again.exit_code == 2
        assert again.stderr.strip() == (
            f"error: LOOP_KEY is not set: needed by target openai/loop (from run {run_id})"
        )
        assert len(server.requests) == 2


def test_models_lists_each_provider_with_its_variable_and_never_a_value(no_keys, monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "sk-google-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "")  # blank: not set
    res = runner.invoke(app, ["models"])
    assert res.exit_code == 0, res.output
    for provider in keys.PROVIDERS:  # every provider, with the variable to set
        assert f"{provider.name}/…" in res.stdout
        assert any(f"${var}" in res.stdout for var in provider.keys)
    assert "key in $GOOGLE_API_KEY" in res.stdout
    assert "secret" not in res.stdout
    infos = {m.name: m for m in api.models()}
    assert infos["gemini/…"].variables == {"GEMINI_API_KEY": False, "GOOGLE_API_KEY": True}
    assert infos["gemini/…"].usable and infos["gemini/…"].detail == "key in $GOOGLE_API_KEY"
    assert not infos["openai/…"].usable and infos["openai/…"].detail == "set $OPENAI_API_KEY"
    assert infos["anthropic/…"].detail == "set $ANTHROPIC_API_KEY or $ANTHROPIC_AUTH_TOKEN"
    names = [m.name for m in api.models()]
    assert names.index("gemini/…") < names.index("openai/…")  # usable providers first
    assert all(f"{p.name}/…" in infos for p in keys.PROVIDERS)


@pytest.mark.parametrize(
    ("how", "by"),
    [
        ("env", "SKILLOPT_TARGET=cohere/command-r"),
        ("file", "target cohere/command-r (from skillopt.yaml)"),
    ],
)
def test_a_model_set_outside_the_flags_is_named_by_its_origin(words, monkeypatch, how, by):
    skill, suite = words
    if how == "env":
        monkeypatch.setenv("SKILLOPT_TARGET", "cohere/command-r")
    else:
        Path("skillopt.yaml").write_text("target: cohere/command-r\n")
    res = runner.invoke(app, ["eval", str(skill), "--tasks", str(suite)])
    assert res.exit_code == 2
    assert res.stderr.strip() == f"error: COHERE_API_KEY is not set: needed by {by}"
