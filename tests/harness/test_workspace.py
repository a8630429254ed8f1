"""skillopt.harness.workspace: the isolated directory an agent runs one task in —
its layout, the installed skill and its supporting files, the task's files and
nothing else, the no-skill baseline, keep() and remove(), install_name()."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path

import pytest
from helpers import write_skill

from skillopt.harness.workspace import Workspace, install_name
from skillopt.skill.document import Skill
from skillopt.suite.task import Task

PROJECT = Path(__file__).resolve().parents[2]


def make_task(task_id: str = "t-1", files: dict | None = None) -> Task:
    return Task(
        id=task_id,
        input="in",
        expected="SECRET-EXPECTED-ANSWER",
        prompt="Do it.",
        split="test",
        scorer=None,
        files=files or {},
    )


def tree(root: Path) -> set[str]:
    """Every file (not directory) under `root`, as relative posix paths."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if not p.is_dir()}


@pytest.fixture
def workspaces():
    """Creates workspaces and removes whatever is left of them after the test."""
    made: list[Workspace] = []

    def create(skill: Skill, task: Task, skills_dir: str = ".claude/skills") -> Workspace:
        ws = Workspace.create(skill, task, skills_dir)
        made.append(ws)
        return ws

    yield create
    for ws in made:
        ws.remove()


