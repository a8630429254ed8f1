"""Exact replay of a finished run from its recorded calls, and bundles that carry a
run to another machine.

`replay(RUN)` trains again with the run's recorded settings, suite and initial skill
(read from its audit history), but with nothing that can reach a model: every
rollout must come from the rollout store and every optimizer reply from the stored
replies, or the replay stops with `ReplayMiss`. It then compares the replay's steps
with the recorded ones (kind, decision, candidate skill hash, validation score) and
reports the first that differs, or that the run reproduced, with the same best skill.

`bundle(RUN, OUT)` packs what a replay needs into one `.tar.gz`: the run directory,
the run's audit history (a bare repository holding only its refs), the suite it
was trained on, and exactly the store rows it used (rollouts, skill texts and
optimizer replies, from the store's `uses` table). `replay(OUT)` works from it
anywhere, with no key and no model.

Invariants: a replay makes zero model calls (the engine is offline, the optimizer's
stored replies are offline); it writes only into a temporary directory, never into
the user's skill repository, store or runs.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tarfile
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from skillopt.config import Settings
from skillopt.errors import InputError, first_error
from skillopt.models.stored import ReplayMiss
from skillopt.runs.read import find_run
from skillopt.runs.rundir import RunDir
from skillopt.skill.document import SKILL_FILE, Skill
from skillopt.store.audit import Audit
from skillopt.store.rollouts import RolloutStore
from skillopt.training.state import TrainState
from skillopt.training.steps import (
    BatchRecord,
    InitialRecord,
    SlowUpdateRecord,
    StepRecord,
    gate_of,
)
from skillopt.training.unpack import tree_bytes, unpack

if TYPE_CHECKING:
    from skillopt.training.events import TrainObserver

MANIFEST = "bundle.json"
BUNDLE_VERSION = 1
# what must agree, step by step, for a replay to reproduce a run
_COMPARED = ("kind", "decision", "skill_hash", "val")


@dataclass
class ReplayResult:
    run_id: str
    steps: int  # recorded steps compared
    reproduced: bool
    best_hash: str  # the replay's best skill
    recorded_best_hash: str
    model_calls: int  # target rollouts paid + optimizer calls made (0 for a true replay)
    served: dict[str, int] = field(default_factory=dict)  # rollouts / replies from the store
    first_difference: str | None = None  # the first step that differs, in words

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# ---------------------------------------------------------------------- bundle
def bundle(ref: str | Path, out: str | Path, *, run_dir: str | Path | None = None) -> Path:
    """Pack run `ref` into `out` (a .tar.gz): run dir, audit refs, suite, store rows."""
    run = find_run(ref, run_dir)
    config = run.config()
    state = TrainState.load(run)
    if state is None or state.status != "finished":
        raise InputError(
            "only a finished run can be bundled (resume it first)", path=run.state_path
        )
    store_path = _store_path(config)
    out = Path(out)
    with tempfile.TemporaryDirectory(prefix="skillopt-bundle-") as tmp:
        root = Path(tmp) / "bundle"
        root.mkdir()
        shutil.copytree(
            run.path, root / "runs" / run.run_id, ignore=shutil.ignore_patterns("workspaces")
        )
        _copy_audit(config, run.run_id, root / "audit.git")
        suite_name = _copy_suite(Path(config["suite"]), root / "suite")
        counts = _copy_rows(store_path, run.run_id, root / "store.sqlite")
        manifest = {
            "version": BUNDLE_VERSION,
            "run_id": run.run_id,
            "suite": suite_name,
            "skill_path": config["audit"]["skill_path"],
            "rows": counts,
            # what it unpacks to: a replay refuses to write more (`training/unpack`)
            "bytes": tree_bytes(root) + 4096,  # + the manifest itself
        }
        (root / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        out.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(out, "w:gz") as tar:
            tar.add(root, arcname="bundle")
    return out


def _store_path(config: Mapping[str, Any]) -> Path:
    path = Path(config["settings"].get("store") or "runs/rollouts.sqlite")
    if not path.is_file():
        raise InputError(
            "the run's rollout store is not here, so its calls cannot be read back "
            "(run from the directory the run was trained in, or replay a bundle)",
            path=path,
        )
    return path


def _copy_audit(config: Mapping[str, Any], run_id: str, dest: Path) -> None:
    """A bare repository holding only the run's refs and what they reach."""
    audit = config["audit"]
    Audit.open(audit["repo"], run_id, audit["skill_path"]).copy_run(dest)


