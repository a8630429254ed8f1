"""What the YAML reader builds and the loaders it builds with: mappings that know
their line (`LineDict`), the top-level items list (`ItemList`), the memo of nodes an
alias can reach (`Memo`), and PyYAML's safe loader made to use them (`LINE_LOADER`,
libyaml's parser when PyYAML has it).

Invariants: values are exactly what `yaml.safe_load` builds, except that a mapping
is a `LineDict` carrying the line it starts on; a key written twice in one mapping
is refused (`check_own_keys`); a loader memoises only nodes that can be met more
than once, so each item's nodes can be freed once the item is built.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeAlias

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import BaseResolver

STR = BaseResolver.DEFAULT_SCALAR_TAG
SEQ = BaseResolver.DEFAULT_SEQUENCE_TAG
MAP = BaseResolver.DEFAULT_MAPPING_TAG
MERGE = "tag:yaml.org,2002:merge"


class LineDict(dict[Any, Any]):
    """A YAML mapping that knows the line it starts on (None: not read from YAML)."""

    __slots__ = ("line",)  # no per-mapping __dict__: a big suite has one per item

    def __init__(self, line: int | None = None) -> None:
        super().__init__()
        self.line = line


def line_of(value: object) -> int | None:
    """The line a value read from YAML starts on, when it is a mapping."""
    return value.line if isinstance(value, LineDict) else None


class ItemList(list[Any]):
    """The top-level `items:` list as the reader built it: nothing else in the document
    refers to it (it has no anchor), so it may be emptied while tasks are made."""


def take_items(items: ItemList) -> Iterator[tuple[int | None, Any]]:
    """(line, item) per item, letting go of each item once taken: the raw items and
    the tasks made from them are never all in memory together."""
    for index in range(len(items)):
        item, items[index] = items[index], None
        yield line_of(item), item


def check_own_keys(node: MappingNode) -> None:
    """Reject a key written twice in one mapping. Own keys only, before `<<` merges
    are flattened in: an own key may override a merged one."""
    seen: dict[tuple[str, Any], int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, ScalarNode) or key_node.tag == MERGE:
            continue
        ident = (key_node.tag, key_node.value)
        if ident in seen:
            item_id = next(
                (
                    v.value
                    for k, v in node.value
                    if isinstance(k, ScalarNode) and k.value == "id" and isinstance(v, ScalarNode)
                ),
                None,
            )
            where = f" in item {item_id!r}" if item_id is not None else ""
            raise ConstructorError(
                None,
                None,
                f"duplicate key {key_node.value!r}{where} (first at line {seen[ident]})",
                key_node.start_mark,
            )
        seen[ident] = key_node.start_mark.line + 1


def construct_mapping(loader: PyLineLoader | CLineLoader, node: MappingNode) -> Iterator[LineDict]:
    """PyYAML's two-step construction of a mapping (the empty mapping first, so an
    alias inside it can refer to it), as a `LineDict` whose keys are checked."""
    data = LineDict(node.start_mark.line + 1)
    yield data
    check_own_keys(node)
    data.update(loader.construct_mapping(node, deep=True))


class Memo(dict[Node, Any]):
    """Node -> built value, holding only nodes that can be met more than once (anchored
    ones and everything inside them, which `<<` merges copy out), so the nodes of each
    item can be freed once the item is built."""

    def __init__(self) -> None:
        super().__init__()
        self.shared: set[Node] = set()

    def __setitem__(self, node: Node, value: Any) -> None:
        if node in self.shared:
            super().__setitem__(node, value)

    def keep(self, node: Node, value: Any) -> None:
        super().__setitem__(node, value)

    def share(self, node: Node) -> None:
        """Mark `node` and all inside it (a subtree already marked is not walked again,
        so marking every anchor of a file is linear)."""
        stack = [node]
        while stack:
            node = stack.pop()
            if node in self.shared:
                continue
            self.shared.add(node)
            if type(node) is SequenceNode:
                stack.extend(node.value)
            elif type(node) is MappingNode:
                for pair in node.value:
                    stack.extend(pair)


class PyLineLoader(yaml.SafeLoader):
    """SafeLoader whose mappings remember their line and reject duplicate keys, and
    whose memo keeps only shared nodes (PyYAML's pure-Python parser)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.constructed_objects: Memo = Memo()


PyLineLoader.add_constructor(MAP, construct_mapping)

# libyaml's parser when PyYAML has it (several times faster on large suites)
if yaml.__with_libyaml__:

    class CLineLoader(yaml.CSafeLoader):
        """`PyLineLoader` on libyaml's parser."""

        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.constructed_objects: Memo = Memo()

    CLineLoader.add_constructor(MAP, construct_mapping)

LineLoader: TypeAlias = "PyLineLoader | CLineLoader"  # what the reader builds with
LINE_LOADER: type[LineLoader] = CLineLoader if yaml.__with_libyaml__ else PyLineLoader
# a plain loader, for reading events only
EVENT_LOADER: type[yaml.SafeLoader | yaml.CSafeLoader] = (
    yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
)
