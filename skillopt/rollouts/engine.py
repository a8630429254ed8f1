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
- Processes sharing a store never pay for one rollout twice: an engine claims a
  rollout (a lease, renewed while it runs) just before running it, and waits for
  the result of one another live process holds, taking it over if that process
  dies or gives up.
"""

from __future__ import annotations

import logging
import os
import queue
import re
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from skillopt._util.text import replaced_note
from skillopt.errors import ScorerError, SystemicFailure
from skillopt.harness.base import Cancellable, Harness, ReleasesWorkspaces, Trajectory
from skillopt.rollouts.budget import Guard
from skillopt.rollouts.record import Rollout, RolloutCache, canonical_json, fingerprint
from skillopt.skill.document import Skill
from skillopt.suite.scorers import ScoreContext
from skillopt.suite.task import Task

if TYPE_CHECKING:
    from skillopt.rollouts.ray_executor import RayExecutor

log = logging.getLogger("skillopt")

# A run stops when this many rollouts in a row fail with the same systemic kind, or
# with the same message of any other kind (timeouts included), or when every rollout
# of a smaller batch does, at least two, for kinds no retry can fix.
STOP_AFTER = 5
SYSTEMIC = frozenset({"auth", "quota", "not_found", "rate_limit", "not_discovered", "sandbox"})
# kinds no retry can fix: a bad key, no credit, an unknown model, a skill the agent did
# not discover where it was installed, a sandbox that cannot start
HOPELESS = frozenset({"auth", "quota", "not_found", "not_discovered", "sandbox"})
# what varies between two failures of the same cause: numbers, and ids or hashes
# (a word of six or more characters holding a digit)
_VARYING = re.compile(r"\b(?=\w*\d)\w{6,}\b|\d+")


def failure_shape(message: str | None) -> str:
    """A failure message with what varies from task to task (numbers, ids, hashes)
    blanked, cut to its start: two rollouts with the same shape failed the same way."""
    return _VARYING.sub("#", message or "")[:160]


# How often a run waiting on rollouts another process is running looks again.
POLL_S = 0.2


@dataclass(frozen=True)
class RolloutEvent:
    """Sent to observers after each rollout (also for store hits)."""

    label: str
    rollout: Rollout
    done: int
    total: int


Observer = Callable[[RolloutEvent], None]
# a race's stopping test: the batch's results so far (None: not finished) -> settled?
Until = Callable[[Sequence["Rollout | None"]], bool]


class _Heartbeat:
    """Renews every lease `owner` holds, every ttl/3, until stopped: a rollout that
    runs for minutes keeps its claim, and a killed process's claims lapse."""

    def __init__(self, store: RolloutCache, owner: str):
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, args=(store, owner), name="skillopt-lease", daemon=True
        )
        self._thread.start()

    def _beat(self, store: RolloutCache, owner: str) -> None:
        while not self._stop.wait(store.lease_ttl / 3):
            try:
                store.renew(owner)
            except Exception:  # a busy or closed store: the next beat tries again
                log.debug("lease renewal failed", exc_info=True)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1)


@dataclass
class _Batch:
    """One `run` call's progress: results in task order, counts for the events."""

    label: str
    results: list
    total: int
    done: int = 0
    cached: int = 0


