"""Figures for the agent harnesses: what skillopt adds around each agent process.

Run: python benchmarks/harness_benchmark.py
The agent is a tiny Python program that reads the installed skill and prints an
answer (the `command` harness), so the numbers are the harness's own cost: the
workspace (skill + task files), the scrubbed environment, the process group, the
output files, scoring, and removing or keeping the workspace. The ideal is a
bare `subprocess.run` of the same program. Also printed: the stand-in `claude`
through the claude-code harness (stream-json parsing included). Exits 0 whatever
the numbers (it is a measurement, not a test).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from skillopt import api
from skillopt.store.rollouts import RolloutStore

ROOT = Path(__file__).resolve().parents[1]
AGENT = """import pathlib, sys
skill = pathlib.Path(sys.argv[1]).read_text() if sys.argv[1] else ""
print(pathlib.Path(sys.argv[2]).read_text().upper() if "capitals" in skill else "?")
"""


def fixture(root: Path, n: int) -> tuple[Path, Path]:
    skill = root / "skills" / "bench"
    (skill / "reference").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: bench\ndescription: Benchmark skill. Use in "
        "benchmarks.\n---\n# Bench\n\nAnswer in capitals.\n\n- Write WORD items in capitals.\n"
    )
    (skill / "reference" / "notes.md").write_text("notes\n" * 50)
    items = [
        {
            "id": f"t{i:04d}",
            "input": f"word-{i}",
            "expected": f"WORD-{i}",
            "split": "test",
            "files": {"src/input.txt": f"data {i}\n" * 20},
        }
        for i in range(n)
    ]
    suite = root / "bench.yaml"
    suite.write_text(yaml.safe_dump({"name": "bench", "items": items}))
    return skill, suite


def bare(script: Path, skill_file: Path, n: int) -> float:
    task = skill_file.parent / "task.txt"
    task.write_text("word-1")
    start = time.perf_counter()
    for _ in range(n):
        subprocess.run(
            [sys.executable, str(script), str(skill_file), str(task)],
            capture_output=True,
            check=True,
        )
    return (time.perf_counter() - start) / n


def through_harness(
    root: Path, skill: Path, suite: Path, harness: str, concurrency: int, n: int
) -> tuple[float, float]:
    store = RolloutStore(":memory:")
    start = time.perf_counter()
    result = api.evaluate(
        skill,
        suite,
        split="test",
        store=store,
        **{"harness": harness, "concurrency": concurrency},
    )
    wall = time.perf_counter() - start
    mean = result.results[0].mean
    assert mean == 1.0, (harness, mean, result.results[0].rollouts[0].error)
    return wall / n, wall


def main() -> int:
    n = 40
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.chdir(root)
        skill, suite = fixture(root, n)
        script = root / "agent.py"
        script.write_text(AGENT)
        (root / "skillopt.yaml").write_text(
            yaml.safe_dump(
                {"command": {"argv": [sys.executable, str(script), "{skill_file}", "{task_file}"]}}
            )
        )
        ideal = bare(script, skill / "SKILL.md", n)
        print(f"bare subprocess.run of the agent:           {ideal * 1000:7.1f} ms per task")
        per, _ = through_harness(root, skill, suite, "command", 1, n)
        print(
            f"command harness, concurrency 1:             {per * 1000:7.1f} ms per task "
            f"(ratio {per / ideal:.2f} to bare; overhead {(per - ideal) * 1000:.1f} ms)"
        )
        per2, _ = through_harness(root, skill, suite, "command", 2, n)
        print(
            f"command harness, concurrency 2 (2 cores):   {per2 * 1000:7.1f} ms per task "
            f"(ratio {per2 / (ideal / 2):.2f} to bare/2)"
        )

        sys.path.insert(0, str(ROOT / "tests"))
        from conftest import StandIns  # the stand-in claude used by the tests

        bin_dir = root / "bin"
        bin_dir.mkdir()
        stand = StandIns(bin_dir)
        stand.install("claude")
        os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
        claude = bin_dir / "claude"
        claude.chmod(claude.stat().st_mode | stat.S_IXUSR)
        start = time.perf_counter()
        for _ in range(10):
            subprocess.run([str(claude), "--version"], capture_output=True, check=True)
        claude_bare = (time.perf_counter() - start) / 10
        per3, _ = through_harness(root, skill, suite, "claude-code", 1, n)
        print(
            f"claude-code harness + stand-in, conc. 1:    {per3 * 1000:7.1f} ms per task "
            f"(stand-in start alone {claude_bare * 1000:.1f} ms; overhead "
            f"{(per3 - claude_bare) * 1000:.1f} ms)"
        )
        leftovers = sorted(Path(tempfile.gettempdir()).glob("skillopt-t0*"))
        print(f"temporary workspaces left behind:           {len(leftovers)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
