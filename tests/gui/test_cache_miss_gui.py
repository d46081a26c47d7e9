"""Cache misses in the Requests window (R-UI-3, R-CF-3): the marked cell, its tooltip in words,
the filter by cause, and the details, over a real service and store on a fake clock."""

from __future__ import annotations

from PySide6.QtCore import Qt
from requests_fixtures import Desk
from requests_fixtures import desk_fixture as desk_fixture  # provides the `desk` fixture
from test_requests_window import choose, open_window, settle

from sublane_desktop.gui.colours import on_base
from sublane_desktop.gui.requests_model import MISS_COLOR, Column

WAIT_MS = 3000


def seed_misses(desk: Desk) -> dict[str, str]:
    """A hit, a first turn, an account switch (work -> home) and an expiry; their request ids."""
    work, home = desk.account_ids
    turns = {
        "first": dict(
            cache_miss="first_turn",
            reread_tokens=0,
            account_id=work,
            cached_tokens=0,
            input_tokens=47_000,
        ),
        "hit": dict(
            cache_miss=None,
            reread_tokens=0,
            account_id=work,
            cached_tokens=47_000,
            input_tokens=48_500,
        ),
        "switch": dict(
            cache_miss="account_switch",
            reread_tokens=48_213,
            account_id=home,
            cached_tokens=0,
            input_tokens=49_000,
            previous_account_id=work,
            idle_seconds=40.2,
        ),
        "expired": dict(
            cache_miss="ttl_expired",
            reread_tokens=30_000,
            account_id=home,
            cached_tokens=0,
            input_tokens=31_000,
            previous_account_id=home,
            idle_seconds=420.0,
        ),
    }
    made = {}
    for i, (name, fields) in enumerate(turns.items()):
        record = desk.record(
            i + 1, outcome="success", error_code=None, upstream_status=200, **fields
        )
        desk.service.record(record)
        made[name] = record.request_id
    desk.run(desk.service.flush_records())
    return made


def row_of(window, request_id: str) -> int:
    return window.model.request_ids().index(request_id)


def test_the_cache_cell_marks_the_cause_and_says_why_in_words(desk: Desk) -> None:
    made = seed_misses(desk)
    window = open_window(desk)
    model = window.model

    def cell(name: str, role=Qt.ItemDataRole.DisplayRole):
        return model.data(model.index(row_of(window, made[name]), Column.CACHE_HIT), role)

    assert cell("switch") == "0%\n⇄ account switch"
    assert cell("expired") == "0%\n⏱ cache expired"
    assert cell("hit") == "97%"  # a hit carries no mark; the gauges' percent format
    assert cell("switch", Qt.ItemDataRole.ForegroundRole) == on_base(MISS_COLOR)  # readable
    assert cell("hit", Qt.ItemDataRole.ForegroundRole) is None
    assert cell("switch", Qt.ItemDataRole.ToolTipRole) == (
        "Moved from work to home 40 s after the previous turn: 48,213 tokens read again\n"
        "0 of 49,000 input tokens from the cache"
    )
    assert cell("expired", Qt.ItemDataRole.ToolTipRole).startswith(
        "The prompt cache expired: 7 min after the previous turn on home"
    )
    assert cell("hit", Qt.ItemDataRole.ToolTipRole) == (
        "47,000 of 48,500 input tokens from the cache"
    )


def test_filter_by_account_switch_shows_only_the_switched_turn(desk: Desk) -> None:
    made = seed_misses(desk)
    window = open_window(desk)
    assert len(window.model.request_ids()) == 4
    labels = [window.miss_filter.itemText(i) for i in range(window.miss_filter.count())]
    assert labels == [
        "All turns",
        "Any miss",
        "First turn",
        "Account switch",
        "Cache expired",
        "Prompt changed",  # "prefix" was jargon (third newcomer pass)
    ]
    choose(desk, window, window.miss_filter, "account_switch")
    assert window.model.request_ids() == [made["switch"]]
    assert window.query().cache_miss == "account_switch"
    choose(desk, window, window.miss_filter, "any")
    assert set(window.model.request_ids()) == {made["first"], made["switch"], made["expired"]}
    window.clear_filters()
    settle(desk, window)
    desk.qtbot.waitUntil(lambda: len(window.model.request_ids()) == 4, timeout=WAIT_MS)


def test_my_requests_explains_a_switch_without_naming_accounts(desk: Desk) -> None:
    made = seed_misses(desk)  # the admin's own records
    window = open_window(desk)
    window.set_mine(True)
    settle(desk, window)
    desk.qtbot.waitUntil(lambda: made["switch"] in window.model.request_ids(), timeout=WAIT_MS)
    model = window.model
    tip = model.data(
        model.index(row_of(window, made["switch"]), Column.CACHE_HIT), Qt.ItemDataRole.ToolTipRole
    )
    assert tip.startswith("Moved to another account 40 s after the previous turn")
    assert "work" not in tip and "home" not in tip


