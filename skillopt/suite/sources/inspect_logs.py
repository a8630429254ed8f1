"""inspect_ai eval logs opened as data: a `.eval` file (a zip) or a `.json` log,
read into the log's header (`eval`, `status`, `results`) and its samples.

What inspect_ai writes (inspect_ai.log, `EvalLog`; the layout read off logs written
by inspect_ai 0.3.285): a JSON log is one object `{version, status, eval, plan,
results, stats, error, samples, reductions}`; a `.eval` zip holds `header.json` (the
same without `samples`; `_journal/start.json` while the run is still going),
`samples/<id>_epoch_<n>.json` (one sample per epoch: `id`, `epoch`, `input`,
`target`, `choices`, `metadata`, `files` (names), `scores`, `output`, …),
`summaries.json` and `reductions.json`. Its members are deflated, or, since
inspect_ai 0.3.1xx, zstd-compressed (zip method 93), which Python reads from 3.14 on
and, before, through the `zstandard` package when it is installed.

Invariants: nothing in the log is run or imported as code; a member is read only up
to `MAX_MEMBER_BYTES` (its declared size is checked first, and the decompressor is
bounded too, so a zip bomb costs nothing); samples of later epochs are not read.
"""

from __future__ import annotations

import re
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillopt._util.text import clean
from skillopt.errors import InputError
from skillopt.suite.sources.files import load_json, read_text

MAX_MEMBER_BYTES = 200_000_000  # one sample with its events may be large, not larger
MAX_MEMBERS = 1_000_000
ZSTD = 93  # the zip compression method inspect_ai writes
_SAMPLE = re.compile(r"samples/(.+)_epoch_(\d+)\.json")


@dataclass(frozen=True)
class Log:
    """An eval log's header and its samples (each sample's first epoch only)."""

    header: dict[str, Any]
    samples: tuple[dict[str, Any], ...]
    epochs: int  # the most epochs any sample had


def read_log(path: Path) -> Log:
    """The log at `path`: a `.eval` zip or a JSON `EvalLog`."""
    if zipfile.is_zipfile(path):
        return _read_zip(path)
    data = load_json(read_text(path, source=path), source=path)
    if not isinstance(data, dict) or not isinstance(data.get("samples"), list):
        raise InputError("not an inspect_ai log: no `samples` list", path=path, field="samples")
    samples, epochs = _first_epochs(data["samples"], path)
    header = {k: v for k, v in data.items() if k != "samples"}
    return Log(header, tuple(samples), epochs)


def _first_epochs(samples: list[Any], path: Path) -> tuple[list[dict[str, Any]], int]:
    """Each sample once, from its first epoch, in the order the log holds them."""
    first: dict[str, dict[str, Any]] = {}
    epochs = 1
    for index, sample in enumerate(samples):
        if not isinstance(sample, dict):
            raise InputError("a sample must be an object", path=path, item=f"samples[{index}]")
        epoch = sample.get("epoch", 1)
        epochs = max(epochs, epoch if isinstance(epoch, int) else 1)
        key = repr(sample.get("id", index + 1))
        if key not in first or (isinstance(epoch, int) and epoch < first[key].get("epoch", 1)):
            first[key] = sample
    return list(first.values()), epochs


def _read_zip(path: Path) -> Log:
    try:
        with zipfile.ZipFile(path) as archive, path.open("rb") as raw:
            infos = archive.infolist()
            if len(infos) > MAX_MEMBERS:
                raise InputError(f"holds more than {MAX_MEMBERS} members", path=path)
            names = {info.filename: info for info in infos}
            head = names.get("header.json") or names.get("_journal/start.json")
            if head is None:
                raise InputError("not an inspect_ai .eval log: no header.json", path=path)
            header = _member(archive, raw, head, path)
            if not isinstance(header, dict):
                raise InputError("header.json must be an object", path=path)
            if head.filename != "header.json":
                header = {**header, "status": "started"}
            epochs = 1
            samples = []
            for info in infos:
                match = _SAMPLE.fullmatch(info.filename)
                if match is None:
                    continue
                epochs = max(epochs, int(match.group(2)))
                if match.group(2) == "1":
                    sample = _member(archive, raw, info, path)
                    if not isinstance(sample, dict):
                        raise InputError(
                            "a sample must be an object", path=path, item=info.filename
                        )
                    samples.append(sample)
    except zipfile.BadZipFile as exc:
        raise InputError(f"not a readable .eval zip: {exc}", path=path) from None
    order = _sample_order(header)
    samples.sort(key=lambda s: order.get(repr(s.get("id")), len(order)))
    return Log(header, tuple(samples), epochs)


def _sample_order(header: dict[str, Any]) -> dict[str, int]:
    """The dataset's order of sample ids (the zip holds them in completion order)."""
    dataset = (header.get("eval") or {}).get("dataset") or {}
    ids = dataset.get("sample_ids") if isinstance(dataset, dict) else None
    return {repr(i): n for n, i in enumerate(ids)} if isinstance(ids, list) else {}


def _member(archive: zipfile.ZipFile, raw: Any, info: zipfile.ZipInfo, path: Path) -> Any:
    if info.file_size > MAX_MEMBER_BYTES:
        raise InputError(
            f"{info.filename} is larger than {MAX_MEMBER_BYTES // 1_000_000} MB", path=path
        )
    if info.compress_type == ZSTD and not _stdlib_zstd():
        data = _unzstd(_stored_bytes(raw, info, path), info, path)
    else:
        try:
            with archive.open(info) as stream:
                data = stream.read(MAX_MEMBER_BYTES + 1)
        except NotImplementedError:
            raise InputError(
                f"{info.filename} uses zip compression method {info.compress_type}, "
                "which this Python cannot read",
                path=path,
            ) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{info.filename} is not UTF-8 (byte {exc.start})", path=path) from None
    return load_json(clean(text)[0], source=path)


def _stdlib_zstd() -> bool:
    """Whether this Python's zipfile reads zstd members itself (3.14 and later)."""
    return bool(vars(zipfile).get("ZIP_ZSTANDARD"))


def _stored_bytes(raw: Any, info: zipfile.ZipInfo, path: Path) -> bytes:
    """A member's compressed bytes, read past its local header."""
    raw.seek(info.header_offset)
    local = raw.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise InputError(f"{info.filename}: a broken zip entry", path=path)
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    raw.seek(info.header_offset + 30 + name_len + extra_len)
    data: bytes = raw.read(info.compress_size)
    return data


def _unzstd(data: bytes, info: zipfile.ZipInfo, path: Path) -> bytes:
    try:
        import zstandard
    except ImportError:
        raise InputError(
            "this .eval log is zstd-compressed (as inspect_ai writes them); install the "
            "`zstandard` package (pip install 'skillopt[inspect]'), or convert the log "
            "with `inspect log convert --to json`",
            path=path,
        ) from None
    reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True)
    chunks: list[bytes] = []
    size = 0
    try:
        while size <= MAX_MEMBER_BYTES:
            chunk = reader.read(min(1 << 20, MAX_MEMBER_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except zstandard.ZstdError as exc:
        raise InputError(f"{info.filename}: cannot decompress: {exc}", path=path) from None
    out = b"".join(chunks)
    if len(out) > MAX_MEMBER_BYTES:
        raise InputError(
            f"{info.filename} is larger than {MAX_MEMBER_BYTES // 1_000_000} MB", path=path
        )
    return out
