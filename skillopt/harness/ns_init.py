"""pid 1 of an agent's PID namespace: a program, never imported.

`namespace.init_program()` reads this file's source and runs it as
`python -I -S -c <source> <channel fd or -> <argv...>`, so the agent sees no path of
the package that started it on the command line of its pid 1. It uses the standard
library only (`-I -S`: no site-packages, no user environment).

What it does: it reads the wrapper's outer pid from the channel and makes it the
agent's pid (so agents running at once never share a pid, as they share /tmp), drops
the capabilities `unshare --keep-caps` lent it for that, starts the agent with the
environment it was itself given, reaps orphans until the agent exits, and reports
how the agent ended on the channel (E errno: exec failed; S n: killed by signal n;
X n: exit code n). As pid 1 it gets no signal it has no handler for: a group SIGTERM
reaches the agent, the agent decides, and when the agent ends the init ends and the
kernel kills whatever else is left in the namespace.

Invariant: the exit status is the agent's (128 + n for signal n), 126 when the agent
could not be started, 125 for anything unforeseen; this file names no path or
package of its caller (the namespace's processes read its command line).
"""

from __future__ import annotations

import os
import signal
import sys

PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4


def report(chan: int | None, kind: bytes, n: int) -> None:
    """Tell the parent how the agent ended; a parent that stopped listening is no
    error (it was killed with its group)."""
    if chan is not None:
        try:
            os.write(chan, b"%s %d\n" % (kind, n))
        except OSError:
            pass


def take_outer_pid(chan: int) -> None:
    """Read the wrapper's outer pid and arrange that the agent (our next child) gets
    it as its pid in here."""
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


def drop_ambient_caps(chan: int | None) -> None:
    """Clear the ambient capabilities `unshare --keep-caps` gave us: the agent gets
    none of them."""
    with open("/proc/self/status") as f:
        ambient = next((ln.split()[1] for ln in f if ln.startswith("CapAmb:")), "0")
    if int(ambient, 16):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0:
            report(chan, b"E", ctypes.get_errno())
            os._exit(126)


def given_environment() -> dict[bytes, bytes]:
    """The environment as given: python itself may have added LC_CTYPE (PEP 538)."""
    try:
        with open("/proc/self/environ", "rb") as f:
            pairs = [e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e]
        return {k: v for k, v in pairs}
    except OSError:
        return dict(os.environb)


def main(chan: int | None, argv: list[str]) -> None:
    if chan is not None:
        take_outer_pid(chan)
    drop_ambient_caps(chan)
    env = given_environment()
    sigint = signal.getsignal(signal.SIGINT)
    pid = os.fork()
    if pid == 0:
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN if sigint == signal.SIG_IGN else signal.SIG_DFL)
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


if __name__ == "__main__":
    channel: int | None = None
    try:
        channel = None if sys.argv[1] == "-" else int(sys.argv[1])
        main(channel, sys.argv[2:])
    except OSError as exc:  # could not start the agent (fork failed, say)
        report(channel, b"E", exc.errno or 0)
        os._exit(126)
    except BaseException:
        os._exit(125)
