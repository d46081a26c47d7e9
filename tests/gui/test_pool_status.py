import pytest
from gui_fakes import account

from sublane_desktop.gui.pool_status import (
    PoolHealth,
    Tone,
    account_line,
    badges,
    ceilings_for,
    countdown,
    gauge_caption,
    gauge_windows,
    has_cooldown,
    pool_health,
    short_time,
    tightest_gauge,
    tooltip_text,
)
from sublane_desktop.service import SCHEDULER_SETTINGS

NOW = 1_800_000_000.0


def gauge(utilization, *, resets_in=None, stale=False, cold=False):
    if cold:
        return {
            "utilization": None,
            "resets_at": None,
            "observed_at": None,
            "cold": True,
            "stale": True,
        }
    return {
        "utilization": utilization,
        "resets_at": None if resets_in is None else NOW + resets_in,
        "observed_at": NOW - 10,
        "cold": False,
        "stale": stale,
    }


def test_all_ready_is_ok():
    assert pool_health([account("a", "ok"), account("b", "busy")]) is PoolHealth.OK


def test_some_unavailable_is_warn():
    for state in ("cooling", "quota_exhausted", "probing", "auth_failed"):
        assert pool_health([account("a", "ok"), account("b", state)]) is PoolHealth.WARN, state


def test_a_pause_the_user_chose_is_not_a_warning():
    assert pool_health([account("a", "ok"), account("b", "paused")]) is PoolHealth.OK
    assert pool_health([account("b", "paused")]) is PoolHealth.DOWN  # nothing serves, though


def test_nothing_servable_or_empty_is_down():
    assert pool_health([]) is PoolHealth.DOWN
    assert (
        pool_health([account("a", "cooling"), account("b", "quota_exhausted")]) is PoolHealth.DOWN
    )
    assert pool_health([account("a", "disabled")]) is PoolHealth.DOWN


def test_probing_alone_still_serves():
    assert pool_health([account("a", "probing")]) is PoolHealth.WARN


def test_disabled_account_does_not_degrade_health():
    assert pool_health([account("a", "ok"), account("b", "disabled")]) is PoolHealth.OK


@pytest.mark.parametrize(
    "seconds, text",
    [
        (-5, "now"),
        (0, "now"),
        (0.2, "1s"),
        (45, "45s"),
        (252, "4m 12s"),
        (3599, "59m 59s"),
        (3600, "1h 00m"),
        (8040, "2h 14m"),
        (86400, "1d 0h"),
        (100800, "1d 4h"),
    ],
)
def test_countdown(seconds, text):
    assert countdown(seconds) == text


def test_badges_cooling_shows_until_and_countdown():
    a = account("home", "cooling") | {"cooldown_until": NOW + 75, "failure_streak": 1}
    ((text, tone),) = badges(a, NOW)
    assert text == f"Cooling until {short_time(NOW + 75, NOW)} · 1m 15s" and tone is Tone.WARN
    assert has_cooldown(a)


@pytest.mark.parametrize(
    "state, text, tone",
    [
        ("ok", "Ready", Tone.OK),
        ("busy", "Busy", Tone.INFO),
        ("probing", "Testing with the next request", Tone.WARN),
        ("quota_exhausted", "Limit reached", Tone.BAD),
        ("paused", "Paused", Tone.MUTED),
        ("auth_failed", "Sign in again", Tone.BAD),
        ("disabled", "Disabled", Tone.MUTED),
    ],
)
def test_state_badges(state, text, tone):
    assert badges(account("a", state), NOW) == [(text, tone)]
    assert not has_cooldown(account("a", state))


def test_a_probe_in_flight_reads_probing():
    assert badges(account("a", "probing") | {"in_flight": 1}, NOW) == [
        ("Testing with a request now", Tone.WARN)
    ]


def test_pinned_badge_only_while_the_pin_holds():
    a = account("a") | {"pinned_until": NOW + 290}
    assert badges(a, NOW) == [("Ready", Tone.OK), ("Pinned · 4m 50s", Tone.INFO)]
    assert badges(a, NOW + 290) == [("Ready", Tone.OK)]


def test_gauge_caption():
    assert gauge_caption(gauge(0, cold=True), NOW) == "no data yet"
    assert gauge_caption(None, NOW) == "no data yet"
    assert gauge_caption(gauge(0.372, resets_in=8040), NOW) == "37% · resets in 2h 14m"
    assert gauge_caption(gauge(0.0), NOW) == "0%"  # observed zero is not unknown
    assert (
        gauge_caption(gauge(0.5, resets_in=60, stale=True), NOW) == "50% · resets in 1m 00s · stale"
    )


def test_ceilings_follow_settings_and_per_account_overrides():
    settings = dict(SCHEDULER_SETTINGS)
    assert ceilings_for(settings, "work") == {"five_hour": 0.9, "seven_day": 0.99, "fable": 0.98}
    settings["scheduler.five_hour_max"] = 0.8
    settings["scheduler.account_limits"] = {"work": {"fable_weekly_max": 0.5}}
    assert ceilings_for(settings, "work") == {"five_hour": 0.8, "seven_day": 0.99, "fable": 0.5}
    assert ceilings_for(settings, "home")["fable"] == 0.98


