"""A real Ray cluster on 127.0.0.1 for the tests of `executor: ray`: a head node and a
second worker node, each its own raylet with its own processes, made with `ray
start` as a user would, and stopped at the end of the session.

`ray_cluster` (session fixture) yields a `Cluster`: its `address` for `ray.address`,
and `settings(**extra)`, the `ray:` section a test passes (with a runtime_env whose
PYTHONPATH lets workers import the tests' own modules: scripted models defined in
a test module are pickled by reference). Without Ray the tests skip, except where
`SKILLOPT_REQUIRE_RAY=1` (CI) makes that a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# read at import: the `isolated` fixture clears every SKILLOPT_* variable
REQUIRE_RAY = os.environ.get("SKILLOPT_REQUIRE_RAY") == "1"
TESTS = Path(__file__).resolve().parent
INSTALL = 'pip install -e ".[ray]"'


def have_ray() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def require_ray() -> None:
    if have_ray():
        return
    if REQUIRE_RAY:
        pytest.fail(f"SKILLOPT_REQUIRE_RAY=1 but Ray is not installed: {INSTALL}", pytrace=False)
    pytest.skip(f"Ray is not installed: {INSTALL}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ray_cli(*args: str, env: dict[str, str], timeout: float = 120) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ray.scripts.scripts", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"ray {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


@dataclass
class Cluster:
    address: str
    env: dict[str, str]
    temp_dir: str

    def settings(self, **extra: Any) -> dict[str, Any]:
        """The `ray:` settings section for this cluster."""
        runtime_env = {"env_vars": {"PYTHONPATH": os.pathsep.join(_import_path())}}
        return {"address": self.address, "runtime_env": runtime_env, **extra}

    def worker_pids(self) -> set[int]:
        """The pids of the cluster's worker processes (`ray::` in their title)."""
        out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
        pids = set()
        for line in out.splitlines()[1:]:
            pid, _, args = line.strip().partition(" ")
            if args.startswith("ray::") or "default_worker.py" in args:
                pids.add(int(pid))
        return pids


def _import_path() -> list[str]:
    """Where workers find the skillopt under test (first: an editable install may name
    another checkout) and the tests' modules (world, helpers, scripted_targets)."""
    import skillopt

    return [str(Path(skillopt.__file__).resolve().parent.parent), str(TESTS), str(TESTS / "train")]


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Cluster]:
    require_ray()
    temp_dir = tempfile.mkdtemp(prefix="skillopt-ray-")
    port = free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    common = ("--disable-usage-stats", f"--temp-dir={temp_dir}")
    try:
        ray_cli(
            "start",
            "--head",
            "--node-ip-address=127.0.0.1",
            f"--port={port}",
            "--num-cpus=2",
            "--include-dashboard=false",
            *common,
            env=env,
        )
        # a second node: its own raylet and workers, with one CPU
        ray_cli(
            "start",
            f"--address=127.0.0.1:{port}",
            "--node-ip-address=127.0.0.1",
            "--num-cpus=1",
            '--resources={"second_node": 1}',
            *common,
            env=env,
        )
        _wait_nodes(2, port, env)
        os.environ["RAY_AUTH_MODE"] = "disabled"
        yield Cluster(f"127.0.0.1:{port}", env, temp_dir)
    finally:
        try:
            import ray

            if ray.is_initialized():
                ray.shutdown()
        except ImportError:
            pass
        try:
            ray_cli("stop", "--force", env=env, timeout=60)
        finally:
            shutil.rmtree(temp_dir, ignore_errors=True)


def _wait_nodes(n: int, port: int, env: dict[str, str], timeout: float = 60) -> None:
    """Until `ray status` counts `n` live nodes."""
    deadline = time.monotonic() + timeout
    status = ""
    while time.monotonic() < deadline:
        try:
            status = ray_cli("status", f"--address=127.0.0.1:{port}", env=env, timeout=30)
        except RuntimeError as exc:
            status = str(exc)
        else:
            active = status.split("Active:", 1)[-1].split("Pending:", 1)[0]
            if active.count("node_") >= n:
                return
        time.sleep(0.5)
    raise RuntimeError(f"the cluster did not reach {n} nodes:\n{status}")
