"""Blame of a run's best skill: every line of its SKILL.md tagged with the step (and
the edit of that step) that introduced it, read from the run's git history.

`git blame` on the run's branch tip says which commit last brought each line in;
the run's commits say which step that was (their `Skillopt-Step` trailer). A line
from a commit outside the run (the user's `HEAD` the run's branch starts from) or
from the initial commit is `initial`. Within a step, the edit is the applied edit
whose content holds the line (after whitespace is trimmed), else the one whose
section the line heads, else the step's only edit; a line no edit accounts for
(a blank line an edit's spacing brought) names the step alone.
"""

from __future__ import annotations

from typing import Any

from skillopt.skill.document import SKILL_FILE
from skillopt.store.audit import Audit, AuditCommit
from skillopt.training.steps import StepRecord, apply_of


def blame_lines(audit: Audit, records: dict[int, StepRecord]) -> list[dict[str, Any]]:
    """One dict per line of the best skill: `line` (1-based), `text`, `step`,
    `decision`, `commit`, `edit` (index among the step's applied edits, or None),
    `op`, `rationale`, `evidence`. [] when the run has no commit yet."""
    import git  # here, not with the module: its import runs `git version`

    accepted = audit.accepted()
    if not accepted:
        return []
    tip = accepted[-1]
    by_sha: dict[str, AuditCommit] = {c.sha: c for c in accepted}
    path = f"{audit.skill_path}/{SKILL_FILE}"
    try:
        pieces: list[Any] = list(audit.repo.blame(tip.sha, path) or [])
    except git.GitCommandError:
        return []
    out: list[dict[str, Any]] = []
    for commit, lines in pieces:  # (commit, its lines) in file order
        sha = commit.hexsha if isinstance(commit, git.Commit) else str(commit)
        c = by_sha.get(sha)
        step = c.step if c is not None else 0
        for raw in lines:
            text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
            out.append(_line(len(out) + 1, text, step, c, records.get(step)))
    return out


def _line(
    number: int, text: str, step: int, commit: AuditCommit | None, rec: StepRecord | None
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "line": number,
        "text": text,
        "step": step,
        "decision": "initial" if step == 0 else (commit.decision if commit else "initial"),
        "commit": commit.sha if commit is not None else None,
        "edit": None,
        "op": None,
        "rationale": "",
        "evidence": [],
    }
    if step == 0:
        return row
    if rec is not None and rec.kind == "slow_update":
        row.update(op="guidance", rationale="slow update: guidance from the epoch's results")
        return row
    results = apply_of(rec) if rec is not None else []
    edits = [a.get("edit") or {} for a in results if a.get("status") == "applied"]
    index = _which_edit(text, edits)
    if index is not None:
        e = edits[index]
        row.update(
            edit=index,
            op=e.get("op"),
            rationale=e.get("rationale") or "",
            evidence=list(e.get("evidence") or []),
        )
    return row


def _which_edit(text: str, edits: list[dict[str, Any]]) -> int | None:
    line = text.strip()
    if line:
        for i, e in enumerate(edits):
            content = e.get("content") or ""
            if line in (x.strip() for x in content.splitlines()):
                return i
        heading = line.lstrip("#").strip() if line.startswith("#") else None
        if heading:
            for i, e in enumerate(edits):
                if (e.get("section") or "").strip() == heading:
                    return i
    return 0 if len(edits) == 1 else None
