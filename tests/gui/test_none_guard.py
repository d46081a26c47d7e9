"""The tray app must survive PySide6's habit of dropping a reference to None each time an
empty QVariant comes back (it crashed the app under `bench_proxy --tray`), and to True or
False each time a bool QVariant does (it crashed the app under `bench_soak --tray`)."""

import subprocess
import sys

PROBE = """
import sys
from PySide6.QtWidgets import QApplication, QComboBox
app = QApplication([])
had = sys.getrefcount(None)
if {guard}:
    import sublane_desktop.gui  # installs the guard
combo = QComboBox()
combo.addItem("All outcomes", None)  # the Requests window's filters start like this
start = sys.getrefcount(None)
for _ in range(had + 1000):  # more than None had: without the guard, the process dies
    combo.currentData()
print("alive", start - sys.getrefcount(None))
"""


# A Qt signal carrying a bool, as a checkbox's `toggled` or a window's own flags: each emission
# drops a reference to the value sent.
BOOL_PROBE = """
import sys
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QApplication
app = QApplication([])
had = max(sys.getrefcount(True), sys.getrefcount(False))
if {guard}:
    import sublane_desktop.gui  # installs the guard
class Switch(QObject):
    flipped = Signal(bool)
switch = Switch()
switch.flipped.connect(lambda on: None)
for _ in range(had + 1000):  # more than either had: without the guard, the process dies
    switch.flipped.emit(True)
    switch.flipped.emit(False)
print("alive")
"""


def run(guard: bool, probe: str = PROBE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", probe.format(guard=guard)],
        text=True,
        capture_output=True,
        timeout=120,
        check=False,
        env={
            "QT_QPA_PLATFORM": "offscreen",
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": ":".join(sys.path),
        },
    )


def test_the_bug_is_real_and_the_guard_survives_it():
    bare = run(guard=False)
    if sys.version_info < (3, 12):
        assert "none_dealloc" in bare.stderr, bare.stderr[-500:]  # the crash we guard against
    guarded = run(guard=True)
    assert guarded.returncode == 0, guarded.stderr[-1000:]
    assert guarded.stdout.startswith("alive")


def test_true_and_false_survive_signals_that_carry_them():
    bare = run(guard=False, probe=BOOL_PROBE)
    if sys.version_info < (3, 12):
        assert "bool_dealloc" in bare.stderr, bare.stderr[-500:]  # the crash we guard against
    guarded = run(guard=True, probe=BOOL_PROBE)
    assert guarded.returncode == 0, guarded.stderr[-1000:]
    assert guarded.stdout.startswith("alive")
