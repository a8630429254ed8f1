"""The shell commands of README.md and CONTRIBUTING.md, read the way a user copies
them, and what each needs to run.

Every line of a ```bash (or sh, shell, console) block is a command, with `\\`
continuations joined and `&&` chains split; a trailing `# …` is a comment. A
command that needs a provider key or an agent CLI carries a marker: a comment
`# needs …` on the line before it (or at its end) that names each thing it needs
(`OPENAI_API_KEY`, `claude`, `codex`). A command documented to fail says so at its
end, `# exits 3`; every other command must exit 0. `problems()` says what is wrong with a
command as documented; tests/test_readme.py runs the commands.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "CONTRIBUTING.md")

FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
SHELL = {"bash", "sh", "shell", "console", "zsh"}
MARKER = re.compile(r"^#\s*needs\b\s*(?P<what>.*)$", re.IGNORECASE)
EXITS = re.compile(r"^#\s*exits\s+(?P<code>\d+)\s*$", re.IGNORECASE)

# what a model name's provider needs; a provider missing here is a problem to fix
KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
OFFLINE_PROVIDERS = {"local", "scripted"}
OFFLINE_OPTIMIZERS = {"exemplars"}
AGENT_CLIS = {"claude-code": "claude", "codex": "codex"}
MODEL_FLAGS = ("--target", "--optimizer", "--judge")
MODEL_COMMANDS = {"train", "eval", "validate"}  # the subcommands that call a target

# stand-ins for what a user types: a run of theirs, a step of it, its skill's name
PLACEHOLDER = re.compile(r"<[^<>\s]+>|\b(?:RUN|STEP)\b")
RUN_PLACEHOLDERS = {"<run-id>", "RUN", "STEP", "<name>", "<other-run-id>", "<task-id>"}


@dataclass(frozen=True)
class Command:
    doc: str  # README.md or CONTRIBUTING.md
    line: int  # 1-based line where the command starts
    text: str  # continuations joined, comment removed
    marker: str | None  # what a `# needs …` comment names, or None
    exits: int = 0  # the exit code a trailing `# exits N` documents

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.text}"

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.text)

    @property
    def skillopt(self) -> bool:
        return self.argv[:1] == ["skillopt"]

    def option(self, name: str) -> str | None:
        argv = self.argv
        for i, arg in enumerate(argv):
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
        return None

    @property
    def placeholders(self) -> set[str]:
        return set(PLACEHOLDER.findall(self.text))

    @property
    def needs_run(self) -> bool:
        """Whether it names a run (or a skill that training produced)."""
        return bool(self.placeholders & RUN_PLACEHOLDERS)

    @property
    def needs(self) -> list[str]:
        """The keys and agent CLIs it needs (empty: it runs offline)."""
        if not self.skillopt:
            return []
        if self.option("--resume") is not None and self.marker:
            # a resumed run calls the models it started with: its marker names them
            words = set(re.findall(r"[\w-]+", self.marker))
            return [n for n in [*KEYS.values(), *AGENT_CLIS.values()] if n in words]
        needs = []
        harness = self.option("--harness")
        if harness in AGENT_CLIS:
            needs.append(AGENT_CLIS[harness])
        for flag in MODEL_FLAGS:
            value = self.option(flag)
            if value is None or (flag == "--target" and harness in AGENT_CLIS):
                continue  # an agent CLI's own model name: the CLI is the need
            if value in OFFLINE_OPTIMIZERS or "/" not in value:
                continue
            provider = value.split("/", 1)[0]
            if provider not in OFFLINE_PROVIDERS:
                needs.append(KEYS.get(provider, f"a key for {provider}/"))
        return list(dict.fromkeys(needs))

    @property
    def embedded(self) -> bool:
        """Whether it runs the embedded model: a target-calling command with no
        --target and the chat harness takes the bundled suites' default,
        `local/gemma-3-270m`."""
        argv = self.argv
        return (
            self.skillopt
            and len(argv) > 1
            and argv[1] in MODEL_COMMANDS
            and self.option("--target") is None
            and self.option("--harness") not in AGENT_CLIS
            and "--dry-run" not in argv
        )


def _split_comment(line: str) -> tuple[str, str | None]:
    """(command, trailing comment) of one logical line, a `#` inside quotes kept."""
    for match in re.finditer(r"(?:^|\s)#", line):
        head = line[: match.start()]
        try:
            shlex.split(head)
        except ValueError:  # inside a quotation
            continue
        return head.rstrip(), line[match.start() :].strip()
    return line.rstrip(), None


def commands(doc: str) -> list[Command]:
    """Every command of `doc`'s shell blocks, in order."""
    return parse(doc, (ROOT / doc).read_text(encoding="utf-8"))


