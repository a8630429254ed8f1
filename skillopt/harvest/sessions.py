"""Reading the session transcripts the user named: the files under each path, each
streamed line by line into the exchanges it holds (a request of the user's and what
followed it until the next one).

Invariants: only the paths given are read (a directory is walked for `*.jsonl`
files, symlinks not followed), never a default location. Reading never fails on
what is inside a file: a line that is too long, not UTF-8, not JSON or not an
object is skipped and counted as unreadable, a line of an unknown shape is counted
as unknown, a file of neither agent's shape is counted as not a session. Memory is
bounded by `MAX_LINE` per line and by the clipped texts of the exchanges kept.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt.errors import InputError
from skillopt.harvest import claude, codex
from skillopt.harvest.steps import Step

MAX_LINE = 8 * 1024 * 1024  # bytes: a tool result holding a large file
MAX_FILES = 20_000
SNIFF_LINES = 50  # lines read before a file of neither shape is given up on
AGENTS = {"claude-code": claude.steps, "codex": codex.steps}


@dataclass(frozen=True)
class Exchange:
    """One request of the user's and what followed it in its session."""

    request: str
    agent: str  # "claude-code" or "codex"
    session: str
    file: str
    at: str
    cwd: str
    reads: tuple[str, ...]
    tools: tuple[tuple[str, int], ...]  # tool name, calls, in first-call order
    answer: str  # the agent's last words before the next request
    errors: tuple[str, ...]  # the first failed tool calls' messages
    failures: int  # failed tool calls
    retries: int  # calls repeating an earlier call of the same exchange
    interrupted: bool
    next_request: str  # the user's next turn in the session ("" when none)


@dataclass(frozen=True)
class ReadReport:
    """What reading the sessions came to."""

    files: int = 0
    sessions: dict[str, int] = field(default_factory=dict)  # by agent, subagents apart
    lines: int = 0
    unreadable: tuple[tuple[str, int], ...] = ()  # file, lines that could not be read
    unknown: int = 0  # lines of a shape neither reader knows
    not_sessions: tuple[str, ...] = ()  # files of neither agent's shape
    failed: tuple[tuple[str, str], ...] = ()  # files that could not be opened, why
    over_limit: int = 0  # files left unread past MAX_FILES


def session_files(sources: Sequence[str | Path]) -> tuple[list[Path], int]:
    """The files to read under the paths named (`~` expanded; a file as it is, a
    directory's `*.jsonl` files in name order) and how many were left out past
    `MAX_FILES`. A path that does not exist is an `InputError` naming it."""
    if not sources:
        raise InputError(
            "name the sessions to read with --from (a ~/.claude/projects/<project> "
            "directory, a session file or a Codex sessions directory): none is read "
            "by default",
            field="--from",
        )
    files: list[Path] = []
    for source in sources:
        path = Path(os.path.expanduser(str(source)))
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            for root, dirs, names in os.walk(path, onerror=lambda exc: None):
                dirs.sort()
                files.extend(Path(root) / n for n in sorted(names) if n.endswith(".jsonl"))
                if len(files) > MAX_FILES:
                    break
        else:
            raise InputError("no such file or directory", path=path, field="--from")
    unique = list(dict.fromkeys(files))
    return unique[:MAX_FILES], max(0, len(unique) - MAX_FILES)


def read_sessions(sources: Sequence[str | Path]) -> tuple[list[Exchange], ReadReport]:
    """Every exchange of every session under `sources`, and what reading found."""
    files, over = session_files(sources)
    tally = _Tally()
    exchanges: list[Exchange] = []
    for path in files:
        exchanges.extend(tally.read_file(path))
    return exchanges, tally.report(len(files), over)


