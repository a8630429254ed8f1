"""Merging minibatch proposals: duplicates, ranking, conflicts, budget, and every
input edit accounted for."""

from __future__ import annotations

from skillopt.optimize.merge import merge_edits
from skillopt.skill.edits import Edit


def add(content: str, anchor: str | None = None, **kw) -> Edit:
    return Edit("add", anchor=anchor, content=content, **kw)


def accounted(proposals: list[list[Edit]], result) -> None:
    """Nothing vanishes: kept + dropped covers every input edit exactly once."""
    inputs = [e for p in proposals for e in p]
    assert len(result.kept) + len(result.dropped) == len(inputs)
    dropped_ids = [id(e) for e, _ in result.dropped]
    assert len(set(dropped_ids)) == len(dropped_ids)
    assert all(isinstance(why, str) and why for _, why in result.dropped)
    for e in inputs:
        if id(e) in dropped_ids:
            continue
        # kept or dropped as the merged copy (support and evidence added up)
        fields = (e.op, e.anchor, e.section, e.content)
        assert any(
            (k.op, k.anchor, k.section, k.content) == fields
            for k in result.kept + [d for d, _ in result.dropped]
        ), e


class TestDuplicates:
    def test_duplicates_merge_support_and_evidence(self):
        proposals = [
            [add("Use a hyphen.", anchor="## Rules", evidence=("t1",))],
            [add("  use a   HYPHEN. ", anchor="## rules ", evidence=("t2", "t1"), support=2)],
            [add("use a hyphen.", anchor="##  RULES", evidence=("t3",))],
        ]
        r = merge_edits(proposals, budget=4)
        assert len(r.kept) == 1
        kept = r.kept[0]
        assert kept.support == 4
        assert kept.evidence == ("t1", "t2", "t3")
        assert kept.content == "Use a hyphen."  # the first proposal's text is kept
        assert [why for _, why in r.dropped] == ["duplicate of another proposal"] * 2
        accounted(proposals, r)

    def test_different_op_is_not_a_duplicate(self):
        proposals = [[Edit("delete", anchor="x y")], [Edit("replace", anchor="x y", content="z")]]
        r = merge_edits(proposals, budget=4)
        assert len(r.kept) == 1  # they conflict, but neither is a duplicate
        assert not r.dropped[0][1].startswith("duplicate")

    def test_different_content_is_not_a_duplicate(self):
        proposals = [[add("- a", anchor="## Rules")], [add("- b", anchor="## Rules")]]
        r = merge_edits(proposals, budget=4)
        assert [e.content for e in r.kept] == ["- a", "- b"]
        assert all(e.support == 1 for e in r.kept)

    def test_section_adds_merge_ignoring_case(self):
        proposals = [[add("x", section="Rules")], [add("X", section="RULES")]]
        r = merge_edits(proposals, budget=4)
        assert len(r.kept) == 1 and r.kept[0].support == 2

    def test_section_adds_in_different_sections_are_distinct(self):
        proposals = [[add("x", section="Rules")], [add("x", section="Examples")]]
        r = merge_edits(proposals, budget=4)
        assert len(r.kept) == 2

    def test_duplicate_of_success_and_failure_ranks_as_failure(self):
        proposals = [
            [add("s", anchor="b", source="successes", support=3)],
            [add("f", anchor="a", source="failures", support=2)],
            [add("S", anchor="B", source="failures")],
        ]
        r = merge_edits(proposals, budget=4)
        assert [e.content for e in r.kept] == ["s", "f"]
        assert r.kept[0].source == "failures"
        assert r.kept[0].support == 4


class TestRanking:
    def test_failures_before_successes_regardless_of_support(self):
        proposals = [
            [add("succ", anchor="a", source="successes", support=9)],
            [add("fail", anchor="b", source="failures", support=1)],
        ]
        r = merge_edits(proposals, budget=4)
        assert [e.content for e in r.kept] == ["fail", "succ"]

    def test_then_by_support(self):
        proposals = [
            [
                add("low", anchor="a"),
                add("high", anchor="b", support=3),
                add("mid", anchor="c", support=2),
            ]
        ]
        r = merge_edits(proposals, budget=4)
        assert [e.content for e in r.kept] == ["high", "mid", "low"]

    def test_budget_keeps_failure_edit_over_high_support_success(self):
        proposals = [
            [add("succ", anchor="a", source="successes", support=5)],
            [add("fail", anchor="b")],
        ]
        r = merge_edits(proposals, budget=1)
        assert [e.content for e in r.kept] == ["fail"]
        assert r.dropped[0][0].content == "succ"
        assert "budget" in r.dropped[0][1]

    def test_stable_otherwise(self):
        contents = ["e", "b", "d", "a", "c"]
        proposals = [[add(c, anchor=f"anchor {c}")] for c in contents]
        r = merge_edits(proposals, budget=10)
        assert [e.content for e in r.kept] == contents
        assert r.dropped == []

    def test_stable_within_a_source_and_support(self):
        proposals = [
            [add("s1", anchor="p", source="successes"), add("f1", anchor="q")],
            [add("s2", anchor="r", source="successes"), add("f2", anchor="s")],
        ]
        r = merge_edits(proposals, budget=10)
        assert [e.content for e in r.kept] == ["f1", "f2", "s1", "s2"]


