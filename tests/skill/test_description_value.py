"""Replacing a skill's description: only the `description:` value changes, whatever
form it had (one line, folded, quoted, continued), and YAML reads back exactly the
text given; the description's lint rules are what a candidate must pass."""

from __future__ import annotations

import pytest

from skillopt.errors import InputError
from skillopt.skill.description import description_problems, with_description
from skillopt.skill.document import Skill

BODY = "# Body\n\nKeep  this\r\nexactly.\n"


@pytest.mark.parametrize(
    "value",
    [
        "description: Old one.\n",
        "description: >\n  Folded over\n  two lines.\n",
        "description: |\n  Literal\n\n  with a blank line.\n",
        "description: 'Quoted: over\n  a continued line'\n",
        'description: "Double"\n',
    ],
)
@pytest.mark.parametrize(
    "text",
    [
        "Checks invoice totals. Use when a total must be checked.",
        "Has: a colon, a # hash and 'quotes' and \"double\" ones",
        "yes",
        "- starts like a list",
        "ends with a space ",
        "über — ünïcode",
    ],
)
def test_only_the_description_value_changes_and_reads_back_exactly(value, text):
    head = "---\nname: inv\n"
    tail = "license: MIT\nmetadata:\n  k: v\n---\n"
    skill = Skill.parse(head + value + tail + BODY)
    new = with_description(skill, text)
    assert new.description == text
    assert new.body == BODY
    assert new.frontmatter_text.startswith(head) and new.frontmatter_text.endswith(tail)
    assert new.frontmatter == {**skill.frontmatter, "description": text}


def test_a_frontmatter_without_a_description_gets_one_and_none_is_refused():
    skill = Skill.parse("---\nname: inv\n---\nbody\n")
    assert with_description(skill, "New.").text == "---\nname: inv\ndescription: New.\n---\nbody\n"
    with pytest.raises(InputError, match="no frontmatter"):
        with_description(Skill.parse("just a body\n"), "New.")


def test_crlf_frontmatter_keeps_its_line_ends():
    skill = Skill.parse("---\r\nname: inv\r\ndescription: Old.\r\n---\r\nbody\r\n")
    assert with_description(skill, "New.").text == (
        "---\r\nname: inv\r\ndescription: New.\r\n---\r\nbody\r\n"
    )


def test_the_lint_rules_of_a_description_are_what_refuses_a_candidate(tmp_path):
    skill = Skill.parse("---\nname: inv\ndescription: Fine.\n---\nbody\n")
    assert description_problems(with_description(skill, "Fine and short.")) == []
    bad = description_problems(with_description(skill, "a <b> " + "x" * 2000))
    assert bad == ["must be at most 1024 characters, got 2006", "must not contain '<' or '>'"]
    assert description_problems(with_description(skill, "   ")) == ["must not be empty"]