def test_request_details_explain_the_miss(desk: Desk) -> None:
    made = seed_misses(desk)
    window = open_window(desk)
    dialog = window.open_details(row_of(window, made["switch"]))
    rows = dict(dialog.rows())
    assert rows["Cache miss"] == (
        "Moved from work to home 40 s after the previous turn: 48,213 tokens read again"
    )
    assert rows["Read again"] == "48,213"  # one format for one number (fault 16)
    assert rows["Cache-hit rate"] == "0%"
    dialog = window.open_details(row_of(window, made["hit"]))
    assert dict(dialog.rows())["Cache miss"] == "No: the cache served this turn"


# --- today's re-reads: the Accounts window and the tray (R-CF-3) -----------------------------


def switch_record(desk: Desk, i: int, reread: int, *, started_at: float | None = None):
    work, home = desk.account_ids
    fields = dict(
        cache_miss="account_switch",
        reread_tokens=reread,
        account_id=home,
        previous_account_id=work,
        idle_seconds=30.0,
        cached_tokens=0,
        input_tokens=reread + 500,
        outcome="success",
        error_code=None,
        upstream_status=200,
    )
    if started_at is not None:
        fields["started_at"] = started_at
    record = desk.record(i, **fields)
    desk.service.record(record)
    return record


def test_the_accounts_window_shows_todays_rereads_per_cause(desk: Desk) -> None:
    from sublane_desktop.gui.accounts_window import AccountsWindow
    from sublane_desktop.gui.bridge import start_of_day

    today = start_of_day(desk.clock.now())
    # Whatever the local time zone, the seeded turns (the last hour) fall inside today.
    desk.clock.advance(max(0.0, today + 7200 - desk.clock.now()))
    seed_misses(desk)
    # Yesterday's switch is not today's cost.
    switch_record(desk, 90, 999_000, started_at=today - 60)
    desk.run(desk.service.flush_records())
    window = AccountsWindow(desk.bridge)
    desk.qtbot.addWidget(window)
    label = window.misses_label
    desk.qtbot.waitUntil(lambda: label.text() != "", timeout=WAIT_MS)
    assert label.text() == (
        "Prompt tokens read again, not from cache, today: 48k after switching accounts"
        " · 30k after the cache expired"
    )
    assert label.toolTip().splitlines()[0] == "home: 48k after switching accounts (1 request)"
    # A new miss arrives: the line follows without reopening the window.
    switch_record(desk, 95, 100_000, started_at=desk.clock.now())
    desk.run(desk.service.flush_records())
    desk.qtbot.waitUntil(lambda: "148k after switching accounts" in label.text(), timeout=WAIT_MS)


def test_the_tray_tooltip_warns_once_switching_cost_passes_the_threshold(desk: Desk) -> None:
    from sublane_desktop.core.miss_words import SWITCH_WARN_TOKENS
    from sublane_desktop.gui.tray import Tray

    now = desk.clock.now()
    switch_record(desk, 1, SWITCH_WARN_TOKENS, started_at=now)
    desk.run(desk.service.flush_records())
    tray = Tray(desk.bridge)
    desk.qtbot.waitUntil(lambda: desk.bridge.misses_today() is not None, timeout=WAIT_MS)
    assert "switching re-read" not in tray.icon.toolTip()  # exactly the threshold: quiet
    switch_record(desk, 2, 110_000, started_at=now)
    desk.run(desk.service.flush_records())
    desk.qtbot.waitUntil(lambda: "switching re-read" in tray.icon.toolTip(), timeout=WAIT_MS)
    assert tray.icon.toolTip().splitlines()[-1] == "switching re-read 310k tokens today"
    tray.hide()


def test_request_details_say_provider_protocol_and_operation_in_words() -> None:
    """Third newcomer pass: details showed the stored ids "anthropic", "anthropic",
    "messages"."""
    from sublane_desktop.gui.request_details import detail_rows

    rows = dict(
        detail_rows({"provider": "anthropic", "protocol": "anthropic", "operation": "messages"})
    )
    assert "Upstream status" not in rows and "Provider status" in rows
    assert (rows["Provider"], rows["Protocol"], rows["Operation"]) == (
        "Claude",
        "Anthropic Messages API",
        "Send a message",
    )
    codex = dict(
        detail_rows({"provider": "codex", "protocol": "openai-responses", "operation": "compact"})
    )
    assert (codex["Provider"], codex["Protocol"], codex["Operation"]) == (
        "Codex",
        "OpenAI Responses API",
        "Summarise the conversation",
    )
