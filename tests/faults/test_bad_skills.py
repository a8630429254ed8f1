"""Bad skills are refused before any model call: `eval` and `train` lint first, exit 2
with the lint lines on a lint error, and print warnings once. Every kind of bad
skill a fault campaign ran with exit 0 before is here."""

from __future__ import annotations

import os

import pytest
from helpers import write_skill, write_suite
from typer.testing import CliRunner

from skillopt.cli.main import app
from skillopt.models import ScriptedModel, register_model, unregister_model

GOOD_FM = "---\nname: demo\ndescription: Demo skill. Use it for tests.\n---\n"


def raw(root, text: str | bytes, name: str = "demo"):
    d = root / "skills" / name
    d.mkdir(parents=True, exist_ok=True)
    data = text if isinstance(text, bytes) else text.encode()
    (d / "SKILL.md").write_bytes(data)
    return d


def fifo(root):
    d = raw(root, GOOD_FM + "# Demo\n\nDo it.\n")
    os.mkfifo(d / "notes.txt")
    return d


def loop(root):
    d = raw(root, GOOD_FM + "# Demo\n\nDo it.\n")
    (d / "a").symlink_to("b")
    (d / "b").symlink_to("a")
    return d


def escaping_link(root):
    d = raw(root, GOOD_FM + "# Demo\n\nDo it.\n")
    secret = root / "outside.txt"
    secret.write_text("not part of the skill")
    (d / "ref.txt").symlink_to(secret)
    return d


def plain_file(root):
    path = root / "notes.md"
    path.write_text(GOOD_FM + "# Demo\n")
    return path


BAD = {
    "name differs from its directory": lambda r: raw(
        r, GOOD_FM.replace("name: demo", "name: other") + "x\n"
    ),
    "no name": lambda r: raw(r, "---\ndescription: d\n---\n# Demo\n"),
    "no description": lambda r: raw(r, "---\nname: demo\n---\n# Demo\n"),
    "description over 1024 characters": lambda r: raw(
        r, f"---\nname: demo\ndescription: {'x' * 1100}\n---\n# Demo\n"
    ),
    "an unknown key": lambda r: raw(
        r, "---\nname: demo\ndescription: d\ncolour: red\n---\n# Demo\n"
    ),
    "an empty body": lambda r: raw(r, GOOD_FM + "\n   \n"),
    "a 0-byte SKILL.md": lambda r: raw(r, b""),
    "a NUL byte": lambda r: raw(r, GOOD_FM + "# Demo\n\nDo\x00 it.\n"),
    "a plain file as the path": plain_file,
    "a FIFO in the folder": fifo,
    "a symlink loop in the folder": loop,
    "a symlink out of the folder": escaping_link,
}
EXPECTED = {
    "name differs from its directory": "must equal the skill directory name",
    "no name": "name: required",
    "no description": "description: required",
    "description over 1024 characters": "at most 1024 characters",
    "an unknown key": "unknown frontmatter key",
    "an empty body": "the body is empty",
    "a 0-byte SKILL.md": "missing YAML frontmatter",
    "a NUL byte": "NUL byte",
    "a plain file as the path": "is not a SKILL.md",
    "a FIFO in the folder": "not a regular file",
    "a symlink loop in the folder": "broken or looping symlink",
    "a symlink out of the folder": "outside the skill directory",
}


@pytest.fixture
def target():
    model = ScriptedModel(lambda m: m[-1]["content"], name="scripted/count")
    register_model("scripted/count", model)
    yield model
    unregister_model("scripted/count")


@pytest.fixture
def suite(isolated):
    return write_suite(
        isolated / "tasks" / "t.yaml",
        [
            {
                "id": f"t{i}",
                "input": f"q{i}",
                "expected": f"q{i}",
                "split": ["train", "val", "test"][i % 3],
            }
            for i in range(6)
        ],
    )


@pytest.mark.parametrize("command", ["eval", "train"])
@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_skill_is_refused_before_any_model_call(isolated, suite, target, command, case):
    path = BAD[case](isolated)
    args = [command, str(path), "--tasks", str(suite), "--target", "scripted/count"]
    if command == "train":
        args += ["--optimizer", "scripted/count", "--epochs", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "lint error" in text and EXPECTED[case] in text
    assert target.call_count == 0
    assert not (isolated / "runs").exists() or not any((isolated / "runs").glob("*/run.yaml"))


def test_the_dry_run_refuses_a_bad_skill_too(isolated, suite, target):
    path = BAD["an empty body"](isolated)
    result = CliRunner().invoke(
        app,
        [
            "train",
            str(path),
            "--tasks",
            str(suite),
            "--target",
            "scripted/count",
            "--optimizer",
            "exemplars",
            "--dry-run",
        ],
    )
    assert result.exit_code == 2 and "the body is empty" in result.output


class SmallContext(ScriptedModel):
    def context_window(self) -> int:
        return 1000


def test_a_skill_filling_the_targets_context_is_warned_about_once(isolated, suite):
    model = SmallContext(lambda m: m[-1]["content"], name="scripted/small")
    register_model("scripted/small", model)
    skill = write_skill(
        isolated / "skills",
        "demo",
        body="# Demo\n\n" + "Answer with the input, exactly. " * 200 + "\n",
    )
    try:
        result = CliRunner().invoke(
            app, ["eval", str(skill), "--tasks", str(suite), "--target", "scripted/small"]
        )
        plan = CliRunner().invoke(
            app,
            [
                "train",
                str(skill),
                "--tasks",
                str(suite),
                "--target",
                "scripted/small",
                "--optimizer",
                "exemplars",
                "--dry-run",
            ],
        )
    finally:
        unregister_model("scripted/small")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert text.count("more than half of scripted/small's 1,000-token context") == 1
    assert model.call_count > 0  # a warning, not a refusal
    assert "note: warning:" in plan.output and "1,000-token context" in plan.output


def test_a_huge_skill_is_warned_about_by_lint(isolated):
    skill = write_skill(isolated / "skills", "demo", body="# Demo\n\n" + "x" * 200_000 + "\n")
    result = CliRunner().invoke(app, ["lint", str(skill)])
    assert "200,009 characters" in result.output or "characters (about" in result.output
