"""One SubLane per data directory: a second launch asks the first to show itself and exits,
instead of fighting it for the port and the database.

The first one answers: "shown", or "quitting" while it drains its streams after Quit (up to
~10 s, R-UI-5). Asked during that drain, a new launch used to exit saying "already running"
while nothing showed (issue 25, fault 4); now it waits, with a window that says so, until the
old one has gone, then starts and opens its window (R-UI-15).
"""

from __future__ import annotations

import enum
import hashlib
import logging
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEventLoop, QObject, Qt, QTimer
from PySide6.QtGui import QCloseEvent
from PySide6.QtNetwork import QLocalServer, QLocalSocket
from PySide6.QtWidgets import QDialogButtonBox, QLabel, QVBoxLayout, QWidget

log = logging.getLogger(__name__)

SHOW = b"show"
SHOWN = b"shown\n"
QUITTING = b"quitting\n"
_CONNECT_TIMEOUT_MS = 500
# An instance that never answers (an older SubLane) was still asked to show itself.
_ANSWER_TIMEOUT_MS = 1000
# How often a waiting launch looks whether the quitting instance has gone.
_POLL_MS = 100


class Answer(enum.Enum):
    NOBODY = "nobody"  # no other instance: start
    SHOWN = "shown"  # it showed its window: nothing more to do
    QUITTING = "quitting"  # it is draining after Quit: wait for it, then start


def instance_name(data_dir: Path) -> str:
    digest = hashlib.sha1(str(Path(data_dir).expanduser().resolve()).encode()).hexdigest()
    return f"sublane-{digest[:12]}"


class SingleInstance(QObject):
    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self._server: QLocalServer | None = None
        self._on_show: Callable[[], None] = lambda: None
        self._quitting: Callable[[], bool] = lambda: False

    def already_running(self) -> bool:
        """True if another instance answers; it has then been asked to show itself."""
        return self.ask_to_show() is not Answer.NOBODY

    def ask_to_show(self) -> Answer:
        """Ask the running instance, if any, to show itself, and wait for its answer.

        The answer is awaited in a local event loop, not a blocking wait, so that an instance
        listening in this same process (the tests) can read and reply."""
        socket = QLocalSocket()
        socket.connectToServer(self.name)
        if not socket.waitForConnected(_CONNECT_TIMEOUT_MS):
            return Answer.NOBODY
        socket.write(SHOW)
        socket.flush()
        waiting = QEventLoop()
        deadline = QTimer()
        deadline.setSingleShot(True)
        deadline.timeout.connect(waiting.quit)
        socket.readyRead.connect(waiting.quit)
        socket.disconnected.connect(waiting.quit)
        deadline.start(_ANSWER_TIMEOUT_MS)
        while (
            deadline.isActive()
            and not socket.canReadLine()
            and socket.state() == QLocalSocket.LocalSocketState.ConnectedState
        ):
            waiting.exec()
        deadline.stop()
        reply = bytes(socket.readAll().data())
        socket.abort()
        return Answer.QUITTING if reply.startswith(QUITTING.strip()) else Answer.SHOWN

    def still_running(self) -> bool:
        """Whether the other instance still listens (it stops only once its service stopped)."""
        socket = QLocalSocket()
        socket.connectToServer(self.name)
        answered = socket.waitForConnected(_CONNECT_TIMEOUT_MS)
        socket.abort()
        return answered

    def listen(
        self, on_show: Callable[[], None], *, quitting: Callable[[], bool] = lambda: False
    ) -> bool:
        """Answer later launches; `quitting` says whether Quit has begun (then nothing is
        shown, and the launch is told to wait)."""
        self._on_show = on_show
        self._quitting = quitting
        # A crashed instance leaves its socket file behind; already_running() found nobody
        # answering on it, so it is stale.
        QLocalServer.removeServer(self.name)
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        server.newConnection.connect(self._accept)
        if not server.listen(self.name):
            log.warning("single-instance server %s: %s", self.name, server.errorString())
            server.deleteLater()
            return False
        self._server = server
        return True

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server.deleteLater()
            self._server = None

    def _accept(self) -> None:
        assert self._server is not None
        while self._server.hasPendingConnections():
            socket = self._server.nextPendingConnection()
            # Bound methods, not lambdas: Qt drops them when this object dies, whereas a lambda
            # would run on a half-destroyed socket when its destructor emits disconnected().
            socket.readyRead.connect(self._on_ready_read)
            socket.disconnected.connect(socket.deleteLater)
            self._read(socket)

    def _on_ready_read(self) -> None:
        socket = self.sender()
        if isinstance(socket, QLocalSocket):
            self._read(socket)

    def _read(self, socket: QLocalSocket) -> None:
        # Unread bytes stay in the socket's buffer, so wait until the whole word is there.
        if socket.bytesAvailable() < len(SHOW):
            return
        if SHOW in bytes(socket.readAll().data()):
            if self._quitting():
                socket.write(QUITTING)
            else:
                self._on_show()
                socket.write(SHOWN)
            socket.flush()
        socket.disconnectFromServer()


class PreviousInstanceWait(QWidget):
    """A small window while this launch waits for the instance that is quitting: it says why
    nothing else shows yet; Cancel gives up. `wait()` returns True once the old one has gone."""

    def __init__(self, instance: SingleInstance, timeout_s: float) -> None:
        super().__init__(None, Qt.WindowType.Dialog)
        self._instance = instance
        self._deadline = time.monotonic() + timeout_s
        self._timeout_s = timeout_s
        self._gone = False
        self.timed_out = False
        self._loop = QEventLoop()
        self.setWindowTitle("SubLane")
        self.setAccessibleName("Waiting for the previous SubLane")
        self.message = QLabel(
            "SubLane is still finishing the requests of the copy you quit. It opens by itself "
            f"as soon as that is done (at most {timeout_s:.0f} seconds)."
        )
        self.message.setWordWrap(True)
        self.message.setMinimumWidth(self.message.fontMetrics().averageCharWidth() * 52)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.buttons.rejected.connect(self._give_up)
        layout = QVBoxLayout(self)
        layout.addWidget(self.message)
        layout.addWidget(self.buttons)
        self._timer = QTimer(self)
        self._timer.setInterval(_POLL_MS)
        self._timer.timeout.connect(self._look)

    def wait(self) -> bool:
        if not self._instance.still_running():
            return True
        self.show()
        self.raise_()
        self._timer.start()
        self._loop.exec()
        self._timer.stop()
        return self._gone

    def _look(self) -> None:
        if not self._instance.still_running():
            self._gone = True
            self.hide()
            self._loop.quit()
        elif time.monotonic() >= self._deadline:
            self._timer.stop()
            self.timed_out = True
            self.message.setText(
                f"The SubLane you quit has not finished after {self._timeout_s:.0f} seconds. "
                "Wait for its tray icon to go, then start SubLane again."
            )
            self.buttons.setStandardButtons(QDialogButtonBox.StandardButton.Close)

    def _give_up(self) -> None:
        self.hide()
        self._loop.quit()

    def closeEvent(self, event: QCloseEvent) -> None:
        self._loop.quit()  # closing the window gives up, as Cancel does
        super().closeEvent(event)
