"""`skillopt._util.display`: every placeholder, precision and sign the reports, the
terminal, the pull-request summary and the commit trailers rely on."""

from __future__ import annotations

from skillopt._util import display
from skillopt._util.display import NA


def test_none_reads_the_callers_placeholder():
    assert display.score(None) == display.delta(None) == display.pct(None) == "—"
    assert display.p_value(None) == display.pct_points(0.5, None) == "—"
    assert display.score(None, none=NA) == "n/a"
    assert display.score(None, 4, none="") == ""


def test_scores_deltas_and_rates():
    assert display.score(2 / 3) == "0.667"
    assert display.score(2 / 3, 4) == "0.6667"
    assert display.score(2 / 3, 2) == "0.67"
    assert display.delta(0.125) == "+0.125"
    assert display.delta(-0.03) == "-0.030"
    assert display.delta(0.0) == "+0.000"
    assert display.pct(0.5) == "50.0%"
    assert display.pct(1 / 3) == format(1 / 3, ".1%") == "33.3%"
    assert display.pct_points(0.75, 0.625) == "+12.5 pp"


def test_p_values_floor_only_when_asked():
    assert display.p_value(0.0004) == "0.000"
    assert display.p_value(0.0004, floor=True) == "<0.001"
    assert display.p_value(0.001, floor=True) == "0.001"
    assert display.p_value(0.04321, 4) == "0.0432"


def test_money():
    assert display.money(0.0012) == "$0.0012"
    assert display.money(1234.5678) == "$1,234.57"
    assert display.money(1234.5678, digits=4) == "$1234.5678"
    assert display.money(0.5, complete=False) == "≥$0.5000"
    assert display.money(None) == "$0"
    assert display.money(None, complete=False) == "n/a"
    assert display.money(None, digits=4, none="unknown") == "unknown"
    # nothing spent reads the same everywhere, whatever the precision asked for
    assert display.money(0.0) == display.money(0.0, digits=4) == "$0"
    assert display.money(0.0, complete=False) == "≥$0.0000"  # a lower bound stays one
    # something spent never reads as nothing: more decimals when 4 would show zeros
    assert display.money(0.00004) == display.money(0.00004, digits=4) == "$0.00004"
    assert display.money(0.00004, complete=False) == "≥$0.00004"
    assert display.money(1e-12) == "<$0.00000001"


def test_spent_is_0_for_no_call_or_a_free_model_and_na_only_for_unpriced_calls():
    assert display.spent(None, 0) == "$0"  # no call (everything from the store)
    assert display.spent(0.0, 12) == "$0"  # a free model: the embedded one, a scripted one
    assert display.spent(None, 12) == "n/a"  # litellm had no price
    assert display.spent(0.0123, 12) == "$0.0123"


def test_ids():
    assert display.ids(["a", "b"]) == "a, b"
    assert display.ids([f"t{i}" for i in range(10)], 3) == "t0, t1, t2 … and 7 more"


def test_sparkline_draws_scores_on_an_absolute_scale_and_a_dot_for_none():
    assert display.sparkline([]) == ""
    assert display.sparkline([0.0, 1.0]) == "▁█"  # the ends, whatever the other scores
    assert display.sparkline([i / 7 for i in range(8)]) == display.BLOCKS == "▁▂▃▄▅▆▇█"
    # not scaled to the run's own range: a run that stays at 0.5 is a flat middle line
    assert display.sparkline([0.5, 0.5]) == "▅▅"
    assert display.sparkline([0.0, 0.0, 2 / 3, None, None]) == "▁▁▆··"
    assert display.sparkline([None, float("nan")]) == "··"
    assert display.sparkline([None], missing=" ") == " "
    assert display.sparkline([-0.5, 1.5]) == "▁█"  # outside [0, 1]: the nearer end
