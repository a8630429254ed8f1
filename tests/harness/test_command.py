"""The command harness (skillopt/harness/command.py) with a real agent program: a small
Python script run as a subprocess that records its argv, cwd, stdin, environment and
workspace, then answers as told by a plan file.

Covers: every argv placeholder and literal braces, argv as a shell string, where the
skill and the task file are (and what the workspace does not hold), the SKILLOPT_*
variables and the scrubbed environment, answers from stdout or an output file, non-zero
exits (classified, unscored), the steps file, the no-skill baseline, configuration
errors, a missing program, the timeout, the fingerprint, kept workspaces, and
`skillopt eval --harness command` through the CLI.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from helpers import write_skill, write_suite
from typer.testing import CliRunner

from skillopt.cli.main import app
from skillopt.config import Settings
from skillopt.errors import HarnessError, InputError
from skillopt.harness import build_harness
from skillopt.harness.command import PLACEHOLDERS
from skillopt.harness.process import BASE_ENV
from skillopt.rollouts.engine import RolloutEngine
from skillopt.skill.document import Skill
from skillopt.store.rollouts import RolloutStore
from skillopt.suite.loader import load_suite

AGENT = r"""
import json, os, pathlib, sys, time
here = pathlib.Path(__file__).resolve().parent
env = dict(os.environ)
plans = json.loads((here / "plan.json").read_text()) if (here / "plan.json").is_file() else {}
plan = {**plans.get("*", {}), **plans.get(env.get("SKILLOPT_TASK_ID", ""), {})}
cwd = pathlib.Path.cwd()
skill_dir = pathlib.Path(env.get("SKILLOPT_SKILL_DIR") or "/nonexistent")
task = pathlib.Path(env["SKILLOPT_TASK_FILE"]).read_text()
call = {"argv": sys.argv[1:], "cwd": os.getcwd(), "env": env, "stdin": sys.stdin.read(),
        "task": task, "skill_dir": sorted(os.listdir(skill_dir)) if skill_dir.is_dir() else None,
        "files": {p.relative_to(cwd).as_posix(): p.read_text()
                  for p in sorted(cwd.rglob("*")) if p.is_file()}}
(here / "calls" / f"{os.getpid()}.json").write_text(json.dumps(call))
if plan.get("steps"):
    pathlib.Path(env["SKILLOPT_STEPS_FILE"]).write_text("\n".join(plan["steps"]) + "\n")
for rel, text in plan.get("write", {}).items():
    (cwd / rel).parent.mkdir(parents=True, exist_ok=True)
    (cwd / rel).write_text(text)
