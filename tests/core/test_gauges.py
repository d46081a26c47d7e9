"""Quota gauges at their edges (R-GAUGE-1): what a reading means now, and what is untrusted."""

from __future__ import annotations

import math

import pytest

from sublane_desktop.core.gauges import (
    FRESH_SECONDS,
    MAX_RESET_AHEAD,
    Gauge,
    GaugeSet,
    Observation,
    clean_observation,
)

NOW = 1_800_000_000.0


def test_the_runtime_shape_of_a_gauge_uses_the_fixed_names():
    g = Gauge()
    assert g.to_json(NOW) == {
        "utilization": None,
        "resets_at": None,
        "observed_at": None,
        "cold": True,
        "stale": True,
    }
    g.apply(Observation("five_hour", 0.25, NOW + 60, NOW, "poll"))
    assert g.to_json(NOW + 1) == {
        "utilization": 0.25,
        "resets_at": NOW + 60,
        "observed_at": NOW,
        "cold": False,
        "stale": False,
    }
    assert set(GaugeSet().to_json(NOW)) == {"five_hour", "seven_day", "fable"}
    gs = GaugeSet()
    gs.apply(Observation("seven_day", 0.5, NOW + 10, NOW, "poll"))
    assert gs.to_json(NOW + 10)["seven_day"]["utilization"] == 0.0  # read at the time asked


def test_fresh_for_exactly_two_minutes():
    g = Gauge()
    g.apply(Observation("five_hour", 0.5, None, NOW, "headers"))
    assert not g.stale(NOW + FRESH_SECONDS)
    assert g.stale(NOW + FRESH_SECONDS + 0.001)
    assert g.fresh_until() == NOW + FRESH_SECONDS
    g.apply(Observation("five_hour", 0.5, NOW + 30, NOW, "headers"))
    assert g.fresh_until() == NOW + 30  # a reset shortens freshness
    assert g.stale(NOW + 30) and g.reading(NOW + 30) == 0.0  # reset reached: reads 0
    assert g.reading(NOW + 29) == 0.5
    assert Gauge().fresh_until() is None


def test_exhaustion_needs_fresh_data_and_100_percent_or_a_denial():
    g = Gauge()
    assert not g.exhausted(NOW)  # cold is unknown, not exhausted
    g.apply(Observation("seven_day", 0.999, None, NOW, "poll"))
    assert not g.exhausted(NOW)
    g.apply(Observation("seven_day", 1.0, None, NOW + 1, "poll"))
    assert g.exhausted(NOW + 1)
    assert not g.exhausted(NOW + 1 + FRESH_SECONDS + 1)  # stale: unknown again
    g.apply(Observation("seven_day", 0.2, None, NOW + 2, "headers", rejected=True))
    assert g.exhausted(NOW + 2)
    g.apply(Observation("seven_day", 0.2, None, NOW + 3, "headers"))
    assert not g.exhausted(NOW + 3)  # a newer allowed reading lifts the denial


def test_clear_makes_a_gauge_cold_and_forgets_a_denial():
    g = Gauge()
    g.apply(Observation("fable", 0.7, NOW + 99, NOW, "poll", rejected=True))
    g.clear()
    assert g.cold and g.utilization is None and g.resets_at is None and g.source is None
    assert not g.rejected


def test_same_instant_readings_replace_each_other_older_ones_do_not():
    g = Gauge()
    assert g.apply(Observation("five_hour", 0.1, None, NOW, "poll")) is True
    assert g.apply(Observation("five_hour", 0.3, None, NOW, "headers")) is True
    assert g.apply(Observation("five_hour", 0.9, None, NOW - 1, "poll")) is False
    assert g.utilization == 0.3 and g.source == "headers"


def test_any_stale_looks_at_the_windows_asked_for():
    gs = GaugeSet()
    for window in ("five_hour", "seven_day"):
        gs.apply(Observation(window, 0.1, None, NOW, "poll"))
    assert gs.any_stale(NOW)  # the Fable bucket is cold
    assert not gs.any_stale(NOW, ("five_hour", "seven_day"))


@pytest.mark.parametrize("util", [-0.01, 10.01, math.nan, math.inf, True, "0.5", None])
def test_untrusted_utilization_is_dropped(util):
    assert clean_observation("five_hour", util, None, NOW, "headers") is None


@pytest.mark.parametrize("util", [0, 0.0, 1.5, 10])
def test_plausible_utilization_is_kept_as_seen(util):
    obs = clean_observation("five_hour", util, None, NOW, "headers")
    assert obs == Observation("five_hour", float(util), None, NOW, "headers", False)


def test_window_names_and_resets_are_checked():
    assert clean_observation("monthly", 0.5, None, NOW, "poll") is None
    assert clean_observation("fable", 0.5, True, NOW, "poll") is None
    assert clean_observation("fable", 0.5, "soon", NOW, "poll") is None
    far = clean_observation("fable", 0.5, NOW + MAX_RESET_AHEAD + 1, NOW, "poll", rejected=True)
    assert far == Observation("fable", 0.5, None, NOW, "poll", True)  # far future: unknown
    assert clean_observation("fable", 0.5, math.inf, NOW, "poll").resets_at is None
    edge = clean_observation("fable", 0.5, NOW + MAX_RESET_AHEAD, NOW, "poll")
    assert edge.resets_at == NOW + MAX_RESET_AHEAD


def test_antigravity_accounts_show_model_family_windows():
    from sublane_desktop.core.gauges import FAMILY_WINDOWS, WINDOWS, windows_for

    assert windows_for("antigravity") == FAMILY_WINDOWS
    assert windows_for("anthropic") == WINDOWS and windows_for(None) == WINDOWS