def _copy_suite(suite: Path, dest: Path) -> str:
    """The suite file and the files beside it that it may reference (its .jsonl
    items); returns the suite's file name."""
    if not suite.is_file():
        raise InputError("the run's task suite is gone", path=suite)
    dest.mkdir(parents=True)
    for sibling in suite.parent.iterdir():
        if sibling.is_file() and (
            sibling == suite or sibling.suffix in (".jsonl", ".json", ".yaml", ".yml")
        ):
            shutil.copy2(sibling, dest / sibling.name)
    return suite.name


def _copy_rows(store_path: Path, run_id: str, dest: Path) -> dict[str, int]:
    """A new store holding exactly the rows `run_id` used."""
    with RolloutStore(dest):
        pass  # the schema, migrated
    db = sqlite3.connect(dest)
    try:
        db.execute("ATTACH DATABASE ? AS src", (str(store_path),))

        def copy(table: str, where: str, *args: str) -> None:
            # by column name: the two stores may have gained columns in another order
            cols = ", ".join(r[1] for r in db.execute(f"PRAGMA main.table_info({table})"))
            db.execute(
                f"INSERT INTO main.{table} ({cols}) SELECT {cols} FROM src.{table} WHERE {where}",
                args,
            )

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
        db.commit()
        counts = {
            table: db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("rollouts", "replies", "skills")
        }
    finally:
        db.close()
    return counts


# ---------------------------------------------------------------------- replay
@dataclass
class _Recording:
    run: RunDir
    config: dict[str, Any]
    state: TrainState
    store: Path
    suite: Path
    audit_repo: Path


@contextmanager
def _recording(ref: str | Path, run_dir: str | Path | None) -> Iterator[_Recording]:
    path = Path(ref)
    if path.is_file() and tarfile.is_tarfile(path):
        with tempfile.TemporaryDirectory(prefix="skillopt-replay-") as tmp:
            root = unpack(path, Path(tmp))
            try:
                manifest = json.loads((root / MANIFEST).read_text())
            except (OSError, ValueError):
                raise InputError("not a skillopt bundle (no bundle.json)", path=path) from None
            if not isinstance(manifest, dict) or not isinstance(manifest.get("suite"), str):
                raise InputError("its bundle.json names no suite", path=path)
            run = RunDir(root / "runs" / str(manifest.get("run_id")))
            yield _Recording(
                run,
                run.config(),
                _finished_state(run),
                root / "store.sqlite",
                root / "suite" / manifest["suite"],
                root / "audit.git",
            )
        return
    run = find_run(ref, run_dir)
    config = run.config()
    yield _Recording(
        run,
        config,
        _finished_state(run),
        _store_path(config),
        Path(config["suite"]),
        Path(config["audit"]["repo"]),
    )


def _finished_state(run: RunDir) -> TrainState:
    state = TrainState.load(run)
    if state is None or state.status != "finished":
        raise InputError(
            "only a finished run can be replayed (resume it first)", path=run.state_path
        )
    return state


