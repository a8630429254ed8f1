"""How the search holds up when the optimizer proposes harmful edits, with
zero-latency scripted models, comparable before and after changes to the search.

The world (`search_world.py`): 6 kinds × 10 items (train 4, val 3, test 3), a chat
target that answers a kind right exactly when the skill holds its rule, an initial
skill that teaches one kind of six, and `scripted/noisy-optimizer`, which proposes
the right rule for each failing kind it is shown but replaces each edit, with
probability h, by a harmful one (the delete of a right rule, or a sabotage line),
citing the failed tasks as evidence in a fraction `--harm-evidence` of those.

Each run is `skillopt.train` with the reference's settings (batch 8, minibatch 4,
lr = min_lr = L with a constant schedule, the strict gate, the slow update on, 4
epochs) in a fresh run directory and store, at concurrency 1: the models answer at
once, so threads buy nothing, and one thread keeps the order in which a racing gate
scores validation tasks, so that every figure is the same from run to run (at
concurrency 2 the rollouts differ by a few). The grid is h × L × seeds (the seed is
the run's `seed` setting and the optimizer's draws). Per (h, L) it prints the mean
over seeds of:

- best test: the test mean of the best skill; val: validation initial → best;
- target: target rollouts run (not served from the store), from the run's
  accounting; opt: optimizer calls;
- acc / rej: candidates accepted / rejected (steps and slow updates);
- repeat: gated candidates whose skill hash equals the initial skill's or one gated
  earlier in the run (the target is 0); refused: steps that made no candidate
  because it repeated an earlier one (a `no_candidate` whose reason starts with
  "repeats", from a skillopt that refuses them);
- calls/pt: target rollouts per validation point gained (100 × (best − initial));
  "—" when nothing was gained;
- at 1.00 opt/gates: optimizer calls (reflections and slow updates) and gates spent
  after the incumbent's validation score reached 1.00, when nothing could be gained;
- stopped: runs that stopped early (a stall or a budget);

then one verdict per L: at h = 0.5, is the best test within 0.05 of h = 0 with at
most 1.3× its target rollouts. Figures come from each run's `state.json` only, and
records or fields a later skillopt adds are ignored.

Run: python benchmarks/search_benchmark.py [--h 0,0.25,0.5,0.75] [--lr 1,2,4]
         [--seeds 4] [--epochs 4] [--harm-evidence 0.5] [--json PATH] [--keep DIR]
         [--write | --check]
`--write` puts the table (everything printed but the wall time) in README.md between
`<!-- figures:search -->` markers; `--check` exits 1 when the README's differs from a
fresh run (a test runs it: the figures are the same on every run).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from search_world import NoisyOptimizer, target, write_world

from skillopt import api
from skillopt.models import ScriptedModel, register_model, unregister_model

TARGET = "scripted/transforms-target"
OPTIMIZER = "scripted/noisy-optimizer"
SETTINGS = {
    "batch_size": 8,
    "minibatch_size": 4,
    "schedule": "constant",
    "gate": "strict",
    "slow_update": True,
    "concurrency": 1,
}
WITHIN, CALLS_RATIO = 0.05, 1.3  # the target at h = 0.5 against h = 0
GATED = ("accepted", "rejected")


# ---------------------------------------------------------------------------- figures
def figures(state: dict) -> dict:
    """One run's figures from its `state.json`."""
    steps = [r for r in state.get("steps", []) if r.get("kind") != "initial"]
    acct = state.get("accounting", {})
    seen = {state["initial"].get("hash")}
    repeated = 0
    for rec in steps:
        if rec.get("decision") in GATED:
            repeated += rec.get("skill_hash") in seen
            seen.add(rec.get("skill_hash"))
    refused = sum(
        1
        for r in steps
        if r.get("decision") == "no_candidate" and str(r.get("reason", "")).startswith("repeats")
    )
    initial, best = state["initial"].get("val"), state["incumbent"].get("val")
    saturated = after_saturation(state, steps)
    gain = 100 * (best - initial) if initial is not None and best is not None else 0.0
    rollouts = acct.get("target_rollouts", 0)
    return {
        "test_best": ((state.get("test") or {}).get("best") or {}).get("mean"),
        "val_initial": initial,
        "val_best": best,
        "target_rollouts": rollouts,
        "target_calls": acct.get("target_calls", 0),
        "cached_rollouts": acct.get("cached_rollouts", 0),
        "optimizer_calls": acct.get("optimizer_calls", 0),
        "accepted": sum(1 for r in steps if r.get("decision") == "accepted"),
        "rejected": sum(1 for r in steps if r.get("decision") == "rejected"),
        "no_candidate": sum(1 for r in steps if r.get("decision") == "no_candidate"),
        "repeated": repeated,
        "refused_repeats": refused,
        "steps": sum(1 for r in steps if r.get("kind") == "step"),
        "slow_updates_gated": sum(
            1 for r in steps if r.get("kind") == "slow_update" and r.get("decision") in GATED
        ),
        "calls_per_point": round(rollouts / gain, 2) if gain > 1e-9 else None,
        "optimizer_calls_saturated": saturated["calls"],
        "gates_saturated": saturated["gates"],
        "stopped": next((v for k, v in state.items() if "stop" in k and v), None),
    }