class RolloutEngine:
    """Runs (skill × tasks × samples) through one harness with a bounded thread pool.

    With `run_id`, every rollout it pays for, and the count it serves from the store,
    is written to the store's spend ledger under that run. With `guard`, a batch
    whose rollouts the store cannot serve is checked against the run's budget
    before any of it starts (`BudgetExceeded`)."""

    def __init__(
        self,
        harness: Harness,
        store: RolloutCache,
        *,
        concurrency: int = 8,
        judge: Any = None,
        observers: Sequence[Observer] = (),
        run_id: str | None = None,
        guard: Guard | None = None,
        remote: RayExecutor | None = None,
    ):
        self.harness = harness
        # rollouts run as Ray tasks (`executor: ray`); None: in this process's threads
        self.remote = remote
        self.guard = guard  # checks the run's budget before each batch it pays for
        # a replay: every rollout must come from the store (a miss raises ReplayMiss)
        self.offline = False
        self.store = store
        self.concurrency = max(1, concurrency)
        self.judge = judge
        self.observers = list(observers)
        self.run_id = run_id
        # who holds this engine's claims in a shared store: unique per engine
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._harness_fp = harness.fingerprint()
        # asked once, not per rollout: a runtime-checkable isinstance is not free
        self._releases = harness if isinstance(harness, ReleasesWorkspaces) else None
        self._pool: ThreadPoolExecutor | None = None
        self._scorer_fps: dict[int, dict] = {}
        self._streak: tuple[str | None, int, str] = (None, 0, "")  # kind, count, message

    def subscribe(self, observer: Observer) -> None:
        """Send `observer` every later rollout event as well."""
        self.observers.append(observer)

    def scorer_fingerprint(self, task: Task) -> dict:
        cached = self._scorer_fps.get(id(task.scorer))
        if cached is None:
            cached = dict(task.scorer.spec)
            if cached.get("type") == "judge" and self.judge is not None:
                cached["judge"] = self.judge.fingerprint()
            self._scorer_fps[id(task.scorer)] = cached
        return cached

    def run(
        self,
        skill: Skill,
        tasks: Sequence[Task],
        *,
        samples: int = 1,
        label: str = "",
        until: Until | None = None,
    ) -> list[Rollout]:
        """Rollouts for every (task, sample), in task order; store hits cost nothing,
        and neither do results another process sharing the store pays for.

        With `until` (a racing gate), the jobs are started in order, at most
        `concurrency` at a time, and `until(results)` is asked after the store's hits
        and after each rollout: once it says yes, no more are started (those running
        finish and are kept) and the result holds only the rollouts that ran."""
        skill_hash = skill.hash
        jobs = [(task, s) for task in tasks for s in range(samples)]
        keys = [
            fingerprint(skill_hash, t, s, self._harness_fp, self.scorer_fingerprint(t))
            for t, s in jobs
        ]
        hits = self.store.get_many([k for k, _ in keys])
        batch = _Batch(label, [None] * len(jobs), len(jobs))
        pending = []
        for i, ((task, sample), (key, fp)) in enumerate(zip(jobs, keys)):
            hit = hits.get(key)
            if hit is not None:
                self._served(batch, i, hit, task.split)
            else:
                pending.append((i, task, sample, key, fp))
        if pending and until is not None and until(batch.results):
            pending = []  # the store's rollouts settle it
        if pending:
            if self.offline:
                from skillopt.models.stored import ReplayMiss

                task = pending[0][1]
                raise ReplayMiss(
                    f"{label}: the recording holds no rollout of task {task.id} with "
                    f"skill {skill_hash[:12]} ({len(pending)} of {len(jobs)} missing)"
                )
            if self.guard is not None:  # raises, before anything of the batch is paid
                self.guard.before(rollouts=len(pending), where=label)
            if not skill.is_empty:
                self.store.remember_skill(skill_hash, skill.text)
            self._run_pending(skill, pending, batch, until)
        ran = [(r, k) for r, (k, _) in zip(batch.results, keys) if r is not None]
        if self.run_id is not None:
            if batch.cached:
                self.store.record_cached(self.run_id, batch.cached)
            # what the run used, for `skillopt bundle`
            self.store.note_uses(self.run_id, "rollout", [k for _, k in ran])
        if len(ran) < len(batch.results):
            return [r for r, _ in ran]
        return batch.results

    def _served(self, batch: _Batch, i: int, hit: Rollout, split: str) -> None:
        batch.results[i] = _relabel(hit, split)
        batch.done += 1
        batch.cached += 1
        self._emit(RolloutEvent(batch.label, batch.results[i], batch.done, batch.total))

    def _run_pending(
        self, skill: Skill, pending: list, batch: _Batch, until: Until | None = None
    ) -> None:
        """Claim, run and collect the store's misses; wait for the ones another
        process holds.

        Claims are taken just ahead of the workers (a rollout claimed but not started
        makes other processes wait for nothing), a batch at a time (fewer write
        transactions). A private store needs no claims: everything is taken at once.
        A race (`until`) starts no more than `concurrency` at a time, topping up as
        each ends, so that stopping leaves nothing queued. On a cluster a task
        submitted is a task running, so there `concurrency` bounds what is submitted,
        topped up one by one: it is the cap on rollouts at once, as the thread pool's
        size is locally (a provider's rate limit does not grow with the cluster)."""
        remote = self.remote
        serial = (self.concurrency == 1 or len(pending) == 1) and remote is None
        one_by_one = until is not None or remote is not None  # topped up as each ends
        if one_by_one:
            limit = 1 if serial else self.concurrency
        elif not self.store.shared:
            limit = len(pending)
        else:
            limit = 1 if serial else 2 * self.concurrency
        step = 1 if one_by_one else max(1, limit // 2)  # claim again once this many are free
        todo = deque(pending)
        ready: deque = deque()  # serial: claimed, to run in this thread
        waiting: dict[str, list] = {}  # held by another live process: key -> its jobs
        held: list[str] = []  # every key claimed here, released if the run fails
        in_flight = 0
        heartbeat: _Heartbeat | None = None
        next_poll = 0.0
        # Workers hand results back through a queue: O(1) per rollout, unlike
        # waiting on the set of pending futures, which is O(n) per wake-up.
        finished: queue.SimpleQueue = queue.SimpleQueue()
        pool = None if serial or remote is not None else self._executor()

        def job(i: int, task: Task, sample: int, key: str, fp: dict) -> None:
            try:
                finished.put((i, self._one(skill, task, sample, key, fp), None))
            except BaseException as exc:  # re-raised in the caller's thread
                finished.put((i, None, exc))

        def arrived(i: int, fp: dict, rollout: Rollout | None, exc: BaseException | None) -> None:
            """A Ray task's result, in the executor's thread: stored here (the driver
            is the store's one writer), then handed to the loop."""
            if rollout is not None:
                try:
                    self.store.put(rollout, fp, run_id=self.run_id)
                except BaseException as failed:
                    rollout, exc = None, failed
            finished.put((i, rollout, exc))

        def start(args: tuple) -> None:
            nonlocal in_flight
            in_flight += 1
            if remote is not None:
                i, task, sample, key, fp = args
                remote.submit(
                    skill, task, sample, key, lambda r, e, i=i, fp=fp: arrived(i, fp, r, e)
                )
            elif pool is None:
                ready.append(args)
            else:
                pool.submit(job, *args)

        def claimed(args: tuple) -> None:
            nonlocal heartbeat
            held.append(args[3])
            if heartbeat is None and self.store.shared:
                heartbeat = _Heartbeat(self.store, self.owner)
            start(args)

        def collect(i: int, rollout: Rollout) -> None:
            nonlocal in_flight
            in_flight -= 1
            batch.results[i] = rollout
            batch.done += 1
            self._emit(RolloutEvent(batch.label, rollout, batch.done, batch.total))
            self._watch(rollout, len(pending))
            if until is not None and (todo or ready or waiting) and until(batch.results):
                settle()

        def settle() -> None:
            """The race is decided: start nothing more, and give back the claims on
            what was not started."""
            nonlocal in_flight
            claimed_only = [args[3] for args in ready]  # `todo` holds no claim yet
            in_flight -= len(ready)
            todo.clear()
            ready.clear()
            waiting.clear()  # another process's: no need to wait for it any more
            self.store.release(claimed_only, self.owner)

        try:
            while todo or in_flight or waiting:
                while todo and in_flight <= limit - step:
                    take = [todo.popleft() for _ in range(min(len(todo), limit - in_flight))]
                    mine = self.store.claim_many([args[3] for args in take], self.owner)
                    for args in take:
                        if args[3] in mine:
                            claimed(args)
                        else:
                            waiting.setdefault(args[3], []).append(args)
                if ready:
                    i, task, sample, key, fp = ready.popleft()
                    collect(i, self._one(skill, task, sample, key, fp))
                elif in_flight:
                    try:  # wake up now and then so Ctrl-C is seen and others are polled
                        i, rollout, exc = finished.get(timeout=POLL_S if waiting else 0.25)
                    except queue.Empty:
                        pass
                    else:
                        if exc is not None:
                            raise exc
                        collect(i, rollout)
                elif waiting:
                    time.sleep(max(0.0, next_poll - time.monotonic()))
                if waiting and time.monotonic() >= next_poll:
                    next_poll = time.monotonic() + POLL_S
                    for key, hit in self.store.get_many(list(waiting)).items():
                        for args in waiting.pop(key):
                            self._served(batch, args[0], hit, args[1].split)
                    # a lease that expired (its holder died) or was released without a
                    # scored row (the attempt ended unscored): run it here
                    if waiting:
                        for key in self.store.claim_many(list(waiting), self.owner):
                            for args in waiting.pop(key):
                                claimed(args)
        except BaseException:
            if remote is not None:
                remote.cancel()
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None
            if self._cancel() and pool is not None:
                # the agents are killed and no more start, so the jobs still running end
                # at once: wait for them to put their workspaces away
                pool.shutdown(wait=True)
            try:  # whatever did not finish is free for another process to run
                self.store.release(held, self.owner)
            except Exception:
                log.warning(
                    "could not release the run's claims; they expire in %.0fs",
                    self.store.lease_ttl,
                    exc_info=True,
                )
            raise
        finally:
            if heartbeat is not None:
                heartbeat.stop()

    def _executor(self) -> ThreadPoolExecutor:
        """One pool for the engine's life: training calls `run` many times."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max_workers=self.concurrency, thread_name_prefix="skillopt-rollout"
            )
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self.remote is not None:
            self.remote.close()

    def _cancel(self) -> bool:
        """The run is stopping: agent processes still running are killed. Whether the
        harness could cancel (a chat harness's model calls just run out)."""
        if isinstance(self.harness, Cancellable):
            self.harness.cancel()
            return True
        return False

    def _watch(self, rollout: Rollout, batch: int) -> None:
        """Stop the run when task after task fails the same way: a systemic kind (a bad
        key, no quota) or any other failure whose message is the same each time (a
        server answering 500 to everything, an endpoint that hangs into timeouts)."""
        if rollout.scored or rollout.error_kind in (None, "cancelled"):
            self._streak = (None, 0, "")
            return
        systemic = rollout.error_kind in SYSTEMIC
        same = (
            rollout.error_kind
            if systemic
            else f"{rollout.error_kind}:{failure_shape(rollout.error)}"
        )
        kind, count, _ = self._streak
        count = count + 1 if kind == same else 1
        self._streak = (same, count, rollout.error or "")
        limit = max(2, min(STOP_AFTER, batch)) if rollout.error_kind in HOPELESS else STOP_AFTER
        if count >= limit:
            self._streak = (None, 0, "")
            raise SystemicFailure(
                f"stopped: {count} tasks in a row failed the same way ({rollout.error_kind}): "
                f"{rollout.error}. These are unscored, not zeros; fix the cause and run again "
                "(every finished rollout is kept)"
            )

    def _one(self, skill: Skill, task: Task, sample: int, key: str, fp: dict) -> Rollout:
        rollout = run_one(self.harness, self._releases, self.judge, skill, task, sample, key)
        self.store.put(rollout, fp, run_id=self.run_id)
        return rollout

    def _emit(self, event: RolloutEvent) -> None:
        for observer in self.observers:
            try:
                observer(event)
            except Exception:  # an observer must never break the run
                log.exception("observer %r failed; ignored", observer)


def run_one(
    harness: Harness,
    releases: ReleasesWorkspaces | None,
    judge: Any,
    skill: Skill,
    task: Task,
    sample: int,
    key: str,
) -> Rollout:
    """One rollout, start to end: the harness runs the task, the answer is scored
    (in the agent's workspace, before it is put away) and the workspace released.
    Where it runs (a thread here, a Ray worker) does not change what it returns;
    the caller stores it."""
    traj = harness.run(skill, task)
    try:
        rollout = score_trajectory(judge, skill, task, sample, key, traj)
    except BaseException:
        if releases is not None:
            releases.release(traj, failed=True)
        raise
    if releases is not None:
        kept = releases.release(traj, failed=not (rollout.scored and rollout.passed))
        if kept is not None:
            rollout = replace(rollout, trajectory={**rollout.trajectory, "workspace": str(kept)})
    return rollout


def score_trajectory(
    judge: Any, skill: Skill, task: Task, sample: int, key: str, traj: Trajectory
) -> Rollout:
    """The rollout of a finished trajectory: scored, or unscored when the harness or
    the scorer failed."""

    base = dict(
        key=key,
        task_id=task.id,
        split=task.split,
        sample=sample,
        skill_hash=skill.hash,
        answer=traj.answer,
        usage=traj.usage,
        cost=traj.cost,
        latency_s=traj.latency_s,
        model_calls=traj.model_calls,
        trajectory=_trajectory_record(traj),
    )
    if not traj.ok:
        return Rollout(
            scored=False,
            error=traj.error or "the harness returned no answer",
            error_kind=traj.error_kind or "harness",
            **base,
        )
    try:
        verdict = task.scorer(
            task, traj.answer, ScoreContext(workspace=traj.workspace, judge=judge)
        )
    except ScorerError as exc:
        return Rollout(scored=False, error=str(exc), error_kind="scorer", **base)
    except Exception as exc:  # a scorer bug: say so, don't score 0
        return Rollout(
            scored=False,
            error=f"scorer crashed: {type(exc).__name__}: {exc}",
            error_kind="scorer",
            **base,
        )
    feedback = verdict.feedback
    if traj.replaced:  # say so: the scorer saw U+FFFD where the agent sent something else
        feedback = f"{feedback} ({replaced_note(traj.replaced, 'the answer')})".lstrip()
    return Rollout(
        scored=True, score=verdict.value, passed=verdict.passed, feedback=feedback, **base
    )


def _trajectory_record(traj: Trajectory) -> dict:
    record: dict = {"messages": list(traj.messages), "steps": list(traj.steps)}
    if traj.skill_invoked is not None:
        record["skill_invoked"] = traj.skill_invoked
    if traj.info:
        record["info"] = dict(traj.info)
    return record


def _relabel(hit: Rollout, split: str) -> Rollout:
    return replace(hit, cached=True, split=split)


__all__ = [
    "HOPELESS",
    "SYSTEMIC",
    "Observer",
    "Rollout",
    "RolloutEngine",
    "RolloutEvent",
    "canonical_json",
    "failure_shape",
    "fingerprint",
]
