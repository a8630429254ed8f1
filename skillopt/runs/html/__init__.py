"""The HTML run report (`report.html`), `skillopt blame`, and the comparison of
two runs: data gathered from a run's records (`data`, `blame`), drawn as one
self-contained page (`page`, `steps`, `compare`, `charts`, in the frame of
`document`, with its style and script under `assets/`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from skillopt.runs.rundir import write_atomic

if TYPE_CHECKING:
    from skillopt.store.ledger import LedgerRow

REPORT_FILE = "report.html"


def write_report(
    ref: str | Path,
    run_dir: str | Path | None = None,
    *,
    out: str | Path | None = None,
    ledger: list[LedgerRow] | None = None,
) -> Path:
    """Write the run's HTML report (default: `report.html` in its directory); its path."""
    from skillopt.runs.html import data, page
    from skillopt.runs.read import open_run

    run, audit = open_run(ref, run_dir)
    html = page.render(data.collect(run, audit, ledger=ledger))
    target = Path(out) if out is not None else run.path / REPORT_FILE
    write_atomic(target, html)
    return target


def write_comparison(
    a: str | Path,
    b: str | Path,
    run_dir: str | Path | None = None,
    *,
    out: str | Path | None = None,
) -> Path:
    """Write the page comparing runs `a` and `b` (default: `compare-<b>.html` in `a`'s
    directory); its path."""
    from skillopt.runs.html import compare, data
    from skillopt.runs.read import open_run

    run_a, audit_a = open_run(a, run_dir)
    run_b, audit_b = open_run(b, run_dir)
    html = compare.render_compare(data.collect(run_a, audit_a), data.collect(run_b, audit_b))
    target = Path(out) if out is not None else run_a.path / f"compare-{run_b.run_id}.html"
    write_atomic(target, html)
    return target
