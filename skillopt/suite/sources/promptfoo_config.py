"""Where a promptfoo config's prompts and tests are written: the config file (or the
directory holding one), `prompts` (text, `file://` text files, `{raw, label}`
objects), `tests` (inline, `file://` YAML/JSON/CSV files and globs,
`huggingface://datasets/…`) and `defaultTest`, read into plain tests for
`promptfoo` to turn into items (see there for what promptfoo says of each).

Invariant: only files inside the config's directory are read, and nothing that
promptfoo would run (a `.py`/`.js` prompt or tests file) is read at all: each is one
`InputError` naming the config and the field.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from skillopt.errors import InputError
from skillopt.suite.sources.files import inside, load_data, load_json, read_text
from skillopt.suite.sources.promptfoo_asserts import assertion_from_csv

CONFIG_NAMES = ("promptfooconfig.yaml", "promptfooconfig.yml", "promptfooconfig.json")
CODE_SUFFIXES = (".py", ".js", ".ts", ".mjs", ".cjs")


def is_code(rel: str) -> bool:
    """Whether a `file://` path names code promptfoo would run (`x.py`, `x.js:fn`)."""
    return rel.lower().endswith(CODE_SUFFIXES) or ".py:" in rel or ".js:" in rel


def config_file(path: Path) -> Path:
    if path.is_dir():
        for name in CONFIG_NAMES:
            if (path / name).is_file():
                return path / name
        raise InputError(f"no promptfoo config here ({', '.join(CONFIG_NAMES)})", path=path)
    if not path.is_file():
        raise InputError("no such promptfoo config or tests file", path=path)
    return path


# ---------------------------------------------------------------------- prompts
def first_prompt(value: Any, base: Path, config: Path, notes: list[str]) -> str | None:
    """The text of the config's first prompt; the others are named in a note."""
    if value is None:
        return None
    entries = list(value.items()) if isinstance(value, dict) else None
    listed: list[Any] = (
        [k for k, _ in entries] if entries else value if isinstance(value, list) else [value]
    )
    prompts: list[tuple[str, str]] = []
    for index, entry in enumerate(listed):
        where = f"prompts[{index}]"
        if isinstance(entry, dict):
            label = str(entry.get("label") or entry.get("id") or where)
            raw = entry.get("raw", entry.get("id"))
        else:
            label, raw = str(entry), entry
        if not isinstance(raw, str):
            raise InputError("a prompt must be text or a file:// path", path=config, field=where)
        if raw.startswith("file://"):
            prompts.extend(_prompt_files(raw[len("file://") :], base, config, where))
        else:
            prompts.append((label, raw))
    if not prompts:
        return None
    if len(prompts) > 1:
        others = ", ".join(label for label, _ in prompts[1:])
        notes.append(
            f"the config has {len(prompts)} prompts; imported with the first ({others} left out)"
        )
    return prompts[0][1]


def _prompt_files(rel: str, base: Path, config: Path, where: str) -> list[tuple[str, str]]:
    if is_code(rel):
        raise InputError(
            f"the prompt file://{rel} is code that promptfoo runs to make the prompt; "
            "skillopt runs nothing it imports: write the prompt it makes as text",
            path=config,
            field=where,
        )
    out: list[tuple[str, str]] = []
    for file in matches(rel, base, config, where):
        text = read_text(file, source=config, field=where)
        if file.suffix.lower() == ".json":
            text = _chat_text(load_json(text, source=file), file)
        # a text file may hold several prompts, one per `---` line
        parts = (
            [p.strip() for p in text.split("\n---\n")] if file.suffix.lower() != ".json" else [text]
        )
        out.extend((f"{file.name}" + (f"#{i}" if i else ""), p) for i, p in enumerate(parts) if p)
    return out


def _chat_text(messages: Any, file: Path) -> str:
    """A chat prompt (a JSON list of {role, content}) as the one text it asks."""
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise InputError("a JSON prompt must be a list of {role, content} messages", path=file)
    return "\n\n".join(str(m.get("content", "")) for m in messages)


