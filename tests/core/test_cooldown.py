"""The cooldown ladder of R-POOL-7 at its edges."""

from __future__ import annotations

import math
import re

import pytest

from sublane_desktop.core.cooldown import (
    ERROR,
    MAX_QUOTA_HOLD,
    PACING,
    QUOTA,
    Evidence,
    QuotaHit,
    clock_minutes,
    cooldown_seconds,
    hold_words,
    quota_hold_until,
)

NOW = 1_800_000_000.0
H = 3600.0


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


# --- what holds an account, in the words a person reads (R-OBS-3) ----------------------------


def test_a_quota_429_holds_until_its_named_reset_up_to_eight_days_ahead():
    assert quota_hold_until(QuotaHit("seven_day", NOW + MAX_QUOTA_HOLD), NOW, 1) == (
        NOW + MAX_QUOTA_HOLD
    )
    # a reset now or further than a week and a day is no evidence: the ladder holds instead
    for resets_at in (NOW, NOW + MAX_QUOTA_HOLD + 1):
        assert quota_hold_until(QuotaHit("seven_day", resets_at), NOW, 1) == NOW + 15


def test_a_quota_429_that_named_no_reset_waits_its_retry_after():
    assert quota_hold_until(QuotaHit("five_hour", None), NOW, 1, retry_after=120) == NOW + 120


def test_a_reset_within_the_day_reads_as_a_time_and_a_later_one_with_its_weekday():
    within, later = clock_minutes(NOW + 20 * H - 1, NOW), clock_minutes(NOW + 20 * H, NOW)
    assert re.fullmatch(r"\d\d:\d\d", within), within
    assert re.fullmatch(r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d\d:\d\d", later), later


@pytest.mark.parametrize(
    ("window", "label"),
    [
        ("five_hour", "5h"),
        ("seven_day", "7d"),
        ("fable", "Fable"),
        ("claude", "Claude"),
        ("gemini_pro", "Gemini Pro"),
        ("limit:gpt-5.1-codex-max", "gpt-5.1-codex-max"),  # a Codex per-model limit, by its id
    ],
)
def test_a_quota_hold_names_its_window_as_the_gauges_do(window, label):
    until = NOW + 2 * H
    words = hold_words(Evidence(QUOTA, window, NOW, until), "account", until, NOW)
    assert words == f"Limit reached ({label}), resets {clock_minutes(until, NOW)}"


def test_a_quota_hold_says_resets_only_at_the_reset_the_upstream_named():
    until = NOW + 2 * H
    at = clock_minutes(until, NOW)
    told = Evidence(QUOTA, "five_hour", NOW, until + 0.5)  # the same instant, to the second
    assert hold_words(told, "account", until, NOW) == f"Limit reached (5h), resets {at}"
    for off in (1.0, 1.5, 60.0):  # the hold ends elsewhere: the ladder's recheck
        other = Evidence(QUOTA, "five_hour", NOW, until + off)
        assert hold_words(other, "account", until, NOW) == f"Limit reached (5h), rechecking at {at}"


def test_a_ladder_hold_without_evidence_reads_as_an_upstream_error():
    until = NOW + 30
    at = clock_minutes(until, NOW)
    assert hold_words(None, "account", until, NOW) == f"Cooling until {at} — upstream error"
    pacing = Evidence(PACING, None, NOW)
    assert hold_words(pacing, "fable", until, NOW) == (
        f"Fable cooling until {at} — upstream 429 (pacing)"
    )


def test_stored_evidence_reads_back_as_written():
    for evidence in (
        Evidence(QUOTA, "seven_day", NOW, NOW + 20 * H),
        Evidence(PACING, None, NOW),
        Evidence(ERROR, None, 0),
    ):
        assert Evidence.from_json(evidence.to_json()) == evidence


@pytest.mark.parametrize(
    "damaged",
    [
        {"window": 5},
        {"since": True},
        {"since": math.nan},
        {"since": "yesterday"},
        {"resets_at": "soon"},
        {"resets_at": math.inf},
        {"resets_at": False},
    ],
)
def test_stored_evidence_that_cannot_be_read_is_left_out(damaged):
    """A damaged row must leave the hold as plain pacing, never a crash or a nonsense time."""
    good = {"kind": QUOTA, "window": "five_hour", "since": NOW, "resets_at": NOW + H}
    assert Evidence.from_json(good) is not None
    assert Evidence.from_json(good | damaged) is None
