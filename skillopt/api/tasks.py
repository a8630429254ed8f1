"""The entry points that make task suites from where tasks already live:
`import_tasks` (`skillopt tasks import`).

Invariant: the modules that do the work are imported when a function runs, not
with the api.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skillopt.suite.importing import ImportResult


def import_tasks(
    source: str | Path,
    output: str | Path,
    *,
    format: str | None = None,
    input: str | None = None,
    expected: str | None = None,
    id: str | None = None,
    split_field: str | None = None,
    subset: str | None = None,
    prompt: str | None = None,
    scorer: str | None = None,
    name: str | None = None,
    keep_unscored: bool = False,
    force: bool = False,
) -> ImportResult:
    """Read a task source (CSV/TSV, JSON/JSONL, a Hugging Face dataset, a promptfoo
    config, an inspect_ai dataset or log, a skill-creator `evals/evals.json`; `format`
    names it when its name does not) and write it as the suite `output`. `input`,
    `expected`, `id` and `split_field` name the source's fields (guessed when not
    named; `input` may name several, `a,b`, for a prompt with `{a}` and `{b}`);
    `subset` chooses a dataset's split; `prompt` and `scorer` set the suite's; an
    existing file is replaced only with `force`. The result says what was written and
    what was skipped, and why."""
    from skillopt.suite.importing import import_source
    from skillopt.suite.sources import FieldMap

    fields = FieldMap(
        input=input,
        expected=expected,
        id=id,
        split=split_field,
        subset=subset,
        keep_unscored=keep_unscored,
    )
    return import_source(
        str(source),
        Path(output),
        kind=format,
        fields=fields,
        prompt=prompt,
        scorer=scorer,
        name=name,
        force=force,
    )
