"""The command harness: any program as the agent, configured as an argv template.

    command:
      argv: ["my-agent", "--skill", "{skill_dir}", "--task", "{task_file}"]
      output: stdout            # or a file the program writes, relative to the workspace

Placeholders: {workspace} (the cwd), {skill_dir} (the installed skill; an empty
directory for the no-skill baseline), {skill_file}, {skill_name}, {task_file} (the
prompt, outside the workspace), {task_id}, {prompt}, {model} (the target, or ''),
{output_file} (the absolute path of `output` when it is a file) and {steps_file}: a
file where the program may write JSON lines of the steps it took, which the
optimizer then reads. `{{` and `}}` are literal braces. The same values are in the
environment as SKILLOPT_WORKSPACE, SKILLOPT_SKILL_DIR, SKILLOPT_TASK_FILE, … .

A non-zero exit is unscored, with the tail of stderr.
"""

from __future__ import annotations

import json
import shlex
import string
from collections.abc import Sequence
from pathlib import Path

from skillopt._util.text import clip
from skillopt.config import Settings
from skillopt.errors import InputError
from skillopt.harness.agent import AgentHarness
from skillopt.harness.agent_output import CLIPPED, STEP_OUTPUT_LIMIT, JsonObject
from skillopt.harness.base import Trajectory
from skillopt.harness.process import ProcessResult
from skillopt.harness.workspace import Workspace, install_name
from skillopt.skill.document import SKILL_FILE, Skill
from skillopt.suite.task import Task

PLACEHOLDERS = (
    "workspace",
    "skill_dir",
    "skill_file",
    "skill_name",
    "task_file",
    "task_id",
    "prompt",
    "model",
    "output_file",
    "steps_file",
)
MAX_STEPS = 200


