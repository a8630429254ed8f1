"""The claude-code harness against the stand-in `claude` (tests/fakes/agent_cli.py):
the argv/stdin contract, the skill where Claude Code looks for it, every output
shape, error results, garbage, crashes, hangs and the scrubbed environment."""

from __future__ import annotations

import json
import os
import pickle
import time
from pathlib import Path

import pytest
from fakes.agent_cli import HELPFUL, SAVE
from helpers import wait_dead, write_skill, write_suite

from skillopt import api
from skillopt.config import Settings
from skillopt.errors import HarnessError, InputError, SystemicFailure
from skillopt.harness import build_harness
from skillopt.harness.agent import AgentHarness
from skillopt.harness.claude_code import ClaudeCodeHarness
from skillopt.harness.claude_events import read_events, tool_steps
from skillopt.rollouts.engine import RolloutEngine
from skillopt.skill.document import Skill
from skillopt.store.rollouts import RolloutStore
from skillopt.suite.loader import load_suite

BODY = f"# Caps\n\nRewrite the item.\n\n## Rules\n\n- {HELPFUL}\n"


@pytest.fixture
def skill_dir(isolated):
    d = write_skill(isolated / "skills", "caps", body=BODY)
    (d / "reference").mkdir()
    (d / "reference" / "notes.md").write_text("supporting file\n")
    return d


@pytest.fixture
def suite_path(isolated):
    items = [
        {"id": f"word-{i}", "input": f"word-{i}", "expected": f"WORD-{i}", "split": "test"}
        for i in range(3)
    ]
    items.append(
        {
            "id": "keep-0",
            "input": "keep-0",
            "expected": "keep-0",
            "split": "test",
            "files": {"data/input.txt": "hello\n"},
        }
    )
    return write_suite(isolated / "tasks" / "caps.yaml", items)


def harness(tmp_path, **conf) -> ClaudeCodeHarness:
    agent = conf.pop("agent", {})
    settings = Settings(
        harness="claude-code",
        target=conf.pop("target", None),
        claude_code=conf,
        agent=agent,
        run_dir=str(tmp_path / "runs"),
    )
    h = build_harness(settings)
    h.check()
    return h


def run_one(h, skill: Skill, task):
    traj = h.run(skill, task)
    kept = h.release(traj, failed=True)
    return traj, kept


def tasks(suite_path):
    return {t.id: t for t in load_suite(suite_path).tasks}


# ---------------------------------------------------------------------- contract
def test_argv_stdin_cwd_and_skill_location(agents, tmp_path, skill_dir, suite_path):
    h = harness(
        tmp_path,
        target="anthropic/claude-sonnet-4-5",
        allowed_tools=["Read", "Bash(git diff *)"],
        tools=["Read", "Bash"],
        max_turns=7,
        permission_mode="dontAsk",
        agent={"keep_workspaces": "none"},
    )
    task = tasks(suite_path)["word-1"]
    traj, _ = run_one(h, Skill.load(skill_dir), task)
    assert traj.ok and traj.answer == "WORD-1"
    (call,) = agents.calls("claude")
    argv = call["argv"]
    assert argv[0] == "-p"
    i = argv.index("--output-format")
    assert argv[i : i + 3] == ["--output-format", "stream-json", "--verbose"]
    # hermetic by default: no user settings, CLAUDE.md or personal skills, no transcript
    assert argv[argv.index("--setting-sources") + 1] == "project,local"
    assert "--no-session-persistence" in argv
    assert argv[argv.index("--permission-mode") + 1] == "dontAsk"
    assert argv[argv.index("--allowedTools") + 1] == "Read,Bash(git diff *)"
    assert argv[argv.index("--tools") + 1] == "Read,Bash"
    assert argv[argv.index("--max-turns") + 1] == "7"
    assert argv[argv.index("--model") + 1] == "claude-sonnet-4-5"  # provider prefix dropped
    assert task.prompt not in argv and call["stdin"] == task.prompt  # the prompt is on stdin
    # the skill is where Claude Code looks for project skills, named by its directory
    assert call["skills"] == {"caps": skill_dir.joinpath("SKILL.md").read_text()}
    assert call["files"][".claude/skills/caps/reference/notes.md"] == "supporting file\n"
    assert set(call["files"]) == {
        ".claude/skills/caps/SKILL.md",
        ".claude/skills/caps/reference/notes.md",
    }
    assert Path(call["cwd"]).name == "work" and not Path(call["cwd"]).exists()  # removed
    assert h.fingerprint()["cli"] == "2.1.230 (Claude Code)"