def parse(doc: str, text: str) -> list[Command]:
    """Every command of the shell blocks of Markdown `text`, in order."""
    found: list[Command] = []
    for block in FENCE.finditer(text):
        if block.group("lang").lower() not in SHELL:
            continue
        first = text.count("\n", 0, block.start("body")) + 1
        prompted = block.group("lang").lower() == "console"  # `$ ` commands, then output
        marker: str | None = None
        joined, start = "", 0
        for offset, raw in enumerate(block.group("body").splitlines()):
            line = raw.strip()
            if not joined:
                start = first + offset
                if prompted and not line.startswith("$ "):
                    continue
                line = line.removeprefix("$ ")
            if line.endswith("\\"):
                joined += line[:-1].rstrip() + " "
                continue
            line, joined = joined + line, ""
            if not line.strip():
                continue
            if line.lstrip().startswith("#"):
                found_marker = MARKER.match(line.strip())
                if found_marker:
                    marker = found_marker.group("what")
                continue
            command, comment = _split_comment(line)
            if comment and MARKER.match(comment):
                marker = MARKER.match(comment).group("what")
            exits = EXITS.match(comment) if comment else None
            parts = command.split("&&")
            for i, part in enumerate(parts):  # a chain stops at the first failure
                code = int(exits.group("code")) if exits and i == len(parts) - 1 else 0
                found.append(Command(doc, start, part.strip(), marker, code))
            marker = None
    return found


def all_commands() -> list[Command]:
    return [c for doc in DOCS for c in commands(doc)]


