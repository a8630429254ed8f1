"""The router harness: any model decides, from the skill listing alone, which skill it
would load for a task, as an agent does before it acts. It is the cheap stand-in for
an agent's choice, so a description can be scored (and trained) on a chat model
before paying for agent runs.

The model sees what Claude Code shows its model: `The following skills are available
for use with the Skill tool:` then `- <name>: <description>` lines (a `when_to_use`
joined to the description with ` - `; a skill with `disable-model-invocation` left
out), for the installed skills, the library's (`agent.library`) and the one under
test, sorted by name so the list does not favour it. A chat model gets the listing as
the system message (the same in every rollout of a skill) and the task as the user
message; a completion-style model (the embedded base model) gets it as a few-shot
text, one example request per skill, that it continues after `Output:`.

Invariants: the answer is a listed skill's name or `none`, read from any reply (a name
inside prose, quotes, backticks, any casing; an unknown name is `none`); an empty
reply or a failed call is an unscored rollout, never a crash. `skill_invoked` is
whether the model chose the skill under test. A change of either prompt bumps
`PROMPT_VERSION` (it is in every fingerprint).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skillopt.errors import InputError
from skillopt.harness.base import ShowsTask, Trajectory
from skillopt.harness.chat import ask
from skillopt.models.base import Model, SelfChecking
from skillopt.skill.document import Skill
from skillopt.skill.library import Library, load_library
from skillopt.suite.task import Task

PROMPT_VERSION = "1"
LISTING = "The following skills are available for use with the Skill tool:"
NONE = "none"
MAX_ENTRY = 1536  # Claude Code cuts each listed description (with when_to_use) here
INSTRUCTION = (
    "Before acting on the user's request you may load one of these skills with the "
    "Skill tool; you know each only by its name and description. Reply with the name "
    "of the one skill you would load for this request, exactly as listed, or `none` "
    "when no skill fits. Reply with the name alone."
)
NONE_EXAMPLE = "What is the capital of France?"  # the few-shot's request no skill fits


def entry(skill: Skill) -> tuple[str, str] | None:
    """(name, the listed text) of a skill as Claude Code lists it; None when it is not
    listed (`disable-model-invocation: true`)."""
    fm = skill.frontmatter
    if fm.get("disable-model-invocation") is True:
        return None
    text = skill.description
    when = fm.get("when_to_use")
    if isinstance(when, str) and when.strip():
        text = f"{text} - {when}"
    return skill.name, " ".join(text.split())[:MAX_ENTRY]


def listed(skill: Skill, library: Library) -> list[tuple[str, str]]:
    """The entries the model chooses among, sorted by name: the library's and the
    skill under test (none for the no-skill baseline)."""
    skills = [*library.skills, *([] if skill.is_empty else [skill])]
    found = [e for e in map(entry, skills) if e is not None]
    return sorted(found)


def listing(entries: Sequence[tuple[str, str]]) -> str:
    """The listing in Claude Code's words."""
    return "\n".join([LISTING, "", *(f"- {name}: {text}" for name, text in entries)])


def example_request(text: str) -> str:
    """A request for the few-shot: the listed text's first sentence."""
    first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    return first.rstrip(".!? ") or text


def few_shot(entries: Sequence[tuple[str, str]]) -> str:
    """The listing, then one worked example per skill (its first sentence as the
    request, its name as the answer) and one that no skill fits, in the cue's shape
    (`Input: … / Output: …`) that the embedded model continues."""
    from skillopt.models.local_prompt import format_example

    examples = [format_example(example_request(text), name) for name, text in entries]
    examples.append(format_example(NONE_EXAMPLE, NONE))
    head = "For each request, the skill to load (its name), or none."
    return "\n".join([listing(entries), "", head, "", *examples])


def read_choice(reply: str, names: Sequence[str]) -> str:
    """The skill a reply chooses: the first listed name (or `none`, `no skill`) it
    mentions as a word of its own, in any casing and whatever quotes it; `none` when
    it mentions none of them."""
    text = reply.strip().lower()
    by_lower = {n.lower(): n for n in names}
    if text.strip("`'\"*. ") in by_lower:
        return by_lower[text.strip("`'\"*. ")]
    words = sorted(by_lower, key=len, reverse=True)  # `pdf-tools` before `pdf`
    pattern = "|".join([*map(re.escape, words), "none", r"no\s+skill"])
    found = re.search(rf"(?<![\w-])({pattern})(?![\w-])", text)
    if found is None:
        return NONE
    return by_lower.get(found.group(1), NONE)


class RouterHarness:
    name = "router"
    version = "1"

    def __init__(self, model: Model, library: Library | None = None):
        self.model = model
        self.library = library if library is not None else Library()
        self.completion = isinstance(model, ShowsTask)  # a base model: the few-shot shape

    @classmethod
    def build(
        cls, settings: Any, target: Model | None, keep_dir: Path | None = None
    ) -> RouterHarness:
        """The registry's factory: the router asks the resolved target, with the
        library of `agent.library`."""
        if target is None:
            raise InputError("the router harness needs a target model", field="target")
        return cls(target, load_library(settings.agent.library))

    def fingerprint(self) -> dict[str, Any]:
        return {
            "harness": self.name,
            "version": self.version,
            "prompt": PROMPT_VERSION,
            "shape": "completion" if self.completion else "chat",
            "target": self.model.fingerprint(),
            **({"library": self.library.fingerprint()} if self.library.skills else {}),
        }

    def check(self, skills: Sequence[Skill] = ()) -> None:
        """A library skill named like a skill under test is refused; models that load
        something (the embedded model) do it now."""
        self.library = self.library.excluding(skills)
        self.library.check_against(skills)
        if isinstance(self.model, SelfChecking):
            self.model.check()

    def describe_target(self) -> str:
        return (
            f"The target is the model `{self.model.name}` acting as an agent's router: "
            "it sees only the names and descriptions of the installed skills (this one "
            f"and {len(self.library.skills)} others) and the task, and answers which "
            "skill it would load, or none. The answer is that choice; the body is "
            "never read, so only the description can change it."
        )

    def messages(self, skill: Skill, task: Task) -> list[dict[str, Any]]:
        entries = listed(skill, self.library)
        system = few_shot(entries) if self.completion else f"{listing(entries)}\n\n{INSTRUCTION}"
        return [{"role": "system", "content": system}, {"role": "user", "content": task.prompt}]

    def run(self, skill: Skill, task: Task) -> Trajectory:
        messages = self.messages(skill, task)
        names = [name for name, _ in listed(skill, self.library)]
        start = time.perf_counter()
        reply = ask(self.model, messages, start)
        if isinstance(reply, Trajectory):
            return reply
        said = reply.text or ""
        latency = time.perf_counter() - start
        if not said.strip():
            return Trajectory(
                messages=tuple(messages),
                error="the model's reply was empty: no skill chosen",
                error_kind="bad_reply",
                usage=reply.usage,
                cost=reply.cost,
                latency_s=latency,
                model_calls=reply.attempts,
            )
        choice = read_choice(said, names)
        return Trajectory(
            messages=(*messages, {"role": "assistant", "content": said}),
            answer=choice,
            usage=reply.usage,
            cost=reply.cost,
            latency_s=latency,
            model_calls=reply.attempts,
            skill_invoked=not skill.is_empty and choice == skill.name,
            info={"listed": names},
        )
