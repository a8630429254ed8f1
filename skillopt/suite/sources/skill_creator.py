"""Anthropic skill-creator's `evals/evals.json` and its trigger evals."""

from __future__ import annotations

from pathlib import Path

from skillopt.errors import InputError
from skillopt.suite.sources.records import FieldMap, Imported


def read_skill_creator(path: Path, fields: FieldMap) -> Imported:
    raise InputError("this kind of task source cannot be read yet")
