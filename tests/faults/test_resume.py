"""kill -9 at every stage of a training run, then `--resume`: the same decisions, the
same best skill, git and state.json in agreement, and accounting equal to what the
provider answered.

Every run here is a real `skillopt train` child process whose models call a
loopback provider in this process (tests/faults/provider.py). The provider kills
the child (SIGKILL) when a chosen request arrives, before answering it, and counts
every answer it sent, across kills and resumes. Runs use `-j 1`, so each answered
call is recorded (or not) before the next request is sent: the store's ledger must
match the provider's count exactly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers import write_skill, write_suite
from train.world import HARMFUL, NEUTRAL, PARTIAL, edits_reply, follow_skill

from skillopt import api
from skillopt.store.audit import parse_trailers

HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.slow  # a dozen `skillopt train` child processes, killed and resumed
SPLITS = ["train", "train", "train", "val", "val", "test", "test", "train"]


class Provider:
    """Answers like a provider would for the test world, counts answers, and kills the
    child when `kill_at(category, log)` first says so."""

    def __init__(self, split_of: dict[str, str]):
        self.split_of = split_of
        self.log: list[str] = []  # category of every request received, in order
        self.answered = Counter()
        self.kill_at = None
        # (category, n): hold requests of `category` unanswered until n of them are in
        # flight at once, then kill the child (they are never answered)
        self.kill_when_held: tuple[str, int] | None = None
        self._held: list[str] = []
        self._release = threading.Event()
        self.pid: int | None = None
        self.kills = 0
        self.drafts = 0
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with outer._lock:
                    category = outer.category(body)
                    outer.log.append(category)
                    if outer.kill_at is not None and outer.kill_at(category, outer.log):
                        outer.kill_at = None
                        outer.kills += 1
                        os.kill(outer.pid, signal.SIGKILL)
                        return  # never answered: the connection just drops
                    hold = outer.hold(category)
                if hold:
                    outer._release.wait()  # set once the child is dead
                    return
                with outer._lock:
                    content = outer.answer(category, body["messages"])
                data = json.dumps({"content": content}).encode()
                self.send_response(200)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                with outer._lock:
                    outer.answered[category] += 1

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def hold(self, category: str) -> bool:
        """Whether to hold this request (under the lock): the n-th held kills the
        child, which releases every held request unanswered."""
        if self.kill_when_held is None or self.kill_when_held[0] != category:
            return False
        self._held.append(category)
        if len(self._held) == self.kill_when_held[1]:
            self.kill_when_held = None
            self.kills += 1
            os.kill(self.pid, signal.SIGKILL)
            self._release.set()
        return True

    def received(self, *categories: str) -> int:
        """Requests of these categories the provider received, answered or not."""
        return sum(1 for c in self.log if c in categories)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def category(self, body: dict) -> str:
        messages = body["messages"]
        if body["role"] == "target":
            return self.split_of[messages[-1]["content"]]
        prompt = messages[1]["content"]
        if "Tasks the agent FAILED" in prompt or "Tasks the agent SOLVED" in prompt:
            return "reflect"
        if '"guidance"' in prompt:
            return "slow_update"
        return "notes"

    def answer(self, category: str, messages: list[dict]) -> str:
        if category in ("train", "val", "test"):
            return follow_skill(messages)
        prompt = messages[1]["content"]
        if category == "reflect":
            if "Tasks the agent SOLVED" in prompt:
                return json.dumps({"edits": []})
            # the harmful edit first; once memory says it was rejected, the half-helpful
            # one (validation 0.75: a saturated split would end training before the
            # epoch's slow update)
            return edits_reply(PARTIAL if HARMFUL in prompt else HARMFUL)
        if category == "slow_update":
            # a different draft on every call, as a sampled model would give: asking
            # again after a crash would gate (and commit) different guidance
            self.drafts += 1
            return json.dumps({"guidance": f"- {NEUTRAL} (draft {self.drafts})"})
        return json.dumps({"notes": "- the helpful rule is about WORD items"})


def nth(category: str, n: int):
    """Kill when the n-th request of `category` arrives."""
    return lambda cat, log: cat == category and log.count(category) == n


def first_after(category: str, after: str):
    """Kill at the first `category` request after the first `after` request."""

    def check(cat, log):
        if cat != category or after not in log[:-1]:
            return False
        since = log[log.index(after) + 1 : -1]
        return category not in since

    return check


KILL_POINTS = {
    "initial": nth("val", 2),  # inside the baseline evaluation
    "rollouts": nth("train", 1),  # right after the initial decision (step 1's batch)
    "reflect": nth("reflect", 1),
    "gate": first_after("val", "reflect"),  # the candidate's validation
    "notes": nth("notes", 1),  # epoch 1 changed nothing: its slow update is skipped
    "slow_update": nth("slow_update", 1),  # epoch 2's, after its accepted step
    "slow_gate": first_after("val", "slow_update"),  # guidance asked, not yet gated
    "epoch_2": first_after("reflect", "notes"),  # epoch 2's first reflection, which reads the notes
    "test": nth("test", 1),
}


@pytest.fixture
def world(isolated):
    skill = write_skill(
        isolated / "skills",
        "words",
        body="# Words\n\nRewrite the item you are given.\n\n## Rules\n\n"
        "- Reply with the item only.\n",
    )
    items, split_of = [], {}
    for i, split in enumerate(SPLITS):
        for kind, expected in (("word", f"WORD-{i}"), ("keep", f"keep-{i}")):
            items.append(
                {"id": f"{kind}-{i}", "input": f"{kind}-{i}", "expected": expected, "split": split}
            )
            split_of[f"{kind}-{i}"] = split
    suite = write_suite(isolated / "tasks" / "words.yaml", items)
    provider = Provider(split_of)
    yield {"root": isolated, "skill": skill, "suite": suite, "provider": provider}
    provider.close()


def train(world, *args: str, jobs: int = 1) -> subprocess.CompletedProcess:
    provider = world["provider"]
    path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, "SKILLOPT_TEST_PROVIDER": provider.url}
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillopt", "train", *args, "-j", str(jobs)],
        cwd=world["root"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    provider.pid = proc.pid
    stdout, stderr = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def fresh(world, *extra: str, jobs: int = 1) -> subprocess.CompletedProcess:
    return train(
        world,
        *extra,
        str(world["skill"]),
        "--tasks",
        str(world["suite"]),
        "--target",
        "scripted/provider:target",
        "--optimizer",
        "scripted/provider:optimizer",
        "--epochs",
        "2",
        "--batch-size",
        "40",
        "--optimizer-concurrency",
        "1",  # one request at a time, as rollouts (-j 1): a kill never races another answer
        jobs=jobs,
    )


def run_dir(world) -> Path:
    (found,) = [p for p in (world["root"] / "runs").iterdir() if (p / "run.yaml").is_file()]
    return found


def outcome(world) -> dict:
    """What a finished run decided and produced, and its internal agreement."""
    run = run_dir(world)
    summary = json.loads((run / "summary.json").read_text())
    state = json.loads((run / "state.json").read_text())
    steps = [rec["step"] for rec in state["steps"]]
    assert steps == sorted(set(steps)), f"a step was recorded twice: {steps}"
    report = (run / "report.md").read_text()
    for step in steps:
        assert report.count(f"\n| {step} |") == 1, f"step {step} twice in report.md"
    # state.json and git agree on every committed step's skill
    commits = {c.step: c for c in api.run_history(run.name)}
    assert sorted(commits) == [rec["step"] for rec in state["steps"] if rec.get("commit")]
    for rec in state["steps"]:
        if rec.get("commit"):
            trailers = parse_trailers(commits[rec["step"]].message)
            expected = rec.get("skill_hash") or state["initial"]["hash"]
            assert commits[rec["step"]].sha == rec["commit"]
            assert trailers["Skillopt-Skill-Hash"] == expected, f"step {rec['step']}"
    return {
        "decisions": [(s["step"], s["kind"], s["decision"]) for s in summary["steps"]],
        "best": (run / "best" / "SKILL.md").read_text(),
        "test": summary["test"],
        "best_val": summary["best_val"],
        "accounting": summary["accounting"],
        "guidance": [rec.get("guidance") for rec in state["steps"] if rec["kind"] == "slow_update"],
    }


def calls_recorded(accounting: dict) -> int:
    return accounting["target_calls"] + accounting["optimizer_calls"]


TARGET = ("train", "val", "test")
OPTIMIZER = ("reflect", "slow_update", "notes")


def assert_counts_what_was_received(accounting: dict, provider: Provider) -> None:
    """Every request the provider received is in the accounting, answered or not: a
    request in flight at a kill may be billed, so it counts (at its estimate) and
    again when the resumed run asks it anew."""
    assert accounting["target_calls"] == provider.received(*TARGET)
    assert accounting["optimizer_calls"] == provider.received(*OPTIMIZER)


# extra flags per kill point: the slow update's candidate (guidance that changes
# nothing) is settled by a racing gate after the incumbent's one failing validation
# task; scored in full, the kill lands inside its gate for certain
FLAGS = {"slow_gate": ("--gate-full",)}


@pytest.fixture
def reference(world, request):
    """The uninterrupted run's outcome (the provider's counters are reset after it)."""
    point = getattr(request.node, "callspec", None)
    done = fresh(world, *FLAGS.get(point.params.get("point") if point else None, ()))
    assert done.returncode == 0, done.stderr
    result = outcome(world)
    answered = sum(world["provider"].answered.values())
    assert calls_recorded(result["accounting"]) == answered
    for path in (world["root"] / "runs").iterdir():  # a clean slate for the crashed run
        subprocess.run(["rm", "-rf", str(path)], check=True)
    provider = world["provider"]
    provider.log.clear()
    provider.answered.clear()
    provider.drafts = 0
    return result


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_kill_9_then_resume_gives_the_same_run(world, reference, point):
    provider = world["provider"]
    provider.kill_at = KILL_POINTS[point]
    crashed = fresh(world, *FLAGS.get(point, ()))
    assert crashed.returncode == -signal.SIGKILL, (point, crashed.stderr)
    assert provider.kills == 1
    resumed = train(world, "--resume", run_dir(world).name)
    assert resumed.returncode == 0, resumed.stderr
    assert provider.kills == 1

    got = outcome(world)
    assert got["decisions"] == reference["decisions"]
    assert got["best"] == reference["best"]
    assert got["test"] == reference["test"]
    assert got["best_val"] == reference["best_val"]
    # every call the provider received, in both processes, is in the accounting: the
    # one in flight at the kill twice (counted when sent, and asked again)
    assert_counts_what_was_received(got["accounting"], provider)
    assert sum(provider.answered.values()) == len(provider.log) - 1
    # a finished, paid optimizer call is never asked again: epoch 1 left the skill
    # unchanged (no slow update), epoch 2 is the last (no notes)
    assert provider.answered["slow_update"] == 1
    assert provider.answered["notes"] == 1
    assert got["guidance"] == [None, "- Be polite. (draft 1)"]
    # the console tells the story once: once decided, step 0 is not announced again
    assert ("step 0 " in resumed.stdout) == (point == "initial")


def test_chained_kills_at_every_stage(world, reference):
    """One run killed at each stage in turn, resumed after each kill."""
    provider = world["provider"]
    provider.kill_at = KILL_POINTS["initial"]
    assert fresh(world).returncode == -signal.SIGKILL
    for point in list(KILL_POINTS)[1:]:
        provider.kill_at = KILL_POINTS[point]
        killed = train(world, "--resume", run_dir(world).name)
        if provider.kill_at is None:  # it fired
            assert killed.returncode == -signal.SIGKILL, (point, killed.stderr)
    provider.kill_at = None
    done = train(world, "--resume", run_dir(world).name)
    assert done.returncode == 0, done.stderr
    assert provider.kills >= 6

    got = outcome(world)
    assert got["decisions"] == reference["decisions"]
    assert got["best"] == reference["best"]
    assert got["test"] == reference["test"]
    assert_counts_what_was_received(got["accounting"], provider)
    assert provider.answered["slow_update"] == 1


def test_rollouts_in_flight_at_a_kill_are_counted(world, reference):
    """Four rollouts sent at once (-j 4), none answered when the run is killed: the
    resumed run counts all four as spent, and again when it runs them."""
    provider = world["provider"]
    provider.kill_when_held = ("val", 4)  # the baseline's four validation tasks
    crashed = fresh(world, jobs=4)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert provider.received("val") == 4 and not provider.answered
    resumed = train(world, "--resume", run_dir(world).name, jobs=4)
    assert resumed.returncode == 0, resumed.stderr
    got = outcome(world)
    assert got["decisions"] == reference["decisions"]
    assert_counts_what_was_received(got["accounting"], provider)
    assert got["accounting"]["target_estimated"] == 4
    # the report and the console say which part of the totals is estimated
    said = "4 target rollouts in flight when the run was killed, counted as spent"
    assert said in (run_dir(world) / "report.md").read_text()
    assert said in (run_dir(world) / "report.html").read_text()
    assert said in " ".join(resumed.stdout.split())


def test_max_optimizer_calls_holds_across_a_kill(world, reference):
    """Killed while its third optimizer call is in flight, a run limited to three
    never sends a fourth: the resumed run counts the third as made."""
    assert reference["accounting"]["optimizer_calls"] > 3  # the limit binds
    provider = world["provider"]
    provider.kill_at = lambda cat, log: sum(c in OPTIMIZER for c in log) == 3
    crashed = fresh(world, "--max-optimizer-calls", "3")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    resumed = train(world, "--resume", run_dir(world).name, "--max-optimizer-calls", "3")
    assert provider.received(*OPTIMIZER) == 3
    assert resumed.returncode == 3, resumed.stderr
    assert "--max-optimizer-calls reached" in resumed.stdout + resumed.stderr
    state = json.loads((run_dir(world) / "state.json").read_text())
    assert state["accounting"]["optimizer_calls"] == 3
    assert state["accounting"]["optimizer_estimated"] == 1
