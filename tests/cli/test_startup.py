"""Start-up: `import skillopt.cli.main` and building the app (what `skillopt
--help` does) run no subprocess and load no engine, provider client, git, Ray,
llama.cpp or pydantic; a command loads what it uses when it runs (a sub-command's
--help loads pydantic only because typer coerces its parameters with it): an eval
with a scripted model loads no git, litellm, Ray, llama.cpp or provider SDK and
starts no subprocess, and listing runs loads no git."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import SPAWN_AUDIT, write_skill, write_suite

ROOT = Path(__file__).resolve().parents[2]

PROBE = (
    SPAWN_AUDIT
    + """
import typer
from typer.testing import CliRunner
from skillopt.cli.main import app
typer.main.get_command(app)
outputs = [CliRunner().invoke(app, [*args, "--help"]).exit_code for args in ARGS]
print(json.dumps({"spawned": spawned, "modules": sorted(sys.modules), "exits": outputs}))
"""
)

# runs one command as `skillopt` would, then says what it loaded and started
RUN = (
    SPAWN_AUDIT
    + """
from skillopt.cli.main import app
code = 0
try:
    app(ARGS)
except SystemExit as stop:
    code = stop.code
print(json.dumps({"spawned": spawned, "modules": sorted(sys.modules), "exit": code}))
"""
)

HEAVY = ("litellm", "git", "llama_cpp", "ray", "pydantic", "yaml", "openai", "anthropic", "httpx")


def start(*commands: list[str]) -> dict:
    code = PROBE.replace("ARGS", repr(list(commands)))
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return json.loads(res.stdout.splitlines()[-1])


@pytest.mark.parametrize("command", [[], ["eval"], ["train"], ["validate"], ["runs"]])
def test_help_runs_no_subprocess_and_loads_nothing_heavy(command):
    found = start(command)
    assert found["exits"] == [0]
    assert found["spawned"] == []
    top = {m.split(".")[0] for m in found["modules"]}
    # typer itself coerces a sub-command's parameters with pydantic, even for --help
    heavy = set(HEAVY) - ({"pydantic"} if command else set())
    assert not top & heavy, top & heavy
    ours = {m for m in found["modules"] if m.startswith("skillopt.")}
    engines = {m for m in ours if not m.startswith(("skillopt.cli", "skillopt.api"))}
    # the public errors, the leaf helpers and what shipping may refuse: nothing else
    assert engines <= {
        "skillopt._util",
        "skillopt._util.display",
        "skillopt._util.secrets",
        "skillopt._util.text",
        "skillopt._util.version",
        "skillopt.errors",
        "skillopt.ship",
        "skillopt.ship.refusals",
    }, engines


def test_the_cli_imports_only_the_api_and_public_names():
    # besides the api and the public errors, two leaf helpers: formatting figures
    # (`display`) and making text safe to print (`text.safe`), which import nothing
    allowed = (
        "skillopt.api",
        "skillopt.cli",
        "skillopt.errors",
        "skillopt._util.display",
        "skillopt._util.text",
    )
    for path in sorted((ROOT / "skillopt" / "cli").glob("*.py")):
        for line in path.read_text(encoding="utf-8").splitlines():
            words = line.split()
            if len(words) < 2 or words[0] not in ("from", "import"):
                continue
            module = words[1]
            if words[0] == "from" and module == "skillopt._util":  # `import display`
                module = f"{module}.{words[3]}"
            if module == "skillopt" or not module.startswith("skillopt"):
                continue  # `from skillopt import api` and public types; third parties
            assert module.startswith(allowed), f"{path.name}: {line.strip()}"


def run(cwd: Path, *args: str) -> dict:
    """`skillopt ARGS` in a fresh process in `cwd`: its exit code, the modules it
    loaded and the subprocesses it started."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    code = RUN.replace("ARGS", repr(list(args)))
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.splitlines()[-1])


@pytest.fixture
def project(tmp_path):
    skill = write_skill(tmp_path / "skills", "caps")
    items = [
        {"id": f"t{i}", "input": f"w{i}", "expected": f"W{i}", "split": split}
        for i, split in enumerate(["train", "train", "val", "val", "test"])
    ]
    suite = write_suite(tmp_path / "caps.yaml", items, prompt="Shout: {input}")
    return tmp_path, skill, suite


def test_an_eval_with_a_scripted_model_loads_no_git_sdk_or_engine_of_another_path(project):
    cwd, skill, suite = project
    found = run(
        cwd, "eval", str(skill), "--tasks", str(suite), "--target", "scripted/echo",
        "--split", "test", "--store", str(cwd / "store.sqlite"),
    )  # fmt: skip
    assert found["exit"] == 0
    assert found["spawned"] == []
    top = {m.split(".")[0] for m in found["modules"]}
    heavy = {"git", "gitdb", "litellm", "ray", "llama_cpp", "openai", "anthropic", "httpx"}
    assert not top & heavy, top & heavy
    ours = set(found["modules"])
    # an eval runs no training, writes no audit and reads no run back
    assert not {m for m in ours if m.startswith(("skillopt.training", "skillopt.store.audit"))}
    assert "skillopt.optimize.base" not in ours and "skillopt.optimize.gate" not in ours


def test_listing_runs_loads_no_git_though_training_does(project):
    cwd, skill, suite = project
    runs = str(cwd / "runs")
    trained = run(
        cwd, "train", str(skill), "--tasks", str(suite), "--target", "scripted/echo",
        "--optimizer", "exemplars", "--epochs", "1", "--run-dir", runs,
    )  # fmt: skip
    assert trained["exit"] == 0
    assert "git" in {m.split(".")[0] for m in trained["modules"]}  # the audit commits
    for args in (["runs", "--run-dir", runs], ["runs", "--run-dir", runs, "--json"]):
        found = run(cwd, *args)
        assert found["exit"] == 0
        assert found["spawned"] == []
        top = {m.split(".")[0] for m in found["modules"]}
        assert not top & {"git", "gitdb"}, args
