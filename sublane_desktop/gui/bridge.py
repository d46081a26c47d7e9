"""The one boundary between the service and Qt.

Core events become Qt signals here, and widgets call the service only through this object
(R-ARCH-2: the tray, the windows and the HTTP API share the same service methods).

Events are published on the asyncio loop thread, which under qasync is the Qt GUI thread, so the
signals are emitted directly; nothing here hops threads.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any

from PySide6.QtCore import QObject, Signal

from sublane_desktop.core.tasks import spawn

log = logging.getLogger(__name__)


class Bridge(QObject):
    accountsChanged = Signal()
    recordAdded = Signal(object)  # the event payload (a record dict); object avoids QVariantMap
    leverFailed = Signal(str, str)  # service method name, error message
    quitRequested = Signal()

    def __init__(self, service: Any, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._service = service
        self._unsubscribe = service.bus.subscribe("*", self._on_event)

    def close(self) -> None:
        """Stop listening to the bus (the bus would otherwise keep calling a dead QObject)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _on_event(self, topic: str, payload: dict[str, Any]) -> None:
        if topic.startswith("accounts"):
            self.accountsChanged.emit()
        elif topic == "records.added":
            self.recordAdded.emit(payload)

    # Reads -------------------------------------------------------------------------------

    def accounts(self) -> list[dict[str, Any]]:
        return list(self._service.accounts_runtime()["accounts"])

    def endpoint_url(self) -> str:
        return str(self._service.endpoint_url)

    # Levers (same service methods as the CLI and the management API) ---------------------

    def switch(self, name: str) -> asyncio.Task[Any] | None:
        return self._launch("switch", name)

    def pause(self, name: str, paused: bool) -> asyncio.Task[Any] | None:
        return self._launch("pause", name, paused)

    def clear_cooldown(self, name: str) -> asyncio.Task[Any] | None:
        return self._launch("clear_cooldown", name)

    def set_limit(self, account_id: int, n: int) -> asyncio.Task[Any] | None:
        return self._launch("set_limit", account_id, n)

    def request_quit(self) -> None:
        """Ask the app to stop the service and exit; main.run owns the shutdown order."""
        self.quitRequested.emit()

    def _launch(self, method: str, *args: Any) -> asyncio.Task[Any] | None:
        fn = getattr(self._service, method, None)
        if fn is None:
            log.warning("service has no %s(); lever ignored", method)
            return None
        # Fail before creating the coroutine: an unscheduled coroutine is a never-awaited warning.
        asyncio.get_running_loop()
        result = fn(*args)
        if not inspect.isawaitable(result):
            return None
        task = spawn(_as_coroutine(result), name=f"lever.{method}")
        task.add_done_callback(lambda t: self._report(method, t))
        return task

    def _report(self, method: str, task: asyncio.Task[Any]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self.leverFailed.emit(method, str(exc) or type(exc).__name__)


async def _as_coroutine(awaitable: Any) -> Any:
    return await awaitable
