"""The embedded model's speed on a busy machine (needs the `local` extra): calls/s
with the machine as it is and beside CPU-bound neighbours, for each llama.cpp
thread count and OpenMP wait policy asked: `skillopt` (what skillopt sets when the
environment does not: passive), `libgomp` (libgomp's own default, which spins a
while before it sleeps: what skillopt did before), `passive`, `active`, `spin=N`
(libgomp's default spinning N times; it spins 300000).

Each measurement runs in a fresh process (OpenMP reads its settings when llama.cpp
loads): the model is loaded and warmed with one call, then `--calls` prompts of
the product-codes suite (the bundled skill plus 8 worked examples) are answered
and timed. A neighbour is `python -c "while True: pass"`, started before and
killed after each measurement. Every configuration must give the same answers
(the digest column): the thread count is not in the rollout fingerprint.

Prints one row per configuration: neighbours, threads, wait policy, the load
average when it started, calls/s and the ratio against the same configuration
with no neighbour. Exits 1 when two configurations' answers differ.

Run: python benchmarks/local_threads_benchmark.py [--calls N] [--neighbours 0,2]
     [--threads 1,2,auto] [--policies libgomp,skillopt,passive,active,spin=N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def worker(calls: int, threads: str) -> None:
    """In the measuring process: load, warm, answer `calls` prompts; print JSON."""
    from skillopt.harness.chat import ChatHarness
    from skillopt.models import local, local_prompt
    from skillopt.skill.document import Skill
    from skillopt.suite.loader import load_suite

    suite = load_suite(ROOT / "tasks" / "product-codes.yaml")
    skill = Skill.load(ROOT / "skills" / "product-codes")
    examples = "\n\n".join(
        local_prompt.format_example(t.prompt, str(t.expected)) for t in suite.split("train")[:8]
    )
    skill = skill.with_body(skill.body + "\n## Examples\n\n" + examples + "\n")
    model = local.LocalModel(n_threads=None if threads == "auto" else int(threads))
    harness = ChatHarness(model)
    prompts = [harness.messages(skill, t) for t in suite.split("test")[:calls]]
    model.complete(prompts[-1])  # load, and a first call
    digest = hashlib.sha256()
    start = time.perf_counter()
    for p in prompts:
        digest.update(model.complete(p).text.encode() + b"\0")
    seconds = time.perf_counter() - start
    out = {"n_threads": model.n_threads, "seconds": seconds, "digest": digest.hexdigest()[:12]}
    print(json.dumps(out))


def measure(calls: int, threads: str, policy: str, neighbours: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if policy == "libgomp":  # set but empty: skillopt leaves it, libgomp ignores it
        env["OMP_WAIT_POLICY"] = ""
    elif policy.startswith("spin="):  # libgomp's policy, spinning this many times
        env["OMP_WAIT_POLICY"] = ""
        env["GOMP_SPINCOUNT"] = policy.split("=", 1)[1]
    elif policy != "skillopt":
        env["OMP_WAIT_POLICY"] = policy
    else:
        env.pop("OMP_WAIT_POLICY", None)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(neighbours)]
    try:
        time.sleep(1.0 if busy else 0.0)  # the neighbours running before the first call
        load = os.getloadavg()[0]
        done = subprocess.run(
            [sys.executable, __file__, "--worker", "--calls", str(calls), "--threads", threads],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        for p in busy:
            p.kill()
            p.wait()
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "load": load}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=6)
    parser.add_argument("--neighbours", default="0,2")
    parser.add_argument("--threads", default="auto")
    parser.add_argument("--policies", default="libgomp,skillopt")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.calls, args.threads)
        return 0
    cores = len(os.sched_getaffinity(0))
    print(f"{args.calls} calls per measurement, {cores} cores usable")
    print(
        f"{'neighbours':>10} {'threads':>8} {'policy':>8} {'load':>5} {'calls/s':>8} "
        f"{'vs idle':>8}  digest"
    )
    idle: dict[tuple[str, str], float] = {}
    digests = set()
    for neighbours in (int(n) for n in args.neighbours.split(",")):
        for threads in args.threads.split(","):
            for policy in args.policies.split(","):
                got = measure(args.calls, threads, policy, neighbours)
                rate = args.calls / got["seconds"]
                idle.setdefault((threads, policy), rate)
                ratio = rate / idle[(threads, policy)]
                digests.add(got["digest"])
                label = f"{threads}={got['n_threads']}" if threads == "auto" else threads
                print(
                    f"{neighbours:>10} {label:>8} {policy:>8} {got['load']:>5.1f} "
                    f"{rate:>8.2f} {ratio:>7.2f}x  {got['digest']}",
                    flush=True,
                )
    if len(digests) > 1:
        print(f"answers differ between configurations: {sorted(digests)}")
        return 1
    print("every configuration gave the same answers")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
