"""Suite file readers: YAML (line numbers, duplicate keys, bounded aliases and
nesting) and JSONL (one line at a time), both yielding raw items for the loader.

Invariants: reading is linear in the file's size and never hangs. YAML aliases may
expand to at most `ALIAS_RATIO` times the nodes written (and never less than
`ALIAS_FLOOR`), values nest at most `MAX_NESTING` levels, and both are checked
while parsing, before anything is built; YAML items are built one at a time, so
memory holds the tasks, not the parse. Every problem is an `InputError` naming the
file and line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from skillopt.errors import InputError

# Collection levels a value may nest (the suite and its items list count too). Deeper
# data would overflow the recursion of whatever walks it later (JSON, hashing).
MAX_NESTING = 100
# YAML aliases may expand the document to ALIAS_RATIO times the nodes actually
# written, and to ALIAS_FLOOR nodes whatever the file: a `<<: *defaults` per item
# stays far below, a "billion laughs" file (each anchor aliasing the last nine
# times) goes past it within a few lines.
ALIAS_FLOOR = 1_000_000
ALIAS_RATIO = 10


_TOO_DEEP = (
    f"nested more than {MAX_NESTING} levels deep; flatten the value or pass it as a JSON string"
)


def _nested_too_deep(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether lists/mappings nest more than `limit` levels (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


# ---------------------------------------------------------------------- YAML
class _LineDict(dict):
    """A YAML mapping that knows its line (read it with `getattr(d, "line", None)`)."""

    __slots__ = ("line",)  # no per-mapping __dict__: a big suite has one per item


# libyaml's parser when PyYAML has it (several times faster on large suites)
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LineLoader(_BaseLoader):
    """SafeLoader whose mappings remember their line and reject duplicate keys."""


def _check_own_keys(node: yaml.MappingNode) -> None:
    """Reject a key written twice in one mapping. Own keys only, before `<<` merges
    are flattened in: an own key may override a merged one."""
    seen: dict = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue
        ident = (key_node.tag, key_node.value)
        if ident in seen:
            item_id = next(
                (
                    v.value
                    for k, v in node.value
                    if isinstance(k, yaml.ScalarNode)
                    and k.value == "id"
                    and isinstance(v, yaml.ScalarNode)
                ),
                None,
            )
            where = f" in item {item_id!r}" if item_id is not None else ""
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"duplicate key {key_node.value!r}{where} (first at line {seen[ident]})",
                key_node.start_mark,
            )
        seen[ident] = key_node.start_mark.line + 1


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode):
    data = _LineDict()
    data.line = node.start_mark.line + 1
    yield data
    _check_own_keys(node)
    data.update(loader.construct_mapping(node, deep=True))


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

_STR, _SEQ, _MAP = (
    yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG,
    yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG,
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
)


class ItemList(list):
    """The top-level `items:` list as the reader built it: nothing else in the document
    refers to it (it has no anchor), so it may be emptied while tasks are made."""


def take_items(items: ItemList):
    """(line, item) per item, letting go of each item once taken: the raw items and
    the tasks made from them are never all in memory together."""
    for index in range(len(items)):
        item, items[index] = items[index], None
        yield getattr(item, "line", None), item


class _Refused(Exception):
    """Valid YAML that is too big or too deep to load (not 'invalid YAML')."""

    def __init__(self, message: str, mark):
        super().__init__(message)
        self.line = mark.line + 1 if mark is not None else None


class _Frame:
    """A sequence or mapping still open while composing."""

    __slots__ = ("node", "is_map", "anchor", "start", "height", "key", "items")

    def __init__(self, node, is_map: bool, anchor: str | None, start: int):
        self.node, self.is_map, self.anchor, self.start = node, is_map, anchor, start
        self.height = 0  # collection levels below this one
        self.key = None  # a mapping's key node awaiting its value
        self.items: ItemList | None = None  # the top-level `items`, built item by item


class _YamlReader:
    """Composes the node graph from the parser's events, iteratively, while counting
    what aliases expand to and how deep values nest; then builds plain values from the
    nodes as SafeLoader does. (PyYAML's composers recurse, libyaml's in C, which
    crashed some builds on deep input; its constructor overflowed at ~900 levels.)

    The top-level `items:` list is built item by item as each item's nodes close, and
    those nodes are then dropped, so a big suite never holds its whole node graph.
    Nodes whose construction is plain (string scalars, untagged lists, untagged
    mappings with string keys) are built here; anything else (numbers, dates, tags,
    `<<` merges) goes to the loader's constructor, so values are exactly SafeLoader's.
    Both share one memo of what anchored nodes built to, so an alias is built once, as
    SafeLoader does.
    """

    def __init__(self, loader: _LineLoader):
        self.loader = loader
        self.memo = loader.constructed_objects = _Memo()
        self.anchors: dict[str, Any] = {}
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

    def read(self):
        get = self.loader.get_event
        get()  # stream start
        if isinstance(get(), StreamEndEvent):  # else a document start
            return None
        root = self._compose()
        get()  # document end
        event = get()
        if not isinstance(event, StreamEndEvent):
            raise yaml.composer.ComposerError(
                None,
                None,
                "expected a single document in the stream, but found another document",
                event.start_mark,
            )
        return self._construct(root)

    def _compose(self):
        get = self.loader.get_event
        resolve = self.loader.resolve
        plain_resolved = self.plain_resolved
        stack: list[_Frame] = []
        written = self.written  # a local: counted once per node of a big file
        while True:
            event = get()
            kind = type(event)
            height = 0
            if kind is ScalarEvent:
                tag = event.tag
                value = event.value
                if tag is None or tag == "!":
                    if not event.implicit[0] or (
                        plain_resolved is not None and value[:1] not in plain_resolved
                    ):
                        tag = _STR
                    else:
                        tag = resolve(ScalarNode, value, event.implicit)
                node = ScalarNode(tag, value, event.start_mark, event.end_mark, style=event.style)
                written += 1
                if event.anchor is not None:
                    self._anchor(event, node)
                    self.expansion[event.anchor] = (1, 0)
                    self.memo.share(node)
            elif kind is AliasEvent:
                node, height = self._alias(event, len(stack), written)
            elif kind is SequenceStartEvent or kind is MappingStartEvent:
                if len(stack) >= MAX_NESTING:
                    raise _Refused(_TOO_DEEP, event.start_mark)
                is_map = kind is MappingStartEvent
                tag = event.tag
                if tag is None or tag == "!":
                    tag = resolve(MappingNode if is_map else SequenceNode, None, event.implicit)
                node = (MappingNode if is_map else SequenceNode)(
                    tag, [], event.start_mark, None, flow_style=event.flow_style
                )
                if event.anchor is not None:
                    self._anchor(event, node)
                    self.open_anchors.add(event.anchor)
                frame = _Frame(node, is_map, event.anchor, written + self.aliased)
                if (
                    not is_map
                    and len(stack) == 1
                    and event.anchor is None
                    and tag == _SEQ
                    and stack[0].is_map
                    and _is_items_key(stack[0].key)
                ):
                    frame.items = ItemList()
                stack.append(frame)
                written += 1
                continue
            else:  # SequenceEndEvent or MappingEndEvent: the innermost collection closes
                frame = stack.pop()
                node = frame.node
                node.end_mark = event.end_mark
                height = frame.height + 1
                if frame.anchor is not None:
                    self.expansion[frame.anchor] = (written + self.aliased - frame.start, height)
                    self.open_anchors.discard(frame.anchor)
                    self.memo.share(node)
                if frame.items is not None:
                    # the built list stands in for the dropped item nodes
                    self.memo.keep(node, frame.items)
            if not stack:
                self.written = written
                return node
            parent = stack[-1]
            if height > parent.height:
                parent.height = height
            if parent.is_map:
                if parent.key is None:
                    parent.key = node
                else:
                    parent.node.value.append((parent.key, node))
                    parent.key = None
            elif parent.items is not None:
                parent.items.append(self._construct(node))  # and its nodes are dropped
            else:
                parent.node.value.append(node)

    def _anchor(self, event, node) -> None:
        first = self.anchors.get(event.anchor)
        if first is not None:
            raise yaml.composer.ComposerError(
                None,
                None,
                f"found duplicate anchor {event.anchor!r} (first at line "
                f"{first.start_mark.line + 1})",
                event.start_mark,
            )
        self.anchors[event.anchor] = node

    def _alias(self, event, depth: int, written: int):
        name = event.anchor
        if name not in self.anchors:
            raise yaml.composer.ComposerError(
                None, None, f"found undefined alias {name!r}", event.start_mark
            )
        if name in self.open_anchors:
            raise _Refused(
                f"YAML alias *{name} refers to a node that contains it; a suite must be plain data",
                event.start_mark,
            )
        size, height = self.expansion[name]
        self.aliased += size
        limit = max(ALIAS_FLOOR, ALIAS_RATIO * written)
        if written + self.aliased > limit:
            raise _Refused(
                f"YAML aliases expand to more than {limit:,} nodes; write the "
                "items out or use a JSONL items file",
                event.start_mark,
            )
        if depth + height > MAX_NESTING:
            raise _Refused(_TOO_DEEP, event.start_mark)
        return self.anchors[name], height

    def _construct(self, node):
        kind = type(node)
        tag = node.tag
        if kind is ScalarNode:
            return node.value if tag == _STR else self._delegate(node)
        memo = self.memo
        if node in memo:
            return memo[node]
        if kind is SequenceNode:
            if tag != _SEQ:
                return self._delegate(node)
            data = [self._construct(child) for child in node.value]
        else:
            pairs = node.value
            if tag != _MAP or any(
                type(key) is not ScalarNode or key.tag != _STR for key, _ in pairs
            ):
                return self._delegate(node)  # `<<`, `=`, numbers, nested keys, tags
            if len({key.value for key, _ in pairs}) != len(pairs):
                _check_own_keys(node)  # raises, saying which key and where
            data = _LineDict()
            data.line = node.start_mark.line + 1
            for key, value in pairs:
                data[key.value] = (
                    value.value
                    if type(value) is ScalarNode and value.tag == _STR
                    else self._construct(value)
                )
        memo[node] = data
        return data

    def _delegate(self, node):
        """SafeLoader's construction of `node`."""
        return self.loader.construct_object(node, deep=True)


