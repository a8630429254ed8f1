"""The `exemplars` optimizer: worked examples drawn from failed training tasks, with
no model calls — shapes, similarity, parsing, what propose() picks and how its edits
apply, memory, and a training run end to end."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from helpers import write_skill, write_suite

from skillopt import api
from skillopt.config import Settings
from skillopt.harness.chat import ChatHarness
from skillopt.models import ScriptedModel, register_model, unregister_model
from skillopt.models.base import Usage
from skillopt.models.local_prompt import completion_prompt, format_example
from skillopt.optimize.base import STUCK
from skillopt.optimize.examples import (
    SECTION,
    Example,
    describe_shape,
    examples_in,
    shape,
    similarity,
)
from skillopt.optimize.exemplars import ExemplarOptimizer, _coverage_gain
from skillopt.optimize.memory import Memory
from skillopt.optimize.reflect import Proposal, ProposalRequest
from skillopt.rollouts.engine import Rollout
from skillopt.skill.document import Skill
from skillopt.skill.edits import Edit, apply_edits
from skillopt.suite.loader import load_suite
from skillopt.training import session_parts as training

FRONT = "---\nname: codes\ndescription: Normalise product codes.\n---\n"
INTRO = "# Codes\n\nRewrite the product code you are given.\n"

# input -> expected; the comment is the input's shape
ITEMS = {
    "tj 192": "TJ-192",  # a 9
    "qpx 4471": "QPX-4471",  # a 9
    "mw 80": "MW-80",  # a 9
    "Vlp_6754": "VLP-6754",  # Aa_9
    "Vxz_1234": "VXZ-1234",  # Aa_9
    "#rh.140": "RH-140",  # #a.9
    "uxl685": "UXL-685",  # a9
    "uxl684": "UXL-684",  # a9
    "TJ 192": "TJ-192",  # A 9 (a case variant of "tj 192")
    "catalogue entry 1234567": "CE-1234567",  # a a 9
    "catalogue entry 1234568": "CE-1234568",  # a a 9 (near-duplicate of the one above)
    "catalogue entry 1234569": "CE-1234569",  # a a 9 (and another)
}


def tid(text: str) -> str:
    """A task id for an input ('#rh.140' -> 'rh-140', 'TJ 192' -> 'tj-192-caps')."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") + ("-caps" if text.isupper() else "")


ITEMS_BY_ID = {tid(i): i for i in ITEMS}  # task id -> input


def load_tasks(tmp_path, items: list[dict], **fields) -> dict:
    path = write_suite(tmp_path / "codes.yaml", items, **fields)
    return {t.id: t for t in load_suite(path).tasks}


@pytest.fixture
def tasks(tmp_path):
    return load_tasks(
        tmp_path,
        [{"id": tid(i), "input": i, "expected": e, "split": "train"} for i, e in ITEMS.items()],
    )


def fail(text: str, sample: int = 0) -> Rollout:
    return Rollout(
        key=f"k-{tid(text)}-{sample}",
        task_id=tid(text),
        split="train",
        sample=sample,
        skill_hash="h",
        scored=True,
        score=0.0,
        passed=False,
        feedback="expected something else",
        answer=text,
    )


def success(text: str) -> Rollout:
    return Rollout(
        key=f"k-{tid(text)}",
        task_id=tid(text),
        split="train",
        sample=0,
        skill_hash="h",
        scored=True,
        score=1.0,
        passed=True,
        feedback="exact match",
        answer=ITEMS[text],
    )


def ex(text: str) -> str:
    """The example text for one of ITEMS."""
    return format_example(text, ITEMS[text])


def skill_with(*inputs: str, after: str = "") -> Skill:
    """The intro, then an Examples section holding `inputs` (if any), then `after`."""
    body = INTRO
    if inputs:
        body += "\n## Examples\n\n" + "\n\n".join(ex(i) for i in inputs) + "\n"
    if after:
        body += "\n" + after
    return Skill.parse(FRONT + body)


def request(
    tasks,
    rollouts,
    *,
    skill: Skill | None = None,
    budget: int = 4,
    memory: Memory | None = None,
    kind: str = "failures",
    **limits: int,
) -> ProposalRequest:
    return ProposalRequest(
        skill=skill or skill_with(),
        kind=kind,
        rollouts=rollouts,
        tasks=tasks,
        budget=budget,
        memory=memory or Memory(),
        **limits,
    )


def propose(tasks, rollouts, *, optimizer: ExemplarOptimizer | None = None, **kw) -> Proposal:
    """What the optimizer proposes; by default one example per edit, so that an edit
    is a choice (the shipped default packs `per_edit` = 2: `TestPacking`)."""
    return (optimizer or ExemplarOptimizer(per_edit=1)).propose(request(tasks, rollouts, **kw))


def evidence(p: Proposal) -> list[str]:
    """The failed tasks the edits' examples come from, in order (an edit may carry
    several examples)."""
    return [t for e in p.edits for t in e.evidence]


def rejected_add(memory: Memory, text: str, step: int = 1) -> None:
    memory.reject(
        step,
        [Edit("add", section=SECTION, content=ex(text), source="exemplars")],
        -0.125,
        "worse on validation (-0.125)",
    )


# ------------------------------------------------------------------------- shape
class TestShape:
    @pytest.mark.parametrize(
        "text, expected",
        [
            ("abc 123", "a 9"),
            ("#RT-0456", "#A-9"),
            ("tj 192", "a 9"),
            ("DMR  9336", "A 9"),  # a run of spaces is one space
            ("Vlp_6754", "Aa_9"),
            ("#Rh.140", "#Aa.9"),
            ("uxl685", "a9"),
            ("aAbB", "aAaA"),  # case changes are class changes
            ("a\tb\nc", "a a a"),  # any whitespace is a space
            ("  padded  ", "a"),  # surrounding whitespace is ignored
            ("Ünïcode 42", "Aa 9"),  # non-ASCII letters are letters
            ("--==", "-="),  # punctuation runs collapse per character
            ("", ""),
        ],
    )
    def test_examples(self, text, expected):
        assert shape(text) == expected

    def test_same_shape_ignores_which_letters_and_digits(self):
        assert shape("tj 192") == shape("qpx 4471") == shape("mw 80")
        assert shape("tj 192") != shape("TJ 192") != shape("tj192")


class TestDescribeShape:
    @pytest.mark.parametrize(
        "shape_, words",
        [
            ("a 9", "lowercase letters, space, digits"),
            ("#A-9", "'#', capital letters, '-', digits"),
            ("Aa_9", "a capitalised word, '_', digits"),
            ("a9", "lowercase letters, digits"),
            ("A 9", "capital letters, space, digits"),
            ("", "empty"),
        ],
    )
    def test_words(self, shape_, words):
        assert describe_shape(shape_) == words

    def test_long_shapes_are_cut(self):
        words = describe_shape(shape("Normalise this product code: tj 192"))
        assert words.endswith(", …") and words.count(",") == 8
        assert words.startswith("a capitalised word, space, lowercase letters")


