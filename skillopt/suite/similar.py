"""Near-duplicate texts: the same task written twice (a copy with a word or a space
changed, a harvested request asked again), found in time close to linear in the
texts' total length.

Invariants: two texts are near-duplicates when the Jaccard similarity of their
character 4-gram sets (after `normalise`: case, Unicode compatibility forms,
punctuation and runs of spaces folded) is at least the threshold; texts equal after
`normalise` have similarity 1. The search is exact, not sampled: every pair at or
above the threshold is found (prefix filtering: two sets this similar must share one
of the rarest grams of each), so a report of "no near-duplicates" is true. Only the
first `MAX_CHARS` characters of a text are compared.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Sequence

THRESHOLD = 0.9
GRAM = 4
MAX_CHARS = 20_000
_PUNCT = re.compile(r"[\W_]+", re.UNICODE)
_DIGITS = re.compile(r"\d+")


def normalise(text: str) -> str:
    """`text` as compared: NFKC, case-folded, every run of punctuation and space one
    space."""
    text = unicodedata.normalize("NFKC", text[:MAX_CHARS]).casefold()
    return _PUNCT.sub(" ", text).strip()


def grams(text: str) -> frozenset[str]:
    """The character 4-grams of `normalise(text)` (the whole text when shorter)."""
    norm = normalise(text)
    if len(norm) <= GRAM:
        return frozenset([norm]) if norm else frozenset()
    return frozenset(norm[i : i + GRAM] for i in range(len(norm) - GRAM + 1))


def similarity(a: str, b: str) -> float:
    """The Jaccard similarity of the two texts' gram sets (1.0 when both are empty
    after `normalise`)."""
    ga, gb = grams(a), grams(b)
    if not ga and not gb:
        return 1.0
    return len(ga & gb) / len(ga | gb)


def near_duplicates(
    texts: Sequence[str], threshold: float = THRESHOLD
) -> list[tuple[int, int, float]]:
    """Every pair `(i, j, similarity)` with `i < j` whose texts are near-duplicates,
    sorted by `i` then `j`. Empty texts are never anyone's duplicate, and neither are
    two texts whose numbers differ ("add 234 and 567" is another task than "add 234
    and 568", however alike they read)."""
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    gram_sets = [grams(t) for t in texts]
    numbers = [_DIGITS.findall(t[:MAX_CHARS]) for t in texts]
    freq: Counter[str] = Counter(g for s in gram_sets for g in s)
    # each gram's rank, rarest first: sets become sorted lists of small integers
    rank = {g: r for r, g in enumerate(sorted(freq, key=lambda g: (freq[g], g)))}
    sets = [frozenset(rank[g] for g in s) for s in gram_sets]
    index: defaultdict[int, list[int]] = defaultdict(list)
    pairs: list[tuple[int, int, float]] = []
    # sets in order of size: a set can only match one at least threshold × its size
    order = sorted((i for i, s in enumerate(sets) if s), key=lambda i: (len(sets[i]), i))
    for i in order:
        s = sets[i]
        # a set as similar as `threshold` must share one of the rarest
        # |s| - ceil(threshold·|s|) + 1 grams of each (prefix filtering)
        prefix = sorted(s)[: len(s) - math.ceil(threshold * len(s) - 1e-9) + 1]
        seen: set[int] = set()
        for g in prefix:
            for j in index[g]:
                if j in seen:
                    continue
                seen.add(j)
                other = sets[j]
                if len(other) < threshold * len(s) - 1e-9 or numbers[i] != numbers[j]:
                    continue
                score = len(s & other) / len(s | other)
                if score >= threshold - 1e-9:
                    pairs.append((min(i, j), max(i, j), score))
            index[g].append(i)
    return sorted(pairs)


def groups(texts: Sequence[str], threshold: float = THRESHOLD) -> list[list[int]]:
    """The texts that are near-duplicates of one another, joined transitively: each
    group in index order, groups by their first index; a text with no near-duplicate
    is in no group."""
    parent = list(range(len(texts)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j, _ in near_duplicates(texts, threshold):
        ri, rj = root(i), root(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    joined: defaultdict[int, list[int]] = defaultdict(list)
    for i in range(len(texts)):
        joined[root(i)].append(i)
    return sorted((g for g in joined.values() if len(g) > 1), key=lambda g: g[0])
