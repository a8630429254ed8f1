"""inspect_ai datasets (Sample fields) and `.eval`/JSON logs (samples with their targets).

What inspect_ai says (inspect.aisi.org.uk/datasets.html; inspect_ai.dataset.Sample,
inspect_ai.scorer): a `Sample` has `input` ("str | list[ChatMessage]"), `target`
("str | list[str]", "ideal target output"), `choices` ("list of available answer
choices (used only for multiple-choice evals)"), `id`, `metadata`, `files` ("files
that go along with the sample", name → contents or path), `setup` (a script) and
`sandbox`; `json_dataset`/`csv_dataset` read records whose fields have these names
(a `FieldSpec` maps others). Its `multiple_choice` solver shows the choices as
`A) …` lines and the target is the letter. Scorers: `match()` (target at the `end`
by default, `ignore_case=True`), `includes(ignore_case=True)`, `exact()`
("normalizes the text of the answer and target(s)"), `choice()`, and the model
graders `model_graded_qa()` / `model_graded_fact()`. Logs: see `inspect_logs`.

Invariants: a sample becomes one item, its input the text a chat model is shown
(every message, the system's included, in order); a target becomes `expected` (a
list of targets: any of them passes); the log's model and scores go into the item's
`metadata`, never into `expected`; a sample's `setup` and `sandbox` are noted, never
run; its files are read only from inside the dataset's directory.
"""

from __future__ import annotations

import base64
import binascii
import csv
import io
import re
import string
from collections import Counter
from pathlib import Path
from typing import Any

from skillopt.errors import InputError
from skillopt.suite.sources.files import load_data, read_text
from skillopt.suite.sources.records import FieldMap, Imported, Skipped, common_scorer

SAMPLE_FIELDS = ("input", "target", "choices", "id", "metadata", "files", "setup", "sandbox")
# inspect's scorers (by registry name) as skillopt scorers; None: by its target's shape
SCORERS: dict[str, str] = {
    "match": "match",  # a regex: see `_match`
    "exact": "normalized",
    "includes": "contains",
    "choice": "choice",
    "model_graded_qa": "judge",
    "model_graded_fact": "judge",
}
_RUBRICS = {
    "model_graded_qa": "The answer is correct: it answers the task as the expected answer does.",
    "model_graded_fact": "The answer contains the fact given in the expected answer.",
}


def read_inspect(path: Path, kind: str, fields: FieldMap) -> Imported:
    """A dataset (`kind` "inspect": JSON, JSONL or CSV records) or a log
    ("inspect-log": `.eval` or JSON)."""
    if kind == "inspect-log":
        return _from_log(path)
    return _Samples(path, None, path.parent).imported(_records(path, fields), "inspect", [])


def _records(path: Path, fields: FieldMap) -> list[dict[str, Any]]:
    if path.suffix.lower() in (".csv", ".tsv"):
        text = read_text(path, source=path).lstrip("\ufeff")
        delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
        try:
            rows: list[Any] = list(csv.DictReader(io.StringIO(text), delimiter=delimiter))
        except csv.Error as exc:
            raise InputError(f"invalid CSV: {exc}", path=path) from None
    else:
        data = load_data(path)
        rows = data if isinstance(data, list) else [data]
    renames = {"input": fields.input, "target": fields.expected, "id": fields.id}
    out = []
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            raise InputError("a sample must be an object", path=path, item=f"sample {index + 1}")
        record = {k: v for k, v in row.items() if k not in SAMPLE_FIELDS or not renames.get(k)}
        for field, column in renames.items():
            if column:
                if column not in row and field != "input":
                    continue  # no target (or id) in this row: it has none
                if column not in row:
                    raise InputError(
                        f"no field {column!r} (named for {field})",
                        path=path,
                        item=f"sample {index + 1}",
                        field=column,
                    )
                record[field] = row[column]
                if column != field:
                    record.pop(column, None)
        extra = {k: record.pop(k) for k in list(record) if k not in SAMPLE_FIELDS}
        if extra:
            meta = record.get("metadata")
            record["metadata"] = {**extra, **(meta if isinstance(meta, dict) else {})}
        out.append(record)
    return out


