"""Bundles carry the code their suite names and a replay runs none of it unless
trusted; a replay leaves the user's store as it was and counts only itself; a run
that cannot be replayed is not bundled, and an incomplete recording reads as such."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import tarfile
from pathlib import Path

import git
import pytest
import yaml
from train.world import HELPFUL, ScriptedOptimizer, edits_reply, flags, leave_only_the_bundle
from typer.testing import CliRunner

import skillopt
from skillopt.cli.main import app
from skillopt.store.rollouts import RolloutStore

runner = CliRunner()

EVIL = """\
import pathlib

pathlib.Path({marker!r}).write_text("imported")  # what an archive's code could do


def score(answer, expected, task):
    return answer.strip() == expected
"""

VERIFY = """\
touch {marker}
[ "$(cat)" = "$SKILLOPT_EXPECTED" ]
"""


def _with_scorer(world, scorer: dict) -> None:
    data = yaml.safe_load(world["suite"].read_text())
    data["scorer"] = scorer
    world["suite"].write_text(yaml.safe_dump(data, sort_keys=False))


def _train(world, models, tmp_path, **extra):
    models["set"](ScriptedOptimizer([edits_reply("Be polite."), edits_reply(HELPFUL)]))
    return skillopt.train(
        world["skill"],
        world["suite"],
        **flags(run_dir=tmp_path / "runs", store=tmp_path / "store.sqlite", **extra),
    )


def _bundle(run, tmp_path, out=None):
    out = out or tmp_path / "bundle" / "run.tar.gz"
    args = ["bundle", run.run_id, "--run-dir", str(tmp_path / "runs"), "-o", str(out)]
    return runner.invoke(app, args), out


def _manifest(out) -> dict:
    with tarfile.open(out) as tar:
        return json.loads(tar.extractfile("bundle/bundle.json").read())


# ---------------------------------------------------------------- code in a bundle
def test_a_bundle_python_scorer_runs_only_under_trust_code(world, models, tmp_path, monkeypatch):
    marker = tmp_path / "imported.txt"
    (world["suite"].parent / "evilscorer.py").write_text(EVIL.format(marker=str(marker)))
    _with_scorer(world, {"type": "python", "function": "evilscorer:score"})
    run = _train(world, models, tmp_path)
    assert marker.exists()  # the run itself used its scorer
    marker.unlink()
    res, out = _bundle(run, tmp_path)
    assert res.exit_code == 0, res.output
    # the module travels with the suite, named as code; checking the bundle ran none
    assert _manifest(out)["code"] == ["suite/evilscorer.py"]
    assert not marker.exists()
    fresh = leave_only_the_bundle(world, tmp_path, monkeypatch)
    target_calls = models["target"].call_count

    served = runner.invoke(app, ["train", "--replay", str(out)])
    assert served.exit_code == 0, served.output
    assert "reproduced" in served.output and "0 model calls" in served.output
    assert not marker.exists()  # every rollout came from the recording, no code ran

    trusted = runner.invoke(app, ["train", "--replay", str(out), "--trust-code"])
    assert trusted.exit_code == 0, trusted.output
    assert "reproduced" in trusted.output
    assert marker.exists()  # told to trust it, the scorer was loaded
    assert models["target"].call_count == target_calls
    assert list(fresh.iterdir()) == []


def test_a_command_verifiers_file_is_packed_and_not_run(world, models, tmp_path, monkeypatch):
    marker = tmp_path / "verified.txt"
    (world["suite"].parent / "verify.sh").write_text(VERIFY.format(marker=marker))
    _with_scorer(world, {"type": "command", "run": "sh $SKILLOPT_SUITE_DIR/verify.sh"})
    run = _train(world, models, tmp_path, epochs=1)
    assert run.summary["best_val"] is not None and marker.exists()
    marker.unlink()
    res, out = _bundle(run, tmp_path)
    assert res.exit_code == 0, res.output
    assert _manifest(out)["code"] == ["suite/verify.sh"]
    leave_only_the_bundle(world, tmp_path, monkeypatch)
    replayed = skillopt.replay(out)
    assert replayed.verdict == "reproduced", replayed.first_difference
    assert not marker.exists()


def test_trust_code_is_only_for_a_replay(world):
    res = runner.invoke(app, ["train", str(world["skill"]), "--trust-code"])
    assert res.exit_code == 2 and "--trust-code" in res.output


# ---------------------------------------------------------------- a replay is read-only
def test_a_replay_leaves_the_store_alone_and_counts_only_itself(world, models, tmp_path):
    run = _train(world, models, tmp_path)
    store = tmp_path / "store.sqlite"
    with RolloutStore(store) as s:
        used = len(s.uses(run.run_id, "rollout"))
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    first = skillopt.replay(run.run_id, run_dir=tmp_path / "runs")
    second = skillopt.replay(run.run_id, run_dir=tmp_path / "runs")
    assert first.reproduced and second.reproduced
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before
    # the rollouts the run asked for, each time: not the sum of every replay so far
    acct = run.summary["accounting"]
    asked = acct["target_rollouts"] + acct["cached_rollouts"]
    assert first.served["rollouts"] == second.served["rollouts"] == asked >= used > 0
    assert first.served["replies"] == second.served["replies"] > 0


# ---------------------------------------------------------------- what cannot replay
def test_a_run_with_no_recorded_calls_is_not_bundled(world, models, tmp_path):
    run = _train(world, models, tmp_path)
    (tmp_path / "store.sqlite").unlink()
    with RolloutStore(tmp_path / "store.sqlite"):
        pass  # a store again, but not the one the run wrote
    res, out = _bundle(run, tmp_path)
    assert res.exit_code == 2, res.output
    assert "no recorded call" in res.output and run.run_id in res.output
    assert "internal error" not in res.output and not out.exists()


def test_a_run_whose_audit_branch_is_gone_is_not_bundled(world, models, tmp_path):
    run = _train(world, models, tmp_path)
    repo = git.Repo(yaml.safe_load((run.run_dir / "run.yaml").read_text())["audit"]["repo"])
    repo.git.update_ref("-d", f"refs/heads/skillopt/{run.run_id}")
    res, out = _bundle(run, tmp_path)
    assert res.exit_code == 2, res.output
    assert f"audit branch skillopt/{run.run_id}" in res.output and not out.exists()


def test_a_run_missing_a_steps_rollouts_is_not_bundled(world, models, tmp_path):
    run = _train(world, models, tmp_path)
    # the rollouts of the best skill (a candidate of a later step) are lost
    db = sqlite3.connect(tmp_path / "store.sqlite")
    db.execute("DELETE FROM rollouts WHERE skill_hash = ?", (run.summary["best_skill_hash"],))
    db.commit()
    db.close()
    res, out = _bundle(run, tmp_path)
    assert res.exit_code == 2, res.output
    assert "incomplete" in res.output and "step " in res.output and "rollout" in res.output
    assert not out.exists()


def test_an_incomplete_recording_is_not_a_run_that_differs(world, models, tmp_path):
    run = _train(world, models, tmp_path)
    runs = ["--run-dir", str(tmp_path / "runs")]
    # a complete recording whose record says otherwise: the run differs
    state_path = run.run_dir / "state.json"
    recorded = state_path.read_text()
    state = json.loads(recorded)
    next(s for s in state["steps"] if s["kind"] == "initial")["val"] = 0.123
    state_path.write_text(json.dumps(state))
    differs = runner.invoke(app, ["train", "--replay", run.run_id, *runs])
    assert differs.exit_code == 1, differs.output
    assert "differs" in differs.output and "0.123" in differs.output
    # the record as it was, but a reply lost from the recording: incomplete
    state_path.write_text(recorded)
    assert skillopt.replay(run.run_id, run_dir=tmp_path / "runs").verdict == "reproduced"
    db = sqlite3.connect(tmp_path / "store.sqlite")
    db.execute("DELETE FROM replies WHERE key = (SELECT MAX(key) FROM replies)")
    db.commit()
    db.close()
    lost = runner.invoke(app, ["train", "--replay", run.run_id, *runs])
    assert lost.exit_code == 3, lost.output
    assert "incomplete" in lost.output and "no reply" in lost.output
    assert "differs" not in lost.output
    assert skillopt.replay(run.run_id, run_dir=tmp_path / "runs").verdict == "incomplete"


# ------------------------------------------------------------ suites read from a source
def _as_csv(world) -> Path:
    """The world's items as a CSV with its own column names (split pinned by a column)."""
    import csv

    data = yaml.safe_load(world["suite"].read_text())
    path = world["suite"].with_name("words.csv")
    with path.open("w", newline="") as stream:
        out = csv.writer(stream)
        out.writerow(["Item", "Gold", "Fold", "Id"])
        for it in data["items"]:
            out.writerow([it["input"], it["expected"], it["split"], it["id"]])
    return path


