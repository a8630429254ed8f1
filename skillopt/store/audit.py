"""The git audit trail: one commit per candidate revision, evidence in trailers.

Invariants:
- Only git objects and refs are written. The user's working tree, index, HEAD and
  current branch are never touched (no checkout, no index, no `git add`).
- Accepted revisions form the first-parent history of `skillopt/<run-id>`;
  rejected candidates hang off the incumbent at
  `refs/skillopt/<run-id>/rejected/<step>` (a step's later trials, subsets of its
  edits gated after the whole was rejected, at `rejected/<step>.<trial>`).
- Inside a git repository the first commit's parent is the repository's HEAD and
  each commit is HEAD's tree with only the skill directory replaced, so
  `git diff HEAD skillopt/<run-id>` is exactly the trained change. Outside one, a
  bare repository `<runs>/audit.git` holds the history, each tree holding just the
  skill directory.
- A commit message holds no known secret value (`text.safe`). The skill is
  committed as given: the trainer blanks secrets in edits before they make one.
- Committing a step that is already committed returns the existing commit, so a
  resumed run never records a step twice.
- A repository with objects missing or corrupt (pruned, copied in part, damaged
  by hand) is one `InputError` naming it from every method that reads objects,
  never gitpython's error.
- `<runs>/audit.git` appears whole or not at all: it is made beside its place and
  renamed into it, so processes starting together never see a half-made one.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from skillopt._util.text import safe
from skillopt.errors import InputError
from skillopt.runs.rundir import output_dir
from skillopt.skill.document import SKILL_FILE, Skill
from skillopt.store.trailers import StepTrailers, parse_trailers
from skillopt.store.trees import TreeWriter

if TYPE_CHECKING:  # gitpython's import runs `git version`: each use imports it
    import git

P = ParamSpec("P")
R = TypeVar("R")


def _reads(method: Callable[Concatenate[Audit, P], R]) -> Callable[Concatenate[Audit, P], R]:
    """A method that reads the repository's objects: an object missing or corrupt
    (a repository pruned, copied in part, or damaged by hand) is one `InputError`
    naming the repository, not gitpython's error from deep inside it."""

    def reading(self: Audit, /, *args: P.args, **kwargs: P.kwargs) -> R:
        import git
        from gitdb.exc import ODBError

        try:
            return method(self, *args, **kwargs)
        except (git.GitError, ODBError, ValueError) as exc:
            reason = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise InputError(
                f"the run's audit repository is damaged: {reason}", path=self.location
            ) from None

    return reading


@dataclass(frozen=True)
class AuditCommit:
    """One commit of a run: `evidence` is its trailers read as typed values,
    `trailers` the same trailers as written (strings)."""

    sha: str
    step: int
    decision: str  # initial | accepted | rejected
    subject: str
    message: str
    trailers: dict[str, str]
    parent: str | None
    evidence: StepTrailers


def _bare_repo(path: Path) -> git.Repo:
    """The bare repository at `path`, made atomically if it does not exist: `git init`
    in a private directory beside it, then one rename. Several processes may do this
    at once; a rename that loses the race fails (the place is taken by a non-empty
    directory), and the loser discards its copy and opens the winner's."""
    import git

    if not path.exists():
        output_dir(path.parent)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            git.Repo.init(tmp, bare=True)
            os.rename(tmp, path)
        except OSError:
            if not path.exists():
                raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return git.Repo(path)


