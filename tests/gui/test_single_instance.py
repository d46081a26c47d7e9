import uuid
from pathlib import Path

from sublane_desktop.gui.single_instance import (
    Answer,
    PreviousInstanceWait,
    SingleInstance,
    instance_name,
)


def unique_name():
    return f"sublane-test-{uuid.uuid4().hex[:12]}"


def test_second_instance_finds_first_and_asks_it_to_show(qtbot):
    name = unique_name()
    first = SingleInstance(name)
    assert not first.already_running()
    shown = []
    assert first.listen(lambda: shown.append(True))
    try:
        second = SingleInstance(name)
        assert second.already_running()
        qtbot.waitUntil(lambda: shown == [True], timeout=2000)
    finally:
        first.close()


def test_after_close_nobody_is_running(qtbot):
    name = unique_name()
    first = SingleInstance(name)
    assert first.listen(lambda: None)
    first.close()
    assert not SingleInstance(name).already_running()


def test_name_depends_on_data_dir(tmp_path):
    a, b = instance_name(tmp_path / "a"), instance_name(tmp_path / "b")
    assert a != b and a.startswith("sublane-") and len(a) == len("sublane-") + 12
    assert instance_name(Path(tmp_path / "a")) == a


def test_an_instance_that_is_quitting_says_so_and_shows_nothing(qtbot):
    """Asked while it drains after Quit, it must not claim to show a window it is closing."""
    name = unique_name()
    first = SingleInstance(name)
    shown = []
    quitting = [False]
    assert first.listen(lambda: shown.append(True), quitting=lambda: quitting[0])
    try:
        assert SingleInstance(name).ask_to_show() is Answer.SHOWN
        assert shown == [True]
        quitting[0] = True
        assert SingleInstance(name).ask_to_show() is Answer.QUITTING
        assert shown == [True]  # not asked to show again
        assert SingleInstance(name).still_running()
    finally:
        first.close()
    assert SingleInstance(name).ask_to_show() is Answer.NOBODY
    assert not SingleInstance(name).still_running()


def test_waiting_for_a_quitting_instance_is_bounded_and_says_so(qtbot):
    """If the old one never goes, the wait ends: the window says what happened and what to do,
    and Close gives up (the launch then exits with an error)."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QDialogButtonBox

    name = unique_name()
    stuck = SingleInstance(name)
    assert stuck.listen(lambda: None, quitting=lambda: True)
    try:
        waiting = PreviousInstanceWait(SingleInstance(name), timeout_s=0)
        qtbot.addWidget(waiting)
        said = []

        def close_when_told():
            if not waiting.timed_out:
                QTimer.singleShot(10, close_when_told)
                return
            said.append(waiting.message.text())
            waiting.buttons.button(QDialogButtonBox.StandardButton.Close).click()

        QTimer.singleShot(0, close_when_told)
        assert waiting.wait() is False
        assert waiting.timed_out
        assert "has not finished after 0 seconds" in said[0]
    finally:
        stuck.close()
