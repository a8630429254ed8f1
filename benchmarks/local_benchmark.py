"""Figures for the embedded model and the bundled examples (needs the `local` extra).

1. Rollouts per second of `local/gemma-3-270m` on a skill with worked examples,
   with llama.cpp's prefix (KV cache) reuse and with the cache reset before each
   call.
2. For each bundled suite: a full `skillopt train` with the suite's defaults
   (embedded target, `exemplars` optimizer): test score for no skill / initial /
   best, target rollouts and wall time.

Run: python benchmarks/local_benchmark.py [suite ...]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from skillopt import api
from skillopt.harness.chat import ChatHarness
from skillopt.models.local import LocalModel
from skillopt.skill.document import Skill
from skillopt.suite.loader import load_suite

ROOT = Path(__file__).resolve().parents[1]
SUITES = ["product-codes", "name-format", "snake-case"]


def prefix_reuse() -> None:
    suite = load_suite(ROOT / "tasks" / "product-codes.yaml")
    skill = Skill.load(ROOT / "skills" / "product-codes")
    examples = "\n\n".join(
        f"Input: {t.prompt}\nOutput: {t.expected}" for t in suite.split("train")[:8]
    )
    skill = skill.with_body(skill.body + "\n## Examples\n\n" + examples + "\n")
    tasks = suite.split("val") + suite.split("test")
    rates = {}
    for reuse in (True, False):
        harness = ChatHarness(LocalModel(prefix_reuse=reuse))
        harness.check()
        harness.run(skill, tasks[0])  # warm up
        start = time.perf_counter()
        for t in tasks:
            harness.run(skill, t)
        rates[reuse] = len(tasks) / (time.perf_counter() - start)
    print(
        f"local model, skill with 8 examples ({len(tasks)} tasks): "
        f"{rates[True]:.1f} rollouts/s with prefix reuse, {rates[False]:.1f} without "
        f"({rates[True] / rates[False]:.2f}x)"
    )


def train(name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        result = api.train(
            ROOT / "skills" / name,
            ROOT / "tasks" / f"{name}.yaml",
            **{"store": str(Path(tmp) / "store.sqlite"), "run_dir": str(Path(tmp) / "runs")},
        )
        wall = time.perf_counter() - start
    s = result.summary
    t = s["test"]
    acct = s["accounting"]
    print(
        f"{name}: test no skill {t['no_skill']['mean']:.3f} / initial "
        f"{t['initial']['mean']:.3f} / best {t['best']['mean']:.3f} (n={t['best']['n']}); "
        f"val {s['initial_val']:.3f} -> {s['best_val']:.3f}; decisions {s['decisions']}; "
        f"target rollouts {acct['target_rollouts']} (+{acct['cached_rollouts']} cached); "
        f"wall {wall:.1f}s"
    )


def main(argv: list[str]) -> int:
    prefix_reuse()
    for name in argv or SUITES:
        train(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
