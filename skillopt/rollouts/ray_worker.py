"""The worker's side of `executor: ray`: what travels to a worker with each rollout
(the skill, shipped as text and file bytes) and the function a worker runs.

Invariants: a worker needs nothing of the driver's disk (the suite file, the store,
the repository): the skill's text and supporting files, the task and the harness
travel with the task. A worker process unpacks an engine's harness and judge once,
then reuses them for every rollout of that engine (a harness may hold what is slow
to make, such as the embedded model's weights).
"""

from __future__ import annotations

import hashlib
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillopt.harness.base import Harness, ReleasesWorkspaces
from skillopt.models.base import Model
from skillopt.rollouts.job import run_one
from skillopt.rollouts.record import Rollout
from skillopt.skill.document import Skill
from skillopt.suite.task import Task


@dataclass(frozen=True)
class ShippedSkill:
    """A skill as it travels to a worker: its text, and its supporting files' bytes
    (a worker has no access to the skill directory)."""

    text: str
    support: tuple[tuple[str, str], ...]
    files: tuple[tuple[str, bytes], ...]
    hash: str

    @classmethod
    def of(cls, skill: Skill) -> ShippedSkill:
        files = []
        if skill.root is not None:
            files = [(rel, (skill.root / rel).read_bytes()) for rel, _ in skill.support]
        return cls(skill.text, skill.support, tuple(files), skill.hash)

    def unpack(self) -> Skill:
        """The skill on this machine: with supporting files, rooted in a directory
        holding them under the temporary directory. The directory is named by the
        files' hashes, so the candidates of a run (which differ in SKILL.md alone:
        a harness writes it from the text) share one, written once per machine."""
        if not self.files:
            return Skill.parse(self.text, support=self.support)
        digest = hashlib.sha256(repr(self.support).encode()).hexdigest()[:16]
        root = Path(tempfile.gettempdir()) / f"skillopt-support-{digest}"
        if not (root / ".complete").is_file():
            staging = Path(tempfile.mkdtemp(prefix="skillopt-support-"))
            for rel, data in self.files:
                dest = staging / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(data)
            (staging / ".complete").write_text("")
            try:
                staging.rename(root)
            except OSError:  # another task of this worker got there first
                import shutil

                shutil.rmtree(staging, ignore_errors=True)
        return Skill.parse(self.text, root=root, support=self.support)


# what a worker process has unpacked: per engine, its harness and judge
_components: dict[str, tuple[Harness, Model | None]] = {}
_components_lock = threading.Lock()


def worker_rollout(
    token: str, boxed: list[Any], shipped: ShippedSkill, task: Task, sample: int, key: str
) -> Rollout:
    """A rollout on a worker. `boxed` holds the object refs of the engine's harness
    and judge (in a list, so Ray does not fetch them for every task): fetched once
    per worker process."""
    with _components_lock:
        found = _components.get(token)
        if found is None:
            import ray

            harness, judge = ray.get(boxed)
            found = _components[token] = (harness, judge)
    harness, judge = found
    releases = harness if isinstance(harness, ReleasesWorkspaces) else None
    return run_one(harness, releases, judge, shipped.unpack(), task, sample, key)
