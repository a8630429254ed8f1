"""Rollouts on a Ray cluster (`executor: ray`): each rollout a Ray task, its result
streamed back to the driver as it finishes.

Invariants:
- The driver alone writes the store and git: a worker runs the harness and the
  scorer (`rollouts.job.run_one`, the same function the local executor runs) and
  returns the `Rollout`; the engine stores it. Nothing on a worker needs the
  suite file, the store or the repository: the skill's text and supporting files,
  the task (its input and files) and the harness travel with the task.
- A worker that dies mid-rollout (killed, out of memory, its node gone) is Ray's
  to retry (`ray.max_retries`); when the retries are spent the rollout is
  *unscored* (`error_kind` "executor"), never a score of 0. An exception raised by
  the harness or the scorer on a worker is raised in the driver, as it would be
  locally.
- Cancelling (Ctrl-C, a settled race is not a cancel) stops the tasks this
  executor started: asked nicely first (KeyboardInterrupt on the worker, so an
  agent's process group is killed as locally), then by force.
- `ray` is imported only here, and only when a Ray executor is made.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from skillopt.config import RaySettings
from skillopt.errors import InputError
from skillopt.harness.base import Harness
from skillopt.models.base import Model
from skillopt.rollouts.ray_settings import check_address, check_runtime_env
from skillopt.rollouts.ray_worker import ShippedSkill, worker_rollout
from skillopt.rollouts.record import Rollout
from skillopt.skill.document import Skill
from skillopt.suite.task import Task

log = logging.getLogger("skillopt")

# seconds the collector waits on the cluster before looking at its queue again
_WAIT_S = 0.05
# seconds a nicely cancelled task is given before it is killed
_GRACE_S = 5.0
# seconds the cluster's address is given to accept a connection before ray.init
_PROBE_S = 5.0

Done = Callable[[Rollout | None, BaseException | None], None]


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InputError(
            'executor: ray needs Ray: pip install -e ".[ray]" (on the workers too)',
            field="executor",
        ) from None
    return ray


_CLIENT_ATTEMPTS = 4  # sessions asked of Ray Client's server before giving up
# the cluster and runtime_env this process connected Ray with, once it has
_connected: tuple[str, str] | None = None


def connect(settings: RaySettings) -> Any:
    """Ray, connected to the cluster `settings.address` names (once per process:
    Ray connects a process to one cluster, with one runtime_env, so a later call
    that names another is refused rather than run on the first). An address where
    nothing answers is refused at once (`InputError` naming ray.address): Ray itself
    would keep trying for minutes. A process whose own code connected Ray keeps that
    connection."""
    global _connected
    # the settings' own shape first: a bad one is named as such, connected or not
    check_address(settings.address)
    check_runtime_env(settings.runtime_env)
    wanted = (settings.address, json.dumps(settings.runtime_env, sort_keys=True, default=str))
    if _connected is not None and _connected != wanted and _ray().is_initialized():
        field = "ray.address" if _connected[0] != wanted[0] else "ray.runtime_env"
        raise InputError(
            f"this process already runs rollouts on the Ray cluster {_connected[0]!r} with "
            f"runtime_env {_connected[1]}; Ray connects a process to one cluster with one "
            "runtime_env: use a new process for another",
            field=field,
        )
    loaded = sys.modules.get("ray")
    if settings.address == "local" and not os.environ.get("RAY_ADDRESS"):
        if loaded is None or not loaded.is_initialized():
            _private_token(refresh=loaded is not None)
    ray = _ray()
    if not ray.is_initialized():
        address = None if settings.address == "local" else settings.address
        _probe(settings.address)
        _errors_to_log()
        for attempt in range(_CLIENT_ATTEMPTS):
            try:
                ray.init(
                    address=address,
                    runtime_env=settings.runtime_env or None,
                    ignore_reinit_error=True,
                    log_to_driver=False,
                    logging_level=logging.WARNING,
                    configure_logging=False,
                )
                break
            except ConnectionError as exc:
                # Ray Client's server answered but failed to start this client's
                # session (it trips over the process of a session that just ended):
                # the next attempt usually succeeds
                again = "Initialization failure from server" in str(exc)
                if not again or attempt == _CLIENT_ATTEMPTS - 1:
                    raise _unreachable(settings.address, str(exc)) from None
                log.info("Ray Client could not start a session, trying again: %s", exc)
                time.sleep(0.5 * (attempt + 1))
            except (ValueError, RuntimeError) as exc:
                # what Ray still refuses of an address of the right shape
                raise _unreachable(settings.address, " ".join(str(exc).split())) from None
        _connected = wanted
    return ray


def _errors_to_log() -> None:
    """Ray's driver prints the cluster's error messages ("A worker died or was killed
    while executing a task…") to this process's stdout, from a thread of its own:
    into the live display, or into JSON a command writes to stdout. What they say
    reaches the run anyway, as the error of the rollout that was lost; here they go
    to skillopt's log."""
    try:
        from ray._private import worker as ray_worker
    except ImportError:  # Ray's internals moved: it prints them, as it did
        return

    def to_log(data: dict[str, Any], ignore_prefix: bool = False) -> None:
        for line in data.get("lines", ()):
            log.info("ray (%s): %s", data.get("pid", "?"), line)

    ray_worker.print_to_stdstream = to_log


def _private_token(refresh: bool) -> None:
    """Token authentication for a private cluster, with a token of its own that lives
    in this process's environment (the cluster's processes inherit it). Left to
    itself, Ray would write a token to ~/.ray/auth_token, in the user's home, and
    say so on stderr. A choice of the user's (RAY_AUTH_MODE, a token or its file) is
    kept."""
    if any(os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")):
        return
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    os.environ["RAY_AUTH_MODE"] = "token"
    if refresh:  # Ray read its settings when it was imported: have it read them again
        try:
            from ray._raylet import Config  # type: ignore[attr-defined]

            Config.initialize("")
        except Exception:  # Ray's internals moved: it will make a token of its own
            log.debug("could not refresh Ray's settings", exc_info=True)


def _unreachable(address: str, reason: str) -> InputError:
    return InputError(
        f"no Ray cluster at {address!r} ({reason}); start one with `ray start --head`, or "
        "set ray.address in skillopt.yaml (host:6379, ray://host:10001, or 'local' for a "
        "private one)",
        field="ray.address",
    )


def _probe(address: str) -> None:
    """Raise when the host and port Ray would connect to refuse a TCP connection,
    do not answer, or do not resolve. 'local' starts a cluster and is not probed;
    'auto' is probed where Ray finds an address for it."""
    target = _host_port(address)
    if target is None:
        return
    host, port = target
    try:
        with socket.create_connection((host, port), timeout=_PROBE_S):
            return
    except ConnectionRefusedError:
        reason = f"{host}:{port} refused the connection"
    except TimeoutError:
        reason = f"{host}:{port} did not answer within {_PROBE_S:g}s"
    except socket.gaierror:
        reason = f"cannot resolve the host {host!r}"
    except OSError as exc:
        reason = f"{host}:{port}: {exc.strerror or exc}"
    raise _unreachable(address, reason)


def _host_port(address: str) -> tuple[str, int] | None:
    """The (host, port) `ray.init(address)` would connect to first, or None where
    that is not known before Ray looks (a private cluster, an address Ray parses
    otherwise)."""
    if not address.startswith("ray://"):
        # Ray lets RAY_ADDRESS win over the address it is given
        address = os.environ.get("RAY_ADDRESS") or address
    if address == "local":
        return None
    if address == "auto":
        try:
            from ray._private.services import get_ray_address_from_environment

            found = get_ray_address_from_environment("auto", None)
        except ConnectionError as exc:  # no cluster started on this machine
            raise _unreachable("auto", str(exc).split(". ")[0]) from None
        except Exception:  # Ray's own lookup changed: let ray.init decide
            return None
        if not isinstance(found, str) or found in ("auto", "local"):
            return None
        address = found
    client = address.startswith("ray://")
    rest = address.removeprefix("ray://").split("/", 1)[0]
    host, sep, port = rest.rpartition(":")
    if not sep:
        host, port = rest, "10001" if client else ""
    host = host.strip("[]")
    if not host or not port.isdigit():
        return None
    return host, int(port)


def cluster_nodes(settings: RaySettings) -> list[dict[str, Any]]:
    """The cluster's live nodes: address and resources."""
    ray = connect(settings)
    return [
        {"address": n.get("NodeManagerAddress"), "resources": n.get("Resources", {})}
        for n in ray.nodes()
        if n.get("Alive")
    ]


def on_each_node(
    settings: RaySettings, fn: Callable[..., Any], *args: Any
) -> list[tuple[str, Any]]:
    """`fn(*args)` run once on every live node of the cluster: (node address, result).
    A node where it raises gives the exception as its result."""
    ray = connect(settings)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    remote = ray.remote(fn)
    refs = []
    for node in ray.nodes():
        if not node.get("Alive"):
            continue
        strategy = NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
        refs.append(
            (
                node.get("NodeManagerAddress"),
                remote.options(scheduling_strategy=strategy, num_cpus=0).remote(*args),
            )
        )
    out: list[tuple[str, Any]] = []
    for address, ref in refs:
        try:
            out.append((address, ray.get(ref)))
        except Exception as exc:  # that node's answer: the check reports it
            out.append((address, exc))
    return out


class RayExecutor:
    """Starts rollouts as Ray tasks and hands each result to its `done` callback, in
    a thread of its own, as it finishes. One per engine."""

    def __init__(self, settings: RaySettings, harness: Harness, judge: Model | None):
        self.settings = settings
        self.ray = connect(settings)
        self._token = uuid.uuid4().hex
        self._boxed = [self.ray.put(harness), self.ray.put(judge)]
        self._remote = self.ray.remote(worker_rollout).options(
            num_cpus=settings.num_cpus_per_rollout,
            max_retries=settings.max_retries,
            retry_exceptions=False,
        )
        self._shipped: dict[str, ShippedSkill] = {}
        self._running: dict[Any, tuple[Done, Task, int, str, str]] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._collect, name="skillopt-ray", daemon=True)
        self._thread.start()

    def submit(self, skill: Skill, task: Task, sample: int, key: str, done: Done) -> None:
        shipped = self._shipped.get(skill.hash)
        if shipped is None:
            shipped = self._shipped[skill.hash] = ShippedSkill.of(skill)
        ref = self._remote.remote(self._token, self._boxed, shipped, task, sample, key)
        with self._lock:
            self._running[ref] = (done, task, sample, key, skill.hash)
        self._wake.set()

    def _collect(self) -> None:
        ray = self.ray
        while not self._closed:
            with self._lock:
                refs = list(self._running)
            if not refs:
                self._wake.wait(0.2)
                self._wake.clear()
                continue
            ready, _ = ray.wait(refs, num_returns=1, timeout=_WAIT_S)
            for ref in ready:
                with self._lock:
                    entry = self._running.pop(ref, None)
                if entry is None:
                    continue
                done, task, sample, key, skill_hash = entry
                rollout, error = self._result(ref, task, sample, key, skill_hash)
                try:
                    done(rollout, error)
                except Exception:  # the engine's callback: never kill the collector
                    log.exception("a rollout's result could not be handed over")

    def _result(
        self, ref: Any, task: Task, sample: int, key: str, skill_hash: str
    ) -> tuple[Rollout | None, BaseException | None]:
        from ray import exceptions as rex

        try:
            return self.ray.get(ref), None
        except rex.TaskCancelledError as exc:
            return None, KeyboardInterrupt(str(exc))
        except rex.RayTaskError as exc:  # raised by our code on the worker
            cause: Any = exc.as_instanceof_cause()  # type: ignore[no-untyped-call]
            if isinstance(cause, KeyboardInterrupt):
                return None, cause
            return None, cause if isinstance(cause, BaseException) else exc
        except rex.RayError as exc:  # the worker or its node died, retries spent
            lost = Rollout(
                key=key,
                task_id=task.id,
                split=task.split,
                sample=sample,
                skill_hash=skill_hash,
                scored=False,
                error=f"the Ray worker running it was lost ({type(exc).__name__}): "
                f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}",
                error_kind="executor",
            )
            return lost, None

    def cancel(self) -> None:
        """Stop every task this executor started: nicely, then by force."""
        with self._lock:
            refs = list(self._running)
        for ref in refs:
            try:
                self.ray.cancel(ref, force=False)
            except Exception:
                log.debug("cancel failed", exc_info=True)
        if refs:
            _, left = self.ray.wait(refs, num_returns=len(refs), timeout=_GRACE_S)
            for ref in left:
                try:
                    self.ray.cancel(ref, force=True)
                except Exception:
                    log.debug("forced cancel failed", exc_info=True)
        with self._lock:
            self._running.clear()

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        self._thread.join(timeout=2)


__all__ = ["RayExecutor", "cluster_nodes", "connect", "on_each_node"]
