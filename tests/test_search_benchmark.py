"""benchmarks/search_benchmark.py: its world scores what the skill teaches, its noisy
optimizer reads the real prompt (right rules with no harm, only harm with h = 1),
and repeats, refused repeats and calls after saturation are counted right."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module("search_benchmark")


@pytest.fixture
def world(bench):
    return importlib.import_module("search_world")


def test_the_target_knows_a_kind_exactly_when_the_skill_teaches_it(world):
    item = next(i for i in world.ITEMS if i.kind == 3)
    ask = {"role": "user", "content": item.input}
    rule, sabotage = world.KINDS[3].rule, world.KINDS[3].sabotage
    assert world.target([{"role": "system", "content": world.BODY}, ask]) == item.input
    taught = world.BODY + "  " + rule.replace(" ", "\n", 2)  # whitespace does not matter
    assert world.target([{"role": "system", "content": taught}, ask]) == item.expected
    spoiled = f"{taught}\n{sabotage}"
    assert world.target([{"role": "system", "content": spoiled}, ask]) == item.input
    val = [i for i in world.ITEMS if i.split == "val"]
    right = [i for i in val if world.right(world.BODY, i.kind)]
    assert len(val) == 18 and len(right) == 3  # the initial skill: 1 kind in 6


def test_a_clean_optimizer_trains_and_a_harmful_one_never_gains(bench, isolated):
    clean = bench.run(0.0, 2, 0, isolated / "clean", epochs=1, harm_evidence=0.5)
    assert clean["accepted"] >= 1 and clean["val_best"] > clean["val_initial"]
    assert clean["test_best"] > 0.2 and clean["repeated"] == 0
    assert clean["optimizer_calls"] == clean["optimizer_calls_logged"]
    harmful = bench.run(1.0, 2, 0, isolated / "harm", epochs=1, harm_evidence=1.0)
    assert harmful["rejected"] >= 1 and harmful["accepted"] == 0  # it saw the failures
    assert harmful["val_best"] == harmful["val_initial"]


def test_the_optimizer_answers_the_same_prompt_the_same_and_never_crashes(world):
    opt = world.NoisyOptimizer(seed=1, harm=0.5)
    item = next(i for i in world.ITEMS if i.kind == 2)
    prompt = (
        f"# Current skill\n\n```markdown\n{world.BODY}```\n\n## Task {item.id}\n"
        f"Input (as the agent saw it):\n```\n{item.input}\n```\nScore: 0.00 (fail). "
        'Feedback: no\n\nStep 3 of 9. Propose at most 2 edits.\n\n{"edits": []}\n'
    )
    ask = [{"role": "system", "content": "s"}, {"role": "user", "content": prompt}]
    first = json.loads(opt(ask))["edits"]
    assert len(first) == 1 and json.loads(opt(ask))["edits"] == first
    assert first[0]["evidence"] in ([item.id], [])
    for other in ("hello", '{"guidance": "x"}', '{"notes": "x"}'):
        reply = json.loads(opt([{"role": "user", "content": other}]))
        assert reply in ({"edits": []}, {"guidance": world.GUIDANCE}, {"notes": world.NOTE})


def test_repeats_refusals_and_calls_after_saturation_are_counted(bench):
    steps = [
        {"step": 0, "kind": "initial", "decision": "initial"},
        {"step": 1, "kind": "step", "decision": "rejected", "skill_hash": "h0",
         "proposals": [{"calls": 1}]},
        {"step": 2, "kind": "step", "decision": "rejected", "skill_hash": "h2",
         "proposals": [{"calls": 2}]},
        {"step": 3, "kind": "step", "decision": "no_candidate",
         "reason": "repeats the candidate of step 2", "proposals": [{"calls": 1}]},
        {"step": 4, "kind": "step", "decision": "accepted", "skill_hash": "h4",
         "proposals": [{"calls": 1}]},
        {"step": 5, "kind": "step", "decision": "rejected", "skill_hash": "h2",
         "proposals": [{"calls": 2}], "new_field": 1},
        {"step": 6, "kind": "slow_update", "decision": "rejected", "skill_hash": "h6",
         "calls": 1},
        {"step": 7, "kind": "a later kind", "decision": "skipped"},
    ]  # fmt: skip
    state = {
        "initial": {"hash": "h0", "val": 0.5},
        "incumbent": {"hash": "h4", "val": 1.0},
        "steps": steps,
        "accounting": {"optimizer_calls": 9, "target_rollouts": 100},
        "test": {"best": {"mean": 0.9}},
    }
    f = bench.figures(state)
    assert f["repeated"] == 2 and f["refused_repeats"] == 1  # steps 1 and 5; step 3
    assert (f["accepted"], f["rejected"], f["no_candidate"]) == (1, 4, 1)
    assert f["optimizer_calls_saturated"] == 3 and f["gates_saturated"] == 2  # steps 5, 6
    assert f["calls_per_point"] == 2.0 and f["test_best"] == 0.9
    m = bench.mean([f, {**f, "target_rollouts": 300}])
    assert m["target_rollouts"] == 200 and m["calls_per_point"] == 4.0


@pytest.mark.slow  # the whole grid: 48 scripted runs, about 20 s
def test_the_readme_table_is_a_fresh_run_of_the_grid(bench, capsys):
    assert bench.main(["--check"]) == 0, capsys.readouterr().err
