"""What a command pays before its first model call, and per call after it, for
provider models: through the providers' SDKs (the default for `openai/…` and
`anthropic/…`) against the same models through litellm (`client: litellm`, the
"before"), and a provider only litellm reaches.

Each model runs against its loopback stand-in (tests/fakes: the OpenAI-compatible
server, the Anthropic Messages API): `openai/gpt-4o-mini` and
`anthropic/claude-sonnet-4-5` reach theirs through OPENAI_BASE_URL and
ANTHROPIC_BASE_URL (no `api_base`, as a user of the real APIs runs them);
`openai/local-model` (an OpenAI-compatible server) and `mistral/mistral-small-latest`
(which litellm sends the OpenAI wire format) through an `api_base` in skillopt.yaml.

- Time to the first call: from starting `python -m skillopt eval SKILL --tasks SUITE
  --split test` (one task, a fresh child process and an empty store each time) to
  the stand-in receiving the first request; the median of 5 runs.
- CPU per call: the child's CPU time (user + system, `getrusage(RUSAGE_CHILDREN)`)
  of an eval of 200 tasks at `--concurrency 1`, less that of the one-task eval (the
  start-up and its one call; median of the 5), divided by the 199 further calls.
  Everything a rollout costs skillopt is in it: the chat harness, the request and
  reply, scoring, the store.

- The command line's own start: the wall time of `python -m skillopt --help` (a
  fresh process each time; the median), and for `--help`, `eval --help` and an eval
  of one task with a scripted model (`scripted/echo`: skillopt's own start, no
  provider SDK) how many skillopt modules were loaded, which heavy packages (git,
  litellm, Ray, llama.cpp, the SDKs) were imported and how many subprocesses were
  started (an audit hook counts them; `import git` alone would start `git version`
  twice); and the wall and CPU time of that scripted eval, start to exit.

Every child runs with skillopt's bytecode compiled first, as installing it compiles
it: a checkout run under PYTHONDONTWRITEBYTECODE=1 would compile each of its ~90
modules on every start (about 0.3 s of CPU), which no installed copy pays.

Run: python benchmarks/startup_benchmark.py [--runs N] [--calls N] [--help-only]
Prints each figure next to its target (first call within 1.5 s, `--help` within
0.3 s on an idle machine); exits 0 whatever the numbers (a measurement, not a test).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fakes.anthropic_api import FakeAnthropic, Turn, prompt_text  # noqa: E402
from fakes.openai_server import FakeOpenAI  # noqa: E402
from helpers import SPAWN_AUDIT  # noqa: E402

TARGET_S = 1.5  # seconds from the command's start to its first model call
HELP_TARGET_S = 0.3  # seconds for `skillopt --help`, on an idle machine

HEAVY = ("git", "litellm", "ray", "llama_cpp", "openai", "anthropic", "httpx")

# imports the CLI and runs one command, then says what that loaded and ran
HELP_PROBE = (
    SPAWN_AUDIT
    + """
from skillopt.cli.main import app
try:
    app(ARGS)
except SystemExit:
    pass
