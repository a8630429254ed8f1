"""The world of `optimizer_benchmark.py`: three suites of its own making and a
scripted target for each, which behaves like a small model that learns only from
what the skill shows it.

Each suite has 40 items, 10 kinds × (train 2, val 1, test 1), written to a temp
directory by `write_suite` (never into the bundled examples):

- `codes` (part codes → `RT-0045`): a *completion-style base model*,
  `BaseModelTarget`, a `LocalModel` subclass that reads the embedded model's own
  prompt (`completion_prompt`: the skill, then the cue `Input: X` / `Output:`).
  It answers right only when, among the last 30 non-empty lines before the cue, a
  worked example in exactly the cue's shape has an input of the same kind;
  otherwise it repeats the last example's output, or copies the input when there
  is none. Being a `LocalModel`, whatever the embedded model tells skillopt about
  its template, this one tells too.
- `dates` (→ ISO `2024-03-05`): a chat model (the skill is its system prompt). A
  format rule (a backticked pattern such as `9999-99-99` or `YYYY-MM-DD`) fixes
  the unambiguous kinds, the three day-first kinds need a worked example of their
  kind (else it reads them month-first); with neither it answers `March 5, 2024`.
- `names` (→ `Smith, John`): a chat model that learns from worked examples in any
  shape (`A: x` / `B: y` lines, two backticked strings on a line, `x → y`); with
  an example of the kind it is right, with examples of other kinds it splits the
  name naively, with none it title-cases the input.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from skillopt.errors import InputError
from skillopt.models.base import Completion, Prompt, Usage
from skillopt.models.local import LocalModel
from skillopt.models.local_prompt import PROMPT_FORMAT, completion_prompt

WINDOW = 30  # non-empty lines before the cue a base-model target reads


@dataclass(frozen=True)
class Item:
    input: str
    expected: str
    kind: str
    split: str


@dataclass(frozen=True)
class SuiteSpec:
    name: str
    style: str  # completion | chat
    body: str
    items: tuple[Item, ...]

    def kind_of(self, text: str) -> str | None:
        return next((i.kind for i in self.items if i.input == text.strip()), None)

    def truth(self, text: str) -> str | None:
        return next((i.expected for i in self.items if i.input == text.strip()), None)


def _items(kinds: dict[str, Callable[[random.Random], tuple[str, str]]], seed: int):
    rng, out, seen = random.Random(seed), [], set()
    for kind, make in kinds.items():
        for split in ("train", "train", "val", "test"):
            while True:
                x, y = make(rng)
                if x not in seen:
                    break
            seen.add(x)
            out.append(Item(x, y, kind, split))
    return tuple(out)


def _code(rng: random.Random) -> tuple[str, int]:
    return "".join(rng.choice("BCDFGHKMPRT") for _ in range(2)), rng.randint(1, 999)


def _codes_kinds():
    def k(fmt):
        def make(rng):
            letters, n = _code(rng)
            return fmt(letters, n), f"{letters}-{n:04d}"

        return make

    return {
        "lower space": k(lambda a, n: f"{a.lower()} {n}"),
        "upper joined": k(lambda a, n: f"{a}{n}"),
        "underscore": k(lambda a, n: f"{a.capitalize()}_{n:03d}"),
        "dot": k(lambda a, n: f"{a.lower()}.{n}"),
        "hash": k(lambda a, n: f"#{a} {n:04d}"),
        "slash": k(lambda a, n: f"{a}/{n}"),
        "lower hyphen": k(lambda a, n: f"{a.lower()}-{n}"),
        "digits first": k(lambda a, n: f"{n} {a}"),
        "upper space": k(lambda a, n: f"{a} {n:03d}"),
        "colon": k(lambda a, n: f"{a.lower()}:{n}"),
    }


MONTHS = "January February March April May June July August September October November December"


def _dates_kinds():
    months = MONTHS.split()

    def k(fmt):
        def make(rng):
            y, m = rng.randint(1990, 2029), rng.randint(1, 12)
            d = rng.choice([x for x in range(1, 13) if x != m])  # day-first vs month-first differ
            return fmt(y, m, d, months[m - 1]), f"{y}-{m:02d}-{d:02d}"

        return make

    return {
        "long us": k(lambda y, m, d, name: f"{name} {d}, {y}"),
        "long eu": k(lambda y, m, d, name: f"{d} {name} {y}"),
        "short month": k(lambda y, m, d, name: f"{name[:3]} {d} {y}"),
        "year first": k(lambda y, m, d, name: f"{y}/{m:02d}/{d:02d}"),
        "compact": k(lambda y, m, d, name: f"{y}{m:02d}{d:02d}"),
        "dotted eu": k(lambda y, m, d, name: f"{d:02d}.{m:02d}.{y}"),  # needs an example
        "dashed eu": k(lambda y, m, d, name: f"{d}-{m}-{y}"),  # needs an example
        "short eu": k(lambda y, m, d, name: f"{d}.{m}.{y % 100:02d}"),  # needs an example
        "slashed us": k(lambda y, m, d, name: f"{m:02d}/{d:02d}/{y}"),
        "ordinal": k(lambda y, m, d, name: f"the {d}{_th(d)} of {name} {y}"),
    }


def _th(day: int) -> str:
    return {1: "st", 2: "nd", 3: "rd"}.get(day if day < 20 else day % 10, "th")


DAY_FIRST = {"dotted eu", "dashed eu", "short eu"}
FIRST = "john mary peter anna louis clara henry alice oscar emma paul julia".split()
LAST = "smith brown taylor wilson clark lewis walker young king wright hill scott".split()


def _names_kinds():
    def pick(rng):
        return rng.choice(FIRST), rng.choice(LAST)

    def plain(rng):
        f, last = pick(rng)
        return f"{f} {last}", f"{last.title()}, {f.title()}"

    def caps(rng):
        f, last = pick(rng)
        return f"{f.upper()} {last.upper()}", f"{last.title()}, {f.title()}"

    def three(rng):
        f, m = rng.sample(FIRST, 2)
        last = rng.choice(LAST)
        return f"{f.title()} {m.title()} {last.title()}", f"{last.title()}, {f.title()} {m.title()}"

    def particle(rng):
        f, last = pick(rng)
        p = rng.choice(["van", "de", "von", "da"])
        return f"{f} {p} {last}", f"{p} {last.title()}, {f.title()}"

    def comma(rng):
        f, last = pick(rng)
        return f"{last}, {f}", f"{last.title()}, {f.title()}"

    def title(rng):
        f, last = pick(rng)
        t = rng.choice(["Dr.", "Prof.", "Mr.", "Ms."])
        return f"{t} {f.title()} {last.title()}", f"{last.title()}, {f.title()}"

    def hyphen(rng):
        a, b = rng.sample(FIRST, 2)
        last = rng.choice(LAST)
        return f"{a}-{b} {last}", f"{last.title()}, {a.title()}-{b.title()}"

    def apostrophe(rng):
        f = rng.choice(FIRST)
        last = rng.choice(["o'brien", "o'neill", "d'arcy", "o'connor", "o'hara"])
        fixed = last[:2].upper() + last[2:].title()
        return f"{f} {last}", f"{fixed}, {f.title()}"

    def initial(rng):
        f, last = pick(rng)
        i = rng.choice("abcdefghjkmnprstw")
        return f"{f} {i}. {last}", f"{last.title()}, {f.title()} {i.upper()}."

    def suffix(rng):
        f, last = pick(rng)
        sfx = rng.choice(["jr.", "sr.", "iii"])
        fixed = sfx.upper() if sfx == "iii" else sfx.capitalize()
        return f"{f} {last} {sfx}", f"{last.title()}, {f.title()}, {fixed}"

    return {
        "initial": initial,
        "suffix": suffix,
        "plain": plain,
        "capitals": caps,
        "three words": three,
        "particle": particle,
        "comma": comma,
        "title": title,
        "hyphen": hyphen,
        "apostrophe": apostrophe,
    }


def suites() -> dict[str, SuiteSpec]:
    return {
        "codes": SuiteSpec(
            "codes",
            "completion",
            "# Part codes\n\nRewrite the part code you are given in the catalogue form "
            "and reply with the code only.\n",
            _items(_codes_kinds(), 11),
        ),
        "dates": SuiteSpec(
            "dates",
            "chat",
            "# Dates\n\nRewrite the date you are given in the house format and reply "
            "with the date only.\n",
            _items(_dates_kinds(), 12),
        ),
        "names": SuiteSpec(
            "names",
            "chat",
            "# Names\n\nRewrite the person's name you are given the way the directory "
            "lists it and reply with the name only.\n",
            _items(_names_kinds(), 13),
        ),
    }


def write_suite(spec: SuiteSpec, root: Path) -> tuple[Path, Path]:
    skill = root / "skills" / spec.name
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: {spec.name}\ndescription: Rewrite {spec.name} in the house form. Use "
        f"when a value must be written the way the records keep it.\n---\n{spec.body}",
        encoding="utf-8",
    )
    items = [
        {
            "id": f"{spec.name}-{i:02d}",
            "input": it.input,
            "expected": it.expected,
            "split": it.split,
        }
        for i, it in enumerate(spec.items)
    ]
    suite = root / "tasks" / f"{spec.name}.yaml"
    suite.parent.mkdir(parents=True, exist_ok=True)
    suite.write_text(
        yaml.safe_dump({"name": spec.name, "scorer": "exact", "items": items}, sort_keys=False),
        encoding="utf-8",
    )
    return skill, suite


# ---------------------------------------------------------------------------- targets
def pattern(text: str) -> str:
    """Character pattern: 9 a digit, A a capital, a a small letter, the rest kept."""
    return "".join(
        "9" if c.isdigit() else ("A" if c.isupper() else "a") if c.isalpha() else c for c in text
    )


_BACKTICKED = re.compile(r"`([^`\n]+)`")
LABELLED = re.compile(r"^\s*([A-Za-z][\w ]{0,24}):[ \t]?(.*)$")


def example_pairs(text: str, labels: tuple[str, str] | None = None) -> list[tuple[str, str]]:
    """Worked examples in `text`: two consecutive `A: x` / `B: y` lines (only the
    labels `labels` when given), and, unless labels are given, a line pairing two
    backticked strings or `x → y`."""
    lines = text.splitlines()
    out = []
    for first, second in zip(lines, lines[1:]):
        a, b = LABELLED.match(first), LABELLED.match(second)
        if a and b and a.group(2).strip() and b.group(2).strip():
            if labels is None or (a.group(1), b.group(1)) == labels:
                out.append((a.group(2).strip(), b.group(2).strip()))
    if labels is None:
        for line in lines:
            ticks = _BACKTICKED.findall(line)
            if len(ticks) >= 2:
                out.append((ticks[0], ticks[-1]))
            elif m := re.search(r"^\W*(.+?)\s*(?:→|->|=>)\s*(.+?)\s*$", line):
                out.append((m.group(1), m.group(2)))
    return out


def rule_patterns(text: str) -> set[str]:
    """Format rules a chat model understands: backticked patterns of 9/A/a (or
    Y/M/D) and punctuation."""
    out = set()
    for tick in _BACKTICKED.findall(text):
        norm = re.sub("[YMD]", "9", tick)
        if re.fullmatch(r"[9Aa][9Aa\-/.:, ]*", norm) and "9" in norm:
            out.add(norm)
    return out


class BaseModelTarget(LocalModel):
    """A completion-style base model: the embedded model's prompt and template, a
    scripted mind. Being a `LocalModel`, whatever the embedded model tells skillopt
    about its template it tells for this one too."""

    def __init__(self, spec: SuiteSpec):
        try:
            super().__init__()
        except InputError:  # no `local` extra: the attributes its methods read
            self.max_tokens, self.temperature, self.n_ctx = 48, 0.0, 2048
            self.n_threads, self.prefix_reuse, self._sha, self.calls = 1, True, "none", 0
        self.spec = spec
        self.name = f"scripted/base-{spec.name}"

    def fingerprint(self) -> dict:
        return {"name": self.name, "format": PROMPT_FORMAT}

    def check(self) -> None:
        """Nothing to load."""

    def complete(self, prompt: Prompt, **params) -> Completion:
        text = completion_prompt(prompt)
        answer = self.answer(text)
        return Completion(
            text=answer,
            usage=Usage(len(text.split()), len(answer.split())),
            cost=0.0,
            model=self.name,
            finish_reason="stop",
        )

    def answer(self, text: str) -> str:
        lines = text.rstrip().splitlines()
        cue, ask = (
            LABELLED.match(lines[-1]),
            LABELLED.match(lines[-2]) if len(lines) > 1 else None,
        )
        if not cue or not ask or cue.group(2).strip():
            return ""
        task, labels = ask.group(2).strip(), (ask.group(1), cue.group(1))
        seen = [line for line in lines[:-2] if line.strip()][-WINDOW:]
        examples = example_pairs("\n".join(seen), labels)
        kind = self.spec.kind_of(task)
        if kind is not None and any(self.spec.kind_of(x) == kind for x, _ in examples):
            return self.spec.truth(task) or task
        return examples[-1][1] if examples else task


def chat_target(spec: SuiteSpec) -> Callable[[list[dict]], str]:
    def answer(messages: list[dict]) -> str:
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        task = messages[-1]["content"].strip()
        kind, truth = spec.kind_of(task), spec.truth(task) or task
        examples = example_pairs(system)
        if kind is not None and any(spec.kind_of(x) == kind for x, _ in examples):
            return truth
        if spec.name == "dates":
            if pattern(truth) in rule_patterns(system):
                if kind not in DAY_FIRST:
                    return truth
                y, m, d = truth.split("-")
                return f"{y}-{d}-{m}"  # read month-first
            y, m, d = truth.split("-")
            return f"{MONTHS.split()[int(m) - 1]} {int(d)}, {y}"
        if examples:  # names: the general idea from other kinds, a naive split
            parts = task.split()
            return f"{parts[-1].capitalize()}, {' '.join(p.capitalize() for p in parts[:-1])}"
        return task.title()

    return answer
