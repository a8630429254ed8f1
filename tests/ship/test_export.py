"""`skillopt export` and `skillopt adopt`: the paths each agent reads, overwrite
protection with a diff, AGENTS.md sections replaced in place, lint first."""

from __future__ import annotations

import subprocess

import pytest
from helpers import write_skill
from train.world import models, world  # noqa: F401  (fixtures)
from typer.testing import CliRunner

from skillopt import api
from skillopt.cli.main import app
from skillopt.ship.diffs import text_diff
from skillopt.ship.export import begin_marker, destination, end_marker
from skillopt.ship.refusals import Refused

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def skill(isolated):
    d = write_skill(isolated / "skills", "caps", body="# Caps\n\nAnswer in capitals.\n")
    (d / "scripts").mkdir()
    (d / "scripts" / "check.sh").write_text("#!/bin/sh\necho ok\n")
    return d


@pytest.mark.parametrize(
    "target, scope, rel",
    [
        ("claude-code", "project", "proj/.claude/skills/caps"),
        ("codex", "project", "proj/.agents/skills/caps"),
        ("agents", "project", "proj/.agents/skills/caps"),
        ("claude-code", "user", "home/.claude/skills/caps"),
        ("codex", "user", "home/.agents/skills/caps"),
        ("agents", "user", "home/.agents/skills/caps"),
    ],
)
def test_export_layout_is_where_each_agent_reads(skill, isolated, tmp_path, target, scope, rel):
    proj = tmp_path / "proj"
    proj.mkdir()
    res = invoke(
        "export",
        skill,
        "--to",
        target,
        "--scope",
        scope,
        *(["--dest", proj] if scope == "project" else []),
    )
    assert res.exit_code == 0, res.output
    out = tmp_path / rel
    assert (out / "SKILL.md").read_text() == (skill / "SKILL.md").read_text()
    assert (out / "scripts" / "check.sh").read_text() == "#!/bin/sh\necho ok\n"
    assert f"created: {out}" in res.stderr.replace("\n", "")


