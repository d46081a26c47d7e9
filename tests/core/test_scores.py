"""The lane scores of R-LANE-3 and R-LANE-5, number by number."""

from __future__ import annotations

import pytest

from sublane_desktop.core.gauges import GaugeSet, Observation
from sublane_desktop.core.scheduler import (
    WEEK,
    Ceilings,
    fable_score,
    fable_urgency,
    headroom,
    main_ramp,
    main_score,
)

NOW = 1_800_000_000.0
H = 3600.0


def gauges(five=None, week=None, fable=None, week_reset=None, fable_reset=None, ago=0.0):
    g = GaugeSet()
    for window, util, reset in (
        ("five_hour", five, None),
        ("seven_day", week, week_reset),
        ("fable", fable, fable_reset),
    ):
        if util is not None:
            g.apply(
                Observation(
                    window, util, NOW + reset if reset is not None else None, NOW - ago, "poll"
                )
            )
    return g


def test_urgency_is_a_week_over_the_time_to_reset_within_1_and_100():
    assert fable_urgency(gauges(), NOW) == 1.0  # cold
    assert fable_urgency(gauges(fable=0.2), NOW) == 1.0  # no reset known
    assert fable_urgency(gauges(fable=0.2, fable_reset=WEEK / 2), NOW) == 2.0
    assert fable_urgency(gauges(fable=0.2, fable_reset=WEEK / 4), NOW) == 4.0
    assert fable_urgency(gauges(fable=0.2, fable_reset=0.4), NOW) == 100.0
    assert fable_urgency(gauges(fable=0.2, fable_reset=10), NOW + 10) == 1.0  # reset reached


def test_main_ramp_runs_from_1x_to_4x_over_the_week():
    assert main_ramp(gauges(), NOW) == 1.0
    assert main_ramp(gauges(week=0.2), NOW) == 1.0
    assert main_ramp(gauges(week=0.2, week_reset=WEEK), NOW) == 1.0
    assert main_ramp(gauges(week=0.2, week_reset=WEEK / 2), NOW) == 2.5
    assert main_ramp(gauges(week=0.2, week_reset=WEEK / 3), NOW) == pytest.approx(3.0)
    assert main_ramp(gauges(week=0.2, week_reset=2 * WEEK), NOW) == 1.0  # never below 1x
    assert main_ramp(gauges(week=0.2, week_reset=10), NOW + 10) == 1.0  # reset reached


def test_headroom_is_ceiling_minus_use_and_never_negative():
    assert headroom(0.9, 0.5) == pytest.approx(0.4)
    assert headroom(0.9, 0.95) == 0.0


@pytest.mark.parametrize(
    ("five", "week", "fable", "servable"),
    [
        (0.5, 0.2, 0.1, 0.4),  # the 5h window is the tightest
        (0.1, 0.7, 0.2, 0.29),  # the 7d window is
        (0.1, 0.2, 0.9, 0.08),  # the Fable bucket is
        (None, None, None, 0.9),  # cold windows count as unused
    ],
)
def test_fable_score_is_the_tightest_headroom_times_urgency(five, week, fable, servable):
    g = gauges(five, week, fable, fable_reset=WEEK / 2 if fable is not None else None)
    urgency = 2.0 if fable is not None else 1.0
    assert fable_score(g, Ceilings(), NOW) == pytest.approx(servable * urgency)


@pytest.mark.parametrize(
    ("five", "week", "servable"),
    [(0.5, 0.2, 0.4), (0.1, 0.7, 0.29), (0.95, 0.1, 0.0), (None, None, 0.9)],
)
def test_main_score_is_the_tighter_headroom_times_the_ramp(five, week, servable):
    g = gauges(five, week, 0.99, week_reset=WEEK / 2 if week is not None else None)
    ramp = 2.5 if week is not None else 1.0
    assert main_score(g, Ceilings(), NOW) == pytest.approx(servable * ramp)


def test_scores_use_the_accounts_own_ceilings():
    g = gauges(0.5, 0.5, 0.5)
    mine = Ceilings().merged({"five_hour_max": 0.7, "seven_day_max": 0.8, "fable_weekly_max": 0.6})
    assert main_score(g, mine, NOW) == pytest.approx(0.2)
    assert fable_score(g, mine, NOW) == pytest.approx(0.1)


def test_an_override_changes_only_the_ceiling_it_names():
    base = Ceilings()
    assert base.merged(None) is base and base.merged({}) is base
    assert base.merged({"seven_day_max": 0.5}) == Ceilings(0.90, 0.5, 0.98)
    assert base.merged({"five_hour_max": 0.5}) == Ceilings(0.5, 0.99, 0.98)
    assert base.merged({"fable_weekly_max": 0.5}) == Ceilings(0.90, 0.99, 0.5)