@pytest.fixture
def skill_dir(isolated) -> Path:
    d = write_skill(isolated / "skills", "demo", body="# Demo\n\nUse `scripts/run.sh`.\n")
    (d / "scripts").mkdir()
    run = d / "scripts" / "run.sh"
    run.write_text("#!/bin/sh\necho run\n", encoding="utf-8")
    run.chmod(0o755)
    (d / "reference").mkdir()
    (d / "reference" / "notes.md").write_text("Notes — ünïcödé\n", encoding="utf-8")
    # never part of a skill: skipped by Skill.load, so never copied
    (d / "__pycache__").mkdir()
    (d / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (d / ".git").mkdir()
    (d / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return d


TASK_FILES = {
    "README.txt": "read me\n",
    "data/input.csv": "a,b\n1,2\n",
    "src/pkg/deep/mod.py": "print('hi')\n",
}


# -- layout ------------------------------------------------------------------------------
def test_layout_root_work_io(workspaces, skill_dir):
    ws = workspaces(Skill.load(skill_dir), make_task())
    assert ws.root.is_dir()
    assert ws.path == ws.root / "work" and ws.path.is_dir()
    assert ws.io == ws.root / "io" and ws.io.is_dir()
    assert sorted(p.name for p in ws.root.iterdir()) == ["io", "work"]
    assert list(ws.io.iterdir()) == []  # ours, filled by the run, empty at first


def test_skill_installed_with_exact_text_and_supporting_files(workspaces, skill_dir):
    skill = Skill.load(skill_dir)
    ws = workspaces(skill, make_task())
    assert ws.skill_dir == ws.path / ".claude" / "skills" / "demo"
    skill_md = ws.skill_dir / "SKILL.md"
    assert skill_md.read_bytes() == (skill_dir / "SKILL.md").read_bytes()
    assert skill_md.read_text(encoding="utf-8") == skill.text
    assert (ws.skill_dir / "scripts" / "run.sh").read_text() == "#!/bin/sh\necho run\n"
    assert (ws.skill_dir / "reference" / "notes.md").read_text(
        encoding="utf-8"
    ) == "Notes — ünïcödé\n"
    mode = (ws.skill_dir / "scripts" / "run.sh").stat().st_mode
    assert mode & stat.S_IXUSR, "a skill's script must stay executable"
    assert tree(ws.skill_dir) == {"SKILL.md", "scripts/run.sh", "reference/notes.md"}


def test_the_source_skill_is_untouched(workspaces, skill_dir):
    before = {p: p.read_bytes() for p in skill_dir.rglob("*") if p.is_file()}
    ws = workspaces(Skill.load(skill_dir), make_task(files=TASK_FILES))
    (ws.skill_dir / "SKILL.md").write_text("agent scribbled here")
    assert {p: p.read_bytes() for p in skill_dir.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("skills_dir", [".claude/skills", ".agents/skills"])
def test_work_holds_the_skill_and_task_files_and_nothing_else(workspaces, skill_dir, skills_dir):
    ws = workspaces(Skill.load(skill_dir), make_task(files=TASK_FILES), skills_dir)
    assert ws.skill_dir == ws.path / skills_dir / "demo"
    assert tree(ws.path) == {
        f"{skills_dir}/demo/SKILL.md",
        f"{skills_dir}/demo/scripts/run.sh",
        f"{skills_dir}/demo/reference/notes.md",
        "README.txt",
        "data/input.csv",
        "src/pkg/deep/mod.py",
    }
    for rel, content in TASK_FILES.items():
        assert (ws.path / rel).read_text(encoding="utf-8") == content
    # the expected answer is nowhere in the agent's workspace
    assert not any(
        "SECRET-EXPECTED-ANSWER" in (ws.path / f).read_text(errors="replace") for f in tree(ws.path)
    )


def test_task_files_keep_their_exact_text(workspaces):
    files = {"notes/ünï.md": "naïve — “quotes”\n", "crlf.txt": "a\r\nb\r\n", "empty.txt": ""}
    ws = workspaces(Skill.empty(), make_task(files=files))
    for rel, content in files.items():
        assert (ws.path / rel).read_bytes() == content.encode("utf-8")
    assert tree(ws.path) == set(files)


def test_in_memory_skill_installs_only_skill_md(workspaces):
    skill = Skill.parse("---\nname: inline\ndescription: d\n---\n# Inline\n\nbody\n")
    ws = workspaces(skill, make_task())
    assert ws.skill_dir == ws.path / ".claude" / "skills" / "inline"
    assert tree(ws.path) == {".claude/skills/inline/SKILL.md"}
    assert (ws.skill_dir / "SKILL.md").read_text(encoding="utf-8") == skill.text


def test_edited_candidate_keeps_the_supporting_files(workspaces, skill_dir):
    candidate = Skill.load(skill_dir).with_body("# Demo v2\n\nBetter.\n")
    ws = workspaces(candidate, make_task())
    assert (
        (ws.skill_dir / "SKILL.md").read_text(encoding="utf-8").endswith("# Demo v2\n\nBetter.\n")
    )
    assert tree(ws.skill_dir) == {"SKILL.md", "scripts/run.sh", "reference/notes.md"}


def test_install_dir_is_the_frontmatter_name_not_the_source_dir(workspaces, isolated):
    d = write_skill(isolated / "skills", "folder-name")
    text = (d / "SKILL.md").read_text().replace("name: folder-name", "name: real-name")
    (d / "SKILL.md").write_text(text)
    ws = workspaces(Skill.load(d), make_task())
    assert ws.skill_dir == ws.path / ".claude" / "skills" / "real-name"
    assert tree(ws.path) == {".claude/skills/real-name/SKILL.md"}


def test_odd_skill_name_stays_inside_the_skills_dir(workspaces):
    skill = Skill.parse('---\nname: "../../escape me"\n---\nbody\n')
    ws = workspaces(skill, make_task())
    assert ws.skill_dir == ws.path / ".claude" / "skills" / "escape-me"
    assert tree(ws.root) == {"work/.claude/skills/escape-me/SKILL.md"}


# -- the no-skill baseline ---------------------------------------------------------------
def test_no_skill_baseline_installs_no_skill(workspaces):
    ws = workspaces(Skill.empty(), make_task(files=TASK_FILES))
    assert ws.skill_dir is None
    assert not (ws.path / ".claude").exists()
    assert not (ws.path / ".agents").exists()
    assert tree(ws.path) == set(TASK_FILES)


@pytest.mark.parametrize("skills_dir", [".claude/skills", ".agents/skills"])
def test_no_skill_and_no_files_leaves_work_empty(workspaces, skills_dir):
    ws = workspaces(Skill.empty(), make_task(), skills_dir)
    assert ws.skill_dir is None
    assert list(ws.path.iterdir()) == []


def test_whitespace_only_skill_counts_as_no_skill(workspaces):
    ws = workspaces(Skill.parse("\n  \n"), make_task())
    assert ws.skill_dir is None
    assert list(ws.path.iterdir()) == []


# -- where the workspace lives -----------------------------------------------------------
def test_io_is_not_inside_work(workspaces, skill_dir):
    ws = workspaces(Skill.load(skill_dir), make_task(files=TASK_FILES))
    io, work = ws.io.resolve(), ws.path.resolve()
    assert not io.is_relative_to(work)
    assert not work.is_relative_to(io)
    assert io.parent == work.parent == ws.root.resolve()


def test_root_is_outside_the_cwd_and_the_project(workspaces, skill_dir, isolated):
    ws = workspaces(Skill.load(skill_dir), make_task())
    root = ws.root.resolve()
    assert not root.is_relative_to(Path.cwd().resolve())
    assert not root.is_relative_to(isolated.resolve())
    assert not root.is_relative_to(PROJECT)
    assert not root.is_relative_to(skill_dir.resolve())
    assert root.parent == Path(tempfile.gettempdir()).resolve()


def test_root_is_named_after_the_task_safely(workspaces):
    ws = workspaces(Skill.empty(), make_task("a/b c:d"))
    assert ws.root.name.startswith("skillopt-a-b-c-d-")
    assert "/" not in ws.root.name[len("skillopt-") :]


def test_long_task_id_is_clipped_in_the_root_name(workspaces):
    ws = workspaces(Skill.empty(), make_task("x" * 200))
    assert ws.root.name.startswith("skillopt-" + "x" * 40 + "-")
    assert "x" * 41 not in ws.root.name


def test_task_id_that_is_all_odd_characters_still_works(workspaces):
    ws = workspaces(Skill.empty(), make_task("../.."))
    assert ws.root.parent == Path(tempfile.gettempdir())
    assert ws.root.name.startswith("skillopt-")
    assert ws.path.is_dir()


def test_each_workspace_is_fresh(workspaces, skill_dir):
    skill, task = Skill.load(skill_dir), make_task(files=TASK_FILES)
    a, b = workspaces(skill, task), workspaces(skill, task)
    assert a.root != b.root
    (a.path / "scratch.txt").write_text("from run a")
    assert not (b.path / "scratch.txt").exists()
    assert tree(b.path) == tree(a.path) - {"scratch.txt"}


# -- keep / remove -----------------------------------------------------------------------
def test_keep_moves_the_whole_workspace(workspaces, skill_dir, tmp_path):
    ws = workspaces(Skill.load(skill_dir), make_task(files=TASK_FILES))
    (ws.io / "stdout.txt").write_text("agent said hi")
    expected = tree(ws.root)
    into = tmp_path / "kept" / "workspaces"  # does not exist yet
    dest = ws.keep(into, "t-1-abc")
    assert dest == into / "t-1-abc"
    assert not ws.root.exists(), "the temporary original must be gone"
    assert tree(dest) == expected
    assert (dest / "io" / "stdout.txt").read_text() == "agent said hi"
    assert (dest / "work" / ".claude" / "skills" / "demo" / "SKILL.md").is_file()


def test_keep_adds_suffixes_on_clashes(workspaces, tmp_path):
    into = tmp_path / "kept"
    dests = []
    for i in range(3):
        ws = workspaces(Skill.empty(), make_task(files={"n.txt": str(i)}))
        dests.append(ws.keep(into, "same"))
        assert not ws.root.exists()
    assert dests == [into / "same", into / "same-2", into / "same-3"]
    assert [(d / "work" / "n.txt").read_text() for d in dests] == ["0", "1", "2"]
    assert sorted(p.name for p in into.iterdir()) == ["same", "same-2", "same-3"]


def test_keep_skips_a_taken_suffix(workspaces, tmp_path):
    into = tmp_path / "kept"
    (into / "same").mkdir(parents=True)
    (into / "same-2").mkdir()
    (into / "same-2" / "old.txt").write_text("older run")
    ws = workspaces(Skill.empty(), make_task())
    assert ws.keep(into, "same") == into / "same-3"
    assert (into / "same-2" / "old.txt").read_text() == "older run"  # not overwritten
    assert list((into / "same").iterdir()) == []


def test_remove_deletes_everything(workspaces, skill_dir):
    ws = workspaces(Skill.load(skill_dir), make_task(files=TASK_FILES))
    (ws.io / "stdout.txt").write_text("x")
    ws.remove()
    assert not ws.root.exists()
    ws.remove()  # a second remove is harmless
    assert not ws.root.exists()


def test_remove_deletes_read_only_task_output(workspaces):
    ws = workspaces(Skill.empty(), make_task(files={"f.txt": "x"}))
    (ws.path / "f.txt").chmod(0o444)
    ws.remove()
    assert not ws.root.exists()


# -- install_name ------------------------------------------------------------------------
def named(name: str) -> Skill:
    return Skill.parse(f"---\nname: {json.dumps(name)}\n---\nbody\n")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("demo", "demo"),
        ("v1.2_beta-x", "v1.2_beta-x"),
        ("My Skill", "My-Skill"),
        ("a/b\\c", "a-b-c"),
        ("../../evil", "evil"),
        ("  spaced   out  ", "spaced-out"),
        ("-dash-", "dash"),
        (".hidden", "hidden"),
        ("café crème", "caf-cr-me"),
        ("tab\tand\nnewline", "tab-and-newline"),
        ("...", "skill"),
        (".", "skill"),
        ("日本語", "skill"),
        ("!!!", "skill"),
    ],
)
def test_install_name(name, expected):
    got = install_name(named(name))
    assert got == expected
    assert os.sep not in got and got not in (".", "..")


def test_install_name_falls_back_to_the_directory_name(isolated):
    d = isolated / "skills" / "from dir"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text("# No frontmatter\n")
    assert install_name(Skill.load(d)) == "from-dir"


def test_install_name_ignores_a_non_string_name():
    assert install_name(Skill.parse("---\nname: 42\n---\nbody\n")) == "no-skill"


def test_the_installed_skill_has_no_protection_markers(workspaces, isolated):
    from skillopt.skill.edits import set_guidance

    skill = set_guidance(Skill.load(write_skill(isolated / "skills", "demo")), "- a lesson")
    ws = workspaces(skill, make_task())
    assert ws.skill_dir is not None
    installed = (ws.skill_dir / "SKILL.md").read_text(encoding="utf-8")
    assert installed == skill.for_target().text
    assert "skillopt:protected" not in installed and "- a lesson" in installed
