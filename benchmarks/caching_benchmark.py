"""What provider prompt caching saves on a `skillopt eval` with a long skill.

A 2,000-token skill is evaluated on 100 tasks with the target
`anthropic/claude-sonnet-4-5`, through skillopt's own eval path (`skillopt.evaluate`,
the chat harness, the Anthropic SDK over HTTP, or litellm with `--client litellm`),
against the loopback stand-in of the Anthropic API (tests/fakes/anthropic_api.py) imitating its prompt cache: the first request with
a marked prefix writes it, every later one reads it. The eval runs twice, each time
with a fresh stand-in and an empty rollout store (nothing is served from a store):
once as configured by default, and once with `prompt_cache: false`. Costs are
skillopt's for each reply, at Anthropic's prices in litellm's price map (cache reads
at a tenth of the input price, cache writes at 1.25 times it); the benchmark checks
them against its own arithmetic over the usage the stand-in reported.

Run: python benchmarks/caching_benchmark.py [--rollouts N] [--client auto|litellm]
Prints both costs, their ratio and the cached-token totals; exits 0 whatever the
numbers (a measurement, not a test), 1 only if the costs disagree with the price
arithmetic.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fakes.anthropic_api import FakeAnthropic, Turn, prompt_text  # noqa: E402

from skillopt import evaluate  # noqa: E402
from skillopt.config import ModelSettings, Settings  # noqa: E402
from skillopt.models.litellm_model import import_litellm  # noqa: E402
from skillopt.store.rollouts import RolloutStore  # noqa: E402

TARGET = "anthropic/claude-sonnet-4-5"
PRICES = "claude-sonnet-4-5"  # its entry in litellm's price map
SKILL_TOKENS = 2000  # as the stand-in counts them: one per four bytes


def skill_body(tokens: int = SKILL_TOKENS) -> str:
    """Numbered rules adding up to `tokens` tokens (4 characters each)."""
    lines, size, i = [], 0, 0
    while size < 4 * tokens:
        i += 1
        line = f"{i}. Reply with the code in capital letters; keep its digits as given.\n"
        lines.append(line)
        size += len(line)
    return "".join(lines)[: 4 * tokens].rstrip() + "\n"


def write_fixture(root: Path, n: int, tokens: int) -> tuple[Path, Path]:
    skill = root / "skills" / "codes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: codes\ndescription: Normalise codes. Use in the caching benchmark.\n"
        f"---\n{skill_body(tokens)}",
        encoding="utf-8",
    )
    items = [
        {"id": f"c{i:04d}", "input": f"code-{i}", "expected": f"CODE-{i}", "split": "test"}
        for i in range(n)
    ]
    suite = root / "codes.yaml"
    suite.write_text(yaml.safe_dump({"name": "codes", "prompt": "Code: {input}", "items": items}))
    return skill, suite


def answer(body: dict) -> Turn:
    return Turn.text(prompt_text(body).removeprefix("Code: ").upper())


def price(usage: dict[str, int]) -> float:
    """What Anthropic bills for one reply's `usage`, at litellm's prices for the model."""
    p = import_litellm().model_cost[PRICES]
    return (
        usage["input_tokens"] * p["input_cost_per_token"]
        + usage["cache_creation_input_tokens"] * p["cache_creation_input_token_cost"]
        + usage["cache_read_input_tokens"] * p["cache_read_input_token_cost"]
        + usage["output_tokens"] * p["output_cost_per_token"]
    )


def one_eval(
    root: Path, skill: Path, suite: Path, *, prompt_cache: bool, client: str = "auto"
) -> dict[str, Any]:
    """Evaluate against a fresh stand-in and an empty store; what it cost and used."""
    with FakeAnthropic(side_responder=answer, cache=True) as api:
        model = ModelSettings(api_base=api.url, prompt_cache=prompt_cache, client=client)
        settings = Settings(
            target=TARGET,
            concurrency=1,  # in order, so the figures are the same on every run
            models={TARGET: model},
        )
        start = time.perf_counter()
        with RolloutStore(root / f"store-{prompt_cache}.sqlite") as store:
            result = evaluate(skill, suite, settings=settings, store=store)
        wall = time.perf_counter() - start
        usages = [r["usage"] for r in api.api_requests()]
    (r,) = result.results
    return {
        "rollouts": len(r.rollouts),
        "served_from_store": r.cached,
        "mean": r.mean,
        "cost": r.cost,
        "priced": sum(price(u) for u in usages),
        "input_tokens": r.input_tokens,
        "cached_tokens": r.cached_tokens,
        "cache_writes": sum(u["cache_creation_input_tokens"] for u in usages),
        "requests": len(usages),
        "wall_s": wall,
    }


def measure(n: int = 100, tokens: int = SKILL_TOKENS, client: str = "auto") -> dict[str, Any]:
    """Both evals of `n` rollouts with a `tokens`-token skill, and the cost ratio."""
    with tempfile.TemporaryDirectory(prefix="caching-benchmark-") as tmp:
        root = Path(tmp)
        skill, suite = write_fixture(root, n, tokens)
        cached = one_eval(root, skill, suite, prompt_cache=True, client=client)
        uncached = one_eval(root, skill, suite, prompt_cache=False, client=client)
    return {
        "cached": cached,
        "uncached": uncached,
        "ratio": cached["cost"] / uncached["cost"],
        "agrees": all(
            math.isclose(x["cost"], x["priced"], rel_tol=1e-9) for x in (cached, uncached)
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rollouts", type=int, default=100)
    parser.add_argument("--client", choices=["auto", "litellm"], default="auto")
    args = parser.parse_args(argv)
    m = measure(args.rollouts, client=args.client)
    p = import_litellm().model_cost[PRICES]
    print(
        f"{args.rollouts} rollouts, {SKILL_TOKENS:,}-token skill, target {TARGET} "
        f"(input ${p['input_cost_per_token'] * 1e6:.2f}/M, cache read "
        f"${p['cache_read_input_token_cost'] * 1e6:.2f}/M, cache write "
        f"${p['cache_creation_input_token_cost'] * 1e6:.2f}/M)"
    )
    for label, key in (("prompt cache on ", "cached"), ("prompt cache off", "uncached")):
        x = m[key]
        print(
            f"{label}: cost ${x['cost']:.4f} (price arithmetic ${x['priced']:.4f}), "
            f"{x['cached_tokens']:,} of {x['input_tokens']:,} input tokens read from the "
            f"cache, {x['cache_writes']:,} written; mean {x['mean']:.3f}, "
            f"{x['served_from_store']} from the store, {x['wall_s']:.1f}s"
        )
    print(f"cost ratio (cached / uncached): {m['ratio']:.3f}")
    if not m["agrees"]:
        print("the costs differ from the price arithmetic", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
