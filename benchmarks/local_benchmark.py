"""Figures for the bundled examples (needs the `local` extra): for each bundled
suite, a full `skillopt train` with the suite's defaults (embedded target,
`exemplars` optimizer): test score for no skill / initial / best, target rollouts
and wall time. The embedded model's own figures (answers independent of call
order, ms per call with and without reusing the skill's KV cache) are in
`local_model_benchmark.py`.

Run: python benchmarks/local_benchmark.py [suite ...]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from skillopt import api

ROOT = Path(__file__).resolve().parents[1]
SUITES = ["product-codes", "name-format", "snake-case"]


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
    for name in argv or SUITES:
        train(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
