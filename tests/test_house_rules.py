"""Two rules of the house (CONTRIBUTING), read from the source of every module:

- no code probes an object with `getattr`, `hasattr`, `setattr` or `delattr`:
  a capability is a runtime-checkable Protocol checked with `isinstance`. The only
  reads by name are at the boundary with objects skillopt does not define (a
  provider SDK's response or exception, a module loaded by name), each file listed
  below with how many it has and why;
- no code sets an attribute of an object other than its own (`self`, `cls`):
  everything an object needs is given to its constructor, and an object changes
  only its own state. The only exceptions are objects of libraries that offer no
  other way (a module's settings, a field no constructor takes), each file listed
  below with how many and why.

Each failure names the file, the line and the statement.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "skillopt"

PROBES = ("getattr", "hasattr", "setattr", "delattr")

# file -> (how many probing calls it makes, why each reads a foreign object by name)
BOUNDARY_READS: dict[str, tuple[int, str]] = {
    "skillopt/models/litellm_model.py": (
        14,
        "litellm's response, choice and usage objects, whose fields vary by provider",
    ),
    "skillopt/models/remote.py": (
        4,
        "a provider SDK's or litellm's exception: its status code, response and headers",
    ),
    "skillopt/models/direct.py": (3, "the OpenAI and Anthropic SDKs' exceptions: status, body"),
    "skillopt/models/scripted.py": (1, "a user's function, named `module:function`"),
    "skillopt/_util/secrets.py": (1, "CPython's undecoded environment, os.environ._data"),
}
# file -> (how many attributes of foreign objects it sets, why the library leaves no
# other way: a module's settings, a field its constructor does not take)
BOUNDARY_WRITES: dict[str, tuple[int, str]] = {
    "skillopt/models/litellm_model.py": (2, "litellm's module settings: no debug info, telemetry"),
    "skillopt/models/local_llama.py": (
        4,
        "llama_cpp: its default model parameters swapped for one load and restored, a "
        "ctypes parameter struct, and the cache position of a Llama",
    ),
    "skillopt/rollouts/ray_executor.py": (1, "Ray's worker-output printer, sent to the log"),
    "skillopt/eval/junit.py": (2, "ElementTree's element text, which no constructor takes"),
    "skillopt/harness/process.py": (1, "threading.Timer's daemon flag, which it does not take"),
    "skillopt/cli/main.py": (1, "typer's command records: the help class of each command"),
}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


@cache
def sources() -> tuple[tuple[str, str, ast.Module], ...]:
    """(path, text, syntax tree) of every module of the package, parsed once."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        found.append((rel, text, ast.parse(text, rel)))
    return tuple(found)


def finding(rel: str, text: str, node: ast.expr | ast.stmt) -> Finding:
    segment = ast.get_source_segment(text, node) or ""
    return Finding(rel, node.lineno, " ".join(segment.split())[:120])


def probes() -> dict[str, list[Finding]]:
    """Every call of a builtin that reads or writes an attribute by name, by file."""
    found: dict[str, list[Finding]] = {}
    for rel, text, tree in sources():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in PROBES
            ):
                found.setdefault(rel, []).append(finding(rel, text, node))
    return found


def targets(node: ast.expr) -> Iterator[ast.expr]:
    """The single targets of an assignment target (`a, b.c = …` has two)."""
    if isinstance(node, (ast.Tuple, ast.List)):
        for element in node.elts:
            yield from targets(element)
    elif isinstance(node, ast.Starred):
        yield from targets(node.value)
    else:
        yield node


def own(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def attributes_set_on_others() -> dict[str, list[Finding]]:
    """Every assignment to an attribute of something other than `self` or `cls`,
    and every `object.__setattr__(x, …)` of an `x` other than `self`, by file."""
    found: dict[str, list[Finding]] = {}
    for rel, text, tree in sources():
        for node in ast.walk(tree):
            assigned: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                assigned = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                assigned = [node.target]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("__setattr__", "__delattr__")
                and not (node.args and own(node.args[0]))
            ):
                found.setdefault(rel, []).append(finding(rel, text, node))
            for target in (t for a in assigned for t in targets(a)):
                if isinstance(target, ast.Attribute) and not own(target.value):
                    found.setdefault(rel, []).append(finding(rel, text, node))
    return found


def test_the_reader_finds_what_it_looks_for():
    """Both readers see what they are after (an empty answer would pass anything)."""
    tree = ast.parse(
        "x.y = 1\nself.a.b += 2\nself.ok = 3\n(a, (b.c, d)) = e\nobject.__setattr__(o, 'n', 1)"
    )
    assigned = [
        t
        for node in ast.walk(tree)
        if isinstance(node, (ast.Assign, ast.AugAssign))
        for a in (node.targets if isinstance(node, ast.Assign) else [node.target])
        for t in targets(a)
        if isinstance(t, ast.Attribute) and not own(t.value)
    ]
    assert [ast.unparse(t) for t in assigned] == ["x.y", "self.a.b", "b.c"]
    assert "skillopt/models/litellm_model.py" in probes()  # litellm's response objects
    assert "skillopt/eval/junit.py" in attributes_set_on_others()  # ElementTree's text


def beyond(found: dict[str, list[Finding]], allowed: dict[str, tuple[int, str]], fix: str):
    """What `found` has beyond each file's allowance, and allowances no longer used."""
    wrong: list[str] = []
    for rel, calls in sorted(found.items()):
        limit = allowed.get(rel, (0, ""))[0]
        if len(calls) > limit:
            wrong.append(f"{rel}: {len(calls)} found, {limit} allowed ({fix}):")
            wrong += [f"    {c}" for c in calls]
    # an allowance lasts no longer than the boundary needs it
    for rel, (limit, _why) in sorted(allowed.items()):
        if len(found.get(rel, [])) < limit:
            wrong.append(f"{rel}: {len(found.get(rel, []))} found now; lower its allowance")
    return wrong


def test_no_code_probes_an_object_by_name_but_at_the_boundary():
    wrong = beyond(
        probes(),
        BOUNDARY_READS,
        "a capability is a runtime-checkable Protocol checked with isinstance; a field "
        "is read from its type",
    )
    assert not wrong, "\n".join(wrong)


def test_no_code_sets_an_attribute_of_another_object_but_at_the_boundary():
    wrong = beyond(
        attributes_set_on_others(),
        BOUNDARY_WRITES,
        "give the value to the constructor, or let the object change its own state in "
        "one of its methods",
    )
    assert not wrong, "\n".join(wrong)
