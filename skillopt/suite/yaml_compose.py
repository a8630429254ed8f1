"""The YAML reader's core (`YamlReader`): composes the node graph from the parser's
events, iteratively, while counting what aliases expand to and how deep values nest,
then builds plain values from the nodes as SafeLoader does.

Invariants: no recursion (PyYAML's composers recurse, libyaml's in C, which crashed
some builds on deep input; its constructor overflowed at ~900 levels); aliases and
nesting are bounded by `limits` while parsing, before anything is built, and going
past a bound is `Refused`; the top-level `items:` list is built item by item as
each item's nodes close, and those nodes are then dropped, so a big suite never
holds its whole node graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from yaml.composer import ComposerError
from yaml.error import Mark
from yaml.events import (
    AliasEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import CollectionNode, MappingNode, Node, ScalarNode, SequenceNode

from skillopt.suite import limits
from skillopt.suite.yaml_values import MAP, SEQ, STR, ItemList, LineDict, LineLoader, check_own_keys


class Refused(Exception):
    """Valid YAML that is too big or too deep to load (not 'invalid YAML')."""

    def __init__(self, message: str, mark: Mark | None):
        super().__init__(message)
        self.line = mark.line + 1 if mark is not None else None


class _Frame:
    """A sequence or mapping still open while composing: what its node will be made
    of, how many collection levels lie below it, and (a mapping) the key awaiting its
    value. Its node is made when it closes."""

    __slots__ = ("event", "is_map", "tag", "start", "height", "key", "children", "items")

    def __init__(self, event: Any, tag: str, start: int, items: ItemList | None) -> None:
        self.event = event  # its MappingStartEvent or SequenceStartEvent
        self.is_map = type(event) is MappingStartEvent
        self.tag = tag
        self.start = start  # nodes written and aliased before it opened
        self.height = 0  # collection levels below this one
        self.key: Node | None = None  # a mapping's key node awaiting its value
        self.children: list[Any] = []  # nodes, or a mapping's (key, value) pairs
        self.items = items  # the top-level `items`, built item by item

    def add(self, node: Node, height: int, build: Callable[[Node], Any]) -> None:
        """Take a closed child `height` levels high: as a mapping's key or value, as an
        item built at once (the top-level `items`; its nodes are then dropped), or as
        a sequence's node."""
        if height > self.height:
            self.height = height
        if self.is_map:
            if self.key is None:
                self.key = node
            else:
                self.children.append((self.key, node))
                self.key = None
        elif self.items is not None:
            self.items.append(build(node))
        else:
            self.children.append(node)

    def close(self, end_mark: Mark | None) -> CollectionNode:
        """The node of this collection, now that it has all its children."""
        kind = MappingNode if self.is_map else SequenceNode
        event = self.event
        return kind(self.tag, self.children, event.start_mark, end_mark, event.flow_style)


