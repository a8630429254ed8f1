"""One routing rule, applied on both sides of the router-vs-CLI agreement: by a scripted
chat model behind the router harness (`scripted/routing_rule:router`), and by the
loopback fakes of the Anthropic and Responses APIs behind the real `claude` and
`codex` CLIs, each reading the skill listing from the request the CLI sent.

The rule (tests/fakes/routing.py, which the stand-in CLIs apply too): load the listed
skill whose name and description share the most content words with the request (at
least two; ties to the alphabetically first name), else none. It stands for a model's
judgment only in that both sides apply it to what they were shown: agreement measures
the listing (which skills, which words), not how a real model chooses.

The fixture: a skill under test and a library of three skills whose descriptions
overlap it, and eight requests.
"""

from __future__ import annotations

import re
from pathlib import Path

from fakes.routing import choose
from helpers import write_skill, write_suite

LISTING = "The following skills are available for use with the Skill tool:"
_ENTRY = re.compile(r"^- ([^:\s]+): (.*?)(?: \(file: [^)]+\))?$")


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


# ------------------------------------------------------- training the description
# The skill under test starts with a description that shares too few words with most
# of its requests, so the rule loads receipt-scanner (the library's first skill) for
# them instead; GOOD shares more words with each of them than receipt-scanner does.
DESCRIBE_BODY = "# Invoice totals\n\nAdd every line item, then the tax.\n"
DESCRIBE_START = "Checks invoice totals."
DESCRIBE_GOOD = (
    "Adds up invoice line items and tax, sums the receipt line items of an invoice, "
    "and checks invoice totals. Use when an invoice total, sum or tax must be added up "
    "or checked."
)
DESCRIBE_ITEMS = [
    ("t1", "Check the invoice total on this invoice", True, "train"),
    ("t2", "Add up the line items of this receipt for the invoice", True, "train"),
    ("t3", "Extract the line items from this scanned receipt photo", False, "train"),
    ("t4", "Write a haiku about autumn leaves", False, "train"),
    ("v1", "Sum the line items and tax of an invoice", True, "val"),
    ("v2", "Check this invoice total", True, "val"),
    ("v3", "Read the scanned receipt image", False, "val"),
    ("v4", "Clean this messy CSV export", False, "val"),
    ("x1", "Add up the invoice tax and line items", True, "test"),
    ("x2", "Extract line items from receipt photos", False, "test"),
]
# two more held-out queries (one the start already fires on, one for no skill), so
# the test split has a precision and a recall before training as well as after
MORE_HELD_OUT = [
    ("x3", "Check the invoice totals and the tax sum", True, "test"),
    ("x4", "Trim the columns of this CSV file", False, "test"),
]


def write_describe_fixture(root: Path, items=DESCRIBE_ITEMS) -> dict[str, Path]:
    """The skill under test (DESCRIBE_START), a library holding receipt-scanner (its
    description overlaps), and a trigger suite of `items`, under `root`."""
    skill = write_skill(root / "skills", SKILL[0], body=DESCRIBE_BODY, description=DESCRIBE_START)
    name, description = LIBRARY[0]
    write_skill(root / "library", name, description=description)
    suite = write_suite(
        root / "tasks" / "triggers.yaml",
        [{"id": i, "query": q, "should_trigger": t, "split": s} for i, q, t, s in items],
    )
    return {"skill": skill, "library": root / "library", "suite": suite}


def train_description(world: dict[str, Path], harness: str, *extra: str):
    """`skillopt train --part description` of the fixture through `harness`, in process,
    with the `describer` fixture's scripted optimizer: one epoch, one step of the four
    training queries."""
    from typer.testing import CliRunner

    from skillopt.cli.main import app

    args = ["train", world["skill"], "--tasks", world["suite"], "--harness", harness]
    args += ["--optimizer", "scripted/describer", "--part", "description"]
    args += ["--library", world["library"], "--epochs", "1", "--batch-size", "4"]
    return CliRunner().invoke(app, [str(a) for a in [*args, "--concurrency", "3", *extra]])


def run_dir(work: Path, stdout: str) -> Path:
    """The run directory a train's output names (`best skill: runs/<id>/best/SKILL.md`)."""
    best = stdout.split("best skill: ", 1)[1].split("\n", 1)[0]
    return work / best.rsplit("/best/", 1)[0]


def eval_triggers(skill: Path, world: dict[str, Path], harness: str) -> dict:
    """`skillopt eval SKILL` of the fixture's held-out queries through `harness`, as its
    `--json` result."""
    import json

    from typer.testing import CliRunner

    from skillopt.cli.main import app

    args = ["eval", skill, "--tasks", world["suite"], "--harness", harness, "--library"]
    res = CliRunner().invoke(app, [str(a) for a in [*args, world["library"], "--json", "-"]])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)
