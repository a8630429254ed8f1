"""Every command's --help: names the options a new user reaches for (exemplars, the
embedded and scripted models), shows metavars rather than the framework's type names,
and one JSON convention (`--json FILE`) across commands."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from skillopt.cli.main import app

runner = CliRunner()
COMMANDS = [
    "train",
    "eval",
    "lint",
    "runs",
    "log",
    "diff",
    "show",
    "models",
    "plugins",
    "export",
    "adopt",
    "validate",
]


def help_of(*command: str) -> str:
    res = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "100"})
    assert res.exit_code == 0, res.output
    return res.stdout


def option(text: str, name: str) -> str:
    """The help of one option: its line and the wrapped lines after it."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(rf"\s+(-\w, )?{name}\b", line))
    block = [lines[start]]
    for line in lines[start + 1 :]:
        if re.match(r"\s+-", line) or not line.strip():
            break
        block.append(line)
    return re.sub(r"\s+", " ", " ".join(part.strip() for part in block))


@pytest.mark.parametrize("command", COMMANDS)
def test_no_framework_type_names(command):
    text = help_of(command)
    assert not re.search(r"<[\w\[\]., ]+>", text), text  # <int range>, <path>, <list[Path]>
    assert "[x>=" not in text and "x<=" not in text
    usage = text.splitlines()[0]
    assert "{" not in usage, usage


def test_arguments_read_as_their_metavar():
    assert "Usage: skillopt lint [OPTIONS] PATH..." in help_of("lint")
    assert re.search(r"^\s+PATH\.\.\.\s+Skill directories", help_of("lint"), re.M)
    assert "Usage: skillopt eval [OPTIONS] [SKILL]" in help_of("eval")
    assert "Usage: skillopt show [OPTIONS] RUN STEP" in help_of("show")
    assert re.search(r"^\s+SKILL\s+Skill directory or SKILL.md\.", help_of("eval"), re.M)


def test_numbers_have_a_metavar_and_a_worded_lower_bound():
    text = help_of("train")
    for name in ("--epochs", "--batch-size", "--lr", "--stall-patience", "--concurrency"):
        assert re.search(rf"{name} N\b", text), name
    res = runner.invoke(app, ["train", "s", "--tasks", "t.yaml", "--epochs", "0"])
    assert res.exit_code == 2
    assert "Invalid value for '--epochs': must be at least 1, got 0" in res.output
    res = runner.invoke(app, ["eval", "s", "--tasks", "t.yaml", "-j", "0"])
    assert res.exit_code == 2 and "must be at least 1" in res.output
    res = runner.invoke(app, ["train", "s", "--tasks", "t.yaml", "--stall-patience", "-1"])
    assert res.exit_code == 2 and "must be at least 0, got -1" in res.output


def test_optimizer_help_names_exemplars():
    text = option(help_of("train"), "--optimizer")
    assert text.startswith("--optimizer NAME")
    assert "exemplars (offline" in text and "openai/gpt-4o" in text


@pytest.mark.parametrize("command", ["train", "eval", "validate"])
def test_target_help_names_the_embedded_and_scripted_models(command):
    text = option(help_of(command), "--target")
    assert text.startswith("-t, --target MODEL")
    assert "local/gemma-3-270m" in text and "scripted/echo" in text
    assert "openai/gpt-4o-mini" in text


@pytest.mark.parametrize("command", ["export", "adopt", "runs", "log", "show", "diff", "train"])
def test_every_command_taking_a_run_has_run_dir(command):
    assert re.search(r"--run-dir (DIR|PATH)\b", help_of(command))


@pytest.mark.parametrize("command", ["eval", "validate"])
def test_one_json_convention(command):
    text = help_of(command)
    assert option(text, "--json").startswith("--json FILE Write the whole result as JSON")
    assert "--format" not in text  # validate's older spelling still works, unlisted
