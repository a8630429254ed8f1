"""JUnit XML for `skillopt validate --junit`: one testsuite of the tasks and one of
the checks, which CI systems render as test results.

Invariant: an unscored task is `skipped`, never a failure; a failing task carries
the scorer's feedback; every attribute and text is XML-safe (control characters
are dropped, long text is clipped).
"""

from __future__ import annotations

import socket
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from skillopt._util import display
from skillopt._util.text import xml_clip
from skillopt.eval.checks import ValidateResult
from skillopt.rollouts.outcomes import task_outcomes
from skillopt.rollouts.record import Rollout


def junit_xml(res: ValidateResult) -> str:
    """JUnit XML: one testsuite of the tasks (pass; failure with the scorer's
    feedback; skipped when unscored) and one of the checks (lint, thresholds)."""
    root = ET.Element("testsuites", name="skillopt validate")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    host = socket.gethostname()
    if res.result is not None:
        classname = f"{res.suite}.{res.split}"
        suite = ET.SubElement(
            root,
            "testsuite",
            name=f"skillopt.{classname}",
            id="0",
            package="skillopt",
            timestamp=stamp,
            hostname=host,
        )
        props = ET.SubElement(suite, "properties")
        for key, value in (
            ("skill", res.skill),
            ("skill_hash", res.skill_hash),
            ("target", res.target),
            ("harness", res.harness),
            ("mean", display.score(res.result.mean, 4, none="")),
            ("load_rate", display.score(res.result.loads.rate, 4, none="")),
            ("baseline", res.baseline_label or ""),
            (
                "baseline_mean",
                display.score(res.baseline.mean if res.baseline else None, 4, none=""),
            ),
        ):
            ET.SubElement(props, "property", name=key, value=str(value))
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        by_task: dict[str, list[Rollout]] = {}
        for r in res.result.rollouts:
            by_task.setdefault(r.task_id, []).append(r)
        for task_id, outcome in task_outcomes(res.result.rollouts).items():
            rs = by_task[task_id]
            case = ET.SubElement(
                suite,
                "testcase",
                name=task_id,
                classname=classname,
                time=f"{sum(r.latency_s for r in rs):.3f}",
            )
            counts["tests"] += 1
            if outcome.value is None:
                counts["skipped"] += 1
                ET.SubElement(
                    case,
                    "skipped",
                    message=xml_clip(f"unscored: {rs[0].error or 'no answer'}", 500),
                )
            elif not outcome.passed:
                counts["failures"] += 1
                regression = res.comparison is not None and task_id in res.comparison.pass_to_fail
                fail = ET.SubElement(
                    case,
                    "failure",
                    type="regression" if regression else "score",
                    message=xml_clip(
                        ("regression (passed at the baseline); " if regression else "")
                        + f"score {display.score(outcome.value)}",
                        200,
                    ),
                )
                fail.text = _failure_text(res, task_id, rs)
        _set_counts(suite, counts, sum(r.latency_s for r in res.result.rollouts))
        for k in totals:
            totals[k] += counts[k]
    checks = ET.SubElement(
        root,
        "testsuite",
        name="skillopt.checks",
        id=str(len(root)),
        package="skillopt",
        timestamp=stamp,
        hostname=host,
    )
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for check in res.checks:
        case = ET.SubElement(
            checks, "testcase", name=check.name, classname="skillopt.checks", time="0"
        )
        counts["tests"] += 1
        if not check.passed:
            counts["failures"] += 1
            fail = ET.SubElement(
                case, "failure", type=check.name, message=xml_clip(check.detail, 200)
            )
            fail.text = (
                "\n".join(str(p) for p in res.lint) if check.name == "lint" else check.detail
            )
    _set_counts(checks, counts, 0.0)
    for k in totals:
        totals[k] += counts[k]
    _set_counts(root, totals, res.wall_s)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _failure_text(res: ValidateResult, task_id: str, rollouts: Sequence[Rollout]) -> str:
    task = res.tasks.get(task_id)
    scored = [r for r in rollouts if r.scored]
    lines = []
    if task is not None and task.expected is not None:
        lines.append(f"expected: {xml_clip(str(task.expected), 500)}")
    if scored:
        lines.append(f"answer: {xml_clip(scored[0].answer or '', 500)}")
        lines.append(f"feedback: {xml_clip(scored[0].feedback, 1000)}")
    return "\n".join(lines)


def _set_counts(el: ET.Element, counts: dict[str, int], seconds: float) -> None:
    for k, v in counts.items():
        el.set(k, str(v))
    el.set("time", f"{seconds:.3f}")
