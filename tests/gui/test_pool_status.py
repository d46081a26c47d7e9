from gui_fakes import account

from sublane_desktop.gui.pool_status import PoolHealth, account_line, pool_health, tooltip_text


def test_all_ready_is_ok():
    assert pool_health([account("a", "ok"), account("b", "busy")]) is PoolHealth.OK


def test_some_unavailable_is_warn():
    for state in ("cooling", "paused", "quota_exhausted", "probing", "auth_failed"):
        assert pool_health([account("a", "ok"), account("b", state)]) is PoolHealth.WARN, state


def test_nothing_servable_or_empty_is_down():
    assert pool_health([]) is PoolHealth.DOWN
    assert pool_health([account("a", "cooling"), account("b", "quota_exhausted")]) is PoolHealth.DOWN
    assert pool_health([account("a", "disabled")]) is PoolHealth.DOWN


def test_probing_alone_still_serves():
    assert pool_health([account("a", "probing")]) is PoolHealth.WARN


def test_disabled_account_does_not_degrade_health():
    assert pool_health([account("a", "ok"), account("b", "disabled")]) is PoolHealth.OK


def test_lines_and_tooltip():
    accounts = [account("work", "quota_exhausted", current=True), account("home", "ok", id=2)]
    assert account_line(accounts[0]) == "work — quota exhausted"
    tip = tooltip_text("http://127.0.0.1:8765", accounts)
    assert tip.splitlines() == ["SubLane — http://127.0.0.1:8765", "Current: work"]
