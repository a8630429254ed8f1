"""Where an edit lands: finding an anchor in a skill body, the protected blocks no
edit may touch, and the nearest line to an anchor that is not there.

Invariants: an anchor is matched exactly first, then whitespace- and
case-normalised, then also ignoring Markdown quoting (backticks, straight and curly
quotes, `*` and `_`), each way tried only when the one before finds nothing; more
than one match is ambiguous, none is missing. Nothing is guessed.
"""

from __future__ import annotations

import difflib
import re

from skillopt._util.text import clip
from skillopt.skill.document import PROTECTED_CLOSE, PROTECTED_OPEN

_QUOTING = frozenset("`'\"\u2018\u2019\u201c\u201d*_")


def protected_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every protected block, markers included. An unclosed block
    protects everything after its opening marker."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while True:
        m = PROTECTED_OPEN.search(text, pos)
        if not m:
            return spans
        close = PROTECTED_CLOSE.search(text, m.end())
        end = close.end() if close else len(text)
        spans.append((m.start(), end))
        pos = end


def _normalise_with_map(text: str, unquote: bool = False) -> tuple[str, list[int]]:
    """Casefolded text with whitespace runs collapsed to one space (and, with
    `unquote`, Markdown quoting left out), and for each character of the result its
    offset in `text`."""
    out: list[str] = []
    index: list[int] = []
    in_space = False
    for i, ch in enumerate(text):
        if unquote and ch in _QUOTING:
            continue
        if ch.isspace():
            if not in_space and out:
                out.append(" ")
                index.append(i)
            in_space = True
            continue
        in_space = False
        for c in ch.casefold():
            out.append(c)
            index.append(i)
    if out and out[-1] == " ":
        out.pop()
        index.pop()
    return "".join(out), index


def find_anchor(text: str, anchor: str) -> tuple[str, tuple[int, int] | None]:
    """('found', span) | ('ambiguous', None) | ('missing', None).

    Exact first, then whitespace- and case-normalised, then also ignoring Markdown
    quoting: tried only when the previous way finds nothing, so an anchor that
    matched one place before never matches another now. A match that ignored quoting
    spans the quoting right around it too."""
    if not anchor or not anchor.strip():
        return "missing", None
    start = text.find(anchor)
    if start != -1:
        # overlapping occurrences count too ("- a\n- a" is twice in "- a\n- a\n- a")
        if text.find(anchor, start + 1) != -1:
            return "ambiguous", None
        return "found", (start, start + len(anchor))
    for unquote in (False, True):
        norm_text, index = _normalise_with_map(text, unquote)
        norm_anchor, _ = _normalise_with_map(anchor, unquote)
        if not norm_anchor:
            return "missing", None
        starts = [m.start() for m in re.finditer(f"(?={re.escape(norm_anchor)})", norm_text)]
        if len(starts) > 1:
            return "ambiguous", None
        if starts:
            s = starts[0]
            span = (index[s], index[s + len(norm_anchor) - 1] + 1)
            return "found", _widen(text, span) if unquote else span
    return "missing", None


def _widen(text: str, span: tuple[int, int]) -> tuple[int, int]:
    """`span` grown over the quoting right around it: an anchor that left the quoting
    out names the quoted text whole (`letters in upper case` takes the closing `**` of
    `letters in **UPPER CASE**`), so no edit leaves half a pair behind."""
    start, end = span
    while start > 0 and text[start - 1] in _QUOTING:
        start -= 1
    while end < len(text) and text[end] in _QUOTING:
        end += 1
    return start, end


def nearest_line(text: str, anchor: str) -> tuple[str, float] | None:
    """The line of `text` most like `anchor` (for an anchor of several lines, the run
    of as many non-blank lines, up to 5, most like its first ones, line by line), by
    difflib's ratio over casefolded text, and that ratio; lines in a protected block
    are left out. None when `text` or `anchor` has no such line."""
    guarded = protected_spans(text)
    lines, offset = [], 0
    for line in text.splitlines(keepends=True):
        if line.strip() and not any(s <= offset < e for s, e in guarded):
            lines.append(line.strip())
        offset += len(line)
    want = [line.strip().casefold() for line in anchor.splitlines() if line.strip()]
    k = min(len(want), len(lines), 5)
    if not k:
        return None
    matcher = difflib.SequenceMatcher(None, autojunk=False)  # a ratio that means the same
    ratios = []  # ratios[j][i]: the anchor's line j against the body's line i
    for w in want[:k]:
        matcher.set_seq2(w)  # difflib caches what it knows of seq2
        row = []
        for line in lines:
            matcher.set_seq1(line.casefold())
            row.append(matcher.ratio())
        ratios.append(row)
    best: tuple[str, float] | None = None
    for i in range(len(lines) - k + 1):
        score = sum(ratios[j][i + j] for j in range(k)) / k
        if best is None or score > best[1]:
            best = ("\n".join(lines[i : i + k]), score)
    return best


def not_found(body: str, anchor: str) -> str:
    """Why an anchor was not found, naming the body's nearest line to it."""
    detail = "the anchor is not in the skill (exactly or normalised)"
    near = nearest_line(body, anchor)
    if near is None:
        return detail
    what = "line" if "\n" not in near[0] else "lines"
    return f"{detail}; nearest {what}: {clip(near[0], 200)!r} (similarity {near[1]:.2f})"
