"""Applying optimizer edits to a skill body: placement, anchor matching, the
frontmatter and protected blocks left alone, one status per edit, no mutation."""

from __future__ import annotations

import json

import pytest

from skillopt.skill.anchors import find_anchor, nearest_line, protected_spans
from skillopt.skill.document import Skill
from skillopt.skill.edits import (
    GUIDANCE_CLOSE,
    GUIDANCE_OPEN,
    Edit,
    apply_edits,
    guidance_of,
    set_guidance,
)

FM = "---\nname: demo\ndescription: Normalise product codes. Use for catalogue work.\n---\n"
BODY = "# Demo\n\nIntro paragraph.\n\n## Rules\n\n- one\n- two\n\n## Examples\n\nExample text.\n"
NO_EXAMPLES = "# Demo\n\nIntro paragraph.\n\n## Rules\n\n- one\n- two\n"
PROTECTED = (
    "<!-- skillopt:protected guidance -->\n"
    "## Lessons from training\n"
    "\n"
    "- keep the hyphen\n"
    "<!-- /skillopt:protected -->\n"
)


def skill(body: str = BODY, fm: str = FM) -> Skill:
    return Skill.parse(fm + body)


def apply(edits, body: str = BODY):
    new, report = apply_edits(skill(body), list(edits))
    return new, report


def apply_one(edit: Edit, body: str = BODY):
    new, report = apply([edit], body)
    assert len(report.results) == 1
    return new.body, report.results[0]


# ------------------------------------------------------------------------------- add
class TestAdd:
    def test_after_anchor_list_item_stays_in_tight_list(self):
        body, res = apply_one(Edit("add", anchor="- one", content="- one and a half"))
        assert res.status == "applied"
        assert "- one\n- one and a half\n- two\n" in body

    def test_after_last_list_item_keeps_blank_line_before_next_heading(self):
        body, res = apply_one(Edit("add", anchor="- two", content="- three"))
        assert res.applied
        assert "- one\n- two\n- three\n\n## Examples\n" in body

    def test_paragraph_after_anchor_gets_blank_lines(self):
        body, res = apply_one(Edit("add", anchor="Intro paragraph.", content="Second paragraph."))
        assert res.applied
        assert "Intro paragraph.\n\nSecond paragraph.\n\n## Rules\n" in body

    def test_paragraph_after_list_item_is_its_own_paragraph(self):
        body, res = apply_one(Edit("add", anchor="- two", content="A paragraph."))
        assert res.applied
        assert "- two\n\nA paragraph.\n\n## Examples" in body

    def test_list_item_after_paragraph_is_separated(self):
        body, res = apply_one(Edit("add", anchor="Intro paragraph.", content="- item"))
        assert res.applied
        assert "Intro paragraph.\n\n- item\n\n## Rules" in body

    def test_anchor_in_middle_of_line_inserts_after_the_whole_line(self):
        body, res = apply_one(Edit("add", anchor="Intro", content="Next."))
        assert res.applied
        assert "Intro paragraph.\n\nNext.\n" in body
        assert "IntroNext" not in body

    def test_after_last_line_of_body(self):
        body, res = apply_one(Edit("add", anchor="Example text.", content="Last."))
        assert res.applied
        assert body.endswith("Example text.\n\nLast.\n")

    def test_content_surrounding_newlines_are_trimmed(self):
        body, res = apply_one(Edit("add", anchor="- one", content="\n\n- extra\n\n"))
        assert res.applied
        assert "- one\n- extra\n- two\n" in body

    def test_under_existing_section_list_item(self):
        body, res = apply_one(Edit("add", section="Rules", content="- three"))
        assert res.applied
        assert "## Rules\n\n- one\n- two\n- three\n\n## Examples\n" in body

    def test_under_existing_section_paragraph(self):
        body, res = apply_one(Edit("add", section="Rules", content="A paragraph."))
        assert res.applied
        assert "- two\n\nA paragraph.\n\n## Examples\n" in body

    def test_section_title_matched_ignoring_case_and_hashes(self):
        body, res = apply_one(Edit("add", section="## rules", content="- three"))
        assert res.applied
        assert "- two\n- three\n" in body
        assert body.count("## Rules") == 1
        assert "## rules" not in body

    def test_under_last_section(self):
        body, res = apply_one(Edit("add", section="Examples", content="More."))
        assert res.applied
        assert body.endswith("## Examples\n\nExample text.\n\nMore.\n")

    def test_section_created_when_missing(self):
        body, res = apply_one(Edit("add", section="Pitfalls", content="Watch the hyphen."))
        assert res.applied
        assert "Pitfalls" in res.detail
        assert body == BODY + "\n## Pitfalls\n\nWatch the hyphen.\n"

    def test_created_section_strips_hashes_from_title(self):
        body, res = apply_one(Edit("add", section="### New One", content="Text."))
        assert res.applied
        assert body.endswith("\n\n## New One\n\nText.\n")
        assert "###" not in body

    def test_at_end_of_body(self):
        body, res = apply_one(Edit("add", content="End text."))
        assert res.applied
        assert body == BODY + "\nEnd text.\n"

    def test_at_end_of_empty_body(self):
        body, res = apply_one(Edit("add", content="Text."), body="")
        assert res.applied
        assert body == "Text.\n"

    def test_section_into_empty_body(self):
        body, res = apply_one(Edit("add", section="S", content="Text."), body="")
        assert res.applied
        assert body == "## S\n\nText.\n"

    def test_anchor_wins_over_section(self):
        body, res = apply_one(
            Edit("add", anchor="Intro paragraph.", section="Examples", content="Placed.")
        )
        assert res.applied
        assert "Intro paragraph.\n\nPlaced.\n\n## Rules" in body


