"""Rollouts: run a skill on tasks through a harness, score the answers, store them.

Invariants:
- A rollout is identified by its fingerprint (skill hash, task content, sample
  index, harness + target + parameters, scorer). An identical evaluation is served
  from the store with zero model calls.
- A failure of the infrastructure (harness error, scorer that cannot judge) is an
  *unscored* rollout: stored for inspection, excluded from every mean, and run
  again next time. It is never a score of 0.
- Each finished rollout is written to the store as soon as it exists, so an
  interrupted run loses nothing already scored. With a run id, a rollout is in the
  spend ledger before it starts (pending, at its estimate; its row replaces that
  one when stored): one in flight at a kill counts as spent, a store hit never.
- Processes sharing a store never pay for one rollout twice: an engine claims a
  rollout (a lease, renewed while it runs) just before running it, and waits for
  the result of one another live process holds, taking it over if that process
  dies or gives up.
"""

from __future__ import annotations

import logging
import os
import queue
import socket
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from skillopt.harness.base import Cancellable, Harness, ReleasesWorkspaces
from skillopt.models.base import Model
from skillopt.rollouts.batch import Batch, Finished, Job
from skillopt.rollouts.budget import Guard, Priors, Spent
from skillopt.rollouts.job import run_one
from skillopt.rollouts.lease import POLL_S, Heartbeat
from skillopt.rollouts.record import Rollout, RolloutCache, canonical_json, fingerprint
from skillopt.rollouts.watch import FailureWatch
from skillopt.skill.document import Skill
from skillopt.suite.task import Task

if TYPE_CHECKING:
    from skillopt.rollouts.ray_executor import RayExecutor

log = logging.getLogger("skillopt")


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


