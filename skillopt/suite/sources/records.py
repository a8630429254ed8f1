"""What reading a task source gives: the items in a suite's shape, what was skipped
and why, and the suite file written from them.

Invariant: `Imported.suite()` is a mapping the suite loader accepts as it is (the
same keys a suite file has), so an import written with `write_suite` and a source
read directly as `--tasks SOURCE` give the same tasks.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class FieldMap:
    """Which of a source's fields hold an item's parts; None: the reader guesses
    (`input`, `question`, `prompt`, … for the input; `expected`, `answer`, `target`,
    … for the expected answer; `id` for the id, else the row's number)."""

    input: str | None = None
    expected: str | None = None
    id: str | None = None
    split: str | None = None  # a field pinning an item to train, val or test
    subset: str | None = None  # which part of the source: a dataset's split ("test")
    # keep an item some of whose checks have no skillopt scorer (a promptfoo
    # `javascript` assert), scored by the checks that do map, instead of skipping it
    keep_unscored: bool = False


@dataclass(frozen=True)
class Skipped:
    """A row of the source that made no item: where it is and why."""

    where: str  # "row 12", "tests[3]", "sample 7"
    reason: str


@dataclass(frozen=True)
class Imported:
    """A source's items in a suite's shape, before the suite loader checks them."""

    source: str  # what was read, for messages
    kind: str  # one of `sources.KINDS`
    items: tuple[dict[str, Any], ...]  # {id, input, expected?, scorer?, split?, metadata?, files?}
    prompt: str = "{input}"
    scorer: str | dict[str, Any] = "exact"
    description: str = ""
    judge: str | None = None
    skipped: tuple[Skipped, ...] = ()
    # trigger evals ({id, query, should_trigger}): whether the skill should load for a
    # query, kept apart from the tasks (a trigger suite scores loading, not answers)
    triggers: tuple[dict[str, Any], ...] = ()
    notes: tuple[str, ...] = ()  # anything else the user should know, one line each

    @property
    def rows(self) -> tuple[dict[str, Any], ...]:
        """The items a suite of this source is made of: its tasks or, when it holds
        only trigger evals (a skill-creator trigger-eval file), its trigger queries."""
        return self.items or self.triggers

    def suite(self, name: str) -> dict[str, Any]:
        """The suite file's mapping, keys in the order a person reads them: a trigger
        suite (name, description, items) when the source holds only trigger evals."""
        out: dict[str, Any] = {"name": name}
        if self.description:
            out["description"] = self.description
        if not self.items and self.triggers:
            out["items"] = [dict(item) for item in self.triggers]
            return out
        out["prompt"] = self.prompt
        out["scorer"] = self.scorer
        if self.judge:
            out["judge"] = self.judge
        out["items"] = [dict(item) for item in self.items]
        return out

    def scorers_used(self) -> Counter[str]:
        """How many items each scorer type scores (an item without its own scorer
        uses the suite's)."""
        default = _scorer_type(self.scorer)
        return Counter(
            _scorer_type(item["scorer"]) if item.get("scorer") is not None else default
            for item in self.items
        )


def _scorer_type(spec: str | dict[str, Any]) -> str:
    return spec if isinstance(spec, str) else str(spec.get("type", "?"))


# libyaml's emitter when present: a suite of 20,000 items (or a harvest of thousands
# of candidates) is written in a second instead of half a minute
_BASE: type[yaml.SafeDumper | yaml.CSafeDumper] = (
    yaml.CSafeDumper if yaml.__with_libyaml__ else yaml.SafeDumper
)


class _Dumper(_BASE):  # type: ignore[misc,valid-type]
    """Block style for text with line breaks, so a prompt reads as it was written."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None  # the emitter quotes what a block cannot hold
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def dump(mapping: dict[str, Any]) -> str:
    """A suite (or trigger suite, or review file) mapping as YAML text, keys in their
    order."""
    return yaml.dump(mapping, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def write_suite(imported: Imported, path: Path, name: str | None = None) -> list[Path]:
    """Write the suite file at `path` (named `name`, else the file's stem) and, when
    the source held trigger evals, a trigger suite beside it (`<stem>-triggers.yaml`);
    the paths written, the suite first."""
    name = name or path.stem
    path.parent.mkdir(parents=True, exist_ok=True)
    written = []
    triggers = path.with_name(f"{path.stem}-triggers{path.suffix or '.yaml'}")
    if imported.items:
        suite = imported.suite(name)
        if imported.triggers:  # named, so `train --part both` finds them
            items = suite.pop("items")
            suite.update(triggers=triggers.name, items=items)
        path.write_text(dump(suite), encoding="utf-8")
        written.append(path)
    if imported.triggers:
        body = {"name": f"{name}-triggers", "items": [dict(t) for t in imported.triggers]}
        triggers.write_text(dump(body), encoding="utf-8")
        written.append(triggers)
    return written


def common_scorer(items: list[dict[str, Any]]) -> str | dict[str, Any]:
    """The scorer spec most `items` name, which a suite then names once (each item
    naming it drops its own); `exact` when none names one. Only a spec two items or
    more share is moved up, and only when every item names one (an item without
    one is scored by the default, which must stay `exact` for it)."""
    specs: dict[str, str | dict[str, Any]] = {}
    counts: Counter[str] = Counter()
    for item in items:
        if item.get("scorer"):
            key = json.dumps(item["scorer"], sort_keys=True, default=str)
            specs.setdefault(key, item["scorer"])
            counts[key] += 1
    spec: str | dict[str, Any] = "exact"
    if counts and all(item.get("scorer") for item in items):
        key, count = counts.most_common(1)[0]
        spec = specs[key] if count >= 2 else spec
    for item in items:
        if item.get("scorer") == spec:
            del item["scorer"]
    return spec
