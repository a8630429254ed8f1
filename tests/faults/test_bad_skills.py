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
        body="# Demo\n\n" + "Answer with the input, exactly. " * 90 + "\n",
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


def _long_skill_commands(skill, suite, target: str) -> dict[str, list[str]]:
    base = ["--tasks", str(suite), "--target", target]
    return {
        "eval": ["eval", str(skill), *base],
        "validate": ["validate", str(skill), *base],
        "train": ["train", str(skill), *base, "--optimizer", "exemplars", "--epochs", "1"],
    }


def test_a_skill_longer_than_the_targets_context_is_refused_unless_allowed(isolated, suite):
    model = SmallContext(lambda m: m[-1]["content"], name="scripted/small")
    register_model("scripted/small", model)
    # about 1,600 tokens: more than the whole 1,000-token window
    skill = write_skill(isolated / "skills", "demo", body="# Demo\n\n" + "Say it back. " * 500)
    try:
        refused = {}
        for name, args in _long_skill_commands(skill, suite, "scripted/small").items():
            refused[name] = CliRunner().invoke(app, args)
            assert model.call_count == 0, name  # refused before any call
        allowed = CliRunner().invoke(
            app,
            [*_long_skill_commands(skill, suite, "scripted/small")["eval"], "--allow-long-skill"],
        )
    finally:
        unregister_model("scripted/small")
    for name, result in refused.items():
        assert result.exit_code == 2, (name, result.output)
        text = " ".join(result.stderr.split())
        assert "SKILL.md: field 'body': the skill is about 1,6" in text, name
        assert "tokens, more than scripted/small's 1,000-token context" in text, name
        assert "--allow-long-skill" in text, name
    assert not (isolated / "runs").exists() or not any((isolated / "runs").glob("demo-*"))
    assert allowed.exit_code == 0, allowed.output
    assert model.call_count > 0


def test_a_skill_longer_than_any_context_is_refused_when_the_window_is_unknown(isolated, suite):
    # scripted/echo says no window: the bound is the largest any model takes
    skill = write_skill(isolated / "skills", "demo", body="# Demo\n\n" + "y" * 4_000_100 + "\n")
    result = CliRunner().invoke(app, _long_skill_commands(skill, suite, "scripted/echo")["eval"])
    assert result.exit_code == 2, result.output
    assert "more than the 1,000,000 tokens any model takes" in " ".join(result.stderr.split())
