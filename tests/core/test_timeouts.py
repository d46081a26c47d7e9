"""Upstream phase timeouts read from settings per request (R-FT-1)."""

from __future__ import annotations

import pytest

from sublane_desktop.core.timeouts import (
    CONNECT,
    DEFAULTS,
    HEADERS,
    IDLE,
    UpstreamTimeouts,
    validate,
)


def test_unset_timeouts_are_the_defaults():
    assert UpstreamTimeouts.from_settings({}) == UpstreamTimeouts(10.0, 120.0, 90.0)


def test_a_changed_setting_applies_to_the_next_request():
    settings: dict[str, object] = {}
    assert UpstreamTimeouts.from_settings(settings).headers == DEFAULTS[HEADERS]
    settings[HEADERS] = 30
    settings[IDLE] = 2.5
    assert UpstreamTimeouts.from_settings(settings) == UpstreamTimeouts(10.0, 30.0, 2.5)


@pytest.mark.parametrize("bad", [True, False, 0, -1, 3601, "10", None, [5], {"s": 5}])
def test_a_hand_edited_value_that_is_no_timeout_falls_back_to_the_default(bad):
    timeouts = UpstreamTimeouts.from_settings({CONNECT: bad, HEADERS: 7})
    assert timeouts == UpstreamTimeouts(DEFAULTS[CONNECT], 7.0, DEFAULTS[IDLE])


def test_true_and_one_are_not_the_same_setting():
    """The values are checked once and remembered; True (refused) must not answer for 1
    (one second) although the two compare equal."""
    assert UpstreamTimeouts.from_settings({CONNECT: True}).connect == DEFAULTS[CONNECT]
    assert UpstreamTimeouts.from_settings({CONNECT: 1}).connect == 1.0
    assert UpstreamTimeouts.from_settings({CONNECT: 1.0}).connect == 1.0
    assert UpstreamTimeouts.from_settings({CONNECT: True}).connect == DEFAULTS[CONNECT]


def test_a_value_that_cannot_be_remembered_is_still_checked():
    """An unhashable value (a hand-edited database) skips the memo, not the check."""
    assert UpstreamTimeouts.from_settings({CONNECT: [1], HEADERS: 7, IDLE: 9}) == (
        UpstreamTimeouts(DEFAULTS[CONNECT], 7.0, 9.0)
    )
    assert UpstreamTimeouts.from_settings({CONNECT: 5, HEADERS: 7, IDLE: [1]}) == (
        UpstreamTimeouts(5.0, 7.0, DEFAULTS[IDLE])
    )


def test_a_timeout_is_above_zero_and_at_most_an_hour_and_a_refusal_names_its_setting():
    assert validate(IDLE, 3600) == 3600.0
    for bad in (0, 3600.5):
        with pytest.raises(ValueError, match=r"^upstream\.idle_timeout_s must be a number"):
            validate(IDLE, bad)
