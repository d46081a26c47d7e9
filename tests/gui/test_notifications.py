"""Desktop notifications: which state changes are news (a table), and the Notifier wiring."""

import time

import pytest
from gui_fakes import account

from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.notifications import Notifier, Rules, transitions
from sublane_desktop.service import SCHEDULER_SETTINGS

NOW = 1_800_000_000.0


def snap(**states):
    return [
        account(name, state, id=i) | ({"cooldown_until": NOW + 75} if state == "cooling" else {})
        for i, (name, state) in enumerate(states.items(), start=1)
    ]


@pytest.mark.parametrize(
    "before, after, expected",
    [
        # (old state, new state) -> kinds announced
        ("ok", "cooling", ["cooling"]),
        ("busy", "cooling", ["cooling"]),
        ("probing", "cooling", ["cooling"]),  # the recovery probe failed: cooling again
        ("ok", "quota_exhausted", ["exhausted"]),
        ("cooling", "quota_exhausted", ["exhausted"]),
        ("ok", "auth_failed", ["auth_failed"]),
        ("cooling", "probing", []),  # not recovered yet: waiting for its probe
        ("probing", "ok", ["recovered"]),
        ("cooling", "ok", ["recovered"]),
        ("quota_exhausted", "ok", ["recovered"]),
        ("quota_exhausted", "busy", ["recovered"]),
        ("auth_failed", "ok", ["recovered"]),
        ("ok", "busy", []),
        ("busy", "ok", []),
        ("ok", "paused", []),  # the person just did that
        ("paused", "ok", []),
        ("ok", "ok", []),
        ("ok", "disabled", []),
    ],
)
def test_transition_table(before, after, expected):
    notices = transitions(snap(work=before), snap(work=after))
    assert [n.kind for n in notices] == expected


def test_words():
    (cooling,) = transitions(snap(work="ok"), snap(work="cooling"))
    assert cooling.title == "work is cooling down"
    assert time.strftime("%H:%M:%S", time.localtime(NOW + 75)) in cooling.body
    (out,) = transitions(snap(work="ok"), snap(work="quota_exhausted"))
    assert out.title == "work ran out of quota"
    (back,) = transitions(snap(work="probing"), snap(work="ok"))
    assert back.title == "work recovered"


def test_first_snapshot_and_new_or_removed_accounts_say_nothing():
    assert transitions(None, snap(work="cooling")) == []
    assert transitions(snap(work="ok"), snap(work="ok", new="cooling")) == []
    assert transitions(snap(work="ok", gone="ok"), snap(work="ok")) == []


def test_several_accounts_at_once():
    notices = transitions(
        snap(a="ok", b="ok", c="cooling"), snap(a="cooling", b="quota_exhausted", c="probing")
    )
    assert [(n.account_id, n.kind) for n in notices] == [(1, "cooling"), (2, "exhausted")]


def test_notifier_shows_each_change_once(qtbot, service):
    shown = []
    service.set_accounts(snap(work="ok", home="ok"))
    bridge = Bridge(service)
    _notifier = Notifier(bridge, lambda title, body: shown.append(title))  # kept alive
    service.set_accounts(snap(work="cooling", home="ok"))
    qtbot.waitUntil(lambda: shown == ["work is cooling down"], timeout=1000)
    service.set_accounts(snap(work="probing", home="ok"))
    service.set_accounts(snap(work="ok", home="ok"))
    qtbot.waitUntil(lambda: shown[-1] == "work recovered", timeout=1000)
    service.set_accounts(snap(work="quota_exhausted", home="cooling"))
    # one message each, queued by the tray, not one bubble standing for both
    qtbot.waitUntil(lambda: len(shown) == 4, timeout=1000)
    assert shown[-2:] == ["work ran out of quota", "home is cooling down"]
    bridge.close()


# --- R-UI-13: thresholds, forecasts, resets, switches, once per window period -------------------

HOUR = 3600.0


def gauged(state="ok", five=None, resets=NOW + 2 * HOUR, forecast=None, name="work"):
    out = account(name, state, id=1)
    if five is not None:
        out["gauges"] = {
            "five_hour": {"utilization": five, "resets_at": resets, "cold": False, "stale": False}
        }
    if forecast is not None:
        out["forecast"] = {"five_hour": forecast}
    return [out]