def test_user_scope_agents_md_is_codex_home(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    assert destination("agents-md", "x", scope="user") == tmp_path / "codex" / "AGENTS.md"
    monkeypatch.delenv("CODEX_HOME")
    assert destination("agents-md", "x", scope="user") == tmp_path / "home" / ".codex" / "AGENTS.md"


def test_project_scope_defaults_to_the_current_directory(skill, isolated):
    res = invoke("export", skill, "--to", "claude-code")
    assert res.exit_code == 0, res.output
    assert (isolated / ".claude" / "skills" / "caps" / "SKILL.md").is_file()


def test_re_export_is_unchanged_and_a_different_skill_needs_force(skill, isolated):
    assert invoke("export", skill, "--to", "agents").exit_code == 0
    again = invoke("export", skill, "--to", "agents")
    assert again.exit_code == 0 and "unchanged" in again.stderr
    (skill / "SKILL.md").write_text(
        (skill / "SKILL.md")
        .read_text()
        .replace("Answer in capitals.", "Answer in CAPITALS, always.")
    )
    refused = invoke("export", skill, "--to", "agents")
    assert refused.exit_code == 1
    assert (
        "-Answer in capitals." in refused.stdout
        and "+Answer in CAPITALS, always." in refused.stdout
    )  # the diff is shown
    assert "+++ b/.agents/skills/caps/SKILL.md" in refused.stdout  # relative to the cwd
    assert "pass --force" in refused.stderr
    dest = isolated / ".agents" / "skills" / "caps"
    assert "Answer in capitals." in (dest / "SKILL.md").read_text()  # untouched
    (dest / "stale.md").write_text("left over from an old version\n")
    forced = invoke("export", skill, "--to", "agents", "--force")
    assert forced.exit_code == 0, forced.output
    assert "CAPITALS" in (dest / "SKILL.md").read_text()
    assert not (dest / "stale.md").exists() and (dest / "scripts" / "check.sh").is_file()
    assert not list(dest.parent.glob(".caps.skillopt-*"))  # no staging left behind


def test_agents_md_section_is_replaced_in_place(skill, isolated):
    agents_md = isolated / "AGENTS.md"
    agents_md.write_text("# Project rules\n\nUse tabs.\n")
    assert invoke("export", skill, "--to", "agents-md").exit_code == 0
    first = agents_md.read_text()
    assert first.startswith("# Project rules\n\nUse tabs.\n\n" + begin_marker("caps"))
    assert "## Skill: caps" in first and "Answer in capitals." in first
    assert first.rstrip().endswith(end_marker("caps"))
    assert "---" not in first.split(begin_marker("caps"))[1]  # no frontmatter
    agents_md.write_text(first + "\n## Later section\n\nKeep me.\n")
    (skill / "SKILL.md").write_text(
        (skill / "SKILL.md").read_text().replace("Answer in capitals.", "Answer in lower case.")
    )
    assert invoke("export", skill, "--to", "agents-md").exit_code == 1  # differs: refused
    res = invoke("export", skill, "--to", "agents-md", "--force")
    assert res.exit_code == 0, res.output
    text = agents_md.read_text()
    assert text.count(begin_marker("caps")) == 1 and text.count(end_marker("caps")) == 1
    assert "Answer in lower case." in text and "Answer in capitals." not in text
    assert text.startswith("# Project rules\n\nUse tabs.\n\n")
    assert text.endswith("\n## Later section\n\nKeep me.\n")
    assert "supporting file(s) are not part of AGENTS.md" in res.stderr


def test_the_exported_skill_has_no_protection_markers(skill, isolated):
    from skillopt.skill.document import Skill
    from skillopt.skill.edits import set_guidance

    guided = set_guidance(Skill.load(skill), "- Keep it short.")
    guided.write(skill)
    assert invoke("export", skill, "--to", "claude-code").exit_code == 0
    shipped = (isolated / ".claude" / "skills" / "caps" / "SKILL.md").read_text()
    assert shipped == guided.for_target().text
    assert "skillopt:protected" not in shipped and "- Keep it short." in shipped
    again = invoke("export", skill, "--to", "claude-code")
    assert again.exit_code == 0 and "unchanged" in again.stderr
    assert invoke("export", skill, "--to", "agents-md").exit_code == 0
    section = (isolated / "AGENTS.md").read_text()
    assert "skillopt:protected" not in section and "- Keep it short." in section
    assert "skillopt:protected" in (skill / "SKILL.md").read_text()  # the source keeps them


def test_agents_md_with_a_broken_section_is_an_input_error(skill, isolated):
    (isolated / "AGENTS.md").write_text(begin_marker("caps") + "\nhalf a section\n")
    res = invoke("export", skill, "--to", "agents-md")
    assert res.exit_code == 2 and "has no <!-- skillopt:end caps --> line" in res.stderr


def test_lint_errors_stop_the_export(isolated):
    bad = write_skill(isolated / "skills", "Bad_Name", body="x\n")
    res = invoke("export", bad, "--to", "claude-code")
    assert res.exit_code == 1 and "not exported: " in res.stderr
    assert "name" in res.stdout
    assert not (isolated / ".claude").exists()


def test_portable_targets_reject_claude_only_keys(isolated):
    claude_only = write_skill(isolated / "skills", "hinted", extra="argument-hint: '[file]'\n")
    assert invoke("export", claude_only, "--to", "claude-code").exit_code == 0
    res = invoke("export", claude_only, "--to", "agents")
    assert res.exit_code == 1 and "(portable rules)" in res.stderr
    assert "argument-hint" in res.stdout
    assert not (isolated / ".agents").exists()


def test_unknown_target_and_source(skill):
    res = invoke("export", skill, "--to", "cursor")
    assert res.exit_code == 2 and "unknown export target 'cursor'" in res.stderr
    res = invoke("export", "skills/nope", "--to", "agents")
    assert res.exit_code == 2 and "neither a skill" in res.stderr


# ---------------------------------------------------------------------- from a run / adopt
@pytest.fixture
def trained(world, models):
    from train.world import HELPFUL, ScriptedOptimizer, edits_reply, flags

    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    result = api.train(world["skill"], world["suite"], **flags(epochs=1))
    return result, world["skill"], HELPFUL


def test_export_a_runs_best_skill(trained, isolated):
    result, _, helpful = trained
    res = invoke("export", result.run_id, "--to", "claude-code")
    assert res.exit_code == 0, res.output
    exported = (isolated / ".claude" / "skills" / "words" / "SKILL.md").read_text()
    assert helpful in exported
    assert exported == (result.run_dir / "best" / "SKILL.md").read_text()


@pytest.mark.parametrize("repo", [True, False])
def test_adopt_writes_the_best_skill_back_with_a_diff(trained, isolated, repo):
    result, skill_dir, helpful = trained
    if repo:
        subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    before = (skill_dir / "SKILL.md").read_text()
    res = invoke("adopt", result.run_id)
    assert res.exit_code == 0, res.output
    assert f"+- {helpful}" in res.stdout
    # `git diff` is advice only where git can show one
    assert ("review with `git diff`" in res.stderr) is repo, res.stderr
    assert ("not in a git repository" in res.stderr) is not repo, res.stderr
    after = (skill_dir / "SKILL.md").read_text()
    assert helpful in after and after != before
    again = invoke("adopt", result.run_id)
    assert again.exit_code == 0 and "unchanged" in again.stderr


def test_adopt_refuses_to_overwrite_edits_made_since_the_run(trained):
    result, skill_dir, helpful = trained
    path = skill_dir / "SKILL.md"
    path.write_text(path.read_text() + "\nA line I added by hand.\n")
    res = invoke("adopt", result.run_id)
    assert res.exit_code == 1 and "changed since run" in res.stderr
    assert "+A line I added by hand." in res.stdout
    assert helpful not in path.read_text()
    assert invoke("adopt", result.run_id, "--force").exit_code == 0
    assert helpful in path.read_text()


def test_refused_carries_the_diff():
    err = Refused("no", "--- a\n+++ b\n")
    assert err.diff.startswith("--- a") and err.exit_code == 1


def test_diff_headers_name_the_file_as_a_user_would_type_it(isolated, tmp_path):
    inside = text_diff("a\n", "b\n", str(isolated / "AGENTS.md"))
    assert inside.startswith("--- a/AGENTS.md\n+++ b/AGENTS.md\n")
    outside = text_diff("a\n", "b\n", str(tmp_path / "home" / "AGENTS.md"))
    assert outside.startswith(f"--- {tmp_path}/home/AGENTS.md\n+++ {tmp_path}/home/AGENTS.md")
    assert text_diff("a\n", "b\n", "caps/SKILL.md").startswith("--- a/caps/SKILL.md\n")
    assert text_diff("same\n", "same\n", "x") == ""


def test_export_and_adopt_find_a_run_under_run_dir(world, models, isolated):
    """A run trained with `--run-dir elsewhere` is found by its id with the same option;
    without it the id is looked up under runs/ and not found."""
    from train.world import HELPFUL, ScriptedOptimizer, edits_reply, flags

    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    elsewhere = isolated / "elsewhere"
    result = api.train(world["skill"], world["suite"], **flags(epochs=1, run_dir=str(elsewhere)))
    assert result.run_dir.parent == elsewhere
    missing = invoke("export", result.run_id, "--to", "claude-code")
    assert missing.exit_code == 2 and "neither a skill" in missing.stderr
    res = invoke("export", result.run_id, "--to", "claude-code", "--run-dir", elsewhere)
    assert res.exit_code == 0, res.output
    exported = (isolated / ".claude" / "skills" / "words" / "SKILL.md").read_text()
    assert exported == (result.run_dir / "best" / "SKILL.md").read_text()

    assert invoke("adopt", result.run_id).exit_code == 2
    adopted = invoke("adopt", result.run_id, "--run-dir", elsewhere)
    assert adopted.exit_code == 0, adopted.output
    assert HELPFUL in (world["skill"] / "SKILL.md").read_text()
