"""Shared fixtures: every test runs in its own directory with its own home, so no
test reads or writes the real user directory, caches or rollout store; `agents`
puts the stand-in `claude` and `codex` executables first on PATH."""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest

# tests/ is where the shared test modules are found, each under one name:
# `helpers`, `fakes`, `train.world` (never plain `world`), `ray_cluster`, ...
sys.path.insert(0, str(Path(__file__).parent))

# one Ray cluster for the whole session: a session fixture imported into several
# test modules would be one fixture per module, each starting a cluster of its own
from ray_cluster import ray_cluster  # noqa: E402, F401


def pytest_collection_modifyitems(items):
    """A test on the Ray cluster is a Ray test (`-m ray`, `-m "not ray"`)."""
    for item in items:
        if "ray_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ray)


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory):
    """One cache for the session (never the real one): the embedded model's
    weights are assembled into it once, not once per test."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch, session_cache):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(session_cache))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    for var in list(os.environ):
        if var.startswith("SKILLOPT_"):
            monkeypatch.delenv(var)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


@pytest.fixture(autouse=True)
def no_leaked_workspaces(tmp_path, monkeypatch):
    """Temporary files of this test go to its own directory, and every agent workspace
    made there is kept or removed by the end: none is left behind."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    yield
    leaked = sorted(p.name for p in tmp.glob("skillopt-*"))
    assert not leaked, f"temporary directories left behind: {leaked}"


FAKES = Path(__file__).resolve().parent / "fakes"


class StandIns:
    """Installs stand-in CLIs into a bin directory that is first on PATH."""

    def __init__(self, bin_dir: Path):
        self.bin = bin_dir

    def install(self, name: str) -> Path:
        path = self.bin / name
        path.write_text(
            f"#!{sys.executable}\n"
            "import sys\n"
            f"sys.path.insert(0, {str(FAKES)!r})\n"
            "from agent_cli import main\n"
            f"sys.exit(main({name!r}, {str(self.bin)!r}))\n",
            encoding="utf-8",
        )
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return path

    def configure(self, name: str, **config) -> None:
        (self.bin / f"{name}.json").write_text(json.dumps(config), encoding="utf-8")

    def calls(self, name: str) -> list[dict]:
        path = self.bin / f"{name}.calls.jsonl"
        if not path.is_file():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def hang_pids(self) -> list[int]:
        path = self.bin / "hang.pids"
        if not path.is_file():
            return []
        return [int(p) for line in path.read_text().split("\n") for p in line.split()]


@pytest.fixture
def agents(tmp_path, monkeypatch) -> StandIns:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    standins = StandIns(bin_dir)
    standins.install("claude")
    standins.install("codex")
    return standins


@pytest.fixture
def no_keys(monkeypatch):
    """No provider key and no provider base URL in the environment."""
    from skillopt.models import keys

    for var in list(os.environ):
        if var.endswith(("_API_KEY", "_AUTH_TOKEN", "_API_BASE", "_BASE_URL", "_TOKEN")):
            monkeypatch.delenv(var)
    for provider in keys.PROVIDERS:
        for var in provider.keys:
            monkeypatch.delenv(var, raising=False)
