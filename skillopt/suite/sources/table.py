"""CSV/TSV and JSON/JSONL tables with arbitrary field names, read with a field mapping.

A CSV (or TSV) is read by the csv module (quoted fields holding commas, quotes and
line breaks; a UTF-8 byte-order mark; `\r\n` line ends), a JSON table is a list of
objects or an object holding one such list, a JSONL holds one object a line; the
rows become items as `rows.rows_to_items` makes them.

Invariants: a CSV or JSONL is read one row at a time (a CSV's header is not a row);
every string read is `clean` (no NUL, no lone surrogate), so whatever the file holds
can be written back as a suite; a file that cannot be read is one `InputError`
naming it and the row.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from skillopt._util.text import clean
from skillopt.errors import InputError
from skillopt.suite import limits
from skillopt.suite.sources.records import FieldMap, Imported
from skillopt.suite.sources.rows import plain, rows_to_items


def read_table(path: Path, kind: str, fields: FieldMap) -> Imported:
    """The items of the CSV, TSV, JSON or JSONL table at `path` (`kind` says which)."""
    if fields.subset:
        raise InputError(
            "a table has no parts to choose from; --subset names a dataset's split",
            path=path,
            field="subset",
        )
    if not path.is_file():
        raise InputError("no such file", path=path)
    if kind in ("csv", "tsv"):
        try:
            stream = path.open("rb")
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", path=path) from None
        with stream:
            columns, rows = _csv_rows(path, stream, "\t" if kind == "tsv" else ",")
            return rows_to_items(rows, columns, fields, path, kind, stem=path.stem)
    if kind == "json":
        columns, rows = _json_rows(path)
    else:
        columns, rows = _jsonl_rows(path)
    return rows_to_items(rows, columns, fields, path, kind, stem=path.stem)


# ------------------------------------------------------------------------ readers
def _csv_rows(
    path: Path, stream: BinaryIO, delimiter: str
) -> tuple[list[str], Iterator[tuple[str, int, dict[str, Any]]]]:
    """The header's names and the rows, read lazily from the open file."""
    reader = csv.reader(_lines(path, stream), delimiter=delimiter)
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise InputError(f"the header: {exc}", path=path) from None
    if not header or not any(h.strip() for h in header):
        raise InputError("no header row: the first line must name the columns", path=path)
    names = [clean(h.strip())[0] for h in header]
    dupes = sorted({n for n in names if n and names.count(n) > 1})
    if dupes:
        raise InputError(f"the header names {dupes[0]!r} twice", path=path, field=dupes[0])

    def rows() -> Iterator[tuple[str, int, dict[str, Any]]]:
        number = 0
        while True:
            try:
                values = next(reader, None)
            except csv.Error as exc:
                raise InputError(f"row {number + 1}: {exc}", path=path) from None
            if values is None:
                return
            if not any(v.strip() for v in values):
                continue  # a blank line, as spreadsheets leave at the end
            number += 1
            if len(values) > len(names):
                raise InputError(
                    f"row {number}: {len(values)} fields, but the header names "
                    f"{len(names)} (a {'tab' if delimiter == chr(9) else 'comma'} "
                    "inside a field must be quoted)",
                    path=path,
                )
            # a line break inside a quoted field is written \r\n by spreadsheets
            yield "", number, {n: _cell(v) for n, v in zip(names, values) if n}

    return [n for n in names if n], rows()


def _lines(path: Path, stream: BinaryIO) -> Iterator[str]:
    """The file's lines, line ends kept (the csv module reads line breaks inside
    quoted fields from them), each decoded alone so that bad UTF-8 is placed on its
    line; a byte-order mark before the header dropped."""
    for number, raw in enumerate(stream, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"not valid UTF-8 (byte {exc.start + 1} of the line); save the file as UTF-8",
                path=path,
                line=number,
            ) from None
        yield line.removeprefix("\ufeff") if number == 1 else line


def _cell(value: str) -> str:
    return clean(value.replace("\r\n", "\n"))[0]


def _json_rows(path: Path) -> tuple[list[str], Iterator[tuple[str, int, dict[str, Any]]]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 (byte {exc.start})", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    except RecursionError:
        raise InputError(limits.TOO_DEEP, path=path) from None
    del text
    if isinstance(data, dict):
        lists = [k for k, v in data.items() if isinstance(v, list)]
        if len(lists) != 1:
            raise InputError(
                "a JSON table is a list of objects, or an object holding one such list "
                f"({'it holds ' + str(len(lists)) + ': ' + ', '.join(lists) if lists else 'none found'})",
                path=path,
            )
        data = data[lists[0]]
    if not isinstance(data, list):
        raise InputError("a JSON table is a list of objects", path=path)
    if limits.nested_too_deep(data, limits.MAX_NESTING - 1):
        raise InputError(limits.TOO_DEEP, path=path)
    records = []
    for number, record in enumerate(data, start=1):
        if not isinstance(record, dict):
            raise InputError(
                f"row {number}: a row must be an object, got {type(record).__name__}", path=path
            )
        records.append(("", number, plain(record)))
    return _union(r for _, _, r in records), iter(records)


def _jsonl_rows(path: Path) -> tuple[list[str], Iterator[tuple[str, int, dict[str, Any]]]]:
    from skillopt.suite.readers import read_jsonl

    records = []
    for number, (line, record) in enumerate(read_jsonl(path), start=1):
        if not isinstance(record, dict):
            raise InputError(
                f"row {number}: a row must be an object, got {type(record).__name__}",
                path=path,
                line=line,
            )
        records.append(("", number, plain(record)))
    return _union(r for _, _, r in records), iter(records)


def _union(records: Iterable[dict[str, Any]]) -> list[str]:
    """Every field some record has, in the order they first appear."""
    seen: dict[str, None] = {}
    for record in records:
        for key in record:
            seen.setdefault(key, None)
    return list(seen)
