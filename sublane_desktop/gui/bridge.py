"""The one boundary between the service and Qt.

Core events become Qt signals here, and widgets call the service only through this object
(R-ARCH-2: the tray, the windows and the HTTP API share the same service methods).

Events are published on the asyncio loop thread, which under qasync is the Qt GUI thread, so the
signals are emitted directly; nothing here hops threads.

Account events come in bursts (every lease taken and released publishes one), so they only arm a
short timer; when it fires the bridge re-reads the in-memory runtime once and emits
`accountsChanged` if the snapshot differs. A 1 s tick does the same read (memory, never the
database) because some states change with time alone (a cooldown ends, a pin lapses, a gauge
goes stale), and then emits `ticked` so countdowns redraw.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import time
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal

from sublane_desktop.core.tasks import spawn

if TYPE_CHECKING:
    from sublane_desktop.accounts.secrets import SecretHome

log = logging.getLogger(__name__)


COALESCE_MS = 200  # a burst of account events becomes one re-read: at most 5 a second
# Today's cache misses (R-CF-3) are a database read: at most one a second, after records land.
MISSES_COALESCE_MS = 1000
TICK_MS = 1000


class Reply(QObject):
    """One service call in flight: `done(result)` or `failed(message)`, then nothing.

    Connect bound methods of a widget so Qt drops the connection if the widget dies first.
    Awaitable (tests): `await reply` gives the result, or None when the call failed.
    """

    done = Signal(object)
    failed = Signal(str)

    def __init__(self, method: str) -> None:
        super().__init__()
        self.method = method
        self.task: asyncio.Task[Any] | None = None

    def __await__(self) -> Generator[Any, None, Any]:
        assert self.task is not None
        return self.task.__await__()


class Bridge(QObject):
    accountsChanged = Signal()  # the account snapshot changed; read it with snapshot()
    settingsChanged = Signal()
    ticked = Signal()  # once a second, after the snapshot was re-read: redraw countdowns
    recordAdded = Signal(object)  # the event payload (a record dict); object avoids QVariantMap
    leverFailed = Signal(str, str)  # service method name, error message
    quitRequested = Signal()
    welcomeRequested = Signal()  # open the welcome window again (the tray's "Welcome…")
    verified = Signal(object)  # a verify verdict: {"name", "result", "detail", …}
    missesChanged = Signal()  # today's cache-miss summary changed; read it with misses_today()
    refused = Signal(str)  # the pool turned a request for this provider away (R-UI-13)

    def __init__(
        self, service: Any, parent: QObject | None = None, *, tick_ms: int = TICK_MS
    ) -> None:
        super().__init__(parent)
        self._service = service
        self._snapshot = self.accounts()
        self._pending: set[asyncio.Task[Any]] = set()
        self._coalesce = QTimer(self)
        self._coalesce.setSingleShot(True)
        self._coalesce.setInterval(COALESCE_MS)
        self._coalesce.timeout.connect(self._coalesced)
        # Python flags, not QTimer.isActive(): bus events come per request, on the proxy's loop.
        self._coalesce_armed = False
        self._misses_armed = False
        self._tick = QTimer(self)
        self._tick.setInterval(tick_ms)
        self._tick.timeout.connect(self._on_tick)
        self._tick.start()
        self._misses: dict[str, Any] | None = None
        self._misses_day: float | None = None
        self._misses_timer = QTimer(self)
        self._misses_timer.setSingleShot(True)
        self._misses_timer.setInterval(MISSES_COALESCE_MS)
        self._misses_timer.timeout.connect(self._misses_due)
        self._unsubscribe = service.bus.subscribe("*", self._on_event)

    def close(self) -> None:
        """Stop listening to the bus (the bus would otherwise keep calling a dead QObject)."""
        self._tick.stop()
        self._coalesce.stop()
        self._misses_timer.stop()
        self._coalesce_armed = self._misses_armed = False
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _on_event(self, topic: str, payload: dict[str, Any]) -> None:
        if topic == "accounts.settings":
            self.settingsChanged.emit()
        elif topic == "pool.refused":
            self.refused.emit(str(payload.get("provider") or ""))
        if topic.startswith("accounts"):
            if not self._coalesce_armed:
                self._coalesce_armed = True
                self._coalesce.start()
        elif topic == "records.added":
            self.recordAdded.emit(payload)
            if self._misses_day is not None and not self._misses_armed:
                self._misses_armed = True
                self._misses_timer.start()

    def _coalesced(self) -> None:
        self._coalesce_armed = False
        self.refresh_snapshot()

    def _misses_due(self) -> None:
        self._misses_armed = False
        self.refresh_misses()

    def refresh_snapshot(self) -> bool:
        """Re-read the in-memory runtime; emit accountsChanged when it differs."""
        fresh = self.accounts()
        if fresh == self._snapshot:
            return False
        self._snapshot = fresh
        self.accountsChanged.emit()
        return True

    def _on_tick(self) -> None:
        self.refresh_snapshot()
        if self._misses_day is not None and start_of_day(self.now()) != self._misses_day:
            self.refresh_misses()  # midnight: "today" starts again
        self.ticked.emit()

    def snapshot(self) -> list[dict[str, Any]]:
        """The accounts as last read (shared: do not mutate)."""
        return self._snapshot

    # Reads -------------------------------------------------------------------------------

    def accounts(self) -> list[dict[str, Any]]:
        return list(self._service.accounts_runtime()["accounts"])

    def endpoint_url(self) -> str:
        return str(self._service.endpoint_url)

    # Request history (R-UI-3): the records API behind /api/requests and /api/me/requests ---

    def now(self) -> float:
        """The service's clock, so relative time filters agree with the records' times."""
        return float(self._service.clock.now())

    def request_page(self, query: Any, *, mine: bool) -> asyncio.Task[dict[str, Any]]:
        """One page, `{"items", "next_cursor"}`; `mine`: the administrator's personal view."""
        return spawn(self._history(query, mine), name="history.page")

    def request_filters(self, *, mine: bool) -> asyncio.Task[dict[str, Any]]:
        return spawn(self._history(None, mine), name="history.filters")

    async def _history(self, query: Any, mine: bool) -> dict[str, Any]:
        owner = None
        if mine:  # the desktop user is the administrator; 0 (no such user) never widens it
            owner = await self._service.admin_user_id() or 0
        if query is None:
            return await self._service.request_filters(owner=owner)
        return await self._service.request_page(query, owner=owner)

    def misses_today(self) -> dict[str, Any] | None:
        """Cache misses since local midnight, by cause and account, as last read (R-CF-3)."""
        return self._misses

    def refresh_misses(self) -> asyncio.Task[None] | None:
        """Read today's misses again; emits missesChanged when they differ. Once called, new
        records keep the summary fresh. Without a running loop (widgets built before the
        service starts) there is nothing to read yet: None."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return None
        day = start_of_day(self.now())
        self._misses_day = day
        return spawn(self._load_misses(day), name="history.misses")

    async def _load_misses(self, day: float) -> None:
        try:
            summary = await self._service.request_misses(owner=None, since=day)
        except Exception as exc:  # a summary is a nicety; the windows keep their last one
            log.warning("could not read today's cache misses: %s", type(exc).__name__)
            return
        if summary != self._misses:
            self._misses = summary
            self.missesChanged.emit()

    def usage_history(self, account_id: int, days: int = 7) -> asyncio.Task[dict[str, list[Any]]]:
        """R-UI-11: an account's stored readings of the last `days`, per window (a database
        read in the store's thread; asked for when a chart opens, never per request)."""
        since = self.now() - days * 86400.0
        return spawn(self._service.usage_history(account_id, since), name="usage.history")

    def settings(self) -> dict[str, Any]:
        return dict(self._service.settings)

    def keyring_problem(self) -> str | None:
        problem = getattr(self._service, "keyring_problem", None)
        return for_people(problem) if problem else None

    def secret_home(self) -> SecretHome | None:
        """Where a new account's secret goes (None: no keyring is open)."""
        home = getattr(self._service, "secret_home", None)
        return home() if home is not None else None

    def keyring_file_exists(self) -> bool:
        check = getattr(self._service, "keyring_file_exists", None)
        return bool(check()) if check is not None else False

    def open_file_keyring(self, password: str, *, create: bool) -> Reply | None:
        """R-UI-8: create (or unlock) the encrypted file keyring and use it from now on."""
        return self._launch("open_file_keyring", password, create=create, report=False)

    # Levers (same service methods as the CLI and the management API) ---------------------
    # Each returns a Reply (awaitable) or None when the service lacks the method. Failures of
    # levers are also reported on leverFailed; dialogs show their own errors from Reply.failed.

    def switch(self, ref: str | int) -> Reply | None:
        return self._launch("switch", ref)

    def pause(self, ref: str | int, paused: bool) -> Reply | None:
        return self._launch("pause", ref, paused)

    def clear_cooldown(self, ref: str | int) -> Reply | None:
        return self._launch("clear_cooldown", ref)

    def set_enabled(self, ref: str | int, enabled: bool) -> Reply | None:
        """Disable or enable an account (R-AG-6); the service reads an enabled one's quota at
        once (R-UI-14, service/fresh_gauges.py)."""
        return self._launch("enable" if enabled else "disable", ref)

    def verify(self, ref: str | int) -> Reply | None:
        """Check the account's credential with one cheap call; the verdict arrives on
        `verified` (so whoever asked, tray or window, can show it in words)."""
        reply = self._launch("verify", ref)
        if reply is not None:
            reply.done.connect(self.verified.emit)
        return reply

    def set_limit(self, account_id: int, n: int) -> Reply | None:
        return self._launch("set_limit", account_id, n)

    def reset_usage(self) -> Reply | None:
        return self._launch("reset_usage")

    def read_stale_quotas(self) -> None:
        """Someone is looking at the gauges (the tray menu opened): read the ones gone stale,
        within the poll floor (R-UI-14). Stale readings are otherwise read only on traffic, so
        an idle pool showed "Updated 13m ago" and "· stale" on every bar of a healthy account.
        The reads run in the background; the open menu's tick shows them as they land."""
        read = getattr(self._service, "refresh_stale", None)
        if read is None:
            return
        for provider in sorted({a["provider"] for a in self._snapshot}):
            read(provider)

    def refresh_quotas(self) -> Reply | None:
        """A person asked (the Refresh button, opening the Accounts window): poll quotas."""
        return self._launch("refresh_quotas")

    def remove_account(self, ref: str | int) -> Reply | None:
        return self._launch("remove_account", ref)

    # Calls whose errors belong to the dialog that made them ------------------------------

    def add_account(self, provider: str, name: str, secret: Any, **options: Any) -> Reply | None:
        return self._launch("add_account", provider, name, secret, report=False, **options)

    def import_login(self, which: str, path: Any = None, name: str | None = None) -> Reply | None:
        return self._launch("import_login", which, path, name, report=False)

    # Opens the sign-in page (R-LOGIN-1); None: the system browser. Tests put an HTTP client
    # that follows the redirect here.
    sign_in_browser: Any = None

    def sign_in(self, which: str, show_url: Any = None, name: str | None = None) -> Reply | None:
        """A new account through the browser: done(settled answer) or failed(words)."""
        return self._launch(
            "sign_in",
            which,
            name=name,
            browser=self.sign_in_browser,
            show_url=show_url,
            report=False,
        )

    def sign_in_again(self, ref: str | int) -> Reply | None:
        """Mend an account in place with a new browser sign-in; a failure reaches leverFailed
        (the tray and the Accounts window say it in words)."""
        return self._launch("sign_in", "", account=ref, browser=self.sign_in_browser)

    def update_settings(self, changes: dict[str, Any]) -> Reply | None:
        return self._launch("update_settings", changes, report=False)

    def create_key(self, name: str) -> Reply | None:
        return self._launch("create_key", name, report=False)

    def revoke_key(self, ref: str | int) -> Reply | None:
        return self._launch("revoke_key", ref, report=False)

    def list_keys(self) -> Reply | None:
        return self._launch("list_keys", report=False)

    # First run (R-UI-9) ---------------------------------------------------------------------

    def found_logins(self) -> list[dict[str, str]]:
        find = getattr(self._service, "found_logins", None)
        return list(find()) if find is not None else []

    def test_request(self, key: str) -> Reply | None:
        return self._launch("test_request", key, report=False)

    def request_quit(self) -> None:
        """Ask the app to stop the service and exit; main.run owns the shutdown order."""
        self.quitRequested.emit()

    def request_welcome(self) -> None:
        """Open the welcome window again (R-UI-12's "Welcome…" menu item calls this)."""
        self.welcomeRequested.emit()

    async def wait_idle(self) -> None:
        """Wait for the calls in flight (tests; and quit, so a lever is not cut in half)."""
        while self._pending:
            await asyncio.wait(list(self._pending))

    def _launch(self, method: str, *args: Any, report: bool = True, **kwargs: Any) -> Reply | None:
        fn = getattr(self._service, method, None)
        if fn is None:
            log.warning("service has no %s(); call ignored", method)
            return None
        asyncio.get_running_loop()  # outside a running loop nothing could ever finish the call
        reply = Reply(method)

        async def run() -> Any:
            try:
                result = fn(*args, **kwargs)
                if inspect.isawaitable(result):
                    result = await result
            except Exception as exc:  # any failure goes to a person, as words
                if not str(exc):
                    log.warning("%s failed with %s and no message", method, type(exc).__name__)
                message = for_people(str(exc)) or "it failed unexpectedly (see the log)"
                reply.failed.emit(message)
                if report:
                    self.leverFailed.emit(method, message)
                return None
            reply.done.emit(result)
            return result

        reply.task = spawn(run(), name=f"gui.{method}")
        self._pending.add(reply.task)
        reply.task.add_done_callback(self._pending.discard)
        return reply


