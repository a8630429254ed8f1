"""Suite files that used to hang, crash or eat memory in the loader: YAML aliases
that expand exponentially ("billion laughs"), values nested thousands of levels
deep, and big suites with a duplicate id at their very end. Each must end in one
located `InputError`, quickly; legitimate anchors and merges must still load."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from skillopt.errors import InputError
from skillopt.suite import limits, load_suite, readers
from skillopt.suite.yaml_values import PyLineLoader


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def load_error(path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        load_suite(path)
    return info.value


def laughs(levels: int = 9, merge: bool = False) -> str:
    """Nested anchors, each aliasing the one before nine times: 9**levels nodes."""
    if merge:
        lines = ["  l0: &l0 {a: lol, b: lol}"]
        lines += [
            f"  l{i}: &l{i} {{<<: [{', '.join([f'*l{i - 1}'] * 9)}]}}" for i in range(1, levels)
        ]
    else:
        lines = ["  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
        lines += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.fixture
def pure_python_yaml(monkeypatch):
    """The loader as it runs where PyYAML has no libyaml."""
    monkeypatch.setattr(readers, "_LineLoader", PyLineLoader)


# ---------------------------------------------------------------------- billion laughs
@pytest.mark.parametrize("where", ["input", "defaults", "merge"])
@pytest.mark.parametrize("parser", ["libyaml", "python"])
def test_billion_laughs_is_refused_at_once(tmp_path, where, parser, request):
    if parser == "python":
        request.getfixturevalue("pure_python_yaml")
    if where == "input":
        text = "defaults:\n" + laughs() + "items:\n  - id: a\n    input: *l8\n    expected: x\n"
    elif where == "defaults":
        text = "defaults:\n" + laughs() + "items:\n  - {id: a, input: q, expected: x}\n"
    else:
        text = (
            "defaults:\n"
            + laughs(merge=True)
            + "items:\n  - id: a\n    input: *l8\n    expected: x\n"
        )
    path = write(tmp_path / "laughs.yaml", text)
    assert len(text) < 2000

    start = time.perf_counter()
    err = load_error(path)
    assert time.perf_counter() - start < 1.0
    msg = str(err)
    assert msg.startswith(f"{path}:")
    assert "YAML aliases expand to more than 1,000,000 nodes" in msg
    assert "write the items out or use a JSONL items file" in msg
    assert err.line is not None


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path):
    path = write(
        tmp_path / "s.yaml", "defaults: &d {self: *d}\nitems:\n  - {id: a, input: q, expected: x}\n"
    )
    err = load_error(path)
    assert "YAML alias *d refers to a node that contains it" in str(err)
    assert err.line == 1


# ---------------------------------------------------------------------- legitimate aliases
def test_anchors_and_merges_reused_by_every_item_still_load(tmp_path):
    lines = [
        "prompt: '{question} [{id}]'",
        "items:",
        "  - &base",
        "    id: first",
        "    input: &shared {question: what is it, context: [a, b, c]}",
        "    expected: x",
        "    metadata: {tier: 1}",
    ]
    for i in range(2000):
        lines += ["  - <<: *base", f"    id: item-{i}", "    input: *shared"]
    lines += ["  - <<: *base", "    id: own", "    expected: y"]
    suite = load_suite(write(tmp_path / "s.yaml", "\n".join(lines) + "\n"))
    assert len(suite.tasks) == 2002
    first, item, own = suite.tasks[0], suite.tasks[1], suite.tasks[-1]
    assert item.input == {"question": "what is it", "context": ["a", "b", "c"]}
    assert (item.id, item.expected, item.metadata) == ("item-0", "x", {"tier": 1})
    assert item.prompt == "what is it [item-0]"
    assert item.source == f"{tmp_path / 's.yaml'}:8"
    assert (own.id, own.expected, own.input) == ("own", "y", first.input)


def test_a_big_shared_input_within_the_bound_loads(tmp_path):
    # 500 items x a 1,001-node anchor: half a million nodes once expanded
    context = "[" + ", ".join(f"w{i}" for i in range(1000)) + "]"
    text = f"defaults:\n  context: &ctx {context}\nitems:\n" + "".join(
        f"  - {{id: i{i}, input: *ctx, expected: x}}\n" for i in range(500)
    )
    suite = load_suite(write(tmp_path / "s.yaml", text))
    assert len(suite.tasks) == 500
    assert suite.tasks[-1].input == [f"w{i}" for i in range(1000)]


def test_the_alias_bound_grows_with_the_file(tmp_path, monkeypatch):
    # with a tiny floor, what decides is the ratio to the nodes actually written
    monkeypatch.setattr(limits, "ALIAS_FLOOR", 100)
    merges = "".join(f"  - {{<<: *base, id: i{i}, input: q}}\n" for i in range(300))
    ok = "items:\n  - &base {id: b, input: q, expected: x, metadata: {k: v}}\n" + merges
    assert len(load_suite(write(tmp_path / "ok.yaml", ok)).tasks) == 301

    big = "[" + ", ".join(["w"] * 300) + "]"
    bad = f"defaults: {{big: &big {big}}}\nitems:\n" + "".join(
        f"  - {{id: i{i}, input: *big, expected: x}}\n" for i in range(30)
    )
    err = load_error(write(tmp_path / "bad.yaml", bad))
    assert "YAML aliases expand to more than" in str(err)


# ---------------------------------------------------------------------- deep nesting
DEEP = 10_000


@pytest.mark.parametrize("depth", [900, DEEP])
@pytest.mark.parametrize("parser", ["libyaml", "python"])
def test_deeply_nested_yaml_is_an_input_error(tmp_path, parser, depth, request):
    # 900 levels passed the parser and overflowed the constructor's recursion; deeper
    # ones crashed some libyaml builds (its composer recurses in C)
    if parser == "python":
        request.getfixturevalue("pure_python_yaml")
    path = write(
        tmp_path / "s.yaml",
        "items:\n  - id: a\n    input: " + "[" * depth + "]" * depth + "\n    expected: x\n",
    )
    err = load_error(path)
    assert str(err).startswith(f"{path}:3: ")
    assert "nest" in str(err)  # ours, or libyaml's "exceeded maximum nesting depth"


def test_yaml_nested_past_the_limit_names_it(tmp_path):
    depth = limits.MAX_NESTING + 10
    path = write(
        tmp_path / "s.yaml",
        "items:\n  - id: a\n    input: " + "[" * depth + "]" * depth + "\n    expected: x\n",
    )
    err = load_error(path)
    assert f"nested more than {limits.MAX_NESTING} levels deep" in str(err)
    assert err.line == 3


def test_yaml_nested_deep_through_aliases(tmp_path):
    # each anchor is ten levels deeper than the one it aliases: 150 levels once expanded
    lines = ["defaults:", "  a0: &a0 " + "[" * 10 + "x" + "]" * 10]
    lines += [f"  a{i}: &a{i} " + "[" * 10 + f"*a{i - 1}" + "]" * 10 for i in range(1, 15)]
    lines += ["items:", "  - {id: a, input: q, expected: x}"]
    err = load_error(write(tmp_path / "s.yaml", "\n".join(lines) + "\n"))
    assert "levels deep" in str(err)


@pytest.mark.parametrize("depth", [DEEP, 500])
def test_deeply_nested_jsonl_is_an_input_error(tmp_path, depth):
    path = write(
        tmp_path / "s.jsonl",
        json.dumps({"id": "ok", "input": "q", "expected": "x"})
        + '\n{"id": "a", "input": '
        + "[" * depth
        + "]" * depth
        + ', "expected": "x"}\n',
    )
    err = load_error(path)
    assert f"{path}:2: " in str(err)
    assert f"nested more than {limits.MAX_NESTING} levels deep" in str(err)


def test_nesting_within_the_limit_loads(tmp_path):
    value = "[" * 50 + "]" * 50
    data = write(tmp_path / "rows.jsonl", f'{{"id": "a", "input": {value}, "expected": "x"}}\n')
    assert load_suite(data).tasks[0].input == json.loads(value)
    path = write(tmp_path / "s.yaml", f"items:\n  - {{id: a, input: {value}, expected: x}}\n")
    assert load_suite(path).tasks[0].input == json.loads(value)


# ---------------------------------------------------------------------- big suites
N = 50_000


def big_rows(n: int = N) -> list[dict]:
    rows = [
        {"id": f"item-{i:05d}", "input": f"question {i}", "expected": f"answer {i}"}
        for i in range(n)
    ]
    for row in rows[::1000]:
        row["metadata"] = {"source": "generated"}
    rows.append({"id": "item-00007", "input": "again", "expected": "x"})
    return rows


def test_duplicate_id_at_the_end_of_a_big_jsonl_suite(tmp_path):
    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in big_rows()), encoding="utf-8")
    start = time.perf_counter()
    err = load_error(path)
    elapsed = time.perf_counter() - start
    assert (err.item, err.field, err.line) == ("item-00007", "id", N + 1)
    assert str(err) == (
        f"{path}:{N + 1}: item 'item-00007': field 'id': duplicate id (first at line 8)"
    )
    assert elapsed < 10, f"{N} items took {elapsed:.1f}s"


def test_duplicate_id_at_the_end_of_a_big_yaml_suite(tmp_path):
    lines = ["name: big", "items:"]
    for r in big_rows():
        lines += [
            f"  - id: {r['id']}",
            f"    input: {r['input']}",
            f"    expected: {r['expected']}",
        ]
        if "metadata" in r:
            lines.append("    metadata: {source: generated}")
    path = write(tmp_path / "big.yaml", "\n".join(lines) + "\n")
    start = time.perf_counter()
    err = load_error(path)
    elapsed = time.perf_counter() - start
    last = len(lines) - 2  # the duplicate's `- id:` line
    assert (err.item, err.field, err.line) == ("item-00007", "id", last)
    assert str(err).startswith(
        f"{path}:{last}: item 'item-00007': field 'id': duplicate id (first at line "
    )
    assert elapsed < 10, f"{N} items took {elapsed:.1f}s"


def test_a_big_suite_loads_the_same_from_yaml_and_jsonl(tmp_path):
    rows = big_rows(5000)[:-1]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    inline = write(tmp_path / "inline.yaml", yaml.safe_dump({"items": rows}))
    a, b = load_suite(data), load_suite(inline)
    assert [(t.id, t.input, t.expected, t.prompt, t.split, t.metadata) for t in a.tasks] == [
        (t.id, t.input, t.expected, t.prompt, t.split, t.metadata) for t in b.tasks
    ]


# ---------------------------------------------------------------------- JSON Lines text
def test_jsonl_lines_end_at_newline_only(tmp_path):
    # U+2028 is a line break to str.splitlines(), but only text inside a JSON string
    path = write(tmp_path / "s.jsonl", '{"id": "a", "input": "one\u2028two", "expected": "x"}\n')
    assert load_suite(path).tasks[0].input == "one\u2028two"


def test_jsonl_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "input": "q", "expected": "x"}\r\n')
    assert load_suite(path).tasks[0].id == "a"


def test_jsonl_not_utf8_names_line_and_byte(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"id": "a", "input": "q", "expected": "x"}\n{"id": "b", "input": "\xff"}\n')
    err = load_error(path)
    assert str(err) == f"{path}:2: not valid UTF-8 (byte 65)"  # as counted in the whole file


def test_an_id_with_a_lone_surrogate_is_an_input_error(tmp_path):
    path = write(tmp_path / "s.jsonl", '{"id": "\\ud800", "input": "q", "expected": "x"}\n')
    err = load_error(path)
    assert (err.field, err.line) == ("id", 1)
    assert "unpaired surrogate" in str(err)
