"""The trainable artifact: a `SKILL.md` document (YAML frontmatter + Markdown body).

Invariants:
- `Skill.parse(text).text == text` byte for byte; the frontmatter is never
  re-serialised, so an untouched frontmatter survives training exactly as written.
- The content hash covers SKILL.md and every supporting file, because agent
  harnesses copy those files into the workspace and they can change the outcome.
- A target never sees a protection marker (`<!-- skillopt:protected … -->`):
  `Skill.for_target` is the skill as every harness hands it over; the stored and
  trained text keeps the markers, which the optimizer needs to find its blocks.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from skillopt._util.yaml_errors import yaml_problem
from skillopt.errors import InputError

SKILL_FILE = "SKILL.md"
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+")
_SKIP_DIRS = {".git", "__pycache__", ".DS_Store"}
# the markers of a protected block (skillopt.skill.edits guards what lies between)
PROTECTED_OPEN = re.compile(r"<!--\s*skillopt:protected\b[^>]*-->")
PROTECTED_CLOSE = re.compile(r"<!--\s*/skillopt:protected\s*-->")
_MARKER = re.compile(f"{PROTECTED_OPEN.pattern}|{PROTECTED_CLOSE.pattern}")
_MARKER_LINE = re.compile(rf"^[ \t]*(?:(?:{_MARKER.pattern})[ \t]*)+(?:\r\n?|\n|\Z)", re.MULTILINE)


@dataclass(frozen=True)
class Section:
    """One heading of the body and the text up to the next heading of any level."""

    title: str
    level: int
    start: int  # offset of the heading line in the body
    body_start: int  # offset just after the heading line
    end: int  # offset of the next heading (or the end of the body)


@dataclass(frozen=True)
class Skill:
    """A parsed skill. Immutable: edits produce a new `Skill` via `with_body`.

    `frontmatter_text` is the raw block including both `---` fences (empty when the
    file has none); `body` is everything after it. `root` is the skill directory
    on disk (None for an in-memory skill); `support` maps each supporting file's
    relative path to its sha256, so candidates derived from a skill keep its files.
    """

    frontmatter_text: str
    body: str
    frontmatter: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    root: Path | None = field(default=None, compare=False)
    support: tuple[tuple[str, str], ...] = ()
    frontmatter_error: str | None = field(default=None, compare=False)

    # -- construction -------------------------------------------------------------
    @classmethod
    def parse(
        cls, text: str, *, root: Path | None = None, support: tuple[tuple[str, str], ...] = ()
    ) -> Skill:
        """Split `text` into frontmatter and body. Never raises on bad YAML: the
        error is kept in `frontmatter_error` for lint and for `load` to report."""
        fm_text, body = _split_frontmatter(text)
        data: dict[str, Any] = {}
        error = None
        if fm_text:
            inner = _frontmatter_inner(fm_text)
            try:
                loaded = yaml.load(inner, Loader=_FrontmatterLoader) if inner.strip() else {}
            except yaml.YAMLError as exc:
                error = _yaml_message(exc, offset=1)
            else:
                if loaded is None:
                    loaded = {}
                if isinstance(loaded, dict):
                    data = loaded
                else:
                    error = f"frontmatter must be a mapping of keys, got {type(loaded).__name__}"
        return cls(
            frontmatter_text=fm_text,
            body=body,
            frontmatter=data,
            root=root,
            support=support,
            frontmatter_error=error,
        )

    @classmethod
    def load(cls, path: str | Path) -> Skill:
        """Read a skill from its directory or its SKILL.md. Raises `InputError` for a
        missing or unreadable file, invalid UTF-8 or a frontmatter that is not YAML."""
        skill_file = resolve_skill_file(path)
        try:
            text = skill_file.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not valid UTF-8 (byte {exc.start})", path=skill_file) from None
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", path=skill_file) from None
        try:
            support = _support_digest(skill_file.parent)
        except OSError as exc:
            raise InputError(
                f"cannot read a supporting file: {exc.strerror}",
                path=exc.filename or skill_file.parent,
            ) from None
        skill = cls.parse(text, root=skill_file.parent, support=support)
        if not skill.frontmatter_text and text.lstrip("\ufeff").startswith("---"):
            raise InputError(
                "the frontmatter is not closed with a '---' line",
                path=skill_file,
                field="frontmatter",
            )
        if skill.frontmatter_error:
            raise InputError(skill.frontmatter_error, path=skill_file, field="frontmatter")
        return skill

    @classmethod
    def empty(cls) -> Skill:
        """The no-skill baseline: no frontmatter, empty body."""
        return cls(frontmatter_text="", body="")

    def with_body(self, body: str) -> Skill:
        """A new skill with the same frontmatter, root and supporting files."""
        return replace(self, body=body)

    def for_target(self) -> Skill:
        """The skill as the target sees it: the protection markers taken out (a line
        holding nothing else goes whole), everything else byte for byte. Every harness
        hands this to the target (the chat system prompt, the SKILL.md installed in a
        workspace), and `export` ships it; a skill without markers is returned as is.
        A pure function of the skill, so the skill hash still keys its rollouts."""
        if not _MARKER.search(self.body):
            return self
        return self.with_body(_MARKER.sub("", _MARKER_LINE.sub("", self.body)))

    # -- views ----------------------------------------------------------------------
    @property
    def text(self) -> str:
        """The whole SKILL.md as it would be written to disk."""
        return self.frontmatter_text + self.body

    @property
    def name(self) -> str:
        value = self.frontmatter.get("name")
        if isinstance(value, str) and value:
            return value
        return self.root.name if self.root is not None else "no-skill"

    @property
    def description(self) -> str:
        value = self.frontmatter.get("description")
        return value if isinstance(value, str) else ""

    @property
    def is_empty(self) -> bool:
        return not self.body.strip() and not self.frontmatter_text

    @property
    def hash(self) -> str:
        """sha256 over SKILL.md and the supporting files: the skill's identity in
        every rollout fingerprint. The empty skill hashes to the fixed value 'none'."""
        if self.is_empty and not self.support:
            return "none"
        h = hashlib.sha256()
        h.update(b"SKILL.md\0")
        h.update(self.text.encode("utf-8"))
        for rel, digest in self.support:
            h.update(b"\0" + rel.encode("utf-8") + b"\0" + digest.encode("ascii"))
        return h.hexdigest()

    @property
    def short_hash(self) -> str:
        return self.hash[:12]

    def sections(self) -> list[Section]:
        """Headings of the body in order, ignoring `#` lines inside fenced code."""
        found: list[tuple[str, int, int, int]] = []
        offset = 0
        fence: str | None = None
        for line in _LINE.findall(self.body):
            stripped = line.rstrip("\r\n")
            if offset == 0:
                stripped = stripped.lstrip("\ufeff")
            m = _FENCE.match(stripped)
            info = stripped[m.end() :] if m else ""
            if m and fence is None and not (m.group(1)[0] == "`" and "`" in info):
                fence = m.group(1)
            elif m and fence is not None:
                if m.group(1).startswith(fence) and not info.strip():
                    fence = None
            elif fence is None:
                h = _HEADING.match(stripped)
                if h:
                    found.append((h.group(2).strip(), len(h.group(1)), offset, offset + len(line)))
            offset += len(line)
        sections = []
        for i, (title, level, start, body_start) in enumerate(found):
            end = found[i + 1][2] if i + 1 < len(found) else len(self.body)
            sections.append(Section(title, level, start, body_start, end))
        return sections

    def section(self, title: str) -> Section | None:
        """The first section whose heading matches `title` (case and `#` ignored)."""
        want = _norm_title(title)
        for sec in self.sections():
            if _norm_title(sec.title) == want:
                return sec
        return None

    def write(self, directory: Path) -> Path:
        """Write SKILL.md (and copy supporting files from `root`) into `directory`."""
        import shutil

        directory.mkdir(parents=True, exist_ok=True)
        if self.root is not None and self.root.resolve() != directory.resolve():
            for rel, _ in self.support:
                dest = directory / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(self.root / rel, dest)
        target = directory / SKILL_FILE
        target.write_bytes(self.text.encode("utf-8"))
        return target


class _DuplicateKey(yaml.MarkedYAMLError):
    """A key given twice in one mapping (YAML would keep the last one silently)."""


def _unique_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise _DuplicateKey(
                None, None, f"duplicate key {key!r}: it is given twice", key_node.start_mark
            )
        seen.add(key)
    return dict(loader.construct_mapping(node, deep=True))


class _FrontmatterLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice (`name:` twice is a mistake the
    reader of the file cannot see; YAML would keep the second silently)."""


_FrontmatterLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def text_key(text: str) -> str:
    """What makes two skill texts the same candidate: the text with runs of
    whitespace collapsed (one differing from another only so would be gated twice)."""
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()[:20]


def resolve_skill_file(path: str | Path) -> Path:
    """Map a skill directory or a SKILL.md path to the SKILL.md file."""
    p = Path(path)
    if p.is_dir():
        for candidate in (SKILL_FILE, "skill.md"):
            if (p / candidate).is_file():
                return p / candidate
        raise InputError(_no_skill_here(p), path=p)
    if p.is_file():
        return p
    raise InputError("no such skill file or directory", path=p)


def _no_skill_here(folder: Path) -> str:
    """Why a folder is not a skill, naming the subfolders looked in: the skills
    below it (a folder of skill folders: name one of them), or that none holds one."""
    try:
        subs = sorted(d for d in folder.iterdir() if d.is_dir() and not d.name.startswith("."))
    except OSError:
        subs = []
    skills = [d for d in subs if (d / SKILL_FILE).is_file() or (d / "skill.md").is_file()]
    if skills:
        names = ", ".join(d.name for d in skills[:8]) + (" …" if len(skills) > 8 else "")
        return (
            f"no {SKILL_FILE} in this directory; it holds {len(skills)} skill "
            f"folder{'s' if len(skills) != 1 else ''} ({names}): name one, e.g. {skills[0]}"
        )
    if subs:
        names = ", ".join(d.name for d in subs[:8]) + (" …" if len(subs) > 8 else "")
        return f"no {SKILL_FILE} in this directory, nor in its subfolders ({names})"
    return f"no {SKILL_FILE} in this directory (and no subfolders)"