def run(rules, snaps, settings=None, now=NOW, step=60.0):
    """Feed snapshots a minute apart on a fake clock; the kinds said at each step."""
    settings = {**SCHEDULER_SETTINGS, **(settings or {})}
    said, before = [], None
    for i, after in enumerate(snaps):
        said.append([n.kind for n in rules.notices(before, after, settings, now + i * step)])
        before = after
    return said


def test_a_window_crossing_80_and_95_is_said_once_each_per_period():
    said = run(
        Rules(),
        [gauged(five=v) for v in (0.5, 0.82, 0.78, 0.85, 0.96, 0.97)],
    )
    assert said == [[], ["crossing"], [], [], ["crossing"], []]


def test_the_next_period_says_it_again():
    rules = Rules()
    first = run(rules, [gauged(five=0.5), gauged(five=0.9)])
    later = run(
        rules,
        [gauged(five=0.1, resets=NOW + 7 * HOUR), gauged(five=0.85, resets=NOW + 7 * HOUR)],
        now=NOW + 2 * HOUR + 60,  # the first period has ended
    )
    assert first == [[], ["crossing"]] and later == [[], ["crossing"]]


def test_a_jump_past_both_thresholds_is_one_notice_with_the_higher():
    rules = Rules()
    before, after = gauged(five=0.5), gauged(five=0.97)
    settings = dict(SCHEDULER_SETTINGS)
    rules.notices(None, before, settings, NOW)
    (notice,) = rules.notices(before, after, settings, NOW + 60)
    assert notice.title.startswith("work: ") and "97" in notice.title
    assert "Past 95" in notice.body


def test_thresholds_are_settable_and_each_kind_switchable():
    snaps = [gauged(five=0.5), gauged(five=0.65), gauged(five=0.9)]
    assert run(Rules(), snaps, {"notify.thresholds": [0.6]}) == [[], ["crossing"], []]
    assert run(Rules(), snaps, {"notify.window_crossing": False}) == [[], [], []]
    cooling = [snap(work="ok"), snap(work="cooling")]
    assert run(Rules(), cooling, {"notify.cooldown": False}) == [[], []]
    assert run(Rules(), cooling) == [[], ["cooling"]]
    signin = [snap(work="ok"), snap(work="auth_failed")]
    assert run(Rules(), signin, {"notify.signin": False}) == [[], []]
    assert run(Rules(), signin) == [[], ["auth_failed"]]


def test_runs_out_before_its_reset_from_the_forecast():
    forecast = {"runs_out_at": NOW + 40 * 60, "resets_at": NOW + 2 * HOUR, "rate_per_hour": 0.3}
    snaps = [gauged(five=0.6), gauged(five=0.62, forecast=forecast)]
    snaps += [gauged(five=0.63), gauged(five=0.64, forecast=forecast)]
    rules = Rules()
    said = run(rules, snaps, {"notify.thresholds": [0.99]})
    assert said == [[], ["forecast"], [], []]  # the forecast coming back is not news again
    assert run(Rules(), snaps[:2], {"notify.forecast": False}) == [[], []]


def test_a_cooldown_flapping_within_the_window_is_said_once():
    snaps = [snap(work="ok"), snap(work="cooling"), snap(work="ok"), snap(work="cooling")]
    said = run(Rules(), snaps)
    assert said == [[], ["cooling"], ["recovered"], []]


def test_a_window_that_reset_while_requests_were_turned_away():
    rules = Rules()
    settings = dict(SCHEDULER_SETTINGS)
    full = gauged("quota_exhausted", five=1.0, resets=NOW + 600)
    rules.notices(None, full, settings, NOW)
    rules.refused("anthropic", NOW + 120)  # a request found no account
    fresh = gauged("ok", five=0.0, resets=NOW + 5 * HOUR + 600)
    kinds = [n.kind for n in rules.notices(full, fresh, settings, NOW + 660)]
    assert "reset" in kinds


