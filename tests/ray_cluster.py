"""A real Ray cluster on 127.0.0.1 for the tests of `executor: ray`: a head node and a
second worker node, each its own raylet with its own processes, made with `ray
start` as a user would, and stopped at the end of the session (its own processes,
by pid: other Ray clusters on the machine are left alone). benchmarks/ray_benchmark.py
starts and stops its cluster with the same functions.

`ray_cluster` (session fixture) yields a `Cluster`: its `address` for `ray.address`,
and `settings(**extra)`, the `ray:` section a test passes (with a runtime_env whose
PYTHONPATH lets workers import the tests' own modules: scripted models defined in
a test module are pickled by reference). Without Ray the tests skip, except where
`SKILLOPT_REQUIRE_RAY=1` (CI) makes that a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
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
    client_address: str  # the same cluster through Ray Client's server (ray://)

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


def start_head(
    temp_dir: str, env: dict[str, str], num_cpus: int, client_port: int | None = None
) -> int:
    """`ray start --head` on 127.0.0.1 with its state in `temp_dir` (and Ray
    Client's server on `client_port`, for ray:// addresses); its port."""
    port = free_port()
    client = [f"--ray-client-server-port={client_port}"] if client_port else []
    ray_cli(
        "start",
        "--head",
        "--node-ip-address=127.0.0.1",
        f"--port={port}",
        f"--num-cpus={num_cpus}",
        "--include-dashboard=false",
        f"--dashboard-agent-listen-port={free_port()}",
        *client,
        "--disable-usage-stats",
        f"--temp-dir={temp_dir}",
        env=env,
    )
    return port


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line), from /proc."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        out[int(entry.name)] = (ppid, cmdline)
    return out


def cluster_pids(temp_dir: str, port: int | None = None) -> set[int]:
    """The processes of the cluster in `temp_dir` whose GCS listens on `port`: those
    whose command line names the directory (GCS, raylet, agents, …) or, for Ray
    Client's servers, which name only the GCS address, the port; and their
    descendants (the workers)."""
    procs = _processes()
    at_port = re.compile(rf"--address=\S+:{port}(\s|$)") if port else None
    pids = {
        pid
        for pid, (_, cmd) in procs.items()
        if (temp_dir in cmd or (at_port is not None and at_port.search(cmd))) and pid != os.getpid()
    }
    grew = True
    while grew:
        children = {pid for pid, (ppid, _) in procs.items() if ppid in pids} - pids
        grew = bool(children)
        pids |= children
    return pids


def other_raylets(temp_dir: str) -> int:
    """How many Ray nodes (raylets) of other clusters run on this machine."""
    if not Path("/proc").is_dir():
        return 0
    return sum(
        1 for _, cmd in _processes().values() if "/raylet/raylet " in cmd and temp_dir not in cmd
    )


def stop_cluster(temp_dir: str, env: dict[str, str], port: int | None = None) -> None:
    """Kill the processes of the cluster in `temp_dir` with its GCS on `port`
    (SIGTERM, then SIGKILL), and only those: `ray stop` would end every Ray cluster
    on the machine. Once found, a process stays on the list: one whose parent died
    first is no longer its descendant."""
    try:
        import ray

        if ray.is_initialized():
            ray.shutdown()
    except ImportError:
        pass
    if not Path("/proc").is_dir():  # no way to tell this cluster's processes apart
        ray_cli("stop", "--force", env=env, timeout=60)
        return
    found: set[int] = set()
    for sig in (signal.SIGTERM, signal.SIGKILL, signal.SIGKILL):
        found |= cluster_pids(temp_dir, port)
        pids = {p for p in found if _alive(p)}
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        while pids and time.monotonic() < deadline:
            time.sleep(0.2)
            pids = {p for p in pids if _alive(p)}
    left = {p for p in found | cluster_pids(temp_dir, port) if _alive(p)}
    if left:
        raise RuntimeError(f"the Ray cluster in {temp_dir} left processes running: {sorted(left)}")


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists() and not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Cluster]:
    require_ray()
    temp_dir = tempfile.mkdtemp(prefix="skillopt-ray-")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    common = ("--disable-usage-stats", f"--temp-dir={temp_dir}")
    port = None
    try:
        client_port = free_port()
        port = start_head(temp_dir, env, num_cpus=2, client_port=client_port)
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
        yield Cluster(f"127.0.0.1:{port}", env, temp_dir, f"ray://127.0.0.1:{client_port}")
    finally:
        try:
            stop_cluster(temp_dir, env, port)
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
