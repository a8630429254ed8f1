"""The user's skill library beside the skill under test (`--library DIR`, `agent.library:
user`): loaded and linted once, copied into each rollout's workspace (never a link,
the user's HOME untouched), in the rollout fingerprint, and refused when it would
stand in for the skill under test."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from helpers import write_skill, write_suite
from typer.testing import CliRunner

from skillopt.cli.main import app
from skillopt.config import Settings
from skillopt.errors import InputError
from skillopt.harness import build_harness
from skillopt.skill.document import Skill
from skillopt.skill.library import load_library


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): "dir"
        if p.is_dir()
        else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture
def library(isolated) -> Path:
    root = isolated / "library"
    write_skill(root, "tax-forms", description="Fills in tax forms. Use when a tax form is due.")
    notes = write_skill(root, "csv-cleaner", description="Cleans CSV files. Use for CSV exports.")
    (notes / "scripts").mkdir()
    (notes / "scripts" / "clean.py").write_text("print('clean')\n")
    return root


@pytest.fixture
def suite(isolated) -> Path:
    items = [{"id": "w0", "input": "word-0", "expected": "word-0", "split": "test"}]
    return write_suite(isolated / "tasks" / "words.yaml", items)


def cli(*args: object):
    return CliRunner().invoke(app, ["eval", *map(str, args)])


# ---------------------------------------------------------------------- loading
def test_a_folder_of_skills_and_one_skill_folder_load_sorted(library, isolated):
    lib = load_library([str(library)])
    assert lib.names == ("csv-cleaner", "tax-forms") and lib.warnings == ()
    one = load_library([str(library / "tax-forms")])
    assert one.names == ("tax-forms",)


def test_a_broken_library_skill_is_one_warning_naming_it_and_skipped(library):
    bad = library / "broken"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: Broken Name\ndescription: x\n---\nbody\n")
    lib = load_library([str(library)])
    assert lib.names == ("csv-cleaner", "tax-forms")
    assert len(lib.warnings) == 1 and str(bad) in lib.warnings[0]


def test_a_symlink_out_of_a_library_skill_skips_it(library, isolated):
    secret = isolated / "secret.txt"
    secret.write_text("TOKEN-123\n")
    (library / "tax-forms" / "leak.txt").symlink_to(secret)
    lib = load_library([str(library)])
    assert lib.names == ("csv-cleaner",)
    assert "outside the skill directory" in lib.warnings[0]


def test_user_means_the_users_own_skill_directories(isolated):
    home = Path(os.environ["HOME"])
    write_skill(home / ".claude" / "skills", "mine", description="Mine. Use for mine.")
    write_skill(home / ".agents" / "skills", "ours", description="Ours. Use for ours.")
    write_skill(isolated / ".claude" / "skills", "project", description="P. Use for p.")
    assert load_library(["user"]).names == ("mine", "ours", "project")
    assert load_library([]).names == ()


def test_a_missing_library_folder_is_one_input_error(isolated):
    with pytest.raises(InputError, match="not a directory of skills"):
        load_library([str(isolated / "nope")])


def test_settings_take_one_entry_or_a_list():
    assert Settings(agent={"library": "user"}).agent.library == ["user"]
    assert Settings(agent={"library": ["a", "b"]}).agent.library == ["a", "b"]


# ---------------------------------------------------------------------- installation
def test_eval_installs_the_library_beside_the_skill_and_leaves_home_alone(
    agents, isolated, library, suite
):
    skill = write_skill(isolated / "skills", "caps")
    home = Path(os.environ["HOME"])
    before = snapshot(home), snapshot(library)
    res = cli(skill, "--tasks", suite, "--harness", "claude-code", "--library", library)
    assert res.exit_code == 0, res.output
    call = agents.calls("claude")[0]
    assert sorted(call["skills"]) == ["caps", "csv-cleaner", "tax-forms"]
    assert call["files"][".claude/skills/csv-cleaner/scripts/clean.py"] == "print('clean')\n"
    assert (snapshot(home), snapshot(library)) == before


def test_no_link_is_made_into_the_workspace(agents, isolated, library, suite, tmp_path):
    settings = Settings(
        harness="codex", agent={"library": [str(library)]}, run_dir=str(tmp_path / "runs")
    )
    h = build_harness(settings)
    h.check()
    from skillopt.suite.loader import load_suite

    task = load_suite(suite).tasks[0]
    traj = h.run(Skill.load(write_skill(isolated / "skills", "caps")), task)
    try:
        assert traj.workspace is not None
        installed = traj.workspace / ".agents" / "skills"
        assert sorted(p.name for p in installed.iterdir()) == ["caps", "csv-cleaner", "tax-forms"]
        assert not any(p.is_symlink() for p in installed.rglob("*"))
    finally:
        h.release(traj, failed=False)


def test_the_library_is_in_the_fingerprint(agents, tmp_path, library):
    def fingerprint(entries: list[str]) -> dict:
        settings = Settings(
            harness="claude-code", agent={"library": entries}, run_dir=str(tmp_path / "runs")
        )
        return build_harness(settings).fingerprint()

    bare, with_lib = fingerprint([]), fingerprint([str(library)])
    assert "library" not in bare  # a run without a library keeps its earlier rollouts
    assert [name for name, _ in with_lib["library"]] == ["csv-cleaner", "tax-forms"]
    (library / "tax-forms" / "SKILL.md").write_text(
        "---\nname: tax-forms\ndescription: Changed. Use when changed.\n---\nbody\n"
    )
    assert fingerprint([str(library)]) != with_lib


def test_a_changed_library_is_a_new_evaluation(agents, isolated, library, suite):
    skill = write_skill(isolated / "skills", "caps")
    args = (skill, "--tasks", suite, "--harness", "claude-code", "--library", library)
    assert cli(*args, "--json", "a.json").exit_code == 0
    assert cli(*args, "--json", "b.json").exit_code == 0
    (library / "tax-forms" / "SKILL.md").write_text(
        "---\nname: tax-forms\ndescription: Changed. Use when changed.\n---\nbody\n"
    )
    assert cli(*args, "--json", "c.json").exit_code == 0
    cached = [
        json.loads(Path(f).read_text())["rollouts"][0]["cached"]
        for f in ("a.json", "b.json", "c.json")
    ]
    assert cached == [False, True, False]


# ---------------------------------------------------------------------- errors, one line each
def test_a_library_skill_named_like_the_skill_under_test_is_refused(
    agents, isolated, library, suite
):
    skill = write_skill(isolated / "skills", "tax-forms")
    res = cli(skill, "--tasks", suite, "--harness", "claude-code", "--library", library)
    assert res.exit_code == 2
    assert "the library holds a skill named 'tax-forms'" in res.output
    assert "Traceback" not in res.output and not agents.calls("claude")


def test_a_missing_library_is_one_line_exit_2(agents, isolated, suite):
    skill = write_skill(isolated / "skills", "caps")
    res = cli(skill, "--tasks", suite, "--harness", "claude-code", "--library", "nowhere")
    assert res.exit_code == 2 and "nowhere: field 'library': not a directory" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_a_skipped_library_skill_is_warned_once(agents, isolated, library, suite):
    (library / "broken").mkdir()
    (library / "broken" / "SKILL.md").write_text("---\nname: broken\n---\nbody\n")
    skill = write_skill(isolated / "skills", "caps")
    res = cli(skill, "--tasks", suite, "--harness", "claude-code", "--library", library)
    assert res.exit_code == 0, res.output
    warned = [line for line in res.output.splitlines() if "library skill" in line]
    assert len(warned) == 1 and "broken" in warned[0] and "skipped" in warned[0]


# ---------------------------------------------------------------------- every command
def test_validate_and_train_take_the_library_too(isolated):
    import routing_rule
    import yaml

    me, library, suite = routing_rule.write_fixture(isolated)
    data = yaml.safe_load(suite.read_text())
    for n, item in enumerate(data["items"]):
        item["split"] = ("train", "val", "test")[n % 3]
    suite.write_text(yaml.safe_dump(data))
    common = ("--harness", "router", "--target", "scripted/routing_rule:router")
    res = CliRunner().invoke(
        app, ["validate", str(me), "--tasks", str(suite), *common, "--library", "library"]
    )
    assert res.exit_code == 0, res.output
    assert "skill loaded in 1/2 tasks" in res.output  # q7 of the test split chose it, q4 did not
    res = CliRunner().invoke(
        app,
        ["train", str(me), "--tasks", str(suite), *common, "--optimizer", "exemplars"]
        + ["--epochs", "1", "--library", "library"],
    )
    assert res.exit_code == 0, res.output
    (run_yaml,) = Path("runs").glob("*/run.yaml")
    # absolute, so that `--resume` from another directory finds it
    assert yaml.safe_load(run_yaml.read_text())["settings"]["agent"]["library"] == [str(library)]


def test_the_skill_under_test_in_the_users_own_skills_is_not_its_own_competitor(isolated):
    from skillopt.harness.router import RouterHarness
    from skillopt.models.scripted import ScriptedModel

    own = write_skill(isolated / ".claude" / "skills", "mine", description="Mine. Use for mine.")
    write_skill(isolated / ".claude" / "skills", "other", description="Other. Use for it.")
    harness = RouterHarness(ScriptedModel(default="none"), load_library(["user"]))
    harness.check([Skill.load(own)])  # the same folder: not refused, left out
    assert harness.library.names == ("other",)