def test_workspace_holds_only_the_skill_and_this_tasks_files(
    agents, tmp_path, skill_dir, suite_path
):
    suite = load_suite(suite_path)
    h = harness(tmp_path)
    engine = RolloutEngine(h, RolloutStore(":memory:"), concurrency=2)
    engine.run(Skill.load(skill_dir), suite.tasks)
    calls = {c["stdin"]: c for c in agents.calls("claude")}
    keep = calls["keep-0"]["files"]
    assert keep["data/input.txt"] == "hello\n"
    assert not any("data/input.txt" in c["files"] for k, c in calls.items() if k != "keep-0")
    suite_text = suite_path.read_text()
    for call in calls.values():
        blob = json.dumps(call["files"])
        assert "WORD-" not in blob  # no expected answer anywhere in the workspace
        assert "caps.yaml" not in blob and suite_text not in blob
        assert not Path(call["cwd"]).resolve().is_relative_to(Path.cwd().resolve())
    assert len({c["cwd"] for c in calls.values()}) == 4  # a fresh workspace per task


def test_environment_is_scrubbed_to_what_the_cli_needs(
    agents, tmp_path, skill_dir, suite_path, monkeypatch
):
    monkeypatch.setenv("SECRET_TOKEN", "do-not-leak")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other-provider")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("CLAUDECODE", "1")  # set inside a Claude Code session: must not nest
    monkeypatch.setenv("FAKE_PASS", "through")
    h = harness(tmp_path, agent={"env": ["FAKE_PASS"]})
    run_one(h, Skill.load(skill_dir), tasks(suite_path)["word-0"])
    (call,) = agents.calls("claude")
    assert "ANTHROPIC_API_KEY" in call["env"] and "PATH" in call["env"]
    for leaked in ("SECRET_TOKEN", "OPENAI_API_KEY", "CLAUDECODE"):
        assert leaked not in call["env"]
    assert call["env_values"] == {"FAKE_PASS": "through"}


# ---------------------------------------------------------------------- output shapes
@pytest.mark.parametrize("trace, shape", [(False, None), (False, "array"), (True, None)])
def test_every_result_shape_gives_answer_usage_and_cost(
    agents, tmp_path, skill_dir, suite_path, trace, shape
):
    agents.configure("claude", shape=shape)
    h = harness(tmp_path, agent={"trace": trace})
    traj, _ = run_one(h, Skill.load(skill_dir), tasks(suite_path)["word-2"])
    argv = agents.calls("claude")[0]["argv"]
    assert ("stream-json" in argv) == trace and ("--verbose" in argv) == trace
    assert traj.answer == "WORD-2" and traj.error is None
    assert traj.usage.input_tokens == 150 and traj.usage.output_tokens == 12
    assert traj.usage.cached_input_tokens == 30  # cache reads: part of the 150
    assert traj.cost == pytest.approx(0.0125)
    assert traj.info["subtype"] == "success" and traj.info["num_turns"] == 2
    if trace or shape == "array":  # messages are in the output: the trace tells
        assert traj.skill_invoked is True
        assert traj.steps[0]["tool"] == "Skill" and traj.steps[0]["input"] == {"skill": "caps"}
        assert HELPFUL in traj.steps[0]["output"]
    else:  # a bare result object: nothing to tell from
        assert traj.skill_invoked is None and traj.steps == ()


def test_skill_not_invoked_is_reported(agents, tmp_path, skill_dir, suite_path):
    agents.configure("claude", invoke=False)
    h = harness(tmp_path)
    traj, _ = run_one(h, Skill.load(skill_dir), tasks(suite_path)["word-0"])
    assert traj.answer == "word-0" and traj.skill_invoked is False


def test_no_skill_baseline_installs_nothing(agents, tmp_path, suite_path):
    h = harness(tmp_path)
    traj, _ = run_one(h, Skill.empty(), tasks(suite_path)["word-0"])
    assert traj.answer == "word-0" and traj.skill_invoked is None
    assert agents.calls("claude")[0]["files"] == {}


def test_explicit_invocation_prefixes_the_slash_command(agents, tmp_path, skill_dir, suite_path):
    h = harness(tmp_path, agent={"invoke": "explicit"})
    traj, _ = run_one(h, Skill.load(skill_dir), tasks(suite_path)["word-0"])
    assert agents.calls("claude")[0]["stdin"] == "/caps word-0"
    assert traj.answer == "WORD-0"
    assert harness(tmp_path).fingerprint() != h.fingerprint()


