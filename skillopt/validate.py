"""`skillopt validate`: the CI gate for a skill — lint, then eval on a split, with
optional thresholds and a baseline (the skill at a git ref, or at a path) scored on
the same tasks.

Exit codes: 0 every check passed; 1 a check failed (lint errors, a score below
`min_score`, more regressions than `max_regressions`, nothing scored); 2 a usage
or input error (raised as `InputError` before any model call: a bad suite, an
unknown baseline ref).

Invariants: lint runs first and a skill with lint errors costs no model call;
the baseline is scored through the same engine and store, so an unchanged
baseline is served from the store; unscored tasks are reported (JUnit
`skipped`) and never counted as failures or as zeros.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt.config import Settings
from skillopt.errors import InputError
from skillopt.evaluation import Comparison, SplitResult, compare, task_outcomes
from skillopt.harness.base import Harness
from skillopt.models.base import Model
from skillopt.rollout import Observer
from skillopt.shipping import diff_stat, files_diff, skill_files
from skillopt.skill.document import SKILL_FILE, Skill, resolve_skill_file
from skillopt.skill.lint import Problem, lint_skill
from skillopt.suite.task import Task
from skillopt.text import clip


@dataclass
class Check:
    name: str  # lint | scored | min-score | max-regressions
    passed: bool
    detail: str


@dataclass
class ValidateResult:
    skill: str
    skill_hash: str
    skill_path: str
    suite: str
    split: str
    target: str
    harness: str
    lint: list[Problem]
    checks: list[Check]
    result: SplitResult | None = None
    baseline: SplitResult | None = None
    baseline_label: str | None = None
    baseline_note: str | None = None  # e.g. the skill does not exist at the ref
    comparison: Comparison | None = None
    diff: str = ""
    tasks: dict[str, Task] = field(default_factory=dict)
    wall_s: float = 0.0

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def to_dict(self) -> dict:
        def split(r: SplitResult | None) -> dict | None:
            return None if r is None else r.summary()

        return {
            "passed": self.passed,
            "skill": self.skill,
            "skill_hash": self.skill_hash,
            "skill_path": self.skill_path,
            "suite": self.suite,
            "split": self.split,
            "target": self.target,
            "harness": self.harness,
            "checks": [c.__dict__ for c in self.checks],
            "lint": [
                {
                    "path": str(p.path),
                    "line": p.line,
                    "field": p.field,
                    "severity": p.severity,
                    "message": p.message,
                }
                for p in self.lint
            ],
            "result": split(self.result),
            "baseline": split(self.baseline),
            "baseline_label": self.baseline_label,
            "baseline_note": self.baseline_note,
            "comparison": self.comparison.summary() if self.comparison else None,
            "diff_stat": [
                {"file": f, "added": a, "removed": r} for f, a, r in diff_stat(self.diff)
            ],
            "tasks": [
                _task_record(o, self)
                for o in (task_outcomes(self.result.rollouts).values() if self.result else [])
            ],
        }


def validate(
    skill_path: str | Path,
    suite_path: str | Path,
    *,
    split: str = "test",
    min_score: float | None = None,
    baseline: str | None = None,
    max_regressions: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    settings: Settings | None = None,
    target: Model | None = None,
    harness: Harness | None = None,
    judge: Model | None = None,
    observers: Sequence[Observer] = (),
    warn: Callable[[str], None] | None = None,
) -> ValidateResult:
    """Lint `skill_path`, then score it (and the baseline) on `split` of the suite."""
    from skillopt.context import prepare, settings_for
    from skillopt.suite.loader import load_suite, require_split

    if min_score is not None and not 0 <= min_score <= 1:
        raise InputError("must be between 0 and 1", field="--min-score")
    if max_regressions is not None and max_regressions < 0:
        raise InputError("must be 0 or more", field="--max-regressions")
    if max_regressions is not None and baseline is None:
        raise InputError(
            "--max-regressions needs --baseline REF|PATH to compare against",
            field="--max-regressions",
        )
    suite = load_suite(suite_path)
    tasks = require_split(suite, split)
    skill_path = Path(skill_path)
    problems = lint_skill(skill_path)
    errors = [p for p in problems if p.severity == "error"]
    lint_check = Check(
        "lint",
        not errors,
        "no errors"
        if not errors
        else f"{len(errors)} error(s): " + "; ".join(str(p) for p in errors[:3]),
    )
    base_info = dict(
        suite=suite.name,
        split=split,
        lint=problems,
        tasks={t.id: t for t in tasks},
        skill_path=str(skill_path),
    )
    if errors:  # nothing else runs: no model call for a broken skill
        return ValidateResult(
            skill=skill_path.name,
            skill_hash="",
            target="",
            harness="",
            checks=[lint_check],
            **base_info,
        )
    skill = Skill.load(skill_path)
    with _baseline(skill, baseline) as (base_skill, base_label, base_note):
        ctx = prepare(
            suite,
            settings_for(suite, overrides, settings),
            skills=[skill],
            target=target,
            harness=harness,
            judge=judge,
        )
        if warn is not None:
            for notice in ctx.settings.notices:
                warn(notice)
        engine = ctx.engine(observers)
        start = time.perf_counter()
        try:
            t0 = time.perf_counter()
            rollouts = engine.run(
                skill, tasks, samples=ctx.settings.samples, label=f"skill · {split}"
            )
            result = SplitResult("skill", split, rollouts, time.perf_counter() - t0, skill.hash)
            base_result = comparison = None
            if base_skill is not None:
                t0 = time.perf_counter()
                base_rollouts = engine.run(
                    base_skill, tasks, samples=ctx.settings.samples, label=f"baseline · {split}"
                )
                base_result = SplitResult(
                    "baseline", split, base_rollouts, time.perf_counter() - t0, base_skill.hash
                )
                comparison = compare(base_result, result)
        finally:
            engine.close()
            ctx.store.close()
        diff = (
            ""
            if base_skill is None
            else files_diff(skill_files(base_skill), skill_files(skill), skill.name)
        )
    checks = [lint_check, *_checks(result, comparison, min_score, max_regressions)]
    target = ctx.settings.target or ("" if ctx.target is not None else "default")
    return ValidateResult(
        skill=skill.name,
        skill_hash=skill.hash,
        target=target,
        harness=ctx.harness.name,
        checks=checks,
        result=result,
        baseline=base_result,
        baseline_label=base_label,
        baseline_note=base_note,
        comparison=comparison,
        diff=diff,
        wall_s=time.perf_counter() - start,
        **base_info,
    )


def _checks(
    result: SplitResult,
    comparison: Comparison | None,
    min_score: float | None,
    max_regressions: int | None,
) -> list[Check]:
    checks = []
    if result.mean is None:
        checks.append(
            Check(
                "scored",
                False,
                f"none of {result.tasks} tasks could be scored "
                f"({result.unscored} unscored rollouts)",
            )
        )
        return checks
    checks.append(Check("scored", True, f"{result.n}/{result.tasks} tasks scored"))
    if min_score is not None:
        ok = result.mean >= min_score
        checks.append(
            Check("min-score", ok, f"mean {result.mean:.3f} {'≥' if ok else '<'} {min_score:.3f}")
        )
    if max_regressions is not None and comparison is not None:
        n = len(comparison.pass_to_fail)
        ok = n <= max_regressions
        detail = f"{n} regression(s) {'≤' if ok else '>'} {max_regressions}"
        if comparison.pass_to_fail:
            detail += ": " + ", ".join(comparison.pass_to_fail[:10])
        checks.append(Check("max-regressions", ok, detail))
    return checks


@contextlib.contextmanager
def _baseline(
    skill: Skill, ref: str | None
) -> Iterator[tuple[Skill | None, str | None, str | None]]:
    """(baseline skill, label, note): the skill at a path, or at a git ref of the
    repository holding `skill` (materialised in a temporary directory)."""
    if ref is None:
        yield None, None, None
        return
    as_path = Path(ref)
    if as_path.exists():
        try:
            resolve_skill_file(as_path)
        except InputError:
            raise InputError(
                f"{ref!r} is a path but holds no SKILL.md", field="--baseline"
            ) from None
        yield Skill.load(as_path), ref, None
        return
    with tempfile.TemporaryDirectory(prefix="skillopt-baseline-") as tmp:
        found = materialise_at_ref(skill.root, ref, Path(tmp))
        if found is None:
            yield None, ref, f"the skill does not exist at {ref} (new skill): no comparison"
        else:
            yield Skill.load(found), ref, None


def materialise_at_ref(skill_dir: Path | None, ref: str, into: Path) -> Path | None:
    """Write the skill directory as it is at git `ref` under `into`; None when the
    skill does not exist there. An unknown ref or no repository is an `InputError`."""
    import git

    if skill_dir is None:
        raise InputError("--baseline REF needs a skill on disk", field="--baseline")
    try:
        repo = git.Repo(skill_dir, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise InputError(
            f"--baseline {ref!r} is neither a path nor usable as a git ref: "
            f"{skill_dir} is not inside a git repository",
            field="--baseline",
        ) from None
    try:
        commit = repo.commit(ref)
    except (git.BadName, git.BadObject, ValueError, git.GitCommandError):
        raise InputError(
            f"unknown git ref {ref!r} (not a branch, tag or commit of "
            f"{repo.working_tree_dir}, and not a path)",
            field="--baseline",
        ) from None
    rel = Path(os.path.relpath(skill_dir.resolve(), Path(repo.working_tree_dir).resolve()))
    try:
        tree = commit.tree / rel.as_posix() if rel.as_posix() != "." else commit.tree
    except KeyError:
        return None
    if tree.type != "tree":
        return None
    dest = into / skill_dir.name
    for blob in tree.traverse():
        if blob.type != "blob":
            continue
        out = dest / Path(blob.path).relative_to(rel)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(blob.data_stream.read())
    if not (dest / SKILL_FILE).is_file():
        return None
    return dest


# ---------------------------------------------------------------------- reports
def _task_record(outcome, res: ValidateResult) -> dict:
    c = res.comparison
    return {
        "id": outcome.task_id,
        "value": outcome.value,
        "passed": outcome.passed,
        "regression": bool(c and outcome.task_id in c.pass_to_fail),
        "fixed": bool(c and outcome.task_id in c.fail_to_pass),
    }


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
            ("mean", _num(res.result.mean)),
            ("baseline", res.baseline_label or ""),
            ("baseline_mean", _num(res.baseline.mean if res.baseline else None)),
        ):
            ET.SubElement(props, "property", name=key, value=str(value))
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        by_task: dict[str, list] = {}
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
                    message=_xml_clip(f"unscored: {rs[0].error or 'no answer'}", 500),
                )
            elif not outcome.passed:
                counts["failures"] += 1
                regression = res.comparison is not None and task_id in res.comparison.pass_to_fail
                fail = ET.SubElement(
                    case,
                    "failure",
                    type="regression" if regression else "score",
                    message=_xml_clip(
                        ("regression (passed at the baseline); " if regression else "")
                        + f"score {outcome.value:.3f}",
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
                case, "failure", type=check.name, message=_xml_clip(check.detail, 200)
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


def _failure_text(res: ValidateResult, task_id: str, rollouts) -> str:
    task = res.tasks.get(task_id)
    scored = [r for r in rollouts if r.scored]
    lines = []
    if task is not None and task.expected is not None:
        lines.append(f"expected: {_xml_clip(str(task.expected), 500)}")
    if scored:
        lines.append(f"answer: {_xml_clip(scored[0].answer or '', 500)}")
        lines.append(f"feedback: {_xml_clip(scored[0].feedback, 1000)}")
    return "\n".join(lines)


def _set_counts(el: ET.Element, counts: dict, seconds: float) -> None:
    for k, v in counts.items():
        el.set(k, str(v))
    el.set("time", f"{seconds:.3f}")


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.4f}"


def _xml_clip(text: str, limit: int) -> str:
    """`text` without the control characters XML cannot hold, clipped to `limit`."""
    return clip("".join(ch for ch in text if ch in "\t\n\r" or ord(ch) >= 0x20), limit)


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
            f"| mean | {_f(r.mean)} | {_f(b.mean)} | {_d(c.delta if c else None)} |",
            f"| pass rate | {_p(r.pass_rate)} | {_p(b.pass_rate)} | "
            f"{_pp(r.pass_rate, b.pass_rate)} |",
            f"| scored | {r.n}/{r.tasks} | {b.n}/{b.tasks} | |",
        ]
        if r.invocations[1] or b.invocations[1]:
            lines.append(f"| skill invoked | {_inv(r)} | {_inv(b)} | |")
    else:
        lines += [
            "| | skill |",
            "|---|---|",
            f"| mean | {_f(r.mean)} |",
            f"| pass rate | {_p(r.pass_rate)} |",
            f"| scored | {r.n}/{r.tasks} |",
        ]
        if r.invocations[1]:
            lines.append(f"| skill invoked | {_inv(r)} |")
    if res.baseline_note:
        lines += ["", f"Baseline: {res.baseline_note}."]
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
            diff = clip(res.diff, 6000, "\n… (truncated)")
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
            lines.append(f"- `{o.task_id}` ({o.value:.2f}): {_xml_clip(fb, 200)}")
        if len(failed) > 10:
            lines.append(f"- … and {len(failed) - 10} more")
    if r.unscored:
        lines += ["", f"{r.unscored} rollout(s) unscored (infrastructure failures, not counted)."]
    return "\n".join(lines) + "\n"


def _inv(r: SplitResult) -> str:
    """How many traced rollouts show the agent loading the skill."""
    invoked, traced = r.invocations
    return f"{invoked}/{traced}" if traced else "—"


def _f(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _d(x: float | None) -> str:
    return "—" if x is None else f"{x:+.3f}"


def _p(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _pp(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None else f"{100 * (a - b):+.1f} pp"


def _ids(ids: list[str], limit: int = 8) -> str:
    shown = ", ".join(f"`{i}`" for i in ids[:limit])
    return shown + (f" … and {len(ids) - limit} more" if len(ids) > limit else "")
