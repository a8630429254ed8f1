"""Every agent harness on the Ray cluster: Claude Code and Codex (their stand-ins,
given by absolute path so the workers find them) and a command agent train on the
two-node cluster with the local executor's decisions, scores and store rows; the
skill reached each agent's workspace on a worker."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest
import yaml
from fakes.agent_cli import HELPFUL
from test_train_agents import COMMAND_AGENT  # one module: pytest loads it by this name
from train.world import ScriptedOptimizer, edits_reply, flags, models, world  # noqa: F401

from skillopt import api

pytestmark = pytest.mark.ray
VOLATILE = {"created_at", "updated_at", "latency_s", "trajectory"}


def store_rows(path: Path) -> list[dict]:
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    try:
        found = [dict(r) for r in db.execute("SELECT * FROM rollouts")]
    finally:
        db.close()
    out = [{k: v for k, v in r.items() if k not in VOLATILE} for r in found]
    return sorted(out, key=lambda r: json.dumps(r, sort_keys=True, default=str))


CHECKOUT = Path(__file__).resolve().parents[2]


def checkout_runs() -> set[str]:
    """What the checkout's own runs/ holds (a worker resolving a run's relative path
    against its working directory would write there)."""
    where = CHECKOUT / "runs"
    return {p.name for p in where.iterdir()} if where.is_dir() else set()


def settings_for(root: Path, harness: str, agents) -> dict:
    if harness == "command":
        script = root / "agent.py"
        script.write_text(COMMAND_AGENT, encoding="utf-8")
        argv = [sys.executable, str(script), "{skill_file}", "{task_file}", "{steps_file}"]
        return {"command": {"argv": argv}}
    name = "claude" if harness == "claude-code" else "codex"
    section = "claude_code" if harness == "claude-code" else "codex"
    return {section: {"binary": str(agents.bin / name)}}


@pytest.mark.parametrize("harness", ["claude-code", "codex", "command"])
def test_an_agent_harness_trains_on_the_cluster_as_locally(
    ray_cluster,
    world,
    models,
    agents,
    harness,
):
    root = world["root"]
    base = settings_for(root, harness, agents)
    before = checkout_runs()
    results = {}
    for executor in ("local", "ray"):
        extra = {"executor": "ray", "ray": ray_cluster.settings()} if executor == "ray" else {}
        (root / "skillopt.yaml").write_text(yaml.safe_dump({**base, **extra}))
        models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
        result = api.train(
            world["skill"],
            world["suite"],
            **flags(epochs=1, harness=harness, target=None, store=f"{executor}.sqlite"),
        )
        results[executor] = result
    local, remote = results["local"].summary, results["ray"].summary
    strip = ("wall_s", "commit")
    assert [{k: v for k, v in s.items() if k not in strip} for s in remote["steps"]] == [
        {k: v for k, v in s.items() if k not in strip} for s in local["steps"]
    ]
    assert remote["steps"][1]["decision"] == "accepted" and remote["best_val"] == 1.0
    assert {k: v["mean"] for k, v in remote["test"].items()} == {
        k: v["mean"] for k, v in local["test"].items()
    }
    assert store_rows(root / "ray.sqlite") == store_rows(root / "local.sqlite")
    assert HELPFUL in (results["ray"].run_dir / "best" / "SKILL.md").read_text()
    # the failed tasks' workspaces stay with the run, wherever the workers run
    assert any((results["ray"].run_dir / "workspaces").iterdir())
    assert checkout_runs() == before, "a worker wrote under the checkout's runs/"
    if harness != "command":  # the stand-in saw the candidate skill on a worker
        calls = agents.calls("claude" if harness == "claude-code" else "codex")
        assert any(HELPFUL in c["skills"].get("words", "") for c in calls)


def eval_on_cluster(root: Path, skill: Path, suite: Path, section: dict, cluster) -> dict:
    (root / "skillopt.yaml").write_text(
        yaml.safe_dump({**section, "executor": "ray", "ray": cluster.settings()})
    )
    result = api.evaluate(skill, suite, harness="command", split="test")
    (only,) = result.all_rollouts
    return only.to_dict()


def test_supporting_files_travel_with_the_skill(ray_cluster, isolated, tmp_path):
    """The agent answers with a supporting file of the skill, read from where the
    worker installed it: the file came with the task, from bytes the driver read."""
    from helpers import write_skill, write_suite

    skill = write_skill(isolated / "skills", "notes")
    (skill / "reference").mkdir()
    (skill / "reference" / "answer.txt").write_text("FROM-THE-SUPPORT-FILE\n")
    suite = write_suite(
        isolated / "tasks" / "notes.yaml",
        [{"id": "t1", "input": "read it", "expected": "FROM-THE-SUPPORT-FILE", "split": "test"}],
    )
    argv = ["sh", "-c", 'cat "$0/reference/answer.txt"', "{skill_dir}"]
    rollout = eval_on_cluster(isolated, skill, suite, {"command": {"argv": argv}}, ray_cluster)
    assert rollout["scored"] and rollout["score"] == 1.0, rollout


def test_an_agent_timeout_on_a_worker_is_unscored_as_locally(ray_cluster, isolated):
    from helpers import write_skill, write_suite

    skill = write_skill(isolated / "skills", "slow")
    suite = write_suite(
        isolated / "tasks" / "slow.yaml",
        [{"id": "t1", "input": "wait", "expected": "done", "split": "test"}],
    )
    section = {"command": {"argv": ["sleep", "30"]}, "agent": {"timeout": 1}}
    (isolated / "skillopt.yaml").write_text(yaml.safe_dump(section))
    local = api.evaluate(skill, suite, harness="command", split="test").all_rollouts[0].to_dict()
    remote = eval_on_cluster(isolated, skill, suite, section, ray_cluster)
    assert not remote["scored"] and remote["error_kind"] == local["error_kind"] == "timeout"
    assert remote["error"] == local["error"]