# --------------------------------------------------------------------- replace/delete
class TestReplaceDelete:
    def test_replace_exact(self):
        body, res = apply_one(Edit("replace", anchor="Intro paragraph.", content="New intro."))
        assert res.applied
        assert body == BODY.replace("Intro paragraph.", "New intro.")

    def test_replace_multi_line(self):
        body, res = apply_one(Edit("replace", anchor="- one\n- two", content="- uno\n- dos\n"))
        assert res.applied
        assert "## Rules\n\n- uno\n- dos\n\n## Examples" in body
        assert "- one" not in body

    def test_replace_single_line_content_is_stripped(self):
        body, res = apply_one(Edit("replace", anchor="Example text.", content="  Better.  "))
        assert res.applied
        assert body.endswith("## Examples\n\nBetter.\n")

    def test_replace_with_identical_text_is_noop(self):
        body, res = apply_one(
            Edit("replace", anchor="Intro paragraph.", content="Intro paragraph.")
        )
        assert res.status == "noop"
        assert not res.applied
        assert body == BODY

    def test_replace_normalised_match_with_same_text_is_noop(self):
        body, res = apply_one(
            Edit("replace", anchor="intro   PARAGRAPH.", content="Intro paragraph.")
        )
        assert res.status == "noop"
        assert body == BODY

    def test_delete_list_item_leaves_no_empty_line(self):
        body, res = apply_one(Edit("delete", anchor="- one"))
        assert res.applied
        assert "## Rules\n\n- two\n\n## Examples" in body
        assert "- one" not in body

    def test_delete_last_list_item(self):
        body, res = apply_one(Edit("delete", anchor="- two"))
        assert res.applied
        assert "## Rules\n\n- one\n\n## Examples" in body

    def test_delete_paragraph_leaves_no_extra_blank_line(self):
        body, res = apply_one(Edit("delete", anchor="Intro paragraph."))
        assert res.applied
        assert body == "# Demo\n\n## Rules\n\n- one\n- two\n\n## Examples\n\nExample text.\n"
        assert "\n\n\n" not in body

    def test_delete_first_line_of_body(self):
        body, res = apply_one(Edit("delete", anchor="# Demo"))
        assert res.applied
        assert body.startswith("Intro paragraph.\n\n## Rules")

    def test_delete_last_line_of_body(self):
        body, res = apply_one(Edit("delete", anchor="Example text."))
        assert res.applied
        assert body.endswith("## Examples\n")
        assert not body.endswith("\n\n")

    def test_delete_part_of_a_line_keeps_the_rest(self):
        body, res = apply_one(Edit("delete", anchor="Intro "))
        assert res.applied
        assert "# Demo\n\nparagraph.\n\n## Rules" in body

    def test_delete_without_trailing_newline(self):
        body, res = apply_one(Edit("delete", anchor="b"), body="a\nb")
        assert res.applied
        assert body == "a\n"


