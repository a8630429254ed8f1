"""Exact replay of a finished run from its recorded calls.

`replay(RUN)` trains again with the run's recorded settings, suite and initial skill
(read from its audit history), but with nothing that can reach a model: every
rollout must come from the recording and every optimizer reply from the stored
replies, or the replay stops with `ReplayMiss`. It then compares the replay's steps
with the recorded ones (kind, decision, candidate skill hash, validation score).

The verdict is one of three: `reproduced` (the same decisions and best skill),
`differs` (the first step whose decision differs, in words, or where the replay
asked for a call the run never made) or `incomplete` (the replay needed a call the
recording lacks though the run made it — its `uses` name calls the recording no
longer holds: which step, and how many rollouts or replies), so a recording with a
hole never reads as a run that does not reproduce.

Invariants:
- A replay makes zero model calls (the engine is offline, the optimizer's stored
  replies are offline), and runs none of the suite's code unless told to trust it
  (`trust_code`): its python and command scorers are built `Unloaded`, which is
  enough for every rollout served from the recording.
- It writes only into temporary directories (`training/recording`), never into the
  user's skill repository, store or runs, and so it counts only its own calls.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from skillopt.config import Settings
from skillopt.errors import InputError, first_error
from skillopt.models.stored import ReplayMiss
from skillopt.skill.document import SKILL_FILE, Skill
from skillopt.store.audit import Audit
from skillopt.training.recording import (
    Recording,
    lost_calls,
    open_recording,
    recorded_harness,
)
from skillopt.training.steps import (
    BatchRecord,
    InitialRecord,
    SlowUpdateRecord,
    StepRecord,
    gate_of,
)

if TYPE_CHECKING:
    from skillopt.suite.task import Suite
    from skillopt.training.events import TrainObserver

Verdict = Literal["reproduced", "differs", "incomplete"]
# what must agree, step by step, for a replay to reproduce a run
_COMPARED = ("kind", "decision", "skill_hash", "val")


@dataclass(frozen=True)
class ReplayResult:
    run_id: str
    steps: int  # recorded steps compared
    verdict: Verdict
    best_hash: str  # the replay's best skill
    recorded_best_hash: str
    model_calls: int  # target rollouts paid + optimizer calls made (0 for a true replay)
    served: dict[str, int] = field(default_factory=dict)  # rollouts / replies recorded
    # the first step that differs, or what the recording lacks, in words
    first_difference: str | None = None

    @property
    def reproduced(self) -> bool:
        return self.verdict == "reproduced"

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "reproduced": self.reproduced}


def replay(
    ref: str | Path,
    *,
    run_dir: str | Path | None = None,
    trust_code: bool = False,
    observers: Sequence[TrainObserver] = (),
) -> ReplayResult:
    """Re-run the finished run `ref` (an id, a run directory, or a bundle) from its
    recorded calls only, and compare its decisions and best skill with the record.
    `trust_code`: load the suite's scorer code (a bundle's code is its sender's)."""
    with open_recording(ref, run_dir) as rec:
        return replay_recording(rec, trust_code=trust_code, observers=observers)


def replay_recording(
    rec: Recording,
    *,
    trust_code: bool = False,
    store: Path | None = None,
    observers: Sequence[TrainObserver] = (),
) -> ReplayResult:
    """Replay `rec` (reading and writing `store`, a copy of its rows, when given)."""
    from skillopt.suite.loader import load_suite
    from skillopt.training.session_build import NewRun, RunSession
    from skillopt.training.session_parts import choose_optimizer

    with tempfile.TemporaryDirectory(prefix="skillopt-replay-") as tmp:
        work = Path(tmp)
        skill_path = rec.config["audit"]["skill_path"]
        audit = Audit.open(rec.audit_repo, rec.run.run_id, skill_path)
        initial = next((c for c in audit.accepted() if c.step == 0), None)
        if initial is None:
            raise InputError("the run's history has no initial commit", path=rec.audit_repo)
        skill_dir = _materialise(audit, initial.sha, work / "skill" / Path(skill_path).name)
        settings = _offline_settings(
            rec.config, store or rec.store, work / "runs", rec.run.path / "run.yaml"
        )
        suite = load_suite(rec.suite, run_code=trust_code)
        session = RunSession.open(
            suite,
            settings,
            skill=Skill.load(skill_dir),
            skill_dir=skill_dir,
            where=NewRun(work / "runs", f"{rec.run.run_id}-replay", str(skill_dir), str(rec.suite)),
            optimizer=choose_optimizer(settings.optimizer, settings),
            observers=observers,
            offline=True,
            recorded_harness=recorded_harness(store or rec.store),
        )
        state = session.state
        miss: str | None = None
        lost: dict[str, int] = {}
        try:
            try:
                session.trainer.run()
            except ReplayMiss as exc:
                miss = f"step {state.step + 1}: {exc}{_untrusted(suite)}"
                lost = lost_calls(store or rec.store, rec.run.run_id)
            spend = session.ctx.store.spend(session.run.run_id)
        finally:
            session.close()
    recorded = rec.state
    if miss and lost:  # the run made calls the recording has lost: it has a hole
        held = ", ".join(f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in sorted(lost.items()))
        miss = f"{miss}; the recording lacks {held} the run used"
    elif miss:  # everything the run used is there: the replay asked for something new
        miss = f"{miss}, though the recording holds every call the run made"
    first = miss or _first_difference(recorded.steps, state.steps)
    if first is None and state.incumbent.hash != recorded.incumbent.hash:
        first = (
            f"the best skill differs: {state.incumbent.hash[:12]} replayed, "
            f"{recorded.incumbent.hash[:12]} recorded"
        )
    return ReplayResult(
        run_id=rec.run.run_id,
        steps=len(recorded.steps),
        verdict="incomplete" if lost else "differs" if first else "reproduced",
        best_hash=state.incumbent.hash,
        recorded_best_hash=recorded.incumbent.hash,
        model_calls=spend.target.rollouts + spend.optimizer.calls,
        served={"rollouts": spend.target.cached, "replies": spend.optimizer.cached},
        first_difference=first,
    )


def _untrusted(suite: Suite) -> str:
    """What to add to a miss when a scorer of the suite was not loaded and its module
    could not be found without importing it (so its rollout key is one no recording
    holds): its code, which `--trust-code` would load."""
    from skillopt.suite.scorers.base import Unloaded

    codes = sorted(
        {
            t.scorer.code
            for t in suite.tasks
            if isinstance(t.scorer, Unloaded) and t.scorer.spec.get("source") == "not-found"
        }
    )
    if not codes:
        return ""
    return f" (the suite's code was not loaded: {'; '.join(codes)}; --trust-code loads it)"


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
        executor="local",  # nothing runs: no cluster is reached
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
