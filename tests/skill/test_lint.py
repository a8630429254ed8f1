"""Tests for `skillopt.skill.lint`: the Agent Skills frontmatter rules, Claude Code-only
keys, body checks and one clear problem for every broken file."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import write_skill

from skillopt.errors import InputError
from skillopt.skill.lint import Problem, lint_paths, lint_skill

VALID_FULL = """\
---
name: demo
description: Demo skill. Use it for tests.
license: Apache-2.0
compatibility: Needs Python 3.10+ and network access.
metadata:
  author: someone
  version: "1.0"
allowed-tools: Bash(git:*) Read Write
---
# Demo

Do the task well.
"""


def write_raw(root: Path, text: str | bytes, name: str = "demo") -> Path:
    """Write `text` as <root>/<name>/SKILL.md and return the skill directory."""
    skill_dir = root / name
    skill_dir.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8") if isinstance(text, str) else text
    (skill_dir / "SKILL.md").write_bytes(data)
    return skill_dir


def fm(body: str = "# Demo\n\nDo it.\n", **keys: str) -> str:
    """A SKILL.md with the given raw YAML lines (key -> raw value text)."""
    lines = "".join(f"{k.replace('_dash_', '-')}: {v}\n" for k, v in keys.items())
    return f"---\n{lines}---\n{body}"


def only(problems: list[Problem]) -> Problem:
    assert len(problems) == 1, [str(p) for p in problems]
    return problems[0]


def errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]


def warnings(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "warning"]


def fields(problems: list[Problem]) -> list[str]:
    return [p.field for p in problems]


# -- valid skills -----------------------------------------------------------------------


def test_minimal_valid_skill_has_no_problems(tmp_path):
    assert lint_skill(write_skill(tmp_path)) == []


def test_all_standard_keys_valid(tmp_path):
    skill_dir = write_raw(tmp_path, VALID_FULL)
    assert lint_skill(skill_dir) == []
    assert lint_skill(skill_dir, strict=True) == []


def test_lint_accepts_skill_md_path(tmp_path):
    skill_dir = write_skill(tmp_path, name="by-file")
    assert lint_skill(skill_dir / "SKILL.md") == []
    assert lint_skill(str(skill_dir)) == []


def test_valid_skill_with_crlf_and_bom(tmp_path):
    text = "\ufeff" + VALID_FULL.replace("\n", "\r\n")
    assert lint_skill(write_raw(tmp_path, text)) == []


# -- name -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "demo", "pdf-tools", "a1-b2-c3", "x" * 64, "1-2"])
def test_valid_names(tmp_path, name):
    assert lint_skill(write_skill(tmp_path, name=name)) == []


@pytest.mark.parametrize(
    "name", ["Demo", "-demo", "demo-", "de--mo", "de_mo", "de.mo", "démo", "DEMO", "pdf tools"]
)
def test_name_pattern_violations(tmp_path, name):
    # the directory has the same name, so only the pattern rule can fire
    skill_dir = write_raw(tmp_path, fm(name=f"'{name}'", description="ok"), name=name)
    problem = only(lint_skill(skill_dir))
    assert problem.field == "name" and problem.severity == "error"
    assert "lowercase letters, digits and single hyphens" in problem.message
    assert problem.line == 2


def test_name_with_trailing_newline_is_rejected(tmp_path):
    # `$` in a Python regex also matches before a final newline; the rule must not
    skill_dir = write_raw(tmp_path, fm(name='"demo\\n"', description="ok"), name="demo\n")
    problem = only(lint_skill(skill_dir))
    assert problem.field == "name"
    assert "lowercase letters" in problem.message


def test_name_too_long(tmp_path):
    name = "x" * 65
    problem = only(lint_skill(write_skill(tmp_path, name=name)))
    assert problem.field == "name" and problem.severity == "error"
    assert "1-64 characters, got 65" in problem.message


def test_name_empty(tmp_path):
    skill_dir = write_raw(tmp_path, fm(name="''", description="ok"))
    probs = lint_skill(skill_dir)
    assert probs and set(fields(probs)) == {"name"}
    assert any("1-64 characters, got 0" in p.message for p in probs)
    assert all(p.severity == "error" for p in probs)


def test_name_must_equal_directory(tmp_path):
    skill_dir = write_raw(tmp_path, fm(name="other", description="ok"), name="demo")
    problem = only(lint_skill(skill_dir))
    assert problem.field == "name" and problem.severity == "error"
    assert "'other'" in problem.message and "'demo'" in problem.message
    assert problem.line == 2
    # the same through the SKILL.md path
    assert lint_skill(skill_dir / "SKILL.md") == [problem]


def test_name_missing(tmp_path):
    skill_dir = write_raw(tmp_path, fm(description="ok"))
    problem = only(lint_skill(skill_dir))
    assert (problem.field, problem.severity, problem.line) == ("name", "error", 1)
    assert "required" in problem.message


@pytest.mark.parametrize(
    "raw, kind",
    [("123", "int"), ("[a, b]", "list"), ("{a: b}", "dict"), ("true", "bool"), ("~", "NoneType")],
)
def test_name_not_a_string(tmp_path, raw, kind):
    probs = lint_skill(write_raw(tmp_path, fm(name=raw, description="ok")))
    problem = only(probs)
    assert problem.field == "name" and problem.severity == "error"
    if kind == "NoneType":
        assert "required" in problem.message
    else:
        assert f"must be a string, got {kind}" in problem.message


def test_name_with_reserved_word_is_a_warning(tmp_path):
    probs = lint_skill(write_skill(tmp_path, name="claude-helper"))
    problem = only(probs)
    assert (problem.field, problem.severity) == ("name", "warning")
    assert "reserved" in problem.message


# -- description ------------------------------------------------------------------------


def test_description_missing(tmp_path):
    problem = only(lint_skill(write_raw(tmp_path, fm(name="demo"))))
    assert (problem.field, problem.severity, problem.line) == ("description", "error", 1)
    assert "required" in problem.message


@pytest.mark.parametrize("raw", ["''", "'   '"])
def test_description_empty(tmp_path, raw):
    problem = only(lint_skill(write_raw(tmp_path, fm(name="demo", description=raw))))
    assert (problem.field, problem.severity) == ("description", "error")
    assert "empty" in problem.message
    assert problem.line == 3


def test_description_length_limit(tmp_path):
    assert lint_skill(write_skill(tmp_path, name="ok", description="d" * 1024)) == []
    problem = only(lint_skill(write_skill(tmp_path, name="long", description="d" * 1025)))
    assert (problem.field, problem.severity) == ("description", "error")
    assert "at most 1024 characters, got 1025" in problem.message


@pytest.mark.parametrize("desc", ["Use <this> skill", "a < b", "a > b", "<tag>"])
def test_description_angle_brackets(tmp_path, desc):
    problem = only(lint_skill(write_raw(tmp_path, fm(name="demo", description=f"'{desc}'"))))
    assert (problem.field, problem.severity) == ("description", "error")
    assert "'<' or '>'" in problem.message


def test_description_folded_multiline_is_fine(tmp_path):
    text = "---\nname: demo\ndescription: >-\n  First line\n  second line.\n---\n# Body\n"
    assert lint_skill(write_raw(tmp_path, text)) == []


@pytest.mark.parametrize("raw, kind", [("[a]", "list"), ("12", "int"), ("{a: b}", "dict")])
def test_description_not_a_string(tmp_path, raw, kind):
    problem = only(lint_skill(write_raw(tmp_path, fm(name="demo", description=raw))))
    assert problem.field == "description"
    assert f"must be a string, got {kind}" in problem.message


# -- compatibility, license -------------------------------------------------------------


def test_compatibility_length(tmp_path):
    ok = write_raw(tmp_path / "a", fm(name="demo", description="ok", compatibility="c" * 500))
    assert lint_skill(ok) == []
    bad = write_raw(tmp_path / "b", fm(name="demo", description="ok", compatibility="c" * 501))
    problem = only(lint_skill(bad))
    assert (problem.field, problem.severity, problem.line) == ("compatibility", "error", 4)
    assert "got 501" in problem.message


@pytest.mark.parametrize("raw", ["[linux]", "3", "''"])
def test_compatibility_not_a_nonempty_string(tmp_path, raw):
    problem = only(
        lint_skill(write_raw(tmp_path, fm(name="demo", description="ok", compatibility=raw)))
    )
    assert (problem.field, problem.severity) == ("compatibility", "error")


def test_license_must_be_a_string(tmp_path):
    problem = only(
        lint_skill(write_raw(tmp_path, fm(name="demo", description="ok", license="[MIT]")))
    )
    assert (problem.field, problem.severity) == ("license", "error")
    assert "must be a string, got list" in problem.message


# -- metadata ---------------------------------------------------------------------------


def test_metadata_string_map_ok(tmp_path):
    text = fm(name="demo", description="ok", metadata="{author: me, version: '2'}")
    assert lint_skill(write_raw(tmp_path, text)) == []


@pytest.mark.parametrize("raw, kind", [("[a, b]", "list"), ("just text", "str"), ("5", "int")])
def test_metadata_not_a_mapping(tmp_path, raw, kind):
    problem = only(lint_skill(write_raw(tmp_path, fm(name="demo", description="ok", metadata=raw))))
    assert (problem.field, problem.severity, problem.line) == ("metadata", "error", 4)
    assert f"got {kind}" in problem.message


@pytest.mark.parametrize("value", ["1.0", "3", "true", "[a]", "{x: y}", "~"])
def test_metadata_values_must_be_strings(tmp_path, value):
    text = (
        f"---\nname: demo\ndescription: ok\nmetadata:\n  author: me\n  version: {value}\n---\nb\n"
    )
    problem = only(lint_skill(write_raw(tmp_path, text)))
    assert (problem.field, problem.severity) == ("metadata", "error")
    assert "'version'" in problem.message
    assert problem.line == 6


def test_metadata_keys_must_be_strings(tmp_path):
    text = "---\nname: demo\ndescription: ok\nmetadata:\n  1: one\n---\nb\n"
    problem = only(lint_skill(write_raw(tmp_path, text)))
    assert (problem.field, problem.severity) == ("metadata", "error")


# -- allowed-tools ----------------------------------------------------------------------


def test_allowed_tools_string_ok(tmp_path):
    text = fm(name="demo", description="ok", allowed_dash_tools="Bash Read Write")
    assert lint_skill(write_raw(tmp_path, text)) == []


def test_allowed_tools_list_is_a_warning(tmp_path):
    text = fm(name="demo", description="ok", allowed_dash_tools="[Bash, Read]")
    skill_dir = write_raw(tmp_path, text)
    problem = only(lint_skill(skill_dir))
    assert (problem.field, problem.severity, problem.line) == ("allowed-tools", "warning", 4)
    assert "space-separated" in problem.message
    strict = only(lint_skill(skill_dir, strict=True))
    assert (strict.field, strict.severity, strict.line) == ("allowed-tools", "error", 4)


@pytest.mark.parametrize("raw", ["3", "{a: b}", "true"])
def test_allowed_tools_other_types_are_errors(tmp_path, raw):
    text = fm(name="demo", description="ok", allowed_dash_tools=raw)
    problem = only(lint_skill(write_raw(tmp_path, text)))
    assert (problem.field, problem.severity) == ("allowed-tools", "error")


# -- other keys -------------------------------------------------------------------------


CLAUDE_ONLY = [
    "when_to_use",
    "argument-hint",
    "disable-model-invocation",
    "model",
    "hooks",
    "user-invocable",
    "context",
    "agent",
]


@pytest.mark.parametrize("key", CLAUDE_ONLY)
def test_claude_only_keys_warn_and_fail_with_strict(tmp_path, key):
    text = f"---\nname: demo\ndescription: ok\n{key}: something\n---\n# Body\n"
    skill_dir = write_raw(tmp_path, text)
    problem = only(lint_skill(skill_dir))
    assert (problem.field, problem.severity, problem.line) == (key, "warning", 4)
    assert "Claude Code-only" in problem.message
    strict = only(lint_skill(skill_dir, strict=True))
    assert (strict.field, strict.severity, strict.line) == (key, "error", 4)
    assert strict.message == problem.message


@pytest.mark.parametrize(
    "key",
    ["version", "tags", "author", "Name", "description_long", "allowed_tools", "allowedTools"],
)
def test_unknown_keys_are_errors(tmp_path, key):
    text = f"---\nname: demo\ndescription: ok\n\n{key}: x\n---\n# Body\n"
    skill_dir = write_raw(tmp_path, text)
    problem = only(lint_skill(skill_dir))
    assert (problem.field, problem.severity, problem.line) == (key, "error", 5)
    assert "unknown frontmatter key" in problem.message
    assert "allowed-tools" in problem.message
    assert lint_skill(skill_dir, strict=True) == [problem]


def test_non_string_keys_do_not_crash(tmp_path):
    text = "---\nname: demo\ndescription: ok\n1: one\nnull: nothing\n2024-01-01: date\n---\nb\n"
    probs = lint_skill(write_raw(tmp_path, text))
    assert len(probs) == 3
    assert all(p.severity == "error" and "unknown" in p.message for p in probs)
    assert fields(probs)[0] == "1" and probs[0].line == 4


def test_several_problems_are_all_reported_in_file_order(tmp_path):
    text = (
        "---\nname: Bad_Name\ndescription: 'has <html>'\nmodel: opus\nfoo: bar\n"
        "allowed-tools: [Bash]\n---\n# Body\n"
    )
    probs = lint_skill(write_raw(tmp_path, text, name="Bad_Name"))
    got = [(p.field, p.severity, p.line) for p in probs]
    assert ("name", "error", 2) in got
    assert ("description", "error", 3) in got
    assert ("model", "warning", 4) in got
    assert ("foo", "error", 5) in got
    assert ("allowed-tools", "warning", 6) in got
    assert len(probs) == 5


def test_strict_turns_every_warning_into_an_error(tmp_path):
    text = (
        "---\nname: demo\ndescription: ok\nwhen_to_use: always\n---\n"
        "See [the guide](missing.md).\n"
    )  # also a broken link
    skill_dir = write_raw(tmp_path, text)
    normal = lint_skill(skill_dir)
    assert sorted(fields(normal)) == ["body", "when_to_use"]
    assert errors(normal) == []
    strict = lint_skill(skill_dir, strict=True)
    assert warnings(strict) == []
    assert [(p.field, p.message, p.line) for p in strict] == [
        (p.field, p.message, p.line) for p in normal
    ]


# -- broken files: exactly one clear problem -------------------------------------------


def test_missing_skill_md_in_directory(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    problem = only(lint_skill(empty))
    assert problem.path == empty / "SKILL.md"
    assert (problem.field, problem.severity) == ("file", "error")
    assert "SKILL.md not found" in problem.message


def test_lint_skill_on_missing_path_is_a_problem(tmp_path):
    problem = only(lint_skill(tmp_path / "ghost" / "SKILL.md"))
    assert problem.path == tmp_path / "ghost" / "SKILL.md"
    assert problem.field == "file" and problem.severity == "error"


def test_no_frontmatter(tmp_path):
    skill_dir = write_raw(tmp_path, "# Demo\n\nname: demo\n")
    problem = only(lint_skill(skill_dir))
    assert (problem.field, problem.severity, problem.line) == ("frontmatter", "error", 1)
    assert "missing YAML frontmatter" in problem.message
    assert problem.path == skill_dir / "SKILL.md"


def test_empty_file(tmp_path):
    problem = only(lint_skill(write_raw(tmp_path, "")))
    assert problem.field == "frontmatter" and "missing" in problem.message


@pytest.mark.parametrize(
    "text", ["---\nname: demo\ndescription: ok\n# Body\n", "\ufeff---\nname: demo\n", "---"]
)
def test_unclosed_frontmatter(tmp_path, text):
    problem = only(lint_skill(write_raw(tmp_path, text)))
    assert (problem.field, problem.severity, problem.line) == ("frontmatter", "error", 1)
    assert "not closed" in problem.message


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("bad_line", [2, 4, 6])
def test_invalid_yaml_reports_file_line(tmp_path, bad_line, newline):
    lines = [
        "---",
        "name: demo",
        "description: ok",
        "license: MIT",
        "compatibility: any",
        "---",
        "# Body",
    ]
    lines.insert(bad_line - 1, "oops: a: b")
    text = newline.join(lines) + newline
    skill_dir = write_raw(tmp_path, text)
    problem = only(lint_skill(skill_dir))
    assert (problem.field, problem.severity) == ("frontmatter", "error")
    assert problem.line == bad_line
    assert f"line {bad_line}" in problem.message
    assert str(problem).startswith(f"{skill_dir / 'SKILL.md'}:{bad_line}: error: frontmatter:")


def test_invalid_yaml_error_at_end_of_stream(tmp_path):
    problem = only(lint_skill(write_raw(tmp_path, "---\nname: demo\ndescription: [x\n---\nb\n")))
    assert problem.field == "frontmatter" and "invalid YAML" in problem.message
    assert problem.line == 3 and problem.message.startswith("invalid YAML at line 3: ")


def test_yaml_control_character(tmp_path):
    problem = only(lint_skill(write_raw(tmp_path, "---\nname: demo\x07\ndescription: x\n---\n")))
    assert problem.field == "frontmatter" and "invalid YAML" in problem.message


@pytest.mark.parametrize(
    "inner, kind", [("- name\n- description\n", "list"), ("just words\n", "str"), ("7\n", "int")]
)
def test_non_mapping_frontmatter(tmp_path, inner, kind):
    problem = only(lint_skill(write_raw(tmp_path, f"---\n{inner}---\n# Body\n")))
    assert (problem.field, problem.severity) == ("frontmatter", "error")
    assert f"mapping of keys, got {kind}" in problem.message


@pytest.mark.parametrize(
    "data, byte",
    [(b"---\nname: demo\ndescription: caf\xe9\n---\n", 31), (b"\xff\xfe-\x00-\x00-\x00", 0)],
)
def test_non_utf8_file(tmp_path, data, byte):
    skill_dir = write_raw(tmp_path, data)
    problem = only(lint_skill(skill_dir))
    assert (problem.field, problem.severity) == ("file", "error")
    assert problem.message == f"not valid UTF-8 (byte {byte})"
    assert problem.path == skill_dir / "SKILL.md"


def test_empty_frontmatter_block(tmp_path):
    probs = lint_skill(write_raw(tmp_path, "---\n---\n# Body\n"))
    assert sorted(fields(probs)) == ["description", "name"]
    assert all(p.severity == "error" and "required" in p.message for p in probs)


# -- body -------------------------------------------------------------------------------


def test_empty_body_is_an_error(tmp_path):
    problem = only(lint_skill(write_skill(tmp_path, body="\n  \n")))
    assert (problem.field, problem.severity) == ("body", "error")
    assert "empty" in problem.message


def test_body_length_limit(tmp_path):
    at_limit = write_skill(tmp_path / "a", body="line\n" * 500)
    assert lint_skill(at_limit) == []
    no_final_newline = write_skill(tmp_path / "b", body="line\n" * 499 + "line")
    assert lint_skill(no_final_newline) == []
    over = write_skill(tmp_path / "c", body="line\n" * 501)
    problem = only(lint_skill(over))
    assert (problem.field, problem.severity) == ("body", "warning")
    assert problem.message.startswith("501 lines;")


def test_broken_relative_link_is_a_warning_with_line(tmp_path):
    body = "# Demo\n\nSee [ref](references/missing.md) and [run](scripts/run.sh#top).\n"
    skill_dir = write_skill(tmp_path, body=body)
    (skill_dir / "scripts").mkdir()
    (skill_dir / "scripts" / "run.sh").write_text("echo")
    problem = only(lint_skill(skill_dir))
    assert (problem.field, problem.severity) == ("body", "warning")
    assert "'references/missing.md'" in problem.message
    text = (skill_dir / "SKILL.md").read_text()
    assert problem.line == text[: text.index("[ref]")].count("\n") + 1 == 7


def test_external_and_anchor_links_are_not_checked(tmp_path):
    body = (
        "# Demo\n[a](https://example.com/x) [b](mailto:me@example.com) [c](#demo) [d](/abs/path)\n"
    )
    assert lint_skill(write_skill(tmp_path, body=body)) == []


# -- Problem ----------------------------------------------------------------------------


def test_problem_str_names_file_line_severity_field():
    p = Problem(Path("skills/demo/SKILL.md"), "name", "bad", "error", 2)
    assert str(p) == "skills/demo/SKILL.md:2: error: name: bad"
    q = Problem(Path("skills/demo/SKILL.md"), "file", "gone", "warning")
    assert str(q) == "skills/demo/SKILL.md: warning: file: gone"


# -- lint_paths -------------------------------------------------------------------------


def test_lint_paths_searches_directories_for_skills(tmp_path):
    root = tmp_path / "skills"
    write_skill(root, name="good")
    write_raw(root, fm(name="wrong", description="ok"), name="bad")
    write_raw(root / "nested", fm(name="deep", description="ok", model="x"), name="deep")
    probs = lint_paths([root])
    by_dir = {p.path.parent.name: p for p in probs}
    assert set(by_dir) == {"bad", "deep"}
    assert by_dir["bad"].field == "name" and by_dir["bad"].severity == "error"
    assert by_dir["deep"].field == "model" and by_dir["deep"].severity == "warning"
    assert [p.severity for p in lint_paths([root], strict=True)] == ["error", "error"]
    assert sorted(d.name for d in probs.checked) == ["bad", "deep", "good"]
    assert (probs.errors, probs.warnings) == (1, 1)


def test_lint_paths_counts_the_skills_it_checked(tmp_path):
    a = write_raw(tmp_path, fm(name="a", description="ok"), name="a")
    found = lint_paths([a, a / "SKILL.md"])
    assert found == [] and found.checked == [a, a / "SKILL.md"]
    assert lint_paths([tmp_path / "a" / "SKILL.md"]).checked == [a / "SKILL.md"]
    empty = tmp_path / "nothing"
    empty.mkdir()
    assert lint_paths([empty]).checked == []


def test_no_problem_message_suggests_strict(tmp_path):
    """--strict belongs to `lint` alone: a message also read by `train`, `eval` and
    `export` (where a Claude-only key may already be an error) never suggests it."""
    skill_dir = write_raw(tmp_path, fm(name="x", description="ok", model="m"), name="x")
    for strict in (False, True):
        assert all("--strict" not in p.message for p in lint_paths([skill_dir], strict=strict))


def test_lint_paths_several_paths_in_order(tmp_path):
    a = write_raw(tmp_path, fm(name="a", description="ok", foo="1"), name="a")
    b = write_raw(tmp_path, fm(name="b", description="ok", bar="1"), name="b")
    probs = lint_paths([b, a / "SKILL.md"])
    assert fields(probs) == ["bar", "foo"]


def test_lint_paths_directory_without_any_skill(tmp_path):
    empty = tmp_path / "nothing"
    (empty / "sub").mkdir(parents=True)
    problem = only(lint_paths([empty]))
    assert problem.path == empty and problem.field == "file" and problem.severity == "error"


def test_lint_paths_missing_path_raises_input_error(tmp_path):
    missing = tmp_path / "missing"
    with pytest.raises(InputError) as exc:
        lint_paths([missing])
    assert str(missing) in str(exc.value)
    assert exc.value.exit_code == 2