# --------------------------------------------------------------------- anchor matching
class TestAnchors:
    def test_exact_match_wins_over_normalised_duplicates(self):
        # "Use X." occurs once exactly; "use x." also matches when normalised
        body = "Use X.\n\nuse x.\n"
        new, res = apply_one(Edit("replace", anchor="Use X.", content="Use Y."), body=body)
        assert res.applied
        assert new == "Use Y.\n\nuse x.\n"

    def test_normalised_match_different_case(self):
        body, res = apply_one(Edit("replace", anchor="INTRO PARAGRAPH.", content="Hello."))
        assert res.applied
        assert "# Demo\n\nHello.\n\n## Rules" in body

    def test_normalised_match_anchor_spanning_line_break(self):
        # the model quoted two lines as one
        body, res = apply_one(Edit("replace", anchor="- one - two", content="- both"))
        assert res.applied
        assert "## Rules\n\n- both\n\n## Examples" in body

    def test_normalised_match_when_skill_has_line_break_and_anchor_spaces(self):
        text = "Always check the\ncatalogue first.\n"
        body, res = apply_one(Edit("delete", anchor="check the catalogue"), body=text)
        assert res.applied
        assert body == "Always  first.\n"

    def test_normalised_match_collapses_whitespace_runs_in_anchor(self):
        body, res = apply_one(Edit("delete", anchor="  Intro \t\n paragraph.  "))
        assert res.applied
        assert "Intro" not in body

    def test_normalised_span_maps_back_to_original_offsets(self):
        text = "Keep  THIS   text here.\n"
        state, span = find_anchor(text, "this text")
        assert state == "found"
        assert span is not None
        assert text[span[0] : span[1]] == "THIS   text"

    def test_ambiguous_exact(self):
        body, res = apply_one(
            Edit("delete", anchor="Demo\n\nIntro"), body="Demo\n\nIntro\n\nDemo\n\nIntro\n"
        )
        assert res.status == "ambiguous_anchor"
        assert body == "Demo\n\nIntro\n\nDemo\n\nIntro\n"

    def test_ambiguous_short_exact_anchor(self):
        body, res = apply_one(Edit("delete", anchor="- "))
        assert res.status == "ambiguous_anchor"
        assert body == BODY

    def test_ambiguous_normalised(self):
        text = "Check The Code.\n\ncheck the  code.\n"
        body, res = apply_one(Edit("replace", anchor="CHECK THE CODE.", content="x"), body=text)
        assert res.status == "ambiguous_anchor"
        assert body == text

    def test_ambiguous_overlapping_exact_occurrences(self):
        text = "- a\n- a\n- a\n"
        body, res = apply_one(Edit("delete", anchor="- a\n- a"), body=text)
        assert res.status == "ambiguous_anchor"
        assert body == text

    def test_ambiguous_overlapping_normalised_occurrences(self):
        text = "a a a\n"
        body, res = apply_one(Edit("delete", anchor="A A"), body=text)
        assert res.status == "ambiguous_anchor"
        assert body == text

    def test_missing_anchor(self):
        body, res = apply_one(Edit("replace", anchor="not in the skill", content="x"))
        assert res.status == "anchor_not_found"
        assert not res.applied
        assert body == BODY

    def test_missing_anchor_for_add(self):
        body, res = apply_one(Edit("add", anchor="nowhere", content="x"))
        assert res.status == "anchor_not_found"
        assert body == BODY

    def test_whitespace_only_anchor_for_add_is_not_found(self):
        body, res = apply_one(Edit("add", anchor="   ", content="x"))
        assert res.status == "anchor_not_found"
        assert body == BODY

    @pytest.mark.parametrize(
        "text, anchor, expected",
        [
            ("abc", "b", ("found", (1, 2))),
            ("abcb", "b", ("ambiguous", None)),
            ("abc", "z", ("missing", None)),
            ("abc", "", ("missing", None)),
            ("a  B\nc", "a b c", ("found", (0, 6))),
        ],
    )
    def test_find_anchor(self, text, anchor, expected):
        assert find_anchor(text, anchor) == expected


# ----------------------------------------------------------- quoting and near misses
QUOTED = (
    "# Codes\n\n- Strip a leading `#` and any spaces.\n- Write the letters in "
    "**UPPER CASE**.\n- Join with a \u201chyphen\u201d, never an _underscore_.\n"
)