time.sleep(plan.get("sleep", 0))
sys.stderr.write(plan.get("stderr", ""))
sys.stdout.write(plan.get("stdout", task.upper() + "\n"))
sys.exit(plan.get("exit", 0))
"""


class Agent:
    """The agent program in its own directory, with its plan and its recorded calls."""

    def __init__(self, root: Path):
        self.root = root
        self.script = root / "agent.py"
        (root / "calls").mkdir(parents=True)
        self.script.write_text(AGENT, encoding="utf-8")
        self.argv = [sys.executable, str(self.script)]

    def plan(self, **per_task: dict) -> None:
        """What to do, by task id ('*' for every task)."""
        (self.root / "plan.json").write_text(json.dumps(per_task), encoding="utf-8")

    def calls(self) -> list[dict]:
        return [json.loads(p.read_text()) for p in (self.root / "calls").glob("*.json")]

    def call(self, task_id: str) -> dict:
        (found,) = [c for c in self.calls() if c["env"]["SKILLOPT_TASK_ID"] == task_id]
        return found


@pytest.fixture
def agent(tmp_path) -> Agent:
    return Agent(tmp_path / "agent")


@pytest.fixture
def skill(isolated) -> Skill:
    d = write_skill(isolated / "skills", "caps", body="# Caps\n\nUpper-case the item.\n")
    (d / "reference").mkdir()
    (d / "reference" / "notes.md").write_text("supporting file\n")
    return Skill.load(d)


@pytest.fixture
def suite_path(isolated) -> Path:
    items = [
        {"id": f"word-{i}", "input": f"word-{i}", "expected": f"WORD-{i}", "split": "test"}
        for i in range(3)
    ]
    items.append({"id": "miss", "input": "miss", "expected": "never", "split": "test"})
    items.append(
        {
            "id": "files-0",
            "input": "files-0",
            "expected": "FILES-0",
            "split": "test",
            "files": {"data/input.txt": "hello\n"},
        }
    )
    return write_suite(isolated / "tasks" / "caps.yaml", items)


@pytest.fixture
def tasks(suite_path) -> dict:
    return {t.id: t for t in load_suite(suite_path).tasks}


def settings(tmp_path, argv, *, target=None, agent=None, **command) -> Settings:
    return Settings(
        harness="command",
        target=target,
        agent=agent or {},
        run_dir=str(tmp_path / "runs"),
        command={"argv": argv, **command},
    )


def harness(tmp_path, argv, **kw):
    h = build_harness(settings(tmp_path, argv, **kw))
    h.check()
    return h


def run_one(h, skill, task, failed=True):
    traj = h.run(skill, task)
    return traj, h.release(traj, failed=failed)


def engine_run(h, skill, task_list):
    return RolloutEngine(h, RolloutStore(":memory:"), concurrency=1).run(skill, task_list)


# ---------------------------------------------------------------------- argv template
def test_every_placeholder_reaches_the_program(agent, tmp_path, skill, tasks):
    template = [f"{{{p}}}" for p in PLACEHOLDERS] + ["{{literal}}", "a{{b}}c", "--id={task_id}"]
    agent.plan(**{"*": {"write": {"out/answer.txt": "from file"}}})
    h = harness(
        tmp_path,
        agent.argv + template,
        target="openai/gpt-x",
        output="out/answer.txt",
        agent={"keep_workspaces": "none"},
    )
    traj, _ = run_one(h, skill, tasks["word-1"])
    assert traj.ok and traj.answer == "from file"
    call = agent.call("word-1")
    got = dict(zip(PLACEHOLDERS, call["argv"]))
    cwd = Path(call["cwd"]).resolve()
    assert Path(got["workspace"]).resolve() == cwd and cwd.name == "work"
    assert Path(got["skill_dir"]).resolve() == cwd / ".agents" / "skills" / "caps"
    assert Path(got["skill_file"]).resolve() == cwd / ".agents/skills/caps/SKILL.md"
    assert got["skill_name"] == "caps" and got["task_id"] == "word-1"
    assert got["prompt"] == "word-1" and call["task"] == "word-1" and call["stdin"] == "word-1"
    assert Path(got["task_file"]).resolve() == cwd.parent / "io" / "task.md"
    assert got["model"] == "openai/gpt-x"  # handed over as is, prefix and all
    assert Path(got["output_file"]).resolve() == cwd / "out" / "answer.txt"
    assert Path(got["steps_file"]).resolve() == cwd.parent / "io" / "steps.jsonl"
    assert call["argv"][len(PLACEHOLDERS) :] == ["{literal}", "a{b}c", "--id=word-1"]
    assert not cwd.exists()  # keep_workspaces: none


def test_argv_as_a_shell_string_is_split_like_a_shell(agent, tmp_path, skill, tasks):
    line = " ".join(shlex.quote(a) for a in agent.argv)
    h = harness(tmp_path, f"{line} 'two words' {{task_id}} --p='{{prompt}} x' {{model}}")
    traj, _ = run_one(h, skill, tasks["word-0"])
    assert traj.answer == "WORD-0"
    assert agent.call("word-0")["argv"] == ["two words", "word-0", "--p=word-0 x", ""]


def test_explicit_invocation_puts_the_command_in_the_task_file(agent, tmp_path, skill, tasks):
    h = harness(tmp_path, agent.argv + ["{prompt}"], agent={"invoke": "explicit"})
    run_one(h, skill, tasks["word-0"])
    call = agent.call("word-0")
    assert call["task"] == call["argv"][0] == call["stdin"] == "/caps word-0"


# ---------------------------------------------------------------------- workspace
@pytest.mark.parametrize("skills_dir", [None, ".claude/skills"])
def test_skill_is_installed_and_the_workspace_holds_nothing_of_the_suite(
    agent, tmp_path, skill, suite_path, skills_dir
):
    conf = {"skills_dir": skills_dir} if skills_dir else {}
    h = harness(tmp_path, agent.argv, **conf)
    suite = load_suite(suite_path)
    RolloutEngine(h, RolloutStore(":memory:"), concurrency=3).run(skill, suite.tasks)
    where = skills_dir or ".agents/skills"
    calls = {c["env"]["SKILLOPT_TASK_ID"]: c for c in agent.calls()}
    assert len(calls) == 5 and len({c["cwd"] for c in calls.values()}) == 5  # one each
    suite_text = suite_path.read_text()
    for task_id, call in calls.items():
        skill_files = {
            f"{where}/caps/SKILL.md": skill.text,
            f"{where}/caps/reference/notes.md": "supporting file\n",
        }
        task_files = {"data/input.txt": "hello\n"} if task_id == "files-0" else {}
        assert call["files"] == {**skill_files, **task_files}
        assert Path(call["env"]["SKILLOPT_SKILL_DIR"]) == Path(call["cwd"], where, "caps")
        task_file = Path(call["env"]["SKILLOPT_TASK_FILE"]).resolve()
        assert not task_file.is_relative_to(Path(call["cwd"]).resolve())  # outside
        assert call["task"] == task_id  # the prompt; the expected answer is nowhere
        blob = json.dumps(call["files"])
        assert "WORD-" not in blob and "never" not in blob and "FILES-0" not in blob
        assert "caps.yaml" not in blob and suite_text not in blob
        assert not Path(call["cwd"]).resolve().is_relative_to(Path.cwd().resolve())


def test_no_skill_baseline_gets_an_empty_directory_outside_the_workspace(agent, tmp_path, tasks):
    h = harness(tmp_path, agent.argv + ["{skill_dir}", "{skill_file}", "{skill_name}"])
    traj, _ = run_one(h, Skill.empty(), tasks["word-0"])
    assert traj.answer == "WORD-0"
    call = agent.call("word-0")
    skill_dir, skill_file, skill_name = call["argv"]
    assert call["skill_dir"] == []  # it existed, empty, while the program ran
    assert not Path(skill_dir).resolve().is_relative_to(Path(call["cwd"]).resolve())
    assert skill_file == "" and skill_name == "" and call["env"]["SKILLOPT_SKILL_FILE"] == ""
    assert call["files"] == {}


# ---------------------------------------------------------------------- environment
def test_skillopt_variables_are_set_and_the_rest_is_scrubbed(
    agent, tmp_path, skill, tasks, monkeypatch
):
    monkeypatch.setenv("MY_SECRET_TOKEN", "do-not-leak")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other")
    monkeypatch.setenv("PASS_ME", "through")
    h = harness(tmp_path, agent.argv, target="m1", output="answer.txt", agent={"env": ["PASS_ME"]})
    run_one(h, skill, replace(tasks["word-2"], prompt="the prompt text"))
    call = agent.call("word-2")
    env, cwd = call["env"], Path(call["cwd"])
    assert Path(env["SKILLOPT_WORKSPACE"]) == cwd
    assert Path(env["SKILLOPT_SKILL_DIR"]) == cwd / ".agents/skills/caps"
    assert Path(env["SKILLOPT_SKILL_FILE"]) == cwd / ".agents/skills/caps/SKILL.md"
    assert Path(env["SKILLOPT_OUTPUT_FILE"]) == cwd / "answer.txt"
    assert Path(env["SKILLOPT_STEPS_FILE"]).parent == Path(env["SKILLOPT_TASK_FILE"]).parent
    assert (env["SKILLOPT_SKILL_NAME"], env["SKILLOPT_TASK_ID"], env["SKILLOPT_MODEL"]) == (
        "caps",
        "word-2",
        "m1",
    )
    assert call["task"] == "the prompt text" and "SKILLOPT_PROMPT" not in env
    assert not any("the prompt text" in v for v in env.values())
    assert env["PASS_ME"] == "through" and "PATH" in env
    assert "MY_SECRET_TOKEN" not in env and "OPENAI_API_KEY" not in env
    allowed = set(BASE_ENV) | {"PASS_ME"} | {f"SKILLOPT_{p.upper()}" for p in PLACEHOLDERS}
    assert set(env) <= allowed


# ---------------------------------------------------------------------- answers
def test_answer_from_stdout_has_trailing_newlines_stripped(agent, tmp_path, skill, tasks):
    agent.plan(**{"*": {"stdout": "  the answer  \n\n\n"}})
    traj, _ = run_one(harness(tmp_path, agent.argv), skill, tasks["word-0"])
    assert traj.answer == "  the answer  " and traj.error is None and traj.model_calls == 1
    assert traj.steps == ()  # no steps file written
    assert traj.messages[-1] == {"role": "assistant", "content": "  the answer  "}


def test_answer_from_a_named_output_file(agent, tmp_path, skill, tasks):
    agent.plan(**{"*": {"write": {"answer.txt": "WORD-0\n"}, "stdout": "stdout noise"}})
    (r,) = engine_run(harness(tmp_path, agent.argv, output="answer.txt"), skill, [tasks["word-0"]])
    assert r.scored and r.passed and r.answer == "WORD-0"


def test_an_output_file_never_written_is_unscored(agent, tmp_path, skill, tasks):
    h = harness(tmp_path, agent.argv, output="answer.txt")
    traj, kept = run_one(h, skill, tasks["word-0"])
    assert traj.answer is None and traj.error_kind == "bad_output"
    assert "wrote no answer.txt" in traj.error and kept is not None
    (r,) = engine_run(harness(tmp_path, agent.argv, output="answer.txt"), skill, [tasks["word-1"]])
    assert not r.scored and r.score is None and r.error_kind == "bad_output"


# ---------------------------------------------------------------------- failures
@pytest.mark.parametrize(
    "stderr, kind",
    [
        ("fatal: something broke\n", "command_error"),
        ("request failed: HTTP 401 Unauthorized\n", "auth"),
        ("429 Too Many Requests\n", "rate_limit"),
    ],
)
def test_nonzero_exit_is_unscored_with_the_stderr_tail(agent, tmp_path, skill, tasks, stderr, kind):
    agent.plan(
        **{
            "*": {
                "exit": 3,
                "stderr": "early line\n" + "x" * 3000 + "\n" + stderr,
                "stdout": "WORD-0\n",
            }
        }
    )
    h = harness(tmp_path, agent.argv)
    traj, _ = run_one(h, skill, tasks["word-0"])
    assert traj.answer is None and traj.error_kind == kind
    assert "exited 3" in traj.error and stderr.strip() in traj.error
    assert "early line" not in traj.error and len(traj.error) < 1000  # only the tail
    (r,) = engine_run(h, skill, [tasks["word-0"]])  # the answer on stdout is right…
    assert not r.scored and r.score is None and r.passed is None  # …yet never scored
    assert r.answer is None and r.error_kind == kind


@pytest.mark.slow  # waits out its 5 s timeout
def test_a_program_that_sleeps_past_the_timeout_is_killed(agent, tmp_path, skill, tasks):
    agent.plan(**{"*": {"steps": ['{"type": "thinking"}'], "sleep": 600}})
    # long enough for the program to start and write its step on a busy machine
    h = harness(tmp_path, agent.argv, agent={"timeout": 5})
    start = time.monotonic()
    (r,) = engine_run(h, skill, [tasks["word-0"]])
    assert time.monotonic() - start < 300  # killed, not slept out
    assert not r.scored and r.score is None and r.answer is None
    assert r.error_kind == "timeout" and "timed out after 5s" in r.error
    assert r.trajectory["steps"] == [{"type": "thinking"}]  # what it did before is kept


# ---------------------------------------------------------------------- steps
def test_steps_file_lines_become_the_trajectorys_steps(agent, tmp_path, skill, tasks):
    long = "y" * 5000
    agent.plan(
        **{
            "*": {
                "steps": [
                    json.dumps({"type": "command", "command": "cat SKILL.md", "output": long}),
                    "not json at all",
                    json.dumps([1, 2]),
                    "",
                    json.dumps({"type": "note", "n": 3, "nested": {"k": "v"}}),
                ]
            }
        }
    )
    traj, _ = run_one(harness(tmp_path, agent.argv), skill, tasks["word-0"])
    assert traj.answer == "WORD-0" and len(traj.steps) == 2
    first, second = traj.steps
    assert first["type"] == "command" and first["command"] == "cat SKILL.md"
    assert first["output"] == "y" * 2000 + "…[truncated 3000 chars]"
    assert second == {"type": "note", "n": 3, "nested": {"k": "v"}}


def test_steps_are_kept_when_the_program_fails(agent, tmp_path, skill, tasks):
    agent.plan(**{"*": {"steps": ['{"type": "tried"}'], "exit": 1, "stderr": "gave up"}})
    traj, _ = run_one(harness(tmp_path, agent.argv), skill, tasks["word-0"])
    assert traj.error_kind == "command_error" and traj.steps == ({"type": "tried"},)


# ---------------------------------------------------------------------- configuration
@pytest.mark.parametrize(
    "command, field, text",
    [
        ({"argv": None}, "command.argv", "needs `command.argv`"),
        ({"argv": []}, "command.argv", "needs `command.argv`"),
        ({"argv": "   "}, "command.argv", "must name a program"),
        ({"argv": ["prog", "x", "{nope}"]}, "command.argv[2]", "unknown placeholder {nope}"),
        ({"argv": "prog {0}"}, "command.argv[1]", "unknown placeholder {0}"),
        ({"argv": ["prog", "{unclosed"]}, "command.argv[1]", "bad template"),
        ({"argv": ["prog", "a}b"]}, "command.argv[1]", "bad template"),
        ({"argv": ["prog"], "output": "/tmp/answer.txt"}, "command.output", "relative"),
        ({"argv": ["prog"], "output": "../answer.txt"}, "command.output", "relative"),
        ({"argv": ["prog"], "output": "out/../../answer.txt"}, "command.output", "relative"),
        ({"argv": ["prog"], "output": " "}, "command.output", "relative"),
    ],
)
def test_configuration_errors_name_the_field(tmp_path, command, field, text):
    with pytest.raises(InputError) as exc:
        build_harness(settings(tmp_path, **command))
    assert exc.value.field == field and text in str(exc.value)
    if "placeholder" in text:
        assert all(f"{{{p}}}" in str(exc.value) for p in PLACEHOLDERS)  # the known ones
    if "bad template" in text:
        assert "{{ and }}" in str(exc.value)


@pytest.mark.parametrize(
    "part, message",
    [
        ("{task_id:{bogus}}", "unknown placeholder {bogus}"),
        ("{task_id:d}", "placeholders take no format spec"),
        ("{task_id!z}", "bad template"),
    ],
)
def test_a_template_that_would_fail_at_task_time_is_refused_up_front(
    agent, tmp_path, part, message
):
    with pytest.raises(InputError, match=re.escape(message)) as exc:
        harness(tmp_path, agent.argv + [part])
    assert "command.argv[" in str(exc.value)


@pytest.mark.parametrize("program", ["definitely-not-a-program-xyz", "./no/such/agent"])
def test_a_missing_program_fails_check_naming_it(tmp_path, skill, tasks, program):
    h = build_harness(settings(tmp_path, [program, "{task_file}"]))
    with pytest.raises(HarnessError) as exc:
        h.check()
    message = str(exc.value)
    assert f"`{program}`" in message and "not on PATH" in message and "--harness" in message


def test_fingerprint_changes_with_what_changes_the_outcome(agent, tmp_path):
    def fp(argv=None, **kw):
        return harness(tmp_path, argv or agent.argv, **kw).fingerprint()

    base = fp()
    assert base["harness"] == "command" and base["argv"] == agent.argv
    assert fp(agent.argv + ["{task_file}"]) != base
    assert fp(output="answer.txt") != base
    assert fp(version="2") != base
    assert fp(skills_dir=".claude/skills") != base
    assert fp(target="m2") != base
    assert fp(agent={"timeout": 5}) == base and fp(agent={"keep_workspaces": "all"}) == base
    line = " ".join(shlex.quote(a) for a in agent.argv)
    assert fp(line) == base  # the same argv, written as a string


# ---------------------------------------------------------------------- workspaces
def kept_dirs(tmp_path) -> list[Path]:
    root = tmp_path / "runs" / "workspaces"
    return sorted(root.iterdir()) if root.is_dir() else []


def test_failed_workspaces_are_kept_and_passing_ones_removed(agent, tmp_path, skill, tasks):
    agent.plan(miss={"write": {"notes.txt": "left behind"}}, **{"word-1": {"exit": 2}})
    h = harness(tmp_path, agent.argv)
    passed, failed, unscored = engine_run(
        h, skill, [tasks[t] for t in ("word-0", "miss", "word-1")]
    )
    assert passed.passed and failed.scored and not failed.passed and not unscored.scored
    kept, kept_unscored = kept_dirs(tmp_path)  # sorted: miss-…, word-1-…
    assert unscored.trajectory["workspace"] == str(kept_unscored)
    assert kept.name.startswith(f"miss-{skill.short_hash[:8]}")
    assert failed.trajectory["workspace"] == str(kept) and "workspace" not in passed.trajectory
    assert (kept / "work" / "notes.txt").read_text() == "left behind"
    assert (kept / "work" / ".agents/skills/caps/SKILL.md").read_text() == skill.text
    assert (kept / "io" / "task.md").read_text() == "miss"
    assert not Path(agent.call("word-0")["cwd"]).exists()


def test_keep_none_keeps_nothing(agent, tmp_path, skill, tasks):
    agent.plan(**{"*": {"exit": 2}, "word-0": {"exit": 0}})
    h = harness(tmp_path, agent.argv, agent={"keep_workspaces": "none"})
    rollouts = engine_run(h, skill, [tasks["word-0"], tasks["miss"], tasks["word-1"]])
    assert [r.passed for r in rollouts] == [True, None, None]
    assert kept_dirs(tmp_path) == []
    assert not any(Path(c["cwd"]).parent.exists() for c in agent.calls())  # io/ too


def test_release_directly(agent, tmp_path, skill, tasks):
    h = harness(tmp_path, agent.argv, agent={"keep_workspaces": "all"})
    traj, kept = run_one(h, skill, tasks["word-0"], failed=False)
    assert kept is not None and kept.parent == (tmp_path / "runs" / "workspaces").resolve()
    assert (kept / "io" / "stdout.txt").read_text() == "WORD-0\n"
    assert h.release(traj, failed=True) is None  # released once only


# ---------------------------------------------------------------------- the CLI
def test_eval_through_the_cli(agent, isolated, skill, suite_path):
    (isolated / "skillopt.yaml").write_text(
        yaml.safe_dump({"command": {"argv": agent.argv + ["--task", "{task_file}"]}})
    )
    res = CliRunner().invoke(
        app, ["eval", str(skill.root), "--tasks", str(suite_path), "--harness", "command"]
    )
    assert res.exit_code == 0, res.output
    assert "harness command" in res.stdout
    assert "0.800" in res.stdout  # 4 of 5 pass: "miss" expects "never"
    assert "kept 1 workspace(s) of failed tasks" in res.stderr
    assert len(agent.calls()) == 5
    assert all(c["argv"][0] == "--task" for c in agent.calls())