class TestConflicts:
    def test_two_deletes_of_overlapping_text(self):
        proposals = [
            [Edit("delete", anchor="the old rule", support=2)],
            [Edit("delete", anchor="old rule")],
        ]
        r = merge_edits(proposals, budget=4)
        assert [e.anchor for e in r.kept] == ["the old rule"]
        dropped, reason = r.dropped[0]
        assert dropped.anchor == "old rule"
        assert reason.startswith("conflicts")
        assert "the old rule" in reason
        accounted(proposals, r)

    def test_replace_and_delete_same_anchor_modulo_case(self):
        proposals = [
            [Edit("replace", anchor="Old Rule", content="new rule")],
            [Edit("delete", anchor="old  rule")],
        ]
        r = merge_edits(proposals, budget=4)
        assert [e.op for e in r.kept] == ["replace"]
        assert r.dropped[0][0].op == "delete"
        assert r.dropped[0][1].startswith("conflicts")

    def test_two_replaces_same_anchor_lower_ranked_dropped(self):
        proposals = [
            [Edit("replace", anchor="x rule", content="A", source="successes", support=5)],
            [Edit("replace", anchor="x rule", content="B")],
        ]
        r = merge_edits(proposals, budget=4)
        assert [e.content for e in r.kept] == ["B"]
        assert r.dropped[0][0].content == "A"
        assert r.dropped[0][1].startswith("conflicts")

    def test_larger_anchor_ranked_lower_is_dropped(self):
        proposals = [
            [Edit("replace", anchor="rule", content="A", support=3)],
            [Edit("delete", anchor="the whole rule text")],
        ]
        r = merge_edits(proposals, budget=4)
        assert [e.op for e in r.kept] == ["replace"]
        assert r.dropped[0][1].startswith("conflicts")

    def test_add_after_anchor_another_edit_replaces(self):
        proposals = [
            [Edit("replace", anchor="- one", content="- uno", support=2)],
            [add("- extra", anchor="- one")],
        ]
        r = merge_edits(proposals, budget=4)
        assert [e.op for e in r.kept] == ["replace"]
        assert r.dropped[0][0].op == "add"
        assert r.dropped[0][1].startswith("conflicts")

    def test_higher_ranked_add_beats_replace_of_its_anchor(self):
        proposals = [[add("- extra", anchor="- one", support=2)], [Edit("delete", anchor="- one")]]
        r = merge_edits(proposals, budget=4)
        assert [e.op for e in r.kept] == ["add"]
        assert r.dropped[0][1].startswith("conflicts")

    def test_two_adds_after_same_anchor_both_kept(self):
        proposals = [[add("- a", anchor="- one")], [add("- b", anchor="- ONE")]]
        r = merge_edits(proposals, budget=4)
        assert [e.content for e in r.kept] == ["- a", "- b"]
        assert r.dropped == []

    def test_edits_without_anchor_never_conflict(self):
        proposals = [[add("x"), add("y", section="S"), Edit("delete", anchor="z")]]
        r = merge_edits(proposals, budget=4)
        assert len(r.kept) == 3

    def test_unrelated_anchors_both_kept(self):
        proposals = [
            [Edit("delete", anchor="alpha")],
            [Edit("replace", anchor="beta", content="gamma")],
        ]
        r = merge_edits(proposals, budget=4)
        assert len(r.kept) == 2