class TestQuotingAndNearMisses:
    @pytest.mark.parametrize(
        "anchor, content, expected",
        [
            (
                "- Strip a leading # and any spaces.",
                "- Strip a leading `#`, `*` and any spaces.",
                "- Strip a leading `#`, `*` and any spaces.\n",
            ),
            (  # the anchor names the quoted text whole: no half pair is left
                "letters in upper case",
                "letters in capitals",
                "- Write the letters in capitals.\n",
            ),
            (
                'Join with a "hyphen", never an underscore',
                "Join with a hyphen",
                "- Join with a hyphen.\n",
            ),
            ("`Join` with a 'hyphen'", "Join with a dash", "- Join with a dash, never"),
        ],
    )
    def test_markdown_quoting_is_ignored(self, anchor, content, expected):
        body, res = apply_one(Edit("replace", anchor=anchor, content=content), body=QUOTED)
        assert res.applied, res.detail
        assert expected in body

    def test_a_delete_takes_the_quoting_around_its_anchor(self):
        text = "Rules:\n**Always `upper` case.**\nEnd.\n"
        body, res = apply_one(Edit("delete", anchor="Always upper case."), body=text)
        assert res.applied
        assert body == "Rules:\nEnd.\n"

    def test_ignoring_quoting_still_refuses_ambiguity(self):
        text = "Use `a` here.\nUse *a* here.\n"
        body, res = apply_one(Edit("delete", anchor="Use a here."), body=text)
        assert res.status == "ambiguous_anchor"
        assert body == text

    def test_a_match_without_ignoring_quoting_wins(self):
        # whitespace and case alone find one place; ignoring quoting would find two
        text = "Keep A B.\nkeep `a` b.\n"
        state, span = find_anchor(text, "keep a b.")
        assert state == "found" and span == (0, 9)

    def test_an_anchor_of_quoting_only_is_not_found(self):
        assert find_anchor("a `b` c\n", "**") == ("missing", None)

    def test_not_found_names_the_nearest_line(self):
        body, res = apply_one(
            Edit("replace", anchor="- Strip the leading hash and spaces.", content="x"),
            body=QUOTED,
        )
        assert res.status == "anchor_not_found"
        assert body == QUOTED
        assert res.detail.startswith("the anchor is not in the skill (exactly or normalised); ")
        assert "nearest line: '- Strip a leading `#` and any spaces.' (similarity 0." in res.detail

    def test_a_multi_line_anchor_is_matched_against_as_many_lines(self):
        near = nearest_line(QUOTED, "- Strip a leading #\n\n- Write letters in upper case")
        assert near is not None
        assert (
            near[0]
            == "- Strip a leading `#` and any spaces.\n- Write the letters in **UPPER CASE**."
        )
        _, res = apply_one(Edit("delete", anchor="- Strip # first\n- Write upper"), body=QUOTED)
        assert "nearest lines: '- Strip a leading" in res.detail

    def test_the_nearest_line_is_never_in_a_protected_block(self):
        text = "Intro.\n" + PROTECTED
        near = nearest_line(text, "- keep the hyphen!")
        assert near is not None and near[0] == "Intro."

    def test_an_empty_body_has_no_nearest_line(self):
        assert nearest_line("\n\n", "x") is None
        _, res = apply_one(Edit("delete", anchor="x"), body="")
        assert res.detail == "the anchor is not in the skill (exactly or normalised)"


# ------------------------------------------------------------------------ frontmatter
class TestFrontmatter:
    def test_anchor_only_in_frontmatter_is_not_found(self):
        new, report = apply(
            [
                Edit("delete", anchor="Normalise product codes"),
                Edit("replace", anchor="name: demo", content="name: other"),
                Edit("add", anchor="description:", content="x"),
            ]
        )
        assert [r.status for r in report.results] == ["anchor_not_found"] * 3
        assert new.text == FM + BODY

    def test_frontmatter_bytes_identical_after_edits(self):
        fm = (
            "---\nname: demo   # odd spacing kept\ndescription: 'Demo: quoted'\n"
            "metadata:\n  k: v\n---\n"
        )
        s = Skill.parse(fm + BODY)
        new, report = apply_edits(
            s,
            [
                Edit("add", anchor="- two", content="- three"),
                Edit("delete", anchor="Intro paragraph."),
                Edit("replace", anchor="Example text.", content="Other text."),
                Edit("add", section="New", content="Body."),
                Edit("add", content="End."),
            ],
        )
        assert all(r.applied for r in report.results)
        assert new.frontmatter_text == fm
        assert new.text.startswith(fm)
        assert new.text[len(fm) :] == new.body
        assert new.body != BODY

    def test_delete_first_body_line_does_not_reach_frontmatter(self):
        new, report = apply([Edit("delete", anchor="# Demo")])
        assert report.results[0].applied
        assert new.frontmatter_text == FM
        assert new.text.startswith(FM + "Intro paragraph.")


