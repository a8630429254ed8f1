"""CSV/TSV and JSON/JSONL tables with arbitrary field names, read with a field mapping."""

from __future__ import annotations

from pathlib import Path

from skillopt.errors import InputError
from skillopt.suite.sources.records import FieldMap, Imported


def read_table(path: Path, kind: str, fields: FieldMap) -> Imported:
    raise InputError("this kind of task source cannot be read yet")
