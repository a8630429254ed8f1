"""What the contract tests share: the real CLIs, a HOME planted with the user's own
setup (which no rollout may see or change), and a small suite.

The CLIs are the pinned releases `.ci/run` installs with npm into
`.ci/clis/node_modules/.bin` (or `$SKILLOPT_REALCLI_DIR`). Without them the tests
are skipped, except where `SKILLOPT_REQUIRE_REALCLI=1` (CI) makes that a failure.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import time
from pathlib import Path

import pytest
import routing_rule
from fakes.anthropic_api import (
    SKILL_LISTING,
    Turn,
    _texts,
    has_tool,
    prompt_text,
    skills_loaded,
)
from fakes.responses_api import function_calls, messages, shell, skill_files, text
from helpers import write_skill, write_suite
from typer.testing import CliRunner

from skillopt.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(
    os.environ.get("SKILLOPT_REALCLI_DIR") or ROOT / ".ci" / "clis" / "node_modules" / ".bin"
)
# read at import: the `isolated` fixture clears every SKILLOPT_* variable before a
# test (and so before `real_cli` runs)
REQUIRE_REALCLI = os.environ.get("SKILLOPT_REQUIRE_REALCLI") == "1"

# planted in the user's HOME: none may reach a request
CLAUDE_MD_MARKER = "USER-CLAUDE-MD-MARKER-7431"
AGENTS_MD_MARKER = "USER-AGENTS-MD-MARKER-7432"
PERSONAL_SKILL = "personal-notes"
PERSONAL_MARKER = "PERSONAL-SKILL-MARKER-7433"


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.realcli)


def real_cli(name: str) -> Path:
    path = BIN / name
    if not os.access(path, os.X_OK):
        message = (
            f"the real `{name}` is not installed at {path}: run `npm install --prefix "
            ".ci/clis @anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0`"
        )
        if REQUIRE_REALCLI:
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture
def home(isolated) -> Path:
    """The user's HOME, with their own Claude Code and Codex setup in it."""
    home = Path(os.environ["HOME"])
    claude = home / ".claude"
    claude.mkdir()
    (claude / "CLAUDE.md").write_text(f"Always say {CLAUDE_MD_MARKER}.\n")
    for root in (claude / "skills", home / ".agents" / "skills", home / ".codex" / "skills"):
        write_skill(
            root,
            PERSONAL_SKILL,
            body=f"# Notes\n\nSay {PERSONAL_MARKER}.\n",
            description=f"Personal notes {PERSONAL_MARKER}. Use for every task.",
        )
    (home / ".codex" / "AGENTS.md").write_text(f"Always say {AGENTS_MD_MARKER}.\n")
    (home / ".claude.json").write_text('{"numStartups": 3}\n')
    return home


def snapshot(root: Path) -> dict[str, str]:
    """Every file and directory under `root`, with a digest of each file's bytes."""
    tree = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        tree[rel] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return tree


@pytest.fixture
def caps(isolated):
    """A skill that makes the agent answer in capitals, and a suite scoring that."""
    skill = write_skill(
        isolated / "skills",
        "caps",
        body="# Caps\n\nAnswer in CAPITALS.\n",
        description="Answers word tasks in capitals. Use for every word task.",
    )

    def suite(n: int, name: str = "caps") -> Path:
        items = [
            {"id": f"w{i}", "input": f"word-{i}", "expected": f"WORD-{i}", "split": "test"}
            for i in range(n)
        ]
        return write_suite(isolated / "tasks" / f"{name}.yaml", items)

    return skill, suite


def run_eval(harness: str, *args):
    """`skillopt eval ARGS --harness HARNESS` in process: (result, seconds taken)."""
    start = time.monotonic()
    res = CliRunner().invoke(app, ["eval", *map(str, args), "--harness", harness])
    return res, time.monotonic() - start


# the shared routing rule (tests/fakes/routing.py) as each CLI's model, on the listing
# the CLI put in its request
def claude_model(body: dict) -> Turn:
    """The rule on Claude Code's listing: call the Skill tool for the choice; once a
    skill is loaded (or none was chosen), answer with its name or `none`."""
    loaded = skills_loaded(body)
    if loaded:
        return Turn.text(loaded[0])
    listing = "\n".join(t.split(SKILL_LISTING, 1)[1] for t in _texts(body) if SKILL_LISTING in t)
    chosen = routing_rule.choose(prompt_text(body), routing_rule.parse_listing(listing))
    spoke = any(m.get("role") == "assistant" for m in body.get("messages") or [])
    if chosen and not spoke and has_tool(body, "Skill"):
        return Turn.tool_use("Skill", {"skill": chosen})
    return Turn.text(chosen or "none")


def codex_model(body: dict):
    """The rule on Codex's `<skills_instructions>`: `cat` the choice's SKILL.md, then
    answer with its name (or `none`)."""
    developer = "\n".join(messages(body, "developer"))
    request = messages(body, "user")[-1]
    chosen = routing_rule.choose(request, routing_rule.parse_listing(developer))
    path = skill_files(body).get(chosen or "")
    if path is not None and not function_calls(body):
        return shell(f"cat {shlex.quote(str(path))}")
    return text(chosen or "none")
