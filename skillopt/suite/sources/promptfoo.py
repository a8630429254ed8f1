"""promptfoo configs and test files: `vars` into the prompt template, asserts into scorers."""

from __future__ import annotations

from pathlib import Path

from skillopt.errors import InputError
from skillopt.suite.sources.records import FieldMap, Imported


def read_promptfoo(path: Path, fields: FieldMap) -> Imported:
    raise InputError("this kind of task source cannot be read yet")
