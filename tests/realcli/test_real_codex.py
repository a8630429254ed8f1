"""The codex harness against the REAL Codex CLI (the release `.ci/run` pins),
pointed at a loopback fake of the OpenAI Responses API.

Codex reaches a provider only through a `[model_providers.X]` table in config.toml,
so the user's `~/.codex/config.toml` names the fake; an isolated rollout must keep
that table and nothing else of the user's. The fake "model" reads the skill with
`cat` when it is listed, then answers a `word-N` task in capitals if it has read
it (or codex pasted it in for `$caps`), as given otherwise.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest
from conftest import (
    AGENTS_MD_MARKER,
    PERSONAL_MARKER,
    PERSONAL_SKILL,
    real_cli,
    run_eval,
    snapshot,
)
from fakes.responses_api import (
    FakeResponses,
    all_text,
    error,
    function_outputs,
    hang,
    messages,
    shell,
    skill_descriptions,
    skills_injected,
    skills_listed,
    text,
    user_skills,
)
from helpers import TRIGGER_DESCRIPTION, TRIGGER_QUERIES, topic_words, write_skill, write_suite
from typer.testing import CliRunner

from skillopt.cli.main import app

VERSION = "codex-cli 0.171.0"
KEY = "FAKE_PROVIDER_KEY"
ALL = {"seed": 1, "train": 0.0, "val": 0.0, "test": 1.0}


def caps_model(body: dict):
    """Read caps's SKILL.md first; then answer in capitals once it has been read."""
    loaded = "caps" in skills_injected(body) or any(
        "Answer in CAPITALS" in o.get("output", "") for o in function_outputs(body)
    )
    path = user_skills(body).get("caps")
    if path is not None and not loaded and not function_outputs(body):  # one try only
        return shell(f"cat {shlex.quote(str(path))}")
    prompt = " ".join(messages(body, "user"))
    task = re.findall(r"\bword-\d+\b", prompt)[-1]
    return text(task.upper() if loaded else task)


@pytest.fixture
def codex(home, monkeypatch):
    cli = real_cli("codex")
    monkeypatch.setenv("PATH", f"{cli.parent}{os.pathsep}{os.environ['PATH']}")
    for var in list(os.environ):
        if var.startswith(("OPENAI_", "CODEX_")):
            monkeypatch.delenv(var)
    monkeypatch.setenv(KEY, "sk-fake-provider-0123456789")
    apis = []

    def start(responder=caps_model, provider_options=None, **kwargs) -> FakeResponses:
        api = FakeResponses(responder, **kwargs)
        apis.append(api)
        # the user's own CODEX_HOME (~/.codex): the provider, beside their AGENTS.md
        # and a personal skill planted by `home`
        api.write_config(home / ".codex", env_key=KEY, provider_options=provider_options)
        return api

    yield start
    for api in apis:
        api.close()


def run(*args):
    return run_eval("codex", *args)


def test_a_hermetic_rollout_sees_the_skill_and_nothing_of_the_users(codex, caps, home):
    api = codex()
    skill, suite = caps
    before = snapshot(home)
    res, _ = run(
        skill, "--tasks", suite(3), "--compare-no-skill", "--concurrency", "3", "--json", "out.json"
    )
    assert res.exit_code == 0, res.output
    assert "Δ test: +1.000" in res.stdout, res.output  # 3/3 with the skill, 0/3 without
    assert "skill loaded in 3/3 tasks" in res.stdout, res.output
    bodies = api.turn_requests()
    with_skill = [b for b in bodies if "caps" in skills_listed(b)]
    # skill runs: the listing, the cat of SKILL.md, then the answer (2 calls each);
    # the baseline's 3 calls list no caps skill
    assert (len(with_skill), len(bodies)) == (6, 9), [r.path for r in api.requests]
    # nothing of the user's own setup reached any request: not their AGENTS.md, not
    # ~/.agents/skills, not $CODEX_HOME/skills
    for body in bodies:
        text_ = all_text(body)
        assert AGENTS_MD_MARKER not in text_ and PERSONAL_MARKER not in text_
        assert PERSONAL_SKILL not in skills_listed(body)
    # the user's home, their CODEX_HOME included, is byte for byte as it was: no
    # sessions, no state databases, no installation id
    after = snapshot(home)
    assert after == before, {
        k: (before.get(k), after.get(k)) for k in {*before, *after} if before.get(k) != after.get(k)
    }
    data = json.loads(Path("out.json").read_text())
    skill_row = next(r for r in data["results"] if r["variant"] == "skill")
    assert skill_row["tokens"] == 3 * 2 * (100 + 20)  # two responses of the fake each
    steps = [r for r in data["rollouts"] if r["variant"] == "skill"]
    assert all(r["skill_invoked"] is True for r in steps)