class Audit:
    def __init__(self, repo: git.Repo, run_id: str, skill_path: str):
        self.repo = repo
        self.run_id = run_id
        self.skill_path = skill_path.strip("/")
        self.branch = f"skillopt/{run_id}"
        self.branch_ref = f"refs/heads/{self.branch}"
        self._trees = TreeWriter(repo)

    # -- opening -----------------------------------------------------------------------
    @classmethod
    def create(cls, skill_dir: Path, runs_dir: Path, run_id: str) -> Audit:
        """Use the repository that holds `skill_dir` if there is one, else a bare
        repository under `runs_dir`."""
        import git

        skill_dir = skill_dir.resolve()
        try:
            repo = git.Repo(skill_dir, search_parent_directories=True)
            root = Path(repo.working_tree_dir).resolve() if repo.working_tree_dir else None
            if root is None or not skill_dir.is_relative_to(root):
                raise git.InvalidGitRepositoryError(str(skill_dir))
            skill_path = skill_dir.relative_to(root).as_posix()
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            repo = _bare_repo(runs_dir.resolve() / "audit.git")
            skill_path = f"skills/{skill_dir.name}"
        return cls(repo, run_id, skill_path)

    @classmethod
    def open(cls, repo_path: str | Path, run_id: str, skill_path: str) -> Audit:
        import git

        try:
            return cls(git.Repo(repo_path), run_id, skill_path)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise InputError("the run's audit repository is missing", path=repo_path) from None

    @property
    def location(self) -> str:
        return os.fspath(self.repo.working_tree_dir or self.repo.git_dir)

    # -- writing -----------------------------------------------------------------------
    @_reads
    def commit(
        self,
        skill: Skill,
        subject: str,
        body: str,
        evidence: StepTrailers,
    ) -> str:
        """Record one revision; return its sha. `evidence` names the step and its
        decision (initial, accepted or rejected: rejected commits leave the branch
        where it is); the run is this audit's."""
        import git

        step, decision = evidence.step, evidence.decision
        if step is None or decision is None:
            raise ValueError("an audit commit needs its step and decision")
        existing = self.find_step(step, evidence.trial)
        if existing is not None:
            return existing.sha
        tip = self.tip()
        if tip is not None:
            parents = [self.repo.commit(tip)]
        else:
            base = self._user_head()
            parents = [base] if base is not None else []
        base_tree = parents[0].tree.binsha if parents else None
        tree_sha = self._trees.replace_path(
            base_tree, self.skill_path.split("/"), self._trees.skill_tree(skill)
        )
        trailers = replace(evidence, run=self.run_id).to_trailers()
        lines = [f"{k}: {v}" for k, v in trailers.items()]
        # the edits it lists are the optimizer's words: a key echoed in an anchor that
        # matched nothing is still no part of the record
        message = safe(
            subject.strip()
            + "\n\n"
            + (body.strip() + "\n\n" if body.strip() else "")
            + "\n".join(lines)
            + "\n"
        )
        assert message is not None  # a subject and trailers are never empty text
        actor = git.Actor("skillopt", "skillopt@localhost")
        commit = git.Commit.create_from_tree(
            self.repo,
            git.Tree(self.repo, tree_sha, 0o040000, ""),
            message,
            parent_commits=parents,
            head=False,
            author=actor,
            committer=actor,
        )
        if decision == "rejected":
            ref = f"refs/skillopt/{self.run_id}/rejected/{_trial_name(step, evidence.trial)}"
        else:
            ref = self.branch_ref
        git.Reference.create(self.repo, ref, commit, force=True)
        return commit.hexsha

    def _user_head(self) -> git.Commit | None:
        if self.repo.bare:
            return None
        try:
            return self.repo.head.commit
        except ValueError:  # a repository without commits yet
            return None

    # -- reading -----------------------------------------------------------------------
    def _resolve(self, ref: str) -> git.Commit | None:
        """The commit a ref points at, read without a subprocess; None if unset."""
        import git

        try:
            return git.Reference(self.repo, ref).commit
        except (ValueError, TypeError, OSError):
            return None

    def tip(self) -> str | None:
        commit = self._resolve(self.branch_ref)
        return commit.hexsha if commit is not None else None

    def _record(self, commit: git.Commit) -> AuditCommit | None:
        message = _text(commit.message)
        evidence = StepTrailers.parse(message)
        if evidence.run != self.run_id:
            return None
        return AuditCommit(
            commit.hexsha,
            evidence.step if evidence.step is not None else -1,
            evidence.decision or "",
            _text(commit.summary),
            message,
            parse_trailers(message),
            commit.parents[0].hexsha if commit.parents else None,
            evidence,
        )

    @_reads
    def accepted(self) -> list[AuditCommit]:
        """The branch's first-parent history of this run, oldest first."""
        tip = self.tip()
        out = []
        if tip is not None:
            for commit in self.repo.iter_commits(tip, first_parent=True):
                rec = self._record(commit)
                if rec is None:
                    break
                out.append(rec)
        return out[::-1]

    @_reads
    def rejected(self) -> list[AuditCommit]:
        prefix = f"refs/skillopt/{self.run_id}/rejected/"
        out = []
        for ref in self.repo.references:
            if ref.path.startswith(prefix):
                rec = self._record(ref.commit)
                if rec is not None:
                    out.append(rec)
        return sorted(out, key=lambda c: (c.step, c.evidence.trial or 1))

    def history(self) -> list[AuditCommit]:
        """Every candidate of the run, by step."""
        return sorted(
            self.accepted() + self.rejected(),
            key=lambda c: (c.step, c.evidence.trial or 1, c.decision),
        )

    @_reads
    def find_step(self, step: int, trial: int | None = None) -> AuditCommit | None:
        """The commit of `step` (its `trial`-th gated candidate; None: the first), if
        it was made."""
        name = _trial_name(step, trial)
        rejected = self._resolve(f"refs/skillopt/{self.run_id}/rejected/{name}")
        if rejected is not None:
            rec = self._record(rejected)
            if rec is not None:
                return rec
        tip = self._resolve(self.branch_ref)
        rec = self._record(tip) if tip is not None else None
        same = rec is not None and rec.step == step and (rec.evidence.trial or 1) == (trial or 1)
        return rec if same else None

    @_reads
    def copy_run(self, dest: Path) -> None:
        """A bare repository at `dest` holding only this run's refs and what they
        reach (a bundle's audit); a run whose branch is gone is an `InputError`: its
        initial skill and history could not be packed."""
        import git

        refs = [
            r.path
            for r in self.repo.references
            if r.path == self.branch_ref or r.path.startswith(f"refs/skillopt/{self.run_id}/")
        ]
        if self.branch_ref not in refs:
            raise InputError(
                f"the run's audit branch skillopt/{self.run_id} is gone, so its initial "
                "skill and history cannot be packed",
                path=self.location,
            )
        target = git.Repo.init(dest, bare=True)
        target.git.fetch(self.repo.git_dir, *[f"{r}:{r}" for r in refs])

    @_reads
    def skill_text(self, sha: str) -> str:
        data = self.skill_files(sha).get(SKILL_FILE)
        if data is None:
            raise self._no_skill(sha)
        return data.decode("utf-8", "replace")

    @_reads
    def skill_files(self, sha: str) -> dict[str, bytes]:
        """The skill directory as committed at `sha`: each file's path inside it and
        its content."""
        import git

        try:
            tree = self.repo.commit(sha).tree / self.skill_path
        except KeyError:
            raise self._no_skill(sha) from None
        if not isinstance(tree, git.Tree):
            raise self._no_skill(sha)
        return {
            Path(b.path).relative_to(self.skill_path).as_posix(): b.data_stream.read()
            for b in tree.traverse()
            if isinstance(b, git.Blob)
        }

    def _no_skill(self, sha: str) -> InputError:
        return InputError(
            f"commit {sha[:12]} holds no skill directory {self.skill_path}/ (the run's "
            "audit.skill_path in run.yaml)",
            path=self.location,
        )

    @_reads
    def diff(self, old: str | None, new: str) -> str:
        """Unified diff of the skill directory between two commits (old None: from
        nothing)."""
        if old is None:
            old = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's empty tree
        return str(self.repo.git.diff(old, new, "--", self.skill_path))


def _trial_name(step: int, trial: int | None) -> str:
    """The name under `rejected/` of a step's trial: `<step>`, or `<step>.<trial>` for
    the second and later candidates of a decomposed step."""
    return f"{step}.{trial}" if trial is not None and trial > 1 else str(step)


def _text(value: str | bytes) -> str:
    """A commit's message or summary as text: gitpython gives bytes for a message in
    an encoding it cannot decode (never one skillopt wrote)."""
    return value if isinstance(value, str) else value.decode("utf-8", "replace")
