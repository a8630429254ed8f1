"""The `json` scorer and the reading of JSON from a model's reply
(`parse_json_answer`), which the judge scorer and the optimizer use too.

Invariant: a reply is never decoded deeper than `MAX_JSON_DEPTH` levels, so no reply
can exhaust the stack; a reply without JSON is a `ValueError`, never anything else.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from skillopt.suite.scorers.base import Score, ScoreContext, Scorer, ScorerParams, show
from skillopt.suite.task import Task

JsonKind = Literal["any", "object", "array", "string", "number", "boolean", "null"]


class JsonParams(ScorerParams):
    # the answer must hold JSON of this kind ("any": any JSON value); with it, an
    # item's `expected` is optional (promptfoo's `is-json` has none)
    kind: JsonKind | None = None


MAX_JSON_DEPTH = 100  # nesting a reply may use; deeper is refused, never recursed into
MAX_JSON_STARTS = 200  # bracket positions tried when the JSON is embedded in prose
NO_JSON = "no JSON value found"


def json_depth(text: str) -> int:
    """The deepest bracket nesting in `text`, outside JSON strings (linear, no
    recursion): checked before decoding, because Python's decoder recurses once per
    level and a reply of 100,000 `[` would exhaust the stack."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest


def parse_json_answer(text: str) -> Any:
    """Parse JSON from a model answer: bare, fenced in ``` blocks, or embedded in prose.
    Raises `ValueError` (never anything else) when there is none, or when it is nested
    deeper than `MAX_JSON_DEPTH`."""
    text = text.strip()
    depth = json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"the JSON is nested {depth} levels deep (at most {MAX_JSON_DEPTH})")
    fenced = re.search(r"```(?:json)?\s*\n(.*?)```", text, re.DOTALL)
    candidates = [text] + ([fenced.group(1)] if fenced else [])
    try:
        for cand in candidates:
            try:
                return json.loads(cand)
            except (json.JSONDecodeError, ValueError):
                pass
        decoder = json.JSONDecoder()
        starts = (i for i, ch in enumerate(text) if ch in "{[")
        for _, i in zip(range(MAX_JSON_STARTS), starts):
            try:
                return decoder.raw_decode(text, i)[0]
            except json.JSONDecodeError:
                continue
    except RecursionError:  # a small stack (a thread's) can still be too small
        raise ValueError("the JSON is nested too deeply to read") from None
    raise ValueError(NO_JSON)


def _subset(expected: Any, got: Any, path: str, problems: list[str]) -> tuple[int, int]:
    """Count (matched, total) leaves of `expected` found in `got`."""
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            problems.append(f"{path}: expected an object, got {show(got, 60)}")
            return 0, _leaves(expected)
        m = t = 0
        for k, v in expected.items():
            if k not in got:
                problems.append(f"{path}.{k}: missing")
                t += _leaves(v)
                continue
            dm, dt = _subset(v, got[k], f"{path}.{k}", problems)
            m, t = m + dm, t + dt
        return m, t
    if isinstance(expected, list):
        if not isinstance(got, list) or len(got) != len(expected):
            problems.append(f"{path}: expected a list of {len(expected)}, got {show(got, 60)}")
            return 0, max(1, _leaves(expected))
        m = t = 0
        for i, (e, g) in enumerate(zip(expected, got)):
            dm, dt = _subset(e, g, f"{path}[{i}]", problems)
            m, t = m + dm, t + dt
        return m, t
    if (
        expected == got
        and type(expected) is type(got)
        or (
            isinstance(expected, (int, float))
            and isinstance(got, (int, float))
            and not isinstance(got, bool)
            and not isinstance(expected, bool)
            and expected == got
        )
    ):
        return 1, 1
    problems.append(f"{path}: expected {show(expected, 60)}, got {show(got, 60)}")
    return 0, 1


def _leaves(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_leaves(v) for v in value.values()) or 1
    if isinstance(value, list):
        return sum(_leaves(v) for v in value) or 1
    return 1


_KINDS: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _is_kind(value: Any, kind: str) -> bool:
    if kind == "any":
        return True
    if kind == "number" and isinstance(value, bool):
        return False
    return isinstance(value, _KINDS[kind])


class Json(Scorer[JsonParams]):
    """Subset match: every field of `expected` must appear in the answer's JSON with
    the same value (extra fields are fine). The value is the fraction of matching
    leaves; pass needs `threshold` (default all). With `kind`, the answer's JSON must
    be of that kind, and `expected` (optional then) is matched as before."""

    name = "json"
    Params = JsonParams

    def __init__(self, params: JsonParams, base_dir: Path):
        super().__init__(params, base_dir)
        self.needs_expected = params.kind is None

    @classmethod
    def spec_of(cls, params: ScorerParams, base_dir: Path) -> dict[str, Any]:
        spec = super().spec_of(params, base_dir)
        if spec.get("kind") is None:
            # suites written before `kind` keep their spec, and so their stored rollouts
            spec.pop("kind", None)
        return spec

    def check_item(self, expected: Any) -> str | None:
        if expected is None:
            return None if self.params.kind else "required by scorer 'json'"
        if isinstance(expected, str):
            try:
                json.loads(expected)
            except json.JSONDecodeError as exc:
                return f"scorer 'json' needs a JSON value: {exc.msg}"
        return None

    def score(self, task: Task, answer: str, ctx: ScoreContext) -> Score:
        expected = task.expected
        if isinstance(expected, str):
            expected = json.loads(expected)
        try:
            got = parse_json_answer(answer)
        except ValueError:
            return Score(0.0, False, f"answer is not JSON: {show(answer.strip())}")
        kind = self.params.kind
        if kind and not _is_kind(got, kind):
            return Score(0.0, False, f"expected a JSON {kind}, got {show(got, 60)}")
        if expected is None:
            return Score(1.0, True, f"answer is JSON ({kind})")
        problems: list[str] = []
        matched, total = _subset(expected, got, "$", problems)
        value = matched / total if total else 1.0
        return self._graded(
            value,
            "; ".join(problems[:8]) + (" …" if len(problems) > 8 else ""),
            "JSON matches the expected fields",
        )
