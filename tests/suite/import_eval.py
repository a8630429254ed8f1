"""What the import tests share: a scripted target that answers each task from a table
keyed by a marker in its prompt, a scripted judge, and `skillopt eval` run offline on
a written suite, read back as {task id: passed}."""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers import write_skill
from typer.testing import CliRunner

from skillopt.cli.main import app
from skillopt.suite.sources import Imported
from skillopt.suite.sources.records import write_suite

TARGET = "scripted/suite.import_eval:answer"
JUDGE = "scripted/suite.import_eval:judge"
# a task's prompt holds `[[key]]`; the target answers ANSWERS[key]
ANSWERS: dict[str, str] = {}
YES = "JUDGE-YES"  # the judge passes an answer holding this, and only when the rubric
# it was given holds every line of REQUIRED_RUBRIC
REQUIRED_RUBRIC: list[str] = []


def answer(messages):
    text = messages[-1]["content"]
    found = re.search(r"\[\[([\w-]+)\]\]", text)
    return ANSWERS.get(found.group(1), "no answer") if found else "no marker"


def judge(messages):
    text = messages[-1]["content"]
    ok = YES in text and all(line in text for line in REQUIRED_RUBRIC)
    return json.dumps({"score": 1.0 if ok else 0.0, "feedback": "judged"})


def evaluate(imported: Imported, where: Path, answers: dict[str, str]) -> dict[str, bool]:
    """Write `imported` as a suite, run `skillopt eval` on all its items offline and
    say which passed."""
    ANSWERS.clear()
    ANSWERS.update(answers)
    written = write_suite(imported, where / "tasks" / "imported.yaml")
    skill = write_skill(where / "skills", "demo")
    out = where / "eval.json"
    res = CliRunner().invoke(
        app,
        [
            "eval",
            str(skill),
            "--tasks",
            str(written[0]),
            "--target",
            TARGET,
            "--judge",
            JUDGE,
            "--split",
            "all",
            "--json",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    rollouts = json.loads(out.read_text())["rollouts"]
    assert all(r["scored"] for r in rollouts), [r for r in rollouts if not r["scored"]]
    return {r["task_id"]: r["passed"] for r in rollouts}