def matches(rel: str, base: Path, config: Path, where: str) -> list[Path]:
    if any(ch in rel for ch in "*?["):
        try:
            found = sorted(p for p in base.glob(rel) if p.is_file())
        except (NotImplementedError, ValueError):  # an absolute pattern
            raise InputError(
                f"file://{rel} must be a path relative to the config", path=config, field=where
            ) from None
        if not found:
            raise InputError(f"no file matches file://{rel}", path=config, field=where)
        return [
            inside(base, str(p.relative_to(base)), source=config, item=where, field=where)
            for p in found
        ]
    return [inside(base, rel, source=config, item=where, field=where)]


# ---------------------------------------------------------------------- tests
def tests_of(value: Any, base: Path, config: Path, notes: list[str]) -> list[tuple[str, Any]]:
    """Every test as (where it is written, the test)."""
    if value is None:
        return []
    listed = value if isinstance(value, list) else [value]
    out: list[tuple[str, Any]] = []
    for index, entry in enumerate(listed):
        where = f"tests[{index}]"
        if isinstance(entry, str) and entry.startswith("file://"):
            for file in matches(entry[len("file://") :], base, config, where):
                out.extend(_file_tests(file, config, where))
        elif isinstance(entry, str) and entry.startswith(("huggingface://", "hf://")):
            out.extend(_hf_tests(entry, notes))
        else:
            out.append((where, entry))
    return out


def _file_tests(file: Path, config: Path, where: str) -> list[tuple[str, Any]]:
    if file.suffix.lower() in CODE_SUFFIXES:
        raise InputError(
            f"tests file {file.name} is code that promptfoo runs; skillopt runs nothing it imports",
            path=config,
            field=where,
        )
    if file.suffix.lower() in (".csv", ".tsv"):
        return csv_tests(file)
    data = load_data(file)
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise InputError("a tests file must hold a list of tests", path=file)
    return [(f"{file.name}[{i}]", t) for i, t in enumerate(data)]


def csv_tests(file: Path) -> list[tuple[str, Any]]:
    """promptfoo's CSV tests: columns are vars; `__expected…` hold asserts."""
    text = read_text(file, source=file)
    delimiter = "\t" if file.suffix.lower() == ".tsv" else ","
    rows = csv.DictReader(io.StringIO(text.lstrip("\ufeff")), delimiter=delimiter)
    out: list[tuple[str, Any]] = []
    try:
        for number, row in enumerate(rows, 1):
            test: dict[str, Any] = {"vars": {}, "assert": []}
            metric = None
            for key, cell in row.items():
                if key is None:
                    raise InputError(
                        "more cells than header columns", path=file, item=f"row {number}"
                    )
                cell = cell or ""
                if key.startswith("__expected"):
                    if cell.strip():
                        test["assert"].append(assertion_from_csv(cell))
                elif key == "__description":
                    test["description"] = cell
                elif key == "__metric":
                    metric = cell
                elif key == "__threshold":
                    try:
                        test["threshold"] = float(cell) if cell.strip() else None
                    except ValueError:
                        raise InputError(
                            f"not a number: {cell!r}",
                            path=file,
                            item=f"row {number}",
                            field="__threshold",
                        ) from None
                elif key in ("__prefix", "__suffix", "__providerOutput"):
                    test.setdefault("options", {})[key[2:]] = cell
                else:
                    test["vars"][key] = cell
            if metric:
                for a in test["assert"]:
                    a["metric"] = metric
            out.append((f"{file.name} row {number}", test))
    except csv.Error as exc:
        raise InputError(f"invalid CSV: {exc}", path=file, line=rows.line_num) from None
    return out


def _hf_tests(source: str, notes: list[str]) -> list[tuple[str, Any]]:
    """A Hugging Face dataset's rows as tests whose vars are the row's fields (the
    `test` split unless the URL names one, as promptfoo reads it)."""
    from skillopt.suite.sources.hf import hub_records

    out = [(f"{source} row {n}", {"vars": row}) for n, row in hub_records(source, "test")]
    notes.append(f"{len(out)} tests from {source}: each row's fields are its vars")
    return out


def default_test(value: Any, base: Path, config: Path) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str) and value.startswith("file://"):
        (file,) = matches(value[len("file://") :], base, config, "defaultTest")
        value = load_data(file)
    if not isinstance(value, dict):
        raise InputError("must be a mapping", path=config, field="defaultTest")
    return value
