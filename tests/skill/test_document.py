"""Tests for `skillopt.skill.document`: parsing and rendering SKILL.md byte for byte,
body sections, the content hash, loading errors and writing a skill out."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from helpers import write_skill

from skillopt.errors import InputError
from skillopt.skill.document import SKILL_FILE, Section, Skill, resolve_skill_file

# -- round trip -----------------------------------------------------------------------

ROUND_TRIP = {
    "plain": "---\nname: demo\ndescription: A demo.\n---\n# Demo\n\nDo it.\n",
    "crlf": "---\r\nname: demo\r\ndescription: A demo.\r\n---\r\n# Demo\r\n\r\nDo it.\r\n",
    "bom": "\ufeff---\nname: demo\ndescription: A demo.\n---\n# Demo\n",
    "bom_crlf": "\ufeff---\r\nname: demo\r\ndescription: x\r\n---\r\nBody\r\n",
    "no_frontmatter": "# Just a body\n\nNo frontmatter here.\n",
    "no_frontmatter_bom": "\ufeff# Title\n\ntext\n",
    "dots_close": "---\nname: demo\ndescription: A demo.\n...\n# Demo\n",
    "trailing_ws": "---   \nname: demo   \ndescription: A demo.  \n---  \n# Demo   \n\n  \n",
    "unicode": "---\nname: demo\ndescription: Résumé — naïve 日本語 ✓ emoji 🚀\n---\n"
    "# Überschrift\n\nΑλφα βήτα 🚀\n",
    "comments_quoting": "---\n# leading comment\nname: 'demo'   # trailing comment\n"
    'description: "A \\"quoted\\" demo: with colon"\n'
    "metadata:\n  author:   \"someone\"\n  version: '1.0'\n"
    "allowed-tools: >-\n  Bash Read\n---\n# Body\n",
    "no_trailing_newline": "---\nname: demo\ndescription: A demo.\n---\n# Demo\n\nlast line",
    "fence_at_eof": "---\nname: demo\ndescription: A demo.\n---",
    "empty_frontmatter": "---\n---\nbody\n",
    "unclosed_frontmatter": "---\nname: demo\ndescription: never closed\n# Body\n",
    "empty": "",
    "only_newlines": "\n\n\n",
    "bad_yaml": "---\nname: [unclosed\n---\nbody\n",
    "mixed_endings": "---\nname: demo\r\ndescription: x\n---\r\n# A\r\ntext\n# B\r",
    "lone_cr_in_body": "---\nname: demo\ndescription: x\n---\nline one\rline two\n",
    "dashes_in_body": "---\nname: demo\ndescription: x\n---\n# A\n---\nrule above\n---\n",
}


@pytest.mark.parametrize("text", ROUND_TRIP.values(), ids=ROUND_TRIP.keys())
def test_parse_then_text_is_byte_identical(text):
    skill = Skill.parse(text)
    assert skill.text == text
    assert skill.frontmatter_text + skill.body == text


@pytest.mark.parametrize("text", ROUND_TRIP.values(), ids=ROUND_TRIP.keys())
def test_load_then_write_is_byte_identical(tmp_path, text):
    src = tmp_path / "src" / "demo"
    src.mkdir(parents=True)
    raw = text.encode("utf-8")
    (src / SKILL_FILE).write_bytes(raw)
    try:
        skill = Skill.load(src)
    except InputError as exc:
        # only the invalid-YAML and unclosed shapes may refuse to load
        assert text in (ROUND_TRIP["bad_yaml"], ROUND_TRIP["unclosed_frontmatter"])
        assert "SKILL.md" in str(exc)
        return
    out = skill.write(tmp_path / "out")
    assert out == tmp_path / "out" / SKILL_FILE
    assert out.read_bytes() == raw


def test_load_refuses_unclosed_frontmatter(tmp_path):
    src = tmp_path / "demo"
    src.mkdir()
    (src / SKILL_FILE).write_text(ROUND_TRIP["unclosed_frontmatter"])
    with pytest.raises(InputError, match="not closed with a '---' line"):
        Skill.load(src)


def test_frontmatter_split_plain():
    skill = Skill.parse(ROUND_TRIP["plain"])
    assert skill.frontmatter_text == "---\nname: demo\ndescription: A demo.\n---\n"
    assert skill.body == "# Demo\n\nDo it.\n"
    assert skill.frontmatter == {"name": "demo", "description": "A demo."}
    assert skill.frontmatter_error is None


def test_frontmatter_split_crlf_keeps_crlf_in_both_parts():
    skill = Skill.parse(ROUND_TRIP["crlf"])
    assert skill.frontmatter_text == "---\r\nname: demo\r\ndescription: A demo.\r\n---\r\n"
    assert skill.body == "# Demo\r\n\r\nDo it.\r\n"
    assert skill.frontmatter == {"name": "demo", "description": "A demo."}


def test_frontmatter_split_bom_keeps_bom_in_frontmatter_block():
    skill = Skill.parse(ROUND_TRIP["bom"])
    assert skill.frontmatter_text.startswith("\ufeff---\n")
    assert skill.body == "# Demo\n"
    assert skill.frontmatter["name"] == "demo"


def test_dots_close_fence_ends_frontmatter():
    skill = Skill.parse(ROUND_TRIP["dots_close"])
    assert skill.frontmatter_text.endswith("...\n")
    assert skill.body == "# Demo\n"
    assert skill.frontmatter == {"name": "demo", "description": "A demo."}


def test_fences_with_trailing_whitespace_are_fences():
    skill = Skill.parse(ROUND_TRIP["trailing_ws"])
    assert skill.frontmatter_text == "---   \nname: demo   \ndescription: A demo.  \n---  \n"
    assert skill.frontmatter == {"name": "demo", "description": "A demo."}
    assert skill.body == "# Demo   \n\n  \n"


def test_comments_and_quoting_are_parsed_but_kept_verbatim():
    text = ROUND_TRIP["comments_quoting"]
    skill = Skill.parse(text)
    assert skill.frontmatter == {
        "name": "demo",
        "description": 'A "quoted" demo: with colon',
        "metadata": {"author": "someone", "version": "1.0"},
        "allowed-tools": "Bash Read",
    }
    assert "# leading comment" in skill.frontmatter_text
    assert "'demo'   # trailing comment" in skill.frontmatter_text
    assert skill.body == "# Body\n"


def test_unicode_values():
    skill = Skill.parse(ROUND_TRIP["unicode"])
    assert skill.description == "Résumé — naïve 日本語 ✓ emoji 🚀"
    assert skill.body.startswith("# Überschrift")


def test_no_trailing_newline_body():
    skill = Skill.parse(ROUND_TRIP["no_trailing_newline"])
    assert skill.body.endswith("last line")
    assert skill.frontmatter["name"] == "demo"


def test_closing_fence_at_end_of_file_without_newline():
    skill = Skill.parse(ROUND_TRIP["fence_at_eof"])
    assert skill.frontmatter_text == ROUND_TRIP["fence_at_eof"]
    assert skill.body == ""
    assert skill.frontmatter == {"name": "demo", "description": "A demo."}


@pytest.mark.parametrize(
    "key",
    ["no_frontmatter", "no_frontmatter_bom", "unclosed_frontmatter", "empty", "only_newlines"],
)
def test_no_frontmatter_means_whole_text_is_body(key):
    text = ROUND_TRIP[key]
    skill = Skill.parse(text)
    assert skill.frontmatter_text == ""
    assert skill.body == text
    assert skill.frontmatter == {}
    assert skill.frontmatter_error is None


@pytest.mark.parametrize(
    "text",
    [
        "----\nname: x\n---\n",
        " ---\nname: x\n---\n",
        "\n---\nname: x\n---\n",
        "---",
        "--- x\nname: y\n---\n",
    ],
)
def test_first_line_must_be_exactly_a_fence(text):
    skill = Skill.parse(text)
    assert skill.frontmatter_text == ""
    assert skill.body == text


def test_empty_and_null_frontmatter_is_empty_mapping():
    assert Skill.parse("---\n---\nbody\n").frontmatter == {}
    null = Skill.parse("---\n~\n---\nbody\n")
    assert null.frontmatter == {} and null.frontmatter_error is None
    blank = Skill.parse("---\n\n   \n---\nbody\n")
    assert blank.frontmatter == {} and blank.frontmatter_error is None


def test_body_dashes_after_frontmatter_stay_in_body():
    skill = Skill.parse(ROUND_TRIP["dashes_in_body"])
    assert skill.frontmatter_text == "---\nname: demo\ndescription: x\n---\n"
    assert skill.body == "# A\n---\nrule above\n---\n"


# -- parse errors -----------------------------------------------------------------------


def test_parse_never_raises_on_bad_yaml():
    skill = Skill.parse("---\nname: [unclosed\n---\nbody\n")
    assert skill.frontmatter_error is not None
    assert skill.frontmatter_error.startswith("invalid YAML")
    assert skill.frontmatter == {}
    assert skill.body == "body\n"


@pytest.mark.parametrize(
    "inner, kind", [("- a\n- b\n", "list"), ("just a string\n", "str"), ("42\n", "int")]
)
def test_non_mapping_frontmatter_is_an_error(inner, kind):
    skill = Skill.parse(f"---\n{inner}---\nbody\n")
    assert skill.frontmatter == {}
    assert skill.frontmatter_error == f"frontmatter must be a mapping of keys, got {kind}"


def _bad_yaml_text(bad_line: int, *, newline: str = "\n", bom: bool = False) -> str:
    """A SKILL.md whose file line `bad_line` (1-based) holds a YAML error."""
    lines = ["---"] + [f"key{i}: value{i}" for i in range(2, bad_line)]
    lines += ["description: bad: colon", "other: fine", "---", "# Body"]
    return ("\ufeff" if bom else "") + newline.join(lines) + newline


@pytest.mark.parametrize("bad_line", [2, 3, 7])
@pytest.mark.parametrize(
    "newline, bom",
    [("\n", False), ("\r\n", False), ("\n", True), ("\r\n", True)],
    ids=["lf", "crlf", "bom", "bom-crlf"],
)
def test_yaml_error_line_is_the_line_of_the_file(bad_line, newline, bom):
    text = _bad_yaml_text(bad_line, newline=newline, bom=bom)
    assert text.split(newline)[bad_line - 1] == "description: bad: colon"
    skill = Skill.parse(text)
    assert skill.frontmatter_error == (
        f"invalid YAML at line {bad_line}: mapping values are not allowed here"
    )


def test_yaml_control_character_is_an_error_not_an_exception():
    skill = Skill.parse("---\nname: \x07\n---\nbody\n")
    assert skill.frontmatter_error is not None
    assert skill.frontmatter_error.startswith("invalid YAML")


def test_unsafe_yaml_tag_is_an_error_not_executed():
    skill = Skill.parse("---\nname: !!python/object/apply:os.getcwd []\n---\nbody\n")
    assert skill.frontmatter_error is not None
    assert "line 2" in skill.frontmatter_error


# -- properties -------------------------------------------------------------------------


def test_name_and_description_from_frontmatter():
    skill = Skill.parse("---\nname: fancy\ndescription: Does things.\n---\n")
    assert skill.name == "fancy"
    assert skill.description == "Does things."


def test_name_falls_back_to_root_then_no_skill(tmp_path):
    assert Skill.parse("# body\n", root=tmp_path / "my-dir").name == "my-dir"
    assert Skill.parse("# body\n").name == "no-skill"
    assert Skill.parse("---\nname: 12\n---\n").name == "no-skill"
    assert Skill.parse("---\nname: ''\n---\n", root=tmp_path / "d").name == "d"


def test_description_non_string_is_empty():
    assert Skill.parse("---\ndescription: [a, b]\n---\n").description == ""
    assert Skill.parse("no frontmatter").description == ""


def test_is_empty():
    assert Skill.empty().is_empty
    assert Skill.parse("").is_empty
    assert Skill.parse("  \n\n").is_empty
    assert not Skill.parse("x").is_empty
    assert not Skill.parse("---\n---\n").is_empty


# -- with_body ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", ["plain", "crlf", "bom", "comments_quoting", "trailing_ws", "dots_close", "fence_at_eof"]
)
def test_with_body_keeps_frontmatter_bytes(key):
    original = Skill.parse(ROUND_TRIP[key])
    edited = original.with_body("# New body\n\nNew instructions.\n")
    assert edited.frontmatter_text == original.frontmatter_text
    assert edited.text.encode("utf-8") == (
        original.frontmatter_text.encode("utf-8") + b"# New body\n\nNew instructions.\n"
    )
    assert edited.frontmatter == original.frontmatter
    assert edited.body == "# New body\n\nNew instructions.\n"
    # immutable: the original is untouched
    assert original.text == ROUND_TRIP[key]


def test_with_body_keeps_root_and_support(tmp_path):
    skill_dir = write_skill(tmp_path)
    (skill_dir / "scripts").mkdir()
    (skill_dir / "scripts" / "run.sh").write_text("echo hi\n")
    skill = Skill.load(skill_dir)
    edited = skill.with_body("other\n")
    assert edited.root == skill.root == skill_dir
    assert edited.support == skill.support
    assert [rel for rel, _ in edited.support] == ["scripts/run.sh"]
    assert edited.name == "demo"


def test_with_body_then_parse_round_trips():
    original = Skill.parse(ROUND_TRIP["comments_quoting"])
    edited = original.with_body("## Changed\n")
    reparsed = Skill.parse(edited.text)
    assert reparsed == edited
    assert reparsed.frontmatter == original.frontmatter


# -- sections ---------------------------------------------------------------------------


def _titles(body: str) -> list[tuple[str, int]]:
    return [(s.title, s.level) for s in Skill.parse(body).sections()]


def test_sections_titles_levels_and_offsets():
    body = "intro line\n# One\ntext 1\n## Two\n### Three ###\ntext 3\n\n#### Four\n"
    skill = Skill.parse(body)
    secs = skill.sections()
    assert [(s.title, s.level) for s in secs] == [("One", 1), ("Two", 2), ("Three", 3), ("Four", 4)]
    assert secs[0] == Section(
        "One", 1, body.index("# One"), body.index("text 1"), body.index("## Two")
    )
    for sec, nxt in zip(secs, [*secs[1:], None]):
        line = body[sec.start : sec.body_start]
        assert line.endswith("\n") and line.lstrip().startswith("#" * sec.level + " ")
        assert sec.end == (nxt.start if nxt else len(body))
    assert body[secs[2].body_start : secs[2].end] == "text 3\n\n"
    assert secs[-1].body_start == secs[-1].end == len(body)


def test_sections_use_body_offsets_not_file_offsets():
    text = "---\nname: demo\ndescription: x\n---\n# Head\nbody\n"
    skill = Skill.parse(text)
    (sec,) = skill.sections()
    assert sec.start == 0
    assert skill.body[sec.start : sec.body_start] == "# Head\n"
    assert sec.end == len(skill.body)


def test_sections_with_crlf_offsets():
    body = "# A\r\nx\r\n## B\r\ny\r\n"
    secs = Skill.parse(body).sections()
    assert [(s.title, s.level) for s in secs] == [("A", 1), ("B", 2)]
    assert body[secs[0].start : secs[0].body_start] == "# A\r\n"
    assert body[secs[1].start : secs[1].body_start] == "## B\r\n"
    assert secs[0].end == secs[1].start == body.index("## B")


def test_sections_last_heading_without_newline():
    body = "text\n## End"
    (sec,) = Skill.parse(body).sections()
    assert (sec.title, sec.level) == ("End", 2)
    assert sec.start == 5 and sec.body_start == sec.end == len(body)


@pytest.mark.parametrize(
    "fence, close",
    [
        ("```", "```"),
        ("~~~", "~~~"),
        ("````", "`````"),
        ("~~~~~", "~~~~~"),
        ("```python", "```"),
        ("~~~ yaml", "~~~  "),
        ("  ```", "```"),
    ],
)
def test_sections_ignore_headings_inside_fenced_code(fence, close):
    body = f"# Real\n{fence}\n# not a heading\n## nor this\n{close}\n## After\n"
    assert _titles(body) == [("Real", 1), ("After", 2)]


def test_sections_tilde_fence_not_closed_by_backticks_and_vice_versa():
    body = "~~~\n# a\n```\n# b\n~~~\n# c\n```\n# d\n```\n# e\n"
    # ~~~ block holds a, ```, b; then c is real; ``` block holds d; e is real
    assert _titles(body) == [("c", 1), ("e", 1)]


def test_sections_shorter_fence_does_not_close_longer_one():
    body = "````markdown\n```\n# inner\n```\n````\n# outer\n"
    assert _titles(body) == [("outer", 1)]


def test_sections_fence_with_info_string_does_not_close():
    body = "```\n# a\n```python\n# b\n```\n# c\n"
    assert _titles(body) == [("c", 1)]


def test_sections_inline_triple_backticks_are_not_a_fence():
    body = "```code``` is inline\n# Heading\n"
    assert _titles(body) == [("Heading", 1)]


def test_sections_unclosed_fence_hides_rest():
    body = "# Top\n```\n# hidden\n## hidden too\n"
    assert _titles(body) == [("Top", 1)]


def test_sections_indented_fence_up_to_three_spaces():
    body = "   ```\n# hidden\n   ```\n# shown\n"
    assert _titles(body) == [("shown", 1)]


def test_sections_what_is_not_a_heading():
    body = (
        "#hashtag\n    # indented code\n####### seven\n\\# escaped\ntext # mid\n"
        "   ### three-space indent ok\n"
    )
    assert _titles(body) == [("three-space indent ok", 3)]


def test_sections_closing_hashes_stripped_but_not_part_of_word():
    body = "## Using C#\n# Title ##\n### F# and C# ###   \n# Tabs\t#\t\n"
    assert _titles(body) == [("Using C#", 2), ("Title", 1), ("F# and C#", 3), ("Tabs", 1)]


def test_sections_only_real_line_breaks_split_lines():
    # form feed and unicode line separators are not Markdown line endings
    body = "text\x0c# not\ntext\u2028# nor\n# yes\n"
    secs = Skill.parse(body).sections()
    assert [s.title for s in secs] == ["yes"]
    assert secs[0].start == body.index("# yes")


def test_sections_bom_before_first_heading():
    body = "\ufeff# Title\ntext\n"
    secs = Skill.parse(body).sections()
    assert [(s.title, s.level) for s in secs] == [("Title", 1)]
    assert secs[0].start == 0 and secs[0].body_start == body.index("text")


def test_sections_empty_body():
    assert Skill.empty().sections() == []
    assert Skill.parse("---\nname: x\n---\n").sections() == []


def test_section_lookup_ignores_case_hashes_and_spacing():
    skill = Skill.parse("# Intro\n## Step Two\nx\n## Ünïcode Straße\n")
    sec = skill.section("step two")
    assert sec is not None and sec.title == "Step Two" and sec.level == 2
    assert skill.section("STEP TWO") == sec
    assert skill.section("## Step Two") == sec
    assert skill.section("  step   two ") == sec
    assert skill.section("ünïcode STRASSE").title == "Ünïcode Straße"
    assert skill.section("intro").level == 1
    assert skill.section("step") is None
    assert skill.section("missing") is None


def test_section_returns_first_match():
    skill = Skill.parse("# Notes\nfirst\n# notes\nsecond\n")
    sec = skill.section("NOTES")
    assert sec.title == "Notes" and sec.start == 0


def test_section_ignores_heading_inside_code():
    skill = Skill.parse("```\n# Secret\n```\n# Public\n")
    assert skill.section("secret") is None
    assert skill.section("public") is not None


# -- hash -------------------------------------------------------------------------------


def test_empty_skill_hash_is_none():
    assert Skill.empty().hash == "none"
    assert Skill.parse("").hash == "none"
    assert Skill.empty().short_hash == "none"


def test_hash_is_sha256_hex_and_short_hash_prefix():
    skill = Skill.parse(ROUND_TRIP["plain"])
    assert len(skill.hash) == 64 and int(skill.hash, 16) >= 0
    assert skill.short_hash == skill.hash[:12]


def test_hash_stable_for_same_text():
    a = Skill.parse(ROUND_TRIP["plain"])
    b = Skill.parse(ROUND_TRIP["plain"])
    assert a.hash == b.hash
    assert a.with_body(a.body).hash == a.hash


def test_hash_ignores_root(tmp_path):
    text = ROUND_TRIP["plain"]
    assert Skill.parse(text, root=tmp_path / "a").hash == Skill.parse(text).hash


def test_hash_changes_with_body():
    skill = Skill.parse(ROUND_TRIP["plain"])
    assert skill.with_body(skill.body + " ").hash != skill.hash
    assert skill.with_body("").hash != skill.hash


def test_hash_changes_with_frontmatter_even_if_data_is_equal():
    a = Skill.parse("---\nname: demo\n---\nbody\n")
    b = Skill.parse("---\nname: 'demo'\n---\nbody\n")
    c = Skill.parse("---\nname: other\n---\nbody\n")
    assert a.frontmatter == b.frontmatter
    assert len({a.hash, b.hash, c.hash}) == 3


def test_hash_changes_with_line_endings():
    assert Skill.parse("# A\n").hash != Skill.parse("# A\r\n").hash


def test_hash_of_non_empty_differs_from_none():
    assert Skill.parse("x").hash != "none"
    assert Skill.parse("---\n---\n").hash != "none"


def _skill_with_support(root: Path) -> Path:
    skill_dir = write_skill(root, body="# Demo\n\nRun [the script](scripts/run.sh).\n")
    (skill_dir / "scripts").mkdir()
    (skill_dir / "scripts" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (skill_dir / "references").mkdir()
    (skill_dir / "references" / "x.md").write_text("# Reference\n")
    return skill_dir


def test_load_records_supporting_files(tmp_path):
    skill_dir = _skill_with_support(tmp_path)
    skill = Skill.load(skill_dir)
    assert [rel for rel, _ in skill.support] == ["references/x.md", "scripts/run.sh"]
    expected = hashlib.sha256(b"#!/bin/sh\necho hi\n").hexdigest()
    assert dict(skill.support)["scripts/run.sh"] == expected


def test_hash_of_loaded_skill_is_stable(tmp_path):
    skill_dir = _skill_with_support(tmp_path)
    assert Skill.load(skill_dir).hash == Skill.load(skill_dir).hash
    assert Skill.load(skill_dir).hash == Skill.load(skill_dir / SKILL_FILE).hash


def test_supporting_files_are_part_of_the_hash(tmp_path):
    skill_dir = _skill_with_support(tmp_path)
    loaded = Skill.load(skill_dir)
    bare = Skill.parse(loaded.text)
    assert loaded.text == bare.text
    assert loaded.hash != bare.hash


@pytest.mark.parametrize("rel", ["scripts/run.sh", "references/x.md"])
def test_hash_changes_when_a_supporting_file_changes(tmp_path, rel):
    skill_dir = _skill_with_support(tmp_path)
    before = Skill.load(skill_dir).hash
    with (skill_dir / rel).open("a") as f:
        f.write("# changed\n")
    after = Skill.load(skill_dir).hash
    assert after != before
    assert Skill.load(skill_dir).hash == after


def test_hash_changes_when_a_supporting_file_is_added_removed_or_renamed(tmp_path):
    skill_dir = _skill_with_support(tmp_path)
    h0 = Skill.load(skill_dir).hash
    (skill_dir / "assets").mkdir()
    (skill_dir / "assets" / "logo.txt").write_text("logo")
    h1 = Skill.load(skill_dir).hash
    (skill_dir / "references" / "x.md").rename(skill_dir / "references" / "y.md")
    h2 = Skill.load(skill_dir).hash
    (skill_dir / "assets" / "logo.txt").unlink()
    h3 = Skill.load(skill_dir).hash
    assert len({h0, h1, h2, h3}) == 4


def test_hash_changes_when_skill_md_changes_on_disk(tmp_path):
    skill_dir = _skill_with_support(tmp_path)
    before = Skill.load(skill_dir).hash
    path = skill_dir / SKILL_FILE
    path.write_text(path.read_text() + "more\n")
    assert Skill.load(skill_dir).hash != before


def test_hash_ignores_vcs_and_cache_files(tmp_path):
    skill_dir = _skill_with_support(tmp_path)
    before = Skill.load(skill_dir)
    for rel in [".git/HEAD", "__pycache__/x.pyc", "scripts/__pycache__/y.pyc", ".DS_Store"]:
        (skill_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (skill_dir / rel).write_text("noise")
    after = Skill.load(skill_dir)
    assert after.support == before.support
    assert after.hash == before.hash


def test_hash_same_for_same_content_in_different_directories(tmp_path):
    a = Skill.load(_skill_with_support(tmp_path / "a"))
    b = Skill.load(_skill_with_support(tmp_path / "b"))
    assert a.root != b.root
    assert a.hash == b.hash


def test_skill_md_itself_is_not_a_supporting_file(tmp_path):
    skill_dir = write_skill(tmp_path)
    skill = Skill.load(skill_dir)
    assert skill.support == ()
    assert skill.hash == Skill.parse(skill.text).hash


# -- load -----------------------------------------------------------------------------


def test_load_directory_and_file(tmp_path):
    skill_dir = write_skill(tmp_path, name="my-skill")
    by_dir = Skill.load(skill_dir)
    by_file = Skill.load(skill_dir / SKILL_FILE)
    by_str = Skill.load(str(skill_dir))
    assert by_dir == by_file == by_str
    assert by_dir.root == skill_dir
    assert by_dir.name == "my-skill"
    assert by_dir.description == "Demo skill. Use it for tests."
    assert by_dir.body == "# Demo\n\nDo the task well.\n"


def test_load_lowercase_skill_md(tmp_path):
    skill_dir = tmp_path / "low"
    skill_dir.mkdir()
    (skill_dir / "skill.md").write_text("---\nname: low\ndescription: x\n---\nbody\n")
    assert resolve_skill_file(skill_dir) == skill_dir / "skill.md"
    skill = Skill.load(skill_dir)
    assert skill.name == "low" and skill.support == ()


def test_load_keeps_crlf_bytes(tmp_path):
    skill_dir = tmp_path / "demo"
    skill_dir.mkdir()
    raw = ROUND_TRIP["bom_crlf"].encode("utf-8")
    (skill_dir / SKILL_FILE).write_bytes(raw)
    skill = Skill.load(skill_dir)
    assert skill.text.encode("utf-8") == raw
    assert skill.frontmatter == {"name": "demo", "description": "x"}


def _assert_input_error(exc: pytest.ExceptionInfo, path: Path, *words: str) -> None:
    message = str(exc.value)
    assert str(path) in message
    assert "\n" not in message
    for word in words:
        assert word in message


def test_load_missing_path(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(InputError) as exc:
        Skill.load(missing)
    _assert_input_error(exc, missing, "no such")
    assert exc.value.exit_code == 2


def test_load_directory_without_skill_md(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "README.md").write_text("hi")
    with pytest.raises(InputError) as exc:
        Skill.load(empty)
    _assert_input_error(exc, empty, SKILL_FILE)


def test_load_bad_utf8(tmp_path):
    skill_dir = tmp_path / "demo"
    skill_dir.mkdir()
    (skill_dir / SKILL_FILE).write_bytes(b"---\nname: demo\n---\ncaf\xe9\n")
    with pytest.raises(InputError) as exc:
        Skill.load(skill_dir)
    _assert_input_error(exc, skill_dir / SKILL_FILE, "UTF-8", "byte 22")


def test_load_utf16_file_is_bad_utf8(tmp_path):
    skill_dir = tmp_path / "demo"
    skill_dir.mkdir()
    (skill_dir / SKILL_FILE).write_bytes("---\nname: demo\n---\n".encode("utf-16"))
    with pytest.raises(InputError) as exc:
        Skill.load(skill_dir)
    _assert_input_error(exc, skill_dir / SKILL_FILE, "UTF-8")


def test_load_bad_yaml(tmp_path):
    skill_dir = tmp_path / "demo"
    skill_dir.mkdir()
    (skill_dir / SKILL_FILE).write_text(_bad_yaml_text(4))
    with pytest.raises(InputError) as exc:
        Skill.load(skill_dir)
    _assert_input_error(exc, skill_dir / SKILL_FILE, "frontmatter", "invalid YAML at line 4")
    assert exc.value.field == "frontmatter"
    assert exc.value.path == skill_dir / SKILL_FILE


def test_load_non_mapping_frontmatter(tmp_path):
    skill_dir = tmp_path / "demo"
    skill_dir.mkdir()
    (skill_dir / SKILL_FILE).write_text("---\n- a\n- b\n---\nbody\n")
    with pytest.raises(InputError) as exc:
        Skill.load(skill_dir)
    _assert_input_error(exc, skill_dir / SKILL_FILE, "mapping")


def test_load_without_frontmatter_is_allowed(tmp_path):
    skill_dir = tmp_path / "bare"
    skill_dir.mkdir()
    (skill_dir / SKILL_FILE).write_text("# Just body\n")
    skill = Skill.load(skill_dir)
    assert skill.frontmatter_text == "" and skill.body == "# Just body\n"
    assert skill.name == "bare"


# -- write ------------------------------------------------------------------------------


def test_write_copies_supporting_files(tmp_path):
    skill_dir = _skill_with_support(tmp_path / "src")
    skill = Skill.load(skill_dir)
    dest = tmp_path / "dest" / "nested" / "demo"
    target = skill.write(dest)
    assert target == dest / SKILL_FILE
    assert target.read_bytes() == (skill_dir / SKILL_FILE).read_bytes()
    for rel in ["scripts/run.sh", "references/x.md"]:
        assert (dest / rel).read_bytes() == (skill_dir / rel).read_bytes()
    copy = Skill.load(dest)
    assert copy.support == skill.support
    assert copy.hash == skill.hash


def test_write_edited_body_keeps_supporting_files(tmp_path):
    skill_dir = _skill_with_support(tmp_path / "src")
    skill = Skill.load(skill_dir).with_body("# Better\n")
    dest = tmp_path / "cand"
    skill.write(dest)
    assert (dest / "scripts" / "run.sh").read_text() == "#!/bin/sh\necho hi\n"
    copy = Skill.load(dest)
    assert copy.body == "# Better\n"
    assert copy.frontmatter_text == Skill.load(skill_dir).frontmatter_text
    assert copy.hash == skill.hash
    # the source is untouched
    assert Skill.load(skill_dir).body.startswith("# Demo")


def test_write_only_copies_recorded_supporting_files(tmp_path):
    skill_dir = _skill_with_support(tmp_path / "src")
    skill = Skill.load(skill_dir)
    (skill_dir / ".git").mkdir()
    (skill_dir / ".git" / "HEAD").write_text("ref")
    (skill_dir / "later.txt").write_text("added after load")
    dest = tmp_path / "dest"
    skill.write(dest)
    assert not (dest / ".git").exists()
    assert not (dest / "later.txt").exists()


def test_write_in_place(tmp_path):
    skill_dir = _skill_with_support(tmp_path)
    skill = Skill.load(skill_dir).with_body("# Rewritten\n")
    skill.write(skill_dir)
    assert Skill.load(skill_dir).body == "# Rewritten\n"
    assert (skill_dir / "scripts" / "run.sh").read_text() == "#!/bin/sh\necho hi\n"


def test_write_in_memory_skill(tmp_path):
    skill = Skill.parse(ROUND_TRIP["unicode"])
    target = skill.write(tmp_path / "mem")
    assert target.read_bytes() == ROUND_TRIP["unicode"].encode("utf-8")
    assert sorted(p.name for p in (tmp_path / "mem").iterdir()) == [SKILL_FILE]


def test_write_empty_skill(tmp_path):
    target = Skill.empty().write(tmp_path / "none")
    assert target.read_bytes() == b""


# -- the skill as the target sees it ----------------------------------------------------
GUIDED = (
    "---\nname: demo\ndescription: A demo.\n---\n# Demo\n\nRules.\n\n"
    "<!-- skillopt:protected guidance -->\n## Lessons from training\n\n- a lesson\n"
    "<!-- /skillopt:protected -->\n\n## Examples\n\nInput: a\nOutput: A\n"
)


@pytest.mark.parametrize("name", sorted(ROUND_TRIP))
def test_a_skill_without_markers_reaches_the_target_as_it_is(name):
    skill = Skill.parse(ROUND_TRIP[name])
    assert skill.for_target() is skill


def test_the_target_never_sees_a_protection_marker():
    skill = Skill.parse(GUIDED, root=Path("/somewhere"), support=(("a.txt", "0" * 64),))
    shown = skill.for_target()
    assert shown.body == (
        "# Demo\n\nRules.\n\n## Lessons from training\n\n- a lesson\n\n"
        "## Examples\n\nInput: a\nOutput: A\n"
    )
    assert shown.frontmatter_text == skill.frontmatter_text
    assert (shown.root, shown.support) == (skill.root, skill.support)
    assert "skillopt:protected" in skill.body  # the stored skill keeps its markers


@pytest.mark.parametrize(
    "body, shown",
    [
        ("a <!-- skillopt:protected note --> b\n", "a  b\n"),  # inside a line: the marker only
        ("  <!--skillopt:protected-->  \r\nkept\r\n<!-- /skillopt:protected -->", "kept\r\n"),
        ("x\n<!-- skillopt:protected --><!-- /skillopt:protected -->\ny\n", "x\ny\n"),
    ],
)
def test_marker_lines_go_whole_and_inline_markers_alone(body, shown):
    assert Skill.parse(body).for_target().body == shown
