"""The Requests window (R-UI-3) over a real service and store, on a fake clock."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QHeaderView, QScrollArea
from requests_fixtures import Desk
from requests_fixtures import desk_fixture as desk_fixture  # provides the `desk` fixture

from sublane_desktop.core.history import PAGE_SIZE
from sublane_desktop.gui.requests_model import OUTCOME_WORDS, Column, hit_rate
from sublane_desktop.gui.requests_window import RequestsWindow

WAIT_MS = 3000


def open_window(desk: Desk, *, show: bool = False) -> RequestsWindow:
    window = RequestsWindow(desk.bridge)
    desk.qtbot.addWidget(window)
    if show:
        window.show()
        desk.qtbot.waitExposed(window)
    settle(desk, window)
    return window


def settle(desk: Desk, window: RequestsWindow) -> None:
    """Wait until no page load is outstanding (loads are asyncio tasks on the qasync loop)."""
    desk.qtbot.waitUntil(lambda: not window._loading, timeout=WAIT_MS)


def act(desk: Desk, window: RequestsWindow, action) -> None:
    """Do something that loads a page, and wait for that page."""
    with desk.qtbot.waitSignal(window.pageLoaded, timeout=WAIT_MS):
        action()
    settle(desk, window)


def ids(window: RequestsWindow) -> list[str]:
    return window.model.request_ids()


def choose(desk: Desk, window: RequestsWindow, combo, value) -> None:
    desk.qtbot.waitUntil(lambda: combo.findData(value) >= 0, timeout=WAIT_MS)
    act(desk, window, lambda: combo.setCurrentIndex(combo.findData(value)))


# --- paging -----------------------------------------------------------------------------------


def test_pages_newest_first_with_next_and_previous(desk: Desk) -> None:
    made = desk.seed(64)
    newest_first = [r.request_id for r in reversed(made)]
    window = open_window(desk)

    assert ids(window) == newest_first[:PAGE_SIZE]
    assert window.on_first_page and window.next_cursor is not None
    assert window.next_button.isEnabled() and not window.previous_button.isEnabled()
    assert window.status.text().startswith("Page 1 · 1–50")

    act(desk, window, window.next_button.click)
    assert ids(window) == newest_first[PAGE_SIZE:]  # the 14 oldest
    assert window.page_number == 2 and window.next_cursor is None
    assert not window.next_button.isEnabled() and window.previous_button.isEnabled()
    assert window.status.text().startswith("Page 2 · 51–64")

    act(desk, window, window.previous_button.click)
    assert ids(window) == newest_first[:PAGE_SIZE]
    assert window.on_first_page and not window.previous_button.isEnabled()


def test_three_pages_keep_a_cursor_stack(desk: Desk) -> None:
    made = desk.seed(120, member_every=0)
    newest_first = [r.request_id for r in reversed(made)]
    window = open_window(desk)
    act(desk, window, window.next_page)
    act(desk, window, window.next_page)
    assert ids(window) == newest_first[100:]
    act(desk, window, window.previous_page)
    assert ids(window) == newest_first[50:100]
    act(desk, window, window.next_page)
    act(desk, window, window.newest_button.click)
    assert ids(window) == newest_first[:50] and window.on_first_page


# --- filters ----------------------------------------------------------------------------------


def test_outcome_model_key_and_request_id_filters_narrow_the_table(desk: Desk) -> None:
    made = desk.seed(70)
    window = open_window(desk)
    assert window.model.rowCount() == PAGE_SIZE

    choose(desk, window, window.outcome_filter, "error")
    errors = [r.request_id for r in reversed(made) if r.outcome == "error"]
    assert ids(window) == errors and 0 < len(errors) < PAGE_SIZE
    assert window.next_cursor is None

    choose(desk, window, window.model_filter, "claude-fable-5")
    assert ids(window) == [
        r.request_id for r in reversed(made) if r.outcome == "error" and r.model == "claude-fable-5"
    ]

    act(desk, window, window.clear_filters)
    assert window.model.rowCount() == PAGE_SIZE

    choose(desk, window, window.key_filter, desk.member_key_id)
    assert ids(window) == [r.request_id for r in reversed(made) if r.key_id == desk.member_key_id]

    act(desk, window, window.clear_filters)
    target = made[33].request_id
    window.request_id_filter.setText(target)
    act(desk, window, lambda: window.request_id_filter.returnPressed.emit())
    assert ids(window) == [target]


def test_outcomes_are_worded_for_a_person_in_cells_filter_and_details(desk: Desk) -> None:
    """Third newcomer pass: the column, the filter and request details said the stored ids
    ("success", "rejected") beside worded, capitalised states. The filter still filters on the
    stored id (its item data), which is what the API takes."""
    stored = ("success", "incomplete", "error", "canceled", "rejected")
    made = []
    for i, outcome in enumerate(stored):
        made.append(
            desk.record(i + 1, outcome=outcome, error_code=None if outcome == "success" else "x")
        )
        desk.service.record(made[-1])
    desk.run(desk.service.flush_records())
    window = open_window(desk, show=True)
    desk.qtbot.waitUntil(lambda: window.outcome_filter.count() == 1 + len(stored), timeout=WAIT_MS)

    words = {
        "success": "Served",
        "incomplete": "Cut short",
        "error": "Failed",
        "canceled": "Cancelled",
        "rejected": "Refused by the pool",
    }
    combo = window.outcome_filter
    offered = {combo.itemData(i): combo.itemText(i) for i in range(1, combo.count())}
    assert offered == words
    for row in range(window.model.rowCount()):
        record = window.model.record(row)
        first_line = window.model.index(row, Column.OUTCOME).data().split("\n")[0]
        assert first_line == words[record["outcome"]]

    choose(desk, window, combo, "rejected")  # the stored id still filters
    assert ids(window) == [made[-1].request_id]
    assert combo.currentText() == "Refused by the pool"
    window.open_details(0)
    desk.qtbot.waitUntil(lambda: window.details is not None, timeout=WAIT_MS)
    assert dict(window.details.rows())["Outcome"] == "Refused by the pool"


def test_admin_filters_and_my_requests_scope(desk: Desk) -> None:
    made = desk.seed(60)
    window = open_window(desk)
    assert not window.mine and window.user_filter.isVisibleTo(window)

    choose(desk, window, window.user_filter, desk.member_id)
    assert ids(window) == [r.request_id for r in reversed(made) if r.user_id == desk.member_id]

    act(desk, window, window.clear_filters)
    work = desk.account_ids[0]
    choose(desk, window, window.account_filter, work)
    assert ids(window) == [r.request_id for r in reversed(made) if r.account_id == work]
    assert {window.model.record(i)["account_name"] for i in range(window.model.rowCount())} == {
        "work"
    }

    act(desk, window, lambda: window.my_button.click())
    assert window.mine
    mine = [r.request_id for r in reversed(made) if r.user_id == 1]
    assert ids(window) == mine[:PAGE_SIZE]
    # The personal view blanks accounts (R-REC-6): no account filter, no account column.
    assert not window.account_filter.isVisibleTo(window)
    assert window.table.isColumnHidden(Column.ACCOUNT)
    assert all(window.model.record(i)["account_name"] == "" for i in range(len(mine)))
    desk.qtbot.waitUntil(
        lambda: (
            window.key_filter.findData(desk.member_key_id) < 0
            and window.key_filter.findData(desk.admin_key_id) > 0
        ),
        timeout=WAIT_MS,
    )

    act(desk, window, lambda: window.all_button.click())
    assert not window.mine and window.model.rowCount() == PAGE_SIZE
    assert not window.table.isColumnHidden(Column.ACCOUNT)


def test_time_range_filters_by_the_service_clock(desk: Desk) -> None:
    now = desk.clock.now()
    for i, age in enumerate((30, 200, 1200, 5000, 90_000)):
        desk.service.record(desk.record(i, started_at=now - age))
    desk.run(desk.service.flush_records())
    window = open_window(desk)
    assert window.model.rowCount() == 5

    act(
        desk,
        window,
        lambda: window.time_filter.setCurrentIndex(window.time_filter.findText("Last 15 minutes")),
    )
    assert window.model.rowCount() == 2
    act(
        desk,
        window,
        lambda: window.time_filter.setCurrentIndex(window.time_filter.findText("Last 24 hours")),
    )
    assert window.model.rowCount() == 4

    # A custom range: from inclusive, until exclusive.
    window.time_filter.setCurrentIndex(window.time_filter.findText("Custom range…"))
    settle(desk, window)
    assert window.from_edit.isVisibleTo(window)
    from PySide6.QtCore import QDateTime

    window.from_edit.setDateTime(QDateTime.fromSecsSinceEpoch(int(now - 6000)))
    window.until_edit.setDateTime(QDateTime.fromSecsSinceEpoch(int(now - 1000)))
    act(desk, window, window._apply_typed_now)
    assert sorted(window.model.record(i)["started_at"] for i in range(window.model.rowCount())) == [
        now - 5000,
        now - 1200,
    ]


def test_a_bad_filter_is_explained_not_raised(desk: Desk) -> None:
    desk.seed(3)
    window = open_window(desk)
    window.request_id_filter.setText("x" * 200)
    act(desk, window, lambda: window.request_id_filter.returnPressed.emit())
    assert "longer than" in window.status.text()


# --- details and copy -------------------------------------------------------------------------


def test_double_click_opens_details_with_the_full_id(desk: Desk) -> None:
    made = desk.seed(5)
    window = open_window(desk, show=True)
    newest = made[-1]
    cell = window.model.index(0, Column.MODEL)
    rect = window.table.visualRect(cell)
    # A double click is a press, a release and a double-click event on the same cell.
    desk.qtbot.mouseClick(window.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    desk.qtbot.mouseDClick(window.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    desk.qtbot.waitUntil(
        lambda: window.details is not None and window.details.isVisible(), timeout=WAIT_MS
    )
    dialog = window.details
    assert dialog.request_id.text() == newest.request_id
    shown = dict(dialog.rows())
    assert shown["Request ID"] == newest.request_id
    assert shown["Model"] == newest.model
    assert shown["Outcome"] == OUTCOME_WORDS[newest.outcome]
    assert shown["Input tokens"] == f"{newest.input_tokens:,}"
    assert shown["Cache-hit rate"] == hit_rate(window.model.record(0))
    assert shown["Client key"] == "laptop"
    assert shown["Account"] in ("work", "home")
    # Every stored field has a row.
    for label in (
        "Started",
        "Cause",
        "Provider status",
        "Duration",
        "First output",
        "Provider",
        "Protocol",
        "Operation",
        "Member",
        "Output tokens",
        "Cached tokens",
    ):
        assert label in shown
    # The table itself shows only the compact id.
    assert newest.request_id not in window.model.index(0, Column.STARTED).data()

    # Clicking another row's start time reuses the same dialog.
    started = window.model.index(2, Column.STARTED)
    desk.qtbot.mouseClick(
        window.table.viewport(),
        Qt.MouseButton.LeftButton,
        pos=window.table.visualRect(started).center(),
    )
    assert window.details is dialog and dialog.request_id.text() == made[-3].request_id

    QApplication.clipboard().clear()
    dialog.copy_button.click()
    assert QApplication.clipboard().text() == made[-3].request_id


def test_ctrl_c_copies_the_full_request_id(desk: Desk) -> None:
    made = desk.seed(4)
    window = open_window(desk, show=True)
    window.table.setFocus()
    window.table.selectRow(1)
    compact = window.model.index(1, Column.STARTED).data().splitlines()[1]
    assert compact.endswith("…") and len(compact) < len(made[-2].request_id)

    QApplication.clipboard().clear()
    desk.qtbot.keyClick(window.table, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert QApplication.clipboard().text() == made[-2].request_id

    # The context menu's copy action does the same for the row under the pointer.
    QApplication.clipboard().clear()
    cell = window.table.visualRect(window.model.index(3, Column.MODEL)).center()
    window.table.customContextMenuRequested.emit(cell)
    menu = window._row_menu
    actions = {a.text(): a for a in menu.actions()}
    assert set(actions) == {"Copy request ID", "Show details…"}
    actions["Copy request ID"].trigger()
    assert QApplication.clipboard().text() == made[-4].request_id
    menu.close()

    # Several selected rows: one full id a line.
    window.table.selectAll()
    assert window.copy_request_ids().splitlines() == [r.request_id for r in reversed(made)]
    assert QApplication.clipboard().text().splitlines()[0] == made[-1].request_id


# --- live updates -----------------------------------------------------------------------------


def test_a_new_record_appears_on_the_first_page(desk: Desk) -> None:
    desk.seed(60)
    window = open_window(desk, show=True)
    fresh = desk.record(
        1000,
        request_id="req_fresh00000000000000000001",
        outcome="rejected",
        error_code="account_busy",
        upstream_status=None,
        started_at=desk.clock.now(),
    )
    with desk.qtbot.waitSignal(desk.bridge.recordAdded, timeout=WAIT_MS):
        desk.service.record(fresh)  # through the real writer task and the bus
    # Within a second of being written (R-REC-4 / R-UI-3).
    desk.qtbot.waitUntil(lambda: ids(window)[:1] == [fresh.request_id], timeout=1000)
    assert window.model.rowCount() == PAGE_SIZE
    assert window.model.index(0, Column.OUTCOME).data() == "Refused by the pool\nall accounts busy"
    desk.qtbot.waitUntil(lambda: window.outcome_filter.findData("rejected") > 0, timeout=WAIT_MS)


def test_an_older_page_is_left_alone_when_records_arrive(desk: Desk) -> None:
    desk.seed(60)
    window = open_window(desk, show=True)
    act(desk, window, window.next_page)
    before = ids(window)
    with desk.qtbot.waitSignal(desk.bridge.recordAdded, timeout=WAIT_MS):
        desk.service.record(desk.record(2000, request_id="req_late0000000000000000000001"))
    desk.qtbot.waitUntil(lambda: "newer requests arrived" in window.status.text(), timeout=WAIT_MS)
    assert ids(window) == before and window.page_number == 2
    act(desk, window, window.newest_button.click)
    assert ids(window)[0] == "req_late0000000000000000000001"


def test_a_hidden_window_catches_up_when_shown(desk: Desk) -> None:
    desk.seed(3)
    window = open_window(desk)
    assert not window.isVisible()
    with desk.qtbot.waitSignal(desk.bridge.recordAdded, timeout=WAIT_MS):
        desk.service.record(desk.record(50, request_id="req_hidden000000000000000001"))
    assert "req_hidden000000000000000001" not in ids(window)
    window.show()
    desk.qtbot.waitUntil(
        lambda: ids(window)[:1] == ["req_hidden000000000000000001"], timeout=WAIT_MS
    )


def test_a_live_record_with_longer_words_widens_its_columns(desk: Desk) -> None:
    """Fault 6: a record that arrives while the window is open, with an error code or a miss
    cause longer than the page had, was elided ("upstream_un…", "⇄ account …")."""
    desk.seed(3)
    window = open_window(desk, show=True)
    fresh = desk.record(
        1000,
        request_id="req_fresh00000000000000000002",
        outcome="error",
        error_code="upstream_unreachable",
        upstream_status=None,
        cache_miss="account_switch",
        reread_tokens=48_213,
        started_at=desk.clock.now(),
    )
    with desk.qtbot.waitSignal(window.pageLoaded, timeout=WAIT_MS):
        desk.service.record(fresh)
    desk.qtbot.waitUntil(lambda: ids(window)[:1] == [fresh.request_id], timeout=WAIT_MS)
    assert window.model.index(0, Column.OUTCOME).data() == "Failed\nprovider unreachable"
    assert window.model.index(0, Column.CACHE_HIT).data().endswith("⇄ account switch")
    for column in (Column.OUTCOME, Column.CACHE_HIT):
        need = window.table.sizeHintForIndex(window.model.index(0, column)).width()
        assert window.table.columnWidth(column) >= need, column


def test_a_burst_of_records_is_one_reload_without_resizing_columns(desk: Desk) -> None:
    """Issue 14: GUI work per request must not reach the proxy's loop. However many records a
    burst writes, the window reads one page, and a live reload keeps the column widths."""
    desk.seed(10)
    window = open_window(desk, show=True)
    width = window.table.columnWidth(Column.ACCOUNT)
    window.table.setColumnWidth(Column.ACCOUNT, width + 37)  # a person widened it
    pages = []
    request_page = desk.bridge.request_page
    desk.bridge.request_page = lambda *a, **k: pages.append(1) or request_page(*a, **k)
    with desk.qtbot.waitSignal(window.pageLoaded, timeout=WAIT_MS):
        for _ in range(200):
            desk.bridge.recordAdded.emit({"count": 1})
    assert pages == [1]
    assert window.table.columnWidth(Column.ACCOUNT) == width + 37


def test_on_a_narrow_window_the_filters_wrap_and_model_names_stay_whole(desk: Desk) -> None:
    """A 1280×800 screen at 200 % gives 640 px: the filter row was 1042 px wide and scrolled
    sideways, and the stretched Model column cut its names ("claude-fab…"). Now the filters
    flow onto more rows and the table scrolls sideways instead of cutting."""
    from sublane_desktop.gui.requests_model import Column

    desk.seed(5)
    window = open_window(desk, show=True)
    window.resize(620, 400)
    desk.qtbot.waitUntil(lambda: window.width() == 620, timeout=WAIT_MS)
    body = window.findChild(QScrollArea, "window_body")
    assert body is not None
    desk.qtbot.waitUntil(lambda: not body.horizontalScrollBar().isVisible(), timeout=WAIT_MS)
    need = window.table.sizeHintForColumn(Column.MODEL)
    desk.qtbot.waitUntil(lambda: window.table.columnWidth(Column.MODEL) >= need, timeout=WAIT_MS)
    rows = {window.outcome_filter.mapTo(window, window.outcome_filter.rect().topLeft()).y()}
    rows.add(window.miss_filter.mapTo(window, window.miss_filter.rect().topLeft()).y())
    assert len(rows) == 2  # Outcome and Cache on different rows
    window.resize(1180, 680)  # room again: Model takes what is left
    desk.qtbot.waitUntil(
        lambda: (
            window.table.horizontalHeader().sectionResizeMode(Column.MODEL)
            == QHeaderView.ResizeMode.Stretch
        ),
        timeout=WAIT_MS,
    )
