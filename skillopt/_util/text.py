"""Text from outside (model replies, agent output, verifier output, suites) made safe
to keep: `clean` replaces what cannot be encoded or stored, `safe` also blanks
known secrets; and cut to size for messages and prompts: `clip` keeps the start,
`tail` the end, each marking the cut. `did_you_mean` words a likely typo's fix.

Invariant: whatever a model or a program sends, `safe(text)` can be written as
UTF-8 to SQLite, JSON, YAML and git, and holds no secret skillopt knows.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from skillopt._util.secrets import scrub

REPLACEMENT = "\ufffd"
# lone UTF-16 surrogates cannot be encoded as UTF-8; NUL ends strings in C, git and
# many terminals
_BAD = re.compile("[\ud800-\udfff\x00]")
# the same written as JSON escapes, which become lone surrogates (and NULs) when the
# reply is decoded; a high surrogate followed by a low one is a real character
_HIGH, _LOW = r"\\u[dD][89abAB][0-9a-fA-F]{2}", r"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_BAD_ESCAPE = re.compile(rf"{_HIGH}(?!{_LOW})|(?<!{_HIGH}){_LOW}|\\u0000")


def clean(text: str) -> tuple[str, int]:
    """(`text` with unencodable characters and NULs replaced by U+FFFD — raw, or as
    JSON escapes that would decode to them — and how many were replaced)."""
    n = 0
    if "\\u" in text:
        text, n = _BAD_ESCAPE.subn(r"\\ufffd", text)
    if "\x00" not in text:
        try:
            text.encode("utf-8")
            return text, n
        except UnicodeEncodeError:
            pass
    text, m = _BAD.subn(REPLACEMENT, text)
    return text, n + m


def safe(text: str | None) -> str | None:
    """`clean` and `scrub`: text that can be stored and shown."""
    if not text:
        return text
    return scrub(clean(text)[0])


def replaced_note(count: int, where: str = "the reply") -> str:
    """The sentence that tells a reader characters were replaced."""
    plural = "s" if count != 1 else ""
    return (
        f"{where} held {count} character{plural} that cannot be stored (a lone UTF-16 "
        f"surrogate or NUL), replaced with U+FFFD"
    )


def clip(text: str, limit: int, marker: str = "…") -> str:
    """The first `limit` characters of `text` followed by `marker`, or `text` as it
    is when it fits. `{cut}` in the marker becomes the number of characters cut
    (`"…[truncated {cut} chars]"`), so a reader knows how much is missing."""
    if len(text) <= limit:
        return text
    return text[:limit] + marker.format(cut=len(text) - limit)


def tail(text: str, limit: int = 800) -> str:
    """The last `limit` characters of `text` after stripping it, behind a "…" when
    some were cut: the end of a program's output is where it says what went wrong."""
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


def xml_clip(text: str, limit: int) -> str:
    """`text` without control characters other than tab and newlines (so it is valid
    in XML), cut to `limit` characters with "…" appended when longer."""
    text = "".join(ch for ch in text if ch in "\t\n\r" or ord(ch) >= 0x20)
    return clip(text, limit)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """The hint for a mistyped `word`: `did you mean 'scorer'?` with the closest of
    `choices` (case ignored), or an empty string when none is close."""
    options = {c.casefold(): c for c in choices}
    close = difflib.get_close_matches(word.casefold(), list(options), n=1, cutoff=0.6)
    return f"did you mean {options[close[0]]!r}?" if close else ""
