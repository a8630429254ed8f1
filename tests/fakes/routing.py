"""The routing rule the scripted agents share (standard library only, so the stand-in
CLIs can use it): load the listed skill whose name and description share the most
content words with the request (at least two; a tie goes to the name first in
alphabetical order, so the listing's order does not matter), else none.

It stands for a model's judgment only in that every side applies it to what it was
shown: the router's scripted model to the router's listing, the loopback fakes to the
listing the real CLI sent, the stand-in CLIs to the skills installed where the real
CLI looks (tests/routing_rule.py, tests/fakes/agent_cli.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

STOP = set(
    "a an and any are as at be by can do for from has have i in into is it its me my "
    "of on or our please so that the their them this to use used uses using we when "
    "which with you your ask asks user wants need needs help".split()
)


def words(text: str) -> set[str]:
    """The content words of `text`: lower-cased, stop words dropped, a plural `s` cut."""
    found = set()
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if word in STOP:
            continue
        found.add(word[:-1] if len(word) > 4 and word.endswith("s") else word)
    return found


def choose(query: str, entries: Sequence[tuple[str, str]]) -> str | None:
    """The rule: the entry sharing the most content words with `query` (two at least),
    ties to the alphabetically first name; None for no skill."""
    want = words(query)
    best: tuple[int, str] | None = None
    for name, text in sorted(entries):
        shared = len(want & words(f"{name.replace('-', ' ')} {text}"))
        if shared >= 2 and (best is None or shared > best[0]):
            best = (shared, name)
    return best[1] if best else None
