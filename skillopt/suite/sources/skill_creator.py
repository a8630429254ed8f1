"""Anthropic skill-creator's `evals/evals.json` and its trigger evals.

What skill-creator says (anthropics/skills, skills/skill-creator/references/
schemas.md): evals.json is "located at `evals/evals.json` within the skill
directory": `{"skill_name", "evals": [{"id", "prompt", "expected_output", "files",
"expectations"}]}`, where `id` is a "unique integer identifier", `prompt` "the task
to execute", `expected_output` a "human-readable description of success", `files`
an "optional list of input file paths (relative to skill root)" and `expectations` a
"list of verifiable statements" its grader checks. Trigger evals
(references/description-optimization.md) are a JSON list of `{"query": …,
"should_trigger": true|false}`, passed to its loop as `--eval-set`; skills keep them
beside evals.json, most often as `evals/trigger_evals.json` (the shape
`{"evals": [{"prompt", "should_trigger"}]}` is read too).

Invariants: an eval becomes one item scored by a `judge` whose rubric lists its
expectations (the grader's statements) and the expected output; its files are read
as text from inside the skill directory only (a path leaving it, or missing, is one
`InputError` naming the eval and the field); trigger evals make no tasks: they are
kept in `Imported.triggers`, written as a trigger suite beside the suite, and a file
holding only trigger evals loads as that trigger suite (`suite.triggers`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillopt.errors import InputError
from skillopt.suite.sources.files import inside, load_data, read_text
from skillopt.suite.sources.records import FieldMap, Imported, Skipped, common_scorer

# where skills keep trigger evals beside evals/evals.json, in the order looked for
TRIGGER_FILES = ("trigger_evals.json", "trigger-evals.json", "triggers.json", "eval_set.json")


def read_skill_creator(path: Path, fields: FieldMap) -> Imported:
    """The evals of a skill directory (its `evals/evals.json` and trigger evals), or
    of one such file."""
    if path.is_dir():
        skill = path
        evals_dir = path / "evals"
        main = evals_dir / "evals.json"
        files = [main] if main.is_file() else []
    else:
        evals_dir = path.parent
        skill = evals_dir.parent if evals_dir.name == "evals" else evals_dir
        files = [path]
    if path.is_dir() or path.name == "evals.json":
        files += [evals_dir / n for n in TRIGGER_FILES if (evals_dir / n).is_file()]
    if not files:
        raise InputError("no evals/evals.json (nor a trigger eval file) here", path=path)
    reader = _Reader(skill)
    for file in files:
        reader.read(file)
    return reader.imported(str(path))


class _Reader:
    def __init__(self, skill: Path):
        self.skill = skill
        self.items: list[dict[str, Any]] = []
        self.triggers: list[dict[str, Any]] = []
        self.skipped: list[Skipped] = []
        self.notes: list[str] = []
        self.name = ""

    def read(self, file: Path) -> None:
        data = load_data(file)
        evals = data.get("evals") if isinstance(data, dict) else data
        if not isinstance(evals, list):
            raise InputError("expected `evals`: a list of evals", path=file, field="evals")
        if isinstance(data, dict) and isinstance(data.get("skill_name"), str):
            self.name = self.name or data["skill_name"]
        if evals and all(isinstance(e, dict) and "should_trigger" in e for e in evals):
            self._triggers(file, evals)
            return
        for index, entry in enumerate(evals):
            self._eval(file, index, entry)

    def _triggers(self, file: Path, evals: list[dict[str, Any]]) -> None:
        for index, entry in enumerate(evals):
            where = f"evals[{index}]"
            query = entry.get("query", entry.get("prompt"))
            if not isinstance(query, str) or not query.strip():
                raise InputError("must be non-empty text", path=file, item=where, field="query")
            if not isinstance(entry["should_trigger"], bool):
                raise InputError(
                    "must be true or false", path=file, item=where, field="should_trigger"
                )
            self.triggers.append(
                {
                    "id": f"trigger-{len(self.triggers) + 1}",
                    "query": query,
                    "should_trigger": entry["should_trigger"],
                }
            )
        self.notes.append(
            f"{len(evals)} trigger evals from {file.name} make no tasks: they are a "
            "trigger suite of their own, which `skillopt eval` scores"
        )

    def _eval(self, file: Path, index: int, entry: Any) -> None:
        where = f"evals[{index}]"
        if not isinstance(entry, dict):
            raise InputError("an eval must be a mapping", path=file, item=where)
        raw_id = entry.get("id", index + 1)
        if (
            isinstance(raw_id, bool)
            or not isinstance(raw_id, (int, str))
            or not str(raw_id).strip()
        ):
            raise InputError("must be an integer or text", path=file, item=where, field="id")
        item_id = str(raw_id)
        if any(i["id"] == item_id for i in self.items):
            raise InputError(f"duplicate id {item_id!r}", path=file, item=where, field="id")
        prompt = entry.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise InputError("must be non-empty text", path=file, item=where, field="prompt")
        expected = entry.get("expected_output")
        if expected is not None and not isinstance(expected, str):
            raise InputError("must be text", path=file, item=where, field="expected_output")
        expectations = entry.get("expectations", entry.get("assertions")) or []
        if not isinstance(expectations, list) or not all(isinstance(e, str) for e in expectations):
            raise InputError(
                "must be a list of statements", path=file, item=where, field="expectations"
            )
        if not expectations and not expected:
            self.skipped.append(
                Skipped(where, "no expectations and no expected_output to grade by")
            )
            return
        item: dict[str, Any] = {"id": item_id, "input": prompt}
        if expected:
            item["expected"] = expected
        item["scorer"] = {"type": "judge", "rubric": _rubric(expectations, bool(expected))}
        if expectations:  # its grader passes an eval when every statement holds
            item["scorer"]["threshold"] = 1.0
        listed = entry.get("files") or []
        if not isinstance(listed, list) or not all(isinstance(f, str) for f in listed):
            raise InputError("must be a list of paths", path=file, item=where, field="files")
        contents = {}
        for rel in listed:
            target = inside(self.skill, rel, source=file, item=where, field="files")
            try:
                contents[rel] = read_text(target, source=file, item=where, field="files")
            except InputError as exc:
                if "not UTF-8" not in str(exc):
                    raise
                self.skipped.append(
                    Skipped(where, f"files: {rel} is not text (a task's files are text)")
                )
                return
        if contents:
            item["files"] = contents
        metadata: dict[str, Any] = {"expectations": expectations} if expectations else {}
        if self.name:
            metadata["skill_name"] = self.name
        if metadata:
            item["metadata"] = metadata
        self.items.append(item)

    def imported(self, source: str) -> Imported:
        if self.items:
            self.notes.append(
                "each eval is graded by a judge model against its expectations: pass "
                "--judge MODEL or set `judge:` in the suite"
            )
        scorer = common_scorer(self.items)
        return Imported(
            source=source,
            kind="skill-creator",
            items=tuple(self.items),
            scorer=scorer,
            description=f"The evals of the {self.name} skill." if self.name else "",
            skipped=tuple(self.skipped),
            triggers=tuple(self.triggers),
            notes=tuple(self.notes),
        )


def _rubric(expectations: list[str], has_expected: bool) -> str:
    """The grader's statements as a judge rubric."""
    lines = []
    if expectations:
        lines.append("The answer must satisfy every one of these statements:")
        lines += [f"- {e}" for e in expectations]
        lines.append("Score the fraction of statements the answer satisfies.")
    if has_expected:
        lines.append(
            "The expected answer describes what success looks like; the answer must achieve it."
        )
    return "\n".join(lines)
