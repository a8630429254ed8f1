"""Efficiency and quality of the LLM-optimizer path, with zero-latency scripted
models, comparable before and after changes to that path.

For each of three suites (`optimizer_world.py`: part codes for a completion-style
base model, dates and names for chat models, 40 items each) it runs
`skillopt.train` (4 epochs, batch 8, slow update on) with the scripted optimizer
model `scripted/careful-optimizer` (`careful_optimizer.py`: a careful LLM that
follows only what the prompt shows), and with the `exemplars` optimizer as a
reference, and prints per suite and in total:

- steps: regular steps + slow updates run (a run stopped early says why);
- calls: optimizer calls (the run's ledger); gains: accepted decisions; calls
  per gain;
- gates: candidates scored on validation; unchanged: gates spent on an unchanged
  skill (a candidate equal to the incumbent, or a slow update gated in an epoch
  whose skill never changed — compared with itself);
- unused (reflect / slow update / notes): calls whose output was never used — a
  reflection none of whose edits was applied to a gated candidate, a slow update
  whose guidance reached no gate, notes no later prompt showed (those written
  after the final epoch) and any other call the run made;
- validation initial → best; test mean for no skill / initial / best; target
  rollouts run (not from the store).

Figures come from each run's `state.json`, and, for notes, the scripted
optimizer's call log.

Run: python benchmarks/optimizer_benchmark.py [--suites codes,dates,names]
         [--optimizers careful,exemplars] [--epochs 4] [--lr N] [--json [PATH]] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from careful_optimizer import CarefulOptimizer, norm, size
from optimizer_world import BaseModelTarget, SuiteSpec, chat_target, suites, write_suite

from skillopt import api
from skillopt.models import ScriptedModel, register_model, unregister_model

OPTIMIZER = "scripted/careful-optimizer"
SETTINGS = {"batch_size": 8, "minibatch_size": 8, "concurrency": 2, "slow_update": True}


# ---------------------------------------------------------------------------- figures
GATED = ("accepted", "rejected")


def _key(edit: dict) -> tuple:
    anchor = norm(edit.get("anchor")).casefold()
    section = "" if anchor else norm(edit.get("section")).casefold()
    return (edit.get("op"), anchor, section, norm(edit.get("content")).casefold())


def unchanged_gates(steps: list[dict], initial_hash: str) -> int:
    """Gates spent on a candidate equal to the incumbent, or on a slow update in an
    epoch whose skill never changed (the skill compared with itself)."""
    incumbent, epoch_start, count = initial_hash, {}, 0
    for rec in steps:
        if rec.get("kind") == "initial":
            continue
        start = epoch_start.setdefault(rec.get("epoch"), incumbent)
        if rec.get("decision") in GATED:
            if rec.get("skill_hash") == incumbent or (
                rec.get("kind") == "slow_update" and incumbent == start
            ):
                count += 1
            if rec.get("decision") == "accepted":
                incumbent = rec.get("skill_hash") or incumbent
    return count


def notes_read(log: list[tuple[str, str, str]]) -> int:
    """Notes replies whose first line some other call's prompt showed."""
    read = 0
    for i, (kind, _, reply) in enumerate(log):
        if kind != "notes":
            continue
        first = (json.loads(reply).get("notes") or "").strip().splitlines()
        line = first[0].lstrip("- ").strip() if first else ""
        if line and any(line in p for j, (_, p, _) in enumerate(log) if j != i):
            read += 1
    return read


