"""The tray app must survive PySide6's habit of dropping a reference to None each time an
empty QVariant comes back (it crashed the app under `bench_proxy --tray`)."""

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


def run(guard: bool) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE.format(guard=guard)],
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
