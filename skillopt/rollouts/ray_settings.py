"""The `ray:` settings checked before Ray is asked to connect: an address of a shape
Ray connects to, and a runtime_env that Ray's own checks accept.

Invariant: a bad `ray.address` or `ray.runtime_env` is one `InputError` naming the
setting, raised before `ray.init`. Left to Ray, an address it cannot parse is a
`RuntimeError` or a `ValueError` from deep inside it, and a mistyped runtime_env a
`TypeError` only after it has started connecting (tens of seconds later).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from skillopt.errors import InputError

# what Ray connects to: a private cluster, the one `ray start` made here, its GCS at
# host:port, or a Ray Client server (ray://host[:port]); a host without a port is
# Ray's to interpret
_HOST = r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)"
_ADDRESS = re.compile(rf"(auto|local|ray://{_HOST}(:\d+)?/?|{_HOST}(:\d+)?)")
SHAPES = "'auto', 'local', host:6379 or ray://host:10001"


def check_address(address: str) -> None:
    """Refuse an address that is none of the shapes Ray connects to (`SHAPES`),
    e.g. a dashboard's `http://host:8265` or a typo such as `garbage::://`."""
    if _ADDRESS.fullmatch(address) is None:
        scheme = address.split("://", 1)[0] + "://" if "://" in address else ""
        hint = (
            f" (Ray connects to a cluster, not over {scheme})"
            if scheme and scheme != "ray://"
            else ""
        )
        raise InputError(
            f"{address!r} is not a Ray cluster address{hint}; give {SHAPES}",
            field="ray.address",
        )


def check_runtime_env(runtime_env: Mapping[str, Any]) -> None:
    """Refuse a runtime_env that Ray's own `RuntimeEnv` refuses (`pip: 5`,
    `env_vars` that are not strings, a `working_dir` that is not a path, …),
    checked here, in this process, before any connection."""
    if not runtime_env:
        return
    from ray.runtime_env import RuntimeEnv

    try:
        RuntimeEnv(**runtime_env)
    except Exception as exc:  # Ray's checks raise TypeError, ValueError, or their own
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise InputError(f"Ray refuses it: {reason}", field="ray.runtime_env") from None
