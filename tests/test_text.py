"""`clip` keeps the start of a text and `tail` its end; each marks a cut and leaves
a text that fits as it is."""

from __future__ import annotations

from skillopt._util.text import clip, tail


def test_clip_leaves_a_text_that_fits():
    assert clip("abc", 3) == "abc"
    assert clip("", 0) == ""


def test_clip_keeps_the_start_and_marks_the_cut():
    assert clip("abcdef", 3) == "abc…"


def test_clip_marker_can_say_how_much_was_cut():
    assert clip("abcdef", 2, "…[truncated {cut} chars]") == "ab…[truncated 4 chars]"
    assert clip("abcdef", 4, "\n… (truncated)") == "abcd\n… (truncated)"


def test_clip_does_not_strip():
    assert clip("  ab  ", 10) == "  ab  "
    assert clip("  abcdef", 3) == "  a…"


def test_tail_keeps_the_end_of_the_stripped_text():
    assert tail("  abcdef \n", 3) == "…def"
    assert tail(" abc \n", 3) == "abc"


def test_did_you_mean():
    from skillopt._util.text import did_you_mean

    assert did_you_mean("scorrer", ["name", "scorer", "split"]) == "did you mean 'scorer'?"
    assert did_you_mean("valid", ["seed", "train", "val", "test"]) == "did you mean 'val'?"
    assert did_you_mean("Input", ["id", "input"]) == "did you mean 'input'?"  # case ignored
    assert did_you_mean("zzz", ["name", "scorer"]) == ""
    assert did_you_mean("x", []) == ""