class CommandHarness(AgentHarness):
    name = "command"
    binary_label = "the command"
    install_hint = ""

    def __init__(self, settings: Settings, *, keep_dir: Path | None = None):
        conf = settings.command
        if not conf.argv:
            raise InputError(
                "the command harness needs `command.argv` in skillopt.yaml, e.g. "
                '["my-agent", "--skill", "{skill_dir}", "--task", "{task_file}"]',
                field="command.argv",
            )
        argv = shlex.split(conf.argv) if isinstance(conf.argv, str) else list(conf.argv)
        if not argv:
            raise InputError("must name a program", field="command.argv")
        for i, part in enumerate(argv):
            problem = _template_problem(part)
            if problem:
                raise InputError(f"{problem} in {part!r}", field=f"command.argv[{i}]")
        out = conf.output
        if out != "stdout" and (
            not out.strip() or Path(out).is_absolute() or ".." in Path(out).parts
        ):
            raise InputError(
                "must be 'stdout' or a path relative to the workspace", field="command.output"
            )
        super().__init__(settings, argv[0], keep_dir=keep_dir)
        self.conf = conf
        self.template = argv
        self.skills_dir = conf.skills_dir
        self.model = settings.target or ""
        self.binary_label = f"`{argv[0]}`"

    @classmethod
    def build(
        cls, settings: Settings, target: object = None, keep_dir: Path | None = None
    ) -> CommandHarness:
        """The registry's factory: the CLI is handed `settings.target` by name."""
        return cls(settings, keep_dir=keep_dir)

    def fingerprint(self) -> JsonObject:
        # the program's own version string is not ours to probe; `command.version` is
        return {
            "harness": self.name,
            "version": self.version,
            "argv": self.template,
            "output": self.conf.output,
            "skills_dir": self.conf.skills_dir,
            "program_version": self.conf.version,
            "model": self.model,
            "invoke": self.agent.invoke,
        }

    def describe_target(self) -> str:
        """The program, its model, where the skill is installed and what it answers
        with; how the program uses the skill is its own business."""
        answer = (
            "what it prints on stdout"
            if self.conf.output == "stdout"
            else f"the file `{self.conf.output}` it writes"
        )
        text = (
            f"The target is the program `{self.template[0]}` (the command harness) "
            + (f"running the model `{self.model}`" if self.model else "with no model named")
            + ", in a fresh workspace for each task. The skill is installed there as "
            f"`{self.skills_dir}/<name>/SKILL.md` (frontmatter and body, with its "
            "supporting files), and the task is its prompt; its answer is "
            f"{answer}. How it finds and uses the skill is up to the program: an agent "
            "usually sees only the skill's name and description (the frontmatter, which "
            "edits of the body cannot change) and decides from the description whether to "
            "load the skill and read the body."
        )
        if self.agent.invoke == "explicit":
            text += f" In this run the prompt starts with `{self.invoke_prefix}<name> `."
        return text

    def check(self, skills: Sequence[Skill] = ()) -> None:
        # the program's skill directories are its own business: only the binary is checked
        self._resolved = self.resolve_binary()

    def values(self, ws: Workspace, skill: Skill, task: Task) -> dict[str, str]:
        task_file = ws.io / "task.md"
        if not task_file.exists():
            task_file.write_text(self.prompt(skill, task), encoding="utf-8")
        if ws.skill_dir is None:  # the no-skill baseline: an empty directory
            skill_dir = ws.io / "no-skill"
            skill_dir.mkdir(exist_ok=True)
            skill_file = ""
        else:
            skill_dir = ws.skill_dir
            skill_file = str(ws.skill_dir / SKILL_FILE)
        output = "" if self.conf.output == "stdout" else str(ws.path / self.conf.output)
        return {
            "workspace": str(ws.path),
            "skill_dir": str(skill_dir),
            "skill_file": skill_file,
            "skill_name": "" if skill.is_empty else install_name(skill),
            "task_file": str(task_file),
            "task_id": task.id,
            "prompt": self.prompt(skill, task),
            "model": self.model,
            "output_file": output,
            "steps_file": str(ws.io / "steps.jsonl"),
        }

    def argv(self, ws: Workspace, skill: Skill, task: Task) -> list[str]:
        values = self.values(ws, skill, task)
        argv = [part.format_map(values) for part in self.template]
        argv[0] = self.executable()
        return argv

    def env(self, ws: Workspace, skill: Skill, task: Task) -> dict[str, str]:
        env = super().env(ws, skill, task)
        env.update(
            {
                f"SKILLOPT_{k.upper()}": v
                for k, v in self.values(ws, skill, task).items()
                if k != "prompt"
            }
        )
        return env

    def parse(self, result: ProcessResult, ws: Workspace, skill: Skill, task: Task) -> Trajectory:
        steps = read_steps(ws.io / "steps.jsonl")
        if result.returncode not in (0, None):
            traj = self.failure(result, default_kind="command_error")
            return Trajectory(error=traj.error, error_kind=traj.error_kind, steps=steps)
        if self.conf.output == "stdout":
            answer = result.stdout
        else:
            path = ws.path / self.conf.output
            if not path.is_file():
                return Trajectory(
                    error=f"{self.binary_label} exited 0 but wrote no "
                    f"{self.conf.output} in the workspace",
                    error_kind="bad_output",
                    steps=steps,
                )
            answer = path.read_text(encoding="utf-8", errors="replace")
        return Trajectory(answer=answer.strip("\n"), steps=steps, model_calls=1)


def read_steps(path: Path) -> tuple[JsonObject, ...]:
    """The program's own JSON-lines record of its steps, if it wrote one."""
    if not path.is_file():
        return ()
    steps: list[JsonObject] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines()[:MAX_STEPS]:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            steps.append(
                {
                    k: clip(v, STEP_OUTPUT_LIMIT, CLIPPED) if isinstance(v, str) else v
                    for k, v in obj.items()
                }
            )
    return tuple(steps)


def _template_problem(part: str) -> str | None:
    """What is wrong with one argv template part, or None. Every part is also filled
    in once with stand-in values, so a template that passes here cannot fail at task
    time (a placeholder nested in a format spec, a spec a string does not take)."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(part) if f is not None]
    except ValueError as exc:
        return f"bad template ({exc}; write {{{{ and }}}} for literal braces)"
    known = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
    for f in fields:
        if f not in PLACEHOLDERS:
            return f"unknown placeholder {{{f}}} (known: {known})"
    try:
        part.format_map(dict.fromkeys(PLACEHOLDERS, "x"))
    except KeyError as exc:
        return f"unknown placeholder {{{exc.args[0]}}} (known: {known})"
    except (ValueError, IndexError) as exc:
        return (
            f"bad template ({exc}); placeholders take no format spec or conversion, "
            "write {{ and }} for literal braces"
        )
    return None
