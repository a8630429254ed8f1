"""Where a YAML syntax error is, for people: the line of the construct left open
(an unclosed quote or bracket, a key without its colon) rather than the line where
the parser gave up, which is the next line or the end of the file.

Invariant: lines are 1-based lines of the text that was parsed (PyYAML's marks are
0-based); an error without a mark has no line.
"""

from __future__ import annotations

import yaml
from yaml.error import MarkedYAMLError

# the constructs whose error the parser finds only after them: the mistake is where
# they begin (the context mark), not where the parser noticed (the problem mark)
_OPENED = (
    "while scanning a quoted scalar",
    "while scanning a simple key",
    "while parsing a flow sequence",
    "while parsing a flow mapping",
)


def yaml_problem(exc: yaml.YAMLError, offset: int = 0) -> tuple[str, int | None]:
    """(what is wrong, the 1-based line where the mistake is): lines of the text
    parsed, plus `offset` when that text starts further down a file (a frontmatter)."""
    if not isinstance(exc, MarkedYAMLError):
        return str(exc).splitlines()[0], None
    problem = exc.problem or str(exc).splitlines()[0]
    mark, opened = exc.problem_mark, exc.context_mark
    if mark is None:
        return problem, None
    line = mark.line + 1 + offset
    context = exc.context or ""
    if opened is not None and opened.line < mark.line and context.startswith(_OPENED):
        thing = context.split(" ", 2)[2]  # "a quoted scalar"
        thing = thing.removeprefix("a ")
        return (
            f"{problem} (line {line}) in the {thing} that begins on this line",
            opened.line + 1 + offset,
        )
    return problem, line
