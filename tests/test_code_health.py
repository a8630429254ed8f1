"""The code base stays formatted, lint-clean and type-checked (strict on the public
API and the contracts, as configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_ruff_format_leaves_every_file_as_it_is():
    res = run("ruff", "format", "--check", "skillopt", "tests", "benchmarks")
    assert res.returncode == 0, res.stdout + res.stderr


def test_ruff_finds_nothing():
    res = run("ruff", "check", "skillopt", "tests", "benchmarks")
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.slow
def test_the_public_api_and_the_contracts_type_check_strictly():
    files = tomllib_load(ROOT / "pyproject.toml")["tool"]["mypy"]["files"]
    assert all((ROOT / f).is_file() for f in files), files
    res = run("mypy")
    assert res.returncode == 0, res.stdout + res.stderr
    # every configured module was checked (none silently dropped from the list)
    assert f"Success: no issues found in {len(files)} source files" in res.stdout


def tomllib_load(path: Path) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - the `tomli` dependency on 3.10
        import tomli as tomllib
    with path.open("rb") as f:
        return tomllib.load(f)
