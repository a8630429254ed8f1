"""Figures for `skillopt train` with zero-latency scripted models.

1. The loop's own overhead per step (everything but model calls: rollout
   bookkeeping, store writes, merge, apply, gate, git commit, checkpoint) for
   batch 40 and val 40. Target: under 100 ms.
2. Target rollouts and optimizer calls per step and per run with the default
   settings on a 100-task suite, and the validation-to-training rollout ratio
   (the reference implementation spends about five validation rollouts per
   training rollout, re-scoring the incumbent every step; here the store serves
   the incumbent for free).

Run: python benchmarks/train_benchmark.py
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

from skillopt import api
from skillopt.models import ScriptedModel, register_model


def target(messages):
    """Right on a task when a hash of (skill, task) says so: edits move the score."""
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    task = messages[-1]["content"]
    h = hashlib.sha256((system + "\0" + task).encode()).digest()[0]
    return task.upper() if h < 140 else task


class Optimizer:
    def __init__(self):
        self.n = 0

    def __call__(self, messages):
        prompt = messages[-1]["content"]
        if '"guidance"' in prompt:
            return json.dumps({"guidance": f"- lesson {self.n}"})
        if '"notes"' in prompt:
            return json.dumps({"notes": "- noted"})
        self.n += 1
        return json.dumps(
            {
                "edits": [
                    {
                        "op": "add",
                        "anchor": None,
                        "section": "Notes",
                        "content": f"- note {self.n}",
                        "rationale": "bench",
                        "evidence": [],
                    }
                ]
            }
        )


def suite(root: Path, n: int, split: dict | None) -> Path:
    """`split=None` pins thirds: exactly n/3 train, val and test items."""
    items = [{"id": f"t{i:03d}", "input": f"item {i}", "expected": f"ITEM {i}"} for i in range(n)]
    if split is None:
        for i, item in enumerate(items):
            item["split"] = ("train", "val", "test")[i % 3]
        split = {"seed": 0, "train": 0.4, "val": 0.3, "test": 0.3}
    path = root / "suite.yaml"
    path.write_text(yaml.safe_dump({"name": "bench", "split": split, "items": items}))
    return path


def skill(root: Path) -> Path:
    d = root / "skills" / "bench"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(
        "---\nname: bench\ndescription: Benchmark skill. Use in "
        "benchmarks.\n---\n# Bench\n\nUpper-case the item.\n"
    )
    return d


def step_times(run_dir: Path) -> list[float]:
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    starts = {}
    out = []
    for e in events:
        if e["event"] == "stage" and e["stage"] == "rollout":
            starts[e["step"]] = e["t"]
        if e["event"] == "decision" and e.get("kind") == "step" and e["step"] in starts:
            out.append(e["t"] - starts[e["step"]])
    return out


def run(root: Path, n: int, split: dict, **flags):
    t, o = ScriptedModel(target, name="scripted/bench-target"), Optimizer()
    opt = ScriptedModel(o, name="scripted/bench-optimizer")
    register_model("scripted/bench-target", t)
    register_model("scripted/bench-optimizer", opt)
    start = time.perf_counter()
    result = api.train(
        skill(root),
        suite(root, n, split),
        **{
            "target": "scripted/bench-target",
            "optimizer": "scripted/bench-optimizer",
            "store": str(root / "store.sqlite"),
            "run_dir": str(root / "runs"),
            **flags,
        },
    )
    return result, time.perf_counter() - start, t, opt


def main() -> int:
    # 1. overhead per step: batch 40, val 40, many steps
    with tempfile.TemporaryDirectory() as tmp:
        result, wall, t, opt = run(
            Path(tmp), 120, None, epochs=12, batch_size=40, slow_update=False
        )
        times = sorted(step_times(result.run_dir))
        steps = len(times)
        mean = sum(times) / steps
        print(
            f"loop overhead per step (batch 40, val {len(_split(result, 'val'))}, "
            f"zero-latency models): mean {mean * 1000:.1f} ms, median "
            f"{times[steps // 2] * 1000:.1f} ms, max {times[-1] * 1000:.1f} ms over {steps} "
            f"steps (target < 100 ms; ratio {mean / 0.1:.2f})"
        )

    # 2. default settings on a 100-task suite
    with tempfile.TemporaryDirectory() as tmp:
        result, wall, t, opt = run(
            Path(tmp), 100, {"seed": 7, "train": 0.4, "val": 0.3, "test": 0.3}
        )
        state = json.loads((result.run_dir / "state.json").read_text())
        acct = state["accounting"]
        regular = [s for s in state["steps"] if s["kind"] == "step"]
        train_rollouts = sum(s["failures"] + s["successes"] + s["unscored"] for s in regular)
        events = [json.loads(x) for x in (result.run_dir / "events.jsonl").read_text().splitlines()]
        fresh_val = sum(
            1
            for e in events
            if e["event"] == "rollout" and not e["cached"] and "val (candidate)" in e["label"]
        )
        cached_val = sum(
            1
            for e in events
            if e["event"] == "rollout" and e["cached"] and "val (incumbent)" in e["label"]
        )
        fresh_inc = sum(
            1
            for e in events
            if e["event"] == "rollout" and not e["cached"] and "val (incumbent)" in e["label"]
        )
        n_steps = len(regular)
        print(
            f"default settings, 100 tasks (train {len(_split(result, 'train'))}, val "
            f"{len(_split(result, 'val'))}, test {len(_split(result, 'test'))}): "
            f"{n_steps} steps + {len(state['steps']) - n_steps - 1} slow updates"
        )
        print(
            f"  target rollouts run: {acct['target_rollouts']} per run "
            f"({acct['target_rollouts'] / n_steps:.1f} per step), "
            f"{acct['cached_rollouts']} served from the store; model calls {t.call_count}"
        )
        print(
            f"  optimizer calls: {acct['optimizer_calls']} per run "
            f"({acct['optimizer_calls'] / n_steps:.1f} per step incl. slow updates and notes)"
        )
        print(
            f"  train rollouts {train_rollouts}, fresh candidate-val rollouts {fresh_val}: "
            f"{fresh_val / max(1, train_rollouts):.2f} validation rollouts per training "
            f"rollout (reference: about 5)"
        )
        print(
            f"  incumbent re-scoring: {fresh_inc} rollouts run, {cached_val} from the store "
            f"(target: 0 run)"
        )
        print(f"  wall time {wall:.2f}s")
    return 0


def _split(result, name):
    from skillopt.suite.loader import load_suite

    cfg = yaml.safe_load((result.run_dir / "run.yaml").read_text())
    return load_suite(cfg["suite"]).split(name)


if __name__ == "__main__":
    sys.exit(main())
