"""Run a command in a real pseudo-terminal of a given size and read what a person
would see: the raw bytes go through `pyte`, a VT terminal emulator, so cursor moves,
line erases and the live bar's redraws act as they do in a terminal window."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import termios
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyte


@dataclass
class Screen:
    """The final screen, and every distinct row seen while the command ran (the
    transient live bar is gone from the final screen)."""

    lines: list[str]
    seen: list[str] = field(default_factory=list)
    raw: bytes = b""
    returncode: int = 0

    @property
    def text(self) -> str:
        return "\n".join(self.lines).rstrip("\n") + "\n"


def run_in_pty(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    cols: int = 80,
    rows: int = 200,
    deadline_s: float = 300.0,
    replies: Sequence[tuple[bytes, bytes]] = (),
) -> Screen:
    """Run `argv` with stdin, stdout and stderr on one pty of `cols` × `rows`, the way a
    shell starts it in a terminal. `deadline_s` only stops a hung child; a normal run
    ends when the child closes the terminal. `replies`: (a prompt, the line typed
    once it shows), answered in order, as a person at the terminal would."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env={**env, "TERM": "xterm-256color", "COLUMNS": str(cols), "LINES": str(rows)},
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    pending = list(replies)
    answered = 0  # the output before this was answered already
    end = time.monotonic() + deadline_s
    try:
        while time.monotonic() < end:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
            if pending and pending[0][0] in b"".join(chunks)[answered:]:
                prompt, line = pending.pop(0)
                answered = len(b"".join(chunks))
                os.write(master, line + b"\r")
        else:
            proc.kill()
    finally:
        os.close(master)
    returncode = proc.wait()
    raw = b"".join(chunks)
    lines, seen = replay(raw, cols, rows)
    return Screen(lines, seen, raw, returncode)


def replay(raw: bytes, cols: int, rows: int) -> tuple[list[str], list[str]]:
    """Feed `raw` to a `cols` × `rows` terminal; return its final rows and every distinct
    row it showed, looked at before each carriage return: a live display begins each
    redraw with one, so every frame is seen however the bytes arrived."""
    screen = pyte.Screen(cols, rows)
    stream = pyte.ByteStream(screen)
    seen: dict[str, None] = {}
    for part in re.split(b"(?=\r)", raw):
        stream.feed(part)
        for y in sorted(screen.dirty):  # only the rows this part changed
            if 0 <= y < rows:
                line = screen.buffer[y]
                row = "".join(line[x].data for x in range(cols)).rstrip()
                if row:
                    seen.setdefault(row, None)
        screen.dirty.clear()
    return [row.rstrip() for row in screen.display], list(seen)
