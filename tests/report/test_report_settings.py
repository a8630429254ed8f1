"""The settings a report shows: the sections a run's harness and executor read, and
anything changed from its default; and the settings in which two runs differ."""

from __future__ import annotations

from skillopt.config import Settings
from skillopt.runs.html.settings import differing, shown_settings


def settings(**changes) -> dict:
    base = Settings().model_dump(mode="json")
    for key, value in changes.items():
        section, _, leaf = key.partition("__")
        if leaf:
            base[section] = {**base[section], leaf: value}
        else:
            base[key] = value
    return base


def keys(shown) -> set[str]:
    return {k for k, _, _ in shown}


def sections(shown) -> set[str]:
    return {k.split(".")[0] for k, _, _ in shown}


def test_a_plain_chat_run_shows_none_of_the_agent_or_ray_sections():
    shown, left_out = shown_settings(settings(target="local/gemma-3-270m"))
    assert not sections(shown) & {"agent", "claude_code", "codex", "command", "ray"}
    assert set(left_out) == {"agent", "claude_code", "codex", "command", "ray"}
    assert len(shown) < 45  # every run-level setting, no harness's section
    assert ("target", '"local/gemma-3-270m"', True) in shown
    assert "epochs" in keys(shown) and "judge" in keys(shown)  # run-level: always shown


def test_a_section_changed_from_its_default_is_shown_whatever_the_harness():
    shown, left_out = shown_settings(settings(codex__binary="/opt/codex"))
    assert ("codex.binary", '"/opt/codex"', True) in shown
    assert "codex.sandbox" not in keys(shown) and "codex" not in left_out


def test_each_harness_and_executor_shows_its_own_sections():
    claude, _ = shown_settings(settings(harness="claude-code"))
    assert {"agent", "claude_code"} <= sections(claude) and "codex" not in sections(claude)
    codex, _ = shown_settings(settings(harness="codex"))
    assert {"agent", "codex"} <= sections(codex) and "claude_code" not in sections(codex)
    ray, _ = shown_settings(settings(executor="ray"))
    assert "ray" in sections(ray) and "agent" not in sections(ray)
    plugin, _ = shown_settings(settings(harness="my-agent"))
    assert "agent" in sections(plugin)  # a plugin harness may run an agent


def test_differing_lists_the_settings_two_runs_do_not_share():
    a = settings(target="openai/gpt-4o-mini", epochs=2)
    b = settings(target="openai/gpt-4.1-mini", epochs=2, codex__binary="x")
    assert differing(a, b) == [
        ("target", '"openai/gpt-4o-mini"', '"openai/gpt-4.1-mini"'),
        ("codex.binary", '"codex"', '"x"'),
    ]
    assert differing(a, a) == []
    assert differing({"extra": 1}, {}) == [("extra", "1", "—")]
