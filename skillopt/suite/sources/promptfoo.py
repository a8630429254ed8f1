"""promptfoo configs and test files: `vars` into the prompt template, asserts into scorers.

What promptfoo says (promptfoo.dev/docs/configuration/reference, …/test-cases,
…/prompts; src/csv.ts): a config (`promptfooconfig.yaml`) has `prompts` (a string,
a list, `file://` paths, `{id, label}` / `{raw, label}` objects) written in Nunjucks
with `{{var}}` slots, `providers`, `tests` (a list of test cases, `file://` paths to
YAML/JSON/CSV files, globs allowed, or `huggingface://datasets/<org>/<name>`) and
`defaultTest` ("properties every test inherits": its `vars` and `assert` are merged
into each test). A test case has `vars`, `assert`, `description`, `metadata`,
`threshold`. A var whose value is a list runs the test once per value. In a CSV test
file "variables are automatically mapped from column headers"; `__expected`,
`__expected1…` hold asserts (`contains: Paris`, plain text = equals),
`__description`, `__metric`, `__threshold` the rest. A var that is `file://x.txt` is
that file's text (`.py`/`.js` files are run to make the value).

Invariants: nothing is run (a prompt or var made by code is one `InputError`, a
code assert is reported as unmapped); files are read only from inside the config's
directory; a test whose asserts do not all map is skipped with the reason unless the
field mapping keeps it (`keep_unscored`), and one with none that maps always is.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from skillopt.errors import InputError
from skillopt.suite.sources.files import inside, load_data, read_text
from skillopt.suite.sources.promptfoo_asserts import (
    Part,
    fill,
    map_assert,
    translate,
)
from skillopt.suite.sources.promptfoo_config import (
    config_file,
    csv_tests,
    default_test,
    first_prompt,
    is_code,
    tests_of,
)
from skillopt.suite.sources.records import FieldMap, Imported, Skipped, common_scorer

MAX_EXPANSION = 1000  # tests one test's list-valued vars may expand into


def read_promptfoo(path: Path, fields: FieldMap) -> Imported:
    """The tests of a promptfoo config (a file, or a directory holding one) or of a
    bare tests file (a YAML/JSON list of tests, or a CSV)."""
    config = config_file(path)
    base = config.parent
    notes: list[str] = []
    prompt: str | None = None
    description = ""
    default: dict[str, Any] = {}
    if config.suffix.lower() == ".csv":
        tests = csv_tests(config)
    else:
        data = load_data(config)
        if isinstance(data, list):
            tests = [(f"tests[{i}]", t) for i, t in enumerate(data)]
        elif isinstance(data, dict):
            prompt = first_prompt(data.get("prompts"), base, config, notes)
            tests = tests_of(data.get("tests"), base, config, notes)
            default = default_test(data.get("defaultTest"), base, config)
            description = str(data.get("description") or "")
            if data.get("scenarios"):
                notes.append("`scenarios` are not imported; only `tests` are")
        else:
            raise InputError("a promptfoo config must be a mapping with `tests`", path=config)
    if not tests:
        raise InputError("no tests to import (`tests:` is empty or missing)", path=config)
    return _Build(config, fields, prompt, default, notes).run(tests, description)


# ---------------------------------------------------------------------- items
class _Build:
    """Tests into items: one instance per import, its notes and skipped rows kept."""

    def __init__(
        self,
        config: Path,
        fields: FieldMap,
        prompt: str | None,
        default: dict[str, Any],
        notes: list[str],
    ):
        self.config = config
        self.base = config.parent
        self.fields = fields
        self.prompt = prompt
        self.default = default
        self.notes = notes
        self.skipped: list[Skipped] = []
        self.judges: list[str] = []
        self.filled_missing: set[str] = set()
        # asserts whose own threshold has no place in their scorer (only a rubric's has)
        self.unused_thresholds: Counter[str] = Counter()
        self.template, self.names, self.single = self._template()

    def run(self, tests: list[tuple[str, Any]], description: str) -> Imported:
        items: list[dict[str, Any]] = []
        seen: set[str] = set()
        for number, (where, test) in enumerate(tests, 1):
            if not isinstance(test, dict):
                raise InputError("a test must be a mapping", path=self.config, item=where)
            for k, variables in enumerate(self._expanded(where, test)):
                item = self._item(where, test, variables, f"t{number}" + (f"-{k + 1}" if k else ""))
                if item is None:
                    continue
                if item["id"] in seen:
                    raise InputError(
                        f"duplicate id {item['id']!r}", path=self.config, item=where, field="id"
                    )
                seen.add(item["id"])
                items.append(item)
        if self.unused_thresholds:
            kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.unused_thresholds.items()))
            self.notes.append(f"the threshold of these asserts is not used: {kinds}")
        if self.filled_missing:
            names = ", ".join(sorted(self.filled_missing))
            self.notes.append(
                f"tests without a value for {names} get an empty one, as Nunjucks renders it"
            )
        if self.judges:
            self.notes.append(
                f"the judge model is {self.judges[0]}, named by an llm-rubric assert's provider"
            )
        scorer = common_scorer(items)
        return Imported(
            source=str(self.config),
            kind="promptfoo",
            items=tuple(items),
            prompt=self.template,
            scorer=scorer,
            description=description,
            judge=self.judges[0] if self.judges else None,
            skipped=tuple(self.skipped),
            notes=tuple(self.notes),
        )

    def _template(self) -> tuple[str, list[str], bool]:
        """(the suite's template, the vars it uses, whether the item's input is the
        one var's value rather than a mapping of vars)."""
        text = self.prompt
        if text is None and self.fields.input:
            text = "{{" + self.fields.input + "}}"
        if text is None:
            self.notes.append("no prompt: an item's input is its one var, or all its vars")
            return "{input}", [], False
        _, names = translate(text, source=self.config, where="prompts[0]")
        single = len(names) == 1 and not re.search(r"\{\{-?\s*" + re.escape(names[0]) + r"\.", text)
        rename = {names[0]: "input"} if single else {"input": "var_input"}
        template, _ = translate(text, source=self.config, where="prompts[0]", rename=rename)
        return template, names, single

    def _expanded(self, where: str, test: dict[str, Any]) -> list[dict[str, Any]]:
        """The test's vars (defaultTest's merged under them, files read), one set per
        combination of its list-valued vars."""
        own = test.get("vars") or {}
        if not isinstance(own, dict):
            raise InputError("must be a mapping", path=self.config, item=where, field="vars")
        variables = {**(self.default.get("vars") or {}), **own}
        for name, value in variables.items():
            if isinstance(value, str) and value.startswith("file://"):
                variables[name] = self._var_file(value[len("file://") :], where, name)
        lists = {k: v for k, v in variables.items() if isinstance(v, list)}
        if not lists:
            return [variables]
        sizes = [len(v) for v in lists.values()]
        total = 1
        for size in sizes:
            total *= size
        if total > MAX_EXPANSION:
            raise InputError(
                f"its list-valued vars expand to {total} tests (at most {MAX_EXPANSION})",
                path=self.config,
                item=where,
                field="vars",
            )
        return [
            {**variables, **dict(zip(lists, combo))} for combo in itertools.product(*lists.values())
        ]

    def _var_file(self, rel: str, where: str, name: str) -> str:
        field = f"vars.{name}"
        if is_code(rel):
            raise InputError(
                f"file://{rel} is code that promptfoo runs to make the value; skillopt "
                "runs nothing it imports",
                path=self.config,
                item=where,
                field=field,
            )
        file = inside(self.base, rel, source=self.config, item=where, field=field)
        return read_text(file, source=self.config, item=where, field=field)

    def _item(
        self, where: str, test: dict[str, Any], variables: dict[str, Any], item_id: str
    ) -> dict[str, Any] | None:
        asserts = [*(self.default.get("assert") or []), *(test.get("assert") or [])]
        if self.fields.expected and self.fields.expected in variables:
            asserts.append({"type": "equals", "value": variables[self.fields.expected]})
        parts: list[Part] = []
        reasons: list[str] = []
        for a in asserts:
            if not isinstance(a, dict):
                raise InputError(
                    "an assert must be a mapping", path=self.config, item=where, field="assert"
                )
            mapped = map_assert(self._filled(a, variables, where))
            if isinstance(mapped, str):
                reasons.append(mapped)
            else:
                parts.append(mapped)
                if a.get("threshold") is not None and "threshold" not in mapped.spec:
                    self.unused_thresholds[str(a.get("type"))] += 1
        if not asserts:
            self.skipped.append(Skipped(where, "no asserts: nothing to score it by"))
            return None
        if reasons and (not self.fields.keep_unscored or not parts):
            why = "; ".join(reasons) + ("" if parts else "; no assert maps to a skillopt scorer")
            self.skipped.append(Skipped(where, why))
            return None
        if reasons:
            self.notes.append(f"{where}: {'; '.join(reasons)}; kept, scored by its other asserts")
        self.judges.extend(p.judge for p in parts if p.judge and p.judge not in self.judges)
        item: dict[str, Any] = {"id": self._id(where, variables, item_id)}
        item["input"] = self._input(variables)
        threshold = test.get("threshold", self.default.get("threshold"))
        if len(parts) == 1 and threshold is None:
            spec, expected = parts[0].spec, parts[0].expected
            item["scorer"] = "exact" if spec == {"type": "exact"} else spec
            if expected is not None:
                item["expected"] = expected
        else:
            of = [
                {
                    **p.spec,
                    **({"expected": p.expected} if p.expected is not None else {}),
                    **({"weight": p.weight} if p.weight != 1.0 else {}),
                }
                for p in parts
            ]
            item["scorer"] = {"type": "all", "of": of}
            if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
                item["scorer"]["threshold"] = float(threshold)
        metadata = self._metadata(test, asserts, variables)
        if metadata:
            item["metadata"] = metadata
        return item

    def _filled(self, a: dict[str, Any], variables: dict[str, Any], where: str) -> dict[str, Any]:
        value = a.get("value")
        if isinstance(value, str) and value.startswith("file://"):
            rel = value[len("file://") :]
            if is_code(rel):
                return {**a, "type": f"{a.get('type')} (code in {rel})"}
            file = inside(self.base, rel, source=self.config, item=where, field="assert.value")
            text = read_text(file, source=self.config, item=where, field="assert.value")
            value = load_data(file) if file.suffix.lower() in (".json", ".yaml", ".yml") else text
        if isinstance(value, str):
            value = fill(value, variables)
        elif isinstance(value, list):
            value = [fill(v, variables) if isinstance(v, str) else v for v in value]
        return {**a, "value": value}

    def _id(self, where: str, variables: dict[str, Any], fallback: str) -> str:
        if not self.fields.id:
            return fallback
        value = variables.get(self.fields.id)
        if value is None or not str(value).strip():
            raise InputError("no id", path=self.config, item=where, field=f"vars.{self.fields.id}")
        return str(value)

    def _input(self, variables: dict[str, Any]) -> Any:
        shown = {k: _text(v) for k, v in variables.items()}
        for name in self.names:
            if name not in shown:
                self.filled_missing.add(name)
                shown[name] = ""
        if self.single:
            return shown[self.names[0]]
        if not self.names:
            # a bare tests file: the input is the one var, else the vars' mapping
            return next(iter(shown.values())) if len(shown) == 1 else shown
        if "input" in shown:
            shown["var_input"] = shown.pop("input")
        return shown

    def _metadata(
        self, test: dict[str, Any], asserts: list[Any], variables: dict[str, Any]
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if test.get("description"):
            out["description"] = str(test["description"])
        extra = test.get("metadata")
        if isinstance(extra, dict):
            out.update({str(k): v for k, v in extra.items()})
        metrics = sorted(
            {str(a["metric"]) for a in asserts if isinstance(a, dict) and a.get("metric")}
        )
        if metrics:
            out["metrics"] = metrics
        if self.single:
            rest = {k: _text(v) for k, v in variables.items() if k != self.names[0]}
            if rest:
                out["vars"] = rest
        return out


def _text(value: Any) -> str:
    """A var as Nunjucks prints it into the prompt (JSON for anything not text)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