# ------------------------------------------------------------------ protected blocks
GUARDED = (
    "# Demo\n\nIntro paragraph.\n\n"
    "<!-- skillopt:protected note -->\nDo not touch this line.\n<!-- /skillopt:protected -->\n"
    "\n## Rules\n\n- one\n- two\n"
)


class TestProtected:
    def test_protected_spans_include_markers(self):
        spans = protected_spans(GUARDED)
        assert len(spans) == 1
        s, e = spans[0]
        assert GUARDED[s:e].startswith("<!-- skillopt:protected note -->")
        assert GUARDED[s:e].endswith("<!-- /skillopt:protected -->")

    def test_unclosed_block_protects_to_the_end(self):
        text = "a\n<!-- skillopt:protected -->\nb\n"
        assert protected_spans(text) == [(2, len(text))]

    @pytest.mark.parametrize(
        "edit",
        [
            Edit("delete", anchor="Do not touch this line."),
            Edit("replace", anchor="Do not touch this line.", content="Touched."),
            Edit("replace", anchor="do not TOUCH this line.", content="Touched."),
            Edit("delete", anchor="touch"),
            Edit("add", anchor="Do not touch", content="Sneaky."),
            Edit("delete", anchor="<!-- /skillopt:protected -->"),
            # an anchor that straddles the opening marker
            Edit("replace", anchor="Intro paragraph.\n\n<!-- skillopt", content="x"),
        ],
    )
    def test_edit_inside_protected_block_is_refused(self, edit):
        body, res = apply_one(edit, body=GUARDED)
        assert res.status == "protected"
        assert body == GUARDED

    @pytest.mark.parametrize(
        "content",
        [
            "<!-- skillopt:protected -->\nmine",
            "text <!-- /skillopt:protected -->",
            "<!--skillopt:protected guidance-->",
        ],
    )
    def test_content_with_markers_is_refused(self, content):
        for edit in (
            Edit("add", content=content),
            Edit("add", anchor="- one", content=content),
            Edit("replace", anchor="Intro paragraph.", content=content),
        ):
            body, res = apply_one(edit, body=GUARDED)
            assert res.status == "protected", edit
            assert body == GUARDED

    def test_edits_around_a_protected_block_still_apply(self):
        body, res = apply_one(
            Edit("add", anchor="Intro paragraph.", content="More intro."), body=GUARDED
        )
        assert res.applied
        assert "Intro paragraph.\n\nMore intro.\n\n<!-- skillopt:protected note -->" in body
        start, end = protected_spans(GUARDED)[0]
        assert GUARDED[start:end] in body

    def test_add_at_end_goes_before_trailing_protected_block(self):
        text = BODY + "\n" + PROTECTED
        body, res = apply_one(Edit("add", content="End text."), body=text)
        assert res.applied
        assert body == BODY + "\nEnd text.\n\n" + PROTECTED
        assert body.rstrip().endswith("<!-- /skillopt:protected -->")

    def test_created_section_goes_before_trailing_protected_block(self):
        text = BODY + "\n" + PROTECTED
        body, res = apply_one(Edit("add", section="Pitfalls", content="Careful."), body=text)
        assert res.applied
        assert body == BODY + "\n## Pitfalls\n\nCareful.\n\n" + PROTECTED

    def test_add_under_last_section_before_trailing_protected_block(self):
        # the last section "runs into" the guidance block: the add goes before it
        text = BODY + "\n" + PROTECTED
        body, res = apply_one(Edit("add", section="Examples", content="More."), body=text)
        assert res.status == "applied"
        assert body == BODY + "\nMore.\n\n" + PROTECTED

    def test_add_under_section_inside_protected_block_is_refused(self):
        text = BODY + "\n" + PROTECTED
        body, res = apply_one(Edit("add", section="Lessons from training", content="x"), body=text)
        assert res.status == "protected"
        assert body == text

    def test_add_after_line_ending_in_a_marker_is_refused(self):
        text = "Intro <!-- skillopt:protected -->\nkept\n<!-- /skillopt:protected -->\n"
        body, res = apply_one(Edit("add", anchor="Intro", content="x"), body=text)
        assert res.status == "protected"
        assert body == text