# -------------------------------------------------------------------- similarity
class TestSimilarity:
    PAIRS = [
        ("abc 123", "abc 124"),
        ("tj 192", "Vlp_6754"),
        ("ab", "ac"),
        ("", "x"),
        ("catalogue entry 1234567", "catalogue entry 1234568"),
        ("abc", "xyz"),
        ("#rh.140", "rh 140"),
    ]

    @pytest.mark.parametrize("text", ["abc 123", "#RT-0456", "", "a", "catalogue entry 1"])
    def test_identical_is_one(self, text):
        assert similarity(text, text) == 1.0

    def test_case_is_ignored(self):
        assert similarity("TJ 192", "tj 192") == 1.0

    @pytest.mark.parametrize("a, b", PAIRS)
    def test_bounds_and_symmetry(self, a, b):
        s = similarity(a, b)
        assert 0.0 <= s <= 1.0
        assert s == similarity(b, a)

    def test_disjoint_is_zero(self):
        assert similarity("abc", "xyz") == 0.0

    def test_trigram_jaccard_value(self):
        # '  ab ' -> {'  a', ' ab', 'ab '}; '  ac ' -> {'  a', ' ac', 'ac '}: 1 shared of 5
        assert similarity("ab", "ac") == pytest.approx(0.2)

    def test_closer_strings_score_higher(self):
        assert similarity("abc 123", "abc 124") > similarity("abc 123", "xyz 987")
        assert 0.0 < similarity("abc 123", "abc 124") < 1.0
        assert similarity("catalogue entry 1234567", "catalogue entry 1234568") >= 0.8


# ------------------------------------------------------------------- examples_in
class TestExamplesIn:
    def test_parses_pairs_between_prose(self):
        skill = Skill.parse(
            FRONT + "# Codes\n\nSome prose.\n\n## Examples\n\n"
            "Input: tj 192\nOutput: TJ-192\n\n"
            "Input:   spaced input  \nOutput:  SP-1  \n\n"
            "## Notes\n\nInput: #rh.140\nOutput: RH-140\n"
        )
        assert examples_in(skill) == [
            Example("tj 192", "TJ-192"),
            Example("spaced input", "SP-1"),
            Example("#rh.140", "RH-140"),
        ]

    def test_only_well_formed_pairs(self):
        skill = Skill.parse(
            FRONT + "# Codes\n\n"
            "Input: no output follows\n\nSomething else.\n\n"
            "- Input: a list item\n- Output: not an example\n\n"
            "The Input: mid-line\nOutput: mid\n\n"
            "Input: kept\nOutput: KEPT\n"
        )
        assert examples_in(skill) == [Example("kept", "KEPT")]

    def test_no_examples(self):
        assert examples_in(skill_with()) == []
        assert examples_in(Skill.parse("")) == []

    def test_text_is_format_example(self):
        e = Example("tj 192", "TJ-192")
        assert e.text == format_example("tj 192", "TJ-192") == "Input: tj 192\nOutput: TJ-192"

    def test_round_trips_what_the_optimizer_writes(self):
        skill = skill_with("tj 192", "Vlp_6754")
        assert [e.text for e in examples_in(skill)] == [ex("tj 192"), ex("Vlp_6754")]

    def test_multi_line_input(self):
        text = format_example("Normalise this code:\ntj 192", "TJ-192")
        skill = Skill.parse(
            FRONT + INTRO + "\n## Examples\n\n" + text + "\n\nInput: next\nOutput: NEXT\n"
        )
        assert examples_in(skill) == [
            Example("Normalise this code:\ntj 192", "TJ-192"),
            Example("next", "NEXT"),
        ]
        assert examples_in(skill)[0].text == text