def figures(state: dict, log: list[tuple[str, str, str]] | None = None) -> dict:
    """The benchmark's figures for one run, from its `state.json` and (for notes) the
    optimizer's call log."""
    steps = state.get("steps", [])
    acct = state.get("accounting", {})
    reflect = slow = reflect_unused = slow_unused = 0
    self_compared = 0
    incumbent, epoch_start = state["initial"]["hash"], {}
    max_lines = 0
    for rec in steps:
        if rec.get("kind") == "initial":
            continue
        start = epoch_start.setdefault(rec.get("epoch"), incumbent)
        gated = rec.get("decision") in GATED
        applied = {_key(a["edit"]) for a in rec.get("apply") or [] if a.get("status") == "applied"}
        for p in rec.get("proposals") or []:
            reflect += p.get("calls", 0)
            if not gated or not any(_key(e) in applied for e in p.get("edits") or []):
                reflect_unused += p.get("calls", 0)
        if rec.get("kind") == "slow_update":
            slow += rec.get("calls", 0)
            slow_unused += 0 if gated else rec.get("calls", 0)
            if incumbent == start:
                self_compared += rec.get("calls", 0)
        if gated:
            for a in rec.get("apply") or []:
                if a.get("status") == "applied":
                    max_lines = max(max_lines, size(a["edit"].get("content") or "")["lines"])
        if rec.get("decision") == "accepted":
            incumbent = rec.get("skill_hash") or incumbent
    calls = acct.get("optimizer_calls", 0)
    other = max(0, calls - reflect - slow)  # notes (and any other kind of call)
    other_unused = max(0, other - notes_read(log)) if log is not None else other
    decided = [r for r in steps if r.get("kind") != "initial"]
    gains = sum(1 for r in decided if r.get("decision") == "accepted")
    test = state.get("test") or {}
    return {
        "steps": sum(1 for r in decided if r.get("kind") == "step"),
        "slow_updates": sum(1 for r in decided if r.get("kind") == "slow_update"),
        "stopped": next((v for k, v in state.items() if "stop" in k and v), None),
        "optimizer_calls": calls,
        "calls_logged": len(log) if log is not None else None,
        "gains": gains,
        "calls_per_gain": round(calls / gains, 2) if gains else None,
        "gates": sum(1 for r in decided if r.get("decision") in GATED),
        "unchanged_gates": unchanged_gates(steps, state["initial"]["hash"]),
        "self_compared_slow_update_calls": self_compared,
        "unused_calls": reflect_unused + slow_unused + other_unused,
        "unused": {"reflect": reflect_unused, "slow_update": slow_unused, "notes": other_unused},
        "calls_by_kind": {"reflect": reflect, "slow_update": slow, "notes": other},
        "largest_applied_edit_lines": max_lines,
        "val": {"initial": state["initial"].get("val"), "best": state["incumbent"].get("val")},
        "test": {k: (test.get(k) or {}).get("mean") for k in ("no_skill", "initial", "best")},
        "target_rollouts": acct.get("target_rollouts", 0),
        "cached_rollouts": acct.get("cached_rollouts", 0),
        # the slow update's acceptance: gated slow updates and how many the gate kept
        "slow_gated": sum(
            1 for r in decided if r.get("kind") == "slow_update" and r.get("decision") in GATED
        ),
        "slow_accepted": sum(
            1 for r in decided if r.get("kind") == "slow_update" and r.get("decision") == "accepted"
        ),
    }


def totals(rows: list[dict]) -> dict:
    calls = sum(r["optimizer_calls"] for r in rows)
    gains = sum(r["gains"] for r in rows)
    best = [r["test"]["best"] for r in rows if r["test"]["best"] is not None]
    return {
        "optimizer_calls": calls,
        "gains": gains,
        "calls_per_gain": round(calls / gains, 2) if gains else None,
        "gates": sum(r["gates"] for r in rows),
        "unchanged_gates": sum(r["unchanged_gates"] for r in rows),
        "unused_calls": sum(r["unused_calls"] for r in rows),
        "self_compared_slow_update_calls": sum(r["self_compared_slow_update_calls"] for r in rows),
        "largest_applied_edit_lines": max(
            (r["largest_applied_edit_lines"] for r in rows), default=0
        ),
        "test_best_mean": round(sum(best) / len(best), 3) if best else None,
        "target_rollouts": sum(r["target_rollouts"] for r in rows),
        "slow_gated": sum(r.get("slow_gated", 0) for r in rows),
        "slow_accepted": sum(r.get("slow_accepted", 0) for r in rows),
    }


# ---------------------------------------------------------------------------- running
def run(spec: SuiteSpec, optimizer: str, root: Path, epochs: int, lr: int | None = None) -> dict:
    """Train `spec`'s skill with `optimizer` (`careful` or `exemplars`); its figures."""
    skill, suite = write_suite(spec, root)
    target = (
        f"scripted/base-{spec.name}" if spec.style == "completion" else f"scripted/chat-{spec.name}"
    )
    model = (
        BaseModelTarget(spec)
        if spec.style == "completion"
        else ScriptedModel(chat_target(spec), name=target)
    )
    opt = CarefulOptimizer()
    register_model(target, model)
    register_model(OPTIMIZER, ScriptedModel(opt, name=OPTIMIZER))
    try:
        result = api.train(
            skill,
            suite,
            target=target,
            optimizer=OPTIMIZER if optimizer == "careful" else optimizer,
            epochs=epochs,
            store=root / "store.sqlite",
            run_dir=root / "runs",
            **SETTINGS,
            **({"lr": lr, "min_lr": lr, "schedule": "constant"} if lr else {}),
        )
    finally:
        unregister_model(target)
        unregister_model(OPTIMIZER)
    state = json.loads((result.run_dir / "state.json").read_text())
    figs = figures(state, opt.log if optimizer == "careful" else None)
    figs["run_dir"] = str(result.run_dir)
    return figs