def after_saturation(state: dict, steps: list[dict]) -> dict:
    """Optimizer calls (reflections and slow updates; notes are not in the records)
    and gates spent once the incumbent's validation score was 1.00: from the
    accepted record that made the final incumbent, when it scores 1.00 (the strict
    gate only ever raises the incumbent, so none before it did)."""
    out = {"calls": 0, "gates": 0}
    top, inc = state["incumbent"].get("val"), state["incumbent"].get("hash")
    if top is None or top < 1 - 1e-9:
        return out
    after = state["initial"].get("hash") == inc  # saturated from the start
    for rec in steps:
        if after:
            out["calls"] += sum(p.get("calls", 0) for p in rec.get("proposals") or [])
            out["calls"] += rec.get("calls", 0) if rec.get("kind") == "slow_update" else 0
            out["gates"] += rec.get("decision") in GATED
        if rec.get("decision") == "accepted" and rec.get("skill_hash") == inc:
            after = True
    return out


MEANS = (
    "test_best",
    "val_initial",
    "val_best",
    "target_rollouts",
    "target_calls",
    "optimizer_calls",
    "accepted",
    "rejected",
    "no_candidate",
    "repeated",
    "refused_repeats",
    "steps",
    "slow_updates_gated",
    "optimizer_calls_saturated",
    "gates_saturated",
)


def mean(rows: list[dict]) -> dict:
    """The mean over seeds of each figure; calls per point from the means (None when
    no run gained)."""
    out: dict = {}
    for key in MEANS:
        values = [r[key] for r in rows if r.get(key) is not None]
        out[key] = round(sum(values) / len(values), 3) if values else None
    gain = 100 * ((out["val_best"] or 0) - (out["val_initial"] or 0))
    out["calls_per_point"] = round(out["target_rollouts"] / gain, 2) if gain > 1e-9 else None
    out["stopped_runs"] = sum(1 for r in rows if r.get("stopped"))
    return out


def verdicts(cells: dict, lrs: list[int]) -> dict:
    """Per L: h = 0.5 against h = 0, best test difference and target-rollout ratio."""
    out = {}
    for lr in lrs:
        clean, noisy = cells.get(f"h=0|lr={lr}"), cells.get(f"h=0.5|lr={lr}")
        if not clean or not noisy:
            continue
        a, b = clean["mean"], noisy["mean"]
        diff = round((a["test_best"] or 0) - (b["test_best"] or 0), 3)
        ratio = (
            round(b["target_rollouts"] / a["target_rollouts"], 2) if a["target_rollouts"] else None
        )
        ok = diff <= WITHIN and ratio is not None and ratio <= CALLS_RATIO
        out[str(lr)] = {"test_drop": diff, "calls_ratio": ratio, "pass": ok}
    return out


# ---------------------------------------------------------------------------- running
def run(harm: float, lr: int, seed: int, root: Path, epochs: int, harm_evidence: float) -> dict:
    """One training run in a fresh directory and store; its figures."""
    skill, suite = write_world(root)
    opt = NoisyOptimizer(seed, harm, harm_evidence)
    register_model(TARGET, ScriptedModel(target, name=TARGET))
    register_model(OPTIMIZER, ScriptedModel(opt, name=OPTIMIZER))
    start = time.perf_counter()
    try:
        result = api.train(
            skill,
            suite,
            target=TARGET,
            optimizer=OPTIMIZER,
            epochs=epochs,
            lr=lr,
            min_lr=lr,
            seed=seed,
            store=root / "store.sqlite",
            run_dir=root / "runs",
            **SETTINGS,
        )
    finally:
        unregister_model(TARGET)
        unregister_model(OPTIMIZER)
    figs = figures(json.loads((result.run_dir / "state.json").read_text()))
    figs["optimizer_calls_logged"] = len(opt.log)
    figs["wall_s"] = round(time.perf_counter() - start, 2)
    return figs


