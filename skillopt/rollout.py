"""Rollouts: run a skill on tasks through a harness, score the answers, store them.

Invariants:
- A rollout is identified by its fingerprint (skill hash, task content, sample
  index, harness + target + parameters, scorer). An identical evaluation is served
  from the store with zero model calls.
- A failure of the infrastructure (harness error, scorer that cannot judge) is an
  *unscored* rollout: stored for inspection, excluded from every mean, and run
  again next time. It is never a score of 0.
- Each finished rollout is written to the store as soon as it exists, so an
  interrupted run loses nothing already scored.
"""

from __future__ import annotations

import hashlib
import json
import logging
import queue
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from skillopt.errors import ScorerError, SystemicFailure
from skillopt.harness.base import Harness, Trajectory
from skillopt.models.base import Usage
from skillopt.skill.document import Skill
from skillopt.suite.scorers import ScoreContext
from skillopt.suite.task import Task

if TYPE_CHECKING:
    from skillopt.store.rollouts import RolloutStore

log = logging.getLogger("skillopt")

# A run stops when this many rollouts in a row fail with the same systemic kind
# (or when every rollout of a smaller batch does, at least two, for kinds no retry
# can fix).
STOP_AFTER = 5
SYSTEMIC = frozenset({"auth", "quota", "not_found", "rate_limit"})
HOPELESS = frozenset({"auth", "quota", "not_found"})


@dataclass(frozen=True)
class Rollout:
    key: str
    task_id: str
    split: str
    sample: int
    skill_hash: str
    scored: bool
    score: float | None = None
    passed: bool | None = None
    feedback: str = ""
    answer: str | None = None
    error: str | None = None
    error_kind: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    latency_s: float = 0.0
    model_calls: int = 0
    cached: bool = False
    trajectory: dict = field(default_factory=dict, compare=False)  # messages, steps

    def to_dict(self) -> dict:
        return {
            "task_id": self.task_id, "split": self.split, "sample": self.sample,
            "scored": self.scored, "score": self.score, "passed": self.passed,
            "feedback": self.feedback, "answer": self.answer, "error": self.error,
            "error_kind": self.error_kind, "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens, "cost": self.cost,
            "latency_s": round(self.latency_s, 6), "cached": self.cached, "key": self.key,
            "skill_invoked": self.trajectory.get("skill_invoked"),
            "workspace": self.trajectory.get("workspace"),
        }


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


def fingerprint(skill_hash: str, task: Task, sample: int, harness_fp: dict,
                scorer_fp: dict) -> tuple[str, dict]:
    """(key, fingerprint): the key is sha256 over canonical JSON of exactly the
    fields that change a rollout's outcome."""
    fp = {"skill": skill_hash, "task": task.content(), "sample": sample,
          "harness": harness_fp, "scorer": scorer_fp}
    return hashlib.sha256(canonical_json(fp).encode("utf-8")).hexdigest(), fp


@dataclass(frozen=True)
class RolloutEvent:
    """Sent to observers after each rollout (also for store hits)."""

    label: str
    rollout: Rollout
    done: int
    total: int


Observer = Callable[[RolloutEvent], None]