class _Memo(dict):
    """Node -> built value, holding only nodes that can be met more than once (anchored
    ones and everything inside them, which `<<` merges copy out), so the nodes of each
    item can be freed once the item is built."""

    def __init__(self):
        super().__init__()
        self.shared: set = set()

    def __setitem__(self, node, value):
        if node in self.shared:
            super().__setitem__(node, value)

    def keep(self, node, value) -> None:
        super().__setitem__(node, value)

    def share(self, node) -> None:
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


def _is_items_key(node) -> bool:
    return type(node) is ScalarNode and node.tag == _STR and node.value == "items"


def read_yaml(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 (byte {exc.start})", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from None
    loader = _LineLoader(text)
    try:
        data = _YamlReader(loader).read()
    except _Refused as exc:
        raise InputError(str(exc), path=path, line=exc.line) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(
            f"invalid YAML: {problem}", path=path, line=mark.line + 1 if mark else None
        ) from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise InputError("a suite must be a YAML mapping with an `items` list", path=path)
    return data


def key_line(path: Path, keys: Sequence[str | int]) -> int | None:
    """The line where the key at `keys` (mapping keys and list indexes from the top:
    `("split", "valid")`, `("items", 3, "imput")`) is written in the YAML file at
    `path`; None when it is not written there (it came from a `<<` merge or an
    alias) or the file cannot be read. Only called to place an error: it streams the
    parser's events once and keeps no document in memory."""
    target = tuple(keys)
    if not target:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    loader = _BaseLoader(text)
    try:
        return _find_key(loader, target)
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()


class _Open:
    """A mapping or sequence still open while looking for a key: where it is (None
    inside a complex key, where no path leads) and where its next child goes."""

    __slots__ = ("is_map", "path", "want_key", "key", "index")

    def __init__(self, is_map: bool, path: tuple | None):
        self.is_map, self.path = is_map, path
        self.want_key = True  # a mapping's next node is a key
        self.key: Any = None
        self.index = -1


_NO_KEY = object()  # the key of a pair whose key is not a plain scalar


def _find_key(loader, target: tuple) -> int | None:
    stack: list[_Open] = []
    depth = len(target)
    while True:
        event = loader.get_event()
        kind = type(event)
        if kind is StreamEndEvent:
            return None
        starts = kind is MappingStartEvent or kind is SequenceStartEvent
        if not (starts or kind is ScalarEvent or kind is AliasEvent):
            if kind is MappingEndEvent or kind is SequenceEndEvent:
                stack.pop()
            continue
        where: tuple | None = ()
        if stack:
            parent = stack[-1]
            if parent.is_map and parent.want_key:  # this node is a key
                parent.want_key = False
                if kind is ScalarEvent:
                    parent.key = event.value
                    if parent.path is not None and parent.path + (event.value,) == target:
                        return event.start_mark.line + 1
                else:
                    parent.key = _NO_KEY
                where = None
            elif parent.is_map:
                parent.want_key = True
                known = parent.path is not None and parent.key is not _NO_KEY
                where = (*parent.path, parent.key) if known and parent.path is not None else None
            else:
                parent.index += 1
                where = parent.path + (parent.index,) if parent.path is not None else None
            if where is not None and (len(where) >= depth or where != target[: len(where)]):
                where = None  # not on the way to the key: nothing below can match
        if starts:
            stack.append(_Open(kind is MappingStartEvent, where))


# ---------------------------------------------------------------------- JSONL
def read_jsonl(path: Path):
    """(line number, value) per non-blank line, read lazily: the file is never held
    whole. Lines end at '\\n' only, as JSON Lines says; a '\\u2028' inside a string
    is text, not a line break."""
    if not path.is_file():
        raise InputError("items file not found", path=path, field="items")
    return _jsonl_rows(path)


def _jsonl_rows(path: Path):
    try:
        stream = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path, field="items") from None
    loads = json.loads
    with stream:
        offset = 0
        for number, raw in enumerate(stream, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"not valid UTF-8 (byte {offset + exc.start})", path=path, line=number
                ) from None
            offset += len(raw)
            if number == 1 and line.startswith("\ufeff"):
                line = line[1:]  # a byte-order mark, as some editors write
            if not line.strip():
                continue
            try:
                value = loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=number
                ) from None
            except RecursionError:
                raise InputError(_TOO_DEEP, path=path, line=number) from None
            # every level opens with a bracket, so few brackets means shallow enough
            if line.count("[") + line.count("{") > MAX_NESTING and _nested_too_deep(value):
                raise InputError(_TOO_DEEP, path=path, line=number)
            yield number, value
