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

Run: python benchmarks/quality_benchmark.py [--suites a,b] [--json FILE] [--cache DIR]
(`--cache DIR` keeps the baselines' rollout store, so a re-run after an optimizer
change scores only the training run.)
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
from skillopt.models.local import format_example  # noqa: E402
from skillopt.optimize.exemplars import examples_in  # noqa: E402
from skillopt.skill.document import Skill  # noqa: E402
from skillopt.skill.edits import Edit, apply_edits  # noqa: E402
from skillopt.suite.loader import load_suite  # noqa: E402

HERE = Path(__file__).resolve().parent / "quality"
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


def bench(name: str, cache: Path | None) -> dict:
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
        start = time.perf_counter()
        result = api.train(
            skill_dir, suite_path, store=Path(tmp) / "train.sqlite", run_dir=Path(tmp) / "runs"
        )
        out["wall_s"] = round(time.perf_counter() - start, 1)
        s = result.summary
        out["train"] = s["test"]["best"]["mean"]
        out["initial_val"], out["best_val"] = s["initial_val"], s["best_val"]
        out["decisions"] = s["decisions"]
        out["rollouts"] = s["accounting"]["target_rollouts"]
        out["k"] = k = len(examples_in(Skill.load(result.run_dir / "best")))
        out["random_at_k"] = (
            random_k(name, k, prose, train, suite_path, store) if k else [out["prose"]]
        )
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
    head += f"{'k':>4}{'rollouts':>10}{'wall':>7}"
    lines = [head, "─" * len(head)]
    for r in rows:
        s = r["sizes"]
        split = f"{s['train']}/{s['val']}/{s['test']}"
        lines.append(
            f"{r['suite']:<15}{split:>9}"
            + "".join(f"{_mean(r[key]):>9.3f}" for _, key in COLUMNS)
            + f"{r['k']:>4}{r['rollouts']:>10}{r['wall_s']:>6.0f}s"
        )
    if len(rows) > 1:
        lines.append("─" * len(head))
        lines.append(
            f"{'mean':<15}{'':>9}"
            + "".join(f"{statistics.mean(_mean(r[key]) for r in rows):>9.3f}" for _, key in COLUMNS)
            + f"{statistics.mean(r['k'] for r in rows):>4.0f}"
            + f"{statistics.mean(r['rollouts'] for r in rows):>10.0f}"
            + f"{sum(r['wall_s'] for r in rows):>6.0f}s"
        )
        beats = sum(r["train"] > _mean(r["random_8"]) for r in rows)
        beats_k = sum(r["train"] > _mean(r["random_at_k"]) for r in rows)
        lines.append(
            f"train beats random 8-shot on {beats} of {len(rows)} suites, random k-shot "
            f"at its own size on {beats_k}; most target rollouts in one suite: "
            f"{max(r['rollouts'] for r in rows)}"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suites", help="comma-separated (default: the five)")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument("--cache", type=Path, help="keep the baselines' rollout stores here")
    args = parser.parse_args(argv)
    names = args.suites.split(",") if args.suites else SUITES
    rows = []
    for name in names:
        rows.append(bench(name, args.cache))
        print(table(rows[-1:]), flush=True)
    print()
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
