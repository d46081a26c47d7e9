"""R-OBS-2 as the tray shows it: the account of a manual pin a restart kept is
"current for Claude" from the start, before any request (the pin is where new
requests go); the views used to say so only after the next request."""

from __future__ import annotations

from sublane_desktop.core.clock import FakeClock
from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.tray import Tray
from sublane_desktop.service import Service
from tests.conftest import Harness


def texts(menu) -> list[str]:
    return [a.text() for a in menu.actions()]


async def test_a_pin_kept_across_a_restart_shows_current_in_the_tray_at_once(
    qtbot, tmp_path, upstream, secret_store
):
    clock = FakeClock()

    def service() -> Service:
        return Service(
            tmp_path / "data",
            port=0,
            clock=clock,
            secret_store=secret_store,
            env={
                "SUBLANE_ANTHROPIC_BASE_URL": upstream.url,
                "SUBLANE_OAUTH_BASE_URL": upstream.url,
            },
        )

    upstream.usage_for["*"] = 429  # no readings: the rows show the pin and the mark only
    first = service()
    await first.start()
    try:
        h = Harness(first, upstream)
        await h.add_account("a", "tok-a")
        await h.add_account("b", "tok-b")
        await first.levers.switch("b")
    finally:
        await first.stop(drain_timeout=2)
    clock.advance(120)

    again = service()
    await again.start()
    bridge = Bridge(again)
    try:
        tray = Tray(bridge, requests_available=False)
        tray.menu.aboutToShow.emit()
        rows = texts(tray.menu)[:2]
        assert rows[0].startswith("● a — ") and "current" not in rows[0]
        assert rows[1].startswith("● b [current for Claude and Fable]"), rows
        assert "Current: b" in tray.icon.toolTip().splitlines()
    finally:
        await bridge.wait_idle()
        bridge.close()
        await again.stop(drain_timeout=2)
