"""A starter trigger suite for review (`skillopt tasks triggers --from-library`): requests
that should load the skill, drafted from its own description, and requests that should
not, drafted from the descriptions of the other skills installed beside it (its nearest
competitors for the agent's choice).

How a request is drafted from a description, without any model: each sentence is one
request. A "what" sentence (`Adds up invoice totals.`) becomes a command (`Add up
invoice totals.`: its first verb without the third person's -s); a "when" sentence
(`Use when an invoice total must be checked.`) becomes the situation it names (`An
invoice total must be checked.`); `Use for X` becomes `Help me with X.`. Such drafts
echo the description's own words, so they are easy cases: every item is marked for
review, to be rewritten as a user would ask.

Invariants: the file has the shape of `<stem>-triggers.yaml` (`name`, `items: [{id,
query, should_trigger}]`) with a review comment above each item; nothing is written
over an existing file unless `force`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from skillopt.errors import InputError
from skillopt.skill.document import Skill
from skillopt.skill.library import Library

PER_SKILL = 3  # requests drafted from one description at most
_WHEN = re.compile(
    r"^(?:use|invoke|trigger|load)(?: (?:this|the|it)(?: skill)?)? (when|if|whenever|for|to)\b\s*",
    re.I,
)


@dataclass(frozen=True)
class TriggerItem:
    id: str
    query: str
    should_trigger: bool
    source: str  # the skill whose description it was drafted from


@dataclass(frozen=True)
class TriggerDraft:
    """What `tasks triggers` wrote: the file, its items, the library skills used."""

    path: Path
    skill: str
    items: tuple[TriggerItem, ...]
    library: tuple[str, ...]
    skipped: tuple[str, ...] = ()  # the library's skills left out, and why

    @property
    def positives(self) -> int:
        return sum(i.should_trigger for i in self.items)

    @property
    def negatives(self) -> int:
        return len(self.items) - self.positives


def requests(description: str, limit: int = PER_SKILL) -> list[str]:
    """Requests drafted from a description, one per sentence (see the module's note)."""
    found: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+", " ".join(description.split())):
        text = sentence.strip().rstrip(".!? ")
        if len(text) < 3:
            continue
        when = _WHEN.match(text)
        if when is not None:
            rest = text[when.end() :]
            text = f"Help me with {rest}" if when.group(1).lower() == "for" else rest
        else:
            text = _imperative(text)
        query = text[:1].upper() + text[1:] + "."
        if query not in found:
            found.append(query)
    return found[:limit]


def _imperative(text: str) -> str:
    """`Adds up totals` as a command: `Add up totals` (the first word's -s or -es)."""
    first, _, rest = text.partition(" ")
    low = first.lower()
    if re.fullmatch(r"[a-z]+(?:ss|us|is)", low) or not low.endswith("s") or len(low) < 4:
        return text
    if re.search(r"(?:ches|shes|sses|xes|zes)$", low):
        first = first[:-2]
    elif low.endswith("ies"):
        first = first[:-3] + "y"
    else:
        first = first[:-1]
    return f"{first} {rest}".strip()


def draft(skill: Skill, library: Library, path: Path) -> TriggerDraft:
    """The starter items: the skill's own requests should trigger it, each library
    skill's should not."""
    if not skill.description.strip():
        raise InputError(
            "has no description to draft requests from", path=skill.root, field="description"
        )
    library.check_against([skill])
    items = [
        TriggerItem(f"should-{n}", q, True, skill.name)
        for n, q in enumerate(requests(skill.description), 1)
    ]
    for other in library.skills:
        items.extend(
            TriggerItem(f"not-{other.name}-{n}", q, False, other.name)
            for n, q in enumerate(requests(other.description, limit=2), 1)
        )
    return TriggerDraft(path, skill.name, tuple(items), library.names, library.warnings)


def render(found: TriggerDraft) -> str:
    """The trigger suite as YAML, with a comment above each item saying where it came
    from and that it awaits review."""
    lines = [
        f"# A starter trigger suite for {found.skill}, drafted by `skillopt tasks triggers`",
        "# from skill descriptions alone. REVIEW EVERY ITEM: rewrite each query as a",
        "# user would ask, keep the ones you agree with, add the near misses you know.",
        yaml.safe_dump({"name": f"{found.skill}-triggers"}, sort_keys=False).rstrip(),
        "items:",
    ]
    for item in found.items:
        why = "should load it" if item.should_trigger else "another skill's job"
        lines.append(f"  # review: from the description of {item.source} ({why})")
        entry = {"id": item.id, "query": item.query, "should_trigger": item.should_trigger}
        dumped = yaml.safe_dump([entry], sort_keys=False, allow_unicode=True, width=100)
        lines.extend("  " + line for line in dumped.rstrip().splitlines())
    return "\n".join(lines) + "\n"


def write(found: TriggerDraft, *, force: bool = False) -> None:
    if found.path.exists() and not force:
        raise InputError(
            "already exists: choose another -o, or pass --force to replace it",
            path=found.path,
        )
    found.path.parent.mkdir(parents=True, exist_ok=True)
    found.path.write_text(render(found), encoding="utf-8")
