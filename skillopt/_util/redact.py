"""Secrets found by their shape in text skillopt did not write (agent transcripts, a
user's edits), replaced by a marker naming their kind (`[REDACTED:anthropic-key]`)
and counted by kind.

Invariant: after `redact`, the text holds none of: a provider key of a known shape
(Anthropic, OpenAI, AWS, GitHub, Slack, Google), a JWT, a private key PEM block, a
`Bearer` token, the password of a `scheme://user:password@host` URL, the value of an
assignment whose name looks secret (`DB_PASSWORD=…`, `"api_key": "…"`,
`token: …`), the word after "password is", a value skillopt knows to be secret
(`secrets.known()`), or a long high-entropy token. It leaves ordinary prose, code,
paths, UUIDs and hex digests (git commits, sha256 sums) as they were: a reader must
still be able to tell what the session was about. A hex-only run is a digest far
more often than a key, so it is redacted only as the value of a secret-looking
name. Unlike `secrets.scrub` (which blanks known values with `***` in what skillopt
itself stores), this is for text from outside, where the secrets are not known in
advance.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

from skillopt._util.secrets import MIN_LENGTH, known

MARK = "[REDACTED:{kind}]"

# a name that holds a secret, split into words (snake, kebab, dotted or camelCase):
# `db_password`, `apiKey`, `GITHUB_TOKEN`, `x-auth-token`; never `monkey` or `keyboard`
_SECRET_WORDS = frozenset(
    "key apikey accesskey secretkey privatekey token authtoken secret password passwd "
    "pwd passphrase credential credentials auth authorization".split()
)
_WORD_SPLIT = re.compile(r"[_\-.\s]+|(?<=[a-z0-9])(?=[A-Z])")
# words that follow a secret-looking name in code and prose without being its value
_NOT_VALUES = frozenset(
    "true false none null nil undefined str string int bytes bool optional any self "
    "required env the a an is bearer basic".split()
)

_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}"
_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private-key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
            r"(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)"
        ),
    ),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{8,}")),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("slack-token", re.compile(r"\bxox[abposre]-[A-Za-z0-9\-]{10,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
)
# every shape in one pattern, one pass over the text; the group that matched names it
_SHAPE = re.compile("|".join(f"(?P<s{i}>{p.pattern})" for i, (_, p) in enumerate(_SHAPES)))
# (kind, pattern, the group holding the secret): only that group is replaced, so the
# name (`DB_PASSWORD=`, `Bearer `, `user:`) stays and the reader knows what was there
_VALUES: tuple[tuple[str, re.Pattern[str], int], ...] = (
    (
        "aws-secret-key",
        re.compile(r"(?i)(aws_secret_access_key[\"']?\s*[:=]\s*[\"']?)([A-Za-z0-9/+=]{40})"),
        2,
    ),
    (
        "url-password",
        re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.\-]{0,20}://[^\s:/@]{1,128}:)([^\s@/]{1,256})(@)"),
        2,
    ),
    ("bearer-token", re.compile(r"(\b[Bb]earer\s+)([A-Za-z0-9._~+/=\-]{8,})"), 2),
)
# NAME=value, NAME: value, "name": "value" (the name checked in `_secret_name`)
_QUOTED = re.compile(rf"([\"']?)({_NAME})\1(\s*[:=]\s*)([\"'])([^\"'\n]{{1,512}})\4")
_BARE = re.compile(
    rf"(?<![\w.\-])({_NAME})(\s*[:=]\s*)(?![\"'\[{{(<$%])([^\s\"',;()\[\]{{}}<>`]{{3,512}})"
)
# "my password is hunter2", "the passphrase: …" (prose, not an assignment)
_SAID = re.compile(
    r"(?i)(\b(?:password|passwd|passphrase|pwd|pin)\s+(?:is|was|=|:)\s+)"
    r"([\"']?)([^\s\"'()\[\]]{3,256})"
)
# a run of characters a key or a base64 blob is made of
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/=_\-]{24,}(?![A-Za-z0-9+/=_\-])")
_HEX = re.compile(r"[0-9a-fA-F]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_CODE_NAME = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*")
_PIECES = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
ENTROPY = 4.0  # bits per character; English words and identifiers stay below it

_known_cache: tuple[frozenset[str], re.Pattern[str] | None] = (frozenset(), None)


def redact(text: str) -> tuple[str, Counter[str]]:
    """(`text` with every secret found replaced by `[REDACTED:<kind>]`, how many of
    each kind were replaced)."""
    counts: Counter[str] = Counter()
    if not text:
        return text, counts
    text = _known(text, counts)
    if len(text) < 6:
        return text, counts
    text = _SHAPE.sub(lambda m: _shape(m, counts), text)
    for kind, pattern, group in _VALUES:
        text = _sub(pattern, text, kind, counts, group)
    text = _sub(_QUOTED, text, "secret-assignment", counts, 5, lambda m: _secret_name(m[2]))
    text = _sub(
        _BARE,
        text,
        "secret-assignment",
        counts,
        3,
        lambda m: _secret_name(m[1]) and _literal(m, 3),
    )
    text = _sub(_SAID, text, "password", counts, 3, lambda m: _literal(m, 3))
    text = _sub(_TOKEN, text, "high-entropy", counts, 0, lambda m: high_entropy(m[0]))
    return text, counts


def _shape(m: re.Match[str], counts: Counter[str]) -> str:
    kind = _SHAPES[int((m.lastgroup or "s0")[1:])][0]
    counts[kind] += 1
    return MARK.format(kind=kind)


def high_entropy(token: str) -> bool:
    """Whether `token` reads as random: long, mixed letters and digits, and at least
    `ENTROPY` bits of Shannon entropy per character. Paths, identifiers, UUIDs and
    hex digests are not."""
    if len(token) < 24 or _HEX.fullmatch(token) or _UUID.search(token) or "REDACTED" in token:
        return False
    if not (any(c.isdigit() for c in token) and any(c.isalpha() for c in token)):
        return False
    if not (any(c.isupper() for c in token) and any(c.islower() for c in token)):
        return False  # snake_case and kebab-case names, lower-case hex with dashes
    # a path, a dotted or underscored name or a CamelCase one is words joined: its
    # pieces are word-long, a random key's are a letter or two between digits
    words = _PIECES.findall(token)
    if sum(map(len, words)) / max(1, len(words)) >= 3.5:
        return False
    return entropy(token) >= ENTROPY


def entropy(text: str) -> float:
    """Shannon entropy of `text`'s characters, in bits per character."""
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values()) if n else 0.0


