"""A secret the optimizer echoes into an edit (the value of a key in the environment)
is blanked before the edit becomes a skill: no candidate, rejected candidate,
decomposition subset, slow-update guidance or best skill holds it, so it reaches
neither the target, nor the store, nor git, nor the run directory, nor a bundle;
and the step says how many values were removed."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile

import pytest
import yaml
from helpers import write_skill
from train.world import HELPFUL, PARTIAL, ScriptedOptimizer, train_args
from typer.testing import CliRunner

import skillopt
from skillopt._util.secrets import MASK
from skillopt.cli.main import app

SECRET = "sk-ant-api03-" + os.urandom(12).hex()


def edit(op: str, content: str, *, anchor: str | None = None) -> dict:
    return {
        "op": op,
        "anchor": anchor,
        "section": "Rules" if op == "add" else None,
        "content": content,
        "rationale": f"the key {SECRET} helps",
        "evidence": ["word-0", SECRET],
    }


def reply(*edits: dict) -> str:
    return json.dumps({"edits": list(edits)})


def plan() -> ScriptedOptimizer:
    return ScriptedOptimizer(
        [
            # half as helpful: accepted, so the best skill would carry it
            reply(edit("add", f"- {PARTIAL} Key: {SECRET}")),
            # two edits that change nothing: rejected, then gated apart
            reply(edit("add", f"- Be polite, {SECRET}."), edit("add", f"- Be kind ({SECRET}).")),
            # a replace that changes nothing, and a delete whose anchor matches nothing
            reply(
                edit(
                    "replace",
                    f"- Reply with the item only; the key is {SECRET}.",
                    anchor="- Reply with the item only.",
                ),
                edit("delete", "", anchor=f"- Never say {SECRET}."),
            ),
        ],
        # the slow update after the first epoch, which changed the skill
        guidance=f"- Keep {SECRET} at hand.",
        notes=f"- the key is {SECRET}",
    )


def written(root) -> bytes:
    """Every byte under `root`, with each tar.gz bundle's members unpacked too."""
    parts = []
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        parts.append(path.read_bytes())
        if path.name.endswith(".tar.gz"):
            with tarfile.open(path) as tar:
                for member in tar.getmembers():
                    fh = tar.extractfile(member) if member.isfile() else None
                    if fh is not None:
                        parts.append(fh.read())
    return b"\n".join(parts)


def git_objects(repo: str) -> bytes:
    """Every object of the audit repository (commits, trees, blobs; packed or loose,
    reachable or not) and every ref name, uncompressed."""
    objects = subprocess.run(
        ["git", "-C", repo, "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout
    refs = subprocess.run(
        ["git", "-C", repo, "for-each-ref", "--format=%(refname) %(contents)"],
        capture_output=True,
        check=True,
    ).stdout
    return objects + refs


@pytest.mark.slow  # two seconds: three epochs, a bundle and a replay
def test_a_secret_echoed_into_edits_is_stored_nowhere(world, models, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    opt = plan()
    models["set"](opt)
    args = train_args(world, "--epochs", "3", "--run-dir", str(tmp_path / "runs"))
    args += ["--store", str(tmp_path / "store.sqlite")]
    done = CliRunner().invoke(app, [a for a in args if a != "--no-slow-update"])
    assert done.exit_code == 0, done.output
    run_dir = next((tmp_path / "runs").glob("words-*"))
    skillopt.bundle(run_dir.name, tmp_path / "bundle" / "run.tar.gz", run_dir=tmp_path / "runs")
    assert opt.failure_calls == 3  # every planned reply was asked for

    # the target never read it: every skill it was given was blanked
    assert not [c for c in models["target"].calls if SECRET in json.dumps(c.messages)]
    # nor did the optimizer, in a later prompt (memory, notes, the skill)
    assert not [p for p in opt.prompts if SECRET in p]
    repo = yaml.safe_load((run_dir / "run.yaml").read_text())["audit"]["repo"]
    everything = written(tmp_path) + git_objects(repo) + done.output.encode()
    assert SECRET.encode() not in everything
    best = (run_dir / "best" / "SKILL.md").read_text()
    assert f"{PARTIAL} Key: {MASK}" in best  # the edit was kept, the value blanked

    # each step says how many values it removed, never the values
    state = json.loads((run_dir / "state.json").read_text())
    removed = {r["step"]: r.get("secrets", 0) for r in state["steps"] if r["kind"] != "initial"}
    slow = [r for r in state["steps"] if r["kind"] == "slow_update" and r.get("guidance")]
    assert slow and slow[0]["guidance"] == f"- Keep {MASK} at hand."
    assert removed[1] == 3  # content, rationale and evidence of the one edit
    assert removed[slow[0]["step"]] == 1
    assert sum(removed.values()) == 3 + 1 + 6 + 6
    assert "removed 3 secret values from the optimizer's edits" in done.output
    assert "removed 1 secret value from the optimizer's guidance" in done.output
    report = (run_dir / "report.md").read_text()
    assert "## Secret values removed" in report
    assert "- step 1 (step): 3 secret values removed from the edits" in report

    # the store kept the blanked replies, and they rebuild the same skills
    replayed = skillopt.replay(run_dir.name, run_dir=tmp_path / "runs")
    assert replayed.reproduced, replayed.first_difference


def test_a_skill_holding_its_authors_key_can_be_edited_where_it_holds_it(
    world, models, tmp_path, monkeypatch
):
    """The key in the initial skill is the author's own text: trained on as it is. An
    anchor quoting it still matches, so an edit can take the key out; the commit
    message that lists the edit does not repeat it."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    line = f"- Call the API with {SECRET}."
    write_skill(
        world["root"] / "skills",
        "words",
        body=f"# Words\n\nRewrite the item you are given.\n\n## Rules\n\n{line}\n",
    )
    models["set"](ScriptedOptimizer([reply(edit("replace", f"- {HELPFUL}", anchor=line))]))
    args = train_args(world, "--epochs", "1", "--run-dir", str(tmp_path / "runs"))
    done = CliRunner().invoke(app, [*args, "--store", str(tmp_path / "store.sqlite")])
    assert done.exit_code == 0, done.output
    run_dir = next((tmp_path / "runs").glob("words-*"))
    state = json.loads((run_dir / "state.json").read_text())
    assert [r["decision"] for r in state["steps"]] == ["initial", "accepted"]
    assert state["steps"][1]["secrets"] == 2  # the rationale and evidence, not the anchor
    best = (run_dir / "best" / "SKILL.md").read_text()
    assert HELPFUL in best and SECRET not in best
    repo = yaml.safe_load((run_dir / "run.yaml").read_text())["audit"]["repo"]
    messages = subprocess.run(
        ["git", "-C", repo, "log", "--all", "--format=%B"], capture_output=True, check=True
    ).stdout.decode()
    assert "replace '- Call the API with ***.'" in messages and SECRET not in messages