def test_without_isolation_the_users_setup_leaks_which_is_why_it_is_the_default(
    codex, caps, isolated
):
    (isolated / "skillopt.yaml").write_text("agent:\n  isolate: false\n")
    api = codex()
    skill, suite = caps
    res, _ = run(skill, "--tasks", suite(1))
    assert res.exit_code == 0, res.output
    body = api.turn_requests()[0]
    assert AGENTS_MD_MARKER in all_text(body) and PERSONAL_SKILL in skills_listed(body)


def test_explicit_invocation_is_counted(codex, caps, isolated):
    (isolated / "skillopt.yaml").write_text("agent:\n  invoke: explicit\n")
    api = codex()
    skill, suite = caps
    res, _ = run(skill, "--tasks", suite(2))
    assert res.exit_code == 0, res.output
    assert "skill loaded in 2/2 tasks" in res.stdout
    # codex pasted the skill in for `$caps`: one call each, no command ran
    bodies = api.turn_requests()
    assert len(bodies) == 2 and all(skills_injected(b) == ["caps"] for b in bodies)


def test_the_provider_and_model_are_in_the_fingerprint(codex, caps, home):
    api = codex()
    skill, suite = caps
    tasks = suite(1)
    assert run(skill, "--tasks", tasks)[0].exit_code == 0
    assert run(skill, "--tasks", tasks)[0].exit_code == 0  # served from the store
    assert len(api.turn_requests()) == 2
    api.write_config(home / ".codex", env_key=KEY, model="fake-model-2")
    res, _ = run(skill, "--tasks", tasks)
    assert res.exit_code == 0, res.output
    fresh = api.turn_requests()[2:]
    assert len(fresh) == 2 and {b["model"] for b in fresh} == {"fake-model-2"}


def test_a_missing_provider_key_is_an_auth_failure_that_stops_the_run(codex, caps, monkeypatch):
    api = codex()
    monkeypatch.delenv(KEY)
    skill, suite = caps
    res, took = run(skill, "--tasks", suite(4), "--concurrency", "1")
    assert res.exit_code == 2
    text_ = " ".join(res.stderr.split())
    assert "tasks in a row failed the same way (auth)" in text_
    assert f"Missing environment variable: `{KEY}`" in text_
    assert api.turn_requests() == [] and took < 30


def test_a_rejected_key_is_an_auth_failure_that_stops_the_run(codex, caps):
    codex(fail_with=401)
    skill, suite = caps
    res, took = run(skill, "--tasks", suite(3), "--concurrency", "3")
    assert res.exit_code == 2
    text_ = " ".join(res.stderr.split())
    assert "tasks in a row failed the same way (auth)" in text_
    assert "401 Unauthorized" in text_
    assert took < 60  # codex retries the stream 5 times: about 7 s a task


def test_a_server_failing_every_call_stops_after_five(codex, caps):
    # the user's provider table may set codex's own retries; with its defaults each
    # task would make 30 requests over about 24 s before failing
    codex(
        responder=lambda body: error(500, "upstream down"),
        provider_options={"request_max_retries": 0, "stream_max_retries": 0},
    )
    skill, suite = caps
    res, took = run(skill, "--tasks", suite(7), "--concurrency", "1")
    assert res.exit_code == 2
    assert "5 tasks in a row failed the same way (server)" in " ".join(res.stderr.split())
    assert took < 60