def test_a_reset_nobody_waited_for_is_not_news():
    rules = Rules()
    settings = dict(SCHEDULER_SETTINGS)
    full = gauged("quota_exhausted", five=1.0, resets=NOW + 600)
    rules.notices(None, full, settings, NOW)
    fresh = gauged("ok", five=0.0, resets=NOW + 5 * HOUR + 600)
    assert "reset" not in [n.kind for n in rules.notices(full, fresh, settings, NOW + 660)]


async def test_a_real_refusal_then_the_reset_is_told_once(qtbot, live):
    """Through the real proxy: the only account is at 100 %, a request is turned away, the
    window resets on the service's fake clock, and the person hears it once."""
    from sublane_desktop.core.gauges import Observation

    service = live.service
    work = await live.add_account("work")
    key = await live.create_key()
    account = service.pool.accounts[work]
    start = live.clock.now()
    full = Observation("five_hour", 1.0, start + 600, start, "headers")
    assert await service.quota.publish(account, account.revision, [full])
    live.bridge.refresh_snapshot()
    shown = []
    _notifier = Notifier(live.bridge, lambda title, body: shown.append((title, body)))
    assert await live.message(key) != 200  # turned away: nothing can serve it
    live.clock.advance(660)
    fresh = Observation("five_hour", 0.02, start + 660 + 5 * HOUR, start + 660, "headers")
    assert await service.quota.publish(account, account.revision, [fresh])
    live.bridge.refresh_snapshot()
    qtbot.waitUntil(lambda: any("window reset" in title for title, _ in shown), timeout=2000)
    resets = [t for t, _ in shown if "window reset" in t]
    assert resets == ["work: 5h window reset"], shown
    live.bridge.refresh_snapshot()
    assert [t for t, _ in shown if "window reset" in t] == resets


def test_notify_settings_are_validated(tmp_path):
    from sublane_desktop.service.settings import validate_settings

    assert validate_settings({"notify.thresholds": [0.95, 0.8]}) == {
        "notify.thresholds": [0.8, 0.95]
    }
    for bad in ([], [0.8, 0.8], [1.2], ["80"], [0.1, 0.2, 0.3, 0.4]):
        with pytest.raises(ValueError, match=r"notify\.thresholds"):
            validate_settings({"notify.thresholds": bad})
    with pytest.raises(ValueError, match=r"notify\.forecast must be true or false"):
        validate_settings({"notify.forecast": "yes"})


def test_settings_dialog_switches_each_kind_and_saves_only_changes(qtbot, service):
    from sublane_desktop.gui.dialogs.settings import SettingsDialog

    bridge = Bridge(service)
    dialog = SettingsDialog(bridge)
    qtbot.addWidget(dialog)
    assert dialog.changes() == {}
    dialog.notify.switches["notify.forecast"].setChecked(False)
    dialog.notify.thresholds[0].setValue(70)
    assert dialog.changes() == {"notify.forecast": False, "notify.thresholds": [0.7, 0.95]}
    dialog.notify.switches["notify.window_crossing"].setChecked(False)
    assert not dialog.notify.thresholds[0].isEnabled()
    bridge.close()


def test_a_window_already_past_a_threshold_at_start_has_not_crossed_it():
    assert run(Rules(), [gauged(five=0.85), gauged(five=0.86), gauged(five=0.9)]) == [[], [], []]


def test_a_cooldown_says_what_holds_it_in_the_services_words():
    """R-OBS-3: a 429 that names a window is a limit, not "upstream errors"; pacing is not a
    spent quota."""

    def cooling(hold_words):
        after = snap(work="cooling")
        after[0]["hold"] = {"scope": "account", "words": hold_words, "until": NOW + 75}
        (notice,) = transitions(snap(work="ok"), after)
        return notice

    limit = cooling("Limit reached (5h), resets 14:05")
    assert limit.title == "work: limit reached"
    assert limit.body.startswith("Limit reached (5h), resets 14:05.")
    assert "Upstream errors" not in limit.body
    pacing = cooling("Cooling until 14:05 — upstream 429 (pacing)")
    assert pacing.title == "work is cooling down"
    assert "pacing" in pacing.body and "quota" not in pacing.body


# --- the words of each notice, and what is not news (mutation round, 2026-12-06) ---------------


