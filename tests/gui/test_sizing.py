"""R-UI-10: a window opens at its default size, and a word-wrapped sentence in it is never cut
at its second line, whatever width it gets (the layout audit in test_layout.py checks the real
windows, in subprocesses; this holds the two helpers to their promises in-process)."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QDialog, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QSplitter

from sublane_desktop.gui.sizing import DEFAULT_SIZE, keep_wrapped_text_whole, set_default_size

SENTENCE = (
    "The port the proxy listens on; tools set up before a change keep the old one until they "
    "are set up again, so change it only when another program needs this one."
)


def test_a_window_opens_at_its_default_size_and_remembers_it(qtbot):
    window = QDialog()
    qtbot.addWidget(window)
    set_default_size(window, 640, 380)
    assert window.property(DEFAULT_SIZE) == QSize(640, 380)
    window.show()
    qtbot.waitExposed(window)
    assert window.size() == QSize(640, 380)


def test_a_window_without_a_default_height_opens_as_tall_as_its_content(qtbot):
    window, _note = form(qtbot)
    set_default_size(window, 640, 0)
    assert window.property(DEFAULT_SIZE) == QSize(640, 0)
    assert window.size() == QSize(640, window.sizeHint().height())


def form(qtbot, *, wrap: bool = True, hidden: bool = False) -> tuple[QDialog, QLabel]:
    window = QDialog()
    qtbot.addWidget(window)
    layout = QFormLayout(window)
    layout.addRow("Port", QLineEdit())
    note = QLabel(SENTENCE)
    note.setWordWrap(wrap)
    note.setVisible(not hidden)
    layout.addRow(note)
    keep_wrapped_text_whole(window)
    return window, note


def whole(note: QLabel) -> bool:
    return note.height() >= note.heightForWidth(note.width()) > note.fontMetrics().height()


def test_a_wrapped_sentence_gets_the_height_of_all_its_lines_as_the_window_opens(qtbot):
    window, note = form(qtbot)
    window.resize(300, 60)
    window.show()
    qtbot.waitExposed(window)
    qtbot.waitUntil(lambda: whole(note))
    assert note.minimumHeight() == note.heightForWidth(note.width())


def test_a_wrapped_sentence_grows_when_the_window_is_made_narrower(qtbot):
    window, note = form(qtbot)
    window.resize(700, 200)
    window.show()
    qtbot.waitExposed(window)
    qtbot.waitUntil(lambda: whole(note))
    wide = note.minimumHeight()
    window.resize(260, window.height())
    qtbot.waitUntil(lambda: note.minimumHeight() > wide and whole(note))


def test_one_line_and_hidden_labels_are_left_as_they_are(qtbot):
    window, plain = form(qtbot, wrap=False)
    window.show()
    qtbot.waitExposed(window)
    assert plain.minimumHeight() == 0
    window, hidden = form(qtbot, hidden=True)
    window.show()
    qtbot.waitExposed(window)
    assert hidden.minimumHeight() == 0


def test_a_wrapped_sentence_narrowed_inside_the_window_grows_and_is_still_drawn(qtbot):
    """A splitter moved by the person narrows the label without resizing the window: the label's
    own width change is watched too, and watching it swallows none of its events."""
    window = QDialog()
    qtbot.addWidget(window)
    splitter = QSplitter(window)
    note = QLabel(SENTENCE)
    note.setWordWrap(True)
    splitter.addWidget(note)
    splitter.addWidget(QLineEdit())
    QHBoxLayout(window).addWidget(splitter)
    keep_wrapped_text_whole(window)
    window.resize(900, 300)
    window.show()
    qtbot.waitExposed(window)
    qtbot.waitUntil(lambda: whole(note))
    wide, size = note.minimumHeight(), window.size()
    splitter.setSizes([200, 700])
    qtbot.waitUntil(lambda: note.width() <= 200)
    assert window.size() == size
    qtbot.waitUntil(lambda: note.minimumHeight() > wide and whole(note))
    picture = note.grab().toImage()
    ink = {
        picture.pixelColor(x, y).lightness()
        for x in range(0, picture.width(), 3)
        for y in range(0, picture.height(), 3)
    }
    assert min(ink) < 128 < max(ink)  # dark text on a light ground: the sentence is painted