def test_tool_outputs_are_truncated_with_a_marker(agents, tmp_path, skill_dir, suite_path):
    agents.configure("claude", big_output=True)
    h = harness(tmp_path)
    traj, _ = run_one(h, Skill.load(skill_dir), tasks(suite_path)["word-0"])
    bash = next(s for s in traj.steps if s["tool"] == "Bash")
    assert len(bash["output"]) < 2100 and bash["output"].endswith("[truncated 48000 chars]")


def test_files_written_by_the_agent_are_scored_in_the_workspace(agents, isolated):
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
            },
            {
                "id": "word-1",
                "input": "word-1",
                "expected": "word-1",
                "split": "test",
                "scorer": verify,
            },
        ],
    )
    result = api.evaluate(skill, suite, **{"harness": "claude-code"})
    rollouts = {r.task_id: r for r in result.results[0].rollouts}
    assert rollouts["word-0"].scored and rollouts["word-0"].passed
    assert rollouts["word-1"].scored and not rollouts["word-1"].passed
    kept = Path(rollouts["word-1"].trajectory["workspace"])  # the failed one is kept
    assert (kept / "work" / "answer.txt").read_text() == "WORD-1\n"
    assert kept.parent == (isolated / "runs" / "workspaces").resolve()
    assert "workspace" not in rollouts["word-0"].trajectory


# ---------------------------------------------------------------------- failures
def test_auth_failure_is_unscored_with_the_clis_message(agents, tmp_path, skill_dir, suite_path):
    agents.configure("claude", mode="auth")
    h = harness(tmp_path)
    traj, _ = run_one(h, Skill.load(skill_dir), tasks(suite_path)["word-0"])
    assert traj.answer is None and traj.error_kind == "auth"
    assert "claude reported an error (API error 401): Invalid API key" in traj.error


def test_error_during_execution_is_unscored(agents, tmp_path, skill_dir, suite_path):
    agents.configure("claude", mode="error")
    traj, _ = run_one(harness(tmp_path), Skill.load(skill_dir), tasks(suite_path)["word-0"])
    assert traj.answer is None
    assert "error_during_execution" in traj.error and "ENOSPC" in traj.error


def test_max_turns_is_the_agents_outcome_and_is_scored(agents, tmp_path, skill_dir, suite_path):
    agents.configure("claude", mode="max_turns")
    store = RolloutStore(":memory:")
    engine = RolloutEngine(harness(tmp_path), store, concurrency=1)
    (r,) = engine.run(Skill.load(skill_dir), [tasks(suite_path)["word-0"]])
    assert r.scored and r.score == 0.0 and r.answer == ""
    assert r.trajectory["steps"][-1] == {"type": "stopped", "reason": "error_max_turns"}


@pytest.mark.parametrize(
    "mode, kind, text",
    [
        ("garbage", "bad_output", "503 Service Temporarily Unavailable"),
        ("exit", "agent_error", "exited 3: fatal: something broke inside the agent"),
    ],
)
def test_garbage_and_crashes_are_unscored(
    agents, tmp_path, skill_dir, suite_path, mode, kind, text
):
    agents.configure("claude", mode=mode)
    store = RolloutStore(":memory:")
    engine = RolloutEngine(harness(tmp_path), store, concurrency=1)
    (r,) = engine.run(Skill.load(skill_dir), [tasks(suite_path)["word-0"]])
    assert not r.scored and r.score is None
    assert r.error_kind == kind and text in r.error


def test_a_hang_is_killed_with_its_whole_process_group(agents, tmp_path, skill_dir, suite_path):
    agents.configure("claude", mode="hang")
    h = harness(tmp_path, agent={"timeout": 1.5})
    start = time.monotonic()
    traj, kept = run_one(h, Skill.load(skill_dir), tasks(suite_path)["word-0"])
    assert time.monotonic() - start < 10
    assert traj.error_kind == "timeout" and "timed out after 1.5s" in traj.error
    pids = agents.hang_pids()
    assert len(pids) == 2  # the stand-in and the child it started
    assert wait_dead(pids)
    assert kept is not None and (kept / "work" / ".claude" / "skills" / "caps").is_dir()


