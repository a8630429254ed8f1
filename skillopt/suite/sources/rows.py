"""Rows of a table or dataset made items: which field is which (named, or guessed
from the usual names: `input`, `question`, `prompt`, …, compared without case,
spaces, `_` or `-`), the expected answer and the id likewise, a split pinned by a
split field, every other field kept in `metadata`.

Invariants: rows are numbered from 1 in the order they are read, so a row without an
id gets `<stem>-<row>` (zero-padded to four digits) whatever is added after it; a
row with an empty input is skipped with its place and reason; a named field that is
missing, a duplicate id or a bad split is one `InputError` naming the source, the
row and the field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillopt._util.text import clean, clip, did_you_mean
from skillopt.errors import InputError
from skillopt.suite.sources.records import FieldMap, Imported, Skipped

# the names a field is guessed from when the mapping does not name it, best first
GUESSES: dict[str, tuple[str, ...]] = {
    "input": (
        "input", "question", "prompt", "query", "instruction", "text", "problem",
        "request", "inputs", "user_input", "message", "content", "source",
    ),
    "expected": (
        "expected", "answer", "target", "output", "label", "expected_output",
        "ideal", "expected_answer", "correct_answer", "reference", "gold",
        "ground_truth", "solution", "response", "completion", "targets",
    ),
    "id": (
        "id", "_id", "qid", "uid", "uuid", "task_id", "item_id", "example_id",
        "sample_id", "question_id", "idx", "key",
    ),
}  # fmt: skip
# what a split column may say, and the split each word pins
SPLIT_WORDS = {
    "train": "train",
    "training": "train",
    "val": "val",
    "validation": "val",
    "valid": "val",
    "dev": "val",
    "test": "test",
    "testing": "test",
}


@dataclass(frozen=True)
class Columns:
    """The columns an item's parts come from (several for a mapping input)."""

    input: tuple[str, ...]
    expected: str | None
    id: str | None
    split: str | None

    def used(self) -> set[str]:
        return {*self.input, *(c for c in (self.expected, self.id, self.split) if c)}


def rows_to_items(
    rows: Iterable[tuple[str, int, dict[str, Any]]],
    columns: Sequence[str],
    fields: FieldMap,
    source: Path | str,
    kind: str,
    stem: str,
    *,
    pins: Mapping[str, str] | None = None,
    notes: Sequence[str] = (),
) -> Imported:
    """Items from `(part, row number, record)` rows whose fields are `columns`: ids
    `<stem>-<row>` (`<stem>-<part>-<row>` when `part` is not empty) unless an id
    column says; `pins` pins a part's items to a split (a Hugging Face split's), where
    no split column does."""
    cols = resolve_columns(columns, fields, source)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-.") or "item"
    items: list[dict[str, Any]] = []
    skipped: list[Skipped] = []
    seen: dict[str, str] = {}
    for part, number, record in rows:
        where = f"{part} row {number}" if part else f"row {number}"
        item = _item(record, cols, where, source)
        if isinstance(item, Skipped):
            skipped.append(item)
            continue
        if cols.id:
            item_id = item.pop("id")
        else:
            item_id = f"{stem}-{part}-{number:04d}" if part else f"{stem}-{number:04d}"
        if item_id in seen:
            raise _row_error(
                source, where, cols.id or "id", f"duplicate id {item_id!r} (also {seen[item_id]})"
            )
        seen[item_id] = where
        if pins and part in pins and "split" not in item:
            item["split"] = pins[part]
        items.append({"id": item_id, **item})
    out_notes = list(notes)
    if cols.expected is None:
        guesses = ", ".join(GUESSES["expected"][:4])
        out_notes.append(
            f"no expected answers: no field is named like {guesses}, …; "
            "name one with --expected COL (or a judge or command scorer needs none)"
        )
    return Imported(
        source=str(source),
        kind=kind,
        items=tuple(items),
        prompt=_prompt(cols.input),
        skipped=tuple(skipped),
        notes=tuple(out_notes),
    )


def resolve_columns(columns: Sequence[str], fields: FieldMap, source: Path | str) -> Columns:
    """Which columns hold the input, expected answer, id and split: the named ones
    (each must exist), the rest guessed from `GUESSES`."""
    names = [c for c in columns if isinstance(c, str)]
    if not names:
        raise InputError("the table has no columns", path=source)
    taken: set[str] = set()
    if fields.input:
        inputs = _named_input(fields.input, names, source)
    else:
        guess = _guess("input", names, taken)
        if guess is None:
            raise InputError(
                f"cannot tell which field is the input (fields: {_listing(names)}); "
                "name it with --input COL (or `mapping: {input: COL}`)",
                path=source,
                field="input",
            )
        inputs = (guess,)
    taken.update(inputs)
    split = _named(fields.split, names, source, "split") if fields.split else None
    taken.update([split] if split else [])
    ident = _named(fields.id, names, source, "id") if fields.id else _guess("id", names, taken)
    taken.update([ident] if ident else [])
    expected = (
        _named(fields.expected, names, source, "expected")
        if fields.expected
        else _guess("expected", names, taken)
    )
    return Columns(inputs, expected, ident, split)


