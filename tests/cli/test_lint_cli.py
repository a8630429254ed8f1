"""Tests for `skillopt lint` through the CLI: one line per problem, exit codes 0/1/2,
and no traceback for any broken file."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import write_skill
from typer.testing import CliRunner

from skillopt.cli.main import app

runner = CliRunner()


def lint(*args: str | Path):
    return runner.invoke(app, ["lint", *map(str, args)])


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def write_raw(root: Path, text: str | bytes, name: str = "demo") -> Path:
    skill_dir = root / name
    skill_dir.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8") if isinstance(text, str) else text
    (skill_dir / "SKILL.md").write_bytes(data)
    return skill_dir


def deep(tmp_path: Path) -> Path:
    """A root directory long enough that problem lines exceed any terminal width."""
    return tmp_path / ("a-rather-long-directory-name-" * 3) / ("another-long-segment-" * 3)


def test_clean_skill_exits_0(tmp_path):
    skill_dir = write_skill(tmp_path)
    result = lint(skill_dir)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert lines(result.stderr) == ["ok: 1 skill checked, no problems"]


def test_ok_says_how_many_skills_were_checked(tmp_path):
    root = tmp_path / "skills"
    for name in ("a", "b", "c"):
        write_skill(root, name=name)
    result = lint(root)
    assert result.exit_code == 0, result.output
    assert lines(result.stderr) == ["ok: 3 skills checked, no problems"]
    both = lint(root / "a", root / "b" / "SKILL.md")
    assert lines(both.stderr) == ["ok: 2 skills checked, no problems"]


def test_warnings_only_exit_0(tmp_path):
    skill_dir = write_skill(tmp_path, extra="when_to_use: always\n")
    result = lint(skill_dir)
    assert result.exit_code == 0, result.output
    (line,) = lines(result.stdout)
    assert line == (
        f"{skill_dir / 'SKILL.md'}:4: warning: when_to_use: Claude Code-only key: "
        "other agents and the Skills API reject it"
    )
    assert lines(result.stderr) == [
        "1 skill checked: 0 errors, 1 warning (--strict fails on warnings)"
    ]


def test_strict_makes_warnings_fail(tmp_path):
    skill_dir = write_skill(tmp_path, extra="model: opus\n")
    result = runner.invoke(app, ["lint", "--strict", str(skill_dir)])
    assert result.exit_code == 1, result.output
    (line,) = lines(result.stdout)
    assert line == (
        f"{skill_dir / 'SKILL.md'}:4: error: model: Claude Code-only key: "
        "other agents and the Skills API reject it"
    )
    assert "--strict" not in result.output  # it is already an error
    assert lines(result.stderr) == ["1 skill checked: 1 error, 0 warnings"]


def test_strict_is_suggested_only_for_warnings_it_would_fail_on(tmp_path):
    errors_only = write_skill(tmp_path, name="e", extra="foo: bar\n")
    result = lint(errors_only)
    assert result.exit_code == 1
    assert "--strict" not in result.output
    assert lines(result.stderr) == ["1 skill checked: 1 error, 0 warnings"]
    mixed = write_skill(tmp_path, name="m", extra="foo: bar\nmodel: opus\n")
    result = lint(mixed)
    assert "--strict" not in result.stdout  # not on the problem lines
    assert lines(result.stderr) == [
        "1 skill checked: 1 error, 1 warning (--strict fails on warnings)"
    ]


def test_errors_exit_1_one_line_per_problem(tmp_path):
    text = "---\nname: Wrong_Name\ndescription: 'Use <me>'\nfoo: bar\nhooks: {}\n---\n# Body\n"
    skill_dir = write_raw(deep(tmp_path), text)
    result = lint(skill_dir)
    assert result.exit_code == 1, result.output
    out = lines(result.stdout)
    path = str(skill_dir / "SKILL.md")
    # name breaks both the pattern and the directory rule
    assert len(out) == 5, out
    assert all(line.startswith(path + ":") for line in out)
    assert len(out[0]) > 200  # long lines stay on one line, never wrapped
    assert sum(f"{path}:2: error: name: " in line for line in out) == 2
    assert f"{path}:3: error: description: must not contain '<' or '>'" in out
    assert any(line.startswith(f"{path}:4: error: foo: unknown frontmatter key") for line in out)
    assert any(line.startswith(f"{path}:5: warning: hooks: ") for line in out)
    assert "1 skill checked: 4 errors, 1 warning" in result.stderr


def test_problem_text_with_brackets_is_printed_verbatim(tmp_path):
    text = "---\nname: demo\ndescription: ok\n'[bold]x[/bold]': 1\n---\n# B\n"
    skill_dir = write_raw(tmp_path, text)
    result = lint(skill_dir)
    assert result.exit_code == 1
    assert "[bold]x[/bold]: unknown frontmatter key" in result.stdout


def test_nonexistent_path_exits_2_with_one_line(tmp_path):
    missing = deep(tmp_path) / "does-not-exist"
    result = lint(missing)
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = lines(result.stderr)
    assert line == f"error: {missing}: no such file or directory"
    assert "Traceback" not in result.output


def test_nonexistent_among_good_paths_exits_2(tmp_path):
    good = write_skill(tmp_path)
    result = lint(good, tmp_path / "nope")
    assert result.exit_code == 2
    assert "nope" in result.stderr


BROKEN = {
    "no_frontmatter": ("# Demo\n\nJust a body.\n", "missing YAML frontmatter", 1),
    "unclosed": ("---\nname: demo\ndescription: ok\n# Body\n", "not closed", 1),
    "bad_yaml": (
        "---\nname: demo\ndescription: ok\nbad: a: b\n---\n# Body\n",
        "invalid YAML at line 4",
        4,
    ),
    "bad_yaml_crlf": ("---\r\nname: demo\r\n\r\nbad: a: b\r\n---\r\n", "invalid YAML at line 4", 4),
    "duplicate_key": (
        "---\nname: demo\ndescription: ok\nname: other\n---\n# Body\n",
        "duplicate key 'name': it is given twice",
        4,
    ),
    "list_frontmatter": ("---\n- name\n- description\n---\n# Body\n", "must be a mapping", None),
    "scalar_frontmatter": ("---\nhello\n---\n# Body\n", "must be a mapping", None),
    "not_utf8": (b"---\nname: d\xe9mo\n---\n", "not valid UTF-8", None),
    "utf16": ("---\nname: demo\n---\n".encode("utf-16"), "not valid UTF-8", None),
}


@pytest.mark.parametrize("content, words, line", BROKEN.values(), ids=BROKEN.keys())
def test_broken_file_gives_one_clear_problem(tmp_path, content, words, line):
    skill_dir = write_raw(deep(tmp_path), content)
    result = lint(skill_dir)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    (problem,) = lines(result.stdout)
    where = f"{skill_dir / 'SKILL.md'}:{line}:" if line else f"{skill_dir / 'SKILL.md'}:"
    assert problem.startswith(where)
    assert ": error: " in problem
    assert words in problem
    assert "1 skill checked: 1 error, 0 warnings" in result.stderr


def test_directory_without_skill_md(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = lint(empty)
    assert result.exit_code == 1
    (problem,) = lines(result.stdout)
    assert problem.startswith(f"{empty}: error: file: ")
    assert "no SKILL.md" in problem


def test_directory_of_skills_lints_each(tmp_path):
    root = tmp_path / "skills"
    write_skill(root, name="good")
    write_skill(root, name="warned", extra="argument-hint: '[file]'\n")
    bad = write_raw(root, "---\nname: nope\ndescription: ok\n---\n# B\n", name="bad")
    result = lint(root)
    assert result.exit_code == 1, result.output
    out = lines(result.stdout)
    assert len(out) == 2
    assert out[0].startswith(f"{bad / 'SKILL.md'}:2: error: name: ")
    assert out[1].startswith(f"{root / 'warned' / 'SKILL.md'}:4: warning: argument-hint: ")
    assert "3 skills checked: 1 error, 1 warning" in result.stderr


def test_several_paths(tmp_path):
    a = write_skill(tmp_path, name="a", extra="disable-model-invocation: true\n")
    b = write_skill(tmp_path, name="b", extra="allowed-tools: [Bash]\n")
    result = lint(a, b / "SKILL.md")
    assert result.exit_code == 0, result.output
    out = lines(result.stdout)
    assert [line.split(": ")[2] for line in out] == ["disable-model-invocation", "allowed-tools"]
    strict = runner.invoke(app, ["lint", str(a), str(b), "--strict"])
    assert strict.exit_code == 1
    assert "2 skills checked: 2 errors, 0 warnings" in strict.stderr


def test_relative_path_from_cwd(isolated):
    write_skill(isolated / "skills", name="rel", extra="version: 1\n")
    result = lint("skills/rel")
    assert result.exit_code == 1
    (problem,) = lines(result.stdout)
    assert problem.startswith("skills/rel/SKILL.md:4: error: version: ")


def test_no_paths_is_a_usage_error():
    result = runner.invoke(app, ["lint"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