def _f(x: float | None, fmt: str = "{:.3f}") -> str:
    return "—" if x is None else fmt.format(x)


HEADER = (
    f"{'optimizer':<10} {'steps':>6} {'calls':>5} {'gains':>5} {'calls/gain':>10} "
    f"{'gates':>5} {'unchanged':>9} {'unused (r/s/n)':>15} {'val init→best':>14} "
    f"{'test none/init/best':>20} {'rollouts':>8} {'edit≤':>5}"
)


def row(name: str, f: dict) -> str:
    u = f["unused"]
    unused = f"{f['unused_calls']} ({u['reflect']}/{u['slow_update']}/{u['notes']})"
    val = f"{_f(f['val']['initial'])}→{_f(f['val']['best'])}"
    t = f["test"]
    test = f"{_f(t['no_skill'])}/{_f(t['initial'])}/{_f(t['best'])}"
    return (
        f"{name:<10} {f['steps']:>3}+{f['slow_updates']:<2} {f['optimizer_calls']:>5} "
        f"{f['gains']:>5} {_f(f['calls_per_gain'], '{:.2f}'):>10} {f['gates']:>5} "
        f"{f['unchanged_gates']:>9} {unused:>15} {val:>14} {test:>20} {f['target_rollouts']:>8} "
        f"{f['largest_applied_edit_lines']:>5}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suites", default="codes,dates,names")
    ap.add_argument("--optimizers", default="careful,exemplars")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument(
        "--lr", type=int, help="edits per step, constant (default: the cosine schedule)"
    )
    ap.add_argument("--json", nargs="?", const="-", help="dump the figures (to PATH, or stdout)")
    ap.add_argument("--keep", help="keep the runs under this directory")
    args = ap.parse_args(argv)
    specs, names = suites(), args.suites.split(",")
    if unknown := [n for n in names if n not in specs]:
        ap.error(f"unknown suite {unknown[0]!r}; choose from {', '.join(specs)}")
    optimizers = args.optimizers.split(",")
    quiet = args.json == "-"
    out: dict = {"settings": {"epochs": args.epochs, "lr": args.lr, **SETTINGS}, "suites": {}}
    start = time.perf_counter()
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="optbench-"))
    try:
        for name in names:
            spec = specs[name]
            out["suites"][name] = {
                o: run(spec, o, tmp / name / o, args.epochs, args.lr) for o in optimizers
            }
            if not quiet:
                kinds = len({i.kind for i in spec.items})
                split = Counter(i.split for i in spec.items)
                print(
                    f"\n{name}: {len(spec.items)} items, {kinds} kinds (train {split['train']}, "
                    f"val {split['val']}, test {split['test']}), {spec.style}-style target"
                )
                print(HEADER)
                for o, f in out["suites"][name].items():
                    print(row(o, f))
                    if f["stopped"]:
                        print(f"  {o} stopped early: {f['stopped']}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if not args.keep:  # the runs went with the temp directory
        for figs in out["suites"].values():
            for f in figs.values():
                del f["run_dir"]
    out["totals"] = {o: totals([out["suites"][n][o] for n in names]) for o in optimizers}
    out["wall_s"] = round(time.perf_counter() - start, 1)
    if not quiet:
        print()
        for o, t in out["totals"].items():
            print(
                f"total {o}: calls {t['optimizer_calls']}, gains {t['gains']}, calls/gain "
                f"{_f(t['calls_per_gain'], '{:.2f}')}, gates {t['gates']}, unchanged-skill "
                f"gates {t['unchanged_gates']}, unused calls {t['unused_calls']}, mean best "
                f"test {_f(t['test_best_mean'])}, target rollouts {t['target_rollouts']}, "
                f"slow-update calls on an unchanged skill "
                f"{t['self_compared_slow_update_calls']}, slow updates accepted "
                f"{t['slow_accepted']} of {t['slow_gated']} gated, largest applied edit "
                f"{t['largest_applied_edit_lines']} lines"
            )
        print(f"wall time {out['wall_s']:.1f}s")
    if args.json:
        text = json.dumps(out, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
