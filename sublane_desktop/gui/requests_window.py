"""The Requests window (R-UI-3): request records with filters, cursor paging and live updates.

Everything comes from the history API through the bridge (`request_page` / `request_filters`,
the same `RequestLog.page` / `.filters` the `/api/requests` routes call), so the window can show
nothing the API would not. Queries are built and validated by `core.history.parse_query`, like
the routes and `sublane requests` do.

The desktop user is the administrator: "All requests" is the administrator view (member and
account filters), "My requests" the personal one (owner = the administrator user; accounts are
blanked there, so that column is hidden).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import shiboken6
from PySide6.QtCore import (
    QDateTime,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QRect,
    QSize,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QColor,
    QFont,
    QFontMetrics,
    QGuiApplication,
    QHideEvent,
    QKeyEvent,
    QKeySequence,
    QPainter,
    QPalette,
    QResizeEvent,
    QShowEvent,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QButtonGroup,
    QComboBox,
    QDateTimeEdit,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from sublane_desktop.core.cache_miss import CAUSES
from sublane_desktop.core.history import (
    ANY_MISS,
    PAGE_SIZE,
    HistoryQuery,
    InvalidQuery,
    parse_query,
)
from sublane_desktop.core.miss_words import LABELS
from sublane_desktop.gui.colours import link_text, on_base
from sublane_desktop.gui.flow_layout import FlowLayout
from sublane_desktop.gui.request_details import RequestDetailsDialog
from sublane_desktop.gui.requests_model import (
    OUTCOME_TIPS,
    OUTCOME_WORDS,
    Column,
    RequestsModel,
    outcome_words,
)
from sublane_desktop.gui.sizing import scroll_when_small, set_default_size

log = logging.getLogger(__name__)

LIVE_DELAY_MS = 600  # at most ~1.5 reloads a second under load; inside the one-second promise
LIVE_FILTERS_EVERY_S = 10.0  # new filter choices under live traffic (a full history scan)
TYPING_DELAY_MS = 400  # request id and custom times apply once typing pauses
ANY = None
CUSTOM = "custom"
TIME_PRESETS: list[tuple[str, Any]] = [
    ("Any time", ANY),
    ("Last 15 minutes", 15 * 60),
    ("Last hour", 3600),
    ("Last 24 hours", 86_400),
    ("Custom range…", CUSTOM),
]
# The cache filter (R-CF-3): every miss, or one cause, worded as the cells word them.
MISS_CHOICES: list[tuple[str, str]] = [("Any miss", ANY_MISS)] + [
    (LABELS[cause].capitalize(), cause) for cause in CAUSES
]


class TwoLineDelegate(QStyledItemDelegate):
    """A main line and a smaller second line (start time over request id, outcome over code).

    `link` draws the second line in the palette's link colour: the start-time cell opens the
    details, and this is how it says so.
    """

    def __init__(
        self, parent: QWidget | None = None, *, link: bool = False, monospace_second: bool = False
    ) -> None:
        super().__init__(parent)
        self._link = link
        self._monospace = monospace_second
        # Fonts and metrics for the last font seen: every visible cell asks on every repaint,
        # and the live table repaints on the loop the proxy shares.
        self._fonts_for: str | None = None
        self._fonts: tuple[QFontMetrics, QFont, QFontMetrics] | None = None

    def _metrics(self, font: QFont) -> tuple[QFontMetrics, QFont, QFontMetrics]:
        """(the main line's metrics, the second line's font, its metrics) for `font`."""
        key = font.key()
        if self._fonts is None or key != self._fonts_for:
            small = self._second_font(font)
            self._fonts = (QFontMetrics(font), small, QFontMetrics(small))
            self._fonts_for = key
        return self._fonts

    def _second_font(self, font: QFont) -> QFont:
        small = QFont(font)
        if self._monospace:
            small.setFamily("monospace")
            small.setStyleHint(QFont.StyleHint.Monospace)
        small.setPointSizeF(max(6.0, font.pointSizeF() * 0.86))
        return small

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionViewItem,
        index: QModelIndex | QPersistentModelIndex,
    ) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        first, second = _lines(index)
        opt.text = ""
        widget = opt.widget
        style = widget.style() if widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)
        # The cell less the style's text margin (the text sub-rect is sized for one empty line).
        margin = _text_margin(widget)
        rect = opt.rect.adjusted(margin, 0, -margin, 0)
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        group = opt.palette.currentColorGroup()
        text_color = opt.palette.color(
            group, QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        )
        foreground = index.data(Qt.ItemDataRole.ForegroundRole)
        if isinstance(foreground, QColor) and not selected:
            text_color = on_base(foreground, opt.palette)
        if selected:
            second_color = text_color
        elif self._link:
            second_color = link_text(opt.palette)
        else:
            second_color = on_base(
                opt.palette.color(group, QPalette.ColorRole.PlaceholderText), opt.palette
            )

        big, small_font, small = self._metrics(opt.font)
        height = big.height() + (small.height() if second else 0)
        top = rect.top() + max(0, (rect.height() - height) // 2)
        painter.save()
        painter.setFont(opt.font)
        painter.setPen(text_color)
        flags = int(
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter | Qt.TextFlag.TextDontClip
        )  # an underscore sits below the line box
        painter.drawText(
            QRect(rect.left(), top, rect.width(), big.height()),
            flags,
            big.elidedText(first, Qt.TextElideMode.ElideRight, rect.width()),
        )
        if second:
            painter.setFont(small_font)
            painter.setPen(second_color)
            painter.drawText(
                QRect(rect.left(), top + big.height(), rect.width(), small.height()),
                flags,
                small.elidedText(second, Qt.TextElideMode.ElideRight, rect.width()),
            )
        painter.restore()

    def sizeHint(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        first, second = _lines(index)
        big, _, small = self._metrics(opt.font)
        width = (
            max(big.horizontalAdvance(first), small.horizontalAdvance(second))
            + 2 * _text_margin(opt.widget)
            + 2
        )
        return QSize(width, big.height() + small.height() + 8)


def _text_margin(widget: QWidget | None) -> int:
    style = widget.style() if widget is not None else QApplication.style()
    return style.pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, widget) + 3


def _lines(index: QModelIndex | QPersistentModelIndex) -> tuple[str, str]:
    # From the model, not the style option: Qt turns "\n" into U+2028 in option.text.
    first, _, second = str(index.data(Qt.ItemDataRole.DisplayRole) or "").partition("\n")
    return first, second


def fit_model_column(table: QTableView) -> None:
    """The Model column takes what the others leave, but never less than its names need: on a
    narrow window (a small screen at 200 %) it stretched down to "claude-fab…"; there the table
    scrolls sideways instead."""
    header = table.horizontalHeader()
    model = table.model()
    if model is None or model.columnCount() <= Column.MODEL:
        return
    need = max(table.sizeHintForColumn(Column.MODEL), header.sectionSizeHint(Column.MODEL), 0)
    others = sum(table.columnWidth(c) for c in range(model.columnCount()) if c != Column.MODEL)
    room = table.viewport().width() - others
    mode = QHeaderView.ResizeMode.Stretch if room >= need else QHeaderView.ResizeMode.Interactive
    if header.sectionResizeMode(Column.MODEL) != mode:
        header.setSectionResizeMode(Column.MODEL, mode)
    if mode is QHeaderView.ResizeMode.Interactive and table.columnWidth(Column.MODEL) < need:
        table.setColumnWidth(Column.MODEL, need)


class RequestsTable(QTableView):
    """The table; Ctrl+C copies full request ids, Enter opens the details."""

    copyRequested = Signal()
    detailsRequested = Signal(QModelIndex)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        fit_model_column(self)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.matches(QKeySequence.StandardKey.Copy):
            self.copyRequested.emit()
            event.accept()
            return
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.currentIndex().isValid():
            self.detailsRequested.emit(self.currentIndex())
            event.accept()
            return
        super().keyPressEvent(event)


class RequestsWindow(QWidget):
    pageLoaded = Signal()  # a page (or the reason it could not load) is on screen
    filtersLoaded = Signal()  # filter choices were refreshed

    def __init__(self, bridge: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._mine = False
        self._cursor: int | None = None  # the shown page's cursor (None: the newest page)
        self._stack: list[int | None] = []  # cursors of the newer pages, for Previous
        self._next_cursor: int | None = None
        self._generation = 0  # answers to superseded requests are dropped
        self._filters_generation = 0
        self._loading = False
        self._stale = False  # records arrived while hidden
        self._newer_waiting = False  # records arrived while on an older page
        self._problem: str | None = None
        self._choices: dict[str, Any] = {}
        self.details: RequestDetailsDialog | None = None
        self._row_menu: QMenu | None = None

        self.setWindowTitle("SubLane — Requests")
        self._set_icon()
        self._build()
        scroll_when_small(self)
        set_default_size(self, 1180, 680)

        self._live_load = False
        self._filters_read_at = 0.0
        self._live_timer = QTimer(self, singleShot=True, interval=LIVE_DELAY_MS)
        self._live_timer.timeout.connect(self._live_reload)
        self._typing_timer = QTimer(self, singleShot=True, interval=TYPING_DELAY_MS)
        self._typing_timer.timeout.connect(self.first_page)
        bridge.recordAdded.connect(self._on_records_added)

        self.reload_filters()
        self.reload()

    # --- layout -----------------------------------------------------------------------------

    def _set_icon(self) -> None:
        try:
            from sublane_desktop.gui.icons import app_icon

            self.setWindowIcon(app_icon())
        except FileNotFoundError:  # a checkout without resources still works
            pass

    def _build(self) -> None:
        self.my_button = QPushButton("My requests")
        self.all_button = QPushButton("All requests")
        self.scope_group = QButtonGroup(self)
        for button in (self.my_button, self.all_button):
            button.setCheckable(True)
            self.scope_group.addButton(button)
        self.all_button.setChecked(True)
        self.my_button.setToolTip("Requests made with your own client keys")
        self.all_button.setToolTip("Every member's requests (administrator view)")
        self.my_button.toggled.connect(lambda on: self.set_mine(on))

        self.request_id_filter = QLineEdit()
        self.request_id_filter.setPlaceholderText("Request ID (req_…)")
        self.request_id_filter.setClearButtonEnabled(True)
        self.request_id_filter.setAccessibleName("Filter by request ID")
        self.request_id_filter.setMinimumWidth(260)
        self.request_id_filter.textChanged.connect(lambda _: self._typing_timer.start())
        self.request_id_filter.returnPressed.connect(self._apply_typed_now)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(self.refresh)

        top = QHBoxLayout()
        top.setSpacing(0)
        top.addWidget(self.my_button)
        top.addWidget(self.all_button)
        top.addSpacing(16)
        top.addStretch(1)
        top.addWidget(self.request_id_filter)
        top.addSpacing(8)
        top.addWidget(self.refresh_button)

        # Wide enough for the longest outcome's words: they are few and known, so none is elided.
        self.outcome_filter = self._combo("All outcomes", max(map(len, OUTCOME_WORDS.values())))
        self.model_filter = self._combo("All models", 16)
        self.key_filter = self._combo("All keys", 14)
        self.user_filter = self._combo("All members", 10)
        self.account_filter = self._combo("All accounts", 11)
        self.miss_filter = self._combo("All turns", 12)
        self.miss_filter.setToolTip("Show only the turns that missed the prompt cache, by cause")
        for label, value in MISS_CHOICES:
            self.miss_filter.addItem(label, value)
        self.time_filter = QComboBox()
        self.time_filter.setAccessibleName("Time range")
        for label, value in TIME_PRESETS:
            self.time_filter.addItem(label, value)
        self.time_filter.currentIndexChanged.connect(self._time_changed)
        self.from_edit = self._datetime_edit("From (inclusive)")
        self.until_edit = self._datetime_edit("Until (exclusive)")
        self.from_label = QLabel("from")
        self.until_label = QLabel("until")
        self.clear_button = QPushButton("Clear filters")
        self.clear_button.clicked.connect(self.clear_filters)

        self.user_label = QLabel("Member")
        self.account_label = QLabel("Account")
        # The filters flow onto as many rows as the width needs: two at the default size,
        # more on a small screen (a fixed row was 1042 px wide and scrolled sideways at
        # 200 % on a 1280×800 screen). Each stays beside its label.
        controls: tuple[tuple[str | QLabel, QWidget], ...] = (
            ("Outcome", self.outcome_filter),
            ("Model", self.model_filter),
            ("Key", self.key_filter),
            (self.user_label, self.user_filter),
            (self.account_label, self.account_filter),
            ("Cache", self.miss_filter),
            ("Time", self.time_filter),
        )
        filters = FlowLayout(spacing=8)
        self._filter_groups: dict[QWidget, QWidget] = {}
        for caption, widget in controls:
            group = QWidget()
            row = QHBoxLayout(group)
            row.setContentsMargins(0, 0, 0, 0)
            row.addWidget(caption if isinstance(caption, QLabel) else QLabel(caption))
            row.addWidget(widget)
            if widget is self.time_filter:  # a custom range's two ends, beside it
                for hidden in (self.from_label, self.from_edit, self.until_label, self.until_edit):
                    row.addWidget(hidden)
                    hidden.setVisible(False)
            filters.addWidget(group)
            self._filter_groups[widget] = group
        filters.addWidget(self.clear_button)

        self.model = RequestsModel(self)
        self.table = RequestsTable()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.setShowGrid(False)
        self.table.setWordWrap(False)
        self.table.setMouseTracking(True)
        self.table.verticalHeader().setVisible(False)
        self._started_delegate = TwoLineDelegate(self.table, link=True, monospace_second=True)
        self._outcome_delegate = TwoLineDelegate(self.table)
        self.table.setItemDelegateForColumn(Column.STARTED, self._started_delegate)
        self.table.setItemDelegateForColumn(Column.OUTCOME, self._outcome_delegate)
        self._cache_delegate = TwoLineDelegate(self.table)
        self.table.setItemDelegateForColumn(Column.CACHE_HIT, self._cache_delegate)
        metrics = QFontMetrics(self.table.font())
        rows = self.table.verticalHeader()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(int(metrics.height() * 1.9) + 10)
        header = self.table.horizontalHeader()
        header.setHighlightSections(False)
        # Sized to the contents when a person loads a page, not on every live reload: with
        # ResizeToContents each reload asked every cell its size hint, thousands of Python calls
        # on the loop the proxy shares (bench_proxy --tray).
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(Column.MODEL, QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(metrics.horizontalAdvance("00:00:00") + 24)
        self.table.doubleClicked.connect(self.open_details)
        self.table.clicked.connect(self._on_clicked)
        self.table.entered.connect(self._on_hover)
        self.table.copyRequested.connect(self.copy_request_ids)
        self.table.detailsRequested.connect(self.open_details)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._context_menu)

        self.status = QLabel()
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.newest_button = QPushButton("Newest")
        self.newest_button.setToolTip("Back to the first page (the newest requests)")
        self.newest_button.clicked.connect(self.first_page)
        self.previous_button = QPushButton("‹ Previous")
        self.previous_button.setToolTip("Newer requests")
        self.previous_button.clicked.connect(self.previous_page)
        self.next_button = QPushButton("Next ›")
        self.next_button.setToolTip("Older requests")
        self.next_button.clicked.connect(self.next_page)
        bottom = QHBoxLayout()
        bottom.addWidget(self.status, 1)
        bottom.addWidget(self.newest_button)
        bottom.addWidget(self.previous_button)
        bottom.addWidget(self.next_button)

        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(filters)
        layout.addWidget(self.table, 1)
        layout.addLayout(bottom)
        self._apply_scope_widgets()
        self._update_nav()

    def _combo(self, everything: str, width: int) -> QComboBox:
        """A filter: "everything" first, then the choices. A fixed width in characters keeps
        the row steady as choices come and go; the popup widens to fit long names."""
        combo = QComboBox()
        combo.setAccessibleName(f"Filter: {everything.lower()}")
        combo.addItem(everything, None)
        combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        combo.setMinimumContentsLength(width)
        combo.currentIndexChanged.connect(lambda _: self.first_page())
        return combo

    def _datetime_edit(self, tip: str) -> QDateTimeEdit:
        edit = QDateTimeEdit()
        edit.setCalendarPopup(True)
        edit.setDisplayFormat("yyyy-MM-dd HH:mm")
        edit.setToolTip(tip)
        edit.dateTimeChanged.connect(lambda _: self._typing_timer.start())
        return edit

    # --- public surface (the tray, tests and screenshots use these) -------------------------

    @property
    def mine(self) -> bool:
        return self._mine

    @property
    def on_first_page(self) -> bool:
        return not self._stack

    @property
    def page_number(self) -> int:
        return len(self._stack) + 1

    @property
    def next_cursor(self) -> int | None:
        return self._next_cursor

    def show_and_raise(self) -> None:
        self.showNormal()
        self.raise_()
        self.activateWindow()

    def set_mine(self, mine: bool) -> None:
        """Switch between "My requests" and "All requests" (back to the first page)."""
        if mine == self._mine:
            return
        self._mine = mine
        for button, checked in ((self.my_button, mine), (self.all_button, not mine)):
            if button.isChecked() != checked:
                button.blockSignals(True)
                button.setChecked(checked)
                button.blockSignals(False)
        for combo in (self.user_filter, self.account_filter):
            _select(combo, None)
        self._apply_scope_widgets()
        self.reload_filters()
        self.first_page()

    def refresh(self) -> None:
        self.reload_filters()
        self.reload()

    def reload(self) -> asyncio.Task[Any] | None:
        """Load the shown page again, with the filters as they are now."""
        return self._load(self._cursor)

    def first_page(self) -> asyncio.Task[Any] | None:
        self._stack.clear()
        self._cursor = None
        self._newer_waiting = False
        return self._load(None)

    def next_page(self) -> asyncio.Task[Any] | None:
        """Older records: the page after the shown one's last id."""
        if self._next_cursor is None or self._loading:
            return None
        self._stack.append(self._cursor)
        self._cursor = self._next_cursor
        return self._load(self._cursor)

    def previous_page(self) -> asyncio.Task[Any] | None:
        if not self._stack or self._loading:
            return None
        self._cursor = self._stack.pop()
        if not self._stack:
            self._newer_waiting = False
        return self._load(self._cursor)

    def clear_filters(self) -> None:
        for combo in (
            self.outcome_filter,
            self.model_filter,
            self.key_filter,
            self.user_filter,
            self.account_filter,
            self.miss_filter,
            self.time_filter,
        ):
            combo.blockSignals(True)
            combo.setCurrentIndex(0)
            combo.blockSignals(False)
        self.request_id_filter.blockSignals(True)
        self.request_id_filter.clear()
        self.request_id_filter.blockSignals(False)
        self._show_custom_range(False)
        self.first_page()

    def selected_records(self) -> list[dict[str, Any]]:
        rows = sorted({index.row() for index in self.table.selectionModel().selectedRows()})
        if not rows and self.table.currentIndex().isValid():
            rows = [self.table.currentIndex().row()]
        return [self.model.record(row) for row in rows]

    def copy_request_ids(self) -> str:
        """The FULL ids of the selected rows, one a line, onto the clipboard."""
        text = "\n".join(r.get("request_id") or "" for r in self.selected_records())
        if text:
            QGuiApplication.clipboard().setText(text)
        return text

    def open_details(self, index: QModelIndex | int) -> RequestDetailsDialog | None:
        row = index if isinstance(index, int) else index.row()
        if not 0 <= row < self.model.rowCount():
            return None
        record = self.model.record(row)
        if self.details is None:
            self.details = RequestDetailsDialog(record, self, names=self._names())
            self.details.setWindowFlag(Qt.WindowType.Window, True)
        else:
            self.details.show_record(record, names=self._names())
        self.details.show()
        self.details.raise_()
        self.details.activateWindow()
        return self.details

    # --- loading ----------------------------------------------------------------------------

    def query(self, cursor: int | None = None) -> HistoryQuery:
        """The filters as a validated history query (InvalidQuery names a bad one)."""
        params: dict[str, str] = {}
        if cursor:
            params["cursor"] = str(cursor)
        for name, combo in (
            ("outcome", self.outcome_filter),
            ("model", self.model_filter),
            ("key_id", self.key_filter),
            ("user_id", self.user_filter),
            ("account_id", self.account_filter),
            ("cache_miss", self.miss_filter),
        ):
            value = combo.currentData()
            if value is not None:
                params[name] = str(value)
        request_id = self.request_id_filter.text().strip()
        if request_id:
            params["request_id"] = request_id
        since, until = self.time_range()
        if since is not None:
            params["from"] = f"{max(0.0, since):.3f}"
        if until is not None:
            params["until"] = f"{max(0.0, until):.3f}"
        return parse_query(params, admin=not self._mine)

    def time_range(self) -> tuple[float | None, float | None]:
        choice = self.time_filter.currentData()
        if choice is ANY:
            return None, None
        if choice == CUSTOM:
            return (
                float(self.from_edit.dateTime().toSecsSinceEpoch()),
                float(self.until_edit.dateTime().toSecsSinceEpoch()),
            )
        return self._bridge.now() - float(choice), None

    def _load(self, cursor: int | None) -> asyncio.Task[Any] | None:
        self._generation += 1
        generation = self._generation
        try:
            query = self.query(cursor)
        except InvalidQuery as exc:
            self._finish_page(problem=exc.message)
            return None
        try:
            task = self._bridge.request_page(query, mine=self._mine)
        except RuntimeError as exc:  # no running event loop: nothing can be read now
            self._finish_page(problem=f"history is not available: {exc}")
            return None
        self._loading = True
        self._update_nav()
        task.add_done_callback(lambda t: self._page_done(generation, t))
        return task

    def _page_done(self, generation: int, task: asyncio.Task[Any]) -> None:
        if not shiboken6.isValid(self) or generation != self._generation:
            return
        if task.cancelled():
            self._finish_page(problem="loading was cancelled")
            return
        exc = task.exception()
        if exc is not None:
            self._finish_page(problem=f"could not load history: {exc or type(exc).__name__}")
            return
        page = task.result()
        live, self._live_load = self._live_load, False
        was_empty = self.model.rowCount() == 0
        selected = {r.get("id") for r in self.selected_records()}
        current = self.table.currentIndex()
        current_id = self.model.record(current.row()).get("id") if current.isValid() else None
        shown_before = set(self.model.request_ids())
        self.model.set_records(page["items"])
        if not live or was_empty:
            self._fit_columns()
        else:
            arrived = [
                row
                for row, request_id in enumerate(self.model.request_ids())
                if request_id not in shown_before
            ]
            self._widen_for(arrived)
        self._next_cursor = page["next_cursor"]
        self._reselect(selected, current_id)
        self._finish_page(problem=None)

    def _fit_columns(self) -> None:
        for column in range(self.model.columnCount()):
            if column != Column.MODEL:
                self.table.resizeColumnToContents(column)
        fit_model_column(self.table)

    def _widen_for(self, rows: list[int]) -> None:
        """A live record whose words need more room than its column has ("upstream_un…",
        "⇄ account …": issue 25, fault 6) widens that column; only the new rows are measured,
        so a burst stays cheap, and a column is never narrowed under the person."""
        grid = 1 if self.table.showGrid() else 0
        for column in range(self.model.columnCount()):
            if column == Column.MODEL:
                continue  # it stretches into what is left
            need = max(
                (
                    self.table.sizeHintForIndex(self.model.index(row, column)).width() + grid
                    for row in rows
                ),
                default=0,
            )
            if need > self.table.columnWidth(column):
                self.table.setColumnWidth(column, need)

    def _finish_page(self, *, problem: str | None) -> None:
        self._loading = False
        self._problem = problem
        if problem is not None:
            log.info("requests window: %s", problem)
        self._update_nav()
        self._update_status()
        self.pageLoaded.emit()

    def _reselect(self, record_ids: set[Any], current_id: Any) -> None:
        selection = self.table.selectionModel()
        for record_id in record_ids:
            row = self.model.row_of(record_id)
            if row is not None:
                selection.select(
                    self.model.index(row, 0),
                    selection.SelectionFlag.Select | selection.SelectionFlag.Rows,
                )
        row = self.model.row_of(current_id) if current_id is not None else None
        if row is not None:
            selection.setCurrentIndex(self.model.index(row, 0), selection.SelectionFlag.NoUpdate)

    def reload_filters(self) -> asyncio.Task[Any] | None:
        self._filters_generation += 1
        generation = self._filters_generation
        try:
            task = self._bridge.request_filters(mine=self._mine)
        except RuntimeError:
            return None
        task.add_done_callback(lambda t: self._filters_done(generation, t))
        return task

    def _filters_done(self, generation: int, task: asyncio.Task[Any]) -> None:
        if not shiboken6.isValid(self) or generation != self._filters_generation:
            return
        if task.cancelled() or task.exception() is not None:
            return  # the page load reports the problem; keep the choices we have
        choices = task.result()
        self._choices = choices
        # Worded for the person; the item data stays the stored id the API filters on.
        _fill(self.outcome_filter, [(outcome_words(o), o) for o in choices.get("outcomes", [])])
        for i in range(1, self.outcome_filter.count()):
            tip = OUTCOME_TIPS.get(self.outcome_filter.itemData(i))
            if tip:
                self.outcome_filter.setItemData(i, tip, Qt.ItemDataRole.ToolTipRole)
        _fill(self.model_filter, [(m, m) for m in choices.get("models", [])])
        users = {u["id"]: u["name"] for u in choices.get("users", [])}
        keys = []
        for key in choices.get("keys", []):
            label = key["name"]
            if key.get("prefix"):
                label += f" ({key['prefix']}…)"
            if not self._mine and key.get("user_id") in users:
                label += f" · {users[key['user_id']]}"
            if key.get("revoked"):
                label += " — revoked"
            keys.append((label, key["id"]))
        _fill(self.key_filter, keys)
        _fill(self.user_filter, [(u["name"], u["id"]) for u in choices.get("users", [])])
        _fill(self.account_filter, [(a["name"], a["id"]) for a in choices.get("accounts", [])])
        self.filtersLoaded.emit()

    def _names(self) -> dict[str, dict[int, str]]:
        return {
            "keys": {k["id"]: k["name"] for k in self._choices.get("keys", [])},
            "users": {u["id"]: u["name"] for u in self._choices.get("users", [])},
        }

    # --- live updates -----------------------------------------------------------------------

    def _on_records_added(self, _payload: Any = None) -> None:
        if not self.on_first_page:
            self._newer_waiting = True
            self._update_status()
            return
        if not self.isVisible():
            self._stale = True
            return
        if not self._live_timer.isActive():  # a burst waits for the first record's timer
            self._live_timer.start()

    def _live_reload(self) -> None:
        if self.on_first_page:
            now = time.monotonic()
            if now - self._filters_read_at >= LIVE_FILTERS_EVERY_S:
                # a new model or key may have appeared; a full scan, so not on every reload
                self._filters_read_at = now
                self.reload_filters()
            self._live_load = True
            self.reload()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self._stale:
            self._stale = False
            self.refresh()

    def hideEvent(self, event: QHideEvent) -> None:
        super().hideEvent(event)
        # Reopened later, it shows the present: "Last hour" moves on, records may have aged out.
        self._stale = True

    def closeEvent(self, event: QCloseEvent) -> None:
        # Hidden, not destroyed: the tray reopens the same window (R-UI-5).
        if self.details is not None:
            self.details.hide()
        super().closeEvent(event)

    # --- small handlers ---------------------------------------------------------------------

    def _apply_typed_now(self) -> None:
        self._typing_timer.stop()
        self.first_page()

    def _time_changed(self, _index: int) -> None:
        custom = self.time_filter.currentData() == CUSTOM
        if custom and not self.from_edit.isVisible():
            now = int(self._bridge.now())
            end = QDateTime.fromSecsSinceEpoch(now - now % 60 + 60)
            for edit, value in ((self.from_edit, end.addSecs(-3600)), (self.until_edit, end)):
                edit.blockSignals(True)
                edit.setDateTime(value)
                edit.blockSignals(False)
        self._show_custom_range(custom)
        self.first_page()

    def _show_custom_range(self, visible: bool) -> None:
        for widget in (self.from_label, self.from_edit, self.until_label, self.until_edit):
            widget.setVisible(visible)

    def _apply_scope_widgets(self) -> None:
        for widget in (self.user_label, self.user_filter, self.account_label, self.account_filter):
            widget.setVisible(not self._mine)
        for combo in (self.user_filter, self.account_filter):
            self._filter_groups[combo].setVisible(not self._mine)
        # Personal views blank the account (R-REC-6): a column of dashes says nothing.
        self.table.setColumnHidden(Column.ACCOUNT, self._mine)

    def _update_nav(self) -> None:
        self.previous_button.setEnabled(bool(self._stack) and not self._loading)
        self.newest_button.setEnabled(bool(self._stack) and not self._loading)
        self.next_button.setEnabled(self._next_cursor is not None and not self._loading)

    def _update_status(self) -> None:
        if self._problem is not None:
            self.status.setText(self._problem[:1].upper() + self._problem[1:])
            return
        count = self.model.rowCount()
        scope = "your requests" if self._mine else "all members"
        if count == 0:
            text = (
                "No request records match these filters"
                if self._filtered()
                else "No request records yet"
            )
            if self._stack:
                text = "No older request records"
        else:
            first = (self.page_number - 1) * PAGE_SIZE + 1
            text = f"Page {self.page_number} · {first}–{first + count - 1} · {scope}, newest first"
        if self._newer_waiting:
            text += " · newer requests arrived (Newest shows them)"
        self.status.setText(text)

    def _filtered(self) -> bool:
        combos = (
            self.outcome_filter,
            self.model_filter,
            self.key_filter,
            self.user_filter,
            self.account_filter,
            self.miss_filter,
            self.time_filter,
        )
        return any(c.currentIndex() > 0 for c in combos) or bool(
            self.request_id_filter.text().strip()
        )

    def _on_clicked(self, index: QModelIndex) -> None:
        if index.column() == Column.STARTED:
            self.open_details(index)

    def _on_hover(self, index: QModelIndex) -> None:
        cursor = (
            Qt.CursorShape.PointingHandCursor
            if index.column() == Column.STARTED
            else Qt.CursorShape.ArrowCursor
        )
        self.table.viewport().setCursor(cursor)

    def _context_menu(self, pos: QPoint) -> None:
        index = self.table.indexAt(pos)
        if not index.isValid():
            return
        selection = self.table.selectionModel()
        if not selection.isRowSelected(index.row(), QModelIndex()):
            # Like a file manager: a right click outside the selection selects just that row.
            selection.setCurrentIndex(
                index, selection.SelectionFlag.ClearAndSelect | selection.SelectionFlag.Rows
            )
        # popup(), not exec(): a nested event loop would stall the asyncio loop (dialogs/).
        menu = self._row_menu = QMenu(self)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        copy = QAction("Copy request ID", menu)
        copy.setShortcut(QKeySequence(QKeySequence.StandardKey.Copy))  # shown; the table acts
        copy.triggered.connect(self.copy_request_ids)
        details = QAction("Show details…", menu)
        details.triggered.connect(lambda: self.open_details(index))
        menu.addAction(copy)
        menu.addAction(details)
        menu.popup(self.table.viewport().mapToGlobal(pos))


def _fill(combo: QComboBox, items: list[tuple[str, Any]]) -> None:
    """Replace a filter's choices, keeping what is selected (even if it left the choices)."""
    selected = combo.currentData()
    selected_label = combo.currentText()
    combo.blockSignals(True)
    try:
        while combo.count() > 1:
            combo.removeItem(1)
        for label, value in items:
            combo.addItem(label, value)
            combo.setItemData(combo.count() - 1, label, Qt.ItemDataRole.ToolTipRole)
        if selected is not None:
            index = combo.findData(selected)
            if index < 0:
                combo.addItem(selected_label, selected)
                index = combo.count() - 1
            combo.setCurrentIndex(index)
    finally:
        combo.blockSignals(False)
    view = combo.view()
    view.setMinimumWidth(view.sizeHintForColumn(0) + 2 * view.frameWidth() + 8)


def _select(combo: QComboBox, value: Any) -> None:
    combo.blockSignals(True)
    index = combo.findData(value) if value is not None else 0
    combo.setCurrentIndex(max(0, index))
    combo.blockSignals(False)