def test_a_hung_endpoint_times_out_and_stops_after_five(codex, caps, isolated):
    (isolated / "skillopt.yaml").write_text("agent:\n  timeout: 2\n")
    codex(responder=lambda body: hang())
    skill, suite = caps
    res, took = run(skill, "--tasks", suite(7), "--concurrency", "5")
    assert res.exit_code == 2
    assert "5 tasks in a row failed the same way (timeout)" in " ".join(res.stderr.split())
    assert took < 60


def test_a_broken_sandbox_is_its_own_failure_not_a_score(codex, caps, isolated, tmp_path):
    """codex in a user namespace that allows no nested namespace: bubblewrap cannot
    start, every command fails (exit 1, `bwrap: Creating new namespace failed`), and
    codex itself still exits 0 with an answer."""
    real = real_cli("codex")
    wrapper = tmp_path / "codex-no-userns"
    wrapper.write_text(
        "#!/bin/sh\n"
        f"exec unshare --user --map-root-user sh -c 'echo 0 > "
        f'/proc/sys/user/max_user_namespaces && exec "$0" "$@"\' {shlex.quote(str(real))} "$@"\n'
    )
    wrapper.chmod(0o755)
    (isolated / "skillopt.yaml").write_text(f"codex:\n  binary: {wrapper}\n")
    api = codex()
    skill, suite = caps
    res, _ = run(skill, "--tasks", suite(3), "--concurrency", "1")
    assert res.exit_code == 2, res.output
    text_ = " ".join(res.stderr.split())
    assert "failed the same way (sandbox)" in text_
    assert "codex's sandbox (workspace-write) could not run commands" in text_
    assert "bwrap" in text_
    assert len(api.turn_requests()) >= 2


def test_training_with_the_real_cli_learns_and_leaves_home_alone(codex, caps, home, isolated):
    """The whole loop with a real agent: the fake model follows a worked example
    (`Output: WORD-…`) in the SKILL.md it read, which the offline exemplars optimizer
    writes from the failures it sees; nothing of the run lands in HOME."""

    def learns_from_examples(body: dict):
        outputs = " ".join(o.get("output", "") for o in function_outputs(body))
        path = user_skills(body).get("caps")
        if path is not None and not outputs:
            return shell(f"cat {shlex.quote(str(path))}")
        task = re.findall(r"\bword-\d+\b", " ".join(messages(body, "user")))[-1]
        return text(task.upper() if "Output: WORD-" in outputs else task)

    codex(learns_from_examples)
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
            "codex",
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


def topic_model(body: dict):
    """Read caps's SKILL.md when the prompt shares a topic word with caps's description
    as codex lists it (once); then answer `done`."""
    description = skill_descriptions(body).get("caps", "")
    prompt = " ".join(messages(body, "user"))
    path = user_skills(body).get("caps")
    wanted = topic_words(description) & topic_words(prompt)
    if wanted and path is not None and not function_outputs(body):
        return shell(f"cat {shlex.quote(str(path))}")
    return text("done")


def test_trigger_suite_precision_and_recall_come_from_the_clis_own_events(codex, isolated):
    codex(topic_model)
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


def test_validate_min_load_rate_reads_the_clis_own_events(codex, isolated):
    codex(topic_model)
    skill = write_skill(isolated / "skills", "caps", description=TRIGGER_DESCRIPTION)
    items = [
        {"id": f"w{i}", "input": f"word-{i}" + (" in capitals" if i == 0 else ""),
         "expected": "done"}
        for i in range(4)
    ]  # fmt: skip
    suite = write_suite(isolated / "tasks" / "caps.yaml", items, split=ALL)
    args = ["validate", skill, "--tasks", suite, "--harness", "codex", "--min-load-rate"]
    res = CliRunner().invoke(app, [str(a) for a in [*args, "0.5"]])
    assert res.exit_code == 1, res.output
    assert "FAIL min-load-rate: skill loaded in 1/4 tasks (0.25) < 0.50" in res.stdout
    res = CliRunner().invoke(app, [str(a) for a in [*args, "0.25"]])  # served from the store
    assert res.exit_code == 0, res.output
    assert "pass min-load-rate: skill loaded in 1/4 tasks (0.25) ≥ 0.25" in res.stdout