# --------------------------------------------------------------- propose: adding
class TestAdd:
    def test_failures_become_add_edits(self, tasks):
        p = propose(tasks, [fail("tj 192"), fail("Vlp_6754"), fail("#rh.140")], budget=4)
        assert p.skipped is None
        assert [e.op for e in p.edits] == ["add", "add", "add"]
        for e, text in zip(p.edits, ["tj 192", "Vlp_6754", "#rh.140"]):
            task = tasks[tid(text)]
            assert e.section == SECTION == "Examples"
            assert e.anchor is None
            assert e.content == format_example(task.prompt, task.expected)
            assert e.evidence == (task.id,)
            assert e.source == "exemplars"
            assert describe_shape(shape(text)) in e.rationale
        assert p.edits[0].rationale == (
            "worked example for a failed case (input: lowercase letters, space, digits)"
        )

    def test_at_most_budget(self, tasks):
        rollouts = [fail("tj 192"), fail("Vlp_6754"), fail("#rh.140"), fail("uxl685")]
        p = propose(tasks, rollouts, budget=2)
        assert evidence(p) == ["tj-192", "vlp-6754"]  # input order among equals
        assert len(propose(tasks, rollouts, budget=1).edits) == 1

    def test_content_is_the_rendered_prompt_not_the_raw_input(self, tmp_path):
        tasks = load_tasks(
            tmp_path,
            [{"id": "a", "input": "tj 192", "expected": "TJ-192"}],
            prompt="Normalise this product code: {input}",
        )
        p = propose(tasks, [Rollout("k", "a", "train", 0, "h", True, 0.0, False)])
        assert [e.content for e in p.edits] == [
            "Input: Normalise this product code: tj 192\nOutput: TJ-192"
        ]

    def test_json_expected_is_written_as_json(self, tmp_path):
        tasks = load_tasks(
            tmp_path,
            [
                {
                    "id": "j",
                    "input": "tj 192",
                    "expected": {"code": "TJ-192", "ok": True},
                    "scorer": "json",
                },
                {"id": "n", "input": "how many", "expected": 42, "scorer": "number"},
            ],
        )
        p = propose(
            tasks,
            [
                Rollout("k1", "j", "train", 0, "h", True, 0.0, False),
                Rollout("k2", "n", "train", 0, "h", True, 0.0, False),
            ],
        )
        assert [e.content for e in p.edits] == [
            'Input: tj 192\nOutput: {"code": "TJ-192", "ok": true}',
            "Input: how many\nOutput: 42",
        ]
        answer = examples_in(apply_edits(skill_with(), p.edits)[0])[0].output
        assert json.loads(answer) == {"code": "TJ-192", "ok": True}

    def test_task_without_expected_is_skipped(self, tmp_path):
        tasks = load_tasks(
            tmp_path,
            [
                {
                    "id": "r",
                    "input": "tj 192",
                    "scorer": {"type": "regex", "pattern": "^[A-Z]+-[0-9]+$"},
                },
                {"id": "e", "input": "Vlp_6754", "expected": "VLP-6754"},
            ],
        )
        p = propose(
            tasks,
            [
                Rollout("k1", "r", "train", 0, "h", True, 0.0, False),
                Rollout("k2", "e", "train", 0, "h", True, 0.0, False),
            ],
        )
        assert evidence(p) == ["e"]

    def test_repeated_samples_of_one_task_give_one_example(self, tasks):
        p = propose(tasks, [fail("tj 192", 0), fail("tj 192", 1), fail("tj 192", 2)])
        assert evidence(p) == ["tj-192"]

    def test_applied_edits_read_as_a_few_shot_pattern(self, tasks, tmp_path):
        p = propose(tasks, [fail("tj 192"), fail("Vlp_6754")])
        candidate, report = apply_edits(skill_with(), p.edits)
        assert [r.status for r in report.results] == ["applied", "applied"]
        assert candidate.body == (
            "# Codes\n\nRewrite the product code you are given.\n\n"
            "## Examples\n\n"
            "Input: tj 192\nOutput: TJ-192\n\n"
            "Input: Vlp_6754\nOutput: VLP-6754\n"
        )
        new_task = tasks[tid("#rh.140")]
        messages = ChatHarness(ScriptedModel([])).messages(candidate, new_task)
        assert completion_prompt(messages) == (
            "# Codes\n\nRewrite the product code you are given.\n\n"
            "## Examples\n\n"
            "Input: tj 192\nOutput: TJ-192\n\n"
            "Input: Vlp_6754\nOutput: VLP-6754\n\n"
            "Input: #rh.140\nOutput:"
        )

        # a later step appends to the same section, keeping the pattern
        p2 = propose(tasks, [fail("#rh.140")], skill=candidate)
        assert [e.op for e in p2.edits] == ["add"]
        after, report = apply_edits(candidate, p2.edits)
        assert report.results[0].applied
        messages = ChatHarness(ScriptedModel([])).messages(after, tasks[tid("uxl685")])
        assert completion_prompt(messages) == (
            "# Codes\n\nRewrite the product code you are given.\n\n"
            "## Examples\n\n"
            "Input: tj 192\nOutput: TJ-192\n\n"
            "Input: Vlp_6754\nOutput: VLP-6754\n\n"
            "Input: #rh.140\nOutput: RH-140\n\n"
            "Input: uxl685\nOutput:"
        )

    def test_adds_go_into_an_existing_examples_section(self, tasks):
        skill = skill_with("tj 192", after="## Notes\n\n- Reply with the code only.\n")
        p = propose(tasks, [fail("Vlp_6754")], skill=skill)
        after, report = apply_edits(skill, p.edits)
        assert report.summary() == "1 applied, 0 skipped"
        assert after.body == (
            "# Codes\n\nRewrite the product code you are given.\n\n"
            "## Examples\n\n"
            "Input: tj 192\nOutput: TJ-192\n\n"
            "Input: Vlp_6754\nOutput: VLP-6754\n\n"
            "## Notes\n\n- Reply with the code only.\n"
        )


# ------------------------------------------------------------ propose: no edits
class TestNothingToPropose:
    def test_successes_minibatch(self, tasks):
        p = propose(tasks, [success("tj 192"), success("Vlp_6754")], kind="successes")
        assert p.edits == [] and p.skipped is None and p.calls == 0

    def test_successes_minibatch_ignores_even_a_duplicate_section(self, tasks):
        skill = skill_with("catalogue entry 1234567", "catalogue entry 1234568")
        assert propose(tasks, [success("tj 192")], skill=skill, kind="successes").edits == []

    @pytest.mark.parametrize("budget", [0, -1])
    def test_no_budget(self, tasks, budget):
        skill = skill_with("catalogue entry 1234567", "catalogue entry 1234568")
        assert propose(tasks, [fail("tj 192")], skill=skill, budget=budget).edits == []

    def test_no_failures_and_nothing_to_dedupe(self, tasks):
        assert propose(tasks, [], skill=skill_with("tj 192", "Vlp_6754")).edits == []


# ------------------------------------------------------- propose: what it picks
class TestChoice:
    def test_inputs_already_present_are_not_re_added(self, tasks):
        skill = skill_with("tj 192", "Vlp_6754")
        p = propose(tasks, [fail("tj 192"), fail("Vlp_6754"), fail("#rh.140")], skill=skill)
        assert evidence(p) == ["rh-140"]
        again = propose(tasks, [fail("tj 192")], skill=skill).edits
        assert [e.op for e in again] == ["delete"]  # nothing to add: an ablation instead
        # even with near-duplicate detection off (nothing is "near" above 1)
        never_near = ExemplarOptimizer(near=1.01)
        again = propose(tasks, [fail("tj 192")], skill=skill, optimizer=never_near).edits
        assert [e.op for e in again] == ["delete"]
        assert evidence(propose(tasks, [fail("TJ 192")], skill=skill, optimizer=never_near)) == [
            "tj-192-caps"
        ]

    def test_near_duplicate_of_an_existing_example_is_skipped(self, tasks):
        a, b = "catalogue entry 1234567", "catalogue entry 1234568"
        assert similarity(a, b) >= 0.8
        skill = skill_with(a)
        assert propose(tasks, [fail(b)], skill=skill).edits == []
        # with a stricter notion of "near" it is a new example after all
        strict = ExemplarOptimizer(near=0.9)
        assert evidence(propose(tasks, [fail(b)], skill=skill, optimizer=strict)) == [tid(b)]

    def test_near_duplicate_within_the_batch_is_skipped_even_with_a_new_shape(self, tasks):
        assert similarity("tj 192", "TJ 192") == 1.0 and shape("tj 192") != shape("TJ 192")
        p = propose(tasks, [fail("tj 192"), fail("TJ 192"), fail("Vlp_6754")], budget=4)
        assert evidence(p) == ["tj-192", "vlp-6754"]

    def test_below_near_is_not_a_duplicate(self, tasks):
        assert similarity("uxl685", "uxl684") < 0.8
        skill = skill_with("uxl684")
        assert evidence(propose(tasks, [fail("uxl685")], skill=skill)) == ["uxl685"]

    def test_uncovered_shape_first_even_when_it_comes_later(self, tasks):
        skill = skill_with("tj 192")  # covers 'a 9'
        assert shape("qpx 4471") == shape("tj 192") != shape("#rh.140")
        p = propose(tasks, [fail("qpx 4471"), fail("#rh.140")], skill=skill, budget=1)
        assert evidence(p) == ["rh-140"]
        # with room for both, the new shape still leads and the covered one follows
        p = propose(tasks, [fail("qpx 4471"), fail("#rh.140")], skill=skill, budget=2)
        assert evidence(p) == ["rh-140", "qpx-4471"]

    def test_every_shape_before_a_second_of_any(self, tasks):
        """Round robin over the shapes: a step covers as many kinds of input as it has
        room for before it takes a second example of one kind."""
        same = [fail("tj 192"), fail("qpx 4471"), fail("mw 80")]
        assert len({shape(r.answer) for r in same}) == 1
        p = propose(tasks, [*same, fail("Vlp_6754"), fail("uxl685")], budget=3)
        assert [shape(ITEMS_BY_ID[t]) for t in evidence(p)] == ["a 9", "Aa_9", "a9"]
        p = propose(tasks, [*same, fail("Vlp_6754"), fail("uxl685")], budget=5)
        assert [shape(ITEMS_BY_ID[t]) for t in evidence(p)] == ["a 9", "Aa_9", "a9", "a 9", "a 9"]

    def test_coverage_gain_favours_the_typical_failure_not_yet_covered(self):
        """How much an example of each failure would add to the skill's coverage of the
        failures: one like many others scores high, an outlier low, and failures an
        example already resembles add little."""
        failing = [
            "catalogue entry 1234567",
            "catalogue entry 1234568",
            "catalogue entry 1234569",
            "tj 192",
        ]
        gain = _coverage_gain(failing, [])
        assert gain["catalogue entry 1234568"] > gain["tj 192"]
        covered = _coverage_gain(failing, ["catalogue entry 1234560"])
        assert covered["catalogue entry 1234568"] < gain["catalogue entry 1234568"]
        assert covered["tj 192"] <= gain["tj 192"]

    def test_within_a_shape_the_most_typical_failure_first(self, tasks):
        rollouts = [fail("uxl684"), fail("mw 80"), fail("tj 192"), fail("qpx 4471")]
        # three of shape "a 9" and one "a9"; within "a 9", the highest coverage gain
        gain = _coverage_gain([ITEMS_BY_ID[r.task_id] for r in rollouts], [])
        best = max(("mw 80", "tj 192", "qpx 4471"), key=gain.__getitem__)
        picked = evidence(propose(tasks, rollouts, budget=2))
        assert tid(best) in picked and "uxl684" in picked


