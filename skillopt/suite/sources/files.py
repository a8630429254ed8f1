"""Files a task source names (a promptfoo `file://` var or tests file, an inspect
sample's file, a skill-creator eval's input file), read as data and only from inside
the directory the source lives in.

Invariants: a path that leaves its directory (`..`, an absolute path, a symlink out)
is one `InputError` naming the source, the row and the field, never read; nothing
read is run; YAML is read with the suite reader's bounds (aliases, nesting) and JSON
is refused past `limits.MAX_NESTING`, so a hostile file costs time linear in its size.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from skillopt._util.text import clean
from skillopt.errors import InputError
from skillopt.suite import limits
from skillopt.suite.readers import read_yaml_value

# a file a source names may hold a prompt or a document, not a data set
MAX_FILE_BYTES = 5_000_000


def inside(base: Path, rel: str, *, source: Path, item: str, field: str) -> Path:
    """`rel` resolved against `base`, refused when it leaves `base` or is no file."""
    root = base.resolve()
    target = (root / rel).resolve()
    if not target.is_relative_to(root):
        raise InputError(
            f"{rel!r} is outside {root}, where the source lives; copy the file next to it",
            path=source,
            item=item,
            field=field,
        )
    if not target.is_file():
        raise InputError(f"no such file {rel!r} (in {root})", path=source, item=item, field=field)
    return target


def read_text(
    path: Path, *, source: Path, item: str | None = None, field: str | None = None
) -> str:
    """The text of `path` (UTF-8, at most `MAX_FILE_BYTES`), made safe to store."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise InputError(
                f"{path.name} is larger than {MAX_FILE_BYTES // 1_000_000} MB",
                path=source,
                item=item,
                field=field,
            )
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path.name} is not UTF-8 text (byte {exc.start})",
            path=source,
            item=item,
            field=field,
        ) from None
    except OSError as exc:
        raise InputError(
            f"cannot read {path.name}: {exc.strerror}", path=source, item=item, field=field
        ) from None
    return clean(text)[0]


def load_yaml(path: Path) -> Any:
    """A YAML file's one document, read with the suite reader's bounds."""
    return read_yaml_value(path, read_text(path, source=path))


def load_json(text: str, *, source: Path, line: int | None = None) -> Any:
    """A JSON value, refused when it nests deeper than `limits.MAX_NESTING`."""
    from skillopt.suite.scorers.structured import json_depth

    if json_depth(text) > limits.MAX_NESTING:
        raise InputError(limits.TOO_DEEP, path=source, line=line)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
            path=source,
            line=line,
        ) from None


def load_data(path: Path) -> Any:
    """A `.json`, `.jsonl` (a list of its lines' values), `.yaml` or `.yml` file."""
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return load_yaml(path)
    text = read_text(path, source=path)
    if suffix == ".jsonl":
        return [
            load_json(line, source=path, line=number)
            for number, line in enumerate(text.splitlines(), 1)
            if line.strip()
        ]
    return load_json(text, source=path)
