"""A scripted optimizer model that behaves like a careful LLM: it follows only what
the prompt shows. `CarefulOptimizer()(messages) -> str`, deterministic, registered
with `register_model` by `optimizer_benchmark.py`.

It looks for content rather than headings where it can. What it relies on:

- what is asked: the first key of the last line of the prompt that opens a JSON
  object (`{"edits": …`, `{"guidance": …`, `{"notes": …`); a repair re-ask is
  answered like the original request;
- the current skill: the first fenced block tagged `markdown` or `md`; text
  outside such blocks is "the rest of the prompt";
- the tasks shown: a line ending in `:` whose label mentions input / expected /
  answer (or output), followed by a fenced block (or a value after the colon); a
  `Task <id>` heading names the task; `pass` / `fail` on a line starting with
  `Score` says whether it failed (without one: answer ≠ expected). An input that
  holds a whole literal prompt is cut to the value of its last `Label: value`
  line before a final, empty `Label:` cue line;
- the budget: `at most N edits` (3 when absent); content bounds: a sentence that
  mentions an edit or a step and a number of `lines` / `characters` — per step
  when it says per step / each step / in total / all edits, else per edit;
- the target's template, outside the skill: a label with a placeholder (`<…>`,
  `{…}`, `[…]`, `…`, `...`, `X`; not about the skill, system or instructions)
  next to a second label that is empty or a placeholder (`Input: <task>` /
  `Output:`, on two lines or joined by ` / ` or backticks), or a literal prompt
  ending in `Label: value` then an empty `Label:` line. Found, it writes examples
  as `A: input` / `B: answer` (blank line between); not found, as a list of
  ``- For `input`, answer `expected`.``;
- what was tried: an example or rule whose first 60 characters (whitespace
  collapsed) appear in the rest of the prompt (the memory of rejected edits) is
  not proposed again, nor an example for an input the skill already has one for.

What it answers:

- failed tasks: first a format rule (``- Always answer in the form `P` …``, in
  `## Rules`) when at least 2 and 60% of the failed tasks' expected answers share
  one character pattern (9 digit, A capital, a small letter) the skill lacks;
  then worked examples (at most 8) in `## Examples`, spread evenly over the edits
  the budget leaves — several to an edit when the budget is short, within the
  stated bounds;
- only passed tasks: no edit;
- slow update: reads the counts at the start of lines `Improved (n)` /
  `Regressed: n` (…) and the ``expected '…'`` values of the comparison; when the
  counts show nothing improved or regressed, or the two skills shown are the
  same, no guidance; asked for worked examples (a completion-style target), the
  still-failing and regressed tasks of the comparison as examples in the target's
  template (at most 6); else the format rule (if the skill lacks it) and one general
  bullet per direction that moved (with no counts found: the first one);
- notes: counts accepted / rejected / no-candidate on the lines that name a
  `step N`, and gives one line of advice.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass

from optimizer_world import LABELLED, example_pairs, pattern

MAX_EXAMPLES = 8  # worked examples per reply


_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_PLACE = r"(?:<[^<>\n]{1,40}>|\{\{?[^{}\n]{1,40}\}?\}|\[[^\[\]\n]{1,40}\]|…|\.\.\.|X)"
_LABEL = re.compile(rf"(?<![\w'])([A-Z][A-Za-z]{{0,20}}):(?:[ \t]*({_PLACE}))?")
_LITERAL_CUE = re.compile(
    r"^[ \t]*([A-Z][A-Za-z]{0,20}): [^\n]+\n[ \t]*([A-Z][A-Za-z]{0,20}):[ \t]*$", re.MULTILINE
)
_JOIN = re.compile(r"^[\s`/]*(?:\\n)?[\s`/]*$")


def norm(text: str | None) -> str:
    return " ".join((text or "").split())


@dataclass
class Shown:
    id: str = ""
    input: str | None = None
    expected: str | None = None
    answer: str | None = None
    passed: bool | None = None

    @property
    def failed(self) -> bool:
        if self.passed is not None:
            return not self.passed
        return norm(self.answer) != norm(self.expected)


class CarefulOptimizer:
    """`(messages) -> str`: replies derived only from the prompt (see the module
    docstring for what it reads). `log` holds (kind, prompt, reply) per call."""

    def __init__(self):
        self.log: list[tuple[str, str, str]] = []

    def __call__(self, messages: list[dict]) -> str:
        prompt = messages[1]["content"] if len(messages) > 2 else messages[-1]["content"]
        formats = re.findall(r'(?m)^\s*\{\s*"(\w+)"\s*:', prompt)
        kind = formats[-1] if formats else "edits"
        if kind == "guidance":
            reply = json.dumps({"guidance": self.guidance(prompt)})
        elif kind == "notes":
            reply = json.dumps({"notes": self.notes(prompt)})
        else:
            reply = json.dumps({"edits": self.edits(prompt)})
        self.log.append((kind, messages[-1]["content"], reply))
        return reply

    # -- reading the prompt
    @staticmethod
    def skills(prompt: str) -> list[str]:
        return [
            m.group(2) for m in _FENCE.finditer(prompt) if m.group(1).strip() in ("markdown", "md")
        ]

    @staticmethod
    def rest(prompt: str) -> str:
        return _FENCE.sub(
            lambda m: "" if m.group(1).strip() in ("markdown", "md") else m.group(0), prompt
        )

    @staticmethod
    def template(rest: str) -> tuple[str, str] | None:
        tokens = list(_LABEL.finditer(rest))
        for t1, t2 in zip(tokens, tokens[1:]):
            place = (t1.group(2) or "").lower()
            if not place or any(w in place for w in ("skill", "system", "instruction")):
                continue
            if t1.group(1) == t2.group(1) or not _JOIN.match(rest[t1.end() : t2.start()]):
                continue
            if t2.group(2) or re.match(r"[ \t]*(?:`|\n|$)", rest[t2.end() :]):
                return t1.group(1), t2.group(1)
        for m in _LITERAL_CUE.finditer(rest):  # a literal prompt, ending in its cue
            if m.group(1) != m.group(2):
                return m.group(1), m.group(2)
        return None

    @staticmethod
    def tasks(prompt: str) -> list[Shown]:
        out: list[Shown] = []
        lines, i, task_id = prompt.splitlines(), 0, ""
        while i < len(lines):
            line = lines[i].strip()
            if m := re.match(r"#*\s*task\s+(\S+)", line, re.IGNORECASE):
                task_id = m.group(1).strip("`:")
            low = line.lower()
            field = None
            if ":" in line and not line.startswith("```"):
                head = low.split(":", 1)[0]
                field = (
                    "expected"
                    if "expected" in head
                    else "input"
                    if "input" in head
                    else "answer"
                    if "answer" in head or "output" in head
                    else None
                )
            if (
                field
                and low.endswith(":")
                and i + 1 < len(lines)
                and lines[i + 1].startswith("```")
            ):
                j = i + 2
                while j < len(lines) and not lines[j].startswith("```"):
                    j += 1
                value, i = "\n".join(lines[i + 2 : j]), j
            elif field and not low.endswith(":"):
                value = line.split(":", 1)[1].strip().strip("`")
            else:
                value = None
            if value is not None and field is not None:
                if field == "input" and (not out or out[-1].input is not None):
                    out.append(Shown(task_id))
                if out:
                    setattr(out[-1], field, _cue_value(value) if field == "input" else value)
            elif low.startswith("score") and out and (m := re.search(r"\b(pass|fail)\b", low)):
                out[-1].passed = m.group(1) == "pass"
            i += 1
        return [t for t in out if t.input is not None and t.expected is not None]

    # -- replies
    def edits(self, prompt: str) -> list[dict]:
        skill, outside = (self.skills(prompt) or [""])[0], self.rest(prompt)
        rest = norm(outside)
        failed = [t for t in self.tasks(outside) if t.failed]
        if not failed:
            return []
        m = re.search(r"at most (\d+)\s+(?:\w+\s+){0,2}edits", outside)
        budget = int(m.group(1)) if m else 3
        per_edit, per_step = _bounds(outside)
        template = self.template(outside)
        edits = []
        rule = _rule([t.expected or "" for t in failed], skill)
        if rule and not _tried(rule, rest):
            edits.append(_edit("Rules", rule, "the expected answers share one form", failed))
        have = {x for x, _ in example_pairs(skill)}
        examples: list[tuple[str, Shown]] = []
        for t in failed:
            x, y = (t.input or "").strip(), (t.expected or "").strip()
            text = (
                f"{template[0]}: {x}\n{template[1]}: {y}"
                if template
                else f"- For `{x}`, answer `{y}`."
            )
            if x in have or _tried(text, rest) or any(x == s.input for _, s in examples):
                continue
            examples.append((text, t))
        examples = examples[:MAX_EXAMPLES]
        sep = "\n\n" if template else "\n"
        slots = max(1, budget - len(edits))
        per = -(-len(examples) // slots)  # spread over the edits the budget leaves
        total = size("\n".join(e["content"] for e in edits))
        chunks: list[list[tuple[str, Shown]]] = []
        for text, t in examples:
            grown = {k: total[k] + v for k, v in size(text).items()}
            if any(grown[k] > v for k, v in per_step.items()):
                break
            last = chunks[-1] if chunks else None
            if (
                last
                and len(last) < per
                and _fits(sep.join([c for c, _ in last] + [text]), per_edit)
            ):
                last.append((text, t))
            elif len(chunks) < slots and _fits(text, per_edit):
                chunks.append([(text, t)])
            else:
                continue
            total = grown
        for chunk in chunks:
            content = sep.join(c for c, _ in chunk)
            edits.append(_edit("Examples", content, "worked examples", [s for _, s in chunk]))
        return edits[:budget]

    def guidance(self, prompt: str) -> str:
        counts = {
            k.lower(): int(n)
            for k, n in re.findall(
                r"(?im)^\W*(improved|regressed|still failing|still passing)\b[^\n\d]{0,4}(\d+)",
                prompt,
            )
        }
        skills = self.skills(prompt)
        same = len(skills) >= 2 and skills[0].strip() == skills[1].strip()
        moved = counts.get("improved", 0) + counts.get("regressed", 0)
        if same or (counts and not moved):
            return ""
        expected = [
            m.group(2) for m in re.finditer(r"expected[:\s]+(['\"`])(.*?)\1", self.rest(prompt))
        ]
        if "guidance as worked examples" in prompt:  # what the prompt asks for, followed
            return self.example_guidance(prompt)
        bullets = []
        rule = _rule(expected, skills[0] if skills else "")
        if rule:
            bullets.append(rule)
        if counts.get("improved", 0) or not counts:
            bullets.append(
                "- Answer an input the way the worked example of the same form is answered."
            )
        if counts.get("regressed", 0):
            bullets.append("- Do not carry an example over to inputs of a different form.")
        return "\n".join(bullets)

    def example_guidance(self, prompt: str) -> str:
        """Guidance as worked examples, as a completion-style target's slow update asks:
        the comparison's still-failing and regressed tasks (`- id: input '…' →
        expected '…'`), in the target's template, one per input, at most 6."""
        rest = self.rest(prompt)
        template = self.template(rest)
        have = {x for x, _ in example_pairs((self.skills(prompt) or [""])[0])}
        out: list[str] = []
        group = ""
        for line in rest.splitlines():
            if m := re.match(r"^(Improved|Regressed|Still failing|Still passing) \(\d+\):", line):
                group = m.group(1)
                continue
            m = re.match(r"^\s*- \S+: input (['\"])(.*?)\1 → expected (['\"])(.*?)\3", line)
            if not m or group not in ("Regressed", "Still failing"):
                continue
            x, y = _cue_value(m.group(2)).strip(), m.group(4).strip()
            if x in have:
                continue
            have.add(x)
            out.append(
                f"{template[0]}: {x}\n{template[1]}: {y}"
                if template
                else f"- For `{x}`, answer `{y}`."
            )
            if len(out) == 6:
                break
        return ("\n\n" if template else "\n").join(out)

    def notes(self, prompt: str) -> str:
        m = re.search(r"epoch\s+(\d+)", prompt, re.IGNORECASE)
        history = "\n".join(x for x in prompt.splitlines() if re.search(r"(?i)\bstep\s+\d+", x))
        words = Counter(re.findall(r"\b(accepted|rejected|no_candidate|no candidate)\b", history))
        accepted, rejected = words["accepted"], words["rejected"]
        none = words["no_candidate"] + words["no candidate"]
        advice = (
            "- Worked examples for forms that still fail are what moved the score; add more."
            if accepted
            else "- Nothing was kept: try examples of other forms, or fewer at a time."
        )
        epoch = m.group(1) if m else "?"
        return (
            f"- Epoch {epoch}: {accepted} accepted, {rejected} rejected, {none} without a "
            f"candidate.\n{advice}"
        )


def _cue_value(value: str) -> str:
    """A task input shown as the target's whole literal prompt: the value of its last
    `Label: value` line before a final empty `Label:` cue line."""
    lines = [line for line in value.strip().splitlines() if line.strip()]
    if len(lines) >= 2 and re.fullmatch(r"[A-Za-z][\w ]{0,24}:", lines[-1].strip()):
        m = LABELLED.match(lines[-2])
        if m and m.group(2).strip():
            return m.group(2).strip()
    return value


def _tried(text: str, rest: str) -> bool:
    """Shown elsewhere in the prompt (memory cuts long edits: their first 60
    characters are enough to recognise one's own edit)."""
    return norm(text)[:60] in rest


def _rule(expected: list[str], skill: str) -> str | None:
    shapes = Counter(pattern(e) for e in expected if e)
    if not shapes:
        return None
    shape, n = shapes.most_common(1)[0]
    if n < 2 or n < 0.6 * len(expected) or f"`{shape}`" in skill:
        return None
    return (
        f"- Always answer in the form `{shape}` (9 is a digit, A a capital letter, a a small "
        "letter)."
    )


def _bounds(prompt: str) -> tuple[dict, dict]:
    per_edit: dict[str, int] = {}
    per_step: dict[str, int] = {}
    for sentence in re.split(r"(?<=[.;])\s+|\n", prompt):
        low = sentence.lower()
        if "edit" not in low and "step" not in low:
            continue
        for n, unit in re.findall(r"(\d+)\s+(?:non-empty\s+)?(lines?|characters|chars)\b", low):
            unit = "lines" if unit.startswith("line") else "chars"
            bucket = (
                per_step
                if re.search(r"per step|each step|in total|a step|all edits", low)
                else per_edit
            )
            bucket[unit] = min(int(n), bucket.get(unit, int(n)))
    return per_edit, per_step


def size(text: str) -> dict:
    return {"lines": len([x for x in text.splitlines() if x.strip()]), "chars": len(text)}


def _fits(text: str, bound: dict) -> bool:
    have = size(text)
    return all(have[k] <= v for k, v in bound.items())


def _edit(section: str, content: str, why: str, evidence: list[Shown]) -> dict:
    return {
        "op": "add",
        "anchor": None,
        "section": section,
        "content": content,
        "rationale": why,
        "evidence": [t.id for t in evidence if t.id],
    }