def _prompt(inputs: tuple[str, ...]) -> str:
    """The prompt template for an input of several columns: each on its own line,
    `Question: {Question}`; one whose name cannot be a slot leaves the input whole."""
    if len(inputs) == 1 or not all(re.fullmatch(r"\w[\w ]*", c) for c in inputs):
        return "{input}"
    return "\n".join(f"{c}: {{{c}}}" for c in inputs)


def _named(name: str, names: Sequence[str], source: Path | str, role: str) -> str:
    if name in names:
        return name
    folded = [c for c in names if _fold(c) == _fold(name)]
    if len(folded) == 1:  # `--input question` for a `Question` column
        return folded[0]
    hint = did_you_mean(name, names)
    raise InputError(
        f"no field {name!r}{'; ' + hint if hint else ''} (fields: {_listing(names)})",
        path=source,
        field=role,
    )


def _named_input(spec: str, names: Sequence[str], source: Path | str) -> tuple[str, ...]:
    """One column, or several written `a,b`: the input is then a mapping whose keys
    are slots of the prompt template."""
    if spec in names or "," not in spec:
        return (_named(spec, names, source, "input"),)
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    return tuple(dict.fromkeys(_named(p, names, source, "input") for p in parts))


def _guess(role: str, names: Sequence[str], taken: set[str]) -> str | None:
    by_fold: dict[str, str] = {}
    for name in names:
        by_fold.setdefault(_fold(name), name)
    for candidate in GUESSES[role]:
        found = by_fold.get(_fold(candidate))
        if found is not None and found not in taken:
            return found
    return None


def _fold(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", name).casefold()


def _listing(names: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", … ({len(names)} in all)" if len(names) > limit else "")


def _item(
    record: dict[str, Any], cols: Columns, where: str, source: Path | str
) -> dict[str, Any] | Skipped:
    """The item of one record, its id under "id" when an id column names it."""
    if len(cols.input) == 1:
        value = record.get(cols.input[0])
        if _empty(value):
            return Skipped(where, "empty input")
    else:
        value = {c: "" if record.get(c) is None else record.get(c) for c in cols.input}
        if all(_empty(v) for v in value.values()):
            return Skipped(where, "empty input")
    item: dict[str, Any] = {}
    if cols.id:
        raw_id = record.get(cols.id)
        if _empty(raw_id) or isinstance(raw_id, (dict, list)):
            raise _row_error(source, where, cols.id, "an id must be a non-empty text or number")
        item["id"] = str(raw_id).strip()
    item["input"] = value
    if cols.expected:
        expected = record.get(cols.expected)
        if _empty(expected):
            return Skipped(where, "empty expected answer")
        item["expected"] = expected
    if cols.split:
        word = record.get(cols.split)
        if not _empty(word):
            pinned = SPLIT_WORDS.get(str(word).strip().casefold())
            if pinned is None:
                raise _row_error(
                    source,
                    where,
                    cols.split,
                    f"{str(word)[:40]!r} is not a split; use train, val (validation, "
                    "valid, dev) or test, or leave it empty",
                )
            item["split"] = pinned
    used = cols.used()
    metadata = {str(k): v for k, v in record.items() if k not in used and not _empty(v)}
    if metadata:
        item["metadata"] = metadata
    return item


def _empty(value: Any) -> bool:
    """None, blank text, or NaN (how pandas and datasets write a missing number)."""
    if isinstance(value, str):
        return not value.strip()
    return value is None or (isinstance(value, float) and value != value)


def _row_error(source: Path | str, where: str, column: str, message: str) -> InputError:
    return InputError(f"{where}: {message}", path=source, field=column)


def plain(value: Any) -> Any:
    """`value` as plain data a suite file can hold: every string (keys too) `clean`,
    tuples as lists, anything else that is not JSON's (a date, bytes, an image a
    dataset decoded) as its text, cut short. Nesting is bounded already."""
    if isinstance(value, str):
        return clean(value)[0]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, dict):
        return {clean(str(k))[0]: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return clean(clip(str(value), 200))[0]