# ---------------------------------------------------------------------------- invalid
class TestInvalid:
    @pytest.mark.parametrize(
        "edit, detail",
        [
            (Edit("insert", anchor="- one", content="x"), "unknown op"),
            (Edit("ADD", content="x"), "unknown op"),
            (Edit("add", anchor="- one"), "needs content"),
            (Edit("add", content="  \n "), "needs content"),
            (Edit("replace", anchor="- one"), "needs content"),
            (Edit("replace", anchor="- one", content=""), "needs content"),
            (Edit("delete"), "needs an anchor"),
            (Edit("delete", anchor=""), "needs an anchor"),
            (Edit("replace", content="x"), "needs an anchor"),
        ],
    )
    def test_invalid(self, edit, detail):
        body, res = apply_one(edit)
        assert res.status == "invalid"
        assert detail in res.detail
        assert body == BODY


# ---------------------------------------------------------------- report & ordering
class TestReport:
    def test_every_edit_gets_exactly_one_status_and_input_is_not_mutated(self):
        s = skill()
        before_text, before_body = s.text, s.body
        edits = [
            Edit("add", anchor="- one", content="- x"),
            Edit("delete", anchor="missing text"),
            Edit("delete", anchor="- "),
            Edit("bogus"),
            Edit("replace", anchor="Example text.", content="Example text."),
            Edit("add", content="<!-- skillopt:protected -->"),
            Edit("add", content="End."),
        ]
        new, report = apply_edits(s, edits)
        assert [r.edit for r in report.results] == edits
        assert [r.status for r in report.results] == [
            "applied",
            "anchor_not_found",
            "ambiguous_anchor",
            "invalid",
            "noop",
            "protected",
            "applied",
        ]
        assert len(report.applied) == 2
        assert len(report.not_applied) == 5
        assert report.summary() == "2 applied, 5 skipped"
        assert s.text == before_text and s.body == before_body
        assert new is not s
        assert new.body != s.body
        assert new.frontmatter_text == s.frontmatter_text

    def test_report_to_list(self):
        _, report = apply([Edit("delete", anchor="nope", evidence=("t1",))])
        assert report.to_list() == [
            {
                "edit": Edit("delete", anchor="nope", evidence=("t1",)).to_dict(),
                "status": "anchor_not_found",
                "detail": "the anchor is not in the skill (exactly or normalised); "
                "nearest line: '- one' (similarity 0.44)",
            }
        ]

    def test_later_edit_can_anchor_on_text_an_earlier_one_added(self):
        new, report = apply(
            [
                Edit("add", section="Rules", content="- three"),
                Edit("add", anchor="- three", content="- four"),
            ]
        )
        assert [r.status for r in report.results] == ["applied", "applied"]
        assert "- one\n- two\n- three\n- four\n\n## Examples" in new.body

    def test_later_edit_whose_anchor_was_deleted_is_not_found(self):
        new, report = apply(
            [Edit("delete", anchor="- one"), Edit("add", anchor="- one", content="- x")]
        )
        assert [r.status for r in report.results] == ["applied", "anchor_not_found"]
        assert "- x" not in new.body

    def test_edit_made_unique_by_an_earlier_delete(self):
        text = "alpha\nbeta\nalpha\n"
        new, report = apply(
            [Edit("delete", anchor="alpha"), Edit("delete", anchor="beta\nalpha")], body=text
        )
        assert report.results[0].status == "ambiguous_anchor"
        assert report.results[1].status == "applied"
        assert new.body == "alpha\n"

    def test_no_edits_returns_equal_skill(self):
        new, report = apply([])
        assert report.results == []
        assert new.text == FM + BODY