def test_every_task_failing_on_auth_stops_the_run(agents, tmp_path, skill_dir, isolated):
    agents.configure("claude", mode="auth")
    items = [
        {"id": f"t{i}", "input": f"word-{i}", "expected": "x", "split": "test"} for i in range(12)
    ]
    suite = write_suite(isolated / "tasks" / "many.yaml", items)
    with pytest.raises(
        SystemicFailure,
        match=r"5 tasks in a row failed the same way \(auth\)"
        r": claude reported an error.*Invalid API key",
    ):
        api.evaluate(skill_dir, suite, **{"harness": "claude-code", "concurrency": 1})
    assert len(agents.calls("claude")) == 5
    # what ran is stored (unscored), so nothing is lost; a rerun retries it
    with RolloutStore(isolated / "runs" / "rollouts.sqlite") as store:
        assert store.count("unscored") == 5 and store.count() == 5


def test_one_task_failing_does_not_stop_the_run(agents, tmp_path, skill_dir, isolated):
    agents.configure("claude", modes={"word-3": "auth"})
    items = [
        {"id": f"t{i}", "input": f"word-{i}", "expected": f"WORD-{i}", "split": "test"}
        for i in range(8)
    ]
    suite = write_suite(isolated / "tasks" / "many.yaml", items)
    result = api.evaluate(skill_dir, suite, **{"harness": "claude-code", "concurrency": 3})
    split = result.results[0]
    assert split.unscored == 1 and split.n == 7 and split.mean == 1.0


# ---------------------------------------------------------------------- configuration
def test_missing_cli_is_one_error_before_any_task(tmp_path, skill_dir, suite_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(HarnessError) as exc:
        api.evaluate(skill_dir, suite_path, **{"harness": "claude-code"})
    message = str(exc.value)
    assert "`claude`" in message and "not on PATH" in message and "--harness" in message
    assert "claude_code.binary" in message


def test_binary_can_be_configured(agents, tmp_path, skill_dir, suite_path):
    renamed = agents.bin / "claude-2"
    renamed.write_text((agents.bin / "claude").read_text())
    renamed.chmod(0o755)
    (agents.bin / "claude").unlink()
    h = harness(tmp_path, binary=str(renamed))
    traj, _ = run_one(h, Skill.load(skill_dir), tasks(suite_path)["word-0"])
    assert traj.answer == "WORD-0"


def test_a_model_skillopt_runs_itself_is_not_a_claude_model(tmp_path):
    with pytest.raises(
        InputError,
        match="^target: 'local/gemma-3-270m' is a model skillopt runs itself.*--target default",
    ):
        build_harness(Settings(harness="claude-code", target="local/gemma-3-270m"))


def test_fingerprint_names_what_changes_the_outcome(agents, tmp_path):
    a = harness(tmp_path).fingerprint()
    assert a["cli"] == "2.1.230 (Claude Code)" and a["model"] is None
    assert harness(tmp_path, max_turns=3).fingerprint() != a
    assert harness(tmp_path, target="opus").fingerprint() != a
    assert harness(tmp_path, agent={"timeout": 5}).fingerprint() == a  # not an outcome
    assert harness(tmp_path, agent={"trace": False}).fingerprint() == a


def test_settings_come_from_skillopt_yaml(agents, isolated, skill_dir, suite_path):
    (isolated / "skillopt.yaml").write_text(
        "harness: claude-code\nclaude_code:\n  permission_mode: plan\n  max_turns: 4\n"
    )
    result = api.evaluate(skill_dir, suite_path)
    assert result.harness == "claude-code" and result.results[0].mean == 1.0
    argv = agents.calls("claude")[0]["argv"]
    assert argv[argv.index("--permission-mode") + 1] == "plan"
    assert argv[argv.index("--max-turns") + 1] == "4"


# ---------------------------------------------------------------------- parsing units
def test_read_events_accepts_object_array_and_lines():
    obj = {"type": "result", "result": "a"}
    assert read_events(json.dumps(obj)) == [obj]
    assert read_events(json.dumps([{"type": "system"}, obj])) == [{"type": "system"}, obj]
    lines = "\n".join([json.dumps({"type": "system"}), "not json", "", json.dumps(obj)])
    assert read_events(lines) == [{"type": "system"}, obj]
    assert read_events("") == [] and read_events("<html>") == []


def test_tool_steps_pair_results_and_detect_reads_of_the_skill():
    events = [
        {
            "type": "assistant",
            "message": {
                "content": [
                    {
                        "type": "tool_use",
                        "id": "a",
                        "name": "Read",
                        "input": {"file_path": "/w/.claude/skills/caps/SKILL.md"},
                    }
                ]
            },
        },
        {
            "type": "user",
            "message": {
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "a",
                        "is_error": True,
                        "content": [{"type": "text", "text": "no such file"}],
                    }
                ]
            },
        },
        {"type": "assistant", "message": {"content": "plain text content"}},
    ]
    steps, invoked, traced = tool_steps(events, "caps")
    assert traced and invoked is True
    assert steps == (
        {
            "type": "tool_use",
            "tool": "Read",
            "input": {"file_path": "/w/.claude/skills/caps/SKILL.md"},
            "output": "no such file",
            "is_error": True,
        },
    )
    assert tool_steps(events, "other")[1] is False
    assert tool_steps(events, None)[1] is None