# ---------------------------------------------------------- propose: full section
class TestFullSection:
    def test_replaces_the_most_similar_example(self, tasks):
        skill = skill_with("uxl684", "Vlp_6754")
        opt = ExemplarOptimizer(max_examples=2)
        p = propose(tasks, [fail("uxl685")], skill=skill, optimizer=opt)
        assert len(p.edits) == 1
        [e] = p.edits
        assert e.op == "replace"
        assert e.anchor == ex("uxl684") == "Input: uxl684\nOutput: UXL-684"
        assert e.content == ex("uxl685")
        assert e.evidence == ("uxl685",) and e.source == "exemplars"
        after, report = apply_edits(skill, p.edits)
        assert [r.status for r in report.results] == ["applied"]
        assert after.body == (
            "# Codes\n\nRewrite the product code you are given.\n\n"
            "## Examples\n\n"
            "Input: uxl685\nOutput: UXL-685\n\n"
            "Input: Vlp_6754\nOutput: VLP-6754\n"
        )
        assert len(examples_in(after)) == 2

    def test_the_target_depends_on_the_failure(self, tasks):
        skill = skill_with("uxl684", "Vlp_6754")
        opt = ExemplarOptimizer(max_examples=2)
        [e] = propose(tasks, [fail("Vxz_1234")], skill=skill, optimizer=opt).edits
        assert e.op == "replace" and e.anchor == ex("Vlp_6754")

    def test_fills_the_room_left_then_replaces(self, tasks):
        skill = skill_with("uxl684", "tj 192")
        opt = ExemplarOptimizer(max_examples=3)
        p = propose(tasks, [fail("#rh.140"), fail("uxl685")], skill=skill, optimizer=opt)
        assert [(e.op, e.anchor, e.content) for e in p.edits] == [
            ("add", None, ex("#rh.140")),
            ("replace", ex("uxl684"), ex("uxl685")),
        ]
        after, report = apply_edits(skill, p.edits)
        assert report.summary() == "2 applied, 0 skipped"
        assert [e.input for e in examples_in(after)] == ["uxl685", "tj 192", "#rh.140"]

    def test_each_example_is_replaced_at_most_once(self, tasks):
        skill = skill_with("uxl684", "Vlp_6754")
        opt = ExemplarOptimizer(max_examples=2)
        p = propose(tasks, [fail("uxl685"), fail("Vxz_1234")], skill=skill, optimizer=opt)
        assert [(e.op, e.anchor) for e in p.edits] == [
            ("replace", ex("uxl684")),
            ("replace", ex("Vlp_6754")),
        ]
        after, report = apply_edits(skill, p.edits)
        assert all(r.applied for r in report.results)
        assert [e.input for e in examples_in(after)] == ["uxl685", "Vxz_1234"]

    def test_more_picks_than_examples_to_replace(self, tasks):
        opt = ExemplarOptimizer(max_examples=1)
        p = propose(
            tasks,
            [fail("tj 192"), fail("Vlp_6754"), fail("#rh.140")],
            skill=skill_with("uxl684"),
            optimizer=opt,
            budget=3,
        )
        assert [e.op for e in p.edits] == ["replace"]
        assert len(examples_in(apply_edits(skill_with("uxl684"), p.edits)[0])) == 1


# ----------------------------------------------------------------------- dedupe
class TestDedupe:
    A, B, C = "catalogue entry 1234567", "catalogue entry 1234568", "catalogue entry 1234569"

    def test_deletes_the_later_near_duplicate(self, tasks):
        skill = skill_with(self.A, "tj 192", self.B)
        p = propose(tasks, [], skill=skill, budget=2)
        assert len(p.edits) == 1
        [e] = p.edits
        assert (e.op, e.anchor, e.source) == ("delete", ex(self.B), "exemplars")
        assert e.content is None
        after, report = apply_edits(skill, p.edits)
        assert report.results[0].applied
        assert after.body == (
            "# Codes\n\nRewrite the product code you are given.\n\n"
            "## Examples\n\n"
            "Input: catalogue entry 1234567\nOutput: CE-1234567\n\n"
            "Input: tj 192\nOutput: TJ-192\n"
        )

    def test_only_with_budget_left_over(self, tasks):
        skill = skill_with(self.A, self.B)
        p = propose(tasks, [fail("#rh.140")], skill=skill, budget=1)
        assert [e.op for e in p.edits] == ["add"]
        p = propose(tasks, [fail("#rh.140")], skill=skill, budget=2)
        assert [(e.op, e.anchor) for e in p.edits] == [("add", None), ("delete", ex(self.B))]
        after, report = apply_edits(skill, p.edits)
        assert report.summary() == "2 applied, 0 skipped"
        assert [e.input for e in examples_in(after)] == [self.A, "#rh.140"]

    def test_deletes_are_capped_by_the_room(self, tasks):
        skill = skill_with(self.A, self.B, self.C)
        assert [e.anchor for e in propose(tasks, [], skill=skill, budget=1).edits] == [ex(self.B)]
        assert [e.anchor for e in propose(tasks, [], skill=skill, budget=5).edits] == [
            ex(self.B),
            ex(self.C),
        ]


