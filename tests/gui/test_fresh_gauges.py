"""R-UI-14 (issue 25 fault 8): gauges are fresh. Adding or enabling an account reads its quota at
once, not after the next request and the 5-minute poll floor; "stale" is judged against the poll
cadence in force, so a reading between two polls is not shown as stale; the menu's "Updated …
ago" ticks while it is open (test_tray_dashboard)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from sublane_desktop.gui.dashboard import account_row
from sublane_desktop.gui.tray import Tray


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def usage(live, percent_5h: float) -> dict:
    now = live.clock.now()
    return {
        "five_hour": {"utilization": percent_5h, "resets_at": iso(now + 3600)},
        "seven_day": {"utilization": 10.0, "resets_at": iso(now + 3 * 86400)},
    }


async def reads_done(live) -> None:
    await live.bridge.wait_idle()
    await asyncio.gather(*live.service.refresher._running.values())


def row(live, name: str):
    live.bridge.refresh_snapshot()
    [found] = [a for a in live.bridge.snapshot() if a["name"] == name]
    return account_row(found, live.service.settings, live.clock.now())


async def test_adding_an_account_reads_its_quota_at_once(qtbot, live):
    live.upstream.usage_for["*"] = usage(live, 37.0)
    secret = {"access_token": "tok-new", "refresh_token": "rt-new", "expires_at": 4_000_000_000}
    reply = live.bridge.add_account("anthropic", "new", secret)  # what Add account does
    await reply
    await reads_done(live)
    assert live.upstream.usage_reads == ["tok-new"]  # no request was sent through it
    assert row(live, "new").text == "● new — 5h 37% · 7d 10% · Fable —"


async def test_enabling_an_account_reads_its_quota_at_once(qtbot, live):
    await live.add_account("a", "tok-a")
    tray = Tray(live.bridge)
    tray.menu.aboutToShow.emit()  # opening the menu reads the cold gauges: let it finish
    await reads_done(live)
    live.upstream.usage_reads.clear()
    await live.service.disable("a")
    live.clock.advance(3600)
    live.upstream.usage_for["tok-a"] = usage(live, 55.0)
    assert live.upstream.usage_reads == []
    await live.bridge.set_enabled("a", True)
    await reads_done(live)
    assert live.upstream.usage_reads == ["tok-a"]
    assert row(live, "a").text == "● a — 5h 55% · 7d 10% · Fable —"


async def test_a_reading_between_two_polls_is_not_stale(qtbot, live):
    await live.add_account("a", "tok-a")
    live.upstream.usage_for["tok-a"] = usage(live, 40.0)
    live.bridge.refresh_quotas()
    await reads_done(live)
    assert not row(live, "a").windows[0].stale
    live.clock.advance(4 * 60)  # polls come every 5 minutes: 4 minutes on, it is current
    assert not row(live, "a").windows[0].stale
    assert "stale" not in row(live, "a").windows[0].text
    live.clock.advance(2 * 60 + 1)  # past the cadence and its grace: a poll was due
    assert row(live, "a").windows[0].stale
    # The cadence in force: with polls every 15 minutes, 10 minutes is current too.
    await live.bridge.update_settings({"quota.poll_floor_seconds": 900})
    assert not row(live, "a").windows[0].stale


async def test_opening_the_tray_menu_reads_gauges_gone_stale(qtbot, live):
    """Found by hand: with no traffic nothing read the quotas again, so an idle healthy
    account showed "· stale" on every bar and "Updated 13m ago" in the menu."""
    await live.add_account("a", "tok-a")
    live.upstream.usage_for["tok-a"] = usage(live, 40.0)
    live.bridge.refresh_quotas()
    await reads_done(live)
    tray = Tray(live.bridge)
    tray.menu.aboutToShow.emit()  # fresh: within the poll floor, nothing is read again
    await reads_done(live)
    assert live.upstream.usage_reads == ["tok-a"]
    live.clock.advance(20 * 60)  # an idle pool: no request went through for 20 minutes
    live.upstream.usage_for["tok-a"] = usage(live, 45.0)
    assert row(live, "a").windows[0].stale
    tray.menu.aboutToShow.emit()
    await reads_done(live)
    assert live.upstream.usage_reads == ["tok-a", "tok-a"]
    assert not row(live, "a").windows[0].stale
    assert row(live, "a").text.startswith("● a — 5h 45%")


async def test_unpausing_reads_the_bars_that_aged_while_paused(qtbot, live):
    """A paused account is not polled and serves nothing, so its bars age while it rests;
    the Accounts window's Unpause (the bridge's pause lever) reads them at once instead of
    leaving them "· stale" until traffic or the tray menu comes."""
    await live.add_account("a", "tok-a")
    live.upstream.usage_for["tok-a"] = usage(live, 40.0)
    live.bridge.refresh_quotas()
    await reads_done(live)
    await live.bridge.pause("a", True)
    live.clock.advance(30 * 60)
    assert row(live, "a").windows[0].stale
    live.upstream.usage_for["tok-a"] = usage(live, 45.0)
    await live.bridge.pause("a", False)
    await reads_done(live)
    assert live.upstream.usage_reads == ["tok-a", "tok-a"]
    assert not row(live, "a").windows[0].stale
    assert row(live, "a").text.startswith("● a — 5h 45%")
