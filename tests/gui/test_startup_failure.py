"""The tray app's startup failures reach the person in a dialog (R-UI-8, R-FT-7).

The port-in-use case runs the real service against a really bound socket: the dialog offers
another port, and picking it starts the proxy there (and saves it when asked to).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import urllib.request

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QLabel, QMessageBox

from sublane_desktop.accounts.secrets import SecretStore
from sublane_desktop.gui import main as gui_main
from sublane_desktop.gui.dialogs.startup_failure import PortInUseDialog
from sublane_desktop.instance_lock import ServerLock
from sublane_desktop.service import Service
from sublane_desktop.store import repositories as repo
from sublane_desktop.store.connection import Store
from tests.conftest import file_keyring

LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def when(condition, then, *, attempts=500):
    """Re-check `condition` on the running Qt loop (no sleeping), then call then()."""
    if condition():
        then()
    elif attempts == 0:
        raise AssertionError("condition never became true")
    else:
        QTimer.singleShot(10, lambda: when(condition, then, attempts=attempts - 1))


def visible(kind):
    return [w for w in QApplication.topLevelWidgets() if isinstance(w, kind) and w.isVisible()]


def real_service_factory(tmp_path, port, made):
    secrets = SecretStore(tmp_path, backend=file_keyring(tmp_path / "keyring.cfg"))

    def factory(other_port=None):
        service = Service(
            tmp_path / "data",
            host="127.0.0.1",
            port=port if other_port is None else other_port,
            secret_store=secrets,
        )
        made.append(service)
        return service

    return factory


def healthz(port: int) -> dict:
    with LOCAL.open(f"http://127.0.0.1:{port}/healthz", timeout=5) as resp:
        return json.loads(resp.read())


def test_port_in_use_dialog_starts_the_proxy_on_the_port_picked(qapp, tmp_path, capsys):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    taken_port = taken.getsockname()[1]
    made: list[Service] = []
    seen = {}

    def pick_offered_port():
        (dialog,) = visible(PortInUseDialog)
        seen["text"] = " ".join(label.text() for label in dialog.findChildren(QLabel))
        seen["offered"] = dialog.port_box.value()
        assert not dialog.remember_box.isChecked()  # one-off unless the person asks
        dialog.remember_box.setChecked(True)
        dialog.start_button.click()
        when(
            lambda: (
                len(made) == 2 and made[1]._server is not None and made[1].port == seen["offered"]
            ),
            check_and_quit,
        )

    def check_and_quit():
        # From another thread: the proxy answers on this (the Qt) thread's loop.
        threading.Thread(
            target=lambda: seen.update(health=healthz(seen["offered"])), daemon=True
        ).start()
        when(lambda: "health" in seen, QApplication.quit)

    try:
        QTimer.singleShot(0, lambda: when(lambda: visible(PortInUseDialog), pick_offered_port))
        assert (
            gui_main.run(real_service_factory(tmp_path, taken_port, made), tmp_path / "data") == 0
        )
    finally:
        taken.close()
    assert f"Port {taken_port} on 127.0.0.1 is already used" in seen["text"]
    assert seen["offered"] != taken_port and seen["health"]["port"] == seen["offered"]
    err = capsys.readouterr().err
    assert f"sublane: error: port {taken_port} on 127.0.0.1 is already in use" in err
    assert "Traceback" not in err and "Unclosed" not in err
    # "Use this port from now on" saved it; the quit removed server.json.
    store = Store(tmp_path / "data" / "sublane.db")
    try:
        assert repo.get_setting("server.port", None) == seen["offered"]
    finally:
        store.close()
    assert not (tmp_path / "data" / "server.json").exists()


def test_port_in_use_dialog_quit_ends_the_app(qapp, tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    made: list[Service] = []

    def quit_dialog():
        (dialog,) = visible(PortInUseDialog)
        dialog.quit_button.click()

    try:
        QTimer.singleShot(0, lambda: when(lambda: visible(PortInUseDialog), quit_dialog))
        assert (
            gui_main.run(
                real_service_factory(tmp_path, taken.getsockname()[1], made), tmp_path / "data"
            )
            == 1
        )
    finally:
        taken.close()
    assert len(made) == 1 and made[0]._server is None and made[0].http is None


def test_data_dir_served_by_another_process_is_a_dialog(qapp, tmp_path, capsys):
    (tmp_path / "data").mkdir()
    other = ServerLock(tmp_path / "data")  # as a running `sublane serve` holds it
    other.acquire()
    (tmp_path / "data" / "server.json").write_text(
        json.dumps(
            {"pid": os.getpid(), "url": "http://127.0.0.1:9999", "host": "127.0.0.1", "port": 9999}
        )
    )
    texts = []

    def close_box():
        (box,) = visible(QMessageBox)
        texts.append((box.text(), box.informativeText()))
        box.button(QMessageBox.StandardButton.Close).click()

    try:
        QTimer.singleShot(0, lambda: when(lambda: visible(QMessageBox), close_box))
        assert gui_main.run(real_service_factory(tmp_path, 0, []), tmp_path / "data") == 1
    finally:
        other.release()
    (text, next_step) = texts[0]
    assert "already serving this data dir at http://127.0.0.1:9999" in text
    assert "quit it first" in next_step
    assert "already serving" in capsys.readouterr().err
    assert (tmp_path / "data" / "server.json").exists()  # the other server's file is left alone
