"""The claude-code harness against the REAL Claude Code CLI (the release `.ci/run`
pins), pointed at a loopback fake of the Anthropic Messages API.

The fake "model" follows the skill when the CLI has loaded it into the
conversation: it answers a `word-N` task in capitals, else as given. So a score
says whether the skill under test reached the model, and the logged request
bodies say what else did.
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import (
    CLAUDE_MD_MARKER,
    PERSONAL_MARKER,
    PERSONAL_SKILL,
    real_cli,
    run_eval,
    snapshot,
)
from fakes.anthropic_api import (
    FakeAnthropic,
    Turn,
    all_text,
    is_main,
    prompt_text,
    skill_descriptions,
    skills_listed,
    skills_loaded,
)
from helpers import TRIGGER_DESCRIPTION, TRIGGER_QUERIES, topic_words, write_skill, write_suite
from typer.testing import CliRunner

from skillopt.cli.main import app

VERSION = "2.1.197"
ALL = {"seed": 1, "train": 0.0, "val": 0.0, "test": 1.0}


def caps_model(body: dict) -> Turn:
    """Load the caps skill when it is listed and not loaded yet; answer the task in
    capitals once it is loaded, as given otherwise."""
    if "caps" in skills_listed(body) and "caps" not in skills_loaded(body):
        return Turn.tool_use("Skill", {"skill": "caps"})
    task = prompt_text(body).split()[-1]
    return Turn.text(task.upper() if "caps" in skills_loaded(body) else task)


@pytest.fixture
def claude(home, monkeypatch):
    cli = real_cli("claude")
    monkeypatch.setenv("PATH", f"{cli.parent}{os.pathsep}{os.environ['PATH']}")
    for var in list(os.environ):
        if var.startswith(("ANTHROPIC_", "CLAUDE_")):
            monkeypatch.delenv(var)
    apis = []

    def start(responder=caps_model, **kwargs) -> FakeAnthropic:
        api = FakeAnthropic(responder, **kwargs)
        apis.append(api)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-0123456789")
        return api

    yield start
    for api in apis:
        api.close()


def run(*args):
    return run_eval("claude-code", *args)


def test_a_hermetic_rollout_sees_the_skill_and_nothing_of_the_users(claude, caps, home):
    api = claude()
    skill, suite = caps
    before = snapshot(home)
    res, _ = run(
        skill, "--tasks", suite(3), "--compare-no-skill", "--concurrency", "3", "--json", "out.json"
    )
    assert res.exit_code == 0, res.output
    assert "Δ test: +1.000" in res.stdout, res.output  # 3/3 with the skill, 0/3 without
    assert "skill loaded in 3/3 tasks" in res.stdout, res.output
    bodies = api.messages_requests()
    with_skill = [b for b in bodies if "caps" in skills_listed(b)]
    # skill runs: the listing, then the answer after loading it (2 calls each); the
    # baseline's 3 calls list no caps skill
    assert (len(with_skill), len(bodies)) == (6, 9), api.paths()
    # nothing of the user's own setup reached any request, side requests included
    for r in api.requests:
        text = json.dumps(r.get("body") or {})
        assert CLAUDE_MD_MARKER not in text and PERSONAL_MARKER not in text
        assert PERSONAL_SKILL not in text
    assert all(PERSONAL_SKILL not in skills_listed(b) for b in bodies)
    # no session-title request (non-essential traffic is off): every call is the agent's
    assert api.side_requests() == []
    # nothing written under HOME: no transcript, no ~/.claude.json counter, no telemetry
    after = snapshot(home)
    assert after == before, {
        k: (before.get(k), after.get(k)) for k in {*before, *after} if before.get(k) != after.get(k)
    }
    # usage and cost read back: what the fake sent, priced by the CLI
    data = json.loads(open("out.json").read())
    skill_row = next(r for r in data["results"] if r["variant"] == "skill")
    sent = [r["usage"] for r in api.requests if r["main"] and "caps" in skills_listed(r["body"])]
    assert skill_row["tokens"] == sum(u["input_tokens"] + u["output_tokens"] for u in sent)
    assert skill_row["cost"] > 0 and skill_row["model_calls"] == 6
    info = next(r for r in data["rollouts"] if r["variant"] == "skill")["info"]
    assert info["cli_version"] == VERSION and info["model"]  # what really ran
    assert f"model reported by the agent: {info['model']}" in res.stdout


def test_without_isolation_the_users_setup_leaks_which_is_why_it_is_the_default(
    claude, caps, home, isolated
):
    (isolated / "skillopt.yaml").write_text("agent:\n  isolate: false\n")
    api = claude()
    skill, suite = caps
    res, _ = run(skill, "--tasks", suite(1))
    assert res.exit_code == 0, res.output
    (body, *_) = api.messages_requests()
    assert CLAUDE_MD_MARKER in all_text(body) and PERSONAL_SKILL in skills_listed(body)


def test_explicit_invocation_is_counted(claude, caps, isolated):
    (isolated / "skillopt.yaml").write_text("agent:\n  invoke: explicit\n")
    api = claude()
    skill, suite = caps
    res, _ = run(skill, "--tasks", suite(2))
    assert res.exit_code == 0, res.output
    assert "skill loaded in 2/2 tasks" in res.stdout
    assert "mean" in res.stdout and "1.000" in res.stdout
    # the CLI expanded /caps into the prompt: one call each, no Skill tool call
    assert len(api.messages_requests()) == 2
    assert all(skills_loaded(b) == ["caps"] for b in api.messages_requests())


def test_the_model_that_decides_the_answer_is_in_the_fingerprint(claude, caps, monkeypatch):
    api = claude()
    skill, suite = caps
    tasks = suite(2)
    res, _ = run(skill, "--tasks", tasks)
    assert res.exit_code == 0 and len(api.messages_requests()) == 4
    res, _ = run(skill, "--tasks", tasks)  # the same: served from the store
    assert res.exit_code == 0 and len(api.messages_requests()) == 4
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-sonnet-4-5")
    res, _ = run(skill, "--tasks", tasks)
    assert res.exit_code == 0, res.output
    fresh = api.messages_requests()[4:]
    assert len(fresh) == 4 and {b["model"] for b in fresh} == {"claude-sonnet-4-5"}


def test_a_bad_key_is_an_auth_failure_that_stops_the_run_in_seconds(claude, caps):
    claude(fail_all=Turn.error(401))
    skill, suite = caps
    res, took = run(skill, "--tasks", suite(4), "--concurrency", "1")
    assert res.exit_code == 2
    text = " ".join(res.stderr.split())
    assert "tasks in a row failed the same way (auth)" in text
    assert "API error 401" in text
    assert took < 60  # claude's own 10 retries would take about 3 minutes per task


def test_a_server_failing_every_call_stops_after_five(claude, caps):
    claude(fail_all=Turn.error(500))
    skill, suite = caps
    res, took = run(skill, "--tasks", suite(7), "--concurrency", "1")
    assert res.exit_code == 2
    assert "5 tasks in a row failed the same way (server)" in " ".join(res.stderr.split())
    assert took < 90


def test_a_hung_endpoint_times_out_and_stops_after_five(claude, caps, isolated):
    (isolated / "skillopt.yaml").write_text("agent:\n  timeout: 2\n")
    claude(fail_all=Turn.hang())
    skill, suite = caps
    res, took = run(skill, "--tasks", suite(7), "--concurrency", "5")
    assert res.exit_code == 2
    assert "5 tasks in a row failed the same way (timeout)" in " ".join(res.stderr.split())
    assert took < 60


def test_a_skill_the_cli_did_not_discover_is_an_error_not_a_score(claude, caps, isolated):
    # with slash commands disabled the CLI loads no skill at all: as if skillopt had
    # installed it where the CLI does not look
    (isolated / "skillopt.yaml").write_text("claude_code:\n  args: [--disable-slash-commands]\n")
    api = claude()
    skill, suite = caps
    res, _ = run(skill, "--tasks", suite(3), "--concurrency", "1")
    assert res.exit_code == 2
    text = " ".join(res.stderr.split())
    assert "failed the same way (not_discovered)" in text
    assert "claude did not discover the skill 'caps'" in text
    assert len(api.messages_requests()) >= 2


def test_training_with_the_real_cli_learns_and_leaves_home_alone(claude, caps, home, isolated):
    """The whole loop with a real agent: the fake model follows a worked example in
    the skill (`Output: WORD-…`), which the offline exemplars optimizer writes from
    the failures it sees; nothing of the run lands in HOME."""

    def learns_from_examples(body):
        if "caps" in skills_listed(body) and "caps" not in skills_loaded(body):
            return Turn.tool_use("Skill", {"skill": "caps"})
        task = prompt_text(body).split()[-1]
        learned = "caps" in skills_loaded(body) and "Output: WORD-" in all_text(body)
        return Turn.text(task.upper() if learned else task)

    claude(learns_from_examples)
    skill, _ = caps
    items = [{"id": f"w{i}", "input": f"word-{i}", "expected": f"WORD-{i}"} for i in range(12)]
    tasks = write_suite(isolated / "tasks" / "twelve.yaml", items)
    before = snapshot(home)
    res = CliRunner().invoke(
        app,
        [
            "train",
            str(skill),
            "--tasks",
            str(tasks),
            "--harness",
            "claude-code",
            "--optimizer",
            "exemplars",
            "--epochs",
            "1",
            "--batch-size",
            "4",
            "--concurrency",
            "4",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "validation 0.000 → 1.000" in res.stdout
    assert snapshot(home) == before


def test_the_real_cli_on_ray_workers_answers_as_locally(claude, caps, ray_cluster, isolated):
    """executor: ray with the real Claude Code on the cluster's workers (the fake
    API reaches them through runtime_env; the driver, which has no key, checks the
    binary and the workers run it at the path it found): the skill reaches the
    model there as here, with as many calls."""
    import subprocess
    import sys

    import yaml

    api = claude()
    skill, suite = caps
    tasks = suite(3)
    here, _ = run(skill, "--tasks", tasks, "--store", "local.sqlite")
    assert here.exit_code == 0, here.output
    assert "skill loaded in 3/3 tasks" in here.stdout, here.output
    local_calls = len(api.messages_requests())
    section = ray_cluster.settings()
    section["runtime_env"]["env_vars"].update(
        PATH=os.environ["PATH"],
        ANTHROPIC_BASE_URL=os.environ["ANTHROPIC_BASE_URL"],
        ANTHROPIC_API_KEY=os.environ["ANTHROPIC_API_KEY"],
    )
    (isolated / "skillopt.yaml").write_text(yaml.safe_dump({"executor": "ray", "ray": section}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLOPT_", "RAY_"))}
    env.update(ray_cluster.env)
    env["PYTHONPATH"] = section["runtime_env"]["env_vars"]["PYTHONPATH"]
    env["PATH"] = os.environ["PATH"]  # the driver checks the CLI the workers then run
    for var in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"):  # the driver needs neither
        env.pop(var, None)
    there = subprocess.run(
        [sys.executable, "-m", "skillopt", "eval", str(skill), "--tasks", str(tasks)]
        + ["--harness", "claude-code", "--store", "ray.sqlite"],
        cwd=isolated,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert there.returncode == 0, there.stdout + there.stderr
    assert "skill loaded in 3/3 tasks" in there.stdout, there.stdout

    # the same scores as here (split, variant, mean, pass, n, unscored, cached); the
    # tokens differ a little: the prompt the CLI builds names its environment
    def scores(out: str) -> list[list[str]]:
        return [line.split()[:7] for line in out.splitlines() if line.startswith("test ")]

    assert scores(there.stdout) == scores(here.stdout)
    assert scores(here.stdout) == [["test", "skill", "1.000", "100.0%", "3", "0", "0"]]
    assert len(api.messages_requests()) == 2 * local_calls  # the workers made as many calls


def topic_model(body: dict) -> Turn:
    """Load the caps skill when the prompt shares a topic word with caps's description
    as the CLI lists it (and it is not loaded yet); then answer `done`."""
    description = skill_descriptions(body).get("caps", "")
    wanted = topic_words(description) & topic_words(prompt_text(body))
    if wanted and "caps" not in skills_loaded(body):
        return Turn.tool_use("Skill", {"skill": "caps"})
    return Turn.text("done")


def test_trigger_suite_precision_and_recall_come_from_the_clis_own_events(claude, isolated):
    api = claude(topic_model)
    skill = write_skill(isolated / "skills", "caps", description=TRIGGER_DESCRIPTION)
    suite = write_suite(isolated / "tasks" / "caps-triggers.yaml", TRIGGER_QUERIES, split=ALL)
    res, _ = run(skill, "--tasks", suite, "--concurrency", "3", "--json", "out.json")
    assert res.exit_code == 0, res.output
    said = " ".join(res.stdout.split())
    assert "triggers (skill · test): precision 0.67 · recall 0.67" in said, res.output
    assert "s-loud should load loaded 0/1 misfire" in said
    assert "n-europe should not load loaded 1/1 misfire" in said
    report = json.loads(open("out.json").read())["results"][0]["triggers"]
    assert (report["missed"], report["spurious"]) == (["s-loud"], ["n-europe"])
    # the fake saw the listing on every run and was asked to load caps three times
    bodies = api.messages_requests()
    assert all("caps" in skills_listed(b) for b in bodies if is_main(b))
    assert sum(1 for b in bodies if "caps" in skills_loaded(b)) == 3


def test_validate_min_load_rate_reads_the_clis_own_events(claude, isolated):
    claude(topic_model)
    skill = write_skill(isolated / "skills", "caps", description=TRIGGER_DESCRIPTION)
    items = [
        {"id": f"w{i}", "input": f"word-{i}" + (" in capitals" if i == 0 else ""),
         "expected": "done"}
        for i in range(4)
    ]  # fmt: skip
    suite = write_suite(isolated / "tasks" / "caps.yaml", items, split=ALL)
    args = ["validate", skill, "--tasks", suite, "--harness", "claude-code", "--min-load-rate"]
    res = CliRunner().invoke(app, [str(a) for a in [*args, "0.5"]])
    assert res.exit_code == 1, res.output
    assert "FAIL min-load-rate: skill loaded in 1/4 tasks (0.25) < 0.50" in res.stdout
    assert "warning: the skill loaded in only 1/4 tasks" in " ".join(res.stderr.split())
    res = CliRunner().invoke(app, [str(a) for a in [*args, "0.25"]])  # served from the store
    assert res.exit_code == 0, res.output
    assert "pass min-load-rate: skill loaded in 1/4 tasks (0.25) ≥ 0.25" in res.stdout
