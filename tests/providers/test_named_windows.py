"""R-OBS-3: which quota window a 429 names (then a quota hold until its reset), or none
(pacing). Anthropic's unified headers and Codex's `x-codex-*` headers and 429 body."""

from __future__ import annotations

import pytest

from sublane_desktop.core.cooldown import QuotaHit
from sublane_desktop.providers import anthropic_quota, codex

P = "anthropic-ratelimit-unified-"
NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("headers", "hit"),
    [
        ({}, None),  # nothing named: pacing
        ({P + "5h-status": "allowed", P + "7d-status": "allowed"}, None),
        (
            {P + "5h-status": "rejected", P + "5h-reset": "1800003600"},
            QuotaHit("five_hour", 1800003600),
        ),
        (
            {P + "7d-utilization": "1.02", P + "7d-reset": "1800090000"},
            QuotaHit("seven_day", 1800090000),
        ),
        # both spent: the later reset binds
        (
            {
                P + "5h-status": "rejected",
                P + "5h-reset": "1800003600",
                P + "7d-status": "rejected",
                P + "7d-reset": "1800090000",
            },
            QuotaHit("seven_day", 1800090000),
        ),
        # the account's windows come before the Fable bucket
        (
            {
                P + "7d_oi-status": "rejected",
                P + "5h-status": "rejected",
                P + "5h-reset": "1800003600",
            },
            QuotaHit("five_hour", 1800003600),
        ),
        (
            {P + "7d_oi-status": "rejected", P + "7d_oi-reset": "1800200000"},
            QuotaHit("fable", 1800200000),
        ),
        # only the claim names it; the reset is the unified one
        (
            {P + "representative-claim": "five_hour", P + "reset": "1800001000"},
            QuotaHit("five_hour", 1800001000),
        ),
        ({P + "representative-claim": "seven_day_overage_included"}, QuotaHit("fable", None)),
        # a claim on a response the upstream still allows names nothing
        ({P + "representative-claim": "five_hour", P + "status": "allowed"}, None),
        ({P + "representative-claim": "bogus"}, None),
    ],
)
def test_anthropic_429_names_its_window(headers, hit):
    assert anthropic_quota.named_window(headers) == hit


def codex_windows(five: float, week: float) -> dict[str, str]:
    return {
        "x-codex-primary-used-percent": str(five),
        "x-codex-primary-window-minutes": "300",
        "x-codex-primary-reset-at": "1800003600",
        "x-codex-secondary-used-percent": str(week),
        "x-codex-secondary-window-minutes": "10080",
        "x-codex-secondary-reset-at": "1800300000",
    }


def test_codex_429_names_the_window_at_100_percent():
    assert codex.named_window(codex_windows(100, 40), None, NOW) == QuotaHit(
        "five_hour", 1800003600
    )
    assert codex.named_window(codex_windows(30, 100), 50.0, NOW) == QuotaHit(
        "seven_day", 1800300000
    )


def test_codex_usage_limit_body_names_the_window_whose_reset_it_gives():
    assert codex.named_window(codex_windows(80, 40), 3600.0, NOW) == QuotaHit(
        "five_hour", NOW + 3600
    )


def test_codex_usage_limit_body_without_a_matching_window_is_still_quota():
    assert codex.named_window({}, 900.0, NOW) == QuotaHit(None, NOW + 900)


def test_codex_429_without_a_spent_window_or_limit_body_is_pacing():
    assert codex.named_window(codex_windows(80, 40), None, NOW) is None
    assert codex.named_window({}, None, NOW) is None
