"""The README's figures from the bundled offline runs, produced by running them.

Each figure sits in README.md between `<!-- figures:NAME -->` and
`<!-- /figures:NAME -->` (HTML comments: not rendered, and outside any code
block the tests read):

- `quickstart`: what `skillopt train skills/product-codes --tasks
  tasks/product-codes.yaml` prints: its warnings (stderr), then its stdout
  (decision lines, test split, accounting);
- `eval`: the stdout of `skillopt eval runs/<run-id>/best --tasks
  tasks/product-codes.yaml --compare-no-skill` right after that run;
- `bundled`: the table of the three bundled suites, from each run's summary.json;
- `optimizer`: the stdout of the README's LLM-optimizer example (`skillopt train
  skills/product-codes … --target openai/gpt-4o-mini --optimizer openai/gpt-4o`),
  run against a loopback stand-in of the OpenAI API (`OPENAI_BASE_URL`, a dummy
  key) whose optimizer proposes an edit that does not help, then a rule that
  does, and whose target follows the rule once the skill holds it
  (`stand_in_openai` in tests/readme_commands.py);
- `budget`: the README's spend-control example against the same stand-in, as a
  console transcript: the dry run of the example with `--max-target-rollouts 60`
  (on `openai/gpt-4.1-mini`, so none of the optimizer example's rollouts or
  replies are served from the store), the run itself (stdout, then its `error:`
  line from stderr; it exits 3), and `train --resume RUN --max-target-rollouts
  200`'s stdout.

The commands run for real and offline, as `python -m skillopt` child processes of
this checkout, with the embedded model (the suites' `defaults:`; the optimizer
example with the stand-in), in a fresh temporary directory holding copies of
`skills/` and `tasks/` (so with its own rollout store and `runs/`), with no
`SKILLOPT_*` variable set.

What differs from run to run is written in one fixed form, the one the README
already shows, so `--check` compares exactly and is stable: the run id as
`product-codes-20261203-135850-a42e` (`RUN_ID`; the optimizer example's as
`OPTIMIZER_RUN_ID`, the budget example's as `BUDGET_RUN_ID`), the temporary directory as `/home/me/skillopt` (where a
path outside it is printed whole), and the eval's wall times as `0.00s` (that
eval is served entirely from the store, in milliseconds); trailing spaces are
dropped. Everything else (scores, decisions, p-values, counts, the skill hash)
is what the commands printed: the embedded model is greedy, so it is the same on
every run of the same code and weights. The first column of the bundled table
(what each suite teaches) is words, kept in `SUITES`.

Run: python benchmarks/readme_figures.py --print | --write | --check
         [--only quickstart,eval,bundled,optimizer,budget]
`--check` exits 1 and prints a diff when README.md differs from a fresh run.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's skillopt, as in the child processes
README = ROOT / "README.md"

RUN_ID = "product-codes-20261203-135850-a42e"
OPTIMIZER_RUN_ID = "product-codes-20261203-141507-5c0e"
OPTIMIZER_EXAMPLE = (
    "train",
    "skills/product-codes",
    "--tasks",
    "tasks/product-codes.yaml",
    "--target",
    "openai/gpt-4o-mini",
    "--optimizer",
    "openai/gpt-4o",
)
BUDGET_RUN_ID = "product-codes-20261204-091522-3b7e"
BUDGET_EXAMPLE = (
    "train",
    "skills/product-codes",
    "--tasks",
    "tasks/product-codes.yaml",
    "--target",
    "openai/gpt-4.1-mini",
    "--optimizer",
    "openai/gpt-4o",
    "--max-target-rollouts",
    "60",
)
BUDGET_DRY_RUN = (*BUDGET_EXAMPLE, "--dry-run")
BUDGET_RESUME = ("train", "--resume", "RUN", "--max-target-rollouts", "200")
BUDGET_EXIT = 3
WORKDIR = "/home/me/skillopt"
QUICKSTART = "product-codes"
SUITES = {
    "product-codes": "messy codes → `ABC-123`",
    "name-format": "`JOHN SMITH` → `Smith, John`",
    "snake-case": "`Total Price` → `total_price`",
}
FIGURES = ("quickstart", "eval", "bundled", "optimizer", "budget", "sources")
# the README's "Where your tasks come from" commands, on the example sources under
# tasks/sources (no model is called: what they print is the same on every machine)
SOURCE_EXAMPLES: tuple[tuple[str, ...], ...] = (
    (
        "tasks",
        "import",
        "tasks/sources/product-codes.csv",
        "--input",
        "Raw code (as typed)",
        "--expected",
        "Catalogue form",
        "--id",
        "Ticket #",
        "-o",
        "tasks/imported/codes-csv.yaml",
    ),
    ("tasks", "import", "tasks/sources/product-codes-hf", "-o", "tasks/imported/codes-hf.yaml"),
    (
        "tasks",
        "import",
        "tasks/sources/promptfooconfig.yaml",
        "-o",
        "tasks/imported/names-promptfoo.yaml",
    ),
    (
        "tasks",
        "import",
        "tasks/sources/snake-case-inspect-log.json",
        "-o",
        "tasks/imported/snake-inspect.yaml",
    ),
    ("tasks", "import", "tasks/sources/snake-case-skill", "-o", "tasks/imported/snake-evals.yaml"),
    ("tasks", "harvest", "--from", "tasks/sources/sessions", "-o", "review.yaml"),
    (
        "tasks",
        "harvest",
        "--reviewed",
        "tasks/sources/sessions-reviewed.yaml",
        "-o",
        "tasks/imported/harvested.yaml",
    ),
)
WALL = re.compile(r"(?<= )\d+\.\d\ds$")


def invoke(cwd: Path, *args: str, extra_env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run `skillopt ARGS` in `cwd` as a child process of this checkout: (exit code,
    stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLOPT_")}
    env.update(extra_env or {})
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(var, None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["COLUMNS"] = "100"
    proc = subprocess.run(
        [sys.executable, "-m", "skillopt", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    return proc.returncode, proc.stdout, proc.stderr


def skillopt(
    cwd: Path, *args: str, extra_env: dict[str, str] | None = None, expect: int = 0
) -> str:
    """Run `skillopt ARGS` in `cwd` as a child process of this checkout; its stdout.
    Any exit code but `expect` is an error."""
    code, stdout, stderr = invoke(cwd, *args, extra_env=extra_env)
    if code != expect:
        raise RuntimeError(f"skillopt {' '.join(args)} exited {code}:\n{stderr}{stdout}")
    return stdout


def train(cwd: Path, name: str) -> tuple[str, str, dict]:
    """Train a bundled skill with its suite's defaults: (run id, what a terminal
    shows of it, summary); see `quickstart`."""
    code, stdout, stderr = invoke(cwd, "train", f"skills/{name}", "--tasks", f"tasks/{name}.yaml")
    if code != 0:
        raise RuntimeError(f"skillopt train skills/{name} exited {code}:\n{stderr}{stdout}")
    match = re.search(r"^Run (\S+): ", stdout, re.MULTILINE)
    if not match:
        raise RuntimeError(f"no run id in the output of training {name}:\n{stdout}")
    run_id = match.group(1)
    summary = json.loads((cwd / "runs" / run_id / "summary.json").read_text(encoding="utf-8"))
    return run_id, quickstart(stdout, stderr), summary


def quickstart(stdout: str, stderr: str) -> str:
    """What a terminal shows of a training run, without its transient progress bar:
    its warnings (stderr, printed before the first decision) then its stdout."""
    warnings = [line for line in stderr.splitlines() if line.startswith("warning: ")]
    return "".join(line + "\n" for line in warnings) + stdout


def normalise(text: str, cwd: Path, run_id: str, fixed: str = RUN_ID) -> str:
    for path in {str(cwd), str(cwd.resolve())}:
        text = text.replace(path, WORKDIR)
    text = text.replace(run_id, fixed)
    return "".join(line.rstrip() + "\n" for line in text.splitlines())


def code_block(text: str) -> str:
    return f"```\n{text}```\n"


def split_sizes(suite: Path) -> tuple[int, int, int]:
    from skillopt.suite.loader import load_suite

    loaded = load_suite(suite)
    return tuple(len(loaded.split(s)) for s in ("train", "val", "test"))


def bundled_table(cwd: Path, summaries: dict[str, dict]) -> str:
    lines = [
        "| suite | items (train/val/test) | test: no skill | initial | best |",
        "|---|---|---:|---:|---:|",
    ]
    for name, s in summaries.items():
        t = s["test"]
        n = split_sizes(cwd / "tasks" / f"{name}.yaml")
        lines.append(
            f"| `{name}` ({SUITES[name]}) | {sum(n)} ({n[0]}/{n[1]}/{n[2]}) | "
            f"{t['no_skill']['mean']:.3f} | {t['initial']['mean']:.3f} | {t['best']['mean']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def optimizer_example(cwd: Path) -> str:
    """The LLM-optimizer example's stdout, against the loopback stand-in, normalised."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fakes.openai_server import FakeOpenAI
    from readme_commands import STAND_IN_KEY, stand_in_openai

    with FakeOpenAI(stand_in_openai) as server:
        env = {"OPENAI_API_KEY": STAND_IN_KEY, "OPENAI_BASE_URL": server.base_url}
        stdout = skillopt(cwd, *OPTIMIZER_EXAMPLE, extra_env=env)
    match = re.search(r"^Run (\S+): ", stdout, re.MULTILINE)
    if not match:
        raise RuntimeError(f"no run id in the output of the optimizer example:\n{stdout}")
    return code_block(normalise(stdout, cwd, match.group(1), OPTIMIZER_RUN_ID))