class RolloutEngine:
    """Runs (skill × tasks × samples) through one harness with a bounded thread pool.

    With `run_id`, every rollout it pays for, and the count it serves from the store,
    is written to the store's spend ledger under that run. With `guard`, a batch
    whose rollouts the store cannot serve is checked against the run's budget
    before any of it starts (`BudgetExceeded`). An `offline` engine (a replay) pays
    for nothing: a rollout the store does not hold raises `ReplayMiss`. `priors`
    price a rollout recorded before it starts until the run has an average."""

    def __init__(
        self,
        harness: Harness,
        store: RolloutCache,
        *,
        concurrency: int = 8,
        judge: Model | None = None,
        observers: Sequence[Observer] = (),
        run_id: str | None = None,
        guard: Guard | None = None,
        remote: RayExecutor | None = None,
        offline: bool = False,
        priors: Priors = Priors(),
    ):
        self.harness = harness
        self.priors = priors
        # rollouts run as Ray tasks (`executor: ray`); None: in this process's threads
        self.remote = remote
        self.guard = guard  # checks the run's budget before each batch it pays for
        # a replay: every rollout must come from the store (a miss raises ReplayMiss)
        self.offline = offline
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
        self._scorer_fps: dict[int, dict[str, Any]] = {}
        self._watch = FailureWatch()

    def subscribe(self, observer: Observer) -> None:
        """Send `observer` every later rollout event as well."""
        self.observers.append(observer)

    def scorer_fingerprint(self, task: Task) -> dict[str, Any]:
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
        batch = Batch(label, len(jobs), [None] * len(jobs))
        pending: list[Job] = []
        for i, ((task, sample), (key, fp)) in enumerate(zip(jobs, keys)):
            hit = hits.get(key)
            if hit is not None:
                self._served(batch, i, hit, task.split)
            else:
                pending.append(Job(i, task, sample, key, fp))
        if pending and until is not None and until(batch.results):
            pending = []  # the store's rollouts settle it
        if pending:
            if self.offline:
                from skillopt.models.stored import ReplayMiss

                raise ReplayMiss(
                    f"{label}: the recording holds no rollout of task {pending[0].task.id} "
                    f"with skill {skill_hash[:12]} ({len(pending)} of {len(jobs)} missing)"
                )
            if self.guard is not None:  # raises, before anything of the batch is paid
                self.guard.before(rollouts=len(pending), where=label)
            if not skill.is_empty:
                self.store.remember_skill(skill_hash, skill.text)
            price = None  # what each rollout of the batch counts at until it is stored
            if self.run_id is not None:
                price = self.priors.rollout(Spent.from_ledger(self.store.spend(self.run_id)))
            self._run_pending(skill, pending, batch, until, price)
        ran = [(r, k) for r, (k, _) in zip(batch.results, keys) if r is not None]
        if self.run_id is not None:
            if batch.cached:
                self.store.record_cached(self.run_id, batch.cached)
            # what the run used, for `skillopt bundle`
            self.store.note_uses(self.run_id, "rollout", [k for _, k in ran])
        return [r for r, _ in ran]

    def _served(self, batch: Batch, i: int, hit: Rollout, split: str) -> None:
        served = replace(hit, cached=True, split=split)
        batch.fill(i, served, cached=True)
        self._emit(RolloutEvent(batch.label, served, batch.done, batch.total))

    def _run_pending(
        self,
        skill: Skill,
        pending: list[Job],
        batch: Batch,
        until: Until | None = None,
        price: float | None = None,
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
        ready: deque[Job] = deque()  # serial: claimed, to run in this thread
        waiting: dict[str, list[Job]] = {}  # held by another live process: key -> its jobs
        held: list[str] = []  # every key claimed here, released if the run fails
        in_flight = 0
        heartbeat: Heartbeat | None = None
        next_poll = 0.0
        # Workers hand results back through a queue: O(1) per rollout, unlike
        # waiting on the set of pending futures, which is O(n) per wake-up.
        finished: queue.SimpleQueue[Finished] = queue.SimpleQueue()
        pool = None if serial or remote is not None else self._executor()

        def work(job: Job) -> None:
            try:
                finished.put((job.i, self._one(skill, job, price), None))
            except BaseException as exc:  # re-raised in the caller's thread
                finished.put((job.i, None, exc))

        def arrived(
            job: Job, reserved: int | None, rollout: Rollout | None, exc: BaseException | None
        ) -> None:
            """A Ray task's result, in the executor's thread: stored here (the driver
            is the store's one writer), then handed to the loop."""
            i = job.i
            if rollout is not None:
                try:
                    self.store.put(rollout, job.fp, run_id=self.run_id, reserved=reserved)
                except BaseException as failed:
                    rollout, exc = None, failed
            finished.put((i, rollout, exc))

        def start(job: Job) -> None:
            nonlocal in_flight
            in_flight += 1
            if remote is not None:
                reserved = self._reserve(job, price)  # a task submitted is a task running

                def done(r: Rollout | None, e: BaseException | None, job: Job = job) -> None:
                    arrived(job, reserved, r, e)

                remote.submit(skill, job.task, job.sample, job.key, done)
            elif pool is None:
                ready.append(job)
            else:
                pool.submit(work, job)

        def claimed(job: Job) -> None:
            nonlocal heartbeat
            held.append(job.key)
            if heartbeat is None and self.store.shared:
                heartbeat = Heartbeat(self.store, self.owner)
            start(job)

        def collect(i: int, rollout: Rollout) -> None:
            nonlocal in_flight
            in_flight -= 1
            batch.fill(i, rollout)
            self._emit(RolloutEvent(batch.label, rollout, batch.done, batch.total))
            self._watch.see(rollout, len(pending))
            if until is not None and (todo or ready or waiting) and until(batch.results):
                settle()

        def settle() -> None:
            """The race is decided: start nothing more, and give back the claims on
            what was not started."""
            nonlocal in_flight
            claimed_only = [job.key for job in ready]  # `todo` holds no claim yet
            in_flight -= len(ready)
            todo.clear()
            ready.clear()
            waiting.clear()  # another process's: no need to wait for it any more
            self.store.release(claimed_only, self.owner)

        try:
            while todo or in_flight or waiting:
                while todo and in_flight <= limit - step:
                    take = [todo.popleft() for _ in range(min(len(todo), limit - in_flight))]
                    mine = self.store.claim_many([job.key for job in take], self.owner)
                    for job in take:
                        if job.key in mine:
                            claimed(job)
                        else:
                            waiting.setdefault(job.key, []).append(job)
                if ready:
                    job = ready.popleft()
                    collect(job.i, self._one(skill, job, price))
                elif in_flight:
                    try:  # wake up now and then so Ctrl-C is seen and others are polled
                        i, rollout, exc = finished.get(timeout=POLL_S if waiting else 0.25)
                    except queue.Empty:
                        pass
                    else:
                        if exc is not None:
                            raise exc
                        assert rollout is not None  # a worker hands back one or the other
                        collect(i, rollout)
                elif waiting:
                    time.sleep(max(0.0, next_poll - time.monotonic()))
                if waiting and time.monotonic() >= next_poll:
                    next_poll = time.monotonic() + POLL_S
                    for key, hit in self.store.get_many(list(waiting)).items():
                        for job in waiting.pop(key):
                            self._served(batch, job.i, hit, job.task.split)
                    # a lease that expired (its holder died) or was released without a
                    # scored row (the attempt ended unscored): run it here
                    if waiting:
                        for key in self.store.claim_many(list(waiting), self.owner):
                            for job in waiting.pop(key):
                                claimed(job)
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

    def _reserve(self, job: Job, price: float | None) -> int | None:
        """The rollout about to start, recorded as spent at `price` (with a run id)."""
        if self.run_id is None:
            return None
        return self.store.reserve(self.run_id, "target", "rollout", price, key=job.key)

    def _one(self, skill: Skill, job: Job, price: float | None) -> Rollout:
        reserved = self._reserve(job, price)
        rollout = run_one(
            self.harness, self._releases, self.judge, skill, job.task, job.sample, job.key
        )
        self.store.put(rollout, job.fp, run_id=self.run_id, reserved=reserved)
        return rollout

    def _emit(self, event: RolloutEvent) -> None:
        for observer in self.observers:
            try:
                observer(event)
            except Exception:  # an observer must never break the run
                log.exception("observer %r failed; ignored", observer)


__all__ = [
    "Observer",
    "Rollout",
    "RolloutEngine",
    "RolloutEvent",
    "canonical_json",
    "fingerprint",
]
