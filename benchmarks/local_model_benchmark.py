"""Figures for the embedded model's calls (needs the `local` extra): are answers
independent of call order, and what does reusing the skill's KV cache save?

The batch is the bundled product-codes suite: every task with the bundled skill
and with that skill plus 8 worked examples (a longer skill, as training makes
it). Each prompt is answered

- in suite order, in a shuffled order and twice in a row (as `--samples 2`
  does), with the skill's KV cache reused (the default);
- with the skill part evaluated afresh on every call (`prefix_reuse=False`);
- by a freshly loaded model, for every `--fresh`-th prompt;
- by llama-cpp-python's own prefix matching (`create_completion` on whatever the
  last call left in the cache: what skillopt did before evaluation v2), in suite
  order and shuffled, to show what the canonical evaluation fixes.

It prints how many answers differ from the fresh-model answers for each, and
ms per call for each mode (the best of `--rounds` timed passes, interleaved, so
a busy machine weighs on every mode alike). Exits 1 if the default mode's
answers differ from a fresh model's; the numbers themselves are a measurement.

Run: python benchmarks/local_model_benchmark.py [--tasks N] [--rounds R] [--fresh K]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from skillopt.harness.chat import ChatHarness  # noqa: E402
from skillopt.models import local, local_llama, local_prompt  # noqa: E402
from skillopt.skill.document import Skill  # noqa: E402
from skillopt.suite.loader import load_suite  # noqa: E402

Answer = Callable[[list[dict]], str]


def batch(n_tasks: int | None) -> list[list[dict]]:
    """The prompts: every task with the bundled skill, then with 8 examples added."""
    suite = load_suite(ROOT / "tasks" / "product-codes.yaml")
    skill = Skill.load(ROOT / "skills" / "product-codes")
    examples = "\n\n".join(
        local_prompt.format_example(t.prompt, str(t.expected)) for t in suite.split("train")[:8]
    )
    longer = skill.with_body(skill.body + "\n## Examples\n\n" + examples + "\n")
    harness = ChatHarness(local.LocalModel())
    tasks = suite.tasks[:n_tasks] if n_tasks else suite.tasks
    return [harness.messages(s, t) for s in (skill, longer) for t in tasks]


def answers(answer: Answer, prompts: Sequence[list[dict]], order: Sequence[int]) -> dict[int, str]:
    return {i: answer(prompts[i]) for i in order}


def timed(answer: Answer, prompts: Sequence[list[dict]]) -> float:
    """ms per call over the batch in suite order."""
    start = time.perf_counter()
    for p in prompts:
        answer(p)
    return 1000 * (time.perf_counter() - start) / len(prompts)


def llama_prefix_matching(model: local.LocalModel) -> Answer:
    """The previous evaluation: llama-cpp-python matches the prompt against the
    tokens its cache holds and evaluates only the rest, in whatever batch that is."""
    runner = local_llama.runner_for(model.n_ctx, model.n_threads)

    def answer(prompt: list[dict]) -> str:
        runner.head = None  # this mode leaves the cache in a non-canonical state
        out = runner.llm.create_completion(
            runner.llm.tokenize(local_prompt.completion_prompt(prompt).encode(), add_bos=True),
            max_tokens=model.max_tokens,
            temperature=model.temperature,
            stop=local_llama.STOP,
            seed=0,
        )
        return str(out["choices"][0]["text"]).strip()

    return answer


def differ(a: dict[int, str], b: dict[int, str]) -> int:
    return sum(a[i] != b[i] for i in a if i in b)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=None, help="first N tasks (default all)")
    parser.add_argument("--rounds", type=int, default=2, help="timed passes per mode")
    parser.add_argument("--fresh", type=int, default=5, help="every K-th prompt on a fresh model")
    parser.add_argument("--seed", type=int, default=1, help="seed of the shuffled order")
    args = parser.parse_args(argv)

    prompts = batch(args.tasks)
    n = len(prompts)
    reuse = local.LocalModel()
    afresh = local.LocalModel(prefix_reuse=False)

    def reuse_answer(p: list[dict]) -> str:
        return reuse.complete(p).text

    def afresh_answer(p: list[dict]) -> str:
        return afresh.complete(p).text

    in_order = list(range(n))
    shuffled = in_order[:]
    random.Random(args.seed).shuffle(shuffled)

    # the reference: each sampled prompt answered by a freshly loaded model
    fresh: dict[int, str] = {}
    for i in range(0, n, args.fresh):
        local_llama._close_all()
        fresh[i] = local.LocalModel().complete(prompts[i]).text
    runner = local_llama.runner_for(reuse.n_ctx, reuse.n_threads)
    legacy = llama_prefix_matching(reuse)

    heads = runner.head_evals
    ordered = answers(reuse_answer, prompts, in_order)
    heads = runner.head_evals - heads
    pairs = [(reuse_answer(prompts[i]), reuse_answer(prompts[i])) for i in in_order]
    results = {
        "reuse, suite order": ordered,
        "reuse, shuffled": answers(reuse_answer, prompts, shuffled),
        "reuse, each twice (1st)": {i: a for i, (a, _) in enumerate(pairs)},
        "reuse, each twice (2nd)": {i: b for i, (_, b) in enumerate(pairs)},
        "no reuse": answers(afresh_answer, prompts, in_order),
        "llama-cpp-python prefix matching, suite order": answers(legacy, prompts, in_order),
        "llama-cpp-python prefix matching, shuffled": answers(legacy, prompts, shuffled),
    }
    print(f"local model determinism: {n} prompts (product-codes, 2 skills), vs a fresh model")
    print(f"  on {len(fresh)} prompts, vs the in-order reuse answers on all {n}:")
    failed = False
    for label, got in results.items():
        vs_fresh = differ(got, fresh)
        vs_order = differ(got, ordered)
        print(f"  {label:<47} {vs_fresh:>3} differ from fresh, {vs_order:>3} from in-order")
        if label.startswith(("reuse", "no reuse")) and (vs_fresh or vs_order):
            failed = True
    legacy_order = differ(
        results["llama-cpp-python prefix matching, suite order"],
        results["llama-cpp-python prefix matching, shuffled"],
    )
    print(f"  llama-cpp-python prefix matching: {legacy_order} answers change with the order")
    print(f"  skill parts evaluated in the in-order pass: {heads} for {n} calls")

    times: dict[str, list[float]] = {"reuse": [], "no reuse": [], "llama prefix matching": []}
    for _ in range(args.rounds):
        times["reuse"].append(timed(reuse_answer, prompts))
        times["no reuse"].append(timed(afresh_answer, prompts))
        times["llama prefix matching"].append(timed(legacy, prompts))
    best = {k: min(v) for k, v in times.items()}
    print(f"local model latency, best of {args.rounds} passes over {n} prompts:")
    for label, ms in best.items():
        print(f"  {label:<22} {ms:8.1f} ms/call")
    print(f"  reuse saves {best['no reuse'] / best['reuse']:.2f}x over no reuse")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