def stopped_run(stderr: str) -> str:
    """The id of the run a budget stopped, from its `error:` line."""
    match = re.search(r"--resume (\S+) ", stderr)
    if not match:
        raise RuntimeError(f"no run to resume in what the budget example printed:\n{stderr}")
    return match.group(1)


def budget_block(cwd: Path, dry: str, stopped: tuple[str, str], resumed: str) -> str:
    """The spend-control transcript: the dry run's stdout, the stopped run's stdout
    and `error:` line, and the resumed run's stdout, each behind its command."""
    run_id = stopped_run(stopped[1])
    errors = "".join(line + "\n" for line in stopped[1].splitlines() if line.startswith("error:"))
    resume = " ".join(BUDGET_RESUME).replace("RUN", run_id)
    text = (
        f"$ skillopt {' '.join(BUDGET_DRY_RUN)}\n{dry}"
        f"$ skillopt {' '.join(BUDGET_EXAMPLE)}\n{stopped[0]}{errors}"
        f"$ echo $?\n{BUDGET_EXIT}\n"
        f"$ skillopt {resume}\n{resumed}"
    )
    return code_block(normalise(text, cwd, run_id, BUDGET_RUN_ID))


def budget_example(cwd: Path) -> str:
    """The spend-control example against the loopback stand-in, normalised."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fakes.openai_server import FakeOpenAI
    from readme_commands import STAND_IN_KEY, stand_in_openai

    with FakeOpenAI(stand_in_openai) as server:
        env = {"OPENAI_API_KEY": STAND_IN_KEY, "OPENAI_BASE_URL": server.base_url}
        dry = skillopt(cwd, *BUDGET_DRY_RUN, extra_env=env)
        code, out, err = invoke(cwd, *BUDGET_EXAMPLE, extra_env=env)
        if code != BUDGET_EXIT:
            raise RuntimeError(f"the budget example exited {code}, not {BUDGET_EXIT}:\n{err}{out}")
        resume = [a.replace("RUN", stopped_run(err)) for a in BUDGET_RESUME]
        resumed = skillopt(cwd, *resume, extra_env=env)
    return budget_block(cwd, dry, (out, err), resumed)


def shell_words(argv: tuple[str, ...]) -> str:
    """`skillopt ARGV` as the README writes it."""
    return " ".join(["skillopt", *(shlex.quote(a) for a in argv)])


def sources_block(printed: list[str]) -> str:
    """The task routes as a console transcript: each of `SOURCE_EXAMPLES` (`$ …`)
    and its stdout (`printed`, in the same order)."""
    lines = []
    for argv, out in zip(SOURCE_EXAMPLES, printed, strict=True):
        lines.append(f"$ {shell_words(argv)}")
        lines.extend(line.rstrip() for line in out.splitlines())
    return "```console\n" + "\n".join(lines) + "\n```\n"


def sources_example(cwd: Path) -> str:
    return sources_block([skillopt(cwd, *argv) for argv in SOURCE_EXAMPLES])


def produce(only: tuple[str, ...] = FIGURES) -> dict[str, str]:
    """Run the bundled examples and return the README region of each figure in
    `only`, normalised (see the module docstring)."""
    blocks: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="readme-figures-") as tmp:
        cwd = Path(tmp)
        for folder in ("skills", "tasks"):
            shutil.copytree(ROOT / folder, cwd / folder)
        if set(only) & {"quickstart", "eval", "bundled"}:
            blocks.update(bundled_examples(cwd, only))
        if "optimizer" in only:
            blocks["optimizer"] = optimizer_example(cwd)
        if "budget" in only:
            blocks["budget"] = budget_example(cwd)
        if "sources" in only:
            blocks["sources"] = sources_example(cwd)
    return {name: blocks[name] for name in FIGURES if name in blocks}


def bundled_examples(cwd: Path, only: tuple[str, ...]) -> dict[str, str]:
    """The quickstart, the eval after it and the bundled table, run in `cwd`."""
    blocks: dict[str, str] = {}
    run_id, stdout, summary = train(cwd, QUICKSTART)
    if "quickstart" in only:
        blocks["quickstart"] = code_block(normalise(stdout, cwd, run_id))
    if "eval" in only:
        out = skillopt(
            cwd,
            "eval",
            f"runs/{run_id}/best",
            "--tasks",
            f"tasks/{QUICKSTART}.yaml",
            "--compare-no-skill",
        )
        out = "".join(
            WALL.sub(lambda m: "0.00s".rjust(len(m.group())), line) + "\n"
            for line in out.splitlines()
        )
        blocks["eval"] = code_block(normalise(out, cwd, run_id))
    if "bundled" in only:
        summaries = {QUICKSTART: summary}
        for name in SUITES:
            if name != QUICKSTART:
                summaries[name] = train(cwd, name)[2]
        blocks["bundled"] = bundled_table(cwd, summaries)
    return blocks


def region(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- figures:{name} -->\n)(.*?)(<!-- /figures:{name} -->)", re.DOTALL)


def current(text: str, name: str) -> str:
    """The README's region `name` as it stands."""
    match = region(name).search(text)
    if not match:
        raise KeyError(f"README.md has no region <!-- figures:{name} -->")
    return match.group(2)