def test_each_notice_says_what_happens_next():
    (out,) = transitions(snap(work="ok"), snap(work="quota_exhausted"))
    assert out.body == "New requests go to other accounts until its window resets."
    (back,) = transitions(snap(work="cooling"), snap(work="ok"))
    assert back.body == "It takes requests again."
    refused = snap(work="auth_failed")
    (login,) = transitions(snap(work="ok"), refused)
    assert (login.title, login.body) == (
        "work needs a new login",
        "Its login was refused; sign in again, or import its login again.",
    )
    refused[0]["auth_reason"] = "its login is no longer in the keyring"
    (gone,) = transitions(snap(work="ok"), refused)
    assert gone.body == "Its login is no longer in the keyring."
    cooling = snap(work="cooling")
    cooling[0]["cooldown_until"] = None
    (unknown,) = transitions(snap(work="ok"), cooling)
    assert unknown.body == "Upstream errors: new requests go to other accounts for a while."
    nameless = snap(work="quota_exhausted")
    del nameless[0]["name"]
    assert [n.title for n in transitions(snap(work="ok"), nameless)] == ["? ran out of quota"]


def test_an_unchanged_account_listed_first_hides_no_later_change():
    notices = transitions(snap(a="ok", b="ok"), snap(a="ok", b="cooling"))
    assert [(n.account_id, n.kind) for n in notices] == [(2, "cooling")]


@pytest.mark.parametrize("off", ["paused", "disabled"])
@pytest.mark.parametrize("held", ["cooling", "quota_exhausted"])
def test_resuming_or_enabling_into_a_hold_still_running_is_not_news(off, held):
    assert transitions(snap(work=off), snap(work=held)) == []


def test_a_cold_or_new_window_crosses_nothing():
    cold = gauged(five=0.9)
    cold[0]["gauges"]["five_hour"]["cold"] = True
    assert run(Rules(), [gauged(five=0.5), cold]) == [[], []]
    assert run(Rules(), [cold, gauged(five=0.9)]) == [[], []]  # no known reading before
    assert run(Rules(), [gauged(), gauged(five=0.9)]) == [[], []]  # the window just appeared


def test_a_crossing_says_when_its_window_resets_when_that_is_known():
    rules = Rules()
    settings = dict(SCHEDULER_SETTINGS)
    rules.notices(None, gauged(five=0.5), settings, NOW)
    (known,) = rules.notices(gauged(five=0.5), gauged(five=0.85), settings, NOW + 60)
    assert known.body == (
        f"Past 80%; resets at {time.strftime('%H:%M:%S', time.localtime(NOW + 2 * HOUR))}"
        " (in ~1h 59m)."
    )
    rules = Rules()
    rules.notices(None, gauged(five=0.5, resets=None), settings, NOW)
    (unknown,) = rules.notices(
        gauged(five=0.5, resets=None), gauged(five=0.85, resets=None), settings, NOW + 60
    )
    assert unknown.body == "Past 80%."


def reset_told(before: float, after: float, moved: float = 0.0) -> bool:
    """A window at its ceiling while a request was turned away, read again: is a reset told?"""
    rules = Rules()
    settings = dict(SCHEDULER_SETTINGS)
    full = gauged("quota_exhausted", five=before, resets=NOW + 600)
    rules.notices(None, full, settings, NOW)
    rules.refused("anthropic", NOW + 120)
    again = gauged("quota_exhausted", five=after, resets=NOW + 600 + moved)
    return "reset" in [n.kind for n in rules.notices(full, again, settings, NOW + 300)]


def test_a_reset_is_a_reading_that_fell_more_than_5_points_or_a_reset_time_that_moved_on():
    assert not reset_told(1.0, 1.0)
    assert not reset_told(1.0, 0.96)  # a wobble of the reading
    assert reset_told(1.0, 0.94)
    assert not reset_told(1.0, 1.0, moved=60)  # the same reset, read a little differently
    assert reset_told(1.0, 1.0, moved=61)  # a new period that is already spent again


def kinds_at(rules, before, after, now, settings=None):
    merged = {**SCHEDULER_SETTINGS, **(settings or {})}
    return [n.kind for n in rules.notices(before, after, merged, now)]


