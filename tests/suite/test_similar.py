"""Near-duplicate texts: exact against a brute-force comparison, numbers kept apart."""

from __future__ import annotations

import itertools
import random
import string

import pytest

from skillopt.suite.similar import groups, near_duplicates, normalise, similarity


def test_case_punctuation_and_spacing_do_not_make_a_new_task():
    assert normalise("  Fix   the TEST, please!! ") == "fix the test please"
    assert near_duplicates(["Fix the test, please", "fix the  TEST please!", "unrelated"]) == [
        (0, 1, 1.0)
    ]


def test_a_changed_number_is_another_task():
    texts = [
        "Add 234 and 567, then halve the result and write it out in words, with no digits at all, please.",
        "Add 234 and 568, then halve the result and write it out in words, with no digits at all, please.",
    ]
    assert similarity(*texts) > 0.9
    assert near_duplicates(texts) == []


def test_the_search_finds_exactly_the_pairs_a_full_comparison_finds():
    rng = random.Random(3)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 8))) for _ in range(400)]
    texts = [" ".join(rng.choices(words, k=rng.randint(3, 40))) for _ in range(150)]
    # copies with one word changed, one dropped, one case change
    texts += [t.replace(t.split()[0], "zq", 1) for t in texts[:15]]
    texts += [" ".join(t.split()[1:]) for t in texts[15:25]]
    texts += [t.upper() for t in texts[25:30]]
    for threshold in (0.6, 0.8, 0.9):
        brute = [
            (i, j)
            for i, j in itertools.combinations(range(len(texts)), 2)
            if similarity(texts[i], texts[j]) >= threshold
        ]
        found = [(i, j) for i, j, _ in near_duplicates(texts, threshold)]
        assert found == brute
        assert len(brute) >= 5  # the planted copies are found, so the check is not empty


def test_groups_join_transitively_and_leave_singletons_out():
    texts = ["alpha beta gamma delta", "alpha beta gamma delta!", "ALPHA beta gamma delta", "x y"]
    assert groups(texts) == [[0, 1, 2]]
    assert groups(["", "", "z"]) == []  # empty texts are nobody's duplicate


def test_a_threshold_outside_the_unit_interval_is_refused():
    with pytest.raises(ValueError, match="threshold"):
        near_duplicates(["a"], 0)