# ----------------------------------------------------------------------- memory
class TestMemory:
    def test_rejected_once_waits_behind_a_fresh_candidate(self, tasks):
        memory = Memory()
        rejected_add(memory, "tj 192")
        rollouts = [fail("tj 192"), fail("Vlp_6754")]
        assert evidence(propose(tasks, rollouts, memory=memory, budget=1)) == ["vlp-6754"]
        assert evidence(propose(tasks, rollouts, memory=memory, budget=2)) == ["vlp-6754", "tj-192"]
        # without the rejection, batch order decides
        assert evidence(propose(tasks, rollouts, budget=1)) == ["tj-192"]

    def test_rejected_once_is_still_possible(self, tasks):
        memory = Memory()
        rejected_add(memory, "tj 192")
        assert evidence(propose(tasks, [fail("tj 192")], memory=memory)) == ["tj-192"]

    def test_rejected_twice_is_never_proposed_again(self, tasks):
        memory = Memory()
        rejected_add(memory, "tj 192", step=1)
        rejected_add(memory, "tj 192", step=3)
        assert propose(tasks, [fail("tj 192")], memory=memory, budget=4).edits == []
        p = propose(tasks, [fail("tj 192"), fail("Vlp_6754")], memory=memory, budget=4)
        assert evidence(p) == ["vlp-6754"]
        # also after the memory went through the run's state (resume)
        restored = Memory.from_dict(json.loads(json.dumps(memory.to_dict())))
        assert propose(tasks, [fail("tj 192")], memory=restored).edits == []

    def test_a_rejected_replace_counts_its_new_example(self, tasks):
        memory = Memory()
        for step in (1, 2):
            memory.reject(
                step,
                [Edit("replace", anchor=ex("uxl684"), content=ex("tj 192"), source="exemplars")],
                -0.1,
                "worse",
            )
        assert propose(tasks, [fail("tj 192")], memory=memory).edits == []
        # the replaced example was not what the candidate held
        assert evidence(propose(tasks, [fail("uxl684")], memory=memory)) == ["uxl684"]

    def test_a_rejected_delete_does_not_count(self, tasks):
        memory = Memory()
        for step in (1, 2):
            memory.reject(
                step, [Edit("delete", anchor=ex("tj 192"), source="exemplars")], -0.1, "worse"
            )
        assert evidence(propose(tasks, [fail("tj 192")], memory=memory)) == ["tj-192"]

    def test_rejection_outranked_by_shape_novelty(self, tasks):
        memory = Memory()
        rejected_add(memory, "#rh.140")
        skill = skill_with("tj 192")  # 'a 9' is covered, '#a.9' is not
        p = propose(tasks, [fail("mw 80"), fail("#rh.140")], skill=skill, memory=memory, budget=1)
        assert evidence(p) == ["rh-140"]

    def test_not_applied_edits_do_not_count_as_rejections(self, tasks):
        memory = Memory()
        for step in (1, 2):
            memory.skip(step, Edit("add", section=SECTION, content=ex("tj 192")), "invalid")
        assert evidence(propose(tasks, [fail("tj 192")], memory=memory)) == ["tj-192"]


# ------------------------------------------------------- never a rejected skill again
def reject_candidate(memory: Memory, skill: Skill, edits: list[Edit], step: int) -> str:
    """Record that the gate rejected the candidate `edits` make of `skill` at `step`, as
    the trainer does; return the candidate's hash."""
    candidate, _ = apply_edits(skill, edits)
    memory.reject(step, edits, 0.0, "tie: no improvement on validation", skill_hash=candidate.hash)
    return candidate.hash


class TestNeverRepeatsARejectedSkill:
    def test_the_same_choice_gives_way_to_the_next(self, tasks):
        memory = Memory()
        rollouts = [fail("tj 192"), fail("Vlp_6754")]
        first = propose(tasks, rollouts, budget=2).edits
        assert evidence(Proposal(first)) == ["tj-192", "vlp-6754"]
        rejected = reject_candidate(memory, skill_with(), first, step=3)
        # each example was rejected once, so both still rank; together they would
        # rebuild step 3's skill, so the lower-ranked one makes way
        p = propose(tasks, rollouts, memory=memory, budget=2)
        assert evidence(p) == ["tj-192"] and p.skipped is None
        assert apply_edits(skill_with(), p.edits)[0].hash != rejected

    def test_a_fresh_failure_takes_the_place(self, tasks):
        memory = Memory()
        first = propose(tasks, [fail("tj 192"), fail("Vlp_6754")], budget=2).edits
        reject_candidate(memory, skill_with(), first, step=1)
        p = propose(tasks, [fail("tj 192"), fail("Vlp_6754"), fail("#rh.140")], memory=memory)
        # the fresh shape first, then the rejected ones, but never both of them together
        assert set(evidence(p)) != {"tj-192", "vlp-6754"}
        assert "rh-140" in evidence(p)

    def test_nothing_new_says_why(self, tasks):
        memory = Memory()
        first = propose(tasks, [fail("tj 192")]).edits
        reject_candidate(memory, skill_with(), first, step=5)
        p = propose(tasks, [fail("tj 192")], memory=memory)
        assert p.edits == []
        assert p.skipped == (
            "no new candidate: every choice of examples for these failures rebuilds a "
            "skill the gate already rejected (step 5)"
        )

    def test_a_rejected_skill_reached_another_way_counts(self, tasks):
        """The memory holds the rejected skill, not the edits: the same skill made by
        other edits (here one example added where two were) is refused too."""
        memory = Memory()
        both = propose(tasks, [fail("tj 192"), fail("Vlp_6754")]).edits
        reject_candidate(memory, skill_with(), both, step=2)
        # the incumbent now holds the first example (accepted at another step)
        skill = skill_with("tj 192")
        p = propose(tasks, [fail("Vlp_6754")], skill=skill, memory=memory)
        assert p.edits == [] and "step 2" in (p.skipped or "")

    def test_a_rejection_without_a_skill_hash_changes_nothing(self, tasks):
        """A checkpoint from before the memory kept hashes: ranking as before."""
        memory = Memory()
        rejected_add(memory, "tj 192")
        assert evidence(propose(tasks, [fail("tj 192")], memory=memory)) == ["tj-192"]

    def test_the_reason_when_every_failure_is_passed_over(self, tasks):
        memory = Memory()
        for step in (1, 2):
            rejected_add(memory, "tj 192", step)
            rejected_add(memory, "mw 80", step)
        skill = skill_with("Vlp_6754")
        p = propose(
            tasks, [fail("tj 192"), fail("mw 80"), fail("Vlp_6754")], skill=skill, memory=memory
        )
        assert p.edits == []
        assert p.skipped == (
            "no example to add for these failures: 2 were rejected twice by the gate; "
            "1 is already an example in the skill"
        )


