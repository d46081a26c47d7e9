"""Parsing the Anthropic quota feeds: the right numbers, and nothing poisoned by bad input."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sublane_desktop.core.gauges import GaugeSet
from sublane_desktop.providers.anthropic_quota import (
    account_wide_rejection,
    header_observations,
    usage_observations,
    usage_url,
)

NOW = 1_800_000_000.0
P = "anthropic-ratelimit-unified-"


def test_headers_feed_three_gauges_as_fractions():
    headers = {
        P + "status": "allowed",
        P + "5h-utilization": "0.42",
        P + "5h-reset": str(NOW + 3600),
        P + "7d-utilization": "0.8",
        P + "7d-reset": str(NOW + 86400),
        P + "7d_oi-utilization": "0.97",
        P + "7d_oi-reset": str(NOW + 7200),
        P + "7d_oi-status": "allowed_warning",
    }
    obs = {o.window: o for o in header_observations(headers, NOW)}
    assert obs["five_hour"].utilization == 0.42 and obs["five_hour"].resets_at == NOW + 3600
    assert obs["seven_day"].utilization == 0.8
    assert obs["fable"].utilization == 0.97 and not obs["fable"].rejected
    assert all(o.source == "headers" and o.observed_at == NOW for o in obs.values())


def test_usage_poll_classic_and_limits_rows_percent_to_fraction():
    body = {
        "five_hour": {"utilization": 37.0, "resets_at": "2027-01-15T10:00:00Z"},
        "seven_day": {"utilization": 12, "resets_at": "2027-01-20T10:00:00+00:00"},
        "seven_day_opus": None,
        "limits": [
            {
                "kind": "weekly_scoped",
                "percent": 64,
                "severity": "normal",
                "resets_at": "2027-01-18T00:00:00Z",
                "is_active": True,
                "scope": {"model": {"display_name": "Fable"}},
            },
            {"kind": "weekly_scoped", "percent": 99, "scope": {"model": {"display_name": "Opus"}}},
        ],
    }
    obs = {o.window: o for o in usage_observations(body, NOW)}
    assert obs["five_hour"].utilization == 0.37
    assert obs["seven_day"].utilization == 0.12
    assert obs["fable"].utilization == 0.64
    assert obs["fable"].resets_at is not None


def test_fable_429_corroboration():
    assert not account_wide_rejection({P + "7d_oi-status": "rejected", P + "5h-status": "allowed"})
    assert account_wide_rejection({P + "5h-status": "rejected"})
    assert account_wide_rejection({P + "7d-utilization": "1.0"})
    assert not account_wide_rejection({P + "7d-utilization": "banana"})


def test_garbage_is_ignored():
    bad = {
        P + "5h-utilization": "NaN",
        P + "7d-utilization": "-1",
        P + "7d_oi-utilization": "",
        P + "5h-reset": "soon",
    }
    assert header_observations(bad, NOW) == []
    assert usage_observations({"five_hour": {"utilization": "lots"}, "limits": "nope"}, NOW) == []
    assert usage_observations(None, NOW) == []
    assert usage_observations({"limits": [None, 3, {"kind": None}]}, NOW) == []


def test_far_future_reset_is_dropped_not_trusted():
    obs = header_observations({P + "5h-utilization": "0.5", P + "5h-reset": "99999999999"}, NOW)
    assert obs[0].resets_at is None


header_values = st.one_of(
    st.text(max_size=12), st.floats(allow_nan=True).map(str), st.integers().map(str)
)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                P + f"{w}-{f}"
                for w in ("5h", "7d", "7d_oi")
                for f in ("utilization", "reset", "status")
            ]
        ),
        header_values,
    )
)
def test_no_header_combination_crashes_or_poisons_a_gauge(headers):
    gauges = GaugeSet()
    for obs in header_observations(headers, NOW):
        gauges.apply(obs)
    for window in ("five_hour", "seven_day", "fable"):
        g = gauges.get(window)
        if not g.cold:
            assert 0 <= g.utilization <= 10
            assert g.resets_at is None or g.resets_at <= NOW + 8 * 86400


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=8),
        lambda kids: (
            st.lists(kids, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "five_hour",
                        "seven_day",
                        "limits",
                        "kind",
                        "percent",
                        "utilization",
                        "resets_at",
                        "scope",
                        "model",
                        "display_name",
                    ]
                ),
                kids,
                max_size=5,
            )
        ),
        max_leaves=20,
    )
)
def test_no_usage_body_crashes(body):
    for obs in usage_observations(body, NOW):
        assert 0 <= obs.utilization <= 10


def test_header_windows_are_read_independently_and_the_status_loosely():
    headers = {
        P + "7d-utilization": "0.5",  # no 5h reading: the others are still read
        P + "7d-status": " Rejected ",
        P + "7d_oi-utilization": "0.2",
    }
    obs = {o.window: o for o in header_observations(headers, NOW)}
    assert set(obs) == {"seven_day", "fable"}
    assert obs["seven_day"].rejected and not obs["fable"].rejected


def test_the_usage_url_sits_under_the_accounts_base():
    assert usage_url("https://api.anthropic.com/") == "https://api.anthropic.com/api/oauth/usage"
    assert usage_url("https://gw.corp/BOX/") == "https://gw.corp/BOX/api/oauth/usage"


def test_usage_rows_in_every_spelling_and_at_the_edges():
    body = {
        "five_hour": {"utilization": 0, "resets_at": "2027-01-15T09:00:00Z"},
        "seven_day": {"utilization": 1000, "resets_at": 1_800_000_000},  # not ISO: no reset
        "limits": [
            "odd",
            {"kind": 7},
            {"kind": "weekly_scoped", "percent": 99, "scope": {"model": {"display_name": "Opus"}}},
            {"kind": "weekly_scoped", "percent": 50, "scope": "odd"},
            {
                "kind": "weekly_scoped",
                "percent": 5,
                "scope": {"model": {"display_name": " fable "}},
            },
            {"kind": "session", "percent": 20, "resets_at": "2027-01-15T10:00:00Z"},
            {"kind": "weekly_all", "percent": 30},
            {"kind": "monthly", "percent": 40},
        ],
    }
    obs = {o.window: o for o in usage_observations(body, NOW)}
    assert set(obs) == {"five_hour", "seven_day", "fable"}
    assert obs["five_hour"].utilization == 0.2  # the limits row is the newer spelling
    assert obs["five_hour"].resets_at == NOW + 7200
    assert obs["seven_day"].utilization == 0.3 and obs["fable"].utilization == 0.05
    assert all(o.source == "poll" and not o.rejected for o in obs.values())
    edges = {
        o.window: o
        for o in usage_observations({k: body[k] for k in ("five_hour", "seven_day")}, NOW)
    }
    assert edges["five_hour"].utilization == 0.0 and edges["five_hour"].resets_at == NOW + 3600
    assert edges["seven_day"].utilization == 10.0 and edges["seven_day"].resets_at is None
    assert usage_observations({"five_hour": {"utilization": 1000.5}}, NOW) == []
