"""What the agent harnesses (claude-code, codex, command) share: the binary check,
the isolated workspace per task, the scrubbed environment, the process run and the
keeping or removal of workspaces after scoring.

Contract for a subclass: a `build(settings, target, keep_dir)` class method (the
registry's factory), `skills_dir` (where the agent looks for skills in its cwd),
`env_names` / `env_prefixes` (what it needs from the environment), `argv()` and
`parse()`. `parse` turns a finished process into a `Trajectory` and never raises:
an output it cannot read is an unscored error, never a score.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from skillopt._util.text import tail
from skillopt.config import SELF_RUN_PROVIDERS, Settings
from skillopt.errors import HarnessError, InputError
from skillopt.harness import dumpable, process
from skillopt.harness.agent_output import JsonObject, classify
from skillopt.harness.base import Trajectory
from skillopt.harness.process import ProcessResult
from skillopt.harness.workspace import Workspace, install_name
from skillopt.skill.document import SKILL_FILE, Skill
from skillopt.skill.library import load_library
from skillopt.suite.task import Task

# variables that point a program at the user's own config and data: left out when
# the agent gets a private HOME, so it falls back to that HOME's
HOME_POINTERS = ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME")


def cli_model(target: str | None, harness: str, prefixes: tuple[str, ...]) -> str | None:
    """The `--model` value for an agent CLI: None (the CLI's default) for no target
    or 'default'; a litellm-style provider prefix the CLI would not know is dropped."""
    if not target or target == "default":
        return None
    provider = target.split("/", 1)[0] if "/" in target else ""
    if provider in SELF_RUN_PROVIDERS:
        raise InputError(
            f"{target!r} is a model skillopt runs itself, but the {harness} "
            "harness hands the target to its CLI as --model: pass --target with a "
            "model that CLI knows, or --target default for the CLI's own",
            field="target",
        )
    if provider in prefixes:
        return target.split("/", 1)[1]
    return target


class AgentHarness:
    """Base of the harnesses that run an agent program in a workspace."""

    name = "agent"
    version = "2"  # 2: the installed SKILL.md holds no protection markers
    binary_label = "agent"
    skills_dir = ".agents/skills"
    env_names: tuple[str, ...] = ()
    env_prefixes: tuple[str, ...] = ()
    install_hint = ""

    def __init__(self, settings: Settings, binary: str, *, keep_dir: Path | None = None):
        """`keep_dir`: where kept workspaces go (a training run keeps them in its own
        directory); by default `<run_dir>/workspaces`."""
        self.settings = settings
        self.agent = settings.agent
        self.binary = binary
        # absolute before the harness is copied to a Ray worker, whose working
        # directory is not this process's
        self.keep_dir = (
            Path(keep_dir).resolve()
            if keep_dir is not None
            else Path(settings.run_dir).resolve() / "workspaces"
        )
        self.library = load_library(settings.agent.library)
        self.cli_version: str | None = None
        self._resolved: str | None = None
        self._open: dict[Path, tuple[Workspace, str]] = {}
        self._lock = threading.Lock()
        self._cancelled = threading.Event()

    def __getstate__(self) -> dict[str, object]:
        """Picklable (a Ray worker gets a copy): no open workspaces, a fresh lock
        and cancel flag there."""
        state = self.__dict__.copy()
        state["_open"] = {}
        del state["_lock"], state["_cancelled"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._cancelled = threading.Event()

    # -- the Harness contract ------------------------------------------------------------
    def fingerprint(self) -> JsonObject:
        return {
            "harness": self.name,
            "version": self.version,
            "cli": self.cli_version,
            "invoke": self.agent.invoke,
            **self.options(),
            # only when there is one: the rollouts of a run without a library keep theirs
            **({"library": self.library.fingerprint()} if self.library.skills else {}),
        }

    def options(self) -> JsonObject:
        """Settings that change what the agent does (in the fingerprint)."""
        return {}

    def check(self, skills: Sequence[Skill] = ()) -> None:
        """The binary exists and answers `--version`, and no user-level copy of a skill
        under test would stand in for it; nothing else runs before this."""
        self.library = self.library.excluding(skills)
        self.library.check_against(skills)
        if not self.isolated:
            self.check_shadowing(skills)
        self._resolved = self.resolve_binary()
        self.cli_version = self.probe_version(self._resolved)

    def recall(self, recorded: Mapping[str, Any]) -> None:
        """A replay runs no program: the CLI's version is the one recorded."""
        version = recorded.get("cli")
        if recorded.get("harness") == self.name and isinstance(version, str):
            self.cli_version = version

    def check_shadowing(self, skills: Sequence[Skill]) -> None:
        """Refuse to run when the agent would also find a skill of the same name in the
        user's own skills: it might read that copy, and every score would measure it
        instead of the candidate (a personal skill installed by `export --scope user`,
        say)."""
        for skill in skills:
            if skill.is_empty:
                continue
            name = install_name(skill)
            for root in self.user_skill_roots():
                if (root / name / SKILL_FILE).is_file():
                    raise HarnessError(
                        f"{root / name} holds a user-level skill named {name!r}. "
                        f"{self.shadow_reason} so the scores would not measure the copy "
                        "under test. Move it aside while training or evaluating (e.g. "
                        f"`mv {root / name} {root.parent / (name + '.skillopt-aside')}`)"
                    )

    shadow_reason = "The agent would see it beside the workspace's copy,"

    @property
    def isolated(self) -> bool:
        """Whether each rollout gets a private HOME (`agent.isolate`, for the harnesses
        that support it)."""
        return self.supports_isolation and self.agent.isolate

    supports_isolation = False

    def user_skill_roots(self) -> list[Path]:
        """The user-level directories the agent reads skills from (besides the
        workspace's own)."""
        return []

    def run(self, skill: Skill, task: Task) -> Trajectory:
        if self._cancelled.is_set():
            return Trajectory(error="not run: the run is stopping", error_kind="cancelled")
        ws = Workspace.create(skill, task, self.skills_dir, self.library)
        with self._lock:
            self._open[ws.path] = (ws, f"{_label(task.id)}-{skill.short_hash[:8]}")
        prompt = self.prompt(skill, task)
        messages: tuple[JsonObject, ...] = ({"role": "user", "content": prompt},)
        try:
            argv = self.argv(ws, skill, task)
            result = process.run_process(
                argv,
                cwd=ws.path,
                env=self.env(ws, skill, task),
                stdin_text=self.stdin(prompt),
                timeout=self.agent.timeout,
                io_dir=ws.io,
                cancelled=self._cancelled,
                pid_namespace=self.agent.pid_namespace != "off",
            )
        except OSError as exc:
            return Trajectory(
                messages=messages,
                workspace=ws.path,
                error_kind="not_found",
                error=f"{self.binary_label} could not start: {exc.strerror or exc}",
            )
        if self._cancelled.is_set() and (result.returncode or 0) < 0:  # killed by cancel()
            return Trajectory(
                messages=messages,
                workspace=ws.path,
                error_kind="cancelled",
                latency_s=result.duration_s,
                error=f"{self.binary_label} was stopped: the run is stopping",
            )
        if result.timed_out:
            traj = self.parse(result, ws, skill, task)
            kind, why = self.timeout_cause(traj)
            return replace(
                traj,
                messages=messages,
                workspace=ws.path,
                latency_s=result.duration_s,
                answer=None,
                error_kind=kind,
                error=f"{self.binary_label} timed out after {self.agent.timeout:g}s "
                f"(its process group was killed){why}",
            )
        traj = self.parse(result, ws, skill, task)
        if traj.answer is not None and traj.error is None:
            messages = (*messages, {"role": "assistant", "content": traj.answer})
        return replace(traj, messages=messages, workspace=ws.path, latency_s=result.duration_s)

    def release(self, trajectory: Trajectory, *, failed: bool) -> Path | None:
        """Keep the workspace under `keep_dir` (per `agent.keep_workspaces`) or remove it."""
        if trajectory.workspace is None:
            return None
        with self._lock:
            entry = self._open.pop(trajectory.workspace, None)
        if entry is None:
            return None
        ws, label = entry
        mode = self.agent.keep_workspaces
        if self.keep_dir is not None and (mode == "all" or (mode == "failed" and failed)):
            return ws.keep(self.keep_dir, label)
        ws.remove()
        return None

    def cancel(self) -> None:
        """The run is stopping: kill the agents running now and start no more (for the
        rest of this harness's life)."""
        self._cancelled.set()
        process.kill_all()

    # -- what the optimizer is told (`Describes`) ------------------------------------------
    agent_label = "an agent program"

    def target_model(self) -> str | None:
        """The model the agent runs, as far as is known before it runs; None for the
        agent's own default."""
        return None

    def describe_target(self) -> str:
        """The agent, its model, where the skill is installed and how the agent comes
        to read it."""
        model = self.target_model()
        text = (
            f"The target is {self.agent_label} running "
            + (f"the model `{model}`" if model else "its default model")
            + ", in a fresh workspace for each task. The skill is installed there as "
            f"`{self.skills_dir}/<name>/SKILL.md` (frontmatter and body, with its "
            "supporting files), and the task is the agent's prompt. The agent first "
            "sees only the skill's name and description (the frontmatter, which edits "
            "of the body cannot change) and decides from the description whether to load "
            "the skill; only then does it read the body. It may use tools, and its "
            "final message is the answer. A trajectory marked `Skill invoked: no` "
            "means the agent never read the body."
        )
        if self.agent.invoke == "explicit":
            text += (
                f" In this run the prompt starts with `{self.invoke_prefix}<name> `, "
                "which makes the agent load the skill for every task."
            )
        return text

    # -- pieces a subclass may change -----------------------------------------------------
    def prompt(self, skill: Skill, task: Task) -> str:
        if self.agent.invoke == "explicit" and not skill.is_empty:
            return f"{self.invoke_prefix}{install_name(skill)} {task.prompt}"
        return task.prompt

    invoke_prefix = "/"

    def stdin(self, prompt: str) -> str:
        return prompt

    def timeout_cause(self, partial: Trajectory) -> tuple[str, str]:
        """(error kind, a clause saying why) for a rollout cut off by the timeout, from
        what the agent printed before it (`partial`): a CLI that spent the time retrying
        a rejected key is an auth failure, not a slow task."""
        return "timeout", ""

    def argv(self, ws: Workspace, skill: Skill, task: Task) -> list[str]:
        raise NotImplementedError

    def parse(self, result: ProcessResult, ws: Workspace, skill: Skill, task: Task) -> Trajectory:
        raise NotImplementedError

    def env(self, ws: Workspace, skill: Skill, task: Task) -> dict[str, str]:
        """The scrubbed environment: base variables, the CLI's own, `agent.env`; when
        isolated, HOME is the workspace's private one (see `private_home`)."""
        prefixed = [k for k in os.environ if self.env_prefixes and k.startswith(self.env_prefixes)]
        env = process.scrubbed_env([*process.BASE_ENV, *self.env_names, *prefixed, *self.agent.env])
        if self.isolated:
            for name in HOME_POINTERS:
                env.pop(name, None)
            env["HOME"] = str(self.private_home(ws))
            # what the CLI and its tools leave in temporary files goes with the workspace
            tmp = str(ws.private("tmp"))
            env.update(TMPDIR=tmp, TMP=tmp, TEMP=tmp)
        return env

    def private_home(self, ws: Workspace) -> Path:
        """The rollout's own HOME: empty but for what a subclass puts there to let the
        CLI authenticate."""
        return ws.private("home")

    # -- helpers ------------------------------------------------------------------------
    def executable(self) -> str:
        if self._resolved is None:
            self._resolved = self.resolve_binary()
        return self._resolved

    def resolve_binary(self) -> str:
        found = shutil.which(self.binary, path=os.environ.get("PATH"))
        if found is None:
            where = "" if "/" not in self.binary else " (no executable file there)"
            raise HarnessError(
                f"the {self.name} harness needs `{self.binary}`, which is not on PATH{where}; "
                f"{self.install_hint}or choose another harness with --harness "
                "chat|claude-code|codex|command"
            )
        return os.path.abspath(found)  # the agent runs elsewhere: its cwd is the workspace

    def probe_version(self, executable: str) -> str:
        """First line of `<binary> --version` (part of every rollout's fingerprint)."""
        # the agent's own program, closed off like an agent; it runs no task, so
        # nothing acting on a model's output outlives it
        try:
            with dumpable.hidden(contained=True):
                proc = subprocess.run(
                    [executable, "--version"],
                    capture_output=True,
                    text=True,
                    timeout=60,
                    env=process.scrubbed_env(process.BASE_ENV),
                    errors="replace",
                )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise HarnessError(f"`{self.binary} --version` failed: {exc}") from None
        if proc.returncode != 0:
            raise HarnessError(
                f"`{self.binary} --version` exited {proc.returncode}: "
                f"{tail(proc.stderr or proc.stdout, 300)}"
            )
        lines = (proc.stdout or proc.stderr).strip().splitlines()
        return lines[0].strip() if lines else "unknown"

    def failure(
        self, result: ProcessResult, what: str | None = None, default_kind: str = "agent_error"
    ) -> Trajectory:
        """An unscored trajectory for a process that exited badly."""
        detail = what or result.stderr_tail() or tail(result.stdout, 800) or "no output"
        message = f"{self.binary_label} exited {result.returncode}: {detail}"
        return Trajectory(error=message, error_kind=classify(detail, default_kind))


def copy_private(src: Path, dest: Path) -> bool:
    """Copy a credentials file into a private home (readable by its owner only);
    whether there was one to copy."""
    try:
        data = src.read_bytes()
    except OSError:
        return False
    dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return True


def _label(task_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", task_id).strip("-.")[:60] or "task"
