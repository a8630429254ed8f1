"""The README's main command, for real: the embedded model trains a bundled skill
offline and the best skill beats no skill on the test split."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
from helpers import have_local
from typer.testing import CliRunner

from skillopt.cli.main import app

ROOT = Path(__file__).resolve().parents[2]

HAVE_LOCAL = have_local()
pytestmark = pytest.mark.slow  # a whole training run on the embedded model


def main_command() -> str:
    """The first `skillopt train` line of the README that needs no key."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            if line.startswith("skillopt train") and "/" in line and "--target" not in line:
                return line.split("  #")[0].strip()
    raise AssertionError("the README has no offline `skillopt train` command")


@pytest.mark.skipif(not HAVE_LOCAL, reason='needs pip install -e ".[local]"')
def test_readme_main_command_trains_offline_and_beats_no_skill(isolated):
    for folder in ("skills", "tasks"):
        shutil.copytree(ROOT / folder, isolated / folder)
    command = main_command()
    res = CliRunner().invoke(app, shlex.split(command)[1:])
    assert res.exit_code == 0, res.output
    run_id = res.stdout.split("history: git log skillopt/")[1].split()[0]
    summary = json.loads((isolated / "runs" / run_id / "summary.json").read_text())
    test = summary["test"]
    assert test["best"]["n"] == test["no_skill"]["n"] > 0
    assert test["best"]["mean"] > test["no_skill"]["mean"]
    assert test["best"]["mean"] > test["initial"]["mean"]
    assert summary["accounting"]["optimizer_calls"] == 0  # the exemplars optimizer
    assert summary["target"] == "local/gemma-3-270m"
    rows = [line.split() for line in res.stdout.splitlines()]
    best_row = next(r for r in rows if r[:1] == ["best"])
    assert float(best_row[1]) == pytest.approx(test["best"]["mean"], abs=5e-4)