def test_a_window_at_its_ceiling_with_requests_turned_away_is_told_when_it_resets():
    """Full is at the account's ceiling (0.90 for 5h, exactly included) or in quota_exhausted,
    counted from the snapshot it became full in; a reading below the ceiling ends it."""
    for state, five in (("ok", 0.9), ("ok", 0.95), ("quota_exhausted", 0.5)):
        rules = Rules()
        rules.notices(None, gauged("ok", five=0.3), dict(SCHEDULER_SETTINGS), NOW)
        full = gauged(state, five=five)
        kinds_at(rules, gauged("ok", five=0.3), full, NOW + 60)  # crossing or ran out: said
        rules.refused("anthropic", NOW + 120)
        after = gauged("ok", five=0.1, resets=NOW + 7 * HOUR)
        assert "reset" in kinds_at(rules, full, after, NOW + 180), (state, five)
    rules = Rules()  # below its ceiling and serving: nobody was waiting for this window
    rules.notices(None, gauged("ok", five=0.6), dict(SCHEDULER_SETTINGS), NOW)
    rules.refused("anthropic", NOW + 60)
    after = gauged("ok", five=0.1, resets=NOW + 7 * HOUR)
    assert "reset" not in kinds_at(rules, gauged("ok", five=0.6), after, NOW + 120)


def test_a_window_that_left_its_ceiling_is_no_longer_waited_for():
    rules = Rules()
    full, eased = gauged("ok", five=0.95), gauged("ok", five=0.7)
    rules.notices(None, full, dict(SCHEDULER_SETTINGS), NOW)
    rules.notices(full, eased, dict(SCHEDULER_SETTINGS), NOW + 60)
    rules.refused("anthropic", NOW + 120)  # turned away for another reason
    after = gauged("ok", five=0.1, resets=NOW + 7 * HOUR)
    assert "reset" not in kinds_at(rules, eased, after, NOW + 180)


def test_the_reset_notice_says_requests_are_taken_again():
    rules = Rules()
    full = gauged("quota_exhausted", five=1.0, resets=NOW + 600)
    rules.notices(None, full, dict(SCHEDULER_SETTINGS), NOW)
    rules.refused("anthropic", NOW + 120)
    fresh = gauged("ok", five=0.0, resets=NOW + 5 * HOUR + 600)
    (reset,) = [
        n
        for n in rules.notices(full, fresh, dict(SCHEDULER_SETTINGS), NOW + 660)
        if n.kind == "reset"
    ]
    assert (reset.title, reset.body) == (
        "work: 5h window reset",
        "Requests were being turned away; it takes them again.",
    )


def test_a_forecast_notice_says_when_the_window_runs_out():
    forecast = {"runs_out_at": NOW + 40 * 60, "resets_at": NOW + 2 * HOUR, "rate_per_hour": 0.3}
    rules = Rules()
    rules.notices(None, gauged(five=0.6), dict(SCHEDULER_SETTINGS), NOW)
    (notice,) = rules.notices(
        gauged(five=0.6),
        gauged(five=0.62, forecast=forecast),
        {**SCHEDULER_SETTINGS, "notify.thresholds": [0.99]},
        NOW,
    )
    assert notice.title == "work: 5h runs out before its reset"
    assert notice.body.startswith("At this pace it runs out in ~40m; resets at ")


def test_a_threshold_is_crossed_by_reaching_it_not_by_leaving_it():
    assert run(Rules(), [gauged(five=0.5), gauged(five=0.8)]) == [[], ["crossing"]]
    assert run(Rules(), [gauged(five=0.8), gauged(five=0.85)]) == [[], []]


def test_a_nameless_account_s_window_and_a_cold_window_listed_first():
    rules = Rules()
    before, after = gauged(five=0.5), gauged(five=0.85)
    for snapshot in (before, after):
        del snapshot[0]["name"]
        cold = {"utilization": None, "resets_at": None, "cold": True, "stale": True}
        snapshot[0]["gauges"] = {"seven_day": cold, **snapshot[0]["gauges"]}
    rules.notices(None, before, dict(SCHEDULER_SETTINGS), NOW)
    (notice,) = rules.notices(before, after, dict(SCHEDULER_SETTINGS), NOW + 60)
    assert notice.title == "?: 5h at 85%"


