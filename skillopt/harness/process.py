"""Running an agent program: a scrubbed environment, output to files, a timeout that
kills the whole process group, and a way to kill every live agent on Ctrl-C.

Invariants:
- The child starts in its own session, so a timeout (or `kill_all`) reaches every
  process it started, not only the first one. Stragglers left behind by a child
  that exited (a server an agent started in the background) are killed too.
- stdout and stderr go to files, not pipes: a grandchild that keeps a pipe open
  can never make us wait past the child's own exit, and output size is unbounded.
- The environment holds only the named variables: nothing else of the parent's
  (other providers' keys, the CI's tokens) reaches the agent.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

# What any program needs to start and reach the network; each harness adds its own.
BASE_ENV = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE",
    "TZ", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME",
)

TERM_GRACE_S = 3.0  # between SIGTERM and SIGKILL

_live: set[int] = set()  # process-group ids of running agents
_live_lock = threading.Lock()


@dataclass(frozen=True)
class ProcessResult:
    returncode: int | None  # None when killed by the timeout
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float

    def stderr_tail(self, limit: int = 800) -> str:
        return tail(self.stderr, limit)


def tail(text: str, limit: int = 800) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


def scrubbed_env(names: Iterable[str], *, environ: Mapping[str, str] | None = None,
                 extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables in `names` that are set in `environ`, plus `extra`."""
    environ = os.environ if environ is None else environ
    env = {n: environ[n] for n in dict.fromkeys(names) if n in environ}
    env.update(extra or {})
    return env


def run_process(argv: list[str], *, cwd: Path, env: dict[str, str], stdin_text: str,
                timeout: float, io_dir: Path,
                cancelled: threading.Event | None = None) -> ProcessResult:
    """Run `argv` in `cwd` with `stdin_text` on stdin; raises `OSError` when the program
    cannot start at all. Once `cancelled` is set (before `kill_all`), a process that
    starts is killed at once, so no agent outlives a stopped run."""
    stdin_path, out_path, err_path = (io_dir / n for n in ("stdin.txt", "stdout.txt",
                                                           "stderr.txt"))
    stdin_path.write_text(stdin_text, encoding="utf-8")
    start = time.perf_counter()
    with open(stdin_path, "rb") as fin, open(out_path, "wb") as fout, \
            open(err_path, "wb") as ferr:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=fin, stdout=fout, stderr=ferr,
                                start_new_session=True)
        with _live_lock:
            _live.add(proc.pid)
        # kill_all sets `cancelled` first and then reads the live set: a process is
        # either in what it reads or sees the flag here.
        if cancelled is not None and cancelled.is_set():
            _kill_group(proc.pid, signal.SIGKILL)
        exited = threading.Event()
        fired = threading.Event()

        def on_timeout() -> None:
            fired.set()
            _kill_group(proc.pid, signal.SIGTERM)
            if not exited.wait(TERM_GRACE_S):
                _kill_group(proc.pid, signal.SIGKILL)

        # A blocking wait, not Popen.wait(timeout=…), which polls with sleeps of up
        # to 50 ms and would add that to every task; a timer enforces the timeout.
        timer = threading.Timer(timeout, on_timeout)
        timer.daemon = True
        timer.start()
        try:
            proc.wait()
        finally:
            exited.set()
            timer.cancel()
            _kill_group(proc.pid, signal.SIGKILL)  # the rest of the group, if any
            proc.wait()
            with _live_lock:
                _live.discard(proc.pid)
    duration = time.perf_counter() - start
    timed_out = fired.is_set()
    return ProcessResult(None if timed_out else proc.returncode, _read(out_path),
                         _read(err_path), timed_out, duration)


def kill_all() -> int:
    """Kill every running agent's process group (on Ctrl-C or a stopped run); returns
    how many. Set the runs' `cancelled` event first, so none starts after this."""
    with _live_lock:
        groups = list(_live)
    for pgid in groups:
        _kill_group(pgid, signal.SIGKILL)
    return len(groups)


def live_count() -> int:
    with _live_lock:
        return len(_live)


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")
