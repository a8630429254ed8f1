"""What a replay reads a finished run from: its recording, opened from a run (its id
or directory) or from a bundle (`skillopt bundle`), and the copying of exactly the
store rows one run used.

Invariants:
- Opening a recording never writes into the user's store, runs or skill
  repository: a run's rows are copied into a private temporary store (the user's
  store is attached read-only), a bundle is unpacked into a temporary directory
  (`training/unpack`), and both are gone when the recording is closed. So a replay
  counts only its own calls, however often it is repeated.
- A recording is a finished run; anything else is one `InputError`.
"""

from __future__ import annotations

import json
import sqlite3
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillopt.errors import InputError
from skillopt.runs.read import find_run
from skillopt.runs.rundir import RunDir
from skillopt.store.rollouts import RolloutStore
from skillopt.training.state import TrainState
from skillopt.training.unpack import MANIFEST, unpack

RECORDED = ("rollouts", "replies", "skills")  # the tables a recording holds, counted


@dataclass(frozen=True)
class Recording:
    """A finished run and where its parts are: `store` is a private copy, never the
    user's; `source` is what the user named (the bundle, for messages)."""

    run: RunDir
    config: dict[str, Any]
    state: TrainState
    store: Path
    suite: Path
    audit_repo: Path
    source: str


@contextmanager
def open_recording(ref: str | Path, run_dir: str | Path | None) -> Iterator[Recording]:
    """The recording of `ref`: a bundle file, or a run's id or directory."""
    path = Path(ref)
    with tempfile.TemporaryDirectory(prefix="skillopt-replay-") as tmp:
        if path.is_file() and tarfile.is_tarfile(path):
            yield recording_in(unpack(path, Path(tmp)), path)
            return
        run = find_run(ref, run_dir)
        config = run.config()
        state = finished_state(run)
        store = Path(tmp) / "store.sqlite"
        copy_rows(store_path(config), run.run_id, store)
        yield Recording(
            run,
            config,
            state,
            store,
            Path(config["suite"]),
            Path(config["audit"]["repo"]),
            str(ref),
        )


def recording_in(root: Path, bundle: Path) -> Recording:
    """The recording an unpacked bundle holds (`root`: its `bundle/` directory)."""
    try:
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise InputError("not a skillopt bundle (no bundle.json)", path=bundle) from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("suite"), str):
        raise InputError("its bundle.json names no suite", path=bundle)
    if not isinstance(manifest.get("run_id"), str):
        raise InputError("its bundle.json names no run", path=bundle)
    run = RunDir(root / "runs" / manifest["run_id"])
    return Recording(
        run,
        run.config(),
        finished_state(run),
        root / "store.sqlite",
        root / "suite" / manifest["suite"],
        root / "audit.git",
        str(bundle),
    )


def finished_state(run: RunDir) -> TrainState:
    state = TrainState.load(run)
    if state is None or state.status != "finished":
        raise InputError(
            "only a finished run can be replayed or bundled (resume it first)",
            path=run.state_path,
        )
    return state


def store_path(config: Mapping[str, Any]) -> Path:
    """The run's rollout store, which must exist."""
    path = Path(config["settings"].get("store") or "runs/rollouts.sqlite")
    if not path.is_file():
        raise InputError(
            "the run's rollout store is not here, so its calls cannot be read back "
            "(run from the directory the run was trained in, or replay a bundle)",
            path=path,
        )
    return path


def copy_rows(source: Path, run_id: str, dest: Path) -> dict[str, int]:
    """A new store at `dest` holding exactly the rows `run_id` used (its rollouts,
    optimizer replies, their skill texts and the run's `uses`); `source` is only
    read (attached read-only: its file is left as it was). The count of each table."""
    with RolloutStore(dest):
        pass  # the schema, migrated
    db = sqlite3.connect(dest, uri=True)  # uri: the source is attached by a URI
    try:
        db.execute("ATTACH DATABASE ? AS src", (source.resolve().as_uri() + "?mode=ro",))

        def copy(table: str, where: str, *args: str) -> None:
            # by column name: the two stores may have gained columns in another order
            cols = ", ".join(r[1] for r in db.execute(f"PRAGMA main.table_info({table})"))
            db.execute(
                f"INSERT INTO main.{table} ({cols}) SELECT {cols} FROM src.{table} WHERE {where}",
                args,
            )

        try:
            copy(
                "rollouts",
                "key IN (SELECT key FROM src.uses WHERE run_id = ? AND kind = 'rollout')",
                run_id,
            )
            copy(
                "replies",
                "key IN (SELECT key FROM src.uses WHERE run_id = ? AND kind = 'reply')",
                run_id,
            )
            copy("skills", "hash IN (SELECT skill_hash FROM main.rollouts)")
            copy("uses", "run_id = ?", run_id)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"the rollout store cannot be read: {exc}", path=source) from None
        db.commit()
        counts = {t: int(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in RECORDED}
    finally:
        db.close()
    return counts


def recorded_harness(store: Path) -> dict[str, Any] | None:
    """The harness fingerprint the recording's rollouts were made with, when they
    agree on one (None: no rollout, or several harnesses)."""
    db = sqlite3.connect(store)
    try:
        found = {
            str(row[0])
            for row in db.execute(
                "SELECT DISTINCT json_extract(fingerprint, '$.harness') FROM rollouts"
            )
            if row[0] is not None
        }
    except sqlite3.DatabaseError:
        return None
    finally:
        db.close()
    if len(found) != 1:
        return None
    value = json.loads(found.pop())
    return value if isinstance(value, dict) else None


def lost_calls(store: Path, run_id: str) -> dict[str, int]:
    """How many of the calls `run_id` used (its `uses`) the recording at `store` no
    longer holds, by kind (`rollout`, `reply`); none lost: an empty mapping."""
    db = sqlite3.connect(store)
    try:
        rows = db.execute(
            "SELECT kind, COUNT(*) FROM uses WHERE run_id = ? AND ("
            "(kind = 'rollout' AND key NOT IN (SELECT key FROM rollouts)) OR "
            "(kind = 'reply' AND key NOT IN (SELECT key FROM replies))) GROUP BY kind",
            (run_id,),
        ).fetchall()
    except sqlite3.DatabaseError:
        return {"recording": 1}  # unreadable: nothing of it can be trusted
    finally:
        db.close()
    return {str(kind): int(n) for kind, n in rows}
