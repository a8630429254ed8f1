"""What every command shares: option aliases, consoles and the one error handler.

Invariant: a `SkilloptError` becomes one line on stderr and its exit code (2 for
bad input); any other exception says how to see the traceback. With `--debug` or
`SKILLOPT_DEBUG=1` errors are re-raised instead.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Annotated, Literal, Optional, ParamSpec, TextIO, TypeVar, cast

import typer
from rich.console import Console
from rich.file_proxy import FileProxy
from rich.markup import escape

from skillopt._util.text import safe
from skillopt.errors import Interrupted, SkilloptError


class SafeStream:
    """The process's stdout or stderr (looked up at each write, so a test runner's
    replacement is honoured) with every write made safe: what skillopt prints often
    quotes a provider, an agent or a verifier, and no known secret may reach the
    terminal or a CI log. It has what a rich console uses of a file (write, flush,
    isatty, fileno, encoding) and never the raw stream behind it (a console handed
    that would skip `safe`)."""

    def __init__(self, current: Callable[[], TextIO]):
        self._current = current

    @property
    def stream(self) -> IO[str]:
        # while a live display redirects sys.stdout and sys.stderr, write to the stream
        # it wraps: going through the redirect would loop back into the console
        stream = self._current()
        if isinstance(stream, FileProxy):
            return stream.rich_proxied_file
        return stream

    def write(self, text: str) -> int:
        return self.stream.write(safe(text) or "")

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:
        return self._current().encoding


def _console(stream: SafeStream, *, soft_wrap: bool = False) -> Console:
    # rich writes to any object with a file's write, flush, isatty, fileno and
    # encoding; its signature names IO[str], which a proxy cannot be without
    # pretending to read and seek
    file = cast("TextIO", stream)
    return Console(file=file, highlight=False, emoji=False, soft_wrap=soft_wrap)


out = _console(SafeStream(lambda: sys.stdout))
err = _console(SafeStream(lambda: sys.stderr), soft_wrap=True)


def at_least(low: int) -> Callable[[typer.Context, typer.CallbackParam, int | None], int | None]:
    """An option callback refusing values below `low`, in words ('--epochs must be at
    least 1'); used instead of typer's `min=`, which prints `[x>=1]` in the help."""

    def check(ctx: typer.Context, param: typer.CallbackParam, value: int | None) -> int | None:
        if value is not None and value < low:
            raise typer.BadParameter(f"must be at least {low}, got {value}")
        return value

    return check


Target = Annotated[
    Optional[str],
    typer.Option(
        "--target",
        "-t",
        help="Model the agent runs on: local/gemma-3-270m (the embedded offline model), "
        "scripted/echo (repeats the task back: a free dry run of the plumbing) or a "
        "litellm name (e.g. openai/gpt-4o-mini); for claude-code and codex, the CLI's "
        "--model (or 'default').",
        metavar="MODEL",
        show_default=False,
    ),
]
Harness = Annotated[
    Optional[str],
    typer.Option(
        "--harness",
        help="How the agent runs a task: chat (the skill as system prompt), "
        "claude-code (claude -p), codex (codex exec), command (any program; `command:` in "
        "skillopt.yaml) or router (the model only picks which skill it would load) "
        "[default: chat].",
        metavar="NAME",
        show_default=False,
    ),
]
LibraryDirs = Annotated[
    Optional[list[str]],
    typer.Option(
        "--library",
        help="Install the skills of DIR (a folder of skills, or one skill folder) beside "
        "the one under test, so the agent chooses among them as it would at home; "
        "repeatable; `user` for your own (~/.claude/skills, .claude/skills, "
        "~/.agents/skills). Read-only: copied into each rollout [default: agent.library].",
        metavar="DIR",
        show_default=False,
    ),
]


def library_section(dirs: Optional[list[str]]) -> dict[str, list[str]] | None:
    """The `agent:` settings that `--library` stands for (None: not given), each folder
    made absolute: a run keeps them in run.yaml, and `--resume` may start elsewhere."""
    if not dirs:
        return None
    return {"library": [d if d == "user" else str(Path(d).expanduser().absolute()) for d in dirs]}


Concurrency = Annotated[
    Optional[int],
    typer.Option(
        "--concurrency",
        "-j",
        callback=at_least(1),
        help="Rollouts run at once [default: 8].",
        metavar="N",
        show_default=False,
    ),
]
ExecutorName = Literal["local", "ray"]
Executor = Annotated[
    Optional[ExecutorName],
    typer.Option(
        "--executor",
        help="Where rollouts run: this machine (local) or the Ray cluster `ray:` in "
        "skillopt.yaml names (ray) [default: local].",
        metavar="local|ray",
        show_default=False,
    ),
]
Judge = Annotated[
    Optional[str],
    typer.Option("--judge", help="Model for `judge` scorers.", metavar="MODEL", show_default=False),
]
Store = Annotated[
    Optional[Path],
    typer.Option(
        "--store",
        help="Rollout store (SQLite) [default: runs/rollouts.sqlite].",
        metavar="FILE",
        show_default=False,
    ),
]
Samples = Annotated[
    Optional[int],
    typer.Option(
        "--samples",
        callback=at_least(1),
        help="Rollouts per task (for sampled models) [default: 1].",
        metavar="N",
        show_default=False,
    ),
]
RunDir = Annotated[
    Optional[Path],
    typer.Option(
        "--run-dir",
        help="Where runs are, to find a run by its id [default: runs].",
        metavar="DIR",
        show_default=False,
    ),
]
BudgetUsd = Annotated[
    Optional[float],
    typer.Option(
        "--budget-usd",
        help="Stop before a batch of calls would take the spend, every role together, "
        "over this many USD (exit code 3; a run resumes with a larger one).",
        metavar="USD",
        show_default=False,
    ),
]
MaxTargetRollouts = Annotated[
    Optional[int],
    typer.Option(
        "--max-target-rollouts",
        callback=at_least(0),
        help="Stop before paying for more target rollouts than this (store hits are free).",
        metavar="N",
        show_default=False,
    ),
]
MaxOptimizerCalls = Annotated[
    Optional[int],
    typer.Option(
        "--max-optimizer-calls",
        callback=at_least(0),
        help="Stop before making more optimizer calls than this.",
        metavar="N",
        show_default=False,
    ),
]
TimeLimit = Annotated[
    Optional[str],
    typer.Option(
        "--time-limit",
        help="Start no batch after this much wall-clock time: seconds, or e.g. 45m, 2h.",
        metavar="TIME",
        show_default=False,
    ),
]
AllowLongSkill = Annotated[
    bool,
    typer.Option(
        "--allow-long-skill",
        help="Score a skill longer than the target's context window (refused otherwise).",
    ),
]
StrictSplits = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="Refuse a suite whose val or test items nearly repeat items of an earlier "
        "split (warned otherwise).",
    ),
]
AllowUnpriced = Annotated[
    bool,
    typer.Option(
        "--allow-unpriced",
        help="With --budget-usd, run even when a model's price is unknown (the budget "
        "covers the priced calls only).",
    ),
]


# a run's id or directory, and where runs are, for the commands that read one
Run = Annotated[
    str, typer.Argument(help="Run id (under the runs directory) or run directory.", metavar="RUN")
]
RunDirOpt = Annotated[
    Optional[Path],
    typer.Option("--run-dir", help="Where runs are [default: runs].", show_default=False),
]


JsonOut = Annotated[
    Optional[Path],
    typer.Option(
        "--json",
        help="Write the whole result as JSON to FILE ('-': on stdout, instead of the text).",
        metavar="FILE",
        show_default=False,
    ),
]


def write_json(path: Path, data: object) -> None:
    """`data` as JSON in the file `path`, or on stdout when `path` is '-' (made safe:
    a result quotes models and programs)."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    if str(path) == "-":
        out.print_json(text)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((safe(text) or "") + "\n", encoding="utf-8")
    err.print(f"wrote {escape(str(path))}")


_debug = False


def set_debug(value: bool) -> None:
    """Set by the `--debug` global option on every invocation."""
    global _debug
    _debug = value


def debug_enabled() -> bool:
    return _debug or os.environ.get("SKILLOPT_DEBUG", "") not in ("", "0", "false")


# what `--tasks` takes, for every command that scores a skill
TASKS_HELP = (
    "Task suite (YAML or JSONL), or a task source read as one: a CSV/TSV or JSON table, "
    "a saved Hugging Face dataset or hf:owner/name, a promptfoo config, an inspect_ai "
    "dataset or log, a skill's evals/evals.json (see `skillopt tasks import`)."
)
P = ParamSpec("P")
R = TypeVar("R")


def handle_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Render skillopt errors in one line; never show a traceback unless asked."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except Interrupted as exc:
            err.print(f"[yellow]interrupted[/]: {escape(str(exc))}")
            raise typer.Exit(exc.exit_code) from None
        except SkilloptError as exc:
            if debug_enabled():
                raise
            err.print(f"[bold red]error:[/] {escape(str(exc))}")
            for line in exc.details:
                err.print(f"  {escape(line)}")
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            if debug_enabled():
                raise
            err.print(
                "[yellow]interrupted[/]: finished rollouts are saved in the store; "
                "rerun the same command to resume"
            )
            raise typer.Exit(130) from None
        except Exception as exc:
            if debug_enabled():
                raise
            err.print(
                f"[bold red]internal error:[/] {escape(type(exc).__name__)}: "
                f"{escape(str(exc))}\n(rerun with --debug for the traceback)"
            )
            raise typer.Exit(1) from None

    return wrapper


def warn(message: str) -> None:
    """A warning on stderr (lint warnings of the skill about to be scored, …): in a
    terminal wrapped between words (the terminal would cut a word in two), elsewhere
    one line per warning, for logs and greps."""
    err.print(f"[yellow]warning:[/] {escape(message)}", soft_wrap=not err.is_terminal)