def replay(
    ref: str | Path, *, run_dir: str | Path | None = None, observers: Sequence[TrainObserver] = ()
) -> ReplayResult:
    """Re-run the finished run `ref` (an id, a run directory, or a bundle) from its
    recorded calls only, and compare its decisions and best skill with the record."""
    from skillopt.suite.loader import load_suite
    from skillopt.training.session_build import NewRun, RunSession
    from skillopt.training.session_parts import choose_optimizer

    with _recording(ref, run_dir) as rec, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        skill_path = rec.config["audit"]["skill_path"]
        audit = Audit.open(rec.audit_repo, rec.run.run_id, skill_path)
        initial = next((c for c in audit.accepted() if c.step == 0), None)
        if initial is None:
            raise InputError("the run's history has no initial commit", path=rec.audit_repo)
        skill_dir = _materialise(audit, initial.sha, work / "skill" / Path(skill_path).name)
        settings = _offline_settings(
            rec.config, rec.store, work / "runs", rec.run.path / "run.yaml"
        )
        skill = Skill.load(skill_dir)
        session = RunSession.open(
            load_suite(rec.suite),
            settings,
            skill=skill,
            skill_dir=skill_dir,
            where=NewRun(work / "runs", f"{rec.run.run_id}-replay", str(skill_dir), str(rec.suite)),
            optimizer=choose_optimizer(settings.optimizer, settings),
            observers=observers,
            offline=True,
        )
        state = session.state
        miss: str | None = None
        try:
            try:
                session.trainer.run()
            except ReplayMiss as exc:
                miss = f"step {state.step + 1}: {exc}"
            spend = session.ctx.store.spend(session.run.run_id)
        finally:
            session.close()
        recorded = rec.state
        first = miss or _first_difference(recorded.steps, state.steps)
        if first is None and state.incumbent.hash != recorded.incumbent.hash:
            first = (
                f"the best skill differs: {state.incumbent.hash[:12]} replayed, "
                f"{recorded.incumbent.hash[:12]} recorded"
            )
        return ReplayResult(
            run_id=rec.run.run_id,
            steps=len(recorded.steps),
            reproduced=first is None,
            best_hash=state.incumbent.hash,
            recorded_best_hash=recorded.incumbent.hash,
            model_calls=spend.target.rollouts + spend.optimizer.calls,
            served={
                "rollouts": spend.target.cached,
                "replies": spend.optimizer.cached,
            },
            first_difference=first,
        )


def _materialise(audit: Audit, sha: str, dest: Path) -> Path:
    """The skill directory as committed at `sha`, written to `dest`."""
    for rel, data in audit.skill_files(sha).items():
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    if not (dest / SKILL_FILE).is_file():
        raise InputError("the run's initial commit holds no SKILL.md", path=audit.location)
    return dest


def _offline_settings(config: Mapping[str, Any], store: Path, runs: Path, where: Path) -> Settings:
    """The run's settings, reading the recorded store and writing under `runs`: no key
    is needed (none is used) and no budget applies (nothing is paid). Recorded
    settings out of shape are an `InputError` naming `where` (run.yaml) and the
    setting."""
    recorded = dict(config["settings"])
    recorded.update(
        store=str(store),
        run_dir=str(runs),
        budget_usd=None,
        max_target_rollouts=None,
        max_optimizer_calls=None,
        time_limit=None,
    )
    models = recorded.get("models") or {}
    if isinstance(models, dict):  # else out of shape: Settings names it
        recorded["models"] = {
            name: {**(m or {}), "api_key_env": None} if isinstance(m, dict | None) else m
            for name, m in models.items()
        }
    try:
        return Settings(**recorded)
    except ValidationError as exc:
        field, msg = first_error(exc)
        raise InputError(msg, path=where, field=f"settings.{field}") from None


def _first_difference(recorded: Sequence[StepRecord], replayed: Sequence[StepRecord]) -> str | None:
    for old, new in zip(recorded, replayed):
        a, b = _decision(old), _decision(new)
        if a != b:
            what = ", ".join(
                f"{k} {b.get(k)!r} replayed, {a.get(k)!r} recorded"
                for k in _COMPARED
                if a.get(k) != b.get(k)
            )
            return f"step {old.step}: {what}"
    if len(recorded) != len(replayed):
        return (
            f"the replay recorded {len(replayed)} steps, the run {len(recorded)} "
            f"(first missing: step {min(len(recorded), len(replayed))})"
        )
    return None


def _decision(rec: StepRecord) -> dict[str, object]:
    """What must agree between a recorded step and its replay (`_COMPARED`): the
    score is the candidate's where a gate ran, else the initial skill's (or none)."""
    gate = gate_of(rec)
    return {
        "kind": rec.kind,
        "decision": rec.decision,
        "skill_hash": rec.skill_hash if isinstance(rec, (BatchRecord, SlowUpdateRecord)) else None,
        "val": gate.candidate_mean
        if gate is not None
        else rec.val
        if isinstance(rec, InitialRecord)
        else None,
    }