class YamlReader:
    """Reads one document with `loader` (see the module's invariants).

    Nodes whose construction is plain (string scalars, untagged lists, untagged
    mappings with string keys) are built here; anything else (numbers, dates, tags,
    `<<` merges) goes to the loader's constructor, so values are exactly SafeLoader's.
    Both share the loader's memo of what anchored nodes built to, so an alias is built
    once, as SafeLoader does.
    """

    def __init__(self, loader: LineLoader):
        self.loader = loader
        self.memo = loader.constructed_objects
        self.anchors: dict[str, Node] = {}  # closed anchored nodes by name
        self.anchor_marks: dict[str, Mark] = {}  # where each anchor was written
        self.expansion: dict[str, tuple[int, int]] = {}  # anchor -> (nodes expanded, levels)
        self.open_anchors: set[str] = set()
        self.written = 0  # nodes actually written in the file
        self.aliased = 0  # nodes that aliases add to those when expanded
        resolvers = loader.yaml_implicit_resolvers
        # PyYAML resolves a plain scalar by regexes picked by its first character;
        # none registered for that character means a string (SafeLoader has no
        # path resolvers, which would also take part)
        self.plain_resolved = (
            None if loader.yaml_path_resolvers or None in resolvers else frozenset(resolvers)
        )

    def read(self) -> Any:
        get: Callable[[], Any] = self.loader.get_event  # see `_compose`
        get()  # stream start
        if isinstance(get(), StreamEndEvent):  # else a document start
            return None
        root = self._compose()
        get()  # document end
        event = get()
        if not isinstance(event, StreamEndEvent):
            raise ComposerError(
                None,
                None,
                "expected a single document in the stream, but found another document",
                event.start_mark,
            )
        return self._construct(root)

    def _compose(self) -> Node:
        # events are typed Any: the stubs type libyaml's marks apart from PyYAML's,
        # though nodes take either
        get: Callable[[], Any] = self.loader.get_event
        resolve: Callable[[type[Node], str | None, Any], str] = self.loader.resolve
        plain_resolved = self.plain_resolved
        build = self._construct
        stack: list[_Frame] = []
        written = self.written  # a local: counted once per node of a big file
        while True:
            event = get()
            kind = type(event)
            height = 0
            node: Node
            if kind is ScalarEvent:
                tag = event.tag
                value = event.value
                if tag is None or tag == "!":
                    if not event.implicit[0] or (
                        plain_resolved is not None and value[:1] not in plain_resolved
                    ):
                        tag = STR
                    else:
                        tag = resolve(ScalarNode, value, event.implicit)
                node = ScalarNode(tag, value, event.start_mark, event.end_mark, style=event.style)
                written += 1
                if event.anchor is not None:
                    self._anchor(event)
                    self.anchors[event.anchor] = node
                    self.expansion[event.anchor] = (1, 0)
                    self.memo.share(node)
            elif kind is AliasEvent:
                node, height = self._alias(event, len(stack), written)
            elif kind is SequenceStartEvent or kind is MappingStartEvent:
                if len(stack) >= limits.MAX_NESTING:
                    raise Refused(limits.TOO_DEEP, event.start_mark)
                is_map = kind is MappingStartEvent
                tag = event.tag
                if tag is None or tag == "!":
                    tag = resolve(MappingNode if is_map else SequenceNode, None, event.implicit)
                if event.anchor is not None:
                    self._anchor(event)
                    self.open_anchors.add(event.anchor)
                top_items = (
                    not is_map
                    and len(stack) == 1
                    and event.anchor is None
                    and tag == SEQ
                    and stack[0].is_map
                    and _is_items_key(stack[0].key)
                )
                start = written + self.aliased
                stack.append(_Frame(event, tag, start, ItemList() if top_items else None))
                written += 1
                continue
            else:  # SequenceEndEvent or MappingEndEvent: the innermost collection closes
                frame = stack.pop()
                node = frame.close(event.end_mark)
                height = frame.height + 1
                anchor = frame.event.anchor
                if anchor is not None:
                    self.anchors[anchor] = node
                    self.expansion[anchor] = (written + self.aliased - frame.start, height)
                    self.open_anchors.discard(anchor)
                    self.memo.share(node)
                if frame.items is not None:
                    # the built list stands in for the dropped item nodes
                    self.memo.keep(node, frame.items)
            if not stack:
                self.written = written
                return node
            stack[-1].add(node, height, build)

    def _anchor(self, event: Any) -> None:
        first = self.anchor_marks.get(event.anchor)
        if first is not None:
            raise ComposerError(
                None,
                None,
                f"found duplicate anchor {event.anchor!r} (first at line {first.line + 1})",
                event.start_mark,
            )
        self.anchor_marks[event.anchor] = event.start_mark

    def _alias(self, event: Any, depth: int, written: int) -> tuple[Node, int]:
        name = event.anchor
        if name not in self.anchor_marks:
            raise ComposerError(None, None, f"found undefined alias {name!r}", event.start_mark)
        if name in self.open_anchors:
            raise Refused(
                f"YAML alias *{name} refers to a node that contains it; a suite must be plain data",
                event.start_mark,
            )
        size, height = self.expansion[name]
        self.aliased += size
        limit = max(limits.ALIAS_FLOOR, limits.ALIAS_RATIO * written)
        if written + self.aliased > limit:
            raise Refused(
                f"YAML aliases expand to more than {limit:,} nodes; write the "
                "items out or use a JSONL items file",
                event.start_mark,
            )
        if depth + height > limits.MAX_NESTING:
            raise Refused(limits.TOO_DEEP, event.start_mark)
        return self.anchors[name], height

    def _construct(self, node: Node) -> Any:
        kind = type(node)
        tag = node.tag
        if kind is ScalarNode:
            return node.value if tag == STR else self._delegate(node)
        memo = self.memo
        if node in memo:
            return memo[node]
        data: Any
        if kind is SequenceNode:
            if tag != SEQ:
                return self._delegate(node)
            data = [self._construct(child) for child in node.value]
        else:
            pairs = node.value
            if tag != MAP or any(type(key) is not ScalarNode or key.tag != STR for key, _ in pairs):
                return self._delegate(node)  # `<<`, `=`, numbers, nested keys, tags
            if len({key.value for key, _ in pairs}) != len(pairs):
                assert isinstance(node, MappingNode)
                check_own_keys(node)  # raises, saying which key and where
            data = LineDict(node.start_mark.line + 1)
            for key, value in pairs:
                data[key.value] = (
                    value.value
                    if type(value) is ScalarNode and value.tag == STR
                    else self._construct(value)
                )
        memo[node] = data
        return data

    def _delegate(self, node: Node) -> Any:
        """SafeLoader's construction of `node`."""
        return self.loader.construct_object(node, deep=True)


def _is_items_key(node: Node | None) -> bool:
    return type(node) is ScalarNode and node.tag == STR and node.value == "items"
