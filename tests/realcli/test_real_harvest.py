"""`skillopt tasks harvest` on the transcripts the REAL Claude Code and Codex CLIs
write (the releases `.ci/run` pins, each against a loopback fake of its API, run
without `--no-session-persistence` / `--ephemeral`, as a user runs them).

The fake model makes each agent read a file holding an API key, so the key is in a
tool result of the transcript; the user's prompt carries a password in words and a
`DB_PASSWORD=` assignment. None of the three may reach the review file, the suite
made from it or the console, and the counts printed say what was redacted.
"""

from __future__ import annotations

import os
import subprocess

import yaml
from conftest import real_cli
from fakes import responses_api as codex_api
from fakes.anthropic_api import FakeAnthropic, Turn, tool_results
from typer.testing import CliRunner

from skillopt.cli.main import app

KEY = "sk-ant-api03-Zx9Qw2Lm7Rt5Yp3Kd8Hs1Vb6Nc4Gf0JaZx9Qw2Lm7Rt5Yp3Kd8Hs1Vb6Nc4Gf0JaAA"
PASSWORD, DB_PASSWORD = "hunter2-Secret!", "pg-s3cret-99"
PROMPT = f"Check config.env please, my password is {PASSWORD} and DB_PASSWORD={DB_PASSWORD}"
SECRETS = (KEY, PASSWORD, DB_PASSWORD)


def run_claude(home, project) -> None:
    cli = real_cli("claude")

    def model(body: dict) -> Turn:
        if not tool_results(body):
            return Turn.tool_use("Read", {"file_path": str(project / "config.env")})
        # the answer quotes the file: the key is in the agent's words too
        return Turn.text(f"The config sets DEBUG=1 and ANTHROPIC_API_KEY={KEY}.")

    env = _env(home)
    with FakeAnthropic(model) as api:
        env.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="sk-ant-fake-0123456789")
        done = subprocess.run(
            [str(cli), "-p", PROMPT, "--allowedTools", "Read"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0 and not api.errors, done.stdout + done.stderr


def run_codex(home, project) -> None:
    cli = real_cli("codex")

    def model(body: dict) -> codex_api.Turn:
        if not codex_api.function_outputs(body):
            return codex_api.shell("cat config.env")
        return codex_api.text("The config sets DEBUG=1 and an API key.")

    env = _env(home)
    with codex_api.FakeResponses(model) as api:
        api.write_config(home / ".codex", env_key="FAKE_PROVIDER_KEY")
        env.update(CODEX_HOME=str(home / ".codex"), FAKE_PROVIDER_KEY="sk-fake-provider-0123456789")
        argv = [str(cli), "exec", "--json", "--skip-git-repo-check", "-C", str(project), PROMPT]
        done = subprocess.run(
            argv,
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0 and not api.errors, done.stdout + done.stderr


def _env(home) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "SKILLOPT_"))
    }
    env["HOME"] = str(home)
    return env


def test_harvest_reads_what_the_real_clis_wrote_and_no_secret_gets_through(home, isolated):
    project = isolated / "proj"
    project.mkdir()
    (project / "config.env").write_text(f"ANTHROPIC_API_KEY={KEY}\nDEBUG=1\n")
    run_claude(home, project)
    run_codex(home, project)
    claude_dir = home / ".claude" / "projects"
    codex_dir = home / ".codex" / "sessions"
    transcripts = [*claude_dir.rglob("*.jsonl"), *codex_dir.rglob("*.jsonl")]
    written = "".join(p.read_text() for p in transcripts)
    # the transcripts really hold every secret (the key in a tool result), so the
    # harvest below cannot pass by reading nothing
    assert len(transcripts) == 2 and all(s in written for s in SECRETS)
    assert '"tool_result"' in written and "function_call_output" in written

    res = CliRunner().invoke(
        app,
        [
            "tasks",
            "harvest",
            "--from",
            str(claude_dir),
            "--from",
            str(codex_dir),
            "-o",
            "review.yaml",
        ],
    )
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].startswith("read 2 files: sessions 1 claude-code, 1 codex; ")
    assert lines[1:3] == [
        "candidates: 1 (2 requests found, 1 merged as near-duplicates); signals: none",
        "redacted: 5 (anthropic-key 1, password 2, secret-assignment 2)",
    ]
    review_text = (isolated / "review.yaml").read_text()
    review = yaml.safe_load(review_text)
    (entry,) = review["candidates"]
    assert entry["request"] == (
        "Check config.env please, my password is [REDACTED:password] and "
        "DB_PASSWORD=[REDACTED:secret-assignment]"
    )
    assert entry["context"] == {"cwd": str(project), "files_read": [str(project / "config.env")]}
    assert entry["what_happened"]["answer"] == (
        "The config sets DEBUG=1 and ANTHROPIC_API_KEY=[REDACTED:anthropic-key]."
    )
    assert [s["agent"] for s in entry["seen"]] == ["claude-code", "codex"]

    entry.update(keep=True, expected="DEBUG=1")
    (isolated / "review.yaml").write_text(yaml.safe_dump(review))
    made = CliRunner().invoke(
        app, ["tasks", "harvest", "--reviewed", "review.yaml", "-o", "tasks/config.yaml"]
    )
    assert made.exit_code == 0, made.output
    suite_text = (isolated / "tasks" / "config.yaml").read_text()
    for text in (review_text, suite_text, res.output, made.output):
        assert not any(s in text for s in SECRETS)
    assert "[REDACTED:password]" in suite_text
