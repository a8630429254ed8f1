"""CONTRIBUTING.md's map of the package names every module, and only modules that exist:
a newcomer finds each file there with what it is for."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "skillopt"


def _modules() -> set[str]:
    return {
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        if "__pycache__" not in p.parts
    }


def _mapped() -> set[str]:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    start = text.index("### Every module")
    section = text[start : text.index("\n## ", start)]
    return set(re.findall(r"^- `([\w/]+\.py)`", section, re.M))


def test_the_map_lists_every_module():
    missing = sorted(_modules() - _mapped())
    assert not missing, f"CONTRIBUTING.md's map leaves out: {', '.join(missing)}"


def test_the_map_lists_no_module_that_does_not_exist():
    gone = sorted(_mapped() - _modules())
    assert not gone, f"CONTRIBUTING.md's map names modules that do not exist: {', '.join(gone)}"


def test_no_module_is_over_400_lines():
    long = {
        m: n
        for m in _modules()
        if (n := len((PACKAGE / m).read_text(encoding="utf-8").splitlines())) > 400
    }
    assert not long, f"modules over 400 lines: {long}"


def test_only_the_facade_settings_and_errors_are_loose_at_the_top():
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert loose == ["__init__.py", "__main__.py", "errors.py"], loose
