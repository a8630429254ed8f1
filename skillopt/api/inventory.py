"""The entry points that say what can be used here: the components that can be
named (`plugins`), the models and agent CLIs (`models`), and what each node of a
Ray cluster has (`cluster_report`).

Invariant: looking never fails for one missing thing (each is reported as such);
only an unreachable cluster is an `InputError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from skillopt.api.options import Executor, Section, overrides

if TYPE_CHECKING:
    from skillopt.config import Settings
    from skillopt.models.inventory import ModelInfo
    from skillopt.plugins import Listing
    from skillopt.rollouts.cluster import NodeReport


def plugins() -> Listing:
    """Every scorer, harness, optimizer, gate and model provider that can be named,
    with where it came from (built in, or the plugin distribution and version), and
    the plugins that failed to load (`skillopt plugins`)."""
    from skillopt.plugins import listing

    return listing()


def builtin_origin() -> str:
    """The origin `plugins()` gives what skillopt itself registers."""
    from skillopt.plugins import BUILTIN

    return BUILTIN


def models(env: Mapping[str, str] | None = None) -> list[ModelInfo]:
    """What can be used here (`skillopt models`)."""
    from skillopt.models.inventory import models as inventory

    return inventory(None if env is None else dict(env))


def cluster_report(
    *,
    executor: Executor | None = None,
    ray: Section | None = None,
    settings: Settings | None = None,
) -> list[NodeReport] | None:
    """What every live node of the Ray cluster has for running rollouts (`skillopt
    models --executor ray`): Python, skillopt, Ray, the agent CLIs, the embedded
    model; each node's checks say what is missing, they never raise. None when the
    executor (settings resolved as for a run) is local; `InputError` naming
    ray.address when the cluster cannot be reached."""
    from skillopt.config import resolve_settings
    from skillopt.rollouts.cluster import cluster_report as check_nodes

    if settings is None:
        settings = resolve_settings(overrides(executor=executor, ray=ray))
    if settings.executor != "ray":
        return None
    return check_nodes(settings)