def test_after_cancel_no_agent_starts_and_nothing_is_left(agents, tmp_path, skill_dir, suite_path):
    h = harness(tmp_path)
    h.cancel()
    traj = h.run(Skill.load(skill_dir), tasks(suite_path)["word-0"])
    assert traj.error_kind == "cancelled" and traj.workspace is None
    assert agents.calls("claude") == []
    assert h.release(traj, failed=True) is None


def test_a_systemic_stop_waits_for_killed_agents_to_clean_up(agents, tmp_path, skill_dir, isolated):
    """Two agents hang while others fail on auth: the stop kills the hanging ones and
    returns only once their workspaces are put away (the leak guard checks none is
    left in the temp directory)."""
    agents.configure("claude", mode="auth", modes={"slow": "hang"})
    items = [
        {"id": f"slow-{i}", "input": f"slow-{i}", "expected": "x", "split": "test"}
        for i in range(2)
    ]
    items += [
        {"id": f"t{i}", "input": f"word-{i}", "expected": "x", "split": "test"} for i in range(8)
    ]
    suite = write_suite(isolated / "tasks" / "mixed.yaml", items)
    start = time.monotonic()
    with pytest.raises(SystemicFailure, match=r"\(auth\)"):
        api.evaluate(skill_dir, suite, **{"harness": "claude-code", "concurrency": 3})
    assert time.monotonic() - start < 120  # not the 600 s agent timeout, even at load 15
    assert wait_dead(agents.hang_pids())
    kept = sorted(p.name for p in (isolated / "runs" / "workspaces").iterdir())
    assert any(name.startswith("slow-") for name in kept)  # killed agents' workspaces kept


def test_a_long_tool_input_is_kept_as_clipped_json():
    big = {"file_path": "a.txt", "content": "x" * 5000}
    events = [
        {
            "type": "assistant",
            "message": {
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "Write", "input": big},
                    {
                        "type": "tool_use",
                        "id": "t2",
                        "name": "Read",
                        "input": {"file_path": "a.txt"},
                    },
                ]
            },
        }
    ]
    steps, _, _ = tool_steps(events, None)
    assert steps[0]["input"].startswith('{"file_path": "a.txt", "content": "xxx')
    assert steps[0]["input"].endswith("chars]") and len(steps[0]["input"]) < 1100
    assert steps[1]["input"] == {"file_path": "a.txt"}  # short inputs stay structured