ours = [m for m in sys.modules if m == "skillopt" or m.startswith("skillopt.")]
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))
print(json.dumps({"modules": len(ours), "heavy": heavy, "subprocesses": len(spawned)}))
"""
)


@dataclass(frozen=True)
class Case:
    target: str
    fake: str  # openai | anthropic
    client: str  # auto | litellm (skillopt.yaml's `client:`)
    way: str  # how the requests go, as printed
    via_env: bool = True  # the stand-in in the provider's variable, else an api_base


CASES = (
    Case("openai/gpt-4o-mini", "openai", "auto", "OpenAI SDK"),
    Case("openai/local-model", "openai", "auto", "OpenAI SDK (api_base)", via_env=False),
    Case("anthropic/claude-sonnet-4-5", "anthropic", "auto", "Anthropic SDK"),
    Case("mistral/mistral-small-latest", "openai", "auto", "litellm (its only way)", False),
    Case("openai/gpt-4o-mini", "openai", "litellm", "litellm (before)"),
    Case("openai/local-model", "openai", "litellm", "litellm (before)", via_env=False),
    Case("anthropic/claude-sonnet-4-5", "anthropic", "litellm", "litellm (before)"),
)


def write_fixture(root: Path, n: int) -> tuple[Path, Path]:
    skill = root / "skills" / "caps"
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text(
        "---\nname: caps\ndescription: Shout the word. Use in the start-up benchmark.\n"
        "---\n# Caps\n\nAnswer with the word in capital letters and nothing else.\n",
        encoding="utf-8",
    )
    items = [
        {"id": f"w{i:04d}", "input": f"word{i}", "expected": f"WORD{i}", "split": "test"}
        for i in range(n)
    ]
    suite = root / f"words-{n}.yaml"
    suite.write_text(yaml.safe_dump({"name": "words", "prompt": "Shout: {input}", "items": items}))
    return skill, suite


class Stand:
    """A loopback stand-in that answers in capitals and notes when a request came."""

    def __init__(self, kind: str):
        self.kind = kind
        self.first: float | None = None
        self.count = 0
        if kind == "openai":
            self.fake = FakeOpenAI(self._openai).__enter__()
            self.url = self.fake.base_url
        else:
            self.fake = FakeAnthropic(side_responder=self._anthropic)
            self.url = self.fake.url

    def _seen(self) -> None:
        if self.first is None:
            self.first = time.perf_counter()
        self.count += 1

    def _openai(self, body: dict) -> str:
        self._seen()
        return str(body["messages"][-1]["content"]).removeprefix("Shout: ").upper()

    def _anthropic(self, body: dict) -> Turn:
        self._seen()
        return Turn.text(prompt_text(body).removeprefix("Shout: ").upper())

    def reset(self) -> None:
        self.first, self.count = None, 0

    def close(self) -> None:
        self.fake.__exit__(None, None, None)


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child: this checkout's skillopt, bytecode written as usual."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **extra}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compile_bytecode() -> None:
    """skillopt's modules compiled once, as `pip install` compiles them."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "skillopt")],
        env=child_env(),
        check=True,
        capture_output=True,
    )


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_eval(case: Case, stand: Stand, work: Path, skill: Path, suite: Path, store: Path) -> dict:
    """One `skillopt eval` in a fresh child: wall time to the first request, CPU."""
    env = child_env(
        HOME=str(work / "home"),
        XDG_CACHE_HOME=str(work / "cache"),
        OPENAI_API_KEY="sk-benchmark-openai",
        ANTHROPIC_API_KEY="sk-benchmark-anthropic",
        MISTRAL_API_KEY="sk-benchmark-mistral",
    )
    if case.via_env:
        env["OPENAI_BASE_URL" if case.fake == "openai" else "ANTHROPIC_BASE_URL"] = stand.url
    for var in list(env):
        if var.startswith("SKILLOPT_"):
            del env[var]
    stand.reset()
    cpu = child_cpu()
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "skillopt",
            "eval",
            str(skill),
            "--tasks",
            str(suite),
            "--target",
            case.target,
            "--split",
            "test",
            "--concurrency",
            "1",
            "--store",
            str(store),
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0 or stand.first is None:
        raise RuntimeError(f"{case.target} ({case.way}) failed:\n{done.stdout}\n{done.stderr}")
    return {
        "first_s": stand.first - start,
        "cpu_s": child_cpu() - cpu,
        "calls": stand.count,
    }


def measure(case: Case, runs: int, calls: int, tmp: Path) -> dict:
    work = tmp / f"{case.target.replace('/', '_')}-{case.client}"
    (work / "home").mkdir(parents=True)
    stand = Stand(case.fake)
    try:
        model = {"client": case.client}
        if not case.via_env:
            model["api_base"] = stand.url
        (work / "skillopt.yaml").write_text(yaml.safe_dump({"models": {case.target: model}}))
        skill, one = write_fixture(work, 1)
        _, many = write_fixture(work, calls)
        starts = [
            run_eval(case, stand, work, skill, one, work / f"start-{i}.sqlite") for i in range(runs)
        ]
        long = run_eval(case, stand, work, skill, many, work / "calls.sqlite")
    finally:
        stand.close()
    start_cpu = statistics.median(s["cpu_s"] for s in starts)
    return {
        "first_s": statistics.median(s["first_s"] for s in starts),
        "first_all": [s["first_s"] for s in starts],
        "start_cpu_s": start_cpu,
        "cpu_per_call_ms": 1000 * (long["cpu_s"] - start_cpu) / (long["calls"] - 1),
        "calls": long["calls"],
    }