def _split_frontmatter(text: str) -> tuple[str, str]:
    """Return (frontmatter block with fences and trailing newline, body)."""
    start = 1 if text.startswith("\ufeff") else 0
    first_nl = text.find("\n", start)
    first = text[start : first_nl if first_nl != -1 else len(text)].rstrip("\r")
    if first.rstrip() != "---" or first_nl == -1:
        return "", text
    pos = first_nl + 1
    while pos <= len(text):
        nl = text.find("\n", pos)
        line_end = nl if nl != -1 else len(text)
        line = text[pos:line_end].rstrip("\r").rstrip()
        if line in ("---", "..."):
            cut = line_end + 1 if nl != -1 else len(text)
            return text[:cut], text[cut:]
        if nl == -1:
            break
        pos = nl + 1
    return "", text  # no closing fence: treat the whole file as body (lint reports it)


def _frontmatter_inner(fm_text: str) -> str:
    lines = fm_text.splitlines(keepends=True)
    return "".join(lines[1:-1])


def _yaml_message(exc: yaml.YAMLError, offset: int = 0) -> str:
    problem, line = yaml_problem(exc, offset)
    if line is not None:
        return f"invalid YAML at line {line}: {problem}"
    return f"invalid YAML: {problem}"


def _norm_title(title: str) -> str:
    return " ".join(title.strip().strip("#").split()).casefold()


def _support_digest(root: Path) -> tuple[tuple[str, str], ...]:
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if any(part in _SKIP_DIRS for part in rel.parts) or not p.is_file():
            continue
        if rel.as_posix() in (SKILL_FILE, "skill.md"):
            continue
        out.append((rel.as_posix(), hashlib.sha256(p.read_bytes()).hexdigest()))
    return tuple(out)
