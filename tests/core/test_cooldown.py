"""The cooldown ladder of R-POOL-7 at its edges."""

from __future__ import annotations

import pytest

from sublane_desktop.core.cooldown import cooldown_seconds


@pytest.mark.parametrize(
    ("streak", "seconds"), [(0, 15), (1, 15), (2, 30), (6, 480), (7, 900), (40, 900), (10_000, 900)]
)
def test_ladder_doubles_from_15_seconds_and_caps_at_15_minutes(streak, seconds):
    assert cooldown_seconds(streak) == seconds


def test_an_upstream_retry_after_wins_bounded_to_1_second_and_15_minutes():
    assert cooldown_seconds(5, 42) == 42
    assert cooldown_seconds(1, 0.5) == 1.0  # a sub-second mandate still wins, floored at 1 s
    assert cooldown_seconds(1, 86_400) == 900  # a bogus day-long header cannot bench for days


@pytest.mark.parametrize("nothing", [None, 0, -5])
def test_no_usable_retry_after_falls_back_to_the_ladder(nothing):
    assert cooldown_seconds(2, nothing) == 30
