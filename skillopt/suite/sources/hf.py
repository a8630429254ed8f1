"""Hugging Face datasets: a directory written by `save_to_disk`, or a hub id with a split.

A `DatasetDict` read whole pins each item to its split (train → train, validation,
valid or dev → val, test → test; another split is left out, with a note); one split
chosen with `--subset` is read alone and pins nothing, so the suite's fractions
split it. Rows become items as a table's do (`table.rows_to_items`).

Invariants: the `datasets` library is imported only here, only when a dataset is
read, and its absence is one `InputError` naming the extra to install; whatever the
library raises for a source (an unknown id, no network, a damaged directory) is one
`InputError` naming the source, never a traceback. A hub id is fetched only when the
user named one (`hf:owner/name`); a directory is read from disk alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from skillopt._util.text import clip, did_you_mean
from skillopt.errors import InputError
from skillopt.suite.sources.records import FieldMap, Imported
from skillopt.suite.sources.rows import plain, rows_to_items

# how a hub id is written: ours, the hub's URL form, promptfoo's; and the same with
# the double slash folded, as a path-typed command-line option hands it over
HUB_PREFIXES = (
    "hf://datasets/",
    "huggingface://datasets/",
    "hf:/datasets/",
    "huggingface:/datasets/",
    "hf:",
)
# a dataset split's name, and the suite split it pins
SPLIT_PINS = {"train": "train", "validation": "val", "valid": "val", "dev": "val", "test": "test"}
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def is_hub_id(source: str) -> bool:
    """Whether `source` names a dataset on the hub (`hf:owner/name` and its forms)."""
    return source.startswith(HUB_PREFIXES)


def hub_id(source: str) -> tuple[str, str | None, str | None]:
    """(dataset id, split, config) of a hub source: `hf:owner/name`,
    `hf://datasets/owner/name` or `huggingface://datasets/owner/name?split=test`."""
    rest = next(source[len(p) :] for p in HUB_PREFIXES if source.startswith(p))
    rest, _, query = rest.partition("?")
    params = parse_qs(query)
    dataset = rest.strip("/")
    if not _HUB_ID.fullmatch(dataset):
        raise InputError(
            "not a Hugging Face dataset id; write hf:owner/name (a saved dataset: its directory)",
            path=source,
        )
    split = next(iter(params.get("split", [])), None)
    config = next(iter(params.get("config", params.get("name", []))), None)
    return dataset, split, config


def hub_records(source: str, default_split: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number, the row's fields) of one split of a hub dataset, as promptfoo reads
    `huggingface://datasets/owner/name?split=…&config=…&limit=N` (every field a var;
    the split `default_split` when none is named; `subset` is the config's other
    name there)."""
    datasets = _library()
    dataset_id, split, config = hub_id(source)
    params = parse_qs(source.partition("?")[2])
    config = config or next(iter(params.get("subset", [])), None)
    limit_text = next(iter(params.get("limit", [])), None)
    if limit_text is not None and not limit_text.isdigit():
        raise InputError(f"limit must be a whole number, not {limit_text!r}", path=source)
    split = split or default_split
    data = _load_hub(datasets, source, dataset_id, split, config)
    limit = int(limit_text) if limit_text is not None else None
    for number, record in enumerate(data, start=1):
        if limit is not None and number > limit:
            return
        yield number, plain(record)


def _load_hub(
    datasets: Any, source: str, dataset_id: str, split: str | None, config: str | None
) -> Any:
    try:
        return datasets.load_dataset(dataset_id, name=config, split=split)
    except Exception as exc:  # the library's errors have no common base
        raise InputError(
            f"cannot load Hugging Face dataset {dataset_id!r}"
            f"{f' (split {split!r})' if split else ''}: {_first_line(exc)}",
            path=source,
        ) from None


def read_hf(source: str, fields: FieldMap) -> Imported:
    """The items of a saved dataset directory or a hub dataset (`hf:owner/name`);
    `fields.subset` chooses one split."""
    datasets = _library()
    if is_hub_id(source):
        dataset_id, split, config = hub_id(source)
        split = fields.subset or split
        data = _load_hub(datasets, source, dataset_id, split, config)
        stem = dataset_id.rsplit("/", 1)[-1]
        return _read(data, fields, source, stem, chosen=split is not None)
    path = Path(source)
    try:
        data = datasets.load_from_disk(str(path))
    except Exception as exc:  # the library's errors have no common base
        raise InputError(
            f"cannot read a saved Hugging Face dataset: {_first_line(exc)}", path=path
        ) from None
    return _read(data, fields, path, path.resolve().name, chosen=False)


def _library() -> Any:
    try:
        import datasets
    except ImportError:
        raise InputError(
            'reading Hugging Face datasets needs the `datasets` library: pip install "skillopt[hf]"'
        ) from None
    return datasets


def _read(data: Any, fields: FieldMap, source: Path | str, stem: str, chosen: bool) -> Imported:
    """Items of a `Dataset` (one split) or a `DatasetDict` (several)."""
    import datasets

    if isinstance(data, datasets.Dataset):
        if fields.subset and not chosen:
            raise InputError(
                f"the dataset is one split; --subset {fields.subset} does not apply",
                path=source,
                field="subset",
            )
        return rows_to_items(_rows(data, ""), data.column_names, fields, source, "hf", stem)
    if not isinstance(data, datasets.DatasetDict):
        raise InputError(f"not a dataset that can be read: {type(data).__name__}", path=source)
    names = list(data)
    if fields.subset:
        if fields.subset not in data:
            hint = did_you_mean(fields.subset, names)
            raise InputError(
                f"no split {fields.subset!r}{'; ' + hint if hint else ''} "
                f"(splits: {', '.join(names)})",
                path=source,
                field="subset",
            )
        part = data[fields.subset]
        return rows_to_items(_rows(part, ""), part.column_names, fields, source, "hf", stem)
    kept = [n for n in names if n in SPLIT_PINS]
    notes = [
        f"split {n!r} ({data[n].num_rows} rows) left out: not train, validation or "
        f"test; read it alone with --subset {n}"
        for n in names
        if n not in SPLIT_PINS
    ]
    if not kept:
        raise InputError(
            f"no train, validation or test split (splits: {', '.join(names)}); "
            "choose one with --subset NAME",
            path=source,
            field="subset",
        )
    columns = list(dict.fromkeys(c for n in kept for c in data[n].column_names))
    rows = (row for name in kept for row in _rows(data[name], name))
    return rows_to_items(rows, columns, fields, source, "hf", stem, pins=SPLIT_PINS, notes=notes)


def _rows(data: Any, part: str) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """A split's rows, one at a time (the dataset stays memory-mapped on disk)."""
    for number, record in enumerate(data, start=1):
        yield part, number, plain(record)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return clip(text[0] if text else type(exc).__name__, 300)