def _from_log(path: Path) -> Imported:
    from skillopt.suite.sources.inspect_logs import read_log

    log = read_log(path)
    header = log.header
    found = header.get("eval")
    ev: dict[str, Any] = found if isinstance(found, dict) else {}
    notes = []
    status = header.get("status")
    if status in ("error", "cancelled", "started"):
        notes.append(f"the log's status is {status}: its samples are still tasks")
    if log.epochs > 1:
        notes.append(f"the log ran {log.epochs} epochs: each sample is taken once, from its first")
    scorers = [s.get("name") for s in ev.get("scorers") or [] if isinstance(s, dict)]
    names = [str(n).rsplit("/", 1)[-1] for n in scorers if isinstance(n, str)]
    scorer = next((n for n in names if n in SCORERS), None)
    if names and scorer is None:
        notes.append(f"the task's scorer {names[0]} has no skillopt form: items are scored exact")
    if len(names) > 1:
        notes.append(f"the task has {len(names)} scorers; items are scored as {scorer or 'exact'}")
    options: dict[str, Any] = {}
    for entry in ev.get("scorers") or []:
        if isinstance(entry, dict) and str(entry.get("name", "")).endswith("match"):
            found_options = entry.get("options")
            options = found_options if isinstance(found_options, dict) else {}
            break
    if scorer == "match":
        where = options.get("location", "end")
        notes.append(
            f"inspect's match() (location {where}): each item's regex passes an answer "
            f"{_MATCH_SAYS.get(str(where), 'that ends with the target')}, case "
            f"{'aside' if options.get('ignore_case', True) else 'kept'}, as match() does"
        )
    samples = _Samples(path, scorer, None, model=ev.get("model"), match=options)
    task = ev.get("task")
    return samples.imported(list(log.samples), "inspect-log", notes, str(task or ""))


class _Samples:
    """Samples into items, for one dataset or log."""

    def __init__(
        self,
        path: Path,
        scorer: str | None,
        base: Path | None,
        model: Any = None,
        match: dict[str, Any] | None = None,
    ):
        self.path = path
        self.scorer = scorer
        self.match = match or {}  # the options of the log's match() scorer
        self.base = base  # where a dataset's sample files are (None: a log's)
        self.model = model
        self.skipped: list[Skipped] = []
        self.counts: Counter[str] = Counter()

    def imported(
        self, samples: list[dict[str, Any]], kind: str, notes: list[str], task: str = ""
    ) -> Imported:
        items = []
        seen: set[str] = set()
        for index, sample in enumerate(samples):
            item = self._item(index, sample)
            if item is None:
                continue
            if item["id"] in seen:
                raise InputError(
                    f"duplicate id {item['id']!r}",
                    path=self.path,
                    item=f"sample {index + 1}",
                    field="id",
                )
            seen.add(item["id"])
            items.append(item)
        said = {
            "setup": "samples have a setup script or a sandbox; skillopt runs neither",
            "dropped": "chat messages held parts other than text (images, audio); only the text is kept",
            "log-files": "samples name files the log does not keep; they are not imported",
        }
        notes = [*notes, *(f"{n} {said[k]}" for k, n in self.counts.items())]
        if self.scorer in _RUBRICS and items:
            notes.append("model-graded items need a judge model: pass --judge MODEL")
        return Imported(
            source=str(self.path),
            kind=kind,
            items=tuple(items),
            scorer=common_scorer(items),
            description=f"Samples of the inspect task {task}." if task else "",
            skipped=tuple(self.skipped),
            notes=tuple(notes),
        )

    def _item(self, index: int, sample: dict[str, Any]) -> dict[str, Any] | None:
        where = f"sample {index + 1}"
        raw_id = sample.get("id", index + 1)
        if raw_id is None or isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
            raise InputError("must be text or an integer", path=self.path, item=where, field="id")
        item: dict[str, Any] = {"id": str(raw_id)}
        where = f"sample {raw_id!r}"
        text = self._input(sample.get("input"), where)
        choices = sample.get("choices")
        targets = _targets(sample.get("target"), where, self.path)
        if choices is not None:
            if not isinstance(choices, list) or not choices:
                raise InputError(
                    "must be a list of options", path=self.path, item=where, field="choices"
                )
            letters = [chr(ord("A") + i) for i in range(len(choices))]
            options = "\n".join(f"{letter}) {c}" for letter, c in zip(letters, choices))
            text = (
                "Answer the following multiple choice question with the letter of the "
                f"correct option ({', '.join(letters)}).\n\n{text}\n\n{options}"
            )
            picked = [_letter(t, choices, letters) for t in targets]
            if len(picked) != 1 or picked[0] is None:
                self.skipped.append(
                    Skipped(where, f"target {targets!r} is not one option of {len(choices)}")
                )
                return None
            item.update(input=text, expected=picked[0], scorer="choice")
            item["metadata"] = {"choices": letters}
        else:
            item["input"] = text
            spec = self._scorer(targets)
            if spec is None:
                self.skipped.append(Skipped(where, "no target: nothing to score it by"))
                return None
            item["scorer"] = spec
            if targets:  # a judge reads every target; another scorer shows the first
                judged = self.scorer in _RUBRICS and len(targets) > 1
                item["expected"] = " | ".join(targets) if judged else targets[0]
        metadata = (
            dict(sample.get("metadata") or {}) if isinstance(sample.get("metadata"), dict) else {}
        )
        if self.model:
            metadata["log_model"] = self.model
        if isinstance(sample.get("scores"), dict) and sample["scores"]:
            metadata["log_scores"] = {
                str(k): v.get("value") if isinstance(v, dict) else v
                for k, v in sample["scores"].items()
            }
        if metadata:
            item["metadata"] = {**metadata, **item.get("metadata", {})}
        if sample.get("setup") or sample.get("sandbox"):
            self.counts["setup"] += 1
        files = sample.get("files")
        if files:
            if self.base is None or not isinstance(files, dict):
                self.counts["log-files"] += 1
            else:
                item["files"] = {
                    str(name): self._file(str(name), value, where) for name, value in files.items()
                }
        return item

    def _scorer(self, targets: list[str]) -> str | dict[str, Any] | None:
        kind = SCORERS.get(self.scorer or "", "exact")
        if kind == "judge":
            return {"type": "judge", "rubric": _RUBRICS[self.scorer or ""]}
        if not targets:
            return None
        if kind == "match":
            return _match(targets, self.match)
        if len(targets) == 1:
            return {"type": "contains", "ignore_case": True} if kind == "contains" else kind
        # several targets: any of them passes
        alternatives = "|".join(re.escape(t) for t in targets)
        if kind == "contains":
            return {"type": "regex", "pattern": alternatives, "ignore_case": True}
        return {
            "type": "regex",
            "pattern": rf"\A(?:{alternatives})\Z",
            **({"ignore_case": True} if kind == "normalized" else {}),
        }

    def _input(self, value: Any, where: str) -> str:
        if isinstance(value, str):
            if not value.strip():
                raise InputError("must not be empty", path=self.path, item=where, field="input")
            return value
        if not isinstance(value, list) or not value:
            raise InputError(
                "must be text or a list of chat messages", path=self.path, item=where, field="input"
            )
        texts = []
        for n, message in enumerate(value):
            if not isinstance(message, dict):
                raise InputError(
                    "a chat message must be an object",
                    path=self.path,
                    item=where,
                    field=f"input[{n}]",
                )
            texts.append((str(message.get("role", "user")), self._content(message.get("content"))))
        if len(texts) == 1:
            return texts[0][1]
        return "\n\n".join(f"{role.capitalize()}: {text}" for role, text in texts)

    def _content(self, content: Any) -> str:
        if isinstance(content, str):
            return content
        parts = content if isinstance(content, list) else []
        texts = [
            str(p.get("text", "")) for p in parts if isinstance(p, dict) and p.get("type") == "text"
        ]
        if len(texts) < len(parts):
            self.counts["dropped"] += 1
        return "\n".join(texts)

    def _file(self, name: str, value: Any, where: str) -> str:
        """A dataset sample's file: inline text, a `data:` URL, or a path beside the
        dataset."""
        field = f"files.{name}"
        if not isinstance(value, str):
            raise InputError("must be text or a path", path=self.path, item=where, field=field)
        if value.startswith("data:"):
            try:
                data = base64.b64decode(value.split(",", 1)[1], validate=True)
                return data.decode("utf-8")
            except (IndexError, binascii.Error, UnicodeDecodeError):
                raise InputError(
                    "a data: URL that is not base64 UTF-8 text",
                    path=self.path,
                    item=where,
                    field=field,
                ) from None
        assert self.base is not None
        if "\n" in value or len(value) > 1024:
            return value
        root = self.base.resolve()
        try:
            target = (root / value).resolve()
        except (OSError, ValueError):
            return value
        if not target.is_file():
            return value  # the file's contents, written inline
        if not target.is_relative_to(root):
            raise InputError(
                f"{value!r} is outside {root}, where the dataset lives",
                path=self.path,
                item=where,
                field=field,
            )
        return read_text(target, source=self.path, item=where, field=field)


