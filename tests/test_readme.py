"""The README's commands that need no provider key run as written."""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
from pathlib import Path

import pytest
from helpers import have_local
from typer.testing import CliRunner

from skillopt.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
NEEDS_KEY = ("openai/", "anthropic/", " RUN", "<")


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, re.DOTALL)
    commands = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip()
            # training runs for real in tests/train/test_bundled.py
            if line.startswith("skillopt train"):
                continue
            if line.startswith("skillopt ") and not any(k in line for k in NEEDS_KEY):
                commands.append(line)
    return commands


@pytest.mark.slow  # the bundled suites' evals and validate run on the embedded model
def test_readme_commands_run(isolated, agents):
    """`agents` puts stand-in claude/codex on PATH for the --harness examples."""
    for folder in ("skills", "tasks"):
        shutil.copytree(ROOT / folder, isolated / folder)
    commands = readme_commands()
    assert any(c.startswith("skillopt eval") for c in commands)
    assert any(c.startswith("skillopt lint") for c in commands)
    assert any("--harness claude-code" in c for c in commands)
    for command in commands:
        res = CliRunner().invoke(app, shlex.split(command)[1:])
        assert res.exit_code == 0, (command, res.output)


def test_bundled_skills_lint_clean():
    res = CliRunner().invoke(app, ["lint", "--strict", str(ROOT / "skills")])
    assert res.exit_code == 0, res.output


def readme_figures():
    """benchmarks/readme_figures.py as a module."""
    spec = importlib.util.spec_from_file_location(
        "readme_figures", ROOT / "benchmarks" / "readme_figures.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.skipif(not have_local(), reason='needs pip install -e ".[local]"')
def test_readme_quickstart_figures_are_what_the_commands_print():
    """The quickstart transcript and the eval after it, rerun for real. The table of
    the three bundled suites needs two more trainings, too slow for the test suite:
    `python benchmarks/readme_figures.py --check` checks it."""
    figures = readme_figures()
    blocks = figures.produce(("quickstart", "eval"))
    stale = figures.diff((ROOT / "README.md").read_text(encoding="utf-8"), blocks)
    assert not stale, f"run `python benchmarks/readme_figures.py --write`:\n{stale}"
