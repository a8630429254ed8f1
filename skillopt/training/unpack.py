"""Unpacking a run bundle (`skillopt bundle`) without trusting it: members are
streamed one by one, each checked before it is written, and anything malformed is
one `InputError` naming the bundle.

Invariants:
- Nothing is written past `MAX_BYTES` in all (a 4 MB archive can hold 4 GiB of
  zeros): a member whose declared size would cross it is refused before a byte of
  it is written; a bundle whose manifest declares its size (`bytes`, written since
  this check exists) may not unpack to more than it declares.
- Only regular files and directories below the destination are written (tarfile's
  `data` filter: no links out, no absolute paths, no device files).
"""

from __future__ import annotations

import json
import tarfile
import zlib
from pathlib import Path

from skillopt.errors import InputError

MAX_BYTES = 2 << 30  # what a bundle may unpack to, in all
MANIFEST = "bundle.json"


def tree_bytes(root: Path) -> int:
    """The bytes of the regular files under `root`: what a bundle of it unpacks to."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def unpack(bundle: Path, dest: Path, *, limit: int | None = None) -> Path:
    """Unpack `bundle` (a .tar.gz) into `dest`; the bundle's root directory. Streams
    the members (a gzip stream is read once, in order), checks each against the
    bound before writing it, and the total against the manifest's once it is read."""
    bound = MAX_BYTES if limit is None else limit
    written = 0
    declared: int | None = None
    try:
        with tarfile.open(bundle, "r|gz") as tar:
            for member in tar:
                if member.isfile():
                    cap = bound if declared is None else min(bound, declared)
                    if written + member.size > cap:
                        raise InputError(
                            f"the bundle would unpack to more than {_size(cap)} "
                            f"({member.name!r} alone is {_size(member.size)}); refused "
                            "before writing it",
                            path=bundle,
                        )
                    written += member.size
                tar.extract(member, dest, filter="data")
                if member.isfile() and Path(member.name).name == MANIFEST:
                    declared = _declared(dest / member.name, bundle)
                    if declared is not None and written > declared:
                        raise InputError(
                            f"the bundle holds more than its manifest declares "
                            f"({_size(written)} > {_size(declared)})",
                            path=bundle,
                        )
    except InputError:
        raise
    except tarfile.FilterError as exc:
        raise InputError(f"the bundle holds an unsafe member: {exc}", path=bundle) from None
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise InputError(f"the bundle cannot be read: {exc}", path=bundle) from None
    root = dest / "bundle"
    if not (root / MANIFEST).is_file():
        raise InputError("not a skillopt bundle (no bundle.json)", path=bundle)
    return root


def _declared(path: Path, bundle: Path) -> int | None:
    """The size the manifest declares (`bytes`), None when it declares none."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        raise InputError("its bundle.json is not JSON", path=bundle) from None
    if not isinstance(data, dict):
        raise InputError("its bundle.json is not an object", path=bundle)
    value = data.get("bytes")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputError(f"its bundle.json has a bad `bytes`: {value!r}", path=bundle)
    return value


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"
