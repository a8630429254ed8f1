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
- Where the platform allows (Linux with util-linux `unshare` and PID namespaces),
  the child runs in a new PID namespace with its own /proc, under a small init
  (pid 1): it cannot see skillopt, its ancestors or any other process, only its own
  descendants. Its exit status, output files, cwd and the kill of its group
  are what they would be without the namespace (`namespace`).
- Either way skillopt is non-dumpable while the agent may run (`dumpable.hidden`),
  so a same-user process cannot read its /proc/<pid>/environ or cwd.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from skillopt._util.text import tail
from skillopt.harness import dumpable, namespace

# What any program needs to start and reach the network; each harness adds its own.
BASE_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    "SYSTEMROOT",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
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


def scrubbed_env(
    names: Iterable[str],
    *,
    environ: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The variables in `names` that are set in `environ`, plus `extra`."""
    environ = os.environ if environ is None else environ
    env = {n: environ[n] for n in dict.fromkeys(names) if n in environ}
    env.update(extra or {})
    return env


def pid_namespace_available() -> bool:
    """Whether children can run in their own PID namespace here (probed once per
    process: Linux, util-linux `unshare`, and the kernel and container allow it)."""
    return _namespace_prefix() is not None


def _namespace_prefix() -> list[str] | None:
    # the probe runs with what any program gets, like an agent
    return namespace.wrapper(scrubbed_env(BASE_ENV))


def run_process(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    stdin_text: str,
    timeout: float,
    io_dir: Path,
    cancelled: threading.Event | None = None,
    pid_namespace: bool = True,
) -> ProcessResult:
    """Run `argv` in `cwd` with `stdin_text` on stdin; raises `OSError` when the program
    cannot start at all. Once `cancelled` is set (before `kill_all`), a process that
    starts is killed at once, so no agent outlives a stopped run. With `pid_namespace`
    (the default) it runs in its own PID namespace when `pid_namespace_available()`;
    nothing else about the run differs."""
    prefix = _namespace_prefix() if pid_namespace else None
    # closed to the agent while it may run; a namespace's init leaves nothing behind
    with dumpable.hidden(contained=prefix is not None):
        returncode, duration, report = _run(
            argv,
            prefix,
            cwd=cwd,
            env=env,
            stdin_text=stdin_text,
            timeout=timeout,
            io_dir=io_dir,
            cancelled=cancelled,
        )
    if report is not None:
        kind, number = report
        if kind == "E":  # as Popen would have raised it for the program itself
            raise OSError(number, os.strerror(number), argv[0])
        if kind == "S":
            returncode = (-number, returncode[1])
        elif kind == "X":
            returncode = (number, returncode[1])
    code, timed_out = returncode
    return ProcessResult(
        None if timed_out else code,
        _read(io_dir / "stdout.txt"),
        _read(io_dir / "stderr.txt"),
        timed_out,
        duration,
    )


def _run(
    argv: list[str],
    prefix: list[str] | None,
    *,
    cwd: Path,
    env: dict[str, str],
    stdin_text: str,
    timeout: float,
    io_dir: Path,
    cancelled: threading.Event | None,
) -> tuple[tuple[int | None, bool], float, tuple[str, int] | None]:
    """Start `argv` (behind `prefix`, the namespace's wrapper, when given) and wait for
    it: ((return code, timed out), seconds, what the namespace's init reported)."""
    stdin_path, out_path, err_path = (io_dir / n for n in ("stdin.txt", "stdout.txt", "stderr.txt"))
    stdin_path.write_text(stdin_text, encoding="utf-8")
    # the init's channel: our pid goes in, how the agent ended comes back
    channel = socket.socketpair() if prefix is not None else None
    start = time.perf_counter()
    try:
        with (
            open(stdin_path, "rb") as fin,
            open(out_path, "wb") as fout,
            open(err_path, "wb") as ferr,
        ):
            wrapped = argv
            pass_fds: tuple[int, ...] = ()
            if prefix is not None and channel is not None:
                wrapped = [*prefix, str(channel[1].fileno()), *argv]
                pass_fds = (channel[1].fileno(),)
            proc = subprocess.Popen(
                wrapped,
                cwd=cwd,
                env=env,
                stdin=fin,
                stdout=fout,
                stderr=ferr,
                start_new_session=True,
                pass_fds=pass_fds,
            )
            with _live_lock:
                _live.add(proc.pid)
            if channel is not None:
                channel[1].close()
                try:
                    channel[0].sendall(b"%d\n" % proc.pid)
                except OSError:  # the init is gone already (killed): nothing to tell
                    pass
            returncode = _wait(proc, timeout, cancelled)
        report = namespace.read_report(channel[0]) if channel is not None else None
    finally:
        for sock in channel or ():
            sock.close()
    return returncode, time.perf_counter() - start, report


def _wait(
    proc: subprocess.Popen[bytes], timeout: float, cancelled: threading.Event | None
) -> tuple[int | None, bool]:
    """Wait for `proc` under the timeout; (its return code, whether the timeout fired).
    On any way out its whole process group is killed."""
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
    return proc.returncode, fired.is_set()


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