# ----------------------------------------------------------------------- packing
class TestPacking:
    """The shipped default puts two examples in an edit, so a step's edit budget adds
    up to budget x 2 examples (a skill with none gets a diverse seed of 8 at once)."""

    def test_two_examples_to_an_edit(self, tasks):
        rollouts = [fail(t) for t in ("tj 192", "Vlp_6754", "#rh.140", "uxl685", "TJ 192")]
        p = ExemplarOptimizer().propose(request(tasks, rollouts, budget=2))
        assert [e.op for e in p.edits] == ["add", "add"]
        assert [len(e.evidence) for e in p.edits] == [2, 2]
        assert p.edits[0].rationale.startswith("worked examples for failed cases (input: ")
        after, report = apply_edits(skill_with(), p.edits)
        assert all(r.applied for r in report.results)
        shown = examples_in(after)
        assert len(shown) == 4 and len({shape(e.input) for e in shown}) == 4
        assert [e.input for e in shown] == [ITEMS_BY_ID[t] for t in evidence(p)]

    def test_an_edit_stays_within_its_line_limit(self, tasks):
        rollouts = [fail(t) for t in ("tj 192", "Vlp_6754", "#rh.140")]
        p = ExemplarOptimizer().propose(request(tasks, rollouts, budget=3, max_edit_lines=2))
        assert [len(e.evidence) for e in p.edits] == [1, 1, 1]
        assert all(e.lines <= 2 for e in p.edits)

    def test_a_full_section_takes_one_swap_per_edit(self, tasks):
        skill = skill_with("tj 192", "Vlp_6754")
        optimizer = ExemplarOptimizer(max_examples=3)
        rollouts = [fail(t) for t in ("#rh.140", "uxl685", "catalogue entry 1234567")]
        p = optimizer.propose(request(tasks, rollouts, skill=skill, budget=3))
        assert [e.op for e in p.edits] == ["add", "replace", "replace"]
        assert len(examples_in(apply_edits(skill, p.edits)[0])) == 3


def test_the_exemplars_optimizer_sees_a_steps_failures_in_one_request(e2e):
    """`whole_batch`: the trainer hands all of a step's failures to one call, whatever
    `minibatch_size` says; an LLM-style optimizer still gets minibatches."""
    seen: dict[str, list[int]] = {"whole": [], "mini": []}

    class Whole(ExemplarOptimizer):
        def propose(self, request):
            seen["whole"].append(len(request.rollouts))
            return super().propose(request)

    class Mini(Whole):
        whole_batch = False

        def propose(self, request):
            seen["mini"].append(len(request.rollouts))
            return ExemplarOptimizer.propose(self, request)

    for optimizer in (Whole(), Mini()):
        api.train(
            e2e["skill"],
            e2e["suite"],
            target="scripted/exemplar-target",
            optimizer=optimizer,
            epochs=1,
            batch_size=12,
            minibatch_size=3,
        )
    assert seen["whole"] == [12]  # the first step: every training task fails
    assert seen["mini"] == [3, 3, 3, 3]


# ---------------------------------------------------------------------- ablation
def parroted(text: str, answer: str) -> Rollout:
    """A failure of `text` whose wrong answer is `answer`."""
    return dataclasses.replace(fail(text), answer=answer)


class TestAblation:
    """When nothing is left to add for the failures, one example is taken out, so the
    gate measures what it is worth."""

    def test_nothing_left_to_add_takes_one_example_out(self, tasks):
        skill = skill_with("tj 192", "Vlp_6754", "#rh.140")
        p = propose(tasks, [fail("tj 192"), fail("Vlp_6754")], skill=skill)
        assert p.skipped is None
        assert len(p.edits) == 1
        (edit,) = p.edits
        assert edit.op == "delete" and edit.source == "exemplars"
        assert edit.anchor in {ex("tj 192"), ex("Vlp_6754"), ex("#rh.140")}
        assert edit.rationale.startswith("ablation:")
        after, report = apply_edits(skill, p.edits)
        assert report.applied and len(examples_in(after)) == 2

    def test_an_example_whose_answer_the_model_parrots_goes_first(self, tasks):
        """The model answered VLP-6754 (the Vlp_6754 example's output) to two tasks it
        failed: that example misleads it, whatever the others look like."""
        skill = skill_with("tj 192", "catalogue entry 1234567", "Vlp_6754")
        rollouts = [parroted("tj 192", "VLP-6754"), parroted("catalogue entry 1234567", "VLP-6754")]
        (edit,) = propose(tasks, rollouts, skill=skill).edits
        assert edit.anchor == ex("Vlp_6754")
        assert "gave this example's answer to 2 failed training task" in edit.rationale

    def test_a_stuck_run_takes_an_example_out_before_adding_more(self, tasks):
        """Failures it could still add examples for: a step that is not stuck adds;
        one after `STUCK` unproductive steps on the same skill takes one out first."""
        skill = skill_with("tj 192", "Vlp_6754")
        rollouts = [parroted("catalogue entry 1234567", "VLP-6754"), fail("uxl685")]
        calm = propose(tasks, rollouts, skill=skill)
        assert calm.edits and all(e.op == "add" for e in calm.edits)
        (edit,) = propose(tasks, rollouts, skill=skill, stuck=STUCK).edits
        assert edit.op == "delete" and edit.anchor == ex("Vlp_6754")

    def test_otherwise_the_example_most_like_another(self, tasks):
        skill = skill_with("tj 192", "uxl685", "uxl684", "Vlp_6754")
        rollouts = [fail("tj 192"), fail("uxl685"), fail("uxl684")]
        (edit,) = propose(tasks, rollouts, skill=skill).edits
        assert edit.anchor in {ex("uxl685"), ex("uxl684")}  # the closest pair

    def test_a_rejected_ablation_is_not_proposed_again(self, tasks):
        skill = skill_with("tj 192", "Vlp_6754", "#rh.140")
        rollouts = [parroted("tj 192", "RH-140"), fail("Vlp_6754")]
        memory = Memory()
        first = propose(tasks, rollouts, skill=skill, memory=memory).edits
        assert [e.anchor for e in first] == [ex("#rh.140")]
        reject_candidate(memory, skill, first, step=4)
        second = propose(tasks, rollouts, skill=skill, memory=memory).edits
        assert len(second) == 1 and second[0].op == "delete"
        assert second[0].anchor != ex("#rh.140")

    def test_every_ablation_rejected_says_why_nothing_is_proposed(self, tasks):
        skill = skill_with("tj 192", "Vlp_6754")
        memory = Memory()
        for step in (1, 2):
            edits = propose(tasks, [fail("tj 192")], skill=skill, memory=memory).edits
            assert [e.op for e in edits] == ["delete"]
            reject_candidate(memory, skill, edits, step=step)
        p = propose(tasks, [fail("tj 192")], skill=skill, memory=memory)
        assert p.edits == []
        assert p.skipped == (
            "no example to add for these failures: 1 is already an example in the skill"
        )

    def test_no_ablation_of_a_lone_example(self, tasks):
        p = propose(tasks, [fail("tj 192")], skill=skill_with("tj 192"))
        assert p.edits == [] and "already an example" in (p.skipped or "")

    def test_no_ablation_without_a_failure(self, tasks):
        skill = skill_with("tj 192", "Vlp_6754")
        assert propose(tasks, [], skill=skill).edits == []

    def test_adding_comes_before_ablating(self, tasks):
        skill = skill_with("tj 192", "Vlp_6754")
        p = propose(tasks, [fail("tj 192"), fail("#rh.140")], skill=skill)
        assert [e.op for e in p.edits] == ["add"] and evidence(p) == ["rh-140"]


