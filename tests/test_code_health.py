"""The code base stays formatted, lint-clean and type-checked: `mypy skillopt`
checks the whole package, strict, with pydantic's plugin (as configured in
pyproject.toml), and finds nothing."""

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


@pytest.mark.slow  # about a minute of mypy over the whole package
def test_the_whole_package_type_checks_strictly():
    mypy = tomllib_load(ROOT / "pyproject.toml")["tool"]["mypy"]
    # the configuration is the whole package, strict, with pydantic's plugin
    assert mypy["files"] == ["skillopt"] and mypy["strict"] is True, mypy
    assert "pydantic.mypy" in mypy["plugins"], mypy
    res = run("mypy")  # what pyproject names: `mypy skillopt`
    assert res.returncode == 0, res.stdout + res.stderr
    # every module of the package was checked (none excluded or silently dropped)
    modules = sorted((ROOT / "skillopt").rglob("*.py"))
    assert f"Success: no issues found in {len(modules)} source files" in res.stdout, res.stdout


def tomllib_load(path: Path) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - the `tomli` dependency on 3.10
        import tomli as tomllib
    with path.open("rb") as f:
        return tomllib.load(f)
