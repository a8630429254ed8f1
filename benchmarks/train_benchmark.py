"""Figures for `skillopt train` with zero-latency scripted models.

1. The loop's own overhead per step (everything but model calls: rollout
   bookkeeping, store writes, merge, apply, gate, git commit, checkpoint) for
   batch 40 and val 40. Target: under 100 ms.
2. Target rollouts and optimizer calls per step and per run with the default
   settings on a 100-task suite, and the validation-to-training rollout ratio
   (the reference implementation spends about five validation rollouts per
   training rollout, re-scoring the incumbent every step; here the store serves
   the incumbent for free).
3. The racing gate against `--gate-full` on two fixed worlds, each trained with 4
   seeds on a 100-task suite with the default settings but one reflection (so one
   edit) per step; the skill as written gets a quarter of the tasks right. "clean":
   every edit fixes another quarter and breaks none; "half harmful": half the
   edits break 40% of the tasks instead. Per world: whether the
   decisions and best skills are identical, fresh validation rollouts per training
   rollout, target calls per accepted validation point (a validation task gained
   by an accepted candidate), and the fresh validation rollouts racing saved
   (target: at least 30% fewer, with identical decisions).

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


def _notes(messages) -> list[str]:
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    return [line for line in system.splitlines() if line.startswith("- note ")]


def _bucket(text: str, n: int) -> int:
    return hashlib.sha256(text.encode()).digest()[0] % n


def clean_target(messages):
    """The skill as written gets a quarter of the tasks right; every note is useful:
    the k-th note fixes another quarter (cumulatively) and breaks none."""
    task = messages[-1]["content"]
    fixed = _bucket(task, 4) < 1 + len(_notes(messages))
    return task.upper() if fixed else task


def half_harmful_target(messages):
    """Half the notes are harmful (by a hash of their text): each harmful note
    breaks its own 40% of the tasks; the skill and the useful notes are as above."""
    task = messages[-1]["content"]
    notes = _notes(messages)
    useful = [n for n in notes if _bucket(n, 2) == 0]
    harmful = [n for n in notes if _bucket(n, 2) == 1]
    broken = any(_bucket(n + task, 5) < 2 for n in harmful)
    fixed = _bucket(task, 4) < 1 + len(useful)
    return task.upper() if fixed and not broken else task


WORLDS = {"clean": clean_target, "half harmful": half_harmful_target}


class Optimizer:
    """One note per reflection, named by a hash of its prompt without the memory
    section: the same skill and tasks get the same note whatever order concurrent
    calls arrive in (a counter would number notes by thread timing), and whether
    or not the gate raced (racing changes the evidence the memory quotes for a
    rejection: the mean difference over the tasks it scored)."""

    def __call__(self, messages):
        prompt = messages[-1]["content"]
        head, _, rest = prompt.partition("# What you know from earlier steps")
        seen = head + rest.partition("\n# ")[2]
        n = int(hashlib.sha256(seen.encode()).hexdigest()[:6], 16)
        if '"guidance"' in prompt:
            return json.dumps({"guidance": f"- lesson {n}"})
        if '"notes"' in prompt:
            return json.dumps({"notes": "- noted"})
        return json.dumps(
            {
                "edits": [
                    {
                        "op": "add",
                        "anchor": None,
                        "section": "Notes",
                        "content": f"- note {n}",
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


def run(root: Path, n: int, split: dict | None, world=target, **flags):
    t, o = ScriptedModel(world, name="scripted/bench-target"), Optimizer()
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

    # 3. the racing gate against --gate-full
    print("racing gate vs --gate-full, 100 tasks, one edit per step, seeds 0-3:")
    for name, world in WORLDS.items():
        figures = {full: race_figures(world, full) for full in (True, False)}
        same = figures[True]["decisions"] == figures[False]["decisions"]
        full, raced = figures[True], figures[False]
        saved = 1 - raced["fresh_val"] / max(1, full["fresh_val"])
        print(
            f"  {name}: decisions and best skills {'identical' if same else 'DIFFER'} "
            f"({full['accepted']} accepted, {full['rejected']} rejected); fresh validation "
            f"rollouts per training rollout {full['val_per_train']:.2f} full, "
            f"{raced['val_per_train']:.2f} raced; target calls per accepted validation "
            f"point {full['per_point']:.1f} full, {raced['per_point']:.1f} raced; racing "
            f"saved {full['fresh_val'] - raced['fresh_val']} of {full['fresh_val']} fresh "
            f"validation rollouts ({saved:.0%}; target >= 30%), "
            f"{1 - raced['rejected_val'] / max(1, full['rejected_val']):.0%} of the "
            f"{full['rejected_val']} spent on rejected candidates"
        )
    return 0


def race_figures(world, full: bool, seeds: int = 4) -> dict:
    """Summed over `seeds` trainings of `world` with or without racing."""
    out = {"decisions": [], "fresh_val": 0, "rejected_val": 0, "train": 0, "calls": 0}
    out["points"] = 0.0
    out.update(accepted=0, rejected=0)
    for seed in range(seeds):
        with tempfile.TemporaryDirectory() as tmp:
            result, _, t, _ = run(
                Path(tmp),
                100,
                {"seed": 7, "train": 0.4, "val": 0.3, "test": 0.3},
                world,
                seed=seed,
                gate_full=full,
                minibatch_size=40,  # one reflection, so one edit, per step
            )
            state = json.loads((result.run_dir / "state.json").read_text())
            events = [
                json.loads(x) for x in (result.run_dir / "events.jsonl").read_text().splitlines()
            ]
        steps = state["steps"]
        out["decisions"].append(
            ([(s["step"], s["decision"]) for s in steps], result.summary["best_skill_hash"])
        )
        verdict = {f"step {s['step']} ": s.get("decision") for s in steps}
        fresh = [
            e["label"]
            for e in events
            if e["event"] == "rollout" and not e["cached"] and "· val (" in e["label"]
        ]
        out["fresh_val"] += len(fresh)
        out["rejected_val"] += sum(
            1 for label in fresh if verdict.get(label.split("·")[0]) == "rejected"
        )
        out["train"] += sum(
            s["failures"] + s["successes"] + s["unscored"] for s in steps if s["kind"] == "step"
        )
        out["calls"] += t.call_count
        for s in steps:
            if s.get("decision") == "accepted":
                out["accepted"] += 1
                out["points"] += s["gate"]["delta"] * s["gate"]["n"]
            elif s.get("decision") == "rejected":
                out["rejected"] += 1
    out["val_per_train"] = out["fresh_val"] / max(1, out["train"])
    out["per_point"] = out["calls"] / max(1.0, out["points"])
    return out


def _split(result, name):
    from skillopt.suite.loader import load_suite

    cfg = yaml.safe_load((result.run_dir / "run.yaml").read_text())
    return load_suite(cfg["suite"]).split(name)


if __name__ == "__main__":
    sys.exit(main())
