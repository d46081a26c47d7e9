"""Parsing the Codex quota feeds (`wham/usage` and the `x-codex-*` headers) into gauge
readings: the right windows and numbers, and nothing poisoned by bad input."""

from __future__ import annotations

import pytest

from sublane_desktop.providers.codex import LimitReading, QuotaObservation, QuotaWindow
from sublane_desktop.providers.codex_quota import (
    header_observations,
    usage_observations,
    usage_url,
)

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("https://chatgpt.com/backend-api/codex", "https://chatgpt.com/backend-api/wham/usage"),
        ("http://127.0.0.1:9/backend-api/codex/", "http://127.0.0.1:9/backend-api/wham/usage"),
        ("http://127.0.0.1:9/", "http://127.0.0.1:9/api/codex/usage"),
        ("http://127.0.0.1:9", "http://127.0.0.1:9/api/codex/usage"),
    ],
)
def test_the_usage_url_is_derived_as_codex_cli_does(base, url):
    assert usage_url(base) == url


def test_header_readings_become_five_hour_and_seven_day_gauges():
    quota = QuotaObservation(
        five_hour=QuotaWindow(0.25, 300, NOW + 600),
        seven_day=QuotaWindow(0.5, 10080, NOW + 86400),
        observed_at=NOW,
    )
    obs = {o.window: o for o in header_observations(quota)}
    assert set(obs) == {"five_hour", "seven_day"}
    assert obs["five_hour"].utilization == 0.25 and obs["five_hour"].resets_at == NOW + 600
    assert obs["seven_day"].utilization == 0.5 and obs["seven_day"].resets_at == NOW + 86400
    assert all(o.source == "headers" and o.observed_at == NOW for o in obs.values())
    assert not any(o.rejected for o in obs.values())


def test_a_missing_or_untrustworthy_header_window_is_skipped():
    quota = QuotaObservation(None, QuotaWindow(float("nan"), None, None), NOW)
    assert header_observations(quota) == []
    only_week = QuotaObservation(None, QuotaWindow(0.1, None, None), NOW)
    assert [o.window for o in header_observations(only_week)] == ["seven_day"]
    only_five = QuotaObservation(QuotaWindow(0.1, None, None), None, NOW)
    assert [o.window for o in header_observations(only_five)] == ["five_hour"]


FIVE, WEEK = 18000, 604800  # limit_window_seconds of the 5-hour and 7-day windows


def _usage(**limits):
    for key in ("primary_window", "secondary_window"):
        if isinstance(limits.get(key), dict):
            limits[key] = {"limit_window_seconds": FIVE if key[0] == "p" else WEEK, **limits[key]}
    return {"rate_limit": limits}


def test_usage_poll_reads_both_windows_as_fractions():
    body = _usage(
        allowed=True,
        limit_reached=False,
        primary_window={"used_percent": 40, "reset_at": NOW + 900},
        secondary_window={"used_percent": 7.5, "reset_after_seconds": 3600},
    )
    obs = {o.window: o for o in usage_observations(body, NOW)}
    assert obs["five_hour"].utilization == 0.4 and obs["five_hour"].resets_at == NOW + 900
    assert obs["seven_day"].utilization == 0.075 and obs["seven_day"].resets_at == NOW + 3600
    assert all(o.source == "poll" and o.observed_at == NOW for o in obs.values())
    assert not any(o.rejected for o in obs.values())


def test_a_zero_reset_after_counts_and_a_negative_one_is_unknown():
    body = _usage(
        primary_window={"used_percent": 0, "reset_after_seconds": 0},
        secondary_window={"used_percent": 1, "reset_after_seconds": -5},
    )
    obs = {o.window: o for o in usage_observations(body, NOW)}
    assert obs["five_hour"].utilization == 0.0 and obs["five_hour"].resets_at == NOW
    assert obs["seven_day"].resets_at is None


