"""Keep `None` alive under PySide6's QVariant refcount bug (found by `bench_proxy --tray`).

PySide6 6.12 on CPython 3.11 drops one reference to `None` each time a Qt call hands back an
empty QVariant as `None` — `QModelIndex.data()` for a role the model leaves empty,
`QComboBox.currentData()` on an "All …" entry, `QSettings.value()` of a missing key,
`QObject.property()`. The Requests window's painter asks for such roles for every cell of
every repaint, so after some minutes of live traffic `None`'s count reaches zero and the app
dies with "Fatal Python error: none_dealloc".

CPython 3.12 made `None` immortal; this gives 3.11 the same: one large reference count added
once, at GUI start, far beyond what any session can lose. Nothing else changes.
"""

from __future__ import annotations

import ctypes
import sys

# 2**40 references: a million lost a second would take twelve days to spend.
BALLAST = 1 << 40


def install() -> bool:
    """Make `None` effectively immortal on interpreters where it is not; idempotent."""
    if sys.version_info >= (3, 12) or sys.getrefcount(None) >= BALLAST:
        return False
    if sys.implementation.name != "cpython":
        return False
    refcount = ctypes.c_ssize_t.from_address(id(None))  # ob_refcnt is the first field
    refcount.value += BALLAST
    return True
