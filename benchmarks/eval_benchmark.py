"""Figures for `skillopt eval`: throughput, CPU per rollout, concurrency and re-run
cost.

Run: python benchmarks/eval_benchmark.py
Prints each figure next to its target; exits 0 whatever the numbers (it is a
measurement, not a test).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import yaml

from skillopt import api
from skillopt.models import ScriptedModel, register_model
from skillopt.store.rollouts import RolloutStore
from skillopt.suite.loader import load_suite


def write_fixture(root: Path, n: int) -> tuple[Path, Path]:
    skill = root / "skills" / "bench"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: bench\ndescription: Benchmark skill. Use in "
        "benchmarks.\n---\n# Bench\n\nAnswer with A.\n"
    )
    items = [
        {"id": f"t{i:05d}", "input": f"question {i}", "expected": "A", "split": "test"}
        for i in range(n)
    ]
    suite = root / "bench.yaml"
    suite.write_text(yaml.safe_dump({"name": "bench", "items": items}))
    return skill, suite


def timed_eval(skill, suite, store_path, model_name, concurrency, cpu=None):
    store = RolloutStore(store_path)
    start, cpu_start = time.perf_counter(), time.process_time()
    result = api.evaluate(
        skill,
        suite,
        split="test",
        store=store,
        **{"target": model_name, "concurrency": concurrency},
    )
    wall = time.perf_counter() - start
    if cpu is not None:
        cpu.append(time.process_time() - cpu_start)
    store.close()
    return result, wall


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)

        # 1. throughput, zero-latency model, store writes included
        fast = ScriptedModel(lambda m: "A", name="scripted/bench-fast")
        register_model("scripted/bench-fast", fast)
        skill, suite = write_fixture(root / "a", 2000)
        cpu: list[float] = []
        result, wall = timed_eval(
            skill, suite, root / "a.sqlite", "scripted/bench-fast", 8, cpu=cpu
        )
        n = len(result.all_rollouts)
        rate = n / wall
        print(
            f"throughput: {n} rollouts in {wall:.3f}s = {rate:,.0f} rollouts/s "
            f"(target >= 1,000; ratio {rate / 1000:.2f}x), model calls {fast.call_count}"
        )
        # everything but the model: the chat harness, the engine, scoring, the store
        # write, and the evaluation around them (suite load, skill lint, the result)
        per = cpu[0] / n * 1000
        print(
            f"CPU per rollout (chat harness, engine, scoring, store write; zero-latency "
            f"model): {per:.2f} ms (target <= 5 ms; ratio {per / 5:.2f})"
        )

        # 3. re-run unchanged: zero model calls
        before = fast.call_count
        _, wall2 = timed_eval(skill, suite, root / "a.sqlite", "scripted/bench-fast", 8)
        print(
            f"re-run: {fast.call_count - before} model calls, {wall2:.3f}s = "
            f"{wall2 / wall:.1%} of the first run's {wall:.3f}s"
        )

        # 2. concurrency: 256 tasks x 50 ms at --concurrency 32 -> ideal 8 x 50 ms
        slow = ScriptedModel(lambda m: "A", name="scripted/bench-slow", latency=0.05)
        register_model("scripted/bench-slow", slow)
        skill, suite = write_fixture(root / "b", 256)
        res3, wall3 = timed_eval(skill, suite, root / "b.sqlite", "scripted/bench-slow", 32)
        ideal = 256 / 32 * 0.05
        phase = res3.results[0].wall_s
        print(
            f"concurrency: 256 x 50 ms at 32 workers in {wall3:.3f}s end to end "
            f"(rollout phase {phase:.3f}s); ideal {ideal:.3f}s; ratio {wall3 / ideal:.3f} "
            f"end to end, {phase / ideal:.3f} rollout phase (target <= 1.15)"
        )
        before = slow.call_count
        _, wall4 = timed_eval(skill, suite, root / "b.sqlite", "scripted/bench-slow", 32)
        print(
            f"re-run (50 ms model): {slow.call_count - before} model calls, {wall4:.3f}s = "
            f"{wall4 / wall3:.1%} of the first run's {wall3:.3f}s"
        )

        # where the fixed cost goes: loading and validating the 2,000-item suite
        start = time.perf_counter()
        load_suite(root / "a" / "bench.yaml")
        print(f"suite load (2,000 items): {time.perf_counter() - start:.3f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
