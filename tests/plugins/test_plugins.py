"""Plugins through the `skillopt` entry-point group: a tiny distribution (module +
dist-info with `entry_points.txt`) is installed into a temporary site directory,
and each kind it registers (scorer, model provider, harness with its own settings
section, optimizer, gate) is used from a suite, the library and the CLI, in this
process and in a fresh one that finds it only through the installed metadata."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from helpers import install_plugin as install
from helpers import write_skill, write_suite
from typer.testing import CliRunner

import skillopt
from skillopt import plugins
from skillopt.cli.main import app
from skillopt.errors import InputError

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ORIGIN = "skillopt-demo-plugin 0.3.1"


@pytest.fixture
def site(tmp_path, monkeypatch):
    """The demo plugin installed on sys.path; the registry is rebuilt around the test."""
    where = tmp_path / "site"
    install(where, "skillopt_demo_plugin", (HERE / "skillopt_demo_plugin.py").read_text())
    monkeypatch.syspath_prepend(str(where))
    plugins.reset()
    yield where
    plugins.reset()
    sys.modules.pop("skillopt_demo_plugin", None)


@pytest.fixture
def shout_world(isolated):
    skill = write_skill(isolated / "skills", "shout", body="# Shout\n\nRepeat the input.\n")
    items = [
        {"id": f"w{i}", "input": f"word {i}", "expected": f"word {i}", "split": split}
        for i, split in enumerate(["train"] * 4 + ["val"] * 3 + ["test"] * 3)
    ]
    suite = write_suite(
        isolated / "tasks" / "shout.yaml",
        items,
        scorer="shouted",
        defaults={
            "target": "parrot/one",
            "harness": "demo-echo",
            "demo_echo": {"prefix": ""},
            "optimizer": "demo-shout",
            "gate": "demo-lenient",
            "epochs": 1,
            "batch_size": 4,
            "slow_update": False,
            "concurrency": 2,
        },
    )
    return {"root": isolated, "skill": skill, "suite": suite}


def test_plugins_lists_every_kind_with_its_origin(site):
    res = CliRunner().invoke(app, ["plugins", "--json"])
    assert res.exit_code == 0, res.output
    found = {(c["kind"], c["name"]): c for c in json.loads(res.stdout)["components"]}
    for kind, name in (
        ("scorer", "shouted"),
        ("model", "parrot"),
        ("harness", "demo-echo"),
        ("optimizer", "demo-shout"),
        ("gate", "demo-lenient"),
    ):
        assert found[(kind, name)]["origin"] == ORIGIN, (kind, name)
    assert found[("harness", "demo-echo")]["section"] == "demo_echo"
    assert found[("scorer", "shouted")]["where"] == "skillopt_demo_plugin:Shouted"
    # the built-ins are listed through the same registry
    for kind, name in (
        ("scorer", "exact"),
        ("harness", "claude-code"),
        ("gate", "paired"),
        ("optimizer", "exemplars"),
        ("model", "local"),
    ):
        assert found[(kind, name)]["origin"] == plugins.BUILTIN, (kind, name)
    table = CliRunner().invoke(app, ["plugins"])
    assert table.exit_code == 0, table.output
    rows = {tuple(line.split()[:2]) for line in table.stdout.splitlines()}
    assert ("gate", "demo-lenient") in rows and ("model", "parrot/…") in rows
    assert ("scorer", "exact") in rows


def test_each_kind_is_used_from_a_suite_by_train_on_the_cli(site, shout_world):
    res = CliRunner().invoke(
        app, ["train", str(shout_world["skill"]), "--tasks", str(shout_world["suite"])]
    )
    assert res.exit_code == 0, res.output
    run_id = res.stdout.split("history: git log skillopt/")[1].split()[0]
    summary = json.loads((shout_world["root"] / "runs" / run_id / "summary.json").read_text())
    # the plugin's optimizer proposed SHOUT, its gate kept it, its scorer saw the
    # target (the plugin's provider) answer in capitals through the plugin's harness
    assert summary["initial_val"] == 0.0 and summary["best_val"] == 1.0
    assert summary["test"]["best"]["mean"] == 1.0 and summary["test"]["no_skill"]["mean"] == 0.0
    best = (shout_world["root"] / "runs" / run_id / "best" / "SKILL.md").read_text()
    assert "SHOUT every answer." in best
    log = CliRunner().invoke(app, ["show", run_id, "1"])
    assert "Skillopt-Gate: demo-lenient" in log.stdout


def test_a_plugin_harness_section_is_validated_like_any_setting(site, shout_world):
    suite = yaml.safe_load(shout_world["suite"].read_text())
    suite["defaults"]["demo_echo"] = {"prefix": "x", "colour": "red"}
    shout_world["suite"].write_text(yaml.safe_dump(suite))
    res = CliRunner().invoke(
        app, ["eval", str(shout_world["skill"]), "--tasks", str(shout_world["suite"])]
    )
    assert res.exit_code == 2
    assert "shout.yaml: defaults" in res.stderr and "demo_echo.colour" in res.stderr
    assert "unknown setting" in res.stderr


def test_the_section_reaches_the_harness_and_its_fingerprint(site, shout_world):
    suite = yaml.safe_load(shout_world["suite"].read_text())
    del suite["defaults"]["demo_echo"]  # the suite's defaults would win over the project file
    shout_world["suite"].write_text(yaml.safe_dump(suite))
    first = skillopt.evaluate(shout_world["skill"], shout_world["suite"])
    assert first.results[0].mean == 0.0  # "Repeat the input." never shouts
    (shout_world["root"] / "skillopt.yaml").write_text("demo_echo:\n  prefix: 'say: '\n")
    again = skillopt.evaluate(shout_world["skill"], shout_world["suite"])
    answers = {r.answer for r in again.results[0].rollouts}
    assert answers == {f"say: word {i}" for i in (7, 8, 9)}
    assert not any(r.cached for r in again.results[0].rollouts)  # a new fingerprint


def test_a_fresh_process_finds_the_plugin_through_its_installed_metadata(site, shout_world):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    listing = subprocess.run(
        [sys.executable, "-m", "skillopt", "plugins", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=shout_world["root"],
        timeout=120,
    )
    assert listing.returncode == 0, listing.stderr
    found = {(c["kind"], c["name"]): c["origin"] for c in json.loads(listing.stdout)["components"]}
    assert found[("gate", "demo-lenient")] == ORIGIN
    scored = subprocess.run(
        [
            sys.executable,
            "-m",
            "skillopt",
            "eval",
            str(shout_world["skill"]),
            "--tasks",
            str(shout_world["suite"]),
            "--target",
            "parrot/two",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=shout_world["root"],
        timeout=120,
    )
    assert scored.returncode == 0, scored.stderr
    assert "target parrot/two · harness demo-echo" in scored.stdout


def test_a_broken_plugin_is_reported_and_breaks_nothing_else(tmp_path, monkeypatch, isolated):
    where = tmp_path / "broken-site"
    install(
        where,
        "skillopt_broken",
        "def register(registry):\n    raise RuntimeError('boom')\n",
        name="skillopt-broken",
        version="1.0",
    )
    install(
        where,
        "skillopt_greedy",
        textwrap.dedent("""
        def register(registry):
            registry.scorer("exact", "nowhere:Nothing")  # a built-in's name: refused
            registry.gate("greedy", "skillopt.optimize.gate:ThresholdGate.strict")
        """),
        name="skillopt-greedy",
        version="2.0",
    )
    monkeypatch.syspath_prepend(str(where))
    plugins.reset()
    try:
        res = CliRunner().invoke(app, ["plugins"])
        assert res.exit_code == 0, res.output
        assert "plugin skillopt-broken 1.0: could not be loaded: RuntimeError: boom" in res.stderr
        assert "the scorer 'exact' is already registered by skillopt (built-in)" in res.stderr
        assert "greedy" in res.stdout  # the rest of that plugin loaded
        reg = plugins.registry()
        assert reg.find("scorer", "exact").origin == plugins.BUILTIN
        assert skillopt.Settings(gate="greedy").gate == "greedy"
    finally:
        plugins.reset()


def test_an_unknown_gate_names_the_plugins_gates_too(site):
    with pytest.raises(
        InputError,
        match="unknown gate 'nope'; choose one of: strict, margin, paired, no-regression, demo-lenient",
    ):
        from skillopt.config import resolve_settings

        resolve_settings({"gate": "nope"})


def test_a_component_that_cannot_be_imported_says_which_plugin(tmp_path, monkeypatch, shout_world):
    where = tmp_path / "lazy-site"
    install(
        where,
        "skillopt_lazy",
        textwrap.dedent("""
        def register(registry):
            registry.scorer("later", "skillopt_lazy_missing:Later")
        """),
        name="skillopt-lazy",
        version="0.1",
    )
    monkeypatch.syspath_prepend(str(where))
    plugins.reset()
    try:
        suite = yaml.safe_load(shout_world["suite"].read_text())
        suite["scorer"] = "later"
        del suite["defaults"]["demo_echo"]
        shout_world["suite"].write_text(yaml.safe_dump(suite))
        res = CliRunner().invoke(
            app, ["eval", str(shout_world["skill"]), "--tasks", str(shout_world["suite"])]
        )
        assert res.exit_code == 2
        assert "the scorer 'later' from skillopt-lazy 0.1" in res.stderr
        assert "ModuleNotFoundError" in res.stderr
    finally:
        plugins.reset()


def test_reading_a_builtin_name_reads_no_entry_point(site):
    reg = plugins.registry()
    assert reg.find("gate", "strict") is not None and reg.find("harness", "chat") is not None
    assert not reg._plugins_read
    assert reg.find("gate", "demo-lenient") is not None and reg._plugins_read
