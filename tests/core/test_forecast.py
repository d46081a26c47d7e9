"""R-UI-7: a forecast only when a window would run out before its reset."""

import pytest

from sublane_desktop.core.forecast import (
    MIN_SPAN_S,
    RESET_DROP,
    UsageTrail,
    approx_duration,
    burn_rate,
    current_period,
    forecast,
)

NOW = 1_800_000_000.0
MIN = 60.0
HOUR = 3600.0


def burn(per_hour: float, start: float, minutes: int = 30, step: int = 5):
    """Readings every `step` minutes up to NOW, rising `per_hour` an hour."""
    return [(NOW - m * MIN, start - per_hour * m / 60) for m in range(minutes, -1, -step)]


def test_runs_out_before_reset_gives_the_people_text():
    # 10 % an hour from 40 %: 6 h left at this pace -> but the window is at 88 % now
    points = burn(0.10, 0.8833333)
    result = forecast(points, resets_at=NOW + 2 * HOUR + 40 * MIN, now=NOW)
    assert result is not None
    assert result.text(NOW) == "runs out in ~1h 10m, resets in 2h 40m"
    assert abs(result.rate_per_hour - 0.10) < 1e-6


def test_no_forecast_when_the_reset_comes_first():
    points = burn(0.10, 0.50)
    assert forecast(points, resets_at=NOW + 2 * HOUR, now=NOW) is None
    assert forecast(points, resets_at=NOW + 6 * HOUR, now=NOW) is not None


def test_flat_or_falling_usage_has_no_forecast():
    assert forecast(burn(0.0, 0.5), NOW + HOUR, NOW) is None
    assert forecast(burn(-0.1, 0.5), NOW + HOUR, NOW) is None


def test_too_little_data_has_no_forecast():
    assert forecast([(NOW, 0.5)], NOW + HOUR, NOW) is None
    assert forecast([(NOW - 30, 0.4), (NOW, 0.5)], NOW + HOUR, NOW) is None
    assert burn_rate([]) is None


def test_only_the_last_hour_counts():
    # a steep burn two hours ago, flat since: no forecast
    old = [(NOW - 2 * HOUR - m * MIN, 0.1 + 0.01 * (60 - m)) for m in range(60, 0, -10)]
    flat = [(NOW - m * MIN, 0.7) for m in range(50, -1, -10)]
    assert forecast(old + flat, NOW + 3 * HOUR, NOW) is None


def test_readings_before_a_reset_do_not_count():
    before = [(NOW - 50 * MIN, 0.95), (NOW - 40 * MIN, 0.99)]
    after = [(NOW - 30 * MIN, 0.02), (NOW - 15 * MIN, 0.02), (NOW, 0.02)]
    assert current_period(before + after) == after
    assert forecast(before + after, NOW + 4 * HOUR, NOW) is None


def test_unknown_reset_still_warns_without_the_reset_part():
    result = forecast(burn(0.30, 0.70), None, NOW)
    assert result is not None and result.text(NOW) == "runs out in ~1h"


def test_full_window_has_no_forecast():
    assert forecast(burn(0.3, 1.0), NOW + HOUR, NOW) is None


def test_durations_read_like_people_write_them():
    assert approx_duration(20) == "1m"
    assert approx_duration(4 * MIN + 10) == "4m"
    assert approx_duration(HOUR + 10 * MIN) == "1h 10m"
    assert approx_duration(2 * HOUR) == "2h"
    assert approx_duration(51 * HOUR) == "2d 3h"


def test_trail_keeps_an_hour_and_ignores_late_readings():
    trail = UsageTrail()
    trail.add(1, "five_hour", NOW - 2 * HOUR, 0.1)
    trail.add(1, "five_hour", NOW - 10 * MIN, 0.4)
    trail.add(1, "five_hour", NOW, 0.5)
    trail.add(1, "five_hour", NOW - MIN, 0.9)  # late and older: the freshest already won
    assert trail.points(1, "five_hour") == [(NOW - 10 * MIN, 0.4), (NOW, 0.5)]
    trail.forget(1)
    assert trail.points(1, "five_hour") == []


def test_trail_keeps_a_reading_a_minute_while_utilization_holds():
    """A busy account's readings come every 0.1 s; an hour of them kept whole was 36,000
    points per window (bench_soak: serve's RSS grew ~1.3 MB per 5,000 requests)."""
    trail = UsageTrail()
    for tenth in range(600):  # a minute of readings, the same utilization
        trail.add(1, "five_hour", NOW + tenth / 10, 0.40 + 0.001 * (tenth % 3))
    assert trail.points(1, "five_hour") == [(NOW, 0.40)]
    trail.add(1, "five_hour", NOW + 61, 0.402)  # a minute on: kept
    trail.add(1, "five_hour", NOW + 62, 0.413)  # moved by a point: kept at once
    trail.add(1, "five_hour", NOW + 63, 0.416)
    assert trail.points(1, "five_hour") == [(NOW, 0.40), (NOW + 61, 0.402), (NOW + 62, 0.413)]
    trail.add(1, "five_hour", NOW + 62, 0.5)  # the same moment again: the newer reading wins
    assert trail.points(1, "five_hour")[-1] == (NOW + 62, 0.5)


def test_the_period_starts_after_a_real_drop_only():
    steady = [(0.0, 0.1), (60.0, 0.2)]
    assert current_period(steady) == steady  # no reset: the first reading counts
    noise = [(0.0, 0.5), (60.0, 0.5 - RESET_DROP)]
    assert current_period(noise) == noise  # a drop of exactly the noise bound is no reset
    assert current_period([(0.0, 0.5), (60.0, 0.1), (120.0, 0.2)]) == [(60.0, 0.1), (120.0, 0.2)]


def test_the_burn_rate_needs_its_span_end_to_end():
    assert burn_rate([(0.0, 0.1), (MIN_SPAN_S, 0.2)]) == pytest.approx(0.1 / MIN_SPAN_S)
    assert burn_rate([(0.0, 0.1), (100.0, 0.2), (200.0, 0.3)]) == pytest.approx(0.001)


def test_a_reading_exactly_an_hour_old_still_counts():
    now = 10_000.0
    assert forecast([(now - 3600, 0.0), (now, 0.5)], None, now) is not None


def test_running_out_the_moment_it_resets_is_no_danger():
    now = 10_000.0
    points = [(now - 3600, 0.0), (now, 0.5)]
    at = forecast(points, None, now).runs_out_at
    assert forecast(points, at, now) is None
    assert forecast(points, at + 1, now) is not None


def test_a_whole_day_reads_as_days():
    assert approx_duration(86_400) == "1d"
    assert approx_duration(86_400 - 60) == "23h 59m"
