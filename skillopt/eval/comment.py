"""The Markdown summary of `skillopt validate --summary`: a pull-request comment (or
`$GITHUB_STEP_SUMMARY`) with the verdict, the scores against the baseline, whether
the skill loaded (a trigger suite's precision, recall and queries), the flips, the
checks, the skill's diff and the failing tasks.

Invariant: built from the `ValidateResult` alone; a skill with lint errors gets
the verdict and its errors, nothing else; unscored rollouts are reported apart,
never as failures.
"""

from __future__ import annotations

from skillopt._util import display
from skillopt._util.text import xml_clip
from skillopt.eval.checks import ValidateResult
from skillopt.eval.loading import TriggerReport
from skillopt.eval.results import SplitResult
from skillopt.rollouts.outcomes import task_outcomes
from skillopt.ship.diffs import diff_stat


def summary_markdown(res: ValidateResult) -> str:
    """A pull-request comment: verdict, scores, delta, flips, checks, skill diff stat."""
    verdict = "✅ passed" if res.passed else "❌ failed"
    lines = [f"## skillopt validate: `{res.skill}` {verdict}", ""]
    if res.result is None:
        lines += ["The skill has lint errors, so no task was run:", ""]
        lines += [f"- `{p}`" for p in res.lint if p.severity == "error"]
        return "\n".join(lines) + "\n"
    lines.append(
        f"`{res.skill}` ({res.skill_hash[:12]}) on **{res.suite}** · split "
        f"`{res.split}` · target `{res.target or 'default'}` · harness "
        f"`{res.harness}`"
    )
    lines.append("")
    r, b, c = res.result, res.baseline, res.comparison
    if b is not None:
        lines += [
            f"| | skill | baseline (`{res.baseline_label}`) | Δ |",
            "|---|---|---|---|",
            f"| mean | {display.score(r.mean)} | {display.score(b.mean)} | "
            f"{display.delta(c.delta if c else None)} |",
            f"| pass rate | {display.pct(r.pass_rate)} | {display.pct(b.pass_rate)} | "
            f"{display.pct_points(r.pass_rate, b.pass_rate)} |",
            f"| scored | {r.n}/{r.tasks} | {b.n}/{b.tasks} | |",
        ]
        if r.triggers is not None and b.triggers is not None:
            rt, bt = r.triggers, b.triggers
            lines += [
                f"| precision | {display.score(rt.precision, 2)} | "
                f"{display.score(bt.precision, 2)} | |",
                f"| recall | {display.score(rt.recall, 2)} | {display.score(bt.recall, 2)} | |",
            ]
        elif res.invoke == "auto" and (r.loads.tasks or b.loads.tasks):
            lines.append(f"| skill loaded | {_inv(r)} | {_inv(b)} | |")
    else:
        lines += [
            "| | skill |",
            "|---|---|",
            f"| mean | {display.score(r.mean)} |",
            f"| pass rate | {display.pct(r.pass_rate)} |",
            f"| scored | {r.n}/{r.tasks} |",
        ]
        if r.triggers is not None:
            lines += [
                f"| precision | {display.score(r.triggers.precision, 2)} |",
                f"| recall | {display.score(r.triggers.recall, 2)} |",
            ]
        elif res.invoke == "auto" and r.loads.tasks:
            lines.append(f"| skill loaded | {_inv(r)} |")
    if res.baseline_note:
        lines += ["", f"Baseline: {res.baseline_note}."]
    if r.triggers is not None:
        lines += ["", *_trigger_table(r.triggers)]
    elif res.invoke == "auto" and (warning := r.loads.warning()):
        lines += ["", f"⚠️ {warning}."]
    lines += ["", "**Checks**", ""]
    for check in res.checks:
        lines.append(f"- {'✅' if check.passed else '❌'} {check.name}: {check.detail}")
    if c is not None:
        lines += [
            "",
            f"**Flips** (n={c.n}): fail→pass {len(c.fail_to_pass)}"
            + (f" ({_ids(c.fail_to_pass)})" if c.fail_to_pass else "")
            + f" · pass→fail {len(c.pass_to_fail)}"
            + (f" ({_ids(c.pass_to_fail)})" if c.pass_to_fail else ""),
        ]
    if b is not None:
        stats = diff_stat(res.diff)
        lines += [
            "",
            "**Skill vs baseline**: "
            + (", ".join(f"`{f}` +{a} −{d}" for f, a, d in stats) if stats else "identical"),
        ]
        if res.diff:
            diff = res.diff if len(res.diff) <= 6000 else res.diff[:6000] + "\n… (truncated)"
            lines += [
                "",
                "<details><summary>diff</summary>",
                "",
                "```diff",
                diff.rstrip("\n"),
                "```",
                "",
                "</details>",
            ]
    failed = [o for o in task_outcomes(r.rollouts).values() if o.passed is False]
    if failed:
        lines += ["", f"**Failing tasks** ({len(failed)})", ""]
        by_id = {x.task_id: x for x in r.rollouts if x.scored}
        for o in failed[:10]:
            fb = by_id[o.task_id].feedback.replace("\n", " ") if o.task_id in by_id else ""
            lines.append(f"- `{o.task_id}` ({display.score(o.value, 2)}): {xml_clip(fb, 200)}")
        if len(failed) > 10:
            lines.append(f"- … and {len(failed) - 10} more")
    if r.unscored:
        lines += ["", f"{r.unscored} rollout(s) unscored (infrastructure failures, not counted)."]
    return "\n".join(lines) + "\n"


def _inv(r: SplitResult) -> str:
    """In how many traced tasks the agent loaded the skill."""
    loads = r.loads
    return f"{loads.loaded}/{loads.tasks} tasks" if loads.tasks else "—"


def _trigger_table(report: TriggerReport) -> list[str]:
    """Each trigger query: whether it should load the skill and how often it did."""
    lines = ["**Trigger queries**", "", "| query | should load | loaded | |", "|---|---|---|---|"]
    for q in report.queries:
        mark = {True: "✅", False: "❌ misfire", None: "unscored"}[q.passed]
        lines.append(
            f"| `{xml_clip(q.task_id, 80)}` | {'yes' if q.should_trigger else 'no'} | "
            f"{q.loaded}/{q.traced} | {mark} |"
        )
    return lines


def _ids(ids: list[str], limit: int = 8) -> str:
    shown = ", ".join(f"`{i}`" for i in ids[:limit])
    return shown + (f" … and {len(ids) - limit} more" if len(ids) > limit else "")