def rewrite(text: str, blocks: dict[str, str]) -> str:
    """`text` with each region replaced by its block; nothing else changes."""
    for name, block in blocks.items():
        current(text, name)  # the region must exist
        text = region(name).sub(lambda m, b=block: m.group(1) + b + m.group(3), text)
    return text


def diff(text: str, blocks: dict[str, str]) -> str:
    """A unified diff from the README's regions to `blocks`; empty when they agree."""
    lines = []
    for name, block in blocks.items():
        lines += difflib.unified_diff(
            current(text, name).splitlines(keepends=True),
            block.splitlines(keepends=True),
            f"README.md (figures:{name})",
            f"fresh run (figures:{name})",
        )
    return "".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--print", action="store_true", help="print the regions")
    mode.add_argument("--write", action="store_true", help="rewrite README.md's regions")
    mode.add_argument("--check", action="store_true", help="exit 1 with a diff if stale")
    parser.add_argument(
        "--only", default=",".join(FIGURES), help=f"comma-separated, of {', '.join(FIGURES)}"
    )
    args = parser.parse_args(argv)
    only = tuple(n.strip() for n in args.only.split(",") if n.strip())
    unknown = set(only) - set(FIGURES)
    if unknown:
        parser.error(f"unknown figure(s): {', '.join(sorted(unknown))}")
    blocks = produce(only)
    text = README.read_text(encoding="utf-8")
    if args.print:
        for name, block in blocks.items():
            print(f"<!-- figures:{name} -->\n{block}<!-- /figures:{name} -->\n")
        return 0
    if args.write:
        new = rewrite(text, blocks)
        if new != text:
            README.write_text(new, encoding="utf-8")
        print(f"README.md: {'updated' if new != text else 'unchanged'} ({', '.join(blocks)})")
        return 0
    stale = diff(text, blocks)
    if stale:
        sys.stdout.write(stale)
        print("README.md figures are stale: python benchmarks/readme_figures.py --write")
        return 1
    print(f"README.md figures are current ({', '.join(blocks)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
