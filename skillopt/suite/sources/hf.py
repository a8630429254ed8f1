"""Hugging Face datasets: a directory written by `save_to_disk`, or a hub id with a split."""

from __future__ import annotations

from skillopt.errors import InputError
from skillopt.suite.sources.records import FieldMap, Imported


def read_hf(source: str, fields: FieldMap) -> Imported:
    raise InputError("this kind of task source cannot be read yet")
