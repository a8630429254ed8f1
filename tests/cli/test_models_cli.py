"""`skillopt models` and what the CLI imports at start-up."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from skillopt.cli.main import app


def test_models_lists_embedded_providers_and_configured_without_keys(isolated, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret-value")
    monkeypatch.setenv("MY_LOCAL_KEY", "another-secret")
    (isolated / "skillopt.yaml").write_text(
        "models:\n  openai/llama: {api_base: 'http://127.0.0.1:8000/v1', "
        "api_key_env: MY_LOCAL_KEY}\n  openai/other: {api_key_env: UNSET_KEY}\n"
    )
    res = CliRunner().invoke(app, ["models"])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "local/gemma-3-270m" in out and "embedded" in out
    assert "exemplars" in out
    assert "openai/…" in out and "$OPENAI_API_KEY" in out
    assert "openai/llama" in out and "http://127.0.0.1:8000/v1" in out
    assert "(not set)" in out  # openai/other's key variable is missing
    assert "secret" not in out  # key values are never printed
    assert "set $ANTHROPIC_API_KEY" in out  # no key: listed with the variable to set


def test_help_does_not_import_litellm_or_llama_cpp():
    code = (
        "import sys; from skillopt.cli.main import app; "
        "print('litellm' in sys.modules, 'llama_cpp' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "False"]


def test_models_lists_the_agent_clis_found_on_path(agents, monkeypatch):
    from skillopt import api

    infos = {m.name: m for m in api.models()}
    claude = infos["--harness claude-code"]
    assert claude.usable and str(agents.bin / "claude") in claude.detail
    monkeypatch.setenv("PATH", "/nonexistent")
    infos = {m.name: m for m in api.models()}
    assert not infos["--harness codex"].usable
    assert infos["--harness codex"].detail == "`codex` not on PATH"