def test_train_ablates_a_misleading_example(isolated):
    """A skill whose examples cover every failure, one of which misleads the model
    (with it in the skill, the model answers its output to every lower-case code):
    nothing is left to add, so the step takes that example out (its answer is the
    one the failures gave), and the gate keeps the skill without it."""
    items = [
        {"id": "a", "input": "tj 192", "expected": "TJ-192", "split": "train"},
        {"id": "b", "input": "uxl685", "expected": "UXL-685", "split": "train"},
        {"id": "v1", "input": "mw 80", "expected": "MW-80", "split": "val"},
        {"id": "v2", "input": "zq91", "expected": "ZQ-91", "split": "val"},
        {"id": "t1", "input": "bzr 3316", "expected": "BZR-3316", "split": "test"},
    ]
    suite = write_suite(isolated / "tasks" / "codes.yaml", items)
    poison = format_example("qq 00", "QQ-00")
    body = f"{INTRO}\n## Examples\n\n{ex('tj 192')}\n\n{poison}\n\n{ex('uxl685')}\n"
    skill = write_skill(isolated / "skills", "codes", body=body)

    def target(messages) -> str:
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        text = messages[-1]["content"]
        if "Input: qq 00" in system and text.islower():
            return "QQ-00"
        shown = {shape(m.group(1)) for m in re.finditer(r"^Input: (.*)$", system, re.MULTILINE)}
        return canonical(text) if shape(text) in shown else text

    register_model("scripted/misled", ScriptedModel(target))
    try:
        result = api.train(skill, suite, target="scripted/misled", optimizer="exemplars", epochs=1)
    finally:
        unregister_model("scripted/misled")
    s = result.summary
    steps = json.loads((result.run_dir / "state.json").read_text())["steps"]
    step = next(st for st in steps if st["kind"] == "step")
    assert step["decision"] == "accepted"
    (edit,) = [a["edit"] for a in step["apply"]]
    assert edit["op"] == "delete" and edit["anchor"] == poison
    assert "gave this example's answer to 2 failed training task" in edit["rationale"]
    assert (s["initial_val"], s["best_val"]) == (0.0, 1.0)
    best = Skill.load(result.run_dir / "best")
    assert [e.input for e in examples_in(best)] == ["tj 192", "uxl685"]
    assert s["test"]["best"]["mean"] == 1.0


# -------------------------------------------------------------------- multi-line
class TestMultiLinePrompts:
    @pytest.fixture
    def ml_tasks(self, tmp_path):
        return load_tasks(
            tmp_path,
            [{"id": tid(i), "input": i, "expected": e} for i, e in ITEMS.items()],
            prompt="Normalise this product code:\n{input}",
        )

    def test_an_added_example_is_recognised_next_step(self, ml_tasks):
        p = propose(ml_tasks, [fail("tj 192")])
        skill, report = apply_edits(skill_with(), p.edits)
        assert report.results[0].applied
        assert examples_in(skill) == [Example("Normalise this product code:\ntj 192", "TJ-192")]
        assert propose(ml_tasks, [fail("tj 192")], skill=skill).edits == []

    def test_they_count_towards_the_cap(self, ml_tasks):
        opt = ExemplarOptimizer(max_examples=1)
        skill, _ = apply_edits(
            skill_with(), propose(ml_tasks, [fail("tj 192")], optimizer=opt).edits
        )
        [e] = propose(ml_tasks, [fail("Vlp_6754")], skill=skill, optimizer=opt).edits
        assert e.op == "replace"
        assert e.anchor == "Input: Normalise this product code:\ntj 192\nOutput: TJ-192"
        after, report = apply_edits(skill, [e])
        assert report.results[0].applied
        assert [x.input for x in examples_in(after)] == ["Normalise this product code:\nVlp_6754"]

    def test_an_example_over_the_content_limits_is_not_proposed(self, ml_tasks):
        # a 3-line example: over a per-edit limit of 2, and a step limit of 4 takes one
        assert propose(ml_tasks, [fail("tj 192")], max_edit_lines=2).edits == []
        p = propose(ml_tasks, [fail("tj 192"), fail("Vlp_6754")], max_step_lines=4)
        assert evidence(p) == [tid("tj 192")]


# ------------------------------------------------------------------ bundled suites
@pytest.mark.parametrize("suite", ["product-codes", "name-format", "snake-case"])
def test_no_edit_on_a_bundled_suite_is_too_large_for_the_default_limits(suite):
    """Every training task failing at once, at the largest budget: all of exemplars'
    edits stay within the default limits, so none is ever dropped for its size."""
    from pathlib import Path

    from skillopt.optimize.merge import merge_edits

    loaded = load_suite(Path(__file__).resolve().parents[2] / "tasks" / f"{suite}.yaml")
    tasks = {t.id: t for t in loaded.tasks}
    s = Settings(**loaded.defaults)
    train = [t for t in loaded.tasks if t.split == "train"]
    rollouts = [
        Rollout(f"k-{t.id}", t.id, "train", 0, "h", True, 0.0, False, "wrong", "x") for t in train
    ]
    p = ExemplarOptimizer().propose(
        ProposalRequest(Skill.parse(FRONT + INTRO), "failures", rollouts, tasks, s.lr, Memory())
    )
    assert len(p.edits) == s.lr
    merged = merge_edits(
        [p.edits], s.lr, max_edit_lines=s.max_edit_lines, max_step_lines=s.max_step_lines
    )
    assert merged.kept == p.edits and merged.dropped == []


