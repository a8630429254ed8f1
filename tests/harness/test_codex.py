"""The codex harness against the stand-in `codex` (tests/fakes/agent_cli.py): the
`codex exec` contract, the skill in `.agents/skills/`, JSONL events with unknown
types, turn failures, garbage, crashes and hangs."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from fakes.agent_cli import HELPFUL, SAVE
from helpers import write_skill, write_suite

from skillopt import api
from skillopt.config import Settings
from skillopt.errors import HarnessError, SystemicFailure
from skillopt.harness import build_harness
from skillopt.harness.codex import LAST_MESSAGE, CodexHarness
from skillopt.harness.codex_events import item_steps, read_jsonl
from skillopt.rollouts.engine import RolloutEngine
from skillopt.skill.document import Skill
from skillopt.store.rollouts import RolloutStore
from skillopt.suite.loader import load_suite

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@pytest.fixture
def skill_dir(isolated):
    return write_skill(isolated / "skills", "caps", body=f"# Caps\n\n- {HELPFUL}\n")


@pytest.fixture
def suite_path(isolated):
    items = [
        {"id": f"word-{i}", "input": f"word-{i}", "expected": f"WORD-{i}", "split": "test"}
        for i in range(3)
    ]
    return write_suite(isolated / "tasks" / "caps.yaml", items)


def harness(tmp_path, **conf) -> CodexHarness:
    agent = conf.pop("agent", {})
    settings = Settings(
        harness="codex",
        target=conf.pop("target", None),
        codex=conf,
        agent=agent,
        run_dir=str(tmp_path / "runs"),
    )
    h = build_harness(settings)
    h.check()
    return h


def first_task(suite_path, i=0):
    return load_suite(suite_path).tasks[i]


def test_exec_contract_and_skill_location(agents, tmp_path, skill_dir, suite_path):
    h = harness(tmp_path, target="openai/gpt-5-codex", args=["--ephemeral"])
    task = first_task(suite_path, 1)
    traj = h.run(Skill.load(skill_dir), task)
    (call,) = agents.calls("codex")
    ws = call["cwd"]
    io = str(Path(ws).parent / "io")
    assert call["argv"] == [
        "exec",
        "--json",
        "--sandbox",
        "workspace-write",
        "--skip-git-repo-check",
        "-C",
        ws,
        "-m",
        "gpt-5-codex",
        "--output-last-message",
        f"{io}/{LAST_MESSAGE}",
        "--ephemeral",
        "-",
    ]
    assert "--full-auto" not in call["argv"]
    assert call["stdin"] == task.prompt and call["process_cwd"] == ws
    assert call["skills"] == {"caps": (skill_dir / "SKILL.md").read_text()}
    assert set(call["files"]) == {".agents/skills/caps/SKILL.md"}  # the last message is not
    assert traj.answer == "WORD-1" and traj.skill_invoked is True
    assert h.release(traj, failed=False) is None and not Path(ws).exists()
    assert h.fingerprint()["cli"] == "codex-cli 0.150.0"


def test_events_become_usage_steps_and_the_answer(
    agents, tmp_path, skill_dir, suite_path, isolated
):
    skill = write_skill(isolated / "skills", "saver", body=f"- {HELPFUL}\n- {SAVE}\n")
    h = harness(tmp_path)
    traj = h.run(Skill.load(skill), first_task(suite_path))
    assert traj.answer == "WORD-0" and traj.error is None
    assert traj.usage.input_tokens == 200 and traj.usage.output_tokens == 20
    assert traj.usage.cached_input_tokens == 50
    assert traj.model_calls == 1 and traj.info["thread_id"] == "th-1"
    types = [s["type"] for s in traj.steps]
    assert types == ["command", "reasoning", "hologram", "file_change"]  # unknowns tolerated
    command = traj.steps[0]
    assert command["command"] == "bash -lc 'cat .agents/skills/saver/SKILL.md'"
    assert SAVE in command["output"] and command["exit_code"] == 0
    assert traj.steps[3]["input"] == [{"path": "answer.txt", "kind": "add"}]
    assert (traj.workspace / "answer.txt").read_text() == "WORD-0\n"
    h.release(traj, failed=False)


def test_skill_not_read_is_reported(agents, tmp_path, skill_dir, suite_path):
    agents.configure("codex", invoke=False)
    h = harness(tmp_path)
    traj = h.run(Skill.load(skill_dir), first_task(suite_path))
    h.release(traj, failed=False)
    assert traj.answer == "word-0" and traj.skill_invoked is False


@pytest.mark.parametrize(
    "mode, kind, text",
    [
        ("auth", "auth", "401 Unauthorized: invalid api key"),
        ("quota", "quota", "You exceeded your current quota"),
    ],
)
def test_turn_failures_are_unscored_and_classified(
    agents, tmp_path, skill_dir, suite_path, mode, kind, text
):
    agents.configure("codex", mode=mode)
    engine = RolloutEngine(harness(tmp_path), RolloutStore(":memory:"), concurrency=1)
    (r,) = engine.run(Skill.load(skill_dir), [first_task(suite_path)])
    assert not r.scored and r.error_kind == kind and text in r.error
    assert r.error.startswith("codex turn failed:")


def test_quota_on_every_task_stops_the_run(agents, tmp_path, skill_dir, isolated):
    agents.configure("codex", mode="quota")
    suite = write_suite(
        isolated / "tasks" / "many.yaml",
        [
            {"id": f"t{i}", "input": f"word-{i}", "expected": "x", "split": "test"}
            for i in range(20)
        ],
    )
    with pytest.raises(SystemicFailure, match=r"\(quota\): codex turn failed: You exceeded"):
        api.evaluate(skill_dir, suite, **{"harness": "codex", "concurrency": 2})
    assert 5 <= len(agents.calls("codex")) <= 7  # the in-flight ones finish, no more start


@pytest.mark.parametrize(
    "mode, kind, text",
    [
        ("garbage", "bad_output", "without completing a turn or a final message: Segmentation"),
        ("exit", "agent_error", "codex exited 101: thread 'main' panicked"),
    ],
)
def test_garbage_and_crashes_are_unscored(
    agents, tmp_path, skill_dir, suite_path, mode, kind, text
):
    agents.configure("codex", mode=mode)
    engine = RolloutEngine(harness(tmp_path), RolloutStore(":memory:"), concurrency=1)
    (r,) = engine.run(Skill.load(skill_dir), [first_task(suite_path)])
    assert not r.scored and r.error_kind == kind and text in r.error


def test_a_hang_is_killed(agents, tmp_path, skill_dir, suite_path):
    agents.configure("codex", mode="hang")
    h = harness(tmp_path, agent={"timeout": 1})
    start = time.monotonic()
    traj = h.run(Skill.load(skill_dir), first_task(suite_path))
    assert time.monotonic() - start < 10
    assert traj.error_kind == "timeout" and traj.answer is None
    assert traj.info["turns"] == 1  # what was printed before the hang is still read
    h.release(traj, failed=True)


def test_a_removed_flag_is_a_usage_error_the_run_reports(agents, tmp_path, skill_dir, suite_path):
    h = harness(tmp_path, args=["--full-auto"])  # what an old config might still say
    traj = h.run(Skill.load(skill_dir), first_task(suite_path))
    h.release(traj, failed=False)
    assert traj.answer is None and "unexpected argument '--full-auto'" in traj.error


def test_read_only_sandbox_means_the_file_is_not_written(agents, tmp_path, isolated, suite_path):
    skill = write_skill(isolated / "skills", "saver", body=f"- {HELPFUL}\n- {SAVE}\n")
    verify = {"type": "command", "run": 'test "$(cat answer.txt)" = "$SKILLOPT_EXPECTED"'}
    suite = write_suite(
        isolated / "tasks" / "files.yaml",
        [
            {
                "id": "word-0",
                "input": "word-0",
                "expected": "WORD-0",
                "split": "test",
                "scorer": verify,
            }
        ],
    )
    ok = api.evaluate(skill, suite, **{"harness": "codex"}).results[0].rollouts[0]
    assert ok.scored and ok.passed
    (isolated / "skillopt.yaml").write_text("codex:\n  sandbox: read-only\n")
    denied = api.evaluate(skill, suite, **{"harness": "codex"}).results[0].rollouts[0]
    assert not denied.cached  # the sandbox is in the fingerprint
    assert denied.scored and not denied.passed  # the agent's failure, scored as such
    assert json.loads(json.dumps(denied.trajectory["steps"]))[-1]["status"] == "failed"


def test_missing_codex_is_one_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HarnessError, match=r"needs `codex`, which is not on PATH.*--harness"):
        build_harness(Settings(harness="codex")).check()


def test_environment_passes_openai_and_codex_variables_only(
    agents, tmp_path, skill_dir, suite_path, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    h = harness(tmp_path)
    h.release(h.run(Skill.load(skill_dir), first_task(suite_path)), failed=False)
    env = agents.calls("codex")[0]["env"]
    assert "OPENAI_API_KEY" in env and "CODEX_HOME" in env
    assert "ANTHROPIC_API_KEY" not in env and "GITHUB_TOKEN" not in env


def test_parsing_tolerates_old_names_and_partial_items():
    lines = (
        "\n".join(
            json.dumps(e)
            for e in [
                {"type": "thread.started", "thread_id": "x"},
                {
                    "type": "item.started",
                    "item": {
                        "id": "1",
                        "type": "command_execution",
                        "command": "ls",
                        "status": "in_progress",
                    },
                },
                {
                    "type": "item.completed",
                    "item": {"id": "2", "item_type": "assistant_message", "text": "old shape"},
                },
                {
                    "type": "item.completed",
                    "item": {
                        "id": "3",
                        "type": "todo_list",
                        "items": [{"text": "a", "completed": True}],
                    },
                },
            ]
        )
        + "\nnot json\n{broken\n"
    )
    events = read_jsonl(lines)
    assert len(events) == 4
    steps, messages, invoked = item_steps(events, "caps")
    assert messages == ["old shape"] and invoked is False
    assert steps[0] == {"type": "command", "command": "ls", "output": "", "status": "in_progress"}
    assert steps[1]["type"] == "todo_list" and '"completed": true' in steps[1]["text"]


# ---------------------------------------------------------------------- hermetic rollouts
USER_CONFIG = """\
model = "gpt-fake"
model_provider = "gateway"
notify = ["say", "done"]
profile = "work"