def test_a_notice_switched_off_or_already_said_silences_no_other():
    rules = Rules()
    ok, cooling = gauged("ok", five=0.5), gauged("cooling", five=0.85)
    cooling[0]["cooldown_until"] = NOW + 75
    rules.notices(None, ok, dict(SCHEDULER_SETTINGS), NOW)
    off = {"notify.cooldown": False}
    assert kinds_at(rules, ok, cooling, NOW + 60, off) == ["crossing"]
    rules = Rules()
    flapping = [gauged("ok", five=0.5), gauged("cooling", five=0.5), gauged("ok", five=0.5)]
    flapping[1][0]["cooldown_until"] = NOW + 75
    run(rules, flapping)
    assert kinds_at(rules, flapping[2], cooling, NOW + 200) == ["crossing"]  # cooling: said


def test_a_new_cooldown_after_a_recovery_is_said_again():
    rules = Rules()
    first, second = snap(work="cooling"), snap(work="cooling")
    second[0]["cooldown_until"] = NOW + 900  # a later cooldown: a new episode
    assert run(rules, [snap(work="ok"), first, snap(work="ok"), second]) == [
        [],
        ["cooling"],
        ["recovered"],
        ["cooling"],
    ]


def test_a_fall_of_exactly_5_points_is_still_a_wobble():
    assert not reset_told(1.0, 0.95)


def full_then_reset_told(account_limits=None, window="five_hour", provider="anthropic", five=0.6):
    """An account at `five` of `window`, a request turned away, then the window read at 0.1."""
    settings = {**SCHEDULER_SETTINGS, "scheduler.account_limits": account_limits or {}}

    def at(value, resets):
        snapshot = gauged("ok", five=value, resets=resets)
        snapshot[0]["provider"] = provider
        snapshot[0]["gauges"] = {window: snapshot[0]["gauges"]["five_hour"]}
        return snapshot

    rules = Rules()
    full = at(five, NOW + 600)
    rules.notices(None, full, settings, NOW)
    rules.refused(provider, NOW + 120)
    after = at(0.1, NOW + 7 * HOUR)
    return "reset" in [n.kind for n in rules.notices(full, after, settings, NOW + 300)]


def test_an_account_s_own_ceiling_decides_when_its_window_is_full():
    assert not full_then_reset_told()  # 0.6 of a 0.90 ceiling: nobody waited for it
    assert full_then_reset_told({"work": {"five_hour_max": 0.5}})


def test_a_window_without_a_ceiling_setting_is_full_at_100_percent():
    assert full_then_reset_told(window="gemini_pro", provider="antigravity", five=1.0)
    assert not full_then_reset_told(window="gemini_pro", provider="antigravity", five=0.95)


def test_running_out_again_in_the_next_window_period_is_said_again():
    out = gauged("quota_exhausted", five=1.0, resets=NOW + 600)
    back = gauged("ok", five=0.0, resets=NOW + 5 * HOUR)
    again = gauged("quota_exhausted", five=1.0, resets=NOW + 5 * HOUR)
    rules = Rules()
    settings = dict(SCHEDULER_SETTINGS)
    rules.notices(None, gauged("ok", five=0.5, resets=NOW + 600), settings, NOW)
    assert "exhausted" in kinds_at(rules, gauged("ok", five=0.5), out, NOW + 60)
    kinds_at(rules, out, back, NOW + 660)  # the window reset at NOW + 600
    assert "exhausted" in kinds_at(rules, back, again, NOW + 720)


def test_the_notifier_shows_each_notice_s_title_and_body(qtbot, service):
    shown = []
    service.set_accounts(snap(work="ok"))
    bridge = Bridge(service)
    _notifier = Notifier(bridge, lambda title, body: shown.append((title, body)))  # kept alive
    service.set_accounts(snap(work="quota_exhausted"))
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=1000)
    assert shown == [
        ("work ran out of quota", "New requests go to other accounts until its window resets.")
    ]
    bridge.close()
