"""Stand-in `claude` and `codex` executables (standard library only).

They honour the documented contracts (formats.md §2.3, §3): the flags each CLI
accepts (an unknown flag is an error, as upstream), the prompt on stdin, the
skill read from where the real CLI looks for it (`.claude/skills/<name>/` or
`.agents/skills/<name>/` in the working directory), and the documented output
shapes: claude's result object, its array-of-messages shape and stream-json
lines; codex's JSONL events, including event and item types a parser must skip.

Behaviour is set by `<name>.json` next to the executable (`invoke_when`: words
that make the agent load the skill, the Skill tool call or SKILL.md read the real
CLIs emit; without them it loads it for every prompt unless `invoke` is false;
`choose_by_description`: it picks among every skill installed where the CLI looks,
the skill under test and a library's alike, by the shared routing rule applied to
their names and descriptions, as a model picks from the CLI's listing) and every
call is appended to `<name>.calls.jsonl` there, so a test can check the argv, stdin,
cwd, environment and the workspace's files.

The "brain" follows the skill literally (the same rules as the training tests'
world): HELPFUL makes it capitalise `word-*` prompts, HARMFUL reverses every
answer, SAVE makes it also write the answer to `answer.txt` in the workspace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

try:  # imported by a test, as `fakes.agent_cli`
    from fakes.routing import choose
except ImportError:  # run as the stand-in executable, with its own folder on sys.path
    from routing import choose

HELPFUL = "Write WORD items in capitals."
HARMFUL = "Reverse every answer."
SAVE = "Save the answer to answer.txt."

CLAUDE_VERSION = "2.1.230 (Claude Code)"
CODEX_VERSION = "codex-cli 0.150.0"
PERMISSION_MODES = {
    "default",
    "manual",
    "acceptEdits",
    "plan",
    "auto",
    "dontAsk",
    "bypassPermissions",
}
SANDBOXES = {"read-only", "workspace-write", "danger-full-access"}


# ---------------------------------------------------------------------- shared
def load_config(bin_dir: Path, name: str) -> dict:
    path = bin_dir / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def log_call(bin_dir: Path, name: str, record: dict) -> None:
    with open(bin_dir / f"{name}.calls.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def read_skills(cwd: Path, skills_dir: str) -> dict[str, str]:
    """name -> SKILL.md text for every skill installed where the CLI looks."""
    base = cwd / skills_dir
    if not base.is_dir():
        return {}
    return {
        d.name: (d / "SKILL.md").read_text(encoding="utf-8")
        for d in sorted(base.iterdir())
        if (d / "SKILL.md").is_file()
    }


def tree(cwd: Path) -> dict[str, str]:
    files = {}
    for p in sorted(cwd.rglob("*")):
        if p.is_file():
            files[str(p.relative_to(cwd))] = p.read_text(encoding="utf-8", errors="replace")
    return files


def brain(prompt: str, skill_text: str) -> tuple[str, bool]:
    """(answer, whether to save it to answer.txt)."""
    text = prompt.strip()
    # an explicit invocation (/name or $name) comes first; the task follows it
    if text.startswith(("/", "$")) and " " in text:
        text = text.split(" ", 1)[1]
    answer = text
    if HELPFUL in skill_text and text.startswith("word-"):
        answer = answer.upper()
    if HARMFUL in skill_text:
        answer = answer[::-1]
    return answer, SAVE in skill_text


def mode_for(config: dict, prompt: str) -> str:
    for needle, mode in (config.get("modes") or {}).items():
        if needle in prompt:
            return mode
    return config.get("mode", "agent")


def wants_skill(config: dict, prompt: str) -> bool:
    """Whether the agent loads the installed skill for `prompt`: `invoke` (always or
    never), or, with `invoke_when`, only when the prompt holds one of its words (as a
    model picks a skill whose description names the request's topic)."""
    words = config.get("invoke_when")
    if words is not None:
        return any(w.lower() in prompt.lower() for w in words)
    return bool(config.get("invoke", True))


def description_of(skill_text: str) -> str:
    """The frontmatter's `description:` value as the CLI lists it: plain, or quoted
    the way skillopt writes it (double quotes with JSON's escapes, or YAML's single
    quotes); indented lines that continue it are joined with spaces."""
    lines = skill_text.split("\n")
    if not lines or lines[0].strip() != "---":
        return ""
    value: list[str] | None = None
    for line in lines[1:]:
        if line.strip() == "---":
            break
        if value is None:
            if line.startswith("description:"):
                value = [line.split(":", 1)[1].strip()]
        elif line[:1] in (" ", "\t"):
            value.append(line.strip())
        else:
            break
    if not value:
        return ""
    head, rest = value[0], value[1:]
    if head in (">", "|", ">-", "|-"):  # a folded or literal block: its lines are the value
        return " ".join(rest)
    text = " ".join([head, *rest])
    if text.startswith('"'):
        try:
            return str(json.loads(text))
        except ValueError:
            return text.strip('"')
    if text.startswith("'") and text.endswith("'"):
        return text[1:-1].replace("''", "'")
    return text


def pick_skill(config: dict, prompt: str, skills: dict[str, str]) -> tuple[str | None, bool]:
    """(the installed skill the agent would load, whether it loads it). With
    `choose_by_description`: the one the routing rule picks from every installed
    skill's name and description (none loads when none shares two content words);
    else the one skill installed, loaded as `wants_skill` says."""
    if config.get("choose_by_description"):
        if not config.get("discover", True):
            return None, False
        chosen = choose(prompt, [(n, description_of(t)) for n, t in skills.items()])
        return chosen, chosen is not None
    return next(iter(skills), None), wants_skill(config, prompt)


def hang(bin_dir: Path) -> None:
    """Sleep forever, with a child that sleeps too: only a group kill stops both."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(bin_dir / "hang.pids", "a") as f:
        f.write(f"{os.getpid()} {child.pid}\n")
    time.sleep(600)


def fail_usage(message: str, code: int) -> int:
    sys.stderr.write(message + "\n")
    return code


# variables whose values a test checks (besides FAKE_*)
SEEN = (
    "HOME",
    "TMPDIR",
    "CODEX_HOME",
    "CLAUDE_CODE_MAX_RETRIES",
    "DISABLE_AUTOUPDATER",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    "DISABLE_TELEMETRY",
)


def base_record(argv: list[str], stdin: str, cwd: Path) -> dict:
    home = Path.home()
    return {
        "argv": argv,
        "stdin": stdin,
        "cwd": str(cwd),
        "env": sorted(os.environ),
        "env_values": {k: os.environ[k] for k in os.environ if k.startswith("FAKE_")},
        "seen": {k: os.environ[k] for k in SEEN if k in os.environ},
        "home_files": tree(home) if home.is_dir() else {},
        "files": tree(cwd),
        "pid": os.getpid(),
    }


# ---------------------------------------------------------------------- claude
CLAUDE_VALUED = {
    "--output-format",
    "--input-format",
    "--permission-mode",
    "--allowedTools",
    "--allowed-tools",
    "--disallowedTools",
    "--disallowed-tools",
    "--tools",
    "--max-turns",
    "--model",
    "--settings",
    "--append-system-prompt",
    "--system-prompt",
    "--add-dir",
    "--setting-sources",
    "--max-budget-usd",
    "--fallback-model",
    "--session-id",
    "--mcp-config",
    "--json-schema",
}
CLAUDE_FLAGS = {
    "-p",
    "--print",
    "--verbose",
    "--bare",
    "--no-session-persistence",
    "--include-partial-messages",
    "--strict-mcp-config",
    "--dangerously-skip-permissions",
}


def claude(bin_dir: Path, argv: list[str]) -> int:
    if argv == ["--version"]:
        print(CLAUDE_VERSION)
        return 0
    opts: dict[str, str] = {}
    flags: set[str] = set()
    positional = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in CLAUDE_VALUED:
            if i + 1 >= len(argv):
                return fail_usage(f"error: option '{a}' argument missing", 1)
            opts[a] = argv[i + 1]
            i += 2
            continue
        if a in CLAUDE_FLAGS:
            flags.add(a)
        elif a.startswith("-"):
            return fail_usage(f"error: unknown option '{a}'", 1)
        else:
            positional.append(a)
        i += 1
    if not flags & {"-p", "--print"}:
        return fail_usage("error: the stand-in only supports print mode (-p)", 1)
    fmt = opts.get("--output-format", "text")
    if fmt not in ("text", "json", "stream-json"):
        return fail_usage(
            f"error: option '--output-format <format>' argument '{fmt}' is invalid", 1
        )
    if fmt == "stream-json" and "--verbose" not in flags:
        return fail_usage(
            "Error: When using --print, --output-format=stream-json requires --verbose", 1
        )
    mode_opt = opts.get("--permission-mode")
    if mode_opt is not None and mode_opt not in PERMISSION_MODES:
        return fail_usage(
            f"error: option '--permission-mode <mode>' argument '{mode_opt}' is invalid", 1
        )
    if "--max-turns" in opts and not opts["--max-turns"].isdigit():
        return fail_usage("error: --max-turns must be a number", 1)
    stdin = sys.stdin.read()
    prompt = " ".join(positional) or stdin
    if not prompt.strip():
        return fail_usage(
            "Error: Input must be provided either through stdin or as a prompt "
            "argument when using --print",
            1,
        )
    cwd = Path.cwd()
    config = load_config(bin_dir, "claude")
    skills = read_skills(cwd, ".claude/skills")
    log_call(bin_dir, "claude", {**base_record(argv, stdin, cwd), "skills": skills})
    mode = mode_for(config, prompt)
    if mode == "hang":
        hang(bin_dir)
    if mode == "retry_hang":  # a rejected key with the default retries: retry events, then
        for attempt in (1, 2):  # a long wait the timeout cuts short
            print(
                json.dumps(
                    {
                        "type": "system",
                        "subtype": "api_retry",
                        "attempt": attempt,
                        "max_retries": 10,
                        "retry_delay_ms": 30000.0,
                        "error_status": 401,
                        "error": "authentication_failed",
                    }
                ),
                flush=True,
            )
        hang(bin_dir)
    if mode == "garbage":
        print("<html>503 Service Temporarily Unavailable</html>")
        return 0
    if mode == "exit":
        sys.stderr.write(config.get("stderr", "fatal: something broke inside the agent") + "\n")
        return int(config.get("exit_code", 3))

    name, invoke = pick_skill(config, prompt, skills)
    skill_text = skills[name] if (name and invoke) else ""
    answer, save = brain(prompt, skill_text)
    # as claude 2.1.197 prints it: the skills it discovered (project ones first, then
    # built-ins), the commands `/name` expands, and the model that runs
    listed = [
        *(skills if config.get("discover", True) else []),
        *personal_skills(opts),
        "verify",
        "debug",
    ]
    model = opts.get("--model") or os.environ.get("ANTHROPIC_MODEL") or "claude-opus-4-8"
    messages: list[dict] = [
        {
            "type": "system",
            "subtype": "init",
            "session_id": "s-1",
            "cwd": str(cwd),
            "skills": listed,
            "slash_commands": [*listed, "clear", "compact"],
            "tools": ["Bash", "Read", "Write", "Skill"],
            "model": model + "[1m]",
            "claude_code_version": CLAUDE_VERSION.split()[0],
        }
    ]
    retries = int(os.environ.get("CLAUDE_CODE_MAX_RETRIES", "10"))
    result: dict = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 1200,
        "duration_api_ms": 900,
        "num_turns": 1,
        "result": answer,
        "stop_reason": "end_turn",
        "session_id": "s-1",
        "total_cost_usd": 0.0125,
        "uuid": "u-1",
        "usage": {
            "input_tokens": 100,
            "cache_creation_input_tokens": 20,
            "cache_read_input_tokens": 30,
            "output_tokens": 12,
        },
        "modelUsage": {
            opts.get("--model", "claude-sonnet-4-5"): {
                "inputTokens": 100,
                "outputTokens": 12,
                "costUSD": 0.0125,
            }
        },
        "permission_denials": [],
    }
    if mode == "agent":
        if name and invoke:
            messages.append(
                _assistant(
                    [{"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": name}}]
                )
            )
            messages.append(_tool_result("t1", f"Launching skill: {name}\n\n{skills[name]}"))
        if save:
            messages.append(
                _assistant(
                    [
                        {
                            "type": "tool_use",
                            "id": "t2",
                            "name": "Write",
                            "input": {"file_path": str(cwd / "answer.txt"), "content": answer},
                        }
                    ]
                )
            )
            (cwd / "answer.txt").write_text(answer + "\n", encoding="utf-8")
            messages.append(_tool_result("t2", "File created successfully"))
        if config.get("big_output"):
            messages.append(
                _assistant(
                    [
                        {
                            "type": "tool_use",
                            "id": "t3",
                            "name": "Bash",
                            "input": {"command": "cat big.log"},
                        }
                    ]
                )
            )
            messages.append(_tool_result("t3", "x" * 50_000))
        messages.append(_assistant([{"type": "text", "text": answer}]))
        result["num_turns"] = len([m for m in messages if m["type"] == "assistant"])
    elif mode in ("auth", "server"):
        # the real CLI retries, saying so, then reports the API's refusal as a
        # "success" result with is_error and the HTTP status
        status = 401 if mode == "auth" else 500
        for attempt in range(1, retries + 1):
            messages.append(
                {
                    "type": "system",
                    "subtype": "api_retry",
                    "attempt": attempt,
                    "max_retries": retries,
                    "retry_delay_ms": 500.0,
                    "error_status": status,
                    "error": "authentication_failed" if mode == "auth" else "server_error",
                }
            )
        result.update(
            is_error=True,
            api_error_status=status,
            total_cost_usd=0,
            num_turns=1,
            result="Invalid API key · Fix external API key"
            if mode == "auth"
            else "API Error: 500 internal server error. This is a server-side issue",
        )
    elif mode == "error":
        result.update(
            subtype="error_during_execution",
            is_error=True,
            errors=["Tool execution failed: ENOSPC"],
        )
        result.pop("result")
    elif mode == "max_turns":
        result.update(subtype="error_max_turns", is_error=True, num_turns=3)
        result.pop("result")
    messages.append(result)
    if fmt == "stream-json":
        for m in messages:
            print(json.dumps(m), flush=True)
    elif config.get("shape") == "array":
        print(json.dumps(messages))
    elif fmt == "json":
        print(json.dumps(result))
    else:
        print(result.get("result", ""))
    return 1 if result["is_error"] and mode != "max_turns" else 0


def personal_skills(opts: dict) -> list[str]:
    """The user's own skills, which the CLI lists unless --setting-sources leaves out
    `user` (observed with 2.1.197)."""
    sources = opts.get("--setting-sources", "user,project,local").split(",")
    if "user" not in sources:
        return []
    config = os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
    return list(read_skills(Path(config), "skills"))


def _assistant(content: list) -> dict:
    return {
        "type": "assistant",
        "message": {"role": "assistant", "content": content},
        "session_id": "s-1",
    }


def _tool_result(tool_use_id: str, text: str) -> dict:
    return {
        "type": "user",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool_use_id, "content": text}],
        },
        "session_id": "s-1",
    }


# ---------------------------------------------------------------------- codex
CODEX_VALUED = {
    "--sandbox",
    "-s",
    "-C",
    "--cd",
    "-m",
    "--model",
    "--output-last-message",
    "-o",
    "-c",
    "--config",
    "-p",
    "--profile",
    "--output-schema",
    "--add-dir",
    "--color",
    "-i",
    "--image",
    "--local-provider",
}
CODEX_FLAGS = {
    "--json",
    "--experimental-json",
    "--skip-git-repo-check",
    "--ephemeral",
    "--ignore-user-config",
    "--ignore-rules",
    "--oss",
    "--dangerously-bypass-approvals-and-sandbox",
    "--yolo",
}


def codex(bin_dir: Path, argv: list[str]) -> int:
    if argv == ["--version"]:
        print(CODEX_VERSION)
        return 0
    if not argv or argv[0] != "exec":
        return fail_usage("error: the stand-in only supports `codex exec`", 2)
    opts: dict[str, str] = {}
    flags: set[str] = set()
    positional = []
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in CODEX_VALUED:
            if i + 1 >= len(argv):
                return fail_usage(f"error: a value is required for '{a}'", 2)
            opts[a] = argv[i + 1]
            i += 2
            continue
        if a in CODEX_FLAGS:
            flags.add(a)
        elif a == "-" or not a.startswith("-"):
            positional.append(a)
        else:  # --full-auto among them: removed upstream
            return fail_usage(f"error: unexpected argument '{a}' found", 2)
        i += 1
    sandbox = opts.get("--sandbox", opts.get("-s", "read-only"))
    if sandbox not in SANDBOXES:
        return fail_usage(f"error: invalid value '{sandbox}' for '--sandbox'", 2)
    cwd = Path(opts.get("-C", opts.get("--cd", "."))).resolve()
    if "--skip-git-repo-check" not in flags and not any(
        (d / ".git").exists() for d in (cwd, *cwd.parents)
    ):
        return fail_usage(
            "Not inside a trusted directory and --skip-git-repo-check was not specified.", 1
        )
    stdin = sys.stdin.read()
    if positional == ["-"]:
        prompt = stdin
    elif positional:
        prompt = positional[0]
    else:
        prompt = stdin
    if not prompt.strip():
        return fail_usage("No prompt provided via stdin.", 1)
    config = load_config(bin_dir, "codex")
    skills = read_skills(cwd, ".agents/skills")
    codex_home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    # what the real CLI also reads: the user's skills and global AGENTS.md
    user_skills = {
        **read_skills(Path.home(), ".agents/skills"),
        **read_skills(codex_home, "skills"),
    }
    log_call(
        bin_dir,
        "codex",
        {
            **base_record(argv, stdin, cwd),
            "skills": skills,
            "user_skills": sorted(user_skills),
            "codex_home_files": tree(codex_home) if codex_home.is_dir() else {},
            "process_cwd": os.getcwd(),
        },
    )
    json_out = bool(flags & {"--json", "--experimental-json"})
    last_file = opts.get("--output-last-message", opts.get("-o"))
    mode = mode_for(config, prompt)

    def emit(event: dict) -> None:
        if json_out:
            print(json.dumps(event), flush=True)

    emit({"type": "thread.started", "thread_id": "th-1"})
    emit({"type": "turn.started"})
    env_key = provider_env_key(codex_home)
    if env_key and not os.environ.get(env_key):  # as codex 0.171 says it, on every turn
        message = f"Missing environment variable: `{env_key}`."
        emit({"type": "error", "message": message})
        emit({"type": "turn.failed", "error": {"message": message}})
        return 1
    if mode == "hang":
        hang(bin_dir)
    if mode == "garbage":
        print("Segmentation fault (core dumped) <<< not json >>>")
        return 0
    if mode in ("auth", "quota"):
        message = (
            "unexpected status 401 Unauthorized: invalid api key"
            if mode == "auth"
            else "You exceeded your current quota, please check your plan and billing details."
        )
        emit({"type": "error", "message": message})
        emit({"type": "turn.failed", "error": {"message": message}})
        sys.stderr.write(f"ERROR: {message}\n")
        return 1
    if mode == "exit":
        sys.stderr.write(config.get("stderr", "thread 'main' panicked at codex-rs/exec") + "\n")
        return int(config.get("exit_code", 101))

    name, invoke = pick_skill(config, prompt, skills)
    if mode == "sandbox_broken":  # every command fails before it starts (observed)
        cmd = {
            "id": "item_1",
            "type": "command_execution",
            "command": f"/bin/bash -lc 'cat .agents/skills/{name}/SKILL.md'",
            "aggregated_output": "bwrap: setting up uid map: Permission denied\n"
            "bubblewrap sandbox: namespace setup mismatch",
            "exit_code": 8,
            "status": "failed",
        }
        emit({"type": "item.completed", "item": cmd})
        invoke = False
    skill_text = skills[name] if (name and invoke) else ""
    answer, save = brain(prompt, skill_text)
    if name and invoke:
        cmd = {
            "id": "item_1",
            "type": "command_execution",
            "command": f"bash -lc 'cat .agents/skills/{name}/SKILL.md'",
            "aggregated_output": "",
            "exit_code": None,
            "status": "in_progress",
        }
        emit({"type": "item.started", "item": cmd})
        emit(
            {
                "type": "item.completed",
                "item": {
                    **cmd,
                    "aggregated_output": skills[name],
                    "exit_code": 0,
                    "status": "completed",
                },
            }
        )
    emit({"type": "item.plan.delta", "item_id": "item_2", "delta": "thinking"})  # skipped
    emit({"type": "session.configured", "model": opts.get("-m", "gpt-5-codex")})  # unknown
    emit(
        {
            "type": "item.completed",
            "item": {"id": "item_3", "type": "reasoning", "text": "**Answering the task**"},
        }
    )
    emit(
        {
            "type": "item.completed",
            "item": {"id": "item_4", "type": "hologram", "payload": {"x": 1}},
        }
    )  # unknown item type
    if save:
        if sandbox == "read-only":
            emit(
                {
                    "type": "item.completed",
                    "item": {
                        "id": "item_5",
                        "type": "file_change",
                        "status": "failed",
                        "changes": [{"path": "answer.txt", "kind": "add"}],
                    },
                }
            )
        else:
            (cwd / "answer.txt").write_text(answer + "\n", encoding="utf-8")
            emit(
                {
                    "type": "item.completed",
                    "item": {
                        "id": "item_5",
                        "type": "file_change",
                        "status": "completed",
                        "changes": [{"path": "answer.txt", "kind": "add"}],
                    },
                }
            )
    emit(
        {
            "type": "item.completed",
            "item": {"id": "item_6", "type": "agent_message", "text": answer},
        }
    )
    emit(
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 200, "cached_input_tokens": 50, "output_tokens": 20},
        }
    )
    if last_file:
        Path(last_file).write_text(answer, encoding="utf-8")
    if not json_out:
        print(answer)
    return 0


def provider_env_key(codex_home: Path) -> str | None:
    """The `env_key` of the provider config.toml selects (a line-based read: the
    stand-in has no TOML parser on Python 3.10)."""
    path = codex_home / "config.toml"
    if not path.is_file():
        return None
    provider, section, keys = None, None, {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]")
        elif "=" in line:
            key, value = (p.strip() for p in line.split("=", 1))
            value = value.strip('"')
            if section is None and key == "model_provider":
                provider = value
            elif section and key == "env_key":
                keys[section] = value
    return keys.get(f"model_providers.{provider}") if provider else None


def main(name: str, bin_dir: str) -> int:
    tool = {"claude": claude, "codex": codex}[name]
    return tool(Path(bin_dir), sys.argv[1:])
