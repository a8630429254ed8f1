"""How skillopt writes numbers for people: scores, deltas, pass rates, p-values and
money, in the terminal, in reports, in pull-request comments and in commit trailers.

Invariant: every function takes None (a value that could not be computed: nothing
scored, no baseline, no priced call) and returns the caller's placeholder for it,
never raises and never prints "None". The default placeholder is `NONE` ("—");
reports and commit messages pass `none=NA` ("n/a"), JUnit properties `none=""`.

A leaf module: it imports nothing from skillopt, so any layer may use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

NONE = "—"  # the terminal, pull-request comments
NA = "n/a"  # reports, commit messages and trailers, the optimizer's memory


def score(value: float | None, digits: int = 3, *, none: str = NONE) -> str:
    """A score or mean in [0, 1] (or any plain number such as a p-value) with
    `digits` decimals: `0.667`."""
    return none if value is None else f"{value:.{digits}f}"


def delta(value: float | None, *, none: str = NONE) -> str:
    """A signed difference of scores: `+0.125`, `-0.030`, `+0.000`."""
    return none if value is None else f"{value:+.3f}"


def clock(seconds: float | None, *, none: str = NONE) -> str:
    """A duration as hours, minutes and seconds, the way a progress line shows elapsed
    time and time left: `0:01:10`, `12:00:05`. Negative durations read `0:00:00`."""
    if seconds is None:
        return none
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


BLOCKS = "▁▂▃▄▅▆▇█"
MISSING = "·"  # a step that scored nothing


def sparkline(values: Sequence[float | None], *, missing: str = MISSING) -> str:
    """Scores in [0, 1] as one block character each, on an absolute scale (0 is `▁`,
    1 is `█`, the six steps between are equal): `▁▄█`. A missing score (None, NaN)
    is `missing`; a value outside [0, 1] is drawn at the nearer end."""
    top = len(BLOCKS) - 1
    return "".join(
        missing
        if v is None or v != v  # NaN is not equal to itself
        else BLOCKS[min(top, max(0, round(v * top)))]
        for v in values
    )


def pct(value: float | None, *, none: str = NONE) -> str:
    """A rate in [0, 1] as a percentage with one decimal: `0.5` → `50.0%`."""
    return none if value is None else f"{value * 100:.1f}%"


def pct_points(a: float | None, b: float | None, *, none: str = NONE) -> str:
    """The difference of two rates in signed percentage points: `+12.5 pp`; `none`
    when either is missing."""
    return none if a is None or b is None else f"{100 * (a - b):+.1f} pp"


def ids(names: list[str], limit: int = 8) -> str:
    """Task ids in a line, the first `limit` of them: `a, b … and 3 more`."""
    shown = ", ".join(names[:limit])
    return shown + (f" … and {len(names) - limit} more" if len(names) > limit else "")


def flips(fail_to_pass: Sequence[str], pass_to_fail: Sequence[str]) -> str:
    """`fail→pass 10: a, b … and 2 more · pass→fail 1: c`: the tasks that flipped each
    way (eval against no skill, train's best against its initial skill)."""
    return (
        f"fail→pass {len(fail_to_pass)}"
        + (f": {ids(list(fail_to_pass))}" if fail_to_pass else "")
        + f" · pass→fail {len(pass_to_fail)}"
        + (f": {ids(list(pass_to_fail))}" if pass_to_fail else "")
    )


def split_sizes(counts: Mapping[str, int]) -> str:
    """'tasks: train 16 · val 12 · test 12'."""
    return "tasks: " + " · ".join(
        f"{name} {counts.get(name, 0)}" for name in ("train", "val", "test")
    )


def p_value(value: float | None, digits: int = 3, *, none: str = NONE, floor: bool = False) -> str:
    """A p-value with `digits` decimals. With `floor`, a value below 0.001 reads
    `<0.001` (3 digits) rather than `0.000`, which would look like certainty: the
    terminal does this; reports and commit trailers print the rounded number."""
    if value is None:
        return none
    smallest = float(f"1e-{digits}")  # the literal 0.001, not 10 ** -3
    if floor and value < smallest:
        return f"<{smallest:.{digits}f}"
    return f"{value:.{digits}f}"


def money(
    value: float | None,
    complete: bool = True,
    *,
    digits: int | None = None,
    none: str | None = None,
) -> str:
    """A cost in US dollars. By default 4 decimals under $1 (`$0.0012`) and cents
    with thousands separators from $1 (`$1,234.57`); `digits` fixes the decimals
    instead (`digits=4`: `$1234.5678`, as the plan prints). Nothing spent reads
    `$0` wherever it is shown: a free model (the embedded one, a scripted one)
    costs exactly 0, never `$0.0000`.

    `complete=False` says some calls had no known price, so the sum is a lower
    bound: `≥$0.0012`. None reads `none` when given, else `$0` when complete
    (nothing was spent) and `n/a` when not (no call had a price)."""
    if value is None:
        if none is not None:
            return none
        return "$0" if complete else NA
    if value == 0 and complete:
        return "$0"
    if digits is not None:
        text = f"${value:.{digits}f}"
    else:
        text = f"${value:.4f}" if value < 1 else f"${value:,.2f}"
    if 0 < value and float(text.lstrip("$").replace(",", "")) == 0:
        # something was spent, too little for the decimals shown: never "$0.0000"
        text = f"${value:.8f}".rstrip("0")
        if float(text.lstrip("$")) == 0:
            text = "<$0.00000001"
    return text if complete else "≥" + text


def spent(value: float | None, calls: int) -> str:
    """What `calls` model calls cost, summed in `value` (None: no call had a price):
    `$0` when nothing was billed (no call, or a free model), `n/a` only when calls
    were made and none had a price (litellm does not know the model), else `money`."""
    return money(value, complete=value is not None or not calls)