@pytest.mark.parametrize("how", ["the source itself", "a suite naming it"])
def test_a_run_on_a_task_source_is_bundled_and_replays_offline(
    how, world, models, tmp_path, monkeypatch
):
    table = _as_csv(world)
    mapping = {"input": "Item", "expected": "Gold", "split": "Fold", "id": "Id"}
    if how == "a suite naming it":
        world["suite"].write_text(
            yaml.safe_dump({"name": "words", "items": "words.csv", "mapping": mapping})
        )
        suite = world["suite"]
    else:
        # column names a reader guesses
        rows = table.read_text().replace("Item,Gold,Fold,Id", "input,expected,split,id")
        table.write_text(rows)
        suite = table
        world["suite"].unlink()
    models["set"](ScriptedOptimizer([edits_reply("Be polite."), edits_reply(HELPFUL)]))
    run = skillopt.train(
        world["skill"], suite, **flags(run_dir=tmp_path / "runs", store=tmp_path / "store.sqlite")
    )
    assert run.summary["best_val"] == 1.0
    res, out = _bundle(run, tmp_path)
    assert res.exit_code == 0, res.output
    # the suite travels with its items written in: no source file is needed to replay
    with tarfile.open(out) as tar:
        packed = yaml.safe_load(tar.extractfile(f"bundle/suite/{_manifest(out)['suite']}"))
    assert len(packed["items"]) == 16 and "mapping" not in packed
    leave_only_the_bundle(world, tmp_path, monkeypatch)
    replayed = skillopt.replay(out)
    assert replayed.verdict == "reproduced", replayed.first_difference