# ---------------------------------------------------------------------- hermetic rollouts
def test_each_rollout_has_a_private_home_holding_only_the_login(
    agents, tmp_path, skill_dir, suite_path, monkeypatch
):
    home = Path(os.environ["HOME"])
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    (home / ".claude" / ".credentials.json").write_text('{"token": "oauth-login"}')
    (home / ".claude" / "CLAUDE.md").write_text("Say MARKER.\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    h = harness(tmp_path, agent={"keep_workspaces": "all"})
    traj, kept = run_one(h, Skill.load(skill_dir), tasks(suite_path)["word-0"])
    assert traj.answer == "WORD-0"
    (call,) = agents.calls("claude")
    seen = call["seen"]
    private = Path(seen["HOME"])
    assert private != home and private.parent == Path(call["cwd"]).parent  # beside work/
    assert call["home_files"] == {".claude/.credentials.json": '{"token": "oauth-login"}'}
    assert Path(seen["TMPDIR"]).parent == private.parent
    assert "XDG_CONFIG_HOME" not in call["env"] and "CLAUDE_CONFIG_DIR" not in call["env"]
    assert seen["CLAUDE_CODE_MAX_RETRIES"] == "2"
    assert seen["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    # a kept workspace never holds the copy of the login
    assert (kept / "work").is_dir() and not (kept / "home").exists()
    assert not list(kept.rglob(".credentials.json"))


def test_without_isolation_the_cli_gets_the_users_home(agents, tmp_path, skill_dir, suite_path):
    h = harness(tmp_path, agent={"isolate": False})
    run_one(h, Skill.load(skill_dir), tasks(suite_path)["word-0"])
    (call,) = agents.calls("claude")
    assert call["seen"]["HOME"] == os.environ["HOME"]
    assert "--setting-sources" not in call["argv"]
    assert "--no-session-persistence" in call["argv"]  # never a transcript either way


def test_an_api_error_is_classified_by_its_status(agents, tmp_path, skill_dir, suite_path):
    agents.configure("claude", mode="server")
    traj, _ = run_one(
        harness(tmp_path, max_retries=1), Skill.load(skill_dir), tasks(suite_path)["word-0"]
    )
    assert traj.error_kind == "server"  # not an agent error: the provider failed
    assert traj.error.startswith("claude reported an error (API error 500): API Error: 500")
    assert traj.info["api_retries"] == 1 and traj.info["api_error_status"] == 500


@pytest.mark.slow  # waits out its 5 s timeout
def test_a_timeout_spent_retrying_a_rejected_key_is_an_auth_failure(
    agents, tmp_path, skill_dir, suite_path
):
    agents.configure("claude", mode="retry_hang")
    # long enough for the stand-in to start and print its retries on a busy machine
    # (at 0.5 s, a load of 15 on two cores timed it out before its first line)
    h = harness(tmp_path, agent={"timeout": 5})
    traj, _ = run_one(h, Skill.load(skill_dir), tasks(suite_path)["word-0"])
    assert traj.error_kind == "auth" and traj.answer is None
    assert "timed out after 5s" in traj.error
    assert "while retrying a failed API call (2 retries, the last answered HTTP 401)" in traj.error


def test_explicit_invocation_counts_as_invoked_without_a_skill_tool_call(
    agents, tmp_path, skill_dir, suite_path
):
    agents.configure("claude", invoke=False)  # no Skill tool call in the trace
    h = harness(tmp_path, agent={"invoke": "explicit"})
    traj, _ = run_one(h, Skill.load(skill_dir), tasks(suite_path)["word-0"])
    assert not any(s.get("tool") == "Skill" for s in traj.steps)
    assert traj.skill_invoked is True  # the CLI expanded /caps: its init lists the command


def test_a_skill_the_cli_did_not_discover_is_not_scored(agents, tmp_path, skill_dir, suite_path):
    agents.configure("claude", discover=False)
    traj, _ = run_one(harness(tmp_path), Skill.load(skill_dir), tasks(suite_path)["word-0"])
    assert traj.answer is None and traj.error_kind == "not_discovered"
    assert (
        "claude did not discover the skill 'caps' installed at .claude/skills/caps/SKILL.md"
        in traj.error
        and "verify, debug" in traj.error
    )


def test_the_model_endpoint_and_isolation_are_in_the_fingerprint(agents, tmp_path, monkeypatch):
    a = harness(tmp_path).fingerprint()
    assert a["isolate"] is True and a["endpoint"] is None and a["model"] is None
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-sonnet-4-5")
    b = harness(tmp_path).fingerprint()
    assert b["model"] == "claude-sonnet-4-5" and b != a
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/gateway")
    c = harness(tmp_path).fingerprint()
    assert c["endpoint"] == "http://127.0.0.1:9/gateway" and c != b
    assert harness(tmp_path, agent={"isolate": False}).fingerprint()["isolate"] is False
    assert harness(tmp_path, max_retries=7).fingerprint() == c  # not an outcome


@pytest.mark.parametrize("harness", ["claude-code", "codex", "command"])
def test_the_keep_dir_a_ray_worker_gets_is_absolute(isolated, tmp_path, monkeypatch, harness):
    """A run passes `runs/<id>/workspaces`, relative to where it started; the copy a
    Ray worker unpickles must not resolve it against the worker's own directory."""
    section = {"command": {"argv": ["true"]}} if harness == "command" else {}
    built = build_harness(Settings(harness=harness, **section), keep_dir=Path("runs/r1/workspaces"))
    monkeypatch.chdir(tmp_path)  # the worker's working directory: somewhere else
    copy = pickle.loads(pickle.dumps(built))
    assert isinstance(copy, AgentHarness)
    assert copy.keep_dir == isolated.resolve() / "runs" / "r1" / "workspaces"