def _f(x: float | None, fmt: str = "{:.2f}") -> str:
    return "—" if x is None else fmt.format(x)


HEADER = (
    f"{'h':>5} {'L':>2} {'best test':>9} {'val init→best':>14} {'target':>7} {'opt':>5} "
    f"{'acc':>5} {'rej':>5} {'repeat':>6} {'refused':>7} {'calls/pt':>8} "
    f"{'at 1.00 opt/gates':>17} {'stopped':>7}"
)


def row(h: float, lr: int, m: dict, seeds: int) -> str:
    val = f"{_f(m['val_initial'])}→{_f(m['val_best'])}"
    return (
        f"{h:>5g} {lr:>2} {_f(m['test_best'], '{:.3f}'):>9} {val:>14} "
        f"{_f(m['target_rollouts'], '{:.1f}'):>7} {_f(m['optimizer_calls'], '{:.1f}'):>5} "
        f"{_f(m['accepted']):>5} {_f(m['rejected']):>5} {_f(m['repeated']):>6} "
        f"{_f(m['refused_repeats']):>7} {_f(m['calls_per_point']):>8} "
        f"{_f(m['optimizer_calls_saturated']) + '/' + _f(m['gates_saturated']):>17} "
        f"{m['stopped_runs']:>3}/{seeds:<3}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--h", default="0,0.25,0.5,0.75", help="fractions of harmful edits")
    ap.add_argument("--lr", default="1,2,4", help="edits per step (lr = min_lr)")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--harm-evidence", type=float, default=0.5)
    ap.add_argument("--json", help="write the figures to PATH")
    ap.add_argument("--keep", help="keep the runs under this directory")
    ap.add_argument("--write", action="store_true", help="put the table in README.md")
    ap.add_argument("--check", action="store_true", help="exit 1 when README.md's table differs")
    args = ap.parse_args(argv)
    harms = [float(x) for x in args.h.split(",")]
    lrs = [int(x) for x in args.lr.split(",")]
    out: dict = {
        "settings": {"epochs": args.epochs, "harm_evidence": args.harm_evidence, **SETTINGS},
        "cells": {},
    }
    table: list[str] = []  # what the README shows: everything printed but the wall time

    def say(line: str = "") -> None:
        table.append(line)
        print(line, flush=True)

    say(
        f"search benchmark: 60 items, 6 kinds (train 24, val 18, test 18), {args.seeds} "
        f"seeds, {args.epochs} epochs, harmful edits citing evidence {args.harm_evidence:g}"
    )
    say(HEADER)
    start = time.perf_counter()
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="searchbench-"))
    try:
        for lr in lrs:
            for h in harms:
                runs = [
                    run(
                        h, lr, seed, tmp / f"h{h:g}-lr{lr}-s{seed}", args.epochs, args.harm_evidence
                    )
                    for seed in range(args.seeds)
                ]
                m = mean(runs)
                out["cells"][f"h={h:g}|lr={lr}"] = {"h": h, "lr": lr, "mean": m, "runs": runs}
                say(row(h, lr, m, args.seeds))
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    out["verdicts"] = verdicts(out["cells"], lrs)
    out["wall_s"] = round(time.perf_counter() - start, 1)
    say()
    for lr, v in out["verdicts"].items():
        say(
            f"L={lr}: h=0.5 against h=0: best test {v['test_drop']:+.3f} lower (≤ {WITHIN}), "
            f"target rollouts ×{_f(v['calls_ratio'])} (≤ {CALLS_RATIO}): "
            f"{'PASS' if v['pass'] else 'FAIL'}"
        )
    print(f"wall time {out['wall_s']:.1f}s")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    if args.write or args.check:
        return readme_block(table, write=args.write)
    return 0


README = Path(__file__).resolve().parents[1] / "README.md"
OPEN, CLOSE = "<!-- figures:search -->", "<!-- /figures:search -->"


def readme_block(table: list[str], *, write: bool) -> int:
    """Put `table` in README.md between the `figures:search` markers (`write`), or
    say whether the README's table is this one (0) or not (1)."""
    text = README.read_text(encoding="utf-8")
    head, rest = text.split(OPEN, 1)
    _, tail = rest.split(CLOSE, 1)
    block = "\n```\n" + "\n".join(line.rstrip() for line in table).strip("\n") + "\n```\n"
    if write:
        README.write_text(head + OPEN + block + CLOSE + tail, encoding="utf-8")
        return 0
    if rest.split(CLOSE, 1)[0] == block:
        return 0
    print("README.md's search table differs: run with --write", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