class RolloutEngine:
    """Runs (skill × tasks × samples) through one harness with a bounded thread pool."""

    def __init__(self, harness: Harness, store: RolloutStore, *, concurrency: int = 8,
                 judge: Any = None, observers: Sequence[Observer] = ()):
        self.harness = harness
        self.store = store
        self.concurrency = max(1, concurrency)
        self.judge = judge
        self.observers = list(observers)
        self._harness_fp = harness.fingerprint()
        self._pool: ThreadPoolExecutor | None = None
        self._scorer_fps: dict[int, dict] = {}
        self._streak: tuple[str | None, int, str] = (None, 0, "")  # kind, count, message

    def scorer_fingerprint(self, task: Task) -> dict:
        cached = self._scorer_fps.get(id(task.scorer))
        if cached is None:
            cached = dict(task.scorer.spec)
            if cached.get("type") == "judge" and self.judge is not None:
                cached["judge"] = self.judge.fingerprint()
            self._scorer_fps[id(task.scorer)] = cached
        return cached

    def run(self, skill: Skill, tasks: Sequence[Task], *, samples: int = 1,
            label: str = "") -> list[Rollout]:
        """Rollouts for every (task, sample), in task order; store hits cost nothing."""
        skill_hash = skill.hash
        jobs = [(task, s) for task in tasks for s in range(samples)]
        keys = [fingerprint(skill_hash, t, s, self._harness_fp, self.scorer_fingerprint(t))
                for t, s in jobs]
        hits = self.store.get_many([k for k, _ in keys])
        results: list[Rollout | None] = [None] * len(jobs)
        done = 0
        total = len(jobs)
        pending = []
        for i, ((task, sample), (key, fp)) in enumerate(zip(jobs, keys)):
            hit = hits.get(key)
            if hit is not None:
                results[i] = _relabel(hit, task.split)
                done += 1
                self._emit(RolloutEvent(label, results[i], done, total))
            else:
                pending.append((i, task, sample, key, fp))
        if not pending:
            return results  # type: ignore[return-value]
        if not skill.is_empty:
            self.store.remember_skill(skill_hash, skill.text)

        if self.concurrency == 1 or len(pending) == 1:
            try:
                for i, task, sample, key, fp in pending:
                    results[i] = self._one(skill, task, sample, key, fp)
                    done += 1
                    self._emit(RolloutEvent(label, results[i], done, total))
                    self._watch(results[i], len(pending))
            except BaseException:
                self._cancel()
                raise
            return results  # type: ignore[return-value]

        # Workers hand results back through a queue: O(1) per rollout, unlike
        # waiting on the set of pending futures, which is O(n) per wake-up.
        finished: queue.SimpleQueue = queue.SimpleQueue()

        def job(i: int, task: Task, sample: int, key: str, fp: dict) -> None:
            try:
                finished.put((i, self._one(skill, task, sample, key, fp), None))
            except BaseException as exc:  # re-raised in the caller's thread
                finished.put((i, None, exc))

        pool = self._executor()
        try:
            for args in pending:
                pool.submit(job, *args)
            for _ in range(len(pending)):
                while True:
                    try:
                        i, rollout, exc = finished.get(timeout=0.25)
                        break
                    except queue.Empty:  # wake up now and then so Ctrl-C is seen
                        continue
                if exc is not None:
                    raise exc
                results[i] = rollout
                done += 1
                self._emit(RolloutEvent(label, rollout, done, total))
                self._watch(rollout, len(pending))
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
            if self._cancel():
                # the agents are killed and no more start, so the jobs still running end
                # at once: wait for them to put their workspaces away
                pool.shutdown(wait=True)
            raise
        return results  # type: ignore[return-value]

    def _executor(self) -> ThreadPoolExecutor:
        """One pool for the engine's life: training calls `run` many times."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.concurrency,
                                            thread_name_prefix="skillopt-rollout")
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _cancel(self) -> bool:
        """The run is stopping: agent processes still running are killed. Whether the
        harness could cancel (a chat harness's model calls just run out)."""
        cancel = getattr(self.harness, "cancel", None)
        if callable(cancel):
            cancel()
            return True
        return False

    def _watch(self, rollout: Rollout, batch: int) -> None:
        """Stop the run when task after task fails the same systemic way."""
        if rollout.scored or rollout.error_kind not in SYSTEMIC:
            self._streak = (None, 0, "")
            return
        kind, count, _ = self._streak
        count = count + 1 if kind == rollout.error_kind else 1
        self._streak = (rollout.error_kind, count, rollout.error or "")
        limit = max(2, min(STOP_AFTER, batch)) if rollout.error_kind in HOPELESS else STOP_AFTER
        if count >= limit:
            self._streak = (None, 0, "")
            raise SystemicFailure(
                f"stopped: {count} tasks in a row failed the same way ({rollout.error_kind}): "
                f"{rollout.error}. These are unscored, not zeros; fix the cause and run again "
                "(every finished rollout is kept)")

    def _one(self, skill: Skill, task: Task, sample: int, key: str, fp: dict) -> Rollout:
        traj = self.harness.run(skill, task)
        release = getattr(self.harness, "release", None)
        try:
            rollout = self._score(skill, task, sample, key, traj)
        except BaseException:
            if callable(release):
                release(traj, failed=True)
            raise
        if callable(release):
            kept = release(traj, failed=not (rollout.scored and rollout.passed))
            if kept is not None:
                rollout = replace(rollout, trajectory={**rollout.trajectory,
                                                       "workspace": str(kept)})
        self.store.put(rollout, fp)
        return rollout

    def _score(self, skill: Skill, task: Task, sample: int, key: str,
               traj: Trajectory) -> Rollout:
        base = dict(key=key, task_id=task.id, split=task.split, sample=sample,
                    skill_hash=skill.hash, answer=traj.answer, usage=traj.usage, cost=traj.cost,
                    latency_s=traj.latency_s, model_calls=traj.model_calls,
                    trajectory=_trajectory_record(traj))
        if not traj.ok:
            return Rollout(scored=False, error=traj.error or "the harness returned no answer",
                           error_kind=traj.error_kind or "harness", **base)
        try:
            score = task.scorer(task, traj.answer, ScoreContext(workspace=traj.workspace,
                                                                 judge=self.judge))
        except ScorerError as exc:
            return Rollout(scored=False, error=str(exc), error_kind="scorer", **base)
        except Exception as exc:  # a scorer bug: say so, don't score 0
            return Rollout(scored=False, error=f"scorer crashed: {type(exc).__name__}: {exc}",
                           error_kind="scorer", **base)
        return Rollout(scored=True, score=score.value, passed=score.passed,
                       feedback=score.feedback, **base)

    def _emit(self, event: RolloutEvent) -> None:
        for observer in self.observers:
            try:
                observer(event)
            except Exception:  # an observer must never break the run
                log.exception("observer %r failed; ignored", observer)


def _trajectory_record(traj: Trajectory) -> dict:
    record: dict = {"messages": list(traj.messages), "steps": list(traj.steps)}
    if traj.skill_invoked is not None:
        record["skill_invoked"] = traj.skill_invoked
    if traj.info:
        record["info"] = dict(traj.info)
    return record


def _relabel(hit: Rollout, split: str) -> Rollout:
    return replace(hit, cached=True, split=split)
