"""Closing this process's /proc entries to the agents it runs (Linux's "dumpable"
flag): a process of the same user that lacks CAP_SYS_PTRACE cannot read the
/proc/<pid>/environ, cwd, fd or memory of a non-dumpable process, nor attach a
debugger; /proc/<pid>/cmdline stays readable. Children are unaffected: exec makes
them dumpable again.

Invariants:
- While any agent started through `hidden` may be alive, this process is
  non-dumpable: an agent (or anything it starts) never reads skillopt's keys from
  /proc/<pid>/environ.
- Afterwards the flag is what it was before the first of them, so a notebook or a
  program that runs agents through skillopt keeps its own setting. Except when an
  agent ran outside a PID namespace: something it started may have left its process
  group and outlived it (nothing outlives a namespace's init), so the flag then stays
  off for the life of the process, as it does after `make_non_dumpable`.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4
_SUID_DUMP_DISABLE = 0
_SUID_DUMP_USER = 1

_lock = threading.Lock()
_holders = 0  # agents running under `hidden` now
_restore = False  # whether the last one out makes the process dumpable again
_for_good = False  # `make_non_dumpable`, or an agent outside a PID namespace, ran


def _prctl(option: int, arg: int = 0) -> int | None:
    """`prctl(option, arg)`'s result, or None where there is no prctl (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        result = libc.prctl(option, arg, 0, 0, 0)
    except (OSError, AttributeError):  # no libc with prctl in this process
        return None
    return int(result)


def is_dumpable() -> bool | None:
    """Whether same-user processes can read our /proc entries; None where unknown."""
    flag = _prctl(_PR_GET_DUMPABLE)
    return None if flag is None else flag == _SUID_DUMP_USER


def make_non_dumpable() -> bool:
    """Make this process non-dumpable for the rest of its life (Linux). Returns
    whether it is in effect."""
    global _for_good
    with _lock:
        _for_good = True
        _prctl(_PR_SET_DUMPABLE, _SUID_DUMP_DISABLE)
    return is_dumpable() is False


@contextmanager
def hidden(*, contained: bool) -> Iterator[None]:
    """Non-dumpable while the block runs a program. `contained`: nothing acting on a
    model's output outlives the block (the agent runs in a PID namespace of its own,
    or the program runs no task at all); otherwise the flag stays off for good. Nests
    and overlaps across threads: the flag comes back when the last block ends."""
    global _holders, _restore, _for_good
    with _lock:
        if _holders == 0:
            # only a dumpable process needs closing, and only it is reopened: one that
            # is already non-dumpable (or root-only, 2) stays as it is
            _restore = False
            if is_dumpable() is True:
                _prctl(_PR_SET_DUMPABLE, _SUID_DUMP_DISABLE)
                _restore = not _for_good
        _holders += 1
        if not contained:
            _for_good = True
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _restore and not _for_good:
                _prctl(_PR_SET_DUMPABLE, _SUID_DUMP_USER)
            if _holders == 0:
                _restore = False
