"""Figures for `executor: ray`: throughput against the number of workers, the
per-rollout overhead of a Ray task against the local thread pool, and the start-up
cost of the first evaluation on a cluster.

Run: python benchmarks/ray_benchmark.py   (needs Ray: pip install -e ".[ray]")

The script starts its own cluster on this machine, as a user would (`ray start
--head --node-ip-address=127.0.0.1`), with 16 *logical* CPUs whatever the machine
has (`--num-cpus=16`): a rollout of the sleeping target below uses no CPU, so 16 of
them can run at once on two cores. It stops the
cluster at the end, on error too, by killing the processes it started (by pid; not
`ray stop`, which kills every Ray process on the machine, other clusters' too).
Workers import skillopt from the checkout the driver imported it from.

- throughput: 256 rollouts of a scripted target that sleeps 200 ms, at N = 1, 2, 4,
  8, 16 workers, each from a fresh store, so nothing is served from it: wall time
  against the ideal 256 × 0.2 s / N, and ideal / actual. N workers are
  `concurrency: N`: on a cluster, as locally, it caps the rollouts running at once
  (the cluster has room for 16, one CPU each). Before these, the cluster is warmed up
  until 16 rollouts run at once (Ray starts its worker processes as tasks need them,
  a few at a time): the time that takes is printed with the start-up figures.
- overhead: 512 rollouts of a zero-latency target at concurrency 8, through the
  local thread pool and on the cluster (median of 3 each, fresh stores): wall time
  per rollout, and what a Ray task adds per rollout.
- start-up: the first evaluation on the cluster (16 zero-latency rollouts: connect
  to the cluster, ship the harness, start the workers) against the same evaluation
  run again.

Prints each figure as it is measured, then the block the README quotes; exits 0
whatever the numbers (it is a measurement, not a test).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import skillopt
from skillopt import api
from skillopt.config import RaySettings, Settings
from skillopt.models import ScriptedModel, register_model
from skillopt.store.rollouts import RolloutStore

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from eval_benchmark import write_fixture  # noqa: E402  (benchmarks/, the script's own folder)
from ray_cluster import other_raylets, start_head, stop_cluster  # noqa: E402

CLUSTER_CPUS = 16
SLEEP_S = 0.2
THROUGHPUT_N = 256
WORKERS = (1, 2, 4, 8, 16)
OVERHEAD_N = 512
OVERHEAD_CONCURRENCY = 8
STARTUP_N = 16
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


# -- the cluster -----------------------------------------------------------------------
def start_cluster(temp_dir: str) -> str:
    """A head node on 127.0.0.1 with CLUSTER_CPUS logical CPUs; its address."""
    # the workers import the skillopt the driver runs, not another installed copy
    code = str(Path(skillopt.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (code, os.environ.get("PYTHONPATH", "")) if p)
    port = start_head(temp_dir, {**os.environ, **RAY_ENV, "PYTHONPATH": path}, CLUSTER_CPUS)
    return f"127.0.0.1:{port}"


# -- the evaluations -------------------------------------------------------------------
class Bench:
    def __init__(self, root: Path, address: str):
        self.root = root
        self.address = address
        self.stores = 0

    def settings(self, target: str, concurrency: int, executor: str) -> Settings:
        # at most `concurrency` rollouts at once on the cluster, a CPU each
        return Settings(
            target=target,
            concurrency=concurrency,
            executor=executor,
            ray=RaySettings(address=self.address, num_cpus_per_rollout=1),
        )

    def run(self, skill: Path, suite: Path, target: str, concurrency: int, executor: str):
        """One evaluation from a fresh store: (wall seconds, rollouts, all scored 1).
        On the cluster at most `concurrency` rollouts run at once."""
        self.stores += 1
        store = RolloutStore(self.root / f"store-{self.stores}.sqlite")
        try:
            start = time.perf_counter()
            result = api.evaluate(
                skill,
                suite,
                split="test",
                store=store,
                settings=self.settings(target, concurrency, executor),
            )
            wall = time.perf_counter() - start
        finally:
            store.close()
        rollouts = result.all_rollouts
        right = all(r.scored and r.score == 1 for r in rollouts)
        return wall, len(rollouts), right


def main() -> int:
    try:
        import ray  # noqa: F401
    except ImportError:
        print('Ray is not installed: pip install -e ".[ray]"')
        return 0
    os.environ.update(RAY_ENV)
    # defined here, in __main__: pickled by value to the workers
    register_model("scripted/ray-bench-fast", ScriptedModel(lambda m: "A", name="fast"))
    register_model(
        "scripted/ray-bench-sleep",
        ScriptedModel(lambda m: "A", name="sleep", latency=SLEEP_S),
    )
    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    temp_dir = tempfile.mkdtemp(prefix="skillopt-raybench-")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        small = write_fixture(root / "small", STARTUP_N)
        sleepy = write_fixture(root / "sleepy", THROUGHPUT_N)
        many = write_fixture(root / "many", OVERHEAD_N)
        address = ""
        try:
            others = other_raylets(temp_dir)
            if others:
                print(
                    f"(note: {others} other Ray node(s) run on this machine: the figures share "
                    "its cores, and a `ray stop` elsewhere kills this cluster too)",
                    flush=True,
                )
            start = time.perf_counter()
            address = start_cluster(temp_dir)
            print(
                f"(cluster: `ray start --head`, {CLUSTER_CPUS} logical CPUs on "
                f"{os.cpu_count()} cores, up in {time.perf_counter() - start:.1f}s)",
                flush=True,
            )
            bench = Bench(root, address)

            # start-up: the first evaluation on the cluster against the same one again
            first, n, ok1 = bench.run(*small, "scripted/ray-bench-fast", STARTUP_N, "ray")
            later, _, ok2 = bench.run(*small, "scripted/ray-bench-fast", STARTUP_N, "ray")
            say(
                f"start-up: first eval on the cluster ({n} zero-latency rollouts: connect, "
                f"ship the harness, start workers) {first:.2f}s; the same eval again "
                f"{later:.2f}s; start-up cost {first - later:.2f}s"
                + ("" if ok1 and ok2 else " [NOT ALL SCORED 1]")
            )

            # warm-up: until 16 sleeping rollouts run at once (a worker process each)
            start, tries = time.perf_counter(), 0
            ideal = STARTUP_N * SLEEP_S / CLUSTER_CPUS
            while tries < 20:
                tries += 1
                wall, _, _ = bench.run(*small, "scripted/ray-bench-sleep", CLUSTER_CPUS, "ray")
                if wall < ideal * 1.5:
                    break
            say(
                f"start-up: warming up until {CLUSTER_CPUS} rollouts run at once (Ray starts "
                f"its worker processes as tasks need them): {time.perf_counter() - start:.2f}s "
                f"({tries} evals of {STARTUP_N} x {SLEEP_S * 1000:.0f} ms)"
            )

            # throughput: 256 x 200 ms at N workers
            for workers in WORKERS:
                wall, n, ok = bench.run(*sleepy, "scripted/ray-bench-sleep", workers, "ray")
                ideal = n * SLEEP_S / workers
                say(
                    f"throughput: {n} x {SLEEP_S * 1000:.0f} ms at {workers:>2} workers "
                    f"{wall:6.2f}s, ideal {ideal:6.2f}s, ideal/actual {ideal / wall:.3f}"
                    + ("" if ok else " [NOT ALL SCORED 1]")
                )

            # overhead: zero-latency rollouts, local thread pool against Ray tasks
            per: dict[str, float] = {}
            for executor in ("local", "ray"):
                walls = []
                for _ in range(3):
                    wall, n, ok = bench.run(
                        *many, "scripted/ray-bench-fast", OVERHEAD_CONCURRENCY, executor
                    )
                    walls.append(wall)
                    if not ok:
                        say(f"overhead: {executor}: NOT ALL SCORED 1")
                per[executor] = statistics.median(walls) / OVERHEAD_N * 1000
            say(
                f"overhead: {OVERHEAD_N} zero-latency rollouts at concurrency "
                f"{OVERHEAD_CONCURRENCY} (median of 3): local {per['local']:.2f} ms/rollout, "
                f"ray {per['ray']:.2f} ms/rollout; a Ray task adds "
                f"{per['ray'] - per['local']:.2f} ms per rollout"
            )
        except Exception as exc:  # a measurement: say what failed, exit 0
            print(f"benchmark failed: {type(exc).__name__}: {exc}", flush=True)
        finally:
            port = int(address.rsplit(":", 1)[1]) if address else None
            stop_cluster(temp_dir, {**os.environ, **RAY_ENV}, port)
            shutil.rmtree(temp_dir, ignore_errors=True)

    if hasattr(os, "getloadavg"):
        load = os.getloadavg()[0]
        print(
            f"(load average at the end: {load:.2f} on {os.cpu_count()} cores; well above "
            "the cores means other work shared them)"
        )
    print("\n--- for the README ---")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