# What a terminal needs and a window must not show (R-UI-16). The service's keyring messages
# name keyring's backend classes and the variables that choose one (R-ST-2: in a terminal that
# is how a person sets one); the GUI offers "Set up a keyring…" instead.
_CLASS_PATH = re.compile(r"\b(?:[a-z_][a-z0-9_]*\.)+([A-Z][A-Za-z0-9_]*)\b")
_CLASS_WORDS = {"PlaintextKeyring": "an unencrypted file keyring"}
_SET_VARIABLES = re.compile(r";\s*to keep secrets in an encrypted file instead, set [^;]*$")
_VARIABLE = re.compile(
    r"\b(?:PYTHON_KEYRING_BACKEND|SUBLANE_KEYRING(?:_PASSWORD)?)\b(?:='[^']*'|=\S+)?"
)
_NAME_A_CLASS = re.compile(r";\s*name a keyring backend class such as [^;]*$")
_IMPORT_ERROR = re.compile(r" cannot be loaded \([^)]*\)")


def for_people(text: str) -> str:
    """A service message as a window shows it: no class names, no environment variables."""
    text = _SET_VARIABLES.sub("; Set up a keyring… keeps them in an encrypted file instead", text)
    text = _NAME_A_CLASS.sub("", text)
    text = _IMPORT_ERROR.sub(" cannot be loaded", text)
    text = _VARIABLE.sub("the keyring chosen in your environment", text)
    return _CLASS_PATH.sub(lambda m: _CLASS_WORDS.get(m.group(1), "its fallback keyring"), text)


def start_of_day(now: float) -> float:
    """Local midnight before `now`: where "today" begins for the person at this desk."""
    local = time.localtime(now)
    return time.mktime((local.tm_year, local.tm_mon, local.tm_mday, 0, 0, 0, 0, 0, -1))
