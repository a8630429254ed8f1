"""The `agents` fixture: stand-in `claude` and `codex` executables on PATH."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

FAKES = Path(__file__).resolve().parent.parent / "fakes"


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
            f"sys.exit(main({name!r}, {str(self.bin)!r}))\n", encoding="utf-8")
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