def test_fable_gauge_only_for_claude_accounts():
    assert gauge_windows("anthropic") == ("five_hour", "seven_day", "fable")
    assert gauge_windows("codex") == ("five_hour", "seven_day")


def test_windows_follow_what_the_account_has():
    assert gauge_windows(account("k") | {"kind": "api_key"}) == ()
    ag = account("ag") | {
        "provider": "antigravity",
        "gauges": {
            "claude": gauge(0.2),
            "gemini_pro": gauge(0.1),
            "gemini_flash": gauge(0, cold=True),
        },
    }
    assert gauge_windows(ag) == ("claude", "gemini_pro", "gemini_flash")
    assert gauge_windows(account("c") | {"provider": "codex"}) == ("five_hour", "seven_day")


def test_tightest_gauge_is_least_headroom_below_its_ceiling():
    work = account("work", current=True) | {
        "gauges": {
            "five_hour": gauge(0.85, resets_in=3600),
            "seven_day": gauge(0.5),
            "fable": gauge(0.1),
        }
    }
    home = account("home", id=2) | {
        "gauges": {
            "five_hour": gauge(0.2),
            "seven_day": gauge(0.97, resets_in=86400 * 2),
            "fable": gauge(0, cold=True),
        }
    }
    # work 5h: 0.90 - 0.85 = 0.05 headroom; home 7d: 0.99 - 0.97 = 0.02
    acc, window, _ = tightest_gauge([work, home], SCHEDULER_SETTINGS)
    assert (acc["name"], window) == ("home", "seven_day")
    off = home | {"state": "disabled"}
    acc, window, _ = tightest_gauge([work, off], SCHEDULER_SETTINGS)
    assert (acc["name"], window) == ("work", "five_hour")
    assert tightest_gauge([account("cold")], SCHEDULER_SETTINGS) is None


def test_lines_and_tooltip():
    accounts = [account("work", "quota_exhausted", current=True), account("home", "ok", id=2)]
    assert account_line(accounts[0]) == "work — Limit reached"
    tip = tooltip_text("http://127.0.0.1:8765", accounts)
    assert tip.splitlines() == [
        "SubLane — http://127.0.0.1:8765",
        "work: Limit reached",
        "Current: work",
    ]


def test_tooltip_with_fable_current_and_tightest_gauge():
    work = account("work", current=True) | {"gauges": {"five_hour": gauge(0.4, resets_in=600)}}
    home = account("home", id=2) | {"fable_current": True}
    tip = tooltip_text("http://127.0.0.1:8765", [work, home], SCHEDULER_SETTINGS, NOW)
    assert tip.splitlines() == [
        "SubLane — http://127.0.0.1:8765",
        "Current: work",
        "Current for Fable: home",
        "Closest to its limit: work 5h 40% · resets in 10m 00s",
    ]
    assert tooltip_text("u", [], SCHEDULER_SETTINGS, NOW).splitlines() == [
        "SubLane — u",
        "No accounts yet — open SubLane to add one",
    ]


# --- R-UI-6: the tooltip says why the icon is not green -----------------------------------------


def test_tooltip_says_why_for_each_health_state():
    url = "http://127.0.0.1:8765"
    ok = [account("work", "ok", current=True), account("home", "busy", id=2)]
    assert tooltip_text(url, ok, SCHEDULER_SETTINGS, NOW).splitlines() == [
        f"SubLane — {url}",
        "Current: work",
    ]

    cooling = account("home", "cooling", id=2) | {"cooldown_until": NOW + 252}
    tip = tooltip_text(url, [ok[0], cooling], SCHEDULER_SETTINGS, NOW).splitlines()
    assert tip[1] == f"home: Cooling until {short_time(NOW + 252, NOW)} · 4m 12s"

    probing = account("home", "probing", id=2)
    assert (
        tooltip_text(url, [ok[0], probing], SCHEDULER_SETTINGS, NOW).splitlines()[1]
        == "home: Testing with the next request"
    )
    assert (
        tooltip_text(
            url, [ok[0], probing | {"in_flight": 1}], SCHEDULER_SETTINGS, NOW
        ).splitlines()[1]
        == "home: Testing with a request now"
    )

    failed = account("home", "auth_failed", id=2) | {
        "auth_reason": "the credential cannot be read from the keyring"
    }
    assert (
        tooltip_text(url, [ok[0], failed], SCHEDULER_SETTINGS, NOW).splitlines()[1]
        == "home: Sign in again — the credential cannot be read from the keyring"
    )

    spent = account("work", "quota_exhausted") | {
        "gauges": {"five_hour": gauge(1.0, resets_in=3600), "seven_day": gauge(0.4)}
    }
    tip = tooltip_text(url, [spent], SCHEDULER_SETTINGS, NOW).splitlines()
    assert tip[1:3] == [
        "No account can serve a request now",
        f"work: Limit reached (5h), resets {short_time(NOW + 3600, NOW)}",
    ]
    assert tip[3] == "No current account yet (the next request picks one)"

    paused = account("home", "paused", id=2)
    assert (
        tooltip_text(url, [ok[0], paused], SCHEDULER_SETTINGS, NOW).splitlines()[1]
        == "home: Paused"
    )