# --------------------------------------------------------------------------- guidance
class TestGuidance:
    def test_set_guidance_inserts_then_replaces(self):
        s = skill(NO_EXAMPLES)  # no examples: the block goes at the end
        assert guidance_of(s) is None
        once = set_guidance(s, "- first lesson\n")
        assert guidance_of(once) == "- first lesson"
        assert once.body.startswith(NO_EXAMPLES)
        assert once.body.rstrip("\n").endswith(GUIDANCE_CLOSE)
        twice = set_guidance(once, "  - second lesson\n- third  ")
        assert guidance_of(twice) == "- second lesson\n- third"
        assert twice.body.count(GUIDANCE_OPEN) == 1
        assert twice.body.count(GUIDANCE_CLOSE) == 1
        assert "first lesson" not in twice.body
        assert twice.body.startswith(NO_EXAMPLES)
        assert twice.frontmatter_text == FM
        assert s.body == NO_EXAMPLES  # not mutated

    def test_guidance_goes_before_the_examples(self):
        once = set_guidance(skill(), "- a lesson")
        rules, examples = BODY.split("## Examples")
        assert once.body == rules + PROTECTED.replace("keep the hyphen", "a lesson") + (
            "\n## Examples" + examples
        )
        # replaced where it stands
        twice = set_guidance(once, "- b lesson")
        assert twice.body == once.body.replace("a lesson", "b lesson")
        # the target reads the lessons, then the examples right before its cue
        assert twice.for_target().body == (
            rules + "## Lessons from training\n\n- b lesson\n\n## Examples" + examples
        )

    def test_guidance_placed_last_goes_after_the_examples_and_stays_last(self):
        """A completion-style target's guidance is worked examples: read best right
        before its cue, so at the very end, whatever the body holds."""
        once = set_guidance(skill(), "Input: ab 7\nOutput: AB-7", last=True)
        assert once.body.startswith(BODY.rstrip("\n"))
        assert once.body.rstrip().endswith("<!-- /skillopt:protected -->")
        assert once.for_target().body.rstrip().endswith("Input: ab 7\nOutput: AB-7")
        twice = set_guidance(once, "Input: cd 8\nOutput: CD-8", last=True)
        assert twice.body.count("Lessons from training") == 1
        assert twice.for_target().body.rstrip().endswith("Input: cd 8\nOutput: CD-8")
        # a block that stood before the examples moves last
        moved = set_guidance(set_guidance(skill(), "- a lesson"), "- b", last=True)
        assert moved.body.index("## Examples") < moved.body.index("Lessons from training")

    def test_guidance_after_the_examples_moves_before_them(self):
        # a block written at the end before the body had examples
        old = set_guidance(skill(NO_EXAMPLES), "- old")
        with_examples = old.with_body(old.body + "\n## Examples\n\nInput: a\nOutput: A\n")
        new = set_guidance(with_examples, "- new")
        assert (
            new.body
            == set_guidance(
                skill(NO_EXAMPLES + "\n## Examples\n\nInput: a\nOutput: A\n"), "- new"
            ).body
        )
        assert new.body.index(GUIDANCE_OPEN) < new.body.index("## Examples")
        assert new.body.endswith("Output: A\n")

    @pytest.mark.parametrize(
        "examples", ["### Examples\n\nx\n", "Examples\n", "## Examples of rules\n\nx\n"]
    )
    def test_only_an_examples_section_of_the_top_levels_counts(self, examples):
        g = set_guidance(skill(NO_EXAMPLES + "\n" + examples), "- x")
        assert g.body.rstrip("\n").endswith(GUIDANCE_CLOSE)

    def test_an_examples_section_created_later_goes_after_the_guidance(self):
        g = set_guidance(skill(NO_EXAMPLES), "- x")
        body, res = apply_one(
            Edit("add", section="Examples", content="Input: a\nOutput: A"), body=g.body
        )
        assert res.applied
        assert body == g.body + "\n## Examples\n\nInput: a\nOutput: A\n"
        # and another section still goes before the trailing guidance
        body, res = apply_one(Edit("add", section="Pitfalls", content="Careful."), body=g.body)
        assert body.index("## Pitfalls") < body.index(GUIDANCE_OPEN)

    def test_guidance_block_is_protected(self):
        g = set_guidance(skill(), "- a lesson")
        assert len(protected_spans(g.body)) == 1
        new, report = apply_edits(g, [Edit("delete", anchor="- a lesson")])
        assert report.results[0].status == "protected"
        assert guidance_of(new) == "- a lesson"

    def test_guidance_on_empty_body(self):
        g = set_guidance(Skill.empty(), "- x")
        assert g.body.startswith(GUIDANCE_OPEN)
        assert guidance_of(g) == "- x"

    def test_replacing_guidance_keeps_text_after_it(self):
        g = set_guidance(skill(), "- old")
        g = g.with_body(g.body + "\nTrailing note.\n")
        g2 = set_guidance(g, "- new")
        assert guidance_of(g2) == "- new"
        assert g2.body.endswith("\nTrailing note.\n")
        assert g2.body.count(GUIDANCE_OPEN) == 1


