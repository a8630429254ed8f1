"""Git trees and blobs written in-process, for the audit's commits: gitpython's
default object store shells out to `git hash-object` for every object.

Invariant: only objects are written, never a ref, the index or a working tree;
trees are sorted as git sorts them, so the same files always give the same tree.
"""

from __future__ import annotations

from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING

from skillopt.skill.document import SKILL_FILE, Skill

if TYPE_CHECKING:  # gitpython's import runs `git version`: each use imports it
    import git
    from gitdb import LooseObjectDB

_DIR_MODE = 0o040000
_FILE_MODE = 0o100644
_EXEC_MODE = 0o100755


class TreeWriter:
    """Writes the objects of a skill directory's commit into `repo`."""

    def __init__(self, repo: git.Repo):
        self.repo = repo
        self._loose: LooseObjectDB | None = None

    def store(self, kind: bytes, data: bytes) -> bytes:
        """Write a loose object in-process (gitpython's default store shells out to
        `git hash-object` for every object)."""
        from gitdb import LooseObjectDB
        from gitdb.base import IStream

        if self._loose is None:
            # common_dir: a linked worktree keeps its objects in the main .git
            self._loose = LooseObjectDB(str(Path(self.repo.common_dir) / "objects"))
        stored: bytes = self._loose.store(IStream(kind, len(data), BytesIO(data))).binsha
        return stored

    def tree(self, entries: list[tuple[int, str, bytes]]) -> bytes:
        def order(
            e: tuple[int, str, bytes],
        ) -> bytes:  # git sorts directories as if their name ended in "/"
            return e[1].encode() + (b"/" if e[0] == _DIR_MODE else b"")

        data = b"".join(
            b"%o %s\0" % (mode, name.encode()) + sha
            for mode, name, sha in sorted(entries, key=order)
        )
        return self.store(b"tree", data)

    def skill_tree(self, skill: Skill) -> bytes:
        files: dict[str, tuple[bytes, int]] = {SKILL_FILE: (skill.text.encode("utf-8"), _FILE_MODE)}
        if skill.root is not None:
            for rel, _ in skill.support:
                path = skill.root / rel
                mode = _EXEC_MODE if path.stat().st_mode & 0o111 else _FILE_MODE
                files[rel] = (path.read_bytes(), mode)
        return self._build(files)

    def _build(self, files: dict[str, tuple[bytes, int]]) -> bytes:
        here: list[tuple[int, str, bytes]] = []
        subdirs: dict[str, dict[str, tuple[bytes, int]]] = {}
        for rel, (data, mode) in files.items():
            head, _, rest = rel.partition("/")
            if rest:
                subdirs.setdefault(head, {})[rest] = (data, mode)
            else:
                here.append((mode, head, self.store(b"blob", data)))
        for name, sub in subdirs.items():
            here.append((_DIR_MODE, name, self._build(sub)))
        return self.tree(here)

    def replace_path(self, tree_sha: bytes | None, parts: list[str], new: bytes) -> bytes:
        """`tree_sha` with the entry at `parts` replaced by the tree `new`."""
        import git

        if not parts:
            return new
        entries: list[tuple[int, str, bytes]] = []
        child: bytes | None = None
        if tree_sha is not None:
            for obj in git.Tree(self.repo, tree_sha, 0o040000, ""):
                if obj.name == parts[0]:
                    child = obj.binsha if obj.type == "tree" else None
                    continue
                entries.append((obj.mode, obj.name, obj.binsha))
        entries.append((_DIR_MODE, parts[0], self.replace_path(child, parts[1:], new)))
        return self.tree(entries)