# ------------------------------------------------------------ setup commands
# The commands that are not skillopt's: what proves each one works as written.
def _ci_script() -> str:
    return (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _pyproject_markers() -> set[str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = text.split("markers = [", 1)[1].split("]", 1)[0]
    return set(re.findall(r'"(\w+):', block))


def _check_pip(cmd: Command) -> str | None:
    if cmd.text not in _ci_script():
        return "CI (.ci/run) does not run this install as written"
    return None


def _check_pytest(cmd: Command) -> str | None:
    argv = cmd.argv
    if argv[:3] != ["python", "-m", "pytest"]:
        return "run pytest as `python -m pytest`"
    expression = argv[argv.index("-m", 3) + 1] if "-m" in argv[3:-1] else None
    if expression is None:
        return None if cmd.text in _ci_script() else "CI (.ci/run) does not run this"
    names = set(re.findall(r"\w+", expression)) - {"and", "or", "not"}
    unknown = names - _pyproject_markers()
    return f"markers not declared in pyproject.toml: {sorted(unknown)}" if unknown else None


def _check_npm(cmd: Command) -> str | None:
    ci = _ci_script()
    packages = [a for a in cmd.argv[2:] if "@" in a.lstrip("@")]
    if cmd.argv[:4] != ["npm", "install", "--prefix", ".ci/clis"] or not packages:
        return "expected `npm install --prefix .ci/clis <package>@<version> …`"
    stale = [p for p in packages if p not in ci.split()]
    return f"not the versions .ci/run pins: {stale}" if stale else None


def _check_code_health(cmd: Command) -> str | None:
    """ruff and mypy run inside the tests (tests/test_code_health.py)."""
    health = (ROOT / "tests" / "test_code_health.py").read_text(encoding="utf-8")
    argv = cmd.argv
    if argv[:2] == ["ruff", "format"] and "--check" not in argv:
        argv = [*argv[:2], "--check", *argv[2:]]  # what writes is checked without writing
    call = ", ".join(f'"{a}"' for a in argv)
    if f"run({call})" not in health:
        return f"tests/test_code_health.py does not run `{cmd.text}`"
    return None


def _check_prune_one_liner(cmd: Command) -> str | None:
    """The git one-liner that deletes every run's refs runs in tests/store/test_prune.py,
    which reads it from the README."""
    prune = (ROOT / "tests" / "store" / "test_prune.py").read_text(encoding="utf-8")
    if "def test_the_readme_one_liner_deletes_every_runs_refs" not in prune:
        return "tests/store/test_prune.py no longer runs the README's git one-liner"
    return None


def _check_script(cmd: Command) -> str | None:
    if not (ROOT / cmd.argv[1]).is_file():
        return f"no such script: {cmd.argv[1]}"
    return None


SETUP = {
    "pip": _check_pip,
    # the Install command: pip building llama.cpp for the x86-64 baseline
    'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip': _check_pip,
    "python -m pytest": _check_pytest,
    "npm": _check_npm,
    "ruff": _check_code_health,
    "mypy": _check_code_health,
    "python benchmarks/": _check_script,
    "git for-each-ref": _check_prune_one_liner,
}


def setup_check(cmd: Command):
    for prefix, check in SETUP.items():
        if cmd.text == prefix or cmd.text.startswith(prefix + ("" if prefix[-1] == "/" else " ")):
            return check
    return None


def problems(cmd: Command) -> list[str]:
    """What is wrong with `cmd` as documented (empty: it is run or marked)."""
    out = []
    if not cmd.skillopt:
        check = setup_check(cmd)
        if check is None:
            return [
                "a command the tests neither run nor check: run it in tests/test_readme.py "
                "or add a check to SETUP in tests/readme_commands.py"
            ]
        problem = check(cmd)
        return [problem] if problem else []
    needs = cmd.needs
    if needs and cmd.marker is None:
        out.append(f"needs {', '.join(needs)}: mark it with a `# needs …` comment naming them")
    elif needs:
        missing = [n for n in needs if n.lower() not in cmd.marker.lower()]
        if missing:
            out.append(f"its `# needs` comment does not name {', '.join(missing)}")
    elif cmd.marker is not None:
        out.append("marked `# needs` but runs offline: drop the marker")
    unknown = cmd.placeholders - RUN_PLACEHOLDERS
    if unknown:
        out.append(f"placeholders the tests cannot fill: {sorted(unknown)}")
    return out


# ------------------------------------------------------------------ stand-ins
# The world behind the loopback OpenAI-compatible server that commands needing
# OPENAI_API_KEY run against (here and in benchmarks/readme_figures.py).
RULE = "- Write the letters in capitals, a hyphen, then the digits."
DECOY = "- Keep the separator the input uses."
STAND_IN_KEY = "sk-readme-stand-in"


def stand_in_openai(body: dict) -> str:
    """The optimizer proposes DECOY first, and RULE once its prompt shows DECOY
    among the edits tried (it answers notes and guidance too); a target follows
    RULE when its system prompt holds it, and echoes the task otherwise."""
    messages = body["messages"]
    last = messages[-1]["content"]
    if "You are the optimizer" in messages[0]["content"]:
        if '{"guidance":' in last:
            return json.dumps({"guidance": RULE})
        if '{"notes":' in last:
            return json.dumps({"notes": "- one rule fixed the format"})
        content = RULE if DECOY in last else DECOY
        edit = {"op": "add", "anchor": None, "section": None, "content": content}
        return json.dumps({"edits": [{**edit, "rationale": "the format", "evidence": []}]})
    if any(RULE in m["content"] for m in messages if m["role"] == "system"):
        letters = "".join(re.findall(r"[A-Za-z]", last)).upper()
        return f"{letters}-{''.join(re.findall(r'[0-9]', last))}"
    return last
