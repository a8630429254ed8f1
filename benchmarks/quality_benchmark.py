"""Does training beat the simplest baseline? Measured on suites it was not tuned on.

Five held-out suites live in `benchmarks/quality/` (45 items each, split 18/13/14
by a seed chosen for those sizes; not the bundled examples): year-first dates →
day/month/year, US phone numbers → NNN-NNN-NNNN, the email address in a message
(in capitals), a person's initials, and file names → lower-case slugs. Each comes
with a prose skill that the embedded base model (`local/gemma-3-270m`) scores
about 0 with. A sixth, `money` (amounts → $D.CC), is left out of the default set:
its prose skill alone scores 0.3 and random 8-shot 1.0, so it cannot tell methods
apart; run it with `--suites money`.

Per suite, on the test split, through the same harness and prompt:
- no skill;
- random k-shot for k = 3 and 8: the prose skill plus k training items drawn at
  random (5 seeds), written as the exemplars optimizer writes them (an `## Examples`
  section of `Input: …` / `Output: …` lines);
- random k-shot at the size of the trained skill (k = its number of examples, 5
  seeds), which separates what the choice of examples adds from what their number
  adds;
- the default `skillopt train` (the suite's `defaults:` name only the target and
  the optimizer; every other setting is skillopt's default), with its target
  rollouts (run, not served from the store: each suite trains on a fresh store)
  and wall time.
Then the mean over the suites, and on how many suites training beats random
8-shot (strictly, on the mean of its 5 seeds).

Run: python benchmarks/quality_benchmark.py [--suites a,b] [--train-seeds N]
         [--json FILE] [--cache DIR] [--from-json FILE] [--write]
`--cache DIR` keeps the baselines' rollout stores, so a re-run after an optimizer
change scores only the training runs; `--from-json FILE` prints (or `--write`s)
the figures a `--json FILE` run recorded, without running anything. `--write` (the five suites, 3 training seeds:
about 20 minutes on two cores) stores the figures in `benchmarks/quality/results.json`
and the table in README.md (between `<!-- figures:quality -->` markers); a test
checks that the README's table is the one those figures give.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from skillopt import api  # noqa: E402
from skillopt.models.local_prompt import format_example  # noqa: E402
from skillopt.optimize.exemplars import examples_in  # noqa: E402
from skillopt.skill.document import Skill  # noqa: E402
from skillopt.skill.edits import Edit, apply_edits  # noqa: E402
from skillopt.suite.loader import load_suite  # noqa: E402

HERE = Path(__file__).resolve().parent / "quality"
RESULTS = HERE / "results.json"
README = ROOT / "README.md"
SUITES = ["iso-dates", "phone-numbers", "email-extract", "initials", "file-slugs"]
SPARE = ["money"]
SHOTS = (3, 8)
SEEDS = 5


def k_shot(skill: Skill, examples: list[tuple[str, str]]) -> Skill:
    """The skill with `examples` added as the exemplars optimizer adds them."""
    edits = [Edit("add", section="Examples", content=format_example(i, o)) for i, o in examples]
    out, report = apply_edits(skill, edits)
    assert len(report.applied) == len(edits), report.to_list()
    return out


def test_mean(skill: Skill | None, suite_path: Path, store: Path) -> float:
    result = api.evaluate(skill, suite_path, split="test", no_skill=skill is None, store=store)
    split = result.results[0]
    assert split.mean is not None, f"nothing scored on {suite_path.name}"
    return split.mean


def random_k(name: str, k: int, prose: Skill, train: list, suite_path: Path, store: Path) -> list:
    scores = []
    for seed in range(SEEDS):
        drawn = random.Random(f"{name}:{k}:{seed}").sample(train, min(k, len(train)))
        pairs = [(t.prompt, str(t.expected)) for t in drawn]
        scores.append(test_mean(k_shot(prose, pairs), suite_path, store))
    return scores


def bench(name: str, cache: Path | None, train_seeds: int) -> dict:
    suite_path = HERE / f"{name}.yaml"
    skill_dir = HERE / name
    suite = load_suite(suite_path)
    prose = Skill.load(skill_dir)
    train = suite.split("train")
    out: dict = {"suite": name, "sizes": {s: len(suite.split(s)) for s in ("train", "val", "test")}}
    with tempfile.TemporaryDirectory() as tmp:
        store = (cache or Path(tmp)) / f"{name}-baselines.sqlite"
        out["no_skill"] = test_mean(None, suite_path, store)
        out["prose"] = test_mean(prose, suite_path, store)
        for k in SHOTS:
            out[f"random_{k}"] = random_k(name, k, prose, train, suite_path, store)
        runs = []
        for seed in range(train_seeds):
            start = time.perf_counter()
            result = api.train(
                skill_dir,
                suite_path,
                seed=seed,
                store=Path(tmp) / f"train-{seed}.sqlite",
                run_dir=Path(tmp) / "runs",
            )
            wall = time.perf_counter() - start
            s = result.summary
            k = len(examples_in(Skill.load(result.run_dir / "best")))
            runs.append(
                {
                    "seed": seed,
                    "test": s["test"]["best"]["mean"],
                    "initial_val": s["initial_val"],
                    "best_val": s["best_val"],
                    "decisions": s["decisions"],
                    "rollouts": s["accounting"]["target_rollouts"],
                    "wall_s": round(wall, 1),
                    "k": k,
                    "random_at_k": random_k(name, k, prose, train, suite_path, store)
                    if k
                    else [out["prose"]],
                }
            )
    out["runs"] = runs
    out["train"] = [r["test"] for r in runs]
    out["random_at_k"] = [x for r in runs for x in r["random_at_k"]]
    out["k"] = statistics.mean(r["k"] for r in runs)
    out["rollouts"] = statistics.mean(r["rollouts"] for r in runs)
    out["max_rollouts"] = max(r["rollouts"] for r in runs)
    out["wall_s"] = statistics.mean(r["wall_s"] for r in runs)
    return out


COLUMNS = (
    ("no skill", "no_skill"),
    ("prose", "prose"),
    ("3-shot", "random_3"),
    ("8-shot", "random_8"),
    ("@k", "random_at_k"),
    ("train", "train"),
)


def _mean(value: float | list[float]) -> float:
    return statistics.mean(value) if isinstance(value, list) else value


def table(rows: list[dict]) -> str:
    """One row per suite: test means (random k-shot: over its seeds), the trained
    skill's k, target rollouts and wall time; then the mean row and the verdict."""
    head = f"{'suite':<15}{'split':>9}" + "".join(f"{t:>9}" for t, _ in COLUMNS)
    head += f"{'k':>5}{'rollouts':>10}{'wall':>7}"
    lines = [head, "─" * len(head)]
    for r in rows:
        s = r["sizes"]
        split = f"{s['train']}/{s['val']}/{s['test']}"
        lines.append(
            f"{r['suite']:<15}{split:>9}"
            + "".join(f"{_mean(r[key]):>9.3f}" for _, key in COLUMNS)
            + f"{r['k']:>5.1f}{r['rollouts']:>10.0f}{r['wall_s']:>6.0f}s"
        )
    if len(rows) > 1:
        lines.append("─" * len(head))
        lines.append(
            f"{'mean':<15}{'':>9}"
            + "".join(f"{statistics.mean(_mean(r[key]) for r in rows):>9.3f}" for _, key in COLUMNS)
            + f"{statistics.mean(r['k'] for r in rows):>5.1f}"
            + f"{statistics.mean(r['rollouts'] for r in rows):>10.0f}"
            + f"{statistics.mean(r['wall_s'] for r in rows):>6.0f}s"
        )
        beats = sum(_mean(r["train"]) > _mean(r["random_8"]) for r in rows)
        beats_k = sum(_mean(r["train"]) > _mean(r["random_at_k"]) for r in rows)
        lines.append(
            f"train beats random 8-shot on {beats} of {len(rows)} suites, random k-shot "
            f"at its own size on {beats_k}; most target rollouts in one suite: "
            f"{max(r['max_rollouts'] for r in rows)}"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suites", help="comma-separated (default: the five)")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument(
        "--train-seeds", type=int, default=3, help="training runs per suite (--seed 0..N-1)"
    )
    parser.add_argument(
        "--write", action="store_true", help="store the figures and update README.md"
    )
    parser.add_argument(
        "--from-json", type=Path, help="print (or --write) the figures a --json run recorded"
    )
    parser.add_argument("--cache", type=Path, help="keep the baselines' rollout stores here")
    args = parser.parse_args(argv)
    names = args.suites.split(",") if args.suites else SUITES
    rows = []
    if args.from_json:  # a run's figures, as --json recorded them
        rows = json.loads(args.from_json.read_text())
        names = [r["suite"] for r in rows]
        args.train_seeds = len(rows[0]["runs"])
    for name in [] if args.from_json else names:
        rows.append(bench(name, args.cache, args.train_seeds))
        print(table(rows[-1:]), flush=True)
    print()
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.write:
        if names != SUITES or args.train_seeds != 3:
            parser.error("--write records the five suites with 3 training seeds")
        RESULTS.write_text(json.dumps(rows, indent=1) + "\n")
        README.write_text(readme_with(README.read_text(encoding="utf-8"), rows), encoding="utf-8")
        print(f"wrote {RESULTS.relative_to(ROOT)} and README.md (figures:quality)")
    return 0


def readme_with(text: str, rows: list[dict]) -> str:
    """README.md's text with the quality table (as a code block) in its region."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "readme_figures", Path(__file__).resolve().parent / "readme_figures.py"
    )
    assert spec is not None and spec.loader is not None
    figures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(figures)
    return str(figures.rewrite(text, {"quality": figures.code_block(table(rows) + "\n")}))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
