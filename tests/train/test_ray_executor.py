"""`executor: ray` against a real Ray cluster on 127.0.0.1 (a head and a second
node, made with `ray start`): eval and train give the local executor's results bit
for bit (the same store rows, the same decisions); a worker killed mid-rollout is
retried by Ray, or left unscored when retries are off, never a 0; Ctrl-C stops the
remote tasks; a run of failures stops the run as locally."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml
from ray_cluster import ray_cluster  # noqa: F401  (fixture)
from typer.testing import CliRunner

from skillopt.cli.main import app

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


def test_eval_on_the_cluster_equals_the_local_executor(ray_cluster, world, models):  # noqa: F811
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
