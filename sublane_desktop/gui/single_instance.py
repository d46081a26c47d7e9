"""One SubLane per data directory: a second launch asks the first to show itself and exits,
instead of fighting it for the port and the database."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtNetwork import QLocalServer, QLocalSocket

log = logging.getLogger(__name__)

SHOW = b"show"
_CONNECT_TIMEOUT_MS = 500


def instance_name(data_dir: Path) -> str:
    digest = hashlib.sha1(str(Path(data_dir).expanduser().resolve()).encode()).hexdigest()
    return f"sublane-{digest[:12]}"


class SingleInstance(QObject):
    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self._server: QLocalServer | None = None
        self._on_show: Callable[[], None] = lambda: None

    def already_running(self) -> bool:
        """True if another instance answers; it has then been asked to show itself."""
        socket = QLocalSocket()
        socket.connectToServer(self.name)
        if not socket.waitForConnected(_CONNECT_TIMEOUT_MS):
            return False
        socket.write(SHOW)
        socket.flush()
        socket.waitForBytesWritten(_CONNECT_TIMEOUT_MS)
        socket.disconnectFromServer()
        if socket.state() != QLocalSocket.LocalSocketState.UnconnectedState:
            socket.waitForDisconnected(_CONNECT_TIMEOUT_MS)
        return True

    def listen(self, on_show: Callable[[], None]) -> bool:
        self._on_show = on_show
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
            self._on_show()
        socket.disconnectFromServer()