def _targets(value: Any, where: str, path: Path) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [str(value)]
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return [str(v) for v in value if str(v)]
    raise InputError("must be text or a list of texts", path=path, item=where, field="target")


def _letter(target: str, choices: list[Any], letters: list[str]) -> str | None:
    """The option a target names: its letter, or the option's own text."""
    if target.strip().upper() in letters:
        return target.strip().upper()
    texts = [str(c).strip() for c in choices]
    return letters[texts.index(target.strip())] if target.strip() in texts else None


_MATCH_SAYS = {
    "end": "that ends with the target",
    "begin": "that begins with the target",
    "any": "that holds the target anywhere",
    "exact": "equal to the target",
}
# what inspect's match() strips from both ends of the answer and the target
_EDGE = f"[\\s{re.escape(string.punctuation)}]*"


def _match(targets: list[str], options: dict[str, Any]) -> dict[str, Any]:
    """inspect's `match(location, ignore_case)` as a regex scorer: the answer and the
    target stripped of whitespace and punctuation at their ends, then the target
    found at the answer's end (the default), start, anywhere, or as all of it; any
    of several targets passes."""
    edge = string.whitespace + string.punctuation
    alternatives = "|".join(re.escape(t.strip(edge)) for t in targets)
    where = str(options.get("location", "end"))
    pattern = {
        "begin": rf"\A{_EDGE}(?:{alternatives})",
        "any": rf"(?:{alternatives})",
        "exact": rf"\A{_EDGE}(?:{alternatives}){_EDGE}\Z",
    }.get(where, rf"(?:{alternatives}){_EDGE}\Z")
    return {
        "type": "regex",
        "pattern": pattern,
        "ignore_case": bool(options.get("ignore_case", True)),
    }
