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
  are what they would be without the namespace. Either way skillopt makes itself
  non-dumpable, so a same-user process cannot read its /proc/<pid>/environ or cwd.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from skillopt._util.text import tail

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

# pid 1 of an agent's PID namespace: `python -I -S -c _INIT <channel fd or -> <argv…>`.
# It reads the wrapper's outer pid from the channel and makes it the agent's pid (so
# agents running at once never share a pid, as they share /tmp), drops the capabilities
# `unshare --keep-caps` lent it for that, starts the agent with the environment it was
# itself given, reaps orphans until the agent exits, and reports how the agent ended
# (E errno: exec failed; S n: killed by signal n; X n: exit code n) on the channel. As
# pid 1 it gets no signal it has no handler for: a group SIGTERM reaches the agent, the
# agent decides, and when the agent ends the init ends and the kernel kills whatever
# else is left in the namespace.
_INIT = r"""
import os, signal, sys

def report(chan, kind, n):
    if chan is not None:
        try:
            os.write(chan, b"%s %d\n" % (kind, n))
        except OSError:
            pass

def main(chan, argv):
    if chan is not None:
        os.set_inheritable(chan, False)
        want = b""
        while not want.endswith(b"\n"):
            part = os.read(chan, 32)
            if not part:
                break
            want += part
        if want.strip().isdigit() and int(want) > 2:
            try:
                with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                    f.write(str(int(want) - 1))
            except OSError:
                pass
    with open("/proc/self/status") as f:
        ambient = next((ln.split()[1] for ln in f if ln.startswith("CapAmb:")), "0")
    if int(ambient, 16):
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(47, 4, 0, 0, 0) != 0:  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL
            report(chan, b"E", ctypes.get_errno())
            os._exit(126)
    try:  # the environment as given: python itself may have added LC_CTYPE (PEP 538)
        with open("/proc/self/environ", "rb") as f:
            env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
    except OSError:
        env = dict(os.environb)
    sigint = signal.getsignal(signal.SIGINT)
    pid = os.fork()
    if pid == 0:
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT,
                      signal.SIG_IGN if sigint == signal.SIG_IGN else signal.SIG_DFL)
        try:
            os.execvpe(argv[0], argv, env)
        except OSError as exc:
            report(chan, b"E", exc.errno or 0)
        os._exit(127)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        got, status = os.waitpid(-1, 0)
        if got == pid:
            break
    if os.WIFSIGNALED(status):
        report(chan, b"S", os.WTERMSIG(status))
        os._exit(128 + os.WTERMSIG(status))
    code = os.waitstatus_to_exitcode(status)
    report(chan, b"X", code)
    os._exit(code)

chan = None
try:
    chan = None if sys.argv[1] == "-" else int(sys.argv[1])
    main(chan, sys.argv[2:])
except OSError as exc:  # could not start the agent (fork failed, say)
    report(chan, b"E", exc.errno or 0)
    os._exit(126)
except BaseException:
    os._exit(125)
"""
_NS_FLAGS = ("--pid", "--fork", "--mount-proc", "--kill-child")
_USER_NS_FLAGS = ("--user", "--map-current-user", "--keep-caps")
_UNPROBED: list[str] = []  # a sentinel: not probed yet
_ns_prefix: list[str] | None = _UNPROBED  # the argv prefix that wraps a child, or None
_ns_lock = threading.Lock()
_dumpable_done = False
_dumpable_lock = threading.Lock()


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
    global _ns_prefix
    with _ns_lock:
        if _ns_prefix is _UNPROBED:
            _ns_prefix = _probe_namespace()
        return _ns_prefix


def _probe_namespace() -> list[str] | None:
    """The argv prefix that starts a child in a new PID namespace with its own /proc,
    or None. Root tries a plain PID namespace first; anyone else needs a user namespace
    that maps them to themselves (their files stay theirs). The probe runs the real
    wrapper and checks from inside that the child's parent is our init, pid 1."""
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
    variants = ([()] if os.geteuid() == 0 else []) + [_USER_NS_FLAGS]
    for flags in variants:
        prefix = [unshare, *flags, *_NS_FLAGS, sys.executable, "-I", "-S", "-c", _INIT]
        try:
            done = subprocess.run(
                [*prefix, "-", sys.executable, "-I", "-S", "-c", check],
                env=scrubbed_env(BASE_ENV),
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


def make_non_dumpable() -> bool:
    """Make this process non-dumpable (Linux; once): a process of the same user that
    lacks CAP_SYS_PTRACE can then no longer read our /proc/<pid>/environ, cwd, fd or
    memory, nor attach a debugger. /proc/<pid>/cmdline stays readable. Children are
    unaffected: exec makes them dumpable again. Returns whether it is in effect."""
    global _dumpable_done
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        with _dumpable_lock:
            if not _dumpable_done:
                _dumpable_done = True
                libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, SUID_DUMP_DISABLE
        return libc.prctl(3, 0, 0, 0, 0) == 0  # PR_GET_DUMPABLE
    except (OSError, AttributeError):
        return False


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
    make_non_dumpable()
    prefix = _namespace_prefix() if pid_namespace else None
    stdin_path, out_path, err_path = (io_dir / n for n in ("stdin.txt", "stdout.txt", "stderr.txt"))
    stdin_path.write_text(stdin_text, encoding="utf-8")
    ours = theirs = None
    if prefix is not None:
        # the init's channel: our pid goes in, how the agent ended comes back
        ours, theirs = socket.socketpair()
    start = time.perf_counter()
    try:
        with (
            open(stdin_path, "rb") as fin,
            open(out_path, "wb") as fout,
            open(err_path, "wb") as ferr,
        ):
            wrapped = argv if theirs is None else [*prefix, str(theirs.fileno()), *argv]
            proc = subprocess.Popen(
                wrapped,
                cwd=cwd,
                env=env,
                stdin=fin,
                stdout=fout,
                stderr=ferr,
                start_new_session=True,
                pass_fds=() if theirs is None else (theirs.fileno(),),
            )
            with _live_lock:
                _live.add(proc.pid)
            if theirs is not None:
                theirs.close()
                try:
                    ours.sendall(b"%d\n" % proc.pid)
                except OSError:  # the init is gone already (killed): nothing to tell
                    pass
            returncode = _wait(proc, timeout, cancelled)
        report = _read_report(ours) if ours is not None else None
    finally:
        for sock in (ours, theirs):
            if sock is not None:
                sock.close()
    duration = time.perf_counter() - start
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
        None if timed_out else code, _read(out_path), _read(err_path), timed_out, duration
    )


def _wait(
    proc: subprocess.Popen, timeout: float, cancelled: threading.Event | None
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


def _read_report(sock: socket.socket) -> tuple[str, int] | None:
    """What the namespace init said about the agent's end, if it said it (it cannot
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
