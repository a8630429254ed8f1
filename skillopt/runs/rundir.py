"""A run directory: `runs/<run-id>/` with its config, event log and checkpoint.

Invariants: `state.json` is replaced atomically (temp file + `os.replace`), so a
crash leaves the previous checkpoint intact; what it holds, and its version, belong
to `skillopt.training.state`. `events.jsonl` is append-only, one JSON object per
line; `run.yaml` never holds a secret. Every file of a run is read here, and one
that cannot be read or is out of shape (cut short, not text, a directory, a field
of the wrong type) is one `InputError` naming the file and the field: `run.yaml`
is read once into a checked `RunConfig`, whatever command reads it.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from skillopt._util import secrets
from skillopt._util.text import safe
from skillopt.errors import InputError


@dataclass(frozen=True)
class AuditPlace:
    """Where a run's audit is: the repository, the run's branch, and the skill
    directory's path inside each commit's tree."""

    repo: str
    branch: str
    skill_path: str


@dataclass(frozen=True)
class RunConfig:
    """`run.yaml`: the run's skill and suite (paths as given), its settings as
    resolved (a mapping; `skillopt.config` validates them where they are used), where
    its audit is, and the roles given as objects in code (`objects`: role → what
    it was). `data` is the file's mapping as written."""

    skill: str
    suite: str
    settings: dict[str, Any]
    audit: AuditPlace
    objects: dict[str, str]
    data: dict[str, Any]

    @classmethod
    def read(cls, path: Path) -> RunConfig:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise InputError(
                f"cannot read the run's settings: {_one_line(exc)}", path=path
            ) from None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise InputError("run.yaml does not hold a mapping", path=path)

        def field(where: dict[str, Any], key: str, kind: type, name: str = "") -> Any:
            value = where.get(key)
            if not isinstance(value, kind) or (kind is str and not value):
                what = "a mapping" if kind is dict else "a non-empty string"
                got = "missing" if key not in where else f"got {type(value).__name__}"
                raise InputError(
                    f"expected {what}, {got}; the run cannot be read", path=path, field=name or key
                )
            return value

        audit = field(data, "audit", dict)
        settings = field(data, "settings", dict)
        if not isinstance(settings.get("store"), str | None):  # read before Settings are
            raise InputError("expected a file name", path=path, field="settings.store")
        warned = data.get("suite_warnings", [])
        if not isinstance(warned, list) or not all(isinstance(w, str) for w in warned):
            raise InputError("expected a list of warnings", path=path, field="suite_warnings")
        objects = data.get("objects") or {}
        if not isinstance(objects, dict) or not all(isinstance(v, str) for v in objects.values()):
            raise InputError("expected a mapping of role: name", path=path, field="objects")
        return cls(
            skill=field(data, "skill", str),
            suite=field(data, "suite", str),
            settings=settings,
            audit=AuditPlace(
                repo=field(audit, "repo", str, "audit.repo"),
                branch=str(audit.get("branch") or ""),
                skill_path=field(audit, "skill_path", str, "audit.skill_path"),
            ),
            objects={str(k): v for k, v in objects.items()},
            data=data,
        )


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def new_run_id(skill_name: str) -> str:
    return f"{skill_name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(2).hex()}"


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` at once. The text is made safe first: a reply that
    reached a run file must neither crash the write nor carry a secret."""
    text = safe(text) or ""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():  # os.replace cannot put a file there
        raise InputError("a directory is in the way of the file to write; remove it", path=path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


IGNORE_ALL = "# made by skillopt: run output, not for version control\n*\n"


def output_dir(path: Path) -> Path:
    """Make `path` (with its parents) for skillopt's output and return it. A
    directory made here gets a `.gitignore` ignoring everything in it, itself
    included, as pytest and ruff do for their caches: `runs/` never shows up as
    untracked in the user's repository, whatever its `.gitignore` says. A
    directory that already exists is left as it is."""
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):  # a read-only place still gets its output
            (path / ".gitignore").write_text(IGNORE_ALL, encoding="utf-8")
    return path


class RunDir:
    def __init__(self, path: Path):
        self.path = path
        self.run_id = path.name
        self._events_lock = threading.Lock()
        self._events_fh: TextIO | None = None

    @classmethod
    def create(cls, runs_dir: Path, run_id: str) -> RunDir:
        path = output_dir(runs_dir) / run_id
        path.mkdir(exist_ok=False)
        return cls(path)

    @classmethod
    def find(cls, ref: str, runs_dir: Path) -> RunDir:
        """A run by directory path or by id under `runs_dir`."""
        for candidate in (Path(ref), runs_dir / ref):
            if (candidate / "run.yaml").is_file():
                return cls(candidate)
        there = sorted(
            (p for p in runs_dir.glob("*/run.yaml") if p.is_file()),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
        ids = [p.parent.name for p in there]
        known = (
            f" (runs there, newest first: {', '.join(ids[:5])}"
            + (f", and {len(ids) - 5} more" if len(ids) > 5 else "")
            + ")"
            if ids
            else " (it holds none)"
        )
        raise InputError(f"no run {ref!r}: give a run directory or an id under {runs_dir}/{known}")

    # -- config ----------------------------------------------------------------------
    def write_config(self, config: dict[str, Any]) -> None:
        write_atomic(
            self.path / "run.yaml",
            yaml.safe_dump(secrets.redact(config), sort_keys=False, allow_unicode=True),
        )

    def config(self) -> dict[str, Any]:
        """`run.yaml` as written, once `record` has checked it: every field its
        readers use is there with its type."""
        return self.record().data

    def record(self) -> RunConfig:
        """`run.yaml` as a checked record; one `InputError` naming the file (and
        the field) when it cannot be read or is out of shape."""
        return RunConfig.read(self.path / "run.yaml")

    # -- state -----------------------------------------------------------------------
    @property
    def state_path(self) -> Path:
        return self.path / "state.json"

    def save_state(self, data: dict[str, Any]) -> None:
        """Replace the checkpoint with `data` (the trainer's state, already in its
        versioned format: `skillopt.training.state` owns what it holds)."""
        # compact JSON: the C encoder, a few ms even for a long run's state
        write_atomic(
            self.state_path,
            json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str),
        )

    def load_state(self) -> object:
        """The checkpoint's JSON data as written (what it holds is checked by
        `skillopt.training.state`, which names the file when it is not a checkpoint),
        or None if there is none yet."""
        path = self.state_path
        if not path.is_file():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InputError(f"the checkpoint is corrupt: {exc.msg}", path=path) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(
                f"the checkpoint cannot be read: {_one_line(exc)}", path=path
            ) from None

    # -- events ----------------------------------------------------------------------
    def event(self, kind: str, /, **data: Any) -> None:
        # `t` to the microsecond: the HTML report places the store's ledger rows
        # (time.time(), unrounded) before or after each step's decision by it
        line = safe(
            json.dumps(
                {"t": round(time.time(), 6), "event": kind, **data}, ensure_ascii=False, default=str
            )
        )
        assert line is not None  # a JSON object is never empty text
        with self._events_lock:
            if self._events_fh is None:
                self._events_fh = open(self.path / "events.jsonl", "a", encoding="utf-8")
            self._events_fh.write(line + "\n")
            self._events_fh.flush()

    def close(self) -> None:
        with self._events_lock:
            if self._events_fh is not None:
                self._events_fh.close()
                self._events_fh = None

    def events(self) -> list[dict[str, Any]]:
        """The event log, one object per line. A last line without its newline is a
        write a crash cut short, and is left out; any other line that is not a JSON
        object is an `InputError` naming the file and the line."""
        path = self.path / "events.jsonl"
        if not path.exists():
            return []
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"the event log cannot be read: {_one_line(exc)}", path=path) from None
        lines = text.split("\n")
        out = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            if not isinstance(event, dict):
                if number == len(lines):  # no newline after it: cut short by a crash
                    break
                raise InputError(
                    "not a JSON object: the event log is corrupt", path=path, line=number
                )
            out.append(event)
        return out

    # -- outputs ---------------------------------------------------------------------
    def write_text(self, name: str, text: str) -> Path:
        target = self.path / name
        write_atomic(target, text)
        return target
