"""The quality benchmark's suites and figures: the README's table is the one the
recorded figures give (benchmarks/quality_benchmark.py --write produces both), the
held-out suites are what the benchmark says they are, and its random k-shot skills
are written exactly as the exemplars optimizer writes examples."""

from __future__ import annotations

import importlib.util
import json
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from skillopt.cli.main import app
from skillopt.optimize.examples import examples_in
from skillopt.skill.document import Skill
from skillopt.suite.loader import load_suite

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    path = ROOT / "benchmarks" / "quality_benchmark.py"
    spec = importlib.util.spec_from_file_location("quality_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rows(bench):
    return json.loads(bench.RESULTS.read_text())


def test_the_readme_table_is_the_recorded_one(bench, rows):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert bench.readme_with(text, rows) == text, (
        "README.md's quality table differs from benchmarks/quality/results.json: "
        "run python benchmarks/quality_benchmark.py --write"
    )


def test_the_figures_cover_the_five_suites_with_three_training_seeds(bench, rows):
    assert [r["suite"] for r in rows] == bench.SUITES
    for r in rows:
        assert [run["seed"] for run in r["runs"]] == [0, 1, 2]
        assert r["train"] == [run["test"] for run in r["runs"]]
        assert len(r["random_3"]) == len(r["random_8"]) == bench.SEEDS
        assert all(run["rollouts"] <= 300 for run in r["runs"])  # the budget
        assert r["sizes"] == {"train": 18, "val": 13, "test": 14}


def test_the_table_says_what_the_figures_say(bench, rows):
    table = bench.table(rows)
    mean_train = statistics.mean(statistics.mean(r["train"]) for r in rows)
    mean_8 = statistics.mean(statistics.mean(r["random_8"]) for r in rows)
    mean_line = next(line for line in table.splitlines() if line.startswith("mean"))
    assert f"{mean_train:.3f}" in mean_line and f"{mean_8:.3f}" in mean_line
    beats = sum(statistics.mean(r["train"]) > statistics.mean(r["random_8"]) for r in rows)
    assert f"train beats random 8-shot on {beats} of 5 suites" in table


def test_the_suites_load_with_the_sizes_the_benchmark_states(bench):
    for name in bench.SUITES + bench.SPARE:
        suite = load_suite(bench.HERE / f"{name}.yaml")
        assert len(suite.tasks) == 45, name
        sizes = tuple(len(suite.split(s)) for s in ("train", "val", "test"))
        assert sizes == (18, 13, 14), name
        assert suite.defaults == {
            "target": "local/gemma-3-270m",
            "optimizer": "exemplars",
            "concurrency": 1,
        }, name


def test_the_prose_skills_lint_clean(bench):
    res = CliRunner().invoke(app, ["lint", "--strict", str(bench.HERE)])
    assert res.exit_code == 0, res.output


def test_held_out_suites_are_not_bundled(bench):
    bundled = {p.stem for p in (ROOT / "tasks").glob("*.yaml")}
    assert bundled and not bundled & set(bench.SUITES + bench.SPARE)


def test_k_shot_skills_read_back_as_the_optimizers_examples(bench):
    prose = Skill.load(bench.HERE / "initials")
    pairs = [("mary ann smith", "M.A.S."), ("Chen, Li", "L.C.")]
    shot = bench.k_shot(prose, pairs)
    assert [(e.input, e.output) for e in examples_in(shot)] == pairs
    assert shot.body.startswith(prose.body.rstrip())
    assert "\n## Examples\n\n" in shot.body