class _Tally:
    """The counts of one harvest's reading, kept as it goes."""

    def __init__(self) -> None:
        self.sessions: Counter[str] = Counter()
        self.lines = 0
        self.unknown = 0
        self.unreadable: list[tuple[str, int]] = []
        self.not_sessions: list[str] = []
        self.failed: list[tuple[str, str]] = []

    def read_file(self, path: Path) -> list[Exchange]:
        """The exchanges of the session in the file `path`, counting what it holds."""
        unreadable = 0

        def bad() -> None:
            nonlocal unreadable
            unreadable += 1

        agent: str | None = None
        seen = 0
        session = _Session(str(path), path.stem)
        try:
            with open(path, "rb") as handle:
                for line in _lines(handle, bad):
                    seen += 1
                    self.lines += 1
                    if agent is None:
                        agent = _agent(line)
                        if agent is None:
                            if seen >= SNIFF_LINES:
                                break
                            continue
                    found = AGENTS[agent](line)
                    if found is None:
                        self.unknown += 1
                        continue
                    for step in found:
                        session.add(step)
        except OSError as exc:
            self.failed.append((str(path), exc.strerror or type(exc).__name__))
            return []
        if unreadable:
            self.unreadable.append((str(path), unreadable))
        if agent is None:
            self.not_sessions.append(str(path))
            return []
        sub = session.sidechain and not session.exchanges_started
        self.sessions[f"{agent} subagent" if sub else agent] += 1
        return session.exchanges(agent)

    def report(self, files: int, over: int) -> ReadReport:
        return ReadReport(
            files=files,
            sessions=dict(self.sessions),
            lines=self.lines,
            unreadable=tuple(self.unreadable),
            unknown=self.unknown,
            not_sessions=tuple(self.not_sessions),
            failed=tuple(self.failed),
            over_limit=over,
        )


def _lines(handle: Any, bad: Callable[[], None]) -> Iterator[dict[str, Any]]:
    """The JSON objects of a binary file's lines; `bad()` for each line that is
    not one (too long, not UTF-8, not JSON, not an object)."""
    while True:
        raw = handle.readline(MAX_LINE + 1)
        if not raw:
            return
        if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):  # skip the rest of the line
                raw = handle.readline(1 << 20)
            bad()
            continue
        if not raw.strip():
            continue
        try:
            line = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            bad()
            continue
        if isinstance(line, dict):
            yield line
        else:
            bad()


def _agent(line: dict[str, Any]) -> str | None:
    if codex.is_codex(line):
        return "codex"
    if claude.is_claude(line):
        return "claude-code"
    return None


class _Session:
    """The exchanges of one session, built step by step."""

    def __init__(self, file: str, name: str) -> None:
        self.file = file
        self.id = name
        self.cwd = ""
        self.sidechain = False
        self.exchanges_started = False
        self._done: list[dict[str, Any]] = []
        self._open: dict[str, Any] | None = None

    def add(self, step: Step) -> None:
        if step.kind == "meta":
            self.cwd = self.cwd or step.cwd
            self.id = step.text or self.id
        elif step.kind == "sidechain":
            self.sidechain = True
        elif step.kind == "request":
            self._close(step.text)
            self.exchanges_started = True
            self._open = {
                "request": step.text,
                "at": step.at,
                "cwd": self.cwd,
                "reads": {},
                "tools": Counter(),
                "calls": set(),
                "answer": "",
                "errors": [],
                "failures": 0,
                "retries": 0,
                "interrupted": False,
            }
        elif self._open is not None:
            self._follow(self._open, step)

    @staticmethod
    def _follow(turn: dict[str, Any], step: Step) -> None:
        if step.kind == "tool":
            turn["tools"][step.tool] += 1
            key = (step.tool, step.call)
            if key in turn["calls"]:
                turn["retries"] += 1
            elif len(turn["calls"]) < 500:
                turn["calls"].add(key)
            for read in step.reads:
                if len(turn["reads"]) < 20:
                    turn["reads"][read] = None
        elif step.kind == "result" and step.error:
            turn["failures"] += 1
            if len(turn["errors"]) < 5:
                turn["errors"].append(step.text[:1024])
        elif step.kind == "answer":
            turn["answer"] = step.text
        elif step.kind == "interrupt":
            turn["interrupted"] = True

    def _close(self, next_request: str) -> None:
        if self._open is not None:
            self._done.append({**self._open, "next_request": next_request})
            self._open = None

    def exchanges(self, agent: str) -> list[Exchange]:
        self._close("")
        return [
            Exchange(
                request=t["request"],
                agent=agent,
                session=self.id,
                file=self.file,
                at=t["at"],
                cwd=t["cwd"] or self.cwd,
                reads=tuple(t["reads"]),
                tools=tuple(t["tools"].items()),
                answer=t["answer"],
                errors=tuple(t["errors"]),
                failures=t["failures"],
                retries=t["retries"],
                interrupted=t["interrupted"],
                next_request=t["next_request"],
            )
            for t in self._done
        ]