# ----------------------------------------------------------------------- Edit itself
class TestEdit:
    def test_round_trip(self):
        e = Edit(
            "replace",
            anchor="a",
            section="S",
            content="b",
            rationale="why",
            evidence=("t1", "t2"),
            source="successes",
            support=3,
        )
        d = e.to_dict()
        assert d["evidence"] == ["t1", "t2"]
        assert Edit.from_dict(d) == e

    def test_round_trip_defaults(self):
        e = Edit("add", content="x")
        assert Edit.from_dict(e.to_dict()) == e

    def test_from_dict_ignores_unknown_and_null(self):
        e = Edit.from_dict(
            {
                "op": "delete",
                "anchor": "a",
                "section": None,
                "evidence": None,
                "extra": 1,
                "support": None,
            }
        )
        assert e == Edit("delete", anchor="a")
        assert Edit.from_dict({"op": "add", "content": "x", "evidence": [1, "t"]}).evidence == (
            "1",
            "t",
        )

    def test_describe_add(self):
        assert (
            Edit("add", anchor="- one", content="- two").describe() == "add after '- one': '- two'"
        )
        assert Edit("add", section="Rules", content="x").describe() == "add under 'Rules': 'x'"
        assert Edit("add", content="x").describe() == "add at the end: 'x'"

    def test_describe_delete_and_replace(self):
        assert Edit("delete", anchor="old line").describe() == "delete 'old line'"
        assert Edit("replace", anchor="a", content="b").describe() == "replace 'a' with 'b'"

    def test_describe_keeps_the_spacing_visible(self):
        """Whitespace inside quoted text is meaningful (an example's input): a run of
        spaces stays a run, line breaks and tabs are shown, on one line."""
        example = Edit("add", section="Examples", content="Input: gi  7277\nOutput: GI-7277\n")
        text = example.describe()
        assert text == "add under 'Examples': 'Input: gi  7277\\nOutput: GI-7277'"
        assert "\n" not in text
        assert Edit("delete", anchor="a\tb").describe() == "delete 'a\\tb'"
        # the cut counts characters of the text, not of its escapes
        assert Edit("delete", anchor="ab  cd\nef").describe(width=5) == "delete 'ab  …'"

    def test_describe_replace(self):
        assert Edit("replace", anchor="a", content="b").describe() == "replace 'a' with 'b'"

    def test_describe_shortens_long_text(self):
        text = Edit("delete", anchor="x" * 100).describe(width=10)
        assert text == "delete '" + "x" * 9 + "…'"

    @pytest.mark.parametrize(
        "edit, lines",
        [
            (Edit("add", content="- one\n\n- two\n"), 2),
            (Edit("replace", anchor="a", content="Input: x\nOutput: X"), 2),
            (Edit("delete", anchor="a\nb\nc"), 0),
            (Edit("add"), 0),
        ],
    )
    def test_lines_count_the_non_blank_lines_an_edit_adds(self, edit, lines):
        assert edit.lines == lines


def test_without_secrets_blanks_every_text_of_an_edit_and_counts_the_values(monkeypatch):
    key = "sk-ant-api03-" + "f00dfeed" * 3
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    edit = Edit(
        "replace",
        anchor=f"use {key}",
        content=f"- Use {key}, never print {key}.",
        rationale=f"{key} works",
        evidence=("t1", key),
    )
    clean, n = edit.without_secrets()
    assert n == 5
    assert key not in json.dumps(clean.to_dict())
    assert clean.content == "- Use ***, never print ***." and clean.evidence == ("t1", "***")
    plain = Edit("add", content="- Be brief.")
    assert plain.without_secrets() == (plain, 0)  # the same edit, nothing counted
    # an anchor may quote a key the skill itself holds: kept, so it can still match
    kept, n = edit.without_secrets(anchor=False)
    assert n == 4 and kept.anchor == edit.anchor
