"""What the optimizer is asked, and when: its calls run on their own concurrency, and
no call is spent where its answer could not be used."""

from __future__ import annotations

import threading

import yaml
from typer.testing import CliRunner
from world import HELPFUL, ScriptedOptimizer, edits_reply, flags

from skillopt import api
from skillopt.cli.main import app
from skillopt.optimize.base import Proposal, ProposalRequest


class Overlapping:
    """An optimizer object that records how many of its calls run at once: each call
    waits (up to a timeout) for a second one to arrive, so calls that may overlap do."""

    name = "overlapping"

    def __init__(self, parties: int = 2, timeout: float = 2.0):
        self.lock = threading.Lock()
        self.active = 0
        self.most = 0
        self.kinds: list[str] = []
        self.barrier = threading.Barrier(parties, timeout=timeout)

    def propose(self, request: ProposalRequest) -> Proposal:
        with self.lock:
            self.kinds.append(request.kind)
            self.active += 1
            self.most = max(self.most, self.active)
        try:
            self.barrier.wait()
        except threading.BrokenBarrierError:
            pass  # alone: the calls ran one after another
        finally:
            with self.lock:
                self.active -= 1
        return Proposal()


def test_reflections_run_at_once_even_when_rollouts_run_one_at_a_time(world, models):
    opt = Overlapping()
    settings = flags(epochs=1, minibatch_size=4, concurrency=1, optimizer_concurrency=2)
    api.train(world["skill"], world["suite"], **(settings | {"optimizer": opt}))
    assert sorted(opt.kinds) == ["failures", "successes"]
    assert opt.most == 2


def test_optimizer_concurrency_is_a_flag_recorded_with_the_run(world, models):
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    res = CliRunner().invoke(
        app,
        [
            "train",
            str(world["skill"]),
            "--tasks",
            str(world["suite"]),
            "--target",
            "scripted/test-target",
            "--optimizer",
            "scripted/test-optimizer",
            "--epochs",
            "1",
            "--no-slow-update",
            "--concurrency",
            "1",
            "--optimizer-concurrency",
            "3",
        ],
    )
    assert res.exit_code == 0, res.output
    run_id = res.stdout.split("history: git log skillopt/")[1].split()[0]
    config = yaml.safe_load((world["root"] / "runs" / run_id / "run.yaml").read_text())
    assert config["settings"]["concurrency"] == 1
    assert config["settings"]["optimizer_concurrency"] == 3
    plan = api.plan(world["skill"], world["suite"], **flags(optimizer_concurrency=5))
    assert plan.total_steps == 3  # accepted by the dry run's keywords too