# --------------------------------------------------------------- no model calls
class TestOffline:
    def test_no_calls_and_no_epoch_end_stages(self, tasks):
        opt = ExemplarOptimizer()
        p = opt.propose(request(tasks, [fail("tj 192"), fail("Vlp_6754")]))
        assert p.edits  # it did propose something, for free
        assert p.calls == 0 and p.usage == Usage() and p.cost is None and p.raw == ""
        assert opt.name == "exemplars"
        assert not hasattr(opt, "slow_update")
        assert not hasattr(opt, "meta_notes")

    def test_built_by_name(self):
        assert isinstance(training.build_optimizer("exemplars", Settings()), ExemplarOptimizer)

    def test_proposal_survives_a_checkpoint(self, tasks):
        p = propose(
            tasks,
            [fail("tj 192")],
            skill=skill_with("uxl684"),
            optimizer=ExemplarOptimizer(max_examples=1),
        )
        again = Proposal.from_dict(json.loads(json.dumps(p.to_dict())))
        assert again.edits == p.edits and again.edits[0].op == "replace"


def test_train_never_gates_the_same_skill_twice(isolated):
    """A target no example helps: every candidate is rejected. Before, the second step
    proposed the first step's two examples again and the gate compared the very same
    skill a second time; now each rejected candidate is a different skill, and once
    nothing new is left the step says why."""
    items = [
        {"id": "a", "input": "tj 192", "expected": "TJ-192", "split": "train"},
        {"id": "b", "input": "Vlp_6754", "expected": "VLP-6754", "split": "train"},
        {"id": "v1", "input": "mw 80", "expected": "MW-80", "split": "val"},
        {"id": "v2", "input": "Kcm_6859", "expected": "KCM-6859", "split": "val"},
    ]
    suite = write_suite(isolated / "tasks" / "codes.yaml", items)
    skill = write_skill(isolated / "skills", "codes", body=INTRO)
    register_model("scripted/never-right", ScriptedModel(lambda m: "no idea"))
    try:
        result = api.train(
            skill,
            suite,
            target="scripted/never-right",
            optimizer="exemplars",
            epochs=4,
            batch_size=2,
            stall_patience=0,
        )
    finally:
        unregister_model("scripted/never-right")
    steps = json.loads((result.run_dir / "state.json").read_text())["steps"]
    rejected = [s for s in steps if s["decision"] == "rejected"]
    hashes = [s["skill_hash"] for s in rejected]
    assert len(rejected) == 3
    assert len(set(hashes)) == len(hashes)  # never the same skill twice
    # the first candidate's two examples share one edit (`per_edit`)
    assert [len(s["apply"]) for s in rejected] == [1, 1, 1]
    last = steps[-1]
    assert last["decision"] == "no_candidate"
    assert (
        "no example to add for these failures: 2 were rejected twice by the gate"
        in (last["reason"])
    )


# ------------------------------------------------------------------- end to end
E2E = {  # 6 shapes x 4 items: per shape 2 train, 1 val, 1 test
    "a 9": ["tj 192", "qpx 4471", "mw 80", "bzr 3316"],
    "Aa_9": ["Vlp_6754", "Iyi_7425", "Nu_7418", "Kcm_6859"],
    "#a.9": ["#rh.140", "#cd.4530", "#ddc.8935", "#gz.776"],
    "a9": ["uxl685", "ju6447", "zq91", "mte3302"],
    "A 9": ["DMR 9336", "GOJ 3007", "KX 51", "PLT 880"],
    "a-9": ["giz-7696", "fad-3761", "hb-2290", "wo-12"],
}
SPLITS = ["train", "train", "val", "test"]


def canonical(code: str) -> str:
    m = re.fullmatch(r"#?([A-Za-z]+)[ _.-]?([0-9]+)", code)
    assert m, code
    return f"{m.group(1).upper()}-{m.group(2)}"


@pytest.fixture
def e2e(isolated):
    items, table = [], {}
    for s, inputs in E2E.items():
        for text, split in zip(inputs, SPLITS):
            assert shape(text) == s
            items.append(
                {"id": tid(text), "input": text, "expected": canonical(text), "split": split}
            )
            table[text] = canonical(text)
    suite = write_suite(isolated / "tasks" / "codes.yaml", items)
    skill = write_skill(isolated / "skills", "codes", body=INTRO)

    def target(messages) -> str:
        """Right only when the skill shows a worked example of the task's shape."""
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        text = messages[-1]["content"]
        shown = {shape(m.group(1)) for m in re.finditer(r"^Input: (.*)$", system, re.MULTILINE)}
        return table[text] if shape(text) in shown else text

    model = ScriptedModel(target, name="scripted/exemplar-target")
    register_model("scripted/exemplar-target", model)
    yield {"skill": skill, "suite": suite, "model": model}
    unregister_model("scripted/exemplar-target")


def test_train_end_to_end_with_exemplars(e2e):
    flags = {
        "target": "scripted/exemplar-target",
        "optimizer": "exemplars",
        "epochs": 2,
        "batch_size": 8,
        "slow_update": True,
        "concurrency": 2,
    }
    result = api.train(e2e["skill"], e2e["suite"], **flags)
    s = result.summary
    assert s["status"] == "finished"
    assert s["initial_val"] == 0.0
    assert s["best_val"] > s["initial_val"]
    assert s["best_val"] == 1.0  # every shape got an example
    # 6 shapes and at most 4 edits a step: it takes more than one accepted step
    accepted = [st for st in s["steps"] if st["decision"] == "accepted"]
    assert len(accepted) >= 2 and s["decisions"]["accepted"] == len(accepted)
    vals = [st["val"] for st in accepted]
    assert vals == sorted(set(vals)) and vals[-1] == 1.0
    assert s["accounting"]["optimizer_calls"] == 0
    assert s["accounting"]["optimizer_input_tokens"] == 0
    kinds = [st["kind"] for st in s["steps"]]
    assert "slow_update" not in kinds
    assert set(kinds) == {"initial", "step"}
    assert s["test"]["best"]["mean"] == 1.0 and s["test"]["initial"]["mean"] == 0.0
    assert s["test"]["best"]["n"] == 6
    assert s["accepted_edits"]
    for e in s["accepted_edits"]:
        assert e["source"] == "exemplars" and e["op"] == "add" and e["section"] == SECTION
    best = Skill.load(result.run_dir / "best")
    shown = examples_in(best)
    assert {shape(x.input) for x in shown} == set(E2E)
    assert all(x.output == canonical(x.input) for x in shown)
    assert len(shown) <= ExemplarOptimizer().max_examples
    assert len({x.input for x in shown}) == len(shown)  # no example twice
    # the target was only ever asked tasks; no optimizer prompt reached it
    assert all(
        c.messages[-1]["content"] in {t for v in E2E.values() for t in v}
        for c in e2e["model"].calls
    )
