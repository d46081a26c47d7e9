"""Upstream phase timeouts read from settings per request (R-FT-1)."""

from __future__ import annotations

import pytest

from sublane_desktop.core.timeouts import CONNECT, DEFAULTS, HEADERS, IDLE, UpstreamTimeouts


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
