"""Figures for loading big task suites: wall time, items/s and peak memory.

Run: python benchmarks/suite_load_benchmark.py [--items N]
Writes a suite of N items (400,000 by default: ids, short string input/expected,
metadata on every 1000th) as JSON Lines, as inline YAML and as YAML whose items
merge shared defaults with `<<: *defaults`, in a temporary directory. Each variant
is loaded with `skillopt.suite.loader.load_suite` in a fresh subprocess, so peak
memory (maxrss) is that variant's alone. The JSON Lines figure is set against the
ideal: a bare `json.loads` per line. Prints the figures and exits 0 whatever they
are (it is a measurement, not a test).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_suites(root: Path, n: int) -> dict[str, Path]:
    """The three variants of one n-item suite; written line by line (dumping 400k
    items through PyYAML would take longer than loading them)."""
    rows = []
    for i in range(n):
        row = {"id": f"item-{i:06d}", "input": f"what is {i} plus one?", "expected": str(i + 1)}
        if i % 1000 == 0:
            row["metadata"] = {"source": "generated", "batch": i // 1000}
        rows.append(row)

    jsonl = root / "bench.jsonl"
    with jsonl.open("w", encoding="utf-8") as f:
        f.writelines(json.dumps(row) + "\n" for row in rows)

    def item_yaml(row: dict, merge: bool) -> str:
        text = (
            f"  - id: {row['id']}\n    input: {row['input']}\n    expected: '{row['expected']}'\n"
        )
        if merge:
            text += "    <<: *defaults\n"
        if "metadata" in row:
            meta = row["metadata"]
            text += f"    metadata: {{source: {meta['source']}, batch: {meta['batch']}}}\n"
        return text

    inline = root / "bench.yaml"
    with inline.open("w", encoding="utf-8") as f:
        f.write("name: bench\nitems:\n")
        f.writelines(item_yaml(row, False) for row in rows)

    # the first item carries the anchor; every other one merges its `split:` in
    merged = root / "bench-merge.yaml"
    with merged.open("w", encoding="utf-8") as f:
        f.write(
            "name: bench\nitems:\n  - &defaults\n    id: first\n    input: first\n"
            "    expected: '0'\n    split: test\n"
        )
        f.writelines(item_yaml(row, True) for row in rows[1:])
    return {"jsonl": jsonl, "yaml": inline, "yaml-merge": merged}


def peak_mb() -> float:
    """This process's peak resident memory. Linux's VmHWM counts from exec; maxrss
    would also count the benchmark's own memory at the time it forked this child."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 1024  # bytes there, KiB here


def child(variant: str, path: Path) -> None:
    """Runs in a fresh interpreter: load once, print the figures as JSON."""
    if variant == "json.loads":
        base = peak_mb()
        start = time.perf_counter()
        with path.open("rb") as f:
            values = [json.loads(line) for line in f if line.strip()]
        wall = time.perf_counter() - start
        n = len(values)
    else:
        from skillopt.suite.loader import load_suite

        base = peak_mb()
        start = time.perf_counter()
        n = len(load_suite(path).tasks)
        wall = time.perf_counter() - start
    print(json.dumps({"n": n, "wall": wall, "peak_mb": peak_mb(), "base_mb": base}))


def measure(variant: str, path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", variant, str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=400_000)
    parser.add_argument("--child", nargs=2, metavar=("VARIANT", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return 0

    with tempfile.TemporaryDirectory() as tmp:
        suites = write_suites(Path(tmp), args.items)
        ideal = measure("json.loads", suites["jsonl"])
        print(
            f"ideal: bare json.loads per line of {args.items:,} items: {ideal['wall']:.2f}s, "
            f"peak RSS {ideal['peak_mb']:.0f} MB"
        )
        for variant, path in suites.items():
            fig = measure(variant, path)
            size_mb = path.stat().st_size / 1e6
            rate = fig["n"] / fig["wall"]
            line = (
                f"{variant}: {fig['n']:,} items ({size_mb:.1f} MB) in {fig['wall']:.2f}s = "
                f"{rate:,.0f} items/s, peak RSS {fig['peak_mb']:.0f} MB "
                f"(+{fig['peak_mb'] - fig['base_mb']:.0f} MB over the imported baseline)"
            )
            if variant == "jsonl":
                line += f"; {fig['wall'] / ideal['wall']:.1f}x the bare json.loads time"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