class TestBudget:
    def test_clip_to_budget(self):
        proposals = [[add(c, anchor=c) for c in "abcde"]]
        r = merge_edits(proposals, budget=2)
        assert [e.content for e in r.kept] == ["a", "b"]
        assert [e.content for e, _ in r.dropped] == ["c", "d", "e"]
        assert all("budget" in why and "2" in why for _, why in r.dropped)
        accounted(proposals, r)

    def test_budget_zero_keeps_nothing(self):
        proposals = [[add("a", anchor="a"), Edit("delete", anchor="b")]]
        r = merge_edits(proposals, budget=0)
        assert r.kept == []
        assert len(r.dropped) == 2
        assert all("budget" in why for _, why in r.dropped)

    def test_conflict_does_not_use_budget(self):
        proposals = [
            [
                Edit("delete", anchor="rule one", support=3),
                Edit("delete", anchor="rule one here", support=2),
                add("x", anchor="other"),
            ]
        ]
        r = merge_edits(proposals, budget=2)
        assert [e.anchor for e in r.kept] == ["other", "rule one"]  # deletes rank last
        assert r.dropped[0][1].startswith("conflicts")

    def test_one_huge_line_is_too_large(self):
        """A 2 MB single-line edit is one non-blank line: the characters bound drops it."""
        huge = add("x" * 2_000_000, section="Rules")
        small = add("- a rule", section="Rules")
        r = merge_edits([[huge, small]], budget=4, max_edit_lines=8, max_step_lines=24)
        assert r.kept == [small]
        assert r.dropped[0][1] == (
            "too large: 2,000,000 characters of content, over the limit of 4,000 per edit"
        )

    def test_a_delete_ranks_after_an_add_whatever_its_support(self):
        """Two minibatches proposing the same delete of a right rule do not make it
        outrank an addition proposed once: the budget keeps the addition."""
        proposals = [[Edit("delete", anchor="rule one")], [Edit("delete", anchor="rule one")]]
        proposals.append([add("- new rule", section="Rules")])
        r = merge_edits(proposals, budget=1)
        assert [e.op for e in r.kept] == ["add"]
        assert r.dropped[-1][1] == "over this step's budget of 1 edits"

    def test_nothing_vanishes_in_a_mixed_batch(self):
        proposals = [
            [
                add("- a", anchor="- one"),
                Edit("delete", anchor="- one"),
                Edit("replace", anchor="Intro", content="Hi", source="successes"),
            ],
            [add("- A", anchor="- ONE"), add("tail"), Edit("delete", anchor="intro text")],
            [],
            [add("x", section="New"), add("y", section="New"), add("z")],
        ]
        r = merge_edits(proposals, budget=3)
        accounted(proposals, r)
        assert len(r.kept) == 3
        reasons = [why for _, why in r.dropped]
        assert any(w.startswith("duplicate") for w in reasons)
        assert any(w.startswith("conflicts") for w in reasons)
        assert any("budget" in w for w in reasons)

    def test_merged_duplicate_dropped_for_budget_carries_its_support(self):
        proposals = [
            [add("a", anchor="a", support=3)],
            [add("b", anchor="b"), add("b", anchor="b")],
        ]
        r = merge_edits(proposals, budget=1)
        assert [e.content for e in r.kept] == ["a"]
        over = [e for e, why in r.dropped if "budget" in why]
        assert len(over) == 1 and over[0].support == 2
        accounted(proposals, r)

    def test_empty_input(self):
        r = merge_edits([], budget=3)
        assert r.kept == [] and r.dropped == []


# ------------------------------------------------------------------ what an edit carries
def lines(n: int, tag: str = "x") -> str:
    return "\n\n".join(f"Input: {tag}{i}\nOutput: {tag.upper()}{i}" for i in range(n // 2))


class TestContentLimits:
    def test_an_edit_over_the_per_edit_limit_is_dropped_whole_with_its_reason(self):
        big = add(lines(20), section="Examples")  # ten examples in one edit
        small = add("- Keep the hyphen.", section="Rules")
        proposals = [[big, small]]
        r = merge_edits(proposals, budget=4, max_edit_lines=8, max_step_lines=24)
        assert r.kept == [small]
        assert r.dropped == [
            (big, "too large: 20 non-blank lines of content, over the limit of 8 per edit")
        ]
        accounted(proposals, r)

    def test_a_too_large_edit_takes_no_budget_and_blocks_nothing(self):
        big = Edit("replace", anchor="## Rules", content=lines(10), support=3)
        small = Edit("delete", anchor="## Rules")  # would conflict with the big one if kept
        r = merge_edits([[big], [small]], budget=1, max_edit_lines=8)
        assert r.kept == [small]
        assert r.dropped[0][1].startswith("too large")

    def test_the_step_limit_keeps_the_best_ranked_that_fit(self):
        a = add(lines(8, "a"), section="Examples", support=3)
        b = add(lines(8, "b"), section="Examples", support=2)
        c = add(lines(6, "c"), section="Examples", support=1)
        d = add("- One more rule.", section="Rules")
        delete = Edit("delete", anchor="- old rule")
        proposals = [[a, b, c, d, delete]]
        r = merge_edits(proposals, budget=5, max_edit_lines=8, max_step_lines=18)
        assert r.kept == [a, b, d, delete]  # 8 + 8 + 1 lines; a delete adds none
        assert r.dropped == [
            (
                c,
                "over this step's limit of 18 non-blank lines of content (16 kept, this edit adds 6)",
            )
        ]
        assert all(k.content == e.content for k, e in zip(r.kept, [a, b, d, delete]))  # never cut
        accounted(proposals, r)

    def test_without_limits_nothing_is_dropped_for_size(self):
        r = merge_edits([[add(lines(40), section="Examples")]], budget=1)
        assert len(r.kept) == 1 and not r.dropped

    def test_the_defaults_are_one_source(self):
        from skillopt.config import Settings
        from skillopt.optimize.base import ProposalRequest
        from skillopt.optimize.memory import Memory
        from skillopt.skill.document import Skill
        from skillopt.skill.edits import MAX_EDIT_LINES, MAX_STEP_LINES

        s = Settings()
        request = ProposalRequest(Skill.empty(), "failures", [], {}, 4, Memory())
        assert (s.max_edit_lines, s.max_step_lines) == (MAX_EDIT_LINES, MAX_STEP_LINES)
        assert (request.max_edit_lines, request.max_step_lines) == (MAX_EDIT_LINES, MAX_STEP_LINES)
        assert request.edit_limits == (
            f"at most {MAX_EDIT_LINES} non-blank lines of `content` per edit (and "
            f"{MAX_EDIT_LINES * 500} characters) and {MAX_STEP_LINES} lines for all your "
            "edits together"
        )