def _secret_name(name: str) -> bool:
    words = [w.lower() for w in _WORD_SPLIT.split(name) if w]
    if words == ["key"]:
        return False  # `key=lambda …`, `for key, value in …`: a key alone is a dict's
    return any(w in _SECRET_WORDS for w in words)


def _literal(m: re.Match[str], group: int) -> bool:
    """Whether the value after a secret-looking name is a literal rather than code or
    a word of prose (`token = next(tokens)`, `api_key = settings.api_key`, `auth:
    true`, `Authorization: Bearer …`)."""
    value = m[group].rstrip(".,;:!?")
    if m.string[m.end() : m.end() + 1] in ("(", "["):
        return False
    if _CODE_NAME.fullmatch(value) and ("." in value or "_" in value):
        return False
    return len(value) >= 3 and value.lower() not in _NOT_VALUES and "REDACTED" not in value


def _sub(
    pattern: re.Pattern[str],
    text: str,
    kind: str,
    counts: Counter[str],
    group: int = 0,
    when: Callable[[re.Match[str]], bool] | None = None,
) -> str:
    def replace(m: re.Match[str]) -> str:
        if when is not None and not when(m):
            return m[0]
        counts[kind] += 1
        start, end = m.span(group)
        whole_start = m.start(0)
        mark = MARK.format(kind=kind)
        return m[0][: start - whole_start] + mark + m[0][end - whole_start :]

    return pattern.sub(replace, text)


def _known(text: str, counts: Counter[str]) -> str:
    """Every value skillopt knows to be secret (`secrets.known()`), replaced."""
    global _known_cache
    values = frozenset(v for v in known() if len(v) >= MIN_LENGTH)
    cached, pattern = _known_cache
    if values != cached:
        # longest first, so a secret that contains another is replaced whole
        ordered = sorted(values, key=len, reverse=True)
        pattern = re.compile("|".join(re.escape(v) for v in ordered)) if ordered else None
        _known_cache = (values, pattern)
    if pattern is None:
        return text
    return _sub(pattern, text, "known-secret", counts)
