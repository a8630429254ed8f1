"""Shared fixtures: every test runs in its own directory with its own home, so no
test reads or writes the real user directory, caches or rollout store."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


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
