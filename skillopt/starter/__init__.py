"""A new skill's starting point (`skillopt init`): a skill folder, a suite of example
items and a `skillopt.yaml`, drawn from the templates kept as files next to this
module (`SKILL.md`, `suite.yaml`, `skillopt.yaml`).

Invariants: nothing is written until every file is drawn and checked (the name by
the Agent Skills rule, the description by lint's), and no existing file is
overwritten unless `force`; what is written lints clean and loads as a suite with
at least two items in every split, scored offline by the embedded model with the
settings written beside it (every scorer but `judge`, which needs a judge model).
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import yaml

from skillopt.errors import InputError

SCORERS = ("exact", "normalized", "contains", "regex", "number", "judge")
DEFAULT_SCORER = "exact"
DEFAULT_DESCRIPTION = (
    "Write a number given in words as digits. Use when a number written out in words "
    "must become a numeral."
)
SUITE_DESCRIPTION = "Numbers written in words, to be written in digits (an example to replace)."
JUDGE_MODEL = "openai/gpt-4o-mini"  # named in skillopt.yaml for the judge scorer
JUDGE_KEY = "OPENAI_API_KEY"
TARGET = "local/gemma-3-270m"

# each scorer's line in the suite, with what the user changes to use it on their items
_SCORER_LINES = {
    "exact": "# each answer must equal the item's expected answer (spaces around it aside)\n"
    "scorer: exact",
    "normalized": "# the answer must equal the expected one up to case, spaces and punctuation\n"
    "scorer: normalized",
    "contains": "# the answer must contain the expected text (a list: every one of them)\n"
    "scorer: contains",
    "regex": "# each item's expected answer is a pattern the whole answer must match\n"
    "# (or give one pattern for all: {type: regex, pattern: '^[0-9]+$'})\n"
    "scorer: {type: regex, fullmatch: true}",
    "number": "# the answer's number must equal the expected one, within the tolerance\n"
    "scorer: {type: number, tolerance: 0}",
    "judge": "# a model grades each answer against the rubric (and the expected answer);\n"
    "# the judge model is `judge:` in skillopt.yaml. Write the rubric for your task:\n"
    "scorer:\n"
    "  type: judge\n"
    "  rubric: >-\n"
    "    The answer is the number the input names, written in digits, with nothing\n"
    "    else. Score 1 when it is exactly right, 0 otherwise.",
}
_JUDGE_LINES = {
    True: f"# The judge scorer's model (needs {JUDGE_KEY}; any litellm model works; the\n"
    "# embedded model is too small to grade).\n"
    f"judge: {JUDGE_MODEL}",
    False: "# A judge model, for items scored by the `judge` scorer (a rubric):\n"
    f"# judge: {JUDGE_MODEL}",
}


@dataclass(frozen=True)
class StarterFile:
    """One file `init` writes: where (under the project folder) and what."""

    path: Path
    text: str


@dataclass(frozen=True)
class Starter:
    """A new skill's files, drawn and checked, not yet written."""

    name: str
    description: str
    scorer: str
    root: Path
    files: tuple[StarterFile, ...]

    @property
    def skill_dir(self) -> Path:
        return self.root / "skills" / self.name

    @property
    def suite_path(self) -> Path:
        return self.root / "tasks" / f"{self.name}.yaml"

    def existing(self) -> list[Path]:
        """The files this starter would overwrite."""
        return [f.path for f in self.files if f.path.exists() or f.path.is_symlink()]


def check_name(name: str) -> str:
    """`name` when it follows the Agent Skills name rule (1-64 lowercase letters,
    digits and single hyphens), else one `InputError` saying the rule."""
    from skillopt.skill.lint import NAME_RE

    if not 1 <= len(name) <= 64 or not NAME_RE.fullmatch(name):
        raise InputError(
            f"{name!r} is not a skill name: use 1-64 lowercase letters, digits and single "
            "hyphens (no leading, trailing or double hyphen), e.g. invoice-triage",
            field="NAME",
        )
    return name


def check_description(text: str) -> str:
    """`text`, stripped, when lint would accept it as a description (1-1024
    characters, no `<` or `>`, one line), else one `InputError`."""
    text = text.strip()
    problem = (
        "must not be empty"
        if not text
        else f"must be at most 1024 characters, got {len(text)}"
        if len(text) > 1024
        else "must not contain '<' or '>'"
        if "<" in text or ">" in text
        else "must be one line"
        if "\n" in text or "\r" in text
        else None
    )
    if problem:
        raise InputError(f"the description {problem}", field="--description")
    return text


