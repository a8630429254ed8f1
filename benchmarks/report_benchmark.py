"""Figures for the HTML run report: its size, and the time to gather its data and
draw it, for the bundled quickstart and for a large scripted run.

- quickstart: `skillopt train skills/product-codes --tasks tasks/product-codes.yaml`
  on the embedded model (about 30 s), in a temporary copy of `skills/` and
  `tasks/`; then report.html is written again 5 times (median);
- large: a scripted run of 200 validation tasks and 30 steps (3 epochs of 10) (the target answers
  right when the skill holds a worked example of the task's group, so most steps
  are gated on all 200 tasks), written 5 times (median).

Each page's line is followed by what its Answers section weighs: the answers as the
page embeds them (JSON), their rows and their texts.

Run: python benchmarks/report_benchmark.py [--skip-quickstart]
Prints each figure; exits 0 whatever the numbers (a measurement, not a test).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def timed_write(run_id: str, run_dir: Path, repeat: int = 5) -> tuple[float, int, Path]:
    from skillopt.runs.html import write_report

    times = []
    path = run_dir / run_id / "report.html"
    for _ in range(repeat):
        start = time.perf_counter()
        path = write_report(run_id, run_dir)
        times.append(time.perf_counter() - start)
    return statistics.median(times), path.stat().st_size, path


def answers_weight(path: Path) -> str:
    """What the page's answers weigh: their JSON, its rows and its texts."""
    html = path.read_text("utf-8")
    raw = html.split('id="skillopt-data">')[1].split("</script>")[0]
    answers = json.loads(raw).get("answers") or {}

    def kib(value: object) -> str:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return f"{len(text.encode()) / 1024:.1f} KiB"

    rows = answers.get("rows") or []
    return (
        f"  answers: {kib(answers)} of JSON, {len(rows):,} rows ({kib(rows)}), "
        f"{len(answers.get('texts') or []):,} distinct texts ({kib(answers.get('texts') or [])})"
    )


def quickstart() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        for folder in ("skills", "tasks"):
            shutil.copytree(ROOT / folder, cwd / folder)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLOPT_")}
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "skillopt", "train", "skills/product-codes"]
            + ["--tasks", "tasks/product-codes.yaml"],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
        )
        took = time.perf_counter() - start
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            raise SystemExit(1)
        run_id = next(p.name for p in (cwd / "runs").iterdir() if p.name.startswith("product"))
        os.chdir(cwd)
        wall, size, path = timed_write(run_id, cwd / "runs")
        print(f"quickstart run: {took:.1f} s on the embedded model")
        print(f"quickstart report.html: {size / 1024:.1f} KiB, written in {wall * 1000:.0f} ms")
        print(answers_weight(path))


def large() -> None:
    from skillopt import api
    from skillopt.models import ScriptedModel, register_model

    groups = 20

    def target(messages) -> str:
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        text = messages[-1]["content"]
        group = text.split()[1]
        return f"ok {group}" if f"group {group} " in system else "no"

    register_model("scripted/report-bench", ScriptedModel(target))
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        os.chdir(cwd)
        skill = cwd / "skills" / "big"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(
            "---\nname: big\ndescription: A large benchmark skill. Use in benchmarks.\n---\n"
            "# Big\n\nAnswer the item.\n"
        )
        items = []
        for i in range(600):
            split = "val" if i % 3 == 0 else "train" if i % 3 == 1 else "test"
            g = i % groups
            items.append(
                {
                    "id": f"t{i:04d}",
                    "input": f"item {g} n{i}",
                    "expected": f"ok {g}",
                    "split": split,
                }
            )
        suite = cwd / "big.yaml"
        suite.write_text(yaml.safe_dump({"name": "big", "items": items}))
        start = time.perf_counter()
        result = api.train(
            skill,
            suite,
            target="scripted/report-bench",
            optimizer="exemplars",
            epochs=3,
            batch_size=20,
            minibatch_size=20,
            concurrency=4,
            slow_update=False,
            stall_patience=100,
        )
        took = time.perf_counter() - start
        steps = len(result.summary["steps"]) - 1
        wall, size, path = timed_write(result.run_id, cwd / "runs")
        print(f"large run: {steps} steps, 200 validation tasks, trained in {took:.1f} s")
        print(f"large report.html: {size / 1024:.1f} KiB, written in {wall * 1000:.0f} ms")
        print(answers_weight(path))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-quickstart", action="store_true")
    args = parser.parse_args()
    here = Path.cwd()
    try:
        if not args.skip_quickstart:
            quickstart()
        large()
    finally:
        os.chdir(here)


if __name__ == "__main__":
    main()
