"""The test suite's own arrangement: each shared test module is loaded under one
name only (a module loaded under two names is two copies of its state: a fixture
registered in one, a scripted reply queued in the other), and the list of tests
measured slow (tests/conftest.py) names tests that exist."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from types import ModuleType

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def python_files() -> list[Path]:
    return sorted([*TESTS.rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")])


def loaded(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The absolute module names an import statement may load."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:  # relative: inside a package of tests, never a top-level `world`
        return []
    return [node.module or "", *(f"{node.module}.{a.name}" for a in node.names)]


def test_the_training_world_is_imported_as_train_world_everywhere():
    wrong = []
    for path in python_files():
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                name == "world" or name.startswith("world.") for name in loaded(node)
            ):
                where = path.relative_to(ROOT)
                wrong.append(f"{where}:{node.lineno}: {ast.get_source_segment(text, node)}")
    assert not wrong, "import tests/train/world.py as `train.world` only:\n" + "\n".join(wrong)


def test_no_test_module_is_loaded_under_two_names():
    import train.world

    assert "world" not in sys.modules, "tests/train/world.py is loaded as `world` too"
    names: dict[str, list[str]] = {}
    for name, module in list(sys.modules.items()):
        file = vars(module).get("__file__") if isinstance(module, ModuleType) else None
        if isinstance(file, str) and Path(file).resolve().is_relative_to(TESTS):
            names.setdefault(str(Path(file).resolve()), []).append(name)
    twice = {file: found for file, found in names.items() if len(found) > 1}
    assert not twice, twice
    assert names[str(Path(train.world.__file__).resolve())] == ["train.world"]


def measured_slow() -> tuple[str, ...]:
    tree = ast.parse((TESTS / "conftest.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "MEASURED_SLOW" for t in node.targets
        ):
            return tuple(ast.literal_eval(node.value))
    raise AssertionError("tests/conftest.py defines no MEASURED_SLOW")


def test_every_test_measured_slow_exists():
    """A renamed or moved test would silently drop out of the list and back into the
    quick loop; a name here that matches no test fails instead."""
    listed = measured_slow()
    assert len(listed) == len(set(listed)), "listed twice"
    missing = []
    for node_id in listed:
        file, _, name = node_id.partition("::")
        path = ROOT / file
        tests = (
            {
                n.name
                for n in ast.parse(path.read_text(encoding="utf-8")).body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
            if path.is_file()
            else set()
        )
        if name not in tests:
            missing.append(node_id)
    assert not missing, missing
