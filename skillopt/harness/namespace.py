"""A PID namespace of its own for an agent: whether this machine offers one, the argv
prefix that starts a child in it under our init (`ns_init`), and how the init
reports the agent's end.

Invariants:
- Probed once per process (Linux, util-linux `unshare`, and a kernel and container
  that allow it), by running the real wrapper and checking from inside that the
  child's parent is our init, pid 1; anything else means no namespace, never an
  error.
- The init runs from its source text (`-c`), so nothing on its command line, which
  the agent can read, names where skillopt is installed.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping

_NS_FLAGS = ("--pid", "--fork", "--mount-proc", "--kill-child")
_USER_NS_FLAGS = ("--user", "--map-current-user", "--keep-caps")
_UNPROBED: list[str] = []  # a sentinel: not probed yet
_prefix: list[str] | None = _UNPROBED  # the argv prefix that wraps a child, or None
_lock = threading.Lock()


def init_program() -> str:
    """The source of the namespace's pid 1 (`ns_init.py`), as `python -c` runs it."""
    from importlib import resources  # only when a child first runs: not at start-up

    return resources.files("skillopt.harness").joinpath("ns_init.py").read_text("utf-8")


def wrapper(probe_env: Mapping[str, str]) -> list[str] | None:
    """The argv prefix that starts a child in a new PID namespace (followed by the
    channel's fd, or `-`, and the child's argv), or None where there is none. The
    first call probes, with `probe_env` as the probe's environment."""
    global _prefix
    with _lock:
        if _prefix is _UNPROBED:
            _prefix = _probe(probe_env)
        return _prefix


def _probe(env: Mapping[str, str]) -> list[str] | None:
    """Root tries a plain PID namespace first; anyone else needs a user namespace
    that maps them to themselves (their files stay theirs)."""
    if not sys.platform.startswith("linux") or not sys.executable:
        return None
    unshare = shutil.which("unshare") or next(
        (p for p in ("/usr/bin/unshare", "/bin/unshare") if os.access(p, os.X_OK)), None
    )
    if unshare is None:
        return None
    check = (
        "import os, sys; sys.exit(0 if os.getppid() == 1 and b'ns_last_pid' in "
        "open('/proc/1/cmdline', 'rb').read() else 3)"
    )
    init = init_program()
    variants: list[tuple[str, ...]] = ([()] if os.geteuid() == 0 else []) + [_USER_NS_FLAGS]
    for flags in variants:
        prefix = [unshare, *flags, *_NS_FLAGS, sys.executable, "-I", "-S", "-c", init]
        try:
            done = subprocess.run(
                [*prefix, "-", sys.executable, "-I", "-S", "-c", check],
                env=dict(env),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=20,
                cwd="/",
            )
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0 and not done.stdout and not done.stderr:
            return prefix
    return None


def read_report(sock: socket.socket) -> tuple[str, int] | None:
    """What the init said on our end of the channel about the agent's end: ("E",
    errno), ("S", signal) or ("X", exit code); None when it said nothing (it cannot
    when it was killed with its group)."""
    sock.setblocking(False)
    data = b""
    try:
        while len(data) < 64:
            part = sock.recv(64)
            if not part:
                break
            data += part
    except OSError:  # nothing (more) to read
        pass
    # the first line decides: after "E" (from the child that could not exec) the init
    # still reports the child's exit
    first = data.decode("ascii", "replace").strip().split("\n", 1)[0]
    kind, _, number = first.partition(" ")
    if kind in ("E", "S", "X") and number.lstrip("-").isdigit():
        return kind, int(number)
    return None
