"""inspect_ai datasets (Sample fields) and `.eval`/JSON logs (samples with their targets)."""

from __future__ import annotations

from pathlib import Path

from skillopt.errors import InputError
from skillopt.suite.sources.records import FieldMap, Imported


def read_inspect(path: Path, kind: str, fields: FieldMap) -> Imported:
    raise InputError("this kind of task source cannot be read yet")