@pytest.mark.parametrize("denial", [{"allowed": False}, {"limit_reached": True}])
def test_a_denial_marks_both_windows_rejected(denial):
    body = _usage(
        primary_window={"used_percent": 100, "reset_at": NOW + 60},
        secondary_window={"used_percent": 30, "reset_at": NOW + 6000},
        **denial,
    )
    obs = usage_observations(body, NOW)
    assert len(obs) == 2 and all(o.rejected for o in obs)


@pytest.mark.parametrize(
    "body",
    [
        None,
        [],
        {"rate_limit": None},
        {"rate_limit": "full"},
        _usage(primary_window="busy", secondary_window=None),
        _usage(primary_window={"used_percent": -1}, secondary_window={"used_percent": "x"}),
        _usage(primary_window={"reset_at": NOW}),
        _usage(primary_window={"used_percent": 5000}),  # beyond any sane utilization
    ],
)
def test_usage_poll_garbage_gives_no_reading(body):
    assert usage_observations(body, NOW) == []


def test_one_bad_window_does_not_hide_the_other():
    body = _usage(primary_window={"used_percent": -3}, secondary_window={"used_percent": 20})
    assert [(o.window, o.utilization) for o in usage_observations(body, NOW)] == [
        ("seven_day", 0.2)
    ]
    body = _usage(primary_window={"used_percent": 20}, secondary_window="nope")
    assert [o.window for o in usage_observations(body, NOW)] == ["five_hour"]


def test_a_lone_week_window_is_the_seven_day_gauge_and_the_five_hour_reads_absent():
    """A plan without the 5-hour window reports its week as primary (R-WF-4)."""
    body = {
        "rate_limit": {
            "allowed": True,
            "primary_window": {
                "used_percent": 62,
                "limit_window_seconds": WEEK,
                "reset_at": NOW + 9,
            },
            "secondary_window": None,
        }
    }
    obs = {o.window: o for o in usage_observations(body, NOW)}
    assert obs["seven_day"].utilization == 0.62 and obs["seven_day"].resets_at == NOW + 9
    assert obs["five_hour"].absent and not obs["seven_day"].absent
    # without a length a window is nobody's: no gauge is guessed from its slot
    unnamed = {"rate_limit": {"primary_window": {"used_percent": 5}}}
    assert usage_observations(unnamed, NOW) == []


def test_additional_rate_limits_become_per_model_limit_gauges():
    body = {
        "rate_limit": {
            "primary_window": {"used_percent": 5, "limit_window_seconds": FIVE},
            "secondary_window": {"used_percent": 9, "limit_window_seconds": WEEK},
        },
        "additional_rate_limits": [
            {
                "limit_name": "GPT-5.3-Codex-Spark",
                "metered_feature": "codex_bengalfox",
                "rate_limit": {
                    "allowed": False,
                    "primary_window": {
                        "used_percent": 100,
                        "limit_window_seconds": FIVE,
                        "reset_at": NOW + 600,
                    },
                    "secondary_window": {"used_percent": 40, "limit_window_seconds": WEEK},
                },
            },
            {"limit_name": "Only A Name", "rate_limit": {"primary_window": {"used_percent": 3}}},
            {"limit_name": "broken", "rate_limit": "nope"},
            "junk",
        ],
    }
    obs = {o.window: o for o in usage_observations(body, NOW)}
    assert set(obs) == {"five_hour", "seven_day", "limit:codex_bengalfox", "limit:only_a_name"}
    spark = obs["limit:codex_bengalfox"]
    assert (spark.utilization, spark.resets_at, spark.rejected) == (1.0, NOW + 600, True)
    assert not obs["five_hour"].rejected  # the account's own windows are not the family's


def test_header_families_and_an_absent_five_hour_window_become_readings():
    quota = QuotaObservation(
        None,
        QuotaWindow(0.3, 10080, NOW + 60),
        NOW,
        families=(LimitReading("codex_bengalfox", (QuotaWindow(0.8, 300, NOW + 9),)),),
        five_hour_absent=True,
    )
    obs = {o.window: o for o in header_observations(quota)}
    assert obs["five_hour"].absent and obs["five_hour"].source == "headers"
    assert obs["limit:codex_bengalfox"].utilization == 0.8
    assert obs["seven_day"].utilization == 0.3
