"""promptfoo's asserts as skillopt scorers, and its Nunjucks prompts as skillopt
templates.

What promptfoo says (promptfoo.dev/docs/configuration/expected-outputs and
…/deterministic; src/csv.ts): an assert is `{type, value, threshold?, weight?,
provider?, metric?, transform?}`; `equals` is "output matches exactly",
`contains`/`icontains` a substring (case-insensitive), `contains-any`/`-all` (and
`icontains-…`) a list of substrings, `starts-with` a prefix, `regex` a pattern,
`is-json`/`contains-json` valid JSON "(optional json schema validation)",
`llm-rubric` a rubric graded by a model (`provider` names it); "a `not-` prefix
negates a type"; `weight` "defaults to 1.0"; a test's `threshold` makes it pass when
the weighted score reaches it instead of when every assert passes. Types run as code
(`javascript`, `python`, a `transform`) or that need a service (`similar`, `cost`,
`latency`, `webhook`, …) have no skillopt scorer: they are reported, never run.

Invariant: a mapped assert is a scorer spec with its own `expected` (a part of the
`all` scorer when a test has several), so an import and a hand-written suite score
alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from skillopt.errors import InputError

# what a negative check is written as: the answer (stripped, as the regex scorer
# reads it) must not hold the text anywhere; [\s\S] keeps the user's `.` as written
_ANYWHERE = r"[\s\S]*?"


@dataclass(frozen=True)
class Part:
    """One assert as a scorer spec: `spec` holds `type` and its parameters,
    `expected` the value it checks (None: the spec needs none)."""

    spec: dict[str, Any]
    expected: Any = None
    weight: float = 1.0
    judge: str | None = None  # a model the assert names (llm-rubric's `provider`)


def map_assert(assertion: dict[str, Any]) -> Part | str:
    """The scorer for one assert, or why there is none (one line)."""
    kind = assertion.get("type")
    if not isinstance(kind, str):
        return "an assert without a `type`"
    if assertion.get("transform") is not None:
        return f"assert {kind} has a `transform`, which is code skillopt does not run"
    value = assertion.get("value")
    negated = kind.startswith("not-")
    base = kind[4:] if negated else kind
    weight = assertion.get("weight", 1.0)
    if not isinstance(weight, (int, float)) or isinstance(weight, bool) or weight < 0:
        return f"assert {kind} has a weight that is not a number >= 0: {weight!r}"
    part = _negated(base, value) if negated else _plain(base, value, assertion)
    if isinstance(part, str):
        return part
    return Part(part.spec, part.expected, float(weight), part.judge)


def _plain(base: str, value: Any, assertion: dict[str, Any]) -> Part | str:
    fold = base.startswith("i") and base[1:].startswith("contains")
    if base == "equals":
        if isinstance(value, (dict, list)):
            return Part({"type": "json"}, value)
        return _needs(base, value) or Part({"type": "exact"}, str(value))
    if base in ("contains", "icontains"):
        return _needs(base, value) or Part(_with_case({"type": "contains"}, fold), str(value))
    if base in ("contains-all", "icontains-all"):
        values = _listed(value)
        if not values:
            return f"assert {base} has no values"
        return Part(_with_case({"type": "contains"}, fold), values)
    if base in ("contains-any", "icontains-any"):
        values = _listed(value)
        if not values:
            return f"assert {base} has no values"
        pattern = "|".join(_literal(v) for v in values)
        return Part(_with_case({"type": "regex", "pattern": pattern}, fold))
    if base == "starts-with":
        return _needs(base, value) or Part(
            {"type": "regex", "pattern": r"\A" + _literal(str(value))}
        )
    if base == "regex":
        problem = _needs(base, value) or _bad_pattern(str(value))
        return problem or Part({"type": "regex", "pattern": str(value)})
    if base in ("is-json", "contains-json"):
        return Part({"type": "json", "kind": _schema_kind(value)})
    if base in ("llm-rubric", "model-graded-closedqa"):
        if not isinstance(value, str) or not value.strip():
            return f"assert {base} has no rubric"
        spec: dict[str, Any] = {"type": "judge", "rubric": value.strip()}
        threshold = assertion.get("threshold")
        if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
            spec["threshold"] = float(threshold)
        return Part(spec, judge=_provider(assertion.get("provider")))
    if base == "factuality":
        rubric = "The answer is factually consistent with the expected answer."
        return _needs(base, value) or Part(
            {"type": "judge", "rubric": rubric},
            str(value),
            judge=_provider(assertion.get("provider")),
        )
    return f"assert {base} has no skillopt scorer"


def _negated(base: str, value: Any) -> Part | str:
    """`not-…`: a pattern that matches only when the text is absent."""
    kind = f"not-{base}"
    fold = base.startswith("i") and base[1:].startswith("contains")
    if base == "equals" and not isinstance(value, (dict, list)):
        problem = _needs(kind, value)
        pattern = r"\A(?!" + _literal(str(value)) + r"\Z)"
    elif base in ("contains", "icontains"):
        problem = _needs(kind, value)
        pattern = r"\A(?!" + _ANYWHERE + _literal(str(value)) + ")"
    elif base in ("contains-any", "icontains-any"):
        values = _listed(value)
        problem = None if values else f"assert {kind} has no values"
        pattern = r"\A(?!" + _ANYWHERE + "(?:" + "|".join(map(_literal, values)) + "))"
    elif base in ("contains-all", "icontains-all"):
        values = _listed(value)
        problem = None if values else f"assert {kind} has no values"
        every = "".join(f"(?={_ANYWHERE}{_literal(v)})" for v in values)
        pattern = r"\A(?!" + every + ")"
    elif base == "starts-with":
        problem = _needs(kind, value)
        pattern = r"\A(?!" + _literal(str(value)) + ")"
    elif base == "regex":
        problem = _needs(kind, value) or _bad_pattern(str(value))
        pattern = r"\A(?!" + _ANYWHERE + "(?:" + str(value) + "))"
    else:
        return f"assert {kind} has no skillopt scorer"
    return problem or Part(_with_case({"type": "regex", "pattern": pattern}, fold))


def _literal(text: str) -> str:
    """`text` as a pattern that matches it literally, spaces left readable."""
    return re.escape(text).replace("\\ ", " ")


def _needs(kind: str, value: Any) -> str | None:
    if value is None or (isinstance(value, str) and not value):
        return f"assert {kind} has no value"
    return None


def _with_case(spec: dict[str, Any], fold: bool) -> dict[str, Any]:
    return {**spec, "ignore_case": True} if fold else spec


def _listed(value: Any) -> list[str]:
    """A list of strings, or a string of comma-separated ones (promptfoo's CSV form)."""
    if isinstance(value, list):
        return [str(v) for v in value if str(v)]
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return []


def _bad_pattern(pattern: str) -> str | None:
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"assert regex {pattern!r} is not a Python regular expression: {exc}"
    return None


def _schema_kind(value: Any) -> str:
    """The JSON kind a schema's top-level `type` asks for ("any" without one)."""
    if isinstance(value, dict) and value.get("type") in (
        "object",
        "array",
        "string",
        "number",
        "boolean",
        "null",
    ):
        return str(value["type"])
    if isinstance(value, dict) and value.get("type") == "integer":
        return "number"
    return "any"


def _provider(provider: Any) -> str | None:
    """A promptfoo provider id (`openai:gpt-4o`) as a model name (`openai/gpt-4o`)."""
    if isinstance(provider, dict):
        provider = provider.get("id")
    if not isinstance(provider, str) or not provider:
        return None
    prefix, sep, rest = provider.partition(":")
    return f"{prefix}/{rest}" if sep and rest else provider


def assertion_from_csv(text: str) -> dict[str, Any]:
    """An `__expected` cell as promptfoo reads it (src/csv.ts `assertionFromString`):
    `type: value` (`not-` allowed; `similar(0.8): …` carries a threshold), the
    legacy `fn:`/`eval:` (javascript) and `grade:` (llm-rubric) prefixes, and plain
    text for `equals`. The value's leading space is dropped, as people write it."""
    for prefix, kind in (
        ("javascript:", "javascript"),
        ("fn:", "javascript"),
        ("eval:", "javascript"),
        ("python:", "python"),
    ):
        if text.startswith(prefix):
            return {"type": kind, "value": text[len(prefix) :].strip()}
    if text.startswith("grade:"):
        return {"type": "llm-rubric", "value": text[len("grade:") :].strip()}
    if text.startswith("file://"):
        return {"type": "javascript" if not text.endswith(".py") else "python", "value": text}
    match = _CSV_ASSERT.match(text)
    if match is None:
        return {"type": "equals", "value": text}
    negated, kind, threshold, value = match.groups()
    out: dict[str, Any] = {"type": f"{negated or ''}{kind}", "value": (value or "").strip()}
    if threshold:
        out["threshold"] = float(threshold)
    if kind in ("contains-any", "contains-all", "icontains-any", "icontains-all"):
        out["value"] = _listed(out["value"])
    return out


# the type names a CSV cell may start with; any other text is an `equals` value
_CSV_TYPES = (
    "answer-relevance|classifier|contains-all|contains-any|contains-json|contains-html|"
    "contains-sql|contains-xml|contains|context-faithfulness|context-recall|"
    "context-relevance|cost|equals|factuality|finish-reason|icontains-all|icontains-any|"
    "icontains|is-json|is-html|is-sql|is-xml|javascript|latency|levenshtein|llm-rubric|"
    "model-graded-closedqa|model-graded-factuality|perplexity-score|perplexity|python|"
    "regex|rouge-n|similar|starts-with|webhook"
)
_CSV_ASSERT = re.compile(rf"^(not-)?({_CSV_TYPES})(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$")

# Nunjucks: `{{ expr }}`, `{% tag %}`, `{# comment #}`
_NUNJUCKS = re.compile(r"\{\{-?(.*?)-?\}\}|\{%.*?%\}|\{#.*?#\}", re.DOTALL)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def translate(
    template: str, *, source: object, where: str, rename: dict[str, str] | None = None
) -> tuple[str, list[str]]:
    """A Nunjucks prompt as a skillopt template (`{{ name }}` → `{name}`, `{{ a.b }}`
    → `{a[b]}`, literal braces doubled, comments dropped) and the variables it uses,
    in order. A filter, an expression or a control tag has no skillopt form: one
    `InputError` naming the prompt, so the user rewrites it, rather than items whose
    prompt silently differs from what promptfoo sent. `rename` gives a variable's
    slot another name (`{input}`, when the variable is the item's whole input)."""
    out: list[str] = []
    names: list[str] = []
    pos = 0
    for match in _NUNJUCKS.finditer(template):
        out.append(_escape(template[pos : match.start()]))
        pos = match.end()
        token = match.group(0)
        if token.startswith("{#"):
            continue
        expr = (match.group(1) or "").strip()
        if token.startswith("{%") or not _NAME.fullmatch(expr):
            raise InputError(
                f"the Nunjucks {token.strip()!r} has no skillopt template form (only "
                "{{ name }} slots do); rewrite the prompt with plain slots",
                path=source,
                item=where,
                field="prompt",
            )
        head, *rest = expr.split(".")
        slot = (rename or {}).get(head, head)
        out.append("{" + slot + "".join(f"[{r}]" for r in rest) + "}")
        if head not in names:
            names.append(head)
    out.append(_escape(template[pos:]))
    return "".join(out), names


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def fill(text: str, variables: dict[str, Any]) -> str:
    """An assert value with its `{{ name }}` slots filled from the test's vars (as
    promptfoo renders asserts); anything else is left as written."""

    def one(match: re.Match[str]) -> str:
        expr = (match.group(1) or "").strip()
        if match.group(0).startswith("{{") and expr in variables:
            return str(variables[expr])
        return match.group(0)

    return _NUNJUCKS.sub(one, text) if "{" in text else text
