"""The layers of the package, enforced from its source: every `import` and `from …
import` of every module is read (those under `TYPE_CHECKING` and those inside
functions too, since either can close a cycle or drag an engine into a contract),
and arrows point one way only:

- the command line imports only the facade (`skillopt.api`), the package's public
  names (`skillopt`), `skillopt.errors` and the leaf helpers (`skillopt._util`);
- the contracts import no engine, not even through another module;
- no two modules import each other, however indirectly;
- the leaf helpers import nothing of skillopt but `errors`, and nothing below the
  facade imports the facade or the command line.

Each failure names the file, the line and the import (for an indirect one, every
step of the chain).
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "skillopt"

FACADE = "skillopt.api"
CLI = "skillopt.cli"
# above the facade, beside the command line: the package's lazy re-exports (its
# public names) and `python -m skillopt`
TOP = (PACKAGE, "skillopt.__main__")

# the contracts a user implements or a stage hands on, and the records they share
CONTRACTS = (
    "skillopt.models.base",
    "skillopt.harness.base",
    "skillopt.optimize.base",
    "skillopt.optimize.gate",
    "skillopt.suite.scorers.base",
    "skillopt.rollouts.record",
)
# what runs a stage or assembles a run: no contract may load any of it
ENGINES = (
    "skillopt.rollouts.engine",
    "skillopt.training",
    "skillopt.eval",
    "skillopt.store",
    "skillopt.runs",
    CLI,
    FACADE,
)
# and the package itself (`from skillopt import Settings`: its public names)
CLI_MAY_IMPORT = (FACADE, "skillopt.errors", "skillopt._util", CLI)
UTIL = "skillopt._util"
UTIL_MAY_IMPORT = (UTIL, "skillopt.errors")


@dataclass(frozen=True)
class Import:
    """One module of skillopt importing another, where it says so."""

    source: str
    target: str
    path: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}  ({self.source} -> {self.target})"


# module -> {module it imports: the first statement that imports it}
Graph = dict[str, dict[str, Import]]


def under(module: str, prefixes: Iterable[str]) -> bool:
    """Whether `module` is one of `prefixes` or inside one of them."""
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name."""
    return {module_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py"))}


def owner(name: str) -> str | None:
    """The module of skillopt that `name` (a module or a name in one) lives in."""
    known = modules()
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imported(node: ast.Import | ast.ImportFrom, source: str, is_package: bool) -> Iterator[str]:
    """The dotted names an import statement loads, relative ones resolved."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        package = source if is_package else source.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    for alias in node.names:
        # `from skillopt.models import base` loads the module skillopt.models.base;
        # `from skillopt.models import Model` loads skillopt.models
        sub = f"{base}.{alias.name}"
        yield sub if sub in modules() else base


def imports_in(text: str, source: str, rel: str) -> Iterator[Import]:
    """The imports of skillopt modules in the source `text` of module `source`,
    wherever they stand: at the top, under `if TYPE_CHECKING:`, inside a function."""
    for node in ast.walk(ast.parse(text, rel)):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        segment = " ".join((ast.get_source_segment(text, node) or "").split())
        for name in imported(node, source, rel.endswith("/__init__.py")):
            target = owner(name)
            if target is not None and target != source:
                yield Import(source, target, rel, node.lineno, segment)


@cache
def imports() -> tuple[Import, ...]:
    """Every import of a skillopt module by a skillopt module, in file order."""
    found = {
        imp
        for source, path in modules().items()
        for imp in imports_in(
            path.read_text(encoding="utf-8"), source, path.relative_to(ROOT).as_posix()
        )
    }
    # (a set: one statement naming several things of one module is one import of it)
    return tuple(sorted(found, key=lambda i: (i.path, i.line, i.target)))


@cache
def graph() -> Graph:
    """module -> {module it imports: the first line that imports it}."""
    edges: dict[str, dict[str, Import]] = {name: {} for name in modules()}
    for imp in imports():
        edges[imp.source].setdefault(imp.target, imp)
    return edges


def chain(start: str, goal: Iterable[str]) -> list[Import] | None:
    """The shortest chain of imports from `start` to a module under `goal`."""
    goals = tuple(goal)
    came: dict[str, Import | None] = {start: None}
    queue = deque([start])
    while queue:
        here = queue.popleft()
        if here != start and under(here, goals):
            steps: list[Import] = []
            step = came[here]
            while step is not None:
                steps.append(step)
                step = came[step.source]
            return steps[::-1]
        for there, imp in graph()[here].items():
            if there not in came:
                came[there] = imp
                queue.append(there)
    return None


def cycles(edges: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's), each
    sorted; every module in one imports every other, directly or not."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def loop_through(edges: Graph, module: str, members: set[str]) -> list[Import]:
    """The shortest cycle of imports from `module` back to itself within `members`."""
    came: dict[str, Import] = {}
    queue = deque([module])
    while queue:
        here = queue.popleft()
        for there, imp in edges[here].items():
            if there not in members:
                continue
            if there == module:
                steps = [imp]
                while steps[-1].source != module:
                    steps.append(came[steps[-1].source])
                return steps[::-1]
            if there not in came:
                came[there] = imp
                queue.append(there)
    raise AssertionError(f"{module} is in no cycle")  # pragma: no cover


def report(title: str, lines: Iterable[object]) -> str:
    return "\n".join([title, *(f"  {line}" for line in lines)])


def test_the_import_reader_sees_every_kind_of_import():
    """The reader finds imports under TYPE_CHECKING, inside functions and relative
    ones: a contract it could not see would pass whatever the code did."""
    text = (
        "from typing import TYPE_CHECKING\n"
        "import skillopt.errors\n"
        "if TYPE_CHECKING:\n"
        "    from skillopt.store.rollouts import RolloutStore\n"
        "def f():\n"
        "    from skillopt.training import session\n"
        "    from . import engine, Rollout\n"
        "    from ..optimize.gate import Gate\n"
    )
    found = [
        (i.line, i.target)
        for i in imports_in(text, "skillopt.rollouts.record", "skillopt/rollouts/record.py")
    ]
    assert found == [
        (2, "skillopt.errors"),
        (4, "skillopt.store.rollouts"),
        (6, "skillopt.training.session"),
        (7, "skillopt.rollouts.engine"),
        (7, "skillopt.rollouts"),
        (8, "skillopt.optimize.gate"),
    ], found
    # and in the package: its lazy re-exports are imported under TYPE_CHECKING only
    edges = {(i.source, i.target) for i in imports()}
    assert (PACKAGE, FACADE) in edges and (PACKAGE, "skillopt.training.session") in edges
    assert len(modules()) > 90 and len(edges) > 200, (len(modules()), len(edges))


def test_the_cycle_finder_finds_each_cycle_and_a_loop_through_it():
    def edge(source: str, target: str) -> Import:
        return Import(source, target, f"{source}.py", 1, f"import {target}")

    pairs = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d"), ("f", "a")]
    edges: Graph = {name: {} for name in "abcdef"}
    for source, target in pairs:
        edges[source][target] = edge(source, target)
    assert cycles(edges) == [["a", "b", "c"], ["d", "e"]]
    loop = loop_through(edges, "b", {"a", "b", "c"})
    assert [(i.source, i.target) for i in loop] == [("b", "c"), ("c", "a"), ("a", "b")]


def test_the_command_line_imports_only_the_facade_and_the_public_names():
    wrong = [
        i
        for i in imports()
        if under(i.source, (CLI,)) and not (i.target == PACKAGE or under(i.target, CLI_MAY_IMPORT))
    ]
    assert not wrong, report(
        "skillopt.cli may import only skillopt.api, skillopt (public names), "
        "skillopt.errors and skillopt._util; it imports:",
        wrong,
    )


def test_the_contracts_import_no_engine():
    found = {c: chain(c, ENGINES) for c in CONTRACTS}
    assert all(c in modules() for c in CONTRACTS), [c for c in CONTRACTS if c not in modules()]
    wrong = {c: steps for c, steps in found.items() if steps}
    assert not wrong, "\n".join(
        report(f"{c} reaches the engine {steps[-1].target}:", steps) for c, steps in wrong.items()
    )


def test_no_module_imports_itself_through_others():
    found = cycles(graph())
    assert not found, "\n".join(
        report(
            f"{len(members)} modules import each other ({', '.join(members)}); for one:",
            loop_through(graph(), members[0], set(members)),
        )
        for members in found
    )


def test_the_leaf_helpers_import_nothing_of_skillopt_but_errors():
    wrong = [
        i for i in imports() if under(i.source, (UTIL,)) and not under(i.target, UTIL_MAY_IMPORT)
    ]
    assert not wrong, report("skillopt._util may import only skillopt.errors; it imports:", wrong)


def test_nothing_below_the_facade_imports_the_facade_or_the_command_line():
    wrong = [
        i
        for i in imports()
        if i.source not in TOP
        and not under(i.source, (FACADE, CLI))
        # the package itself re-exports the facade: below it, `from skillopt import X`
        # reaches the facade as surely as `import skillopt.api`
        and (i.target == PACKAGE or under(i.target, (FACADE, CLI)))
    ]
    assert not wrong, report(
        "below skillopt.api, no module imports skillopt.api, skillopt.cli or the package's "
        "re-exports (import from the module that defines the name); found:",
        wrong,
    )
