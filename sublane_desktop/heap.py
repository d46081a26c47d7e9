"""Memory of a long-running proxy process (`serve` and the tray): the garbage collector's
settings, and freed heap pages handed back to the system.

Once started, what exists lives as long as the process does: modules, the service and its
caches, and in the tray the Qt objects. Frozen, the collector's full passes no longer walk
those tens of thousands of objects again and again, each walk a pause of 15-30 ms in the
middle of other requests. And a larger young generation keeps every young pass from promoting
the objects of the requests in flight (8 of them hold about Python's default 700) to the
older generations, which is what made the full passes come so often. Measured with
`tests/bench/bench_proxy --tray`: the collector's share of serve's CPU fell from about 6 % to 1 %.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import logging
import platform
from collections.abc import Callable

log = logging.getLogger(__name__)

YOUNG = 5000  # Python's default is 700


def settle() -> None:
    """Call once, when start-up is over and before requests arrive."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG, older, oldest)


# --- freed memory back to the system ----------------------------------------------------------
# A proxy frees almost everything each request allocated, but glibc's malloc keeps freed pages
# inside its heaps for reuse and returns them only from the very top of a heap. Over weeks of
# traffic the resident size then creeps up although nothing is kept: in the soak benchmark a
# bare aiohttp relay that keeps nothing grew +4.5 MB over 18,000 requests and the tray app
# +5.7 MB; with `malloc_trim(0)` called every second in both (same machine, next run) +1.0 and
# +3.4 MB. `malloc_trim` hands the free pages inside the heaps back (madvise) in a few
# milliseconds (24 ms after freeing 100 MB, ~1 ms when little changed), so the service calls it
# on its 30-second tick, in a worker thread. Elsewhere (macOS, Windows, musl) it does nothing:
# those allocators return memory by themselves or offer no such call.


def _find_trim() -> Callable[[int], int] | None:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_TRIM = _find_trim()


def available() -> bool:
    return _TRIM is not None


def give_back() -> bool:
    """Return the free pages of malloc's heaps to the system; True when some were."""
    return bool(_TRIM(0)) if _TRIM is not None else False


async def give_back_off_loop() -> None:
    """The same, in a worker thread (ctypes lets go of the GIL), so no stream waits on it."""
    if _TRIM is None:
        return
    try:
        await asyncio.to_thread(give_back)
    except RuntimeError:  # the default executor is closing with the process
        log.debug("freed memory not given back: the executor is closing")
