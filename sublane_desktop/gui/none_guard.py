"""Keep `None`, `True` and `False` alive under PySide6's QVariant refcount bug (found by
`bench_proxy --tray`, and for the booleans by `bench_soak --tray`).

PySide6 6.12 on CPython 3.11 drops one reference to `None` each time a Qt call hands back an
empty QVariant as `None` — `QModelIndex.data()` for a role the model leaves empty,
`QComboBox.currentData()` on an "All …" entry, `QSettings.value()` of a missing key,
`QObject.property()`. The Requests window's painter asks for such roles for every cell of
every repaint, so after some minutes of live traffic `None`'s count reaches zero and the app
dies with "Fatal Python error: none_dealloc". Each emission of a Qt signal carrying a bool
(`Signal(bool)`) does the same to the `True` or `False` it carries: with its windows open under
steady traffic the tray app died with "bool_dealloc" after ~3,500 requests.

CPython 3.12 made all three immortal; this gives 3.11 the same: one large reference count
added to each once, at GUI start, far beyond what any session can lose. Nothing else changes.
"""

from __future__ import annotations

import ctypes
import sys

# 2**40 references: a million lost a second would take twelve days to spend.
BALLAST = 1 << 40


SINGLETONS = (None, True, False)


def install() -> bool:
    """Make `None`, `True` and `False` effectively immortal on interpreters where they are
    not; idempotent."""
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return False
    added = False
    for singleton in SINGLETONS:
        if sys.getrefcount(singleton) < BALLAST:
            refcount = ctypes.c_ssize_t.from_address(id(singleton))  # ob_refcnt comes first
            refcount.value += BALLAST
            added = True
    return added
