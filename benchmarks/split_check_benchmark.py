"""What the split check (`skillopt.suite.hygiene`, run by eval, train and validate
before any model call) costs: on the largest bundled suite and on a synthetic suite
of N items (5,000 by default: requests of 8-20 words drawn from a 2,000-word
vocabulary, 1 in 100 a near-copy of an earlier item with a letter doubled), set
against loading the same suite.

Run: python benchmarks/split_check_benchmark.py [--items N]
Prints the figures and exits 0 whatever they are (a measurement, not a test).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from skillopt.suite.hygiene import check_splits  # noqa: E402
from skillopt.suite.loader import load_suite  # noqa: E402


def synthetic(path: Path, n: int, seed: int = 7) -> int:
    """An n-item suite with near-copies planted; returns how many were planted."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(2000)]
    texts: list[str] = []
    planted = 0
    for i in range(n):
        if i > 10 and i % 100 == 0:  # a near-copy of an earlier item: a letter doubled
            words = rng.choice(texts).split()
            k = rng.randrange(len(words))
            words[k] = words[k][0] + words[k]
            planted += 1
        else:
            words = rng.choices(vocab, k=rng.randint(8, 20))
        texts.append(" ".join(words))
    items = [{"id": f"it-{i:05d}", "input": t, "expected": "x"} for i, t in enumerate(texts)]
    path.write_text(yaml.safe_dump({"name": "bench", "items": items}), encoding="utf-8")
    return planted


def timed(suite_path: Path) -> tuple[int, float, float, int]:
    """(items, seconds to load, seconds to check, repeats found)."""
    start = time.perf_counter()
    suite = load_suite(suite_path)
    loaded = time.perf_counter() - start
    start = time.perf_counter()
    found = check_splits(suite)
    checked = time.perf_counter() - start
    return len(suite.tasks), loaded, checked, len(found.repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=5000)
    args = parser.parse_args()
    bundled = max((ROOT / "tasks").glob("*.yaml"), key=lambda p: len(load_suite(p).tasks))
    rows = [(f"bundled {bundled.name}", *timed(bundled), None)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.yaml"
        planted = synthetic(path, args.items)
        rows.append((f"synthetic {args.items:,} items", *timed(path), planted))
    for name, n, loaded, checked, found, planted in rows:
        print(
            f"{name}: {n:,} items · load {loaded * 1000:.1f} ms · split check "
            f"{checked * 1000:.1f} ms ({checked / loaded:.2f}× the load) · "
            f"{found} repeat(s) across splits"
            + (f" ({planted} near-copies planted, across splits or not)" if planted else "")
        )


if __name__ == "__main__":
    main()
