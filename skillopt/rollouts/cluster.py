"""What each node of the Ray cluster has for running rollouts (`skillopt models
--executor ray`): Python, skillopt, Ray, the agent CLIs and the embedded model.

Invariants:
- `node_report` is the function shipped to the nodes: module-level, so a worker
  imports it by name, and it returns plain data (str, bool, lists, dicts). It only
  looks: no weights are loaded, no file is written, and an agent CLI gets
  `_VERSION_S` seconds to print its version.
- A node where the check cannot run at all (skillopt not importable there, the
  worker lost) is reported with that reason, not left out; only an unreachable
  cluster raises.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from skillopt._util.version import __version__
from skillopt.config import Settings

# seconds an agent CLI's `--version` may take
_VERSION_S = 10.0
# the skillopt package this node imports (this module is one of its files)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class Check:
    """One line of a node's report: what was checked, whether it is there, and what
    was found (a version and a path, or why not)."""

    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class NodeReport:
    """A node of the cluster (its address, and Ray's node id when the check ran) and
    its checks. `python` is the node's (major, minor, micro), None when the check
    could not run there."""

    node: str
    node_id: str | None
    python: tuple[int, int, int] | None
    checks: tuple[Check, ...]

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)


def node_report(agents: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """What this machine has for running rollouts, as plain data: {"python": [3, 12,
    1], "node_id": …, "checks": [{"name", "ok", "detail"}, …]}. `agents` are
    (harness, binary) pairs, each looked up on PATH and asked its `--version`."""
    checks = [
        _check("python", True, f"{platform.python_version()} at {sys.executable}"),
        _check(
            "skillopt",
            True,
            f"{__version__} at {_PACKAGE_DIR}",
        ),
        _ray_check(),
    ]
    checks += [_agent_check(harness, binary) for harness, binary in agents]
    checks += _embedded_checks()
    return {
        "python": list(sys.version_info[:3]),
        "node_id": _node_id(),
        "checks": checks,
    }


def _check(name: str, ok: bool, detail: str) -> dict[str, Any]:
    return {"name": name, "ok": ok, "detail": detail}


def _node_id() -> str | None:
    try:
        import ray

        if ray.is_initialized():
            return str(ray.get_runtime_context().get_node_id())
    except Exception:  # outside Ray, or Ray's context changed: the address names it
        return None
    return None


def _ray_check() -> dict[str, Any]:
    try:
        import ray
    except ImportError:
        return _check("ray", False, "not importable")
    return _check("ray", True, str(ray.__version__))


def _agent_check(harness: str, binary: str) -> dict[str, Any]:
    name = f"{binary} (--harness {harness})"
    found = shutil.which(binary)
    if found is None:
        return _check(name, False, f"`{binary}` not found on PATH")
    try:
        done = subprocess.run(
            [found, "--version"],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=_VERSION_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return _check(name, False, f"{found}: `--version` did not finish in {_VERSION_S:g}s")
    except OSError as exc:
        return _check(name, False, f"{found}: {exc.strerror or exc}")
    said = next(
        (line.strip() for line in (done.stdout + "\n" + done.stderr).splitlines() if line.strip()),
        "",
    )[:120]
    if done.returncode != 0:
        return _check(name, False, f"{found}: `--version` exited {done.returncode}: {said}")
    return _check(name, True, f"{said} at {found}" if said else found)


def _embedded_checks() -> list[dict[str, Any]]:
    """llama_cpp and the weights package, each importable or not (the weights are
    neither assembled nor loaded)."""
    from skillopt.models import local, local_weights

    st = local.status()
    llama = (
        _check("llama_cpp", True, str(st["llama_cpp"]))
        if st["llama_cpp"]
        else _check("llama_cpp", False, f"not importable: {local_weights.INSTALL}")
    )
    if st["weights_package"]:
        cached = "cached" if st["cached"] else "assembled on first use"
        weights = _check(
            local_weights.PACKAGE, True, f"importable; weights {cached} at {st['cache']}"
        )
    else:
        weights = _check(local_weights.PACKAGE, False, f"not importable: {local_weights.INSTALL}")
    return [llama, weights]


def cluster_report(settings: Settings) -> list[NodeReport]:
    """`node_report` run on every live node of the cluster `settings.ray` names, in
    the cluster's node order. Raises `InputError` when it cannot be reached."""
    from skillopt.rollouts.ray_executor import on_each_node

    agents = (
        ("claude-code", settings.claude_code.binary),
        ("codex", settings.codex.binary),
    )
    return [
        _node(address, found) for address, found in on_each_node(settings.ray, node_report, agents)
    ]


def _node(address: str, found: Any) -> NodeReport:
    if isinstance(found, BaseException):
        return NodeReport(
            address,
            None,
            None,
            (Check("skillopt", False, f"the check could not run there: {_reason(found)}"),),
        )
    checks = tuple(Check(c["name"], bool(c["ok"]), str(c["detail"])) for c in found["checks"])
    major, minor, micro = found["python"]
    return NodeReport(address, found.get("node_id"), (major, minor, micro), checks)


def _reason(exc: BaseException) -> str:
    """The root cause of a failed remote call, in one line: a Ray task error ends
    with the worker's own exception line ("ModuleNotFoundError: No module named …")."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if not last:
        return type(exc).__name__
    head = last.split(":", 1)[0]
    return last if head.isidentifier() and head != last else f"{type(exc).__name__}: {last}"


__all__ = ["Check", "NodeReport", "cluster_report", "node_report"]