def check_scorer(scorer: str) -> str:
    if scorer not in SCORERS:
        raise InputError(
            f"unknown scorer {scorer!r}; choose one of: {', '.join(SCORERS)}", field="--scorer"
        )
    return scorer


@cache
def template(name: str) -> string.Template:
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    return string.Template(text)


def _scalar(text: str) -> str:
    """`text` as one YAML scalar on one line (quoted only when YAML needs it)."""
    dumped = yaml.safe_dump(text, width=10_000, allow_unicode=True).rstrip("\n")
    return dumped.removesuffix("\n...")


def draw(
    name: str, root: Path, *, description: str | None = None, scorer: str | None = None
) -> Starter:
    """The files of skill `name` under `root`, checked and drawn (nothing written)."""
    name = check_name(name)
    description = check_description(DEFAULT_DESCRIPTION if description is None else description)
    scorer = check_scorer(scorer or DEFAULT_SCORER)
    skill = template("SKILL.md").substitute(name=name, description=_scalar(description))
    suite = template("suite.yaml").substitute(
        name=_scalar(name),
        suite_description=_scalar(SUITE_DESCRIPTION),
        scorer=_SCORER_LINES[scorer],
    )
    settings = template("skillopt.yaml").substitute(judge=_JUDGE_LINES[scorer == "judge"])
    files = (
        StarterFile(root / "skills" / name / "SKILL.md", skill),
        StarterFile(root / "tasks" / f"{name}.yaml", suite),
        StarterFile(root / "skillopt.yaml", settings),
    )
    return Starter(name, description, scorer, root, files)


def refuse_existing(starter: Starter, *, force: bool = False) -> None:
    """One `InputError` naming every file the starter would overwrite, unless `force`."""
    existing = starter.existing()
    if existing and not force:
        names = ", ".join(str(p) for p in existing)
        raise InputError(
            f"{'it exists' if len(existing) == 1 else 'they exist'}, and init overwrites "
            "nothing: pass --force to replace "
            + ("it" if len(existing) == 1 else "them")
            + ", or choose another NAME or DIR",
            path=names,
        )


def write(starter: Starter, *, force: bool = False) -> list[Path]:
    """Write the starter's files; an existing one is refused (naming each) unless
    `force`. Returns the paths written."""
    refuse_existing(starter, force=force)
    for f in starter.files:
        if f.path.is_symlink() or f.path.is_dir():
            raise InputError("is a link or a directory; init writes only files", path=f.path)
        f.path.parent.mkdir(parents=True, exist_ok=True)
        f.path.write_text(f.text, encoding="utf-8")
    return [f.path for f in starter.files]


@dataclass(frozen=True)
class Created:
    """What `create` wrote: the files, the suite's items per split, and the commands
    to run next (from the folder `cd` names, when it is not the current one)."""

    starter: Starter
    written: tuple[Path, ...]
    splits: dict[str, int]
    cd: str | None
    commands: tuple[str, ...]
    notes: tuple[str, ...]
    target: str = TARGET
    optimizer: str = "exemplars"


def create(
    name: str,
    root: str | Path = ".",
    *,
    description: str | None = None,
    scorer: str | None = None,
    force: bool = False,
) -> Created:
    """Draw, write and check a new skill's files under `root` (see the invariants):
    the skill lints without an error and the suite loads."""
    from skillopt.skill.lint import lint_skill
    from skillopt.suite.loader import load_suite

    starter = draw(name, Path(root), description=description, scorer=scorer)
    written = write(starter, force=force)
    errors = [p for p in lint_skill(starter.skill_dir) if p.severity == "error"]
    if errors:  # the templates and the checks above keep this from happening
        raise InputError(f"the new skill does not lint: {errors[0]}", path=starter.skill_dir)
    splits = load_suite(starter.suite_path).counts()
    here = Path(root).resolve() == Path.cwd().resolve()
    skill, suite = f"skills/{starter.name}", f"tasks/{starter.name}.yaml"
    commands = (
        f"skillopt eval {skill} --tasks {suite}",
        f"skillopt train {skill} --tasks {suite}",
    )
    notes = []
    if starter.scorer == "judge":
        notes.append(
            f"the judge scorer grades with {JUDGE_MODEL} (skillopt.yaml's `judge:`): set "
            f"{JUDGE_KEY}, or name another judge model there"
        )
    return Created(
        starter, tuple(written), splits, None if here else str(root), commands, tuple(notes)
    )
