"""The public API: `skillopt.evaluate / train / plan / resume / validate / lint /
export` with explicit keywords, taking names or objects (a user's own Model,
Harness, Optimizer, Gate) in their place."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from train.world import HELPFUL, follow_skill, world  # noqa: F401

import skillopt
from skillopt import Decision, Proposal, Trajectory
from skillopt.errors import InputError
from skillopt.models import ScriptedModel

ROOT = Path(__file__).resolve().parents[1]


class Capitals:
    """An optimizer object: proposes the helpful line once."""

    name = "capitals"

    def __init__(self) -> None:
        self.requests = 0

    def propose(self, request: skillopt.ProposalRequest) -> Proposal:
        self.requests += 1
        if request.kind != "failures" or HELPFUL in request.skill.body:
            return Proposal()
        return Proposal([skillopt.Edit("add", section="Rules", content=f"- {HELPFUL}")])


class Always:
    """A gate object that keeps every candidate and says so."""

    name = "always"

    def __init__(self) -> None:
        self.calls = 0

    def decide(self, incumbent, candidate) -> Decision:
        self.calls += 1
        ids = [t for t in candidate if t in incumbent]
        inc = sum(incumbent[t].value for t in ids) / len(ids)
        cand = sum(candidate[t].value for t in ids) / len(ids)
        return Decision(True, "kept by the caller's gate", self.name, len(ids), inc, cand, None)


class Shout:
    """A harness object: answers every task in capitals, no model at all."""

    name = "shout"
    version = "1"

    def fingerprint(self) -> dict:
        return {"harness": self.name, "version": self.version}

    def check(self, skills=()) -> None:
        pass

    def run(self, skill, task) -> Trajectory:
        return Trajectory(answer=task.prompt.upper())


def target() -> ScriptedModel:
    return ScriptedModel(follow_skill, name="my-target")


def test_the_package_exports_the_api_and_core_types_lazily():
    code = (
        "import sys, skillopt\n"
        "before = {m for m in sys.modules if m.startswith('skillopt')}\n"
        "assert before == {'skillopt'}, before\n"
        "assert callable(skillopt.train) and callable(skillopt.validate)\n"
        "assert callable(skillopt.export) and callable(skillopt.evaluate)\n"
        "import skillopt.eval.validate, skillopt.ship.export\n"
        "assert callable(skillopt.validate) and callable(skillopt.export)\n"
        "for name in skillopt.__all__: getattr(skillopt, name)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert (ROOT / "skillopt" / "py.typed").is_file()


def test_train_takes_a_model_an_optimizer_and_a_gate_as_objects(world):  # noqa: F811
    optimizer, gate = Capitals(), Always()
    result = skillopt.train(
        world["skill"],
        world["suite"],
        target=target(),
        optimizer=optimizer,
        gate=gate,
        epochs=1,
        batch_size=40,
        slow_update=False,
        concurrency=2,
    )
    assert isinstance(result, skillopt.TrainResult)
    assert optimizer.requests >= 1 and gate.calls == 1
    summary = result.summary
    assert summary["target"] == "my-target" and summary["optimizer"] == "capitals"
    assert summary["best_val"] == 1.0 and summary["test"]["best"]["mean"] == 1.0
    assert HELPFUL in (result.run_dir / "best" / "SKILL.md").read_text()
    from skillopt import api  # reading runs back stays in skillopt.api

    step = api.run_step(result.run_id, 1, run_dir=world["root"] / "runs")
    assert step.trailers["Skillopt-Gate"] == "always"
    assert "Kept by the caller's gate." in step.message


def test_a_run_trained_with_objects_resumes_only_with_objects_again(world):  # noqa: F811
    result = skillopt.train(
        world["skill"],
        world["suite"],
        target=target(),
        optimizer=Capitals(),
        epochs=1,
        slow_update=False,
    )
    with pytest.raises(
        InputError,
        match=r"objects passed in code \(target 'my-target', "
        r"optimizer 'capitals'\).*target=\.\.\., optimizer=",
    ):
        skillopt.resume(result.run_id)
    again = skillopt.resume(result.run_id, target=target(), optimizer=Capitals())
    assert again.summary == result.summary  # finished: nothing redone


def test_evaluate_takes_a_harness_object(world):  # noqa: F811
    result = skillopt.evaluate(world["skill"], world["suite"], harness=Shout(), split="val")
    assert result.harness == "shout"
    assert result.results[0].mean == 0.5  # word items pass in capitals, keep items do not


def test_plan_and_validate_and_lint_are_typed_entry_points(world):  # noqa: F811
    plan = skillopt.plan(
        world["skill"], world["suite"], target=target(), optimizer=Capitals(), epochs=2
    )
    assert isinstance(plan, skillopt.Plan) and plan.epochs == 2
    checked = skillopt.validate(world["skill"], world["suite"], harness=Shout(), min_score=0.4)
    assert isinstance(checked, skillopt.ValidateResult) and checked.exit_code == 0
    assert skillopt.lint([world["skill"]]) == []


def test_a_wrong_object_is_one_clear_error(world):  # noqa: F811
    with pytest.raises(
        InputError, match="optimizer must be a name, or an object with the Optimizer contract"
    ):
        skillopt.train(world["skill"], world["suite"], optimizer=object())  # type: ignore[arg-type]
