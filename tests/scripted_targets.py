"""Scripted target models referenced by name (`scripted/scripted_targets:<fn>`) in
CLI tests and benchmarks. Each is `(messages) -> str`."""

from __future__ import annotations

import itertools
import os
import re
import time
from pathlib import Path

from skillopt.errors import ModelError


def _system(messages) -> str:
    return next((m["content"] for m in messages if m["role"] == "system"), "")


def upper(messages):
    return messages[-1]["content"].upper()


def follows_skill(messages):
    """Upper-cases only when the skill says so; otherwise echoes the input."""
    text = messages[-1]["content"]
    return text.upper() if "capitals" in _system(messages) else text


def zero_latency(messages):
    return "A"


_gated_calls = itertools.count()  # next() on it is atomic under the GIL


def gated(messages):
    """Answers "A": the first 6 calls in this process at once, every later one only
    once the file `$SKILLOPT_TEST_GATE` exists. A test interrupts the run while
    those wait and opens the gate after, so the run is stopped at a known point
    however slow the machine (a fixed nap raced the test's Ctrl-C under load)."""
    if next(_gated_calls) >= 6:
        gate = Path(os.environ["SKILLOPT_TEST_GATE"])
        deadline = time.monotonic() + 600  # a test that never opens it fails, not hangs
        while not gate.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    return "A"


def always_down(messages):
    raise ModelError("provider unavailable (503)", kind="server")


def follows_skill_but_boom_fails(messages):
    """Like `follows_skill`, but an input containing 'boom' is a provider failure."""
    if "boom" in messages[-1]["content"]:
        raise ModelError("provider unavailable (503)", kind="server")
    return follows_skill(messages)


def learns_from_examples(messages):
    """A paced target (20 ms a call, so a live display draws a few frames) that
    answers in capitals once the skill shows worked examples (`Output: …`), and
    echoes the input before: the `exemplars` optimizer can improve it."""
    time.sleep(0.02)
    text = messages[-1]["content"]
    return text.upper() if "Output: " in _system(messages) else text


_UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen".split()
_UNITS += "fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def _one_word(word: str) -> int | None:
    if word in _UNITS:
        return _UNITS.index(word)
    return _TENS.index(word) * 10 if word in _TENS[2:] else None


def numbers_by_example(messages):
    """`skillopt init`'s example task as a learner would do it: a number of one word
    it writes in digits, a hyphenated one (forty-two) only once the skill shows a
    worked example of one (`Input: sixty-one`), anything longer it echoes."""
    text = messages[-1]["content"].strip()
    if " " not in text and "-" not in text:
        value = _one_word(text)
        return text if value is None else str(value)
    shown = re.search(r"^Input: [a-z]+-[a-z]+$", _system(messages), re.M)
    tens, _, unit = text.partition("-")
    if shown and " " not in text and _one_word(tens) is not None and _one_word(unit) is not None:
        return str(_one_word(tens) + _one_word(unit))
    return text
