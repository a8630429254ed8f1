"""A plugin whose own code misbehaves is reported against the plugin and breaks no
command: `sys.exit` or `KeyboardInterrupt` in its `register`, a `register` that
never returns, a factory that raises, a component whose import exits. The exits
are checked in a real process (an exit code is what a user or CI sees)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from helpers import install_plugin as install
from typer.testing import CliRunner

from skillopt import plugins
from skillopt.cli.main import app

ROOT = Path(__file__).resolve().parents[2]

GOOD = textwrap.dedent("""
    def register(registry):
        registry.gate("fine", "skillopt.optimize.gate:ThresholdGate.strict")
""")


def _site(tmp_path: Path, source: str) -> Path:
    """A broken plugin and a good one installed side by side."""
    where = tmp_path / "site"
    install(where, "skillopt_bad", textwrap.dedent(source), name="skillopt-bad", version="6.6")
    install(where, "skillopt_fine", GOOD, name="skillopt-fine", version="1.0")
    return where


def _skillopt(where: Path, *args: str, seconds: str = "10") -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(where), str(ROOT)]),
        "SKILLOPT_PLUGIN_SECONDS": seconds,
    }
    return subprocess.run(
        [sys.executable, "-m", "skillopt", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _gates(listed: subprocess.CompletedProcess[str]) -> set[str]:
    return {c["name"] for c in json.loads(listed.stdout)["components"] if c["kind"] == "gate"}


@pytest.mark.parametrize(
    ("body", "reported"),
    [
        ("__import__('sys').exit(7)", "SystemExit: 7"),
        ("raise KeyboardInterrupt", "KeyboardInterrupt"),
        ("raise SystemExit", "SystemExit"),
    ],
    ids=["sys-exit-7", "keyboard-interrupt", "bare-system-exit"],
)
def test_an_exit_or_interrupt_in_register_is_the_plugins_failure(
    tmp_path, isolated, body, reported
):
    source = (
        "def register(registry):\n"
        '    registry.gate("half", "skillopt.optimize.gate:ThresholdGate.strict")\n'
        f"    {body}\n"
    )
    where = _site(tmp_path, source)
    listed = _skillopt(where, "plugins", "--json")
    assert listed.returncode == 0, listed.stderr  # not 7, not 130
    assert f"plugin skillopt-bad 6.6: could not be loaded: {reported}" in listed.stderr
    names = _gates(listed)
    assert "fine" in names  # the other plugin loaded
    assert "half" not in names  # nothing half-registered stays


def test_a_register_that_never_returns_is_left_behind_at_the_bound(tmp_path, isolated):
    where = _site(
        tmp_path,
        """
        import threading

        def register(registry):
            registry.gate("late", "skillopt.optimize.gate:ThresholdGate.strict")
            threading.Event().wait()  # forever
        """,
    )
    started = time.monotonic()
    listed = _skillopt(where, "plugins", "--json", seconds="0.5")
    took = time.monotonic() - started
    assert listed.returncode == 0, listed.stderr
    assert "plugin skillopt-bad 6.6: could not be loaded: did not finish within 0.5 s" in (
        listed.stderr
    )
    assert "late" not in _gates(listed) and "fine" in _gates(listed)
    assert took < 60  # it returned: the hung thread did not hold the process


def test_a_bad_time_bound_is_one_line_naming_the_variable(tmp_path, isolated):
    where = _site(tmp_path, GOOD)
    listed = _skillopt(where, "plugins", seconds="soon")
    assert listed.returncode == 2
    assert "SKILLOPT_PLUGIN_SECONDS must be a number of seconds, not 'soon'" in listed.stderr
    assert "Traceback" not in listed.stderr


@pytest.fixture
def faulty(tmp_path, monkeypatch, isolated):
    """A plugin whose components fail when built or imported, and a suite to use them."""
    where = tmp_path / "faulty-site"
    install(
        where,
        "skillopt_faulty",
        textwrap.dedent("""
        from skillopt import Scorer

        def boom(*args):
            raise RuntimeError("no gate today")

        def leave(*args):
            raise SystemExit(3)

        def register(registry):
            registry.gate("boom", boom)
            registry.optimizer("leaver", leave)
            registry.harness("exiting", "skillopt_faulty_exits:Harness")
        """),
        name="skillopt-faulty",
        version="0.9",
    )
    (where / "skillopt_faulty_exits.py").write_text("import sys\nsys.exit(4)\n")
    monkeypatch.syspath_prepend(str(where))
    plugins.reset()
    skill = isolated / "skills" / "s"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: s\ndescription: Answers a word. Use for word tasks.\n---\n\nSay it.\n"
    )
    items = [
        {"id": f"t{i}", "input": f"w{i}", "expected": f"w{i}", "split": s}
        for i, s in enumerate(["train", "train", "val", "val", "test"])
    ]
    suite = isolated / "tasks.yaml"
    suite.write_text(yaml.safe_dump({"name": "w", "scorer": "exact", "items": items}))
    yield skill, suite
    plugins.reset()
    sys.modules.pop("skillopt_faulty", None)
    sys.modules.pop("skillopt_faulty_exits", None)


def test_a_gate_factory_that_raises_names_the_plugin(faulty):
    skill, suite = faulty
    res = CliRunner().invoke(
        app,
        [
            "train",
            str(skill),
            "--tasks",
            str(suite),
            "--gate",
            "boom",
            "--target",
            "scripted/echo",
            "--optimizer",
            "exemplars",
        ],
    )
    assert res.exit_code == 2, res.output
    assert (
        "the gate 'boom' from skillopt-faulty 0.9 failed to build: RuntimeError: no gate today"
        in (res.stderr)
    )
    assert "internal error" not in res.output


def test_an_optimizer_factory_that_exits_names_the_plugin(faulty):
    skill, suite = faulty
    res = CliRunner().invoke(
        app,
        [
            "train",
            str(skill),
            "--tasks",
            str(suite),
            "--optimizer",
            "leaver",
            "--target",
            "scripted/echo",
        ],
    )
    assert res.exit_code == 2, res.output
    assert "the optimizer 'leaver' from skillopt-faulty 0.9 failed to build: SystemExit: 3" in (
        res.stderr
    )


def test_a_component_whose_import_exits_names_the_plugin(faulty):
    skill, suite = faulty
    res = CliRunner().invoke(
        app,
        [
            "eval",
            str(skill),
            "--tasks",
            str(suite),
            "--harness",
            "exiting",
            "--target",
            "scripted/echo",
        ],
    )
    assert res.exit_code == 2, res.output
    assert "the harness 'exiting' from skillopt-faulty 0.9 cannot be loaded" in res.stderr
    assert "SystemExit: 4" in res.stderr
