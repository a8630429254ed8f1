"""The bounds every suite reader enforces, so that reading is linear in the file's
size and never hangs or overflows a recursion: how deep values may nest, and how far
YAML aliases may expand.

Invariant: a reader reads a bound as `limits.NAME` when it checks it, so a bound
lowered in a test (or by an embedding program) applies to the next read.
"""

from __future__ import annotations

from typing import Any

# Collection levels a value may nest (the suite and its items list count too). Deeper
# data would overflow the recursion of whatever walks it later (JSON, hashing).
MAX_NESTING = 100
# YAML aliases may expand the document to ALIAS_RATIO times the nodes actually
# written, and to ALIAS_FLOOR nodes whatever the file: a `<<: *defaults` per item
# stays far below, a "billion laughs" file (each anchor aliasing the last nine
# times) goes past it within a few lines.
ALIAS_FLOOR = 1_000_000
ALIAS_RATIO = 10


# what a reader says about a value nested deeper than MAX_NESTING
TOO_DEEP = (
    f"nested more than {MAX_NESTING} levels deep; flatten the value or pass it as a JSON string"
)


def nested_too_deep(value: Any, limit: int | None = None) -> bool:
    """Whether lists/mappings nest more than `limit` (default `MAX_NESTING`) levels
    (iterative: no recursion)."""
    bound = MAX_NESTING if limit is None else limit
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > bound:
            return True
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False