def help_wall(runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of `python -m skillopt --help`, each in a fresh process
    (CPU, user + system, says the same on a busy machine)."""
    env = child_env()
    times, cpus = [], []
    for _ in range(runs):
        cpu = child_cpu()
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "skillopt", "--help"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            check=True,
        )
        times.append(time.perf_counter() - start)
        cpus.append(child_cpu() - cpu)
    return times, cpus


def help_load(args: list[str], cwd: Path = ROOT) -> dict[str, Any]:
    """The skillopt modules loaded, the heavy packages imported and the subprocesses
    started by `skillopt ARGS`."""
    code = HELP_PROBE.replace("ARGS", repr(args)).replace("HEAVY", repr(HEAVY))
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=child_env(HOME=str(cwd / "home"), XDG_CACHE_HOME=str(cwd / "cache")),
        capture_output=True,
        text=True,
        check=True,
    )
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return found


def scripted_eval(runs: int, work: Path) -> tuple[list[str], list[float], list[float]]:
    """(the eval's arguments, wall and CPU seconds of each run): `skillopt eval` of one
    task with `scripted/echo`, start to exit, a fresh process and store each time."""
    (work / "home").mkdir(parents=True, exist_ok=True)
    skill, suite = write_fixture(work, 1)
    args = ["eval", str(skill), "--tasks", str(suite), "--target", "scripted/echo"]
    args += ["--split", "test", "--store"]
    env = child_env(HOME=str(work / "home"), XDG_CACHE_HOME=str(work / "cache"))
    times, cpus = [], []
    for i in range(runs):
        cpu = child_cpu()
        start = time.perf_counter()
        command = [sys.executable, "-m", "skillopt", *args, str(work / f"scripted-{i}.sqlite")]
        subprocess.run(command, cwd=work, env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
        cpus.append(child_cpu() - cpu)
    return [*args, str(work / "probe.sqlite")], times, cpus


def print_help_figures(runs: int) -> None:
    times, cpus = help_wall(runs)
    verdict = "meets" if statistics.median(times) <= HELP_TARGET_S else "misses"
    print(
        f"`skillopt --help`: {statistics.median(times):.2f} s (median of {runs}; {verdict} "
        f"<= {HELP_TARGET_S} s on an idle machine; runs {', '.join(f'{t:.2f}' for t in times)}), "
        f"CPU {statistics.median(cpus):.2f} s"
    )
    with tempfile.TemporaryDirectory(prefix="startup-benchmark-") as tmp:
        work = Path(tmp)
        eval_args, times, cpus = scripted_eval(runs, work)
        print(
            f"`skillopt eval` of one task with scripted/echo (no SDK), start to exit: "
            f"{statistics.median(times):.2f} s (median of {runs}; runs "
            f"{', '.join(f'{t:.2f}' for t in times)}), CPU {statistics.median(cpus):.2f} s"
        )
        for args, label in (
            (["--help"], "--help"),
            (["eval", "--help"], "eval --help"),
            (eval_args, "eval (scripted/echo)"),
        ):
            found = help_load(args, work)
            print(
                f"  skillopt {label}: {found['modules']} skillopt modules loaded, heavy "
                f"packages imported: {', '.join(found['heavy']) or 'none'}, "
                f"{found['subprocesses']} subprocesses started"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="start-ups to time per model")
    parser.add_argument("--calls", type=int, default=200, help="rollouts of the CPU run")
    parser.add_argument(
        "--help-only", action="store_true", help="measure the command line's start alone"
    )
    args = parser.parse_args(argv)
    compile_bytecode()
    print_help_figures(args.runs)
    if args.help_only:
        return 0
    with tempfile.TemporaryDirectory(prefix="startup-benchmark-") as tmp:
        results = [(c, measure(c, args.runs, args.calls, Path(tmp))) for c in CASES]
    print(
        f"time from `skillopt eval` starting to the first model call (median of {args.runs}; "
        f"target for openai/, anthropic/ and api_base models <= {TARGET_S} s), and CPU per "
        f"call over {args.calls} calls at concurrency 1:"
    )
    for case, m in results:
        verdict = "meets" if m["first_s"] <= TARGET_S else "misses"
        print(
            f"  {case.target:<29} {case.way:<23} first call {m['first_s']:.2f} s "
            f"({verdict} <= {TARGET_S} s; runs {', '.join(f'{s:.2f}' for s in m['first_all'])}), "
            f"start-up CPU {m['start_cpu_s']:.2f} s, CPU per call {m['cpu_per_call_ms']:.2f} ms"
        )
    before = {c.target: m for c, m in results if c.client == "litellm"}
    for case, m in results:
        b = before.get(case.target) if case.client == "auto" else None
        if b is not None:
            print(
                f"  {case.target}: first call {b['first_s']:.2f} s -> {m['first_s']:.2f} s "
                f"({b['first_s'] / m['first_s']:.1f}x sooner), CPU per call "
                f"{b['cpu_per_call_ms']:.2f} ms -> {m['cpu_per_call_ms']:.2f} ms"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
