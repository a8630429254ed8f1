"""One routing rule, applied on both sides of the router-vs-CLI agreement: by a scripted
chat model behind the router harness (`scripted/routing_rule:router`), and by the
loopback fakes of the Anthropic and Responses APIs behind the real `claude` and
`codex` CLIs, each reading the skill listing from the request the CLI sent.

The rule: load the listed skill whose name and description share the most content
words with the request (at least two; a tie goes to the name first in alphabetical
order, so the listing's order does not matter), else none. It stands for a model's
judgment only in that both sides apply it to what they were shown: agreement measures
the listing (which skills, which words), not how a real model chooses.

The fixture: a skill under test and a library of three skills whose descriptions
overlap it, and eight requests.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from helpers import write_skill, write_suite

LISTING = "The following skills are available for use with the Skill tool:"
STOP = set(
    "a an and any are as at be by can do for from has have i in into is it its me my "
    "of on or our please so that the their them this to use used uses using we when "
    "which with you your ask asks user wants need needs help".split()
)
_ENTRY = re.compile(r"^- ([^:\s]+): (.*?)(?: \(file: [^)]+\))?$")


def words(text: str) -> set[str]:
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


def parse_listing(text: str) -> list[tuple[str, str]]:
    """(name, description) of every `- name: description` line (codex's `(file: …)`
    tail dropped) in `text`."""
    out = []
    for line in text.splitlines():
        found = _ENTRY.match(line.strip())
        if found:
            out.append((found.group(1), found.group(2)))
    return out


def router(messages) -> str:
    """The scripted chat model behind the router harness: the rule on the listing in its
    system message, answered as a model might, in a sentence."""
    system = next(m["content"] for m in messages if m["role"] == "system")
    listing = system.split(LISTING, 1)[1] if LISTING in system else ""
    chosen = choose(messages[-1]["content"], parse_listing(listing))
    return f"I would load `{chosen}`." if chosen else "None of these skills fits."


# ------------------------------------------------------------------ the fixture
SKILL = (
    "invoice-totals",
    "Adds up invoice line items and checks invoice totals. Use when an invoice total "
    "or tax sum must be checked.",
)
LIBRARY = (
    (
        "receipt-scanner",
        "Reads scanned receipt images and extracts line items. Use for receipt photos.",
    ),
    (
        "tax-forms",
        "Fills in tax forms and explains tax deadlines. Use when a tax form is due.",
    ),
    (
        "csv-cleaner",
        "Cleans CSV files, trims columns and fixes dates. Use for messy CSV exports.",
    ),
)
QUERIES = (
    ("q1", "Check the invoice total on this invoice, the tax sum looks wrong"),
    ("q2", "Extract the line items from this scanned receipt photo"),
    ("q3", "When is my tax form due and which tax deadlines apply?"),
    ("q4", "Clean this messy CSV export, the dates are broken"),
    ("q5", "Write a haiku about autumn leaves"),
    ("q6", "Add up the invoice line items and check the total"),
    ("q7", "The receipt line items do not match the invoice total"),
    ("q8", "Trim the columns of this CSV file"),
)


def write_fixture(root: Path) -> tuple[Path, Path, Path]:
    """(the skill under test, the library folder, the suite of the queries) under
    `root`. Items are ordinary tasks whose expected answer is the skill the rule picks
    (or `none`): the router answers with its choice."""
    skill = write_skill(root / "skills", SKILL[0], description=SKILL[1])
    for name, description in LIBRARY:
        write_skill(root / "library", name, description=description)
    items = [
        {"id": qid, "input": q, "expected": choose(q, (SKILL, *LIBRARY)) or "none", "split": "test"}
        for qid, q in QUERIES
    ]
    suite = write_suite(root / "tasks" / "routing.yaml", items, scorer="exact")
    return skill, root / "library", suite
