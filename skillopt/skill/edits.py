"""Bounded edits to a skill body, and applying them with a per-edit report.

Invariants:
- An anchor is matched exactly first, then whitespace- and case-normalised, then
  also ignoring Markdown quoting (backticks, straight and curly quotes, `*` and `_`);
  more than one match is `ambiguous_anchor`, none is `anchor_not_found`, whose
  detail names the body's nearest line. Nothing is guessed.
- Edits never touch the frontmatter (only the body is edited) nor a protected
  block (`<!-- skillopt:protected … -->` … `<!-- /skillopt:protected -->`).
- Every edit gets exactly one status; the skill is never mutated (a new `Skill`
  is returned).
- `Edit.without_secrets` blanks every known secret value in an edit; the trainer
  applies no edit that has not been through it (`training/step`).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from skillopt._util.secrets import scrub_count
from skillopt.skill.anchors import find_anchor, not_found, protected_spans
from skillopt.skill.document import PROTECTED_CLOSE, PROTECTED_OPEN, Skill

OPS = ("add", "delete", "replace")
APPLIED = "applied"
# what an edit may carry, in non-blank lines of content: per edit and per step (the
# defaults of the `max_edit_lines` and `max_step_lines` settings)
MAX_EDIT_LINES = 8
MAX_STEP_LINES = 24
# characters a line of content may carry on average: an edit may add at most
# max_edit_lines times this (one 2 MB line is not one line's worth)
LINE_CHARS = 500


@dataclass(frozen=True)
class Edit:
    """One proposed change (applied by `apply_edits`): `add` content after an anchor,
    under a section or at the end; `delete` or `replace` an anchor. `source` says
    where it came from (failures, successes, slow_update, exemplars); `support` how
    many minibatches proposed it."""

    op: str
    anchor: str | None = None
    section: str | None = None
    content: str | None = None
    rationale: str = ""
    evidence: tuple[str, ...] = ()
    source: str = "failures"
    support: int = 1

    @property
    def lines(self) -> int:
        """Non-blank lines of content the edit adds (a delete adds none): what the
        per-edit and per-step limits count."""
        if self.op == "delete":
            return 0
        return sum(1 for line in (self.content or "").splitlines() if line.strip())

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["evidence"] = list(self.evidence)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Edit:
        known = {
            k: data[k]
            for k in ("op", "anchor", "section", "content", "rationale", "source", "support")
            if k in data and data[k] is not None
        }
        return cls(evidence=tuple(str(e) for e in data.get("evidence") or ()), **known)

    def without_secrets(self, *, anchor: bool = True) -> tuple[Edit, int]:
        """(this edit with every known secret value blanked in each of its texts, how
        many values were blanked). An optimizer may echo a key it saw (in a task, an
        error, its own prompt) into an edit: blanked here, before the edit is applied,
        it reaches no skill, commit, memory or record. `anchor` False leaves the
        anchor as it is: it points at text and puts none in, and in a skill that
        holds its author's key an anchor quoting the key must still match (to take
        the key out)."""
        removed = 0

        def blank(text: str | None) -> str | None:
            nonlocal removed
            if text is None:
                return None
            out, n = scrub_count(text)
            removed += n
            return out

        clean = replace(
            self,
            anchor=blank(self.anchor) if anchor else self.anchor,
            section=blank(self.section),
            content=blank(self.content),
            rationale=blank(self.rationale) or "",
            evidence=tuple(blank(e) or "" for e in self.evidence),
        )
        return (clean, removed) if removed else (self, 0)

    def describe(self, width: int = 60) -> str:
        """One line for logs and commit messages. Anchor and content are quoted as
        Python writes a string, so their spacing reads as it is: a run of spaces stays
        a run, a line break shows as `\\n` and a tab as `\\t` ('gi  7277' is never
        shown as 'gi 7277')."""

        def short(text: str | None) -> str:
            text = (text or "").strip()
            return text if len(text) <= width else text[: width - 1] + "…"

        if self.op == "add":
            where = (
                f"after {short(self.anchor)!r}"
                if self.anchor
                else (f"under {self.section!r}" if self.section else "at the end")
            )
            return f"add {where}: {short(self.content)!r}"
        if self.op == "delete":
            return f"delete {short(self.anchor)!r}"
        return f"replace {short(self.anchor)!r} with {short(self.content)!r}"


@dataclass(frozen=True)
class EditResult:
    edit: Edit
    status: str  # applied | anchor_not_found | ambiguous_anchor | protected | invalid | noop
    detail: str = ""

    @property
    def applied(self) -> bool:
        return self.status == APPLIED

    def to_dict(self) -> dict[str, Any]:
        return {"edit": self.edit.to_dict(), "status": self.status, "detail": self.detail}


@dataclass
class ApplyReport:
    results: list[EditResult] = field(default_factory=list)

    @property
    def applied(self) -> list[EditResult]:
        return [r for r in self.results if r.applied]

    @property
    def not_applied(self) -> list[EditResult]:
        return [r for r in self.results if not r.applied]

    def summary(self) -> str:
        return f"{len(self.applied)} applied, {len(self.not_applied)} skipped"

    def to_list(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.results]


def _overlaps(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    return any(span[0] < e and s < span[1] for s, e in spans)


def _block(content: str) -> str:
    return content.strip("\n")


def apply_edits(skill: Skill, edits: list[Edit]) -> tuple[Skill, ApplyReport]:
    """Apply `edits` in order to the body; return the candidate and the report."""
    body = skill.body
    report = ApplyReport()
    for edit in edits:
        body, result = _apply_one(body, edit)
        report.results.append(result)
    return skill.with_body(body), report


def _apply_one(body: str, edit: Edit) -> tuple[str, EditResult]:
    if edit.op not in OPS:
        return body, EditResult(edit, "invalid", f"unknown op {edit.op!r}")
    if edit.op in ("add", "replace") and not (edit.content or "").strip():
        return body, EditResult(edit, "invalid", f"{edit.op} needs content")
    if has_protected_marker(edit.content or ""):
        return body, EditResult(edit, "protected", "content may not contain protected markers")
    guarded = protected_spans(body)

    if edit.op in ("delete", "replace") or edit.anchor:
        if not edit.anchor:
            return body, EditResult(edit, "invalid", f"{edit.op} needs an anchor")
        state, span = find_anchor(body, edit.anchor)
        if state == "ambiguous":
            return body, EditResult(
                edit, "ambiguous_anchor", "the anchor occurs more than once; quote more context"
            )
        if state == "missing":
            return body, EditResult(edit, "anchor_not_found", not_found(body, edit.anchor))
        assert span is not None
        if _overlaps(span, guarded) or any(s <= span[0] < e for s, e in guarded):
            return body, EditResult(edit, "protected", "the anchor is inside a protected block")
        start, end = span
        if edit.op == "delete":
            before, after = body[:start], body[end:]
            if (not before or before.endswith("\n")) and (not after or after.startswith("\n")):
                after = after[1:]  # don't leave an empty line where a line was
                if not before or before.endswith("\n\n"):  # nor a doubled blank line
                    if after.startswith("\n"):
                        after = after[1:]
                    elif not after:
                        before = before[:-1]
            return before + after, EditResult(edit, APPLIED)
        if edit.op == "replace":
            new = (
                _block(edit.content or "")
                if "\n" in body[start:end] or "\n" in (edit.content or "")
                else (edit.content or "").strip()
            )
            if body[start:end] == new:
                return body, EditResult(edit, "noop", "the replacement equals the anchor")
            return body[:start] + new + body[end:], EditResult(edit, APPLIED)
        # add after the anchor: after the end of the anchor's line
        line_end = body.find("\n", end)
        line_end = len(body) if line_end == -1 else line_end
        if _inside(line_end, guarded):
            return body, EditResult(edit, "protected", "the insertion point is protected")
        return _insert(body, line_end, _block(edit.content or "")), EditResult(edit, APPLIED)

    # add without anchor: at the end of a section (created if missing) or the body
    content = _block(edit.content or "")
    if edit.section:
        sec = Skill.parse(body).section(edit.section)
        if sec is not None:
            if any(s <= sec.start < e for s, e in guarded):
                return body, EditResult(edit, "protected", "the section is in a protected block")
            at = len(body[: sec.end].rstrip("\n"))
            for s, e in guarded:  # the section runs into a protected block: add before it
                if sec.start < s < at < e:
                    at = len(body[:s].rstrip("\n"))
            if _inside(at, guarded):
                return body, EditResult(edit, "protected", "the section ends in a protected block")
            return _insert(body, at, content), EditResult(edit, APPLIED)
        title = edit.section.strip().lstrip("#").strip()
        if title.casefold() == EXAMPLES.casefold() and _ends_in_guidance(body, guarded):
            guarded = []  # the guidance goes before the examples, not after them
        return _append(body, f"## {title}\n\n{content}", guarded), EditResult(
            edit, APPLIED, f"created section {title!r}"
        )
    return _append(body, content, guarded), EditResult(edit, APPLIED)


_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")


def _inside(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(s < pos < e for s, e in spans)


def _insert(body: str, at: int, block: str) -> str:
    """Insert `block` at offset `at` (the end of a line): a list item continues the
    list on the next line, anything else becomes its own paragraph."""
    head, tail = body[:at], body[at:]
    last_line = head.rsplit("\n", 1)[-1]
    tight = bool(_LIST_ITEM.match(block)) and bool(_LIST_ITEM.match(last_line))
    sep = "\n" if tight or not head.strip() else "\n\n"
    rest = tail.lstrip("\n")
    if not rest:
        return head + sep + block + "\n"
    after = "\n" if tight and _LIST_ITEM.match(rest) else "\n\n"
    return head + sep + block + after + rest


def _ends_in_guidance(body: str, guarded: list[tuple[int, int]]) -> bool:
    return bool(guarded) and body[guarded[-1][0] :].startswith(GUIDANCE_OPEN)


def _append(body: str, block: str, guarded: list[tuple[int, int]]) -> str:
    """Append at the end of the body, but before a trailing protected block (the
    guidance of a skill without examples stays last)."""
    if guarded and guarded[-1][1] >= len(body.rstrip()):
        start = guarded[-1][0]
        head = body[:start].rstrip("\n")
        return (head + "\n\n" if head else "") + block + "\n\n" + body[start:]
    head = body.rstrip("\n")
    return (head + "\n\n" if head else "") + block + "\n"


GUIDANCE_OPEN = "<!-- skillopt:protected guidance -->"
GUIDANCE_CLOSE = "<!-- /skillopt:protected -->"
EXAMPLES = "Examples"  # the guidance goes before this section (the exemplars optimizer's)


def has_protected_marker(text: str) -> bool:
    """Whether `text` holds a protected block's opening or closing marker: such content
    could end a block early or open one, so it is never inserted."""
    return bool(PROTECTED_OPEN.search(text) or PROTECTED_CLOSE.search(text))


def set_guidance(skill: Skill, guidance: str, *, last: bool = False) -> Skill:
    """Write (or replace) the slow-update guidance block where it does the target the
    least harm: before an `## Examples` section when the body has one (so a
    completion-style target reads its worked examples right before its cue), else at
    the end. A block already before the examples (or in a body without them) is
    replaced where it stands. `last`: at the very end whatever the body holds (the
    guidance of a completion-style target is worked examples, read best right before
    its cue)."""
    block = f"{GUIDANCE_OPEN}\n## Lessons from training\n\n{guidance.strip()}\n{GUIDANCE_CLOSE}"
    body = skill.body
    m = re.search(re.escape(GUIDANCE_OPEN) + r".*?" + re.escape(GUIDANCE_CLOSE), body, re.DOTALL)
    if m:
        at = _examples_at(skill)
        if not last and (at is None or at > m.start()):
            return skill.with_body(body[: m.start()] + block + body[m.end() :])
        head, tail = body[: m.start()].rstrip("\n"), body[m.end() :].lstrip("\n")
        body = head + ("\n\n" if head and tail else "\n" if head else "") + tail
    at = None if last else _examples_at(skill.with_body(body))
    if at is not None:
        head = body[:at].rstrip("\n")
        return skill.with_body((head + "\n\n" if head else "") + block + "\n\n" + body[at:])
    head = body.rstrip("\n")
    return skill.with_body((head + "\n\n" if head else "") + block + "\n")


def _examples_at(skill: Skill) -> int | None:
    """Offset of the first top- or second-level `Examples` heading outside a
    protected block."""
    guarded = protected_spans(skill.body)
    for sec in skill.sections():
        if (
            sec.level <= 2
            and sec.title.casefold() == EXAMPLES.casefold()
            and not any(s <= sec.start < e for s, e in guarded)
        ):
            return sec.start
    return None


def guidance_of(skill: Skill) -> str | None:
    m = re.search(
        re.escape(GUIDANCE_OPEN)
        + r"\n## Lessons from training\n\n(.*?)\n"
        + re.escape(GUIDANCE_CLOSE),
        skill.body,
        re.DOTALL,
    )
    return m.group(1) if m else None