[model_providers.gateway]
name = "Company gateway"
base_url = "http://127.0.0.1:9/v1"
env_key = "GATEWAY_KEY"
wire_api = "responses"

[model_providers.gateway.http_headers]
X-Team = "skills"

[mcp_servers.docs]
command = "docs-server"

[profiles.work]
model_reasoning_effort = "low"
"""


@pytest.fixture
def user_codex(isolated, monkeypatch):
    """The user's CODEX_HOME: a gateway provider, a login, their AGENTS.md, a skill,
    sessions and history; and a personal skill in ~/.agents/skills."""
    home = isolated.parent / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(USER_CONFIG)
    (home / "auth.json").write_text('{"OPENAI_API_KEY": null, "tokens": {"id": "login"}}')
    (home / "AGENTS.md").write_text("Always say MARKER.\n")
    (home / "history.jsonl").write_text("{}\n")
    (home / "sessions").mkdir()
    write_skill(home / "skills", "legacy-skill")
    write_skill(Path(os.environ["HOME"]) / ".agents" / "skills", "personal-skill")
    monkeypatch.setenv("CODEX_HOME", str(home))
    monkeypatch.setenv("GATEWAY_KEY", "gw-secret")
    return home


def test_each_rollout_gets_a_private_codex_home_with_only_the_provider_and_login(
    agents, tmp_path, skill_dir, suite_path, user_codex
):
    h = harness(tmp_path)
    traj = h.run(Skill.load(skill_dir), first_task(suite_path))
    h.release(traj, failed=False)
    assert traj.answer == "WORD-0"
    (call,) = agents.calls("codex")
    private = Path(call["seen"]["CODEX_HOME"])
    assert private != user_codex and private.parent == Path(call["cwd"]).parent
    files = call["codex_home_files"]
    assert set(files) == {"config.toml", "auth.json"}  # no AGENTS.md, skills, history
    assert files["auth.json"] == (user_codex / "auth.json").read_text()
    config = tomllib.loads(files["config.toml"])
    assert config == {
        "model": "gpt-fake",
        "model_provider": "gateway",
        "model_reasoning_effort": "low",  # the active profile's
        "analytics": {"enabled": False},
        "features": {"plugins": False, "unbounded_connection_retries": False},
        "model_providers": {
            "gateway": {
                "name": "Company gateway",
                "base_url": "http://127.0.0.1:9/v1",
                "env_key": "GATEWAY_KEY",
                "wire_api": "responses",
                "http_headers": {"X-Team": "skills"},
            }
        },
    }
    assert call["user_skills"] == []  # neither ~/.agents/skills nor $CODEX_HOME/skills
    assert Path(call["seen"]["HOME"]) != Path(os.environ["HOME"])
    assert call["env_values"] == {} and "GATEWAY_KEY" in call["env"]  # the provider's key
    assert "--ephemeral" in call["argv"]  # no session files


def test_without_isolation_codex_reads_the_users_own_home(
    agents, tmp_path, skill_dir, suite_path, user_codex
):
    h = harness(tmp_path, agent={"isolate": False})
    h.release(h.run(Skill.load(skill_dir), first_task(suite_path)), failed=False)
    (call,) = agents.calls("codex")
    assert call["seen"]["CODEX_HOME"] == str(user_codex)
    assert call["user_skills"] == ["legacy-skill", "personal-skill"]
    assert "--ephemeral" in call["argv"]


def test_a_missing_provider_key_is_an_auth_failure(
    agents, tmp_path, skill_dir, suite_path, user_codex, monkeypatch
):
    monkeypatch.delenv("GATEWAY_KEY")
    h = harness(tmp_path)
    traj = h.run(Skill.load(skill_dir), first_task(suite_path))
    h.release(traj, failed=True)
    assert traj.error_kind == "auth"
    assert "Missing environment variable: `GATEWAY_KEY`" in traj.error


def test_a_broken_sandbox_is_its_own_error_and_no_invocation(
    agents, tmp_path, skill_dir, suite_path
):
    agents.configure("codex", mode="sandbox_broken")
    h = harness(tmp_path)
    traj = h.run(Skill.load(skill_dir), first_task(suite_path))
    h.release(traj, failed=True)
    assert traj.answer is None and traj.error_kind == "sandbox"
    assert "codex's sandbox (workspace-write) could not run commands (1 failed)" in traj.error
    assert "bubblewrap" in traj.error
    assert traj.skill_invoked is False  # the SKILL.md read failed: the skill was not loaded


def test_the_model_provider_and_isolation_are_in_the_fingerprint(agents, tmp_path, user_codex):
    a = harness(tmp_path).fingerprint()
    assert a["model"] == "gpt-fake" and a["isolate"] is True
    assert a["provider"] == {
        "name": "gateway",
        "base_url": "http://127.0.0.1:9/v1",
        "wire_api": "responses",
    }
    assert harness(tmp_path, target="gpt-5").fingerprint()["model"] == "gpt-5"
    (user_codex / "config.toml").write_text(USER_CONFIG.replace(":9/v1", ":10/v1"))
    assert harness(tmp_path).fingerprint() != a
    assert harness(tmp_path, agent={"isolate": False}).fingerprint()["isolate"] is False


def test_a_config_codex_cannot_read_stops_before_any_task(agents, tmp_path, user_codex):
    (user_codex / "config.toml").write_text("model = [unclosed\n")
    with pytest.raises(HarnessError, match=r"config.toml: codex's config is not valid TOML"):
        harness(tmp_path)
    assert agents.calls("codex") == []


def test_explicit_invocation_counts_as_invoked_without_a_read(
    agents, tmp_path, skill_dir, suite_path
):
    agents.configure("codex", invoke=False)  # no command reads SKILL.md
    h = harness(tmp_path, agent={"invoke": "explicit"})
    traj = h.run(Skill.load(skill_dir), first_task(suite_path))
    h.release(traj, failed=True)
    assert agents.calls("codex")[0]["stdin"].startswith("$caps ")
    assert not any("SKILL.md" in json.dumps(s) for s in traj.steps)
    assert traj.skill_invoked is True  # codex pastes the skill in for `$caps`
