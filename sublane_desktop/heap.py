"""The garbage collector's settings for a long-running proxy process (`serve` and the tray).

Once started, what exists lives as long as the process does: modules, the service and its
caches, and in the tray the Qt objects. Frozen, the collector's full passes no longer walk
those tens of thousands of objects again and again, each walk a pause of 15-30 ms in the
middle of other requests. And a larger young generation keeps every young pass from promoting
the objects of the requests in flight (8 of them hold about Python's default 700) to the
older generations, which is what made the full passes come so often. Measured with
`tests/bench/bench_proxy --tray`: the collector's share of serve's CPU fell from about 6 % to 1 %.
"""

from __future__ import annotations

import gc

YOUNG = 5000  # Python's default is 700


def settle() -> None:
    """Call once, when start-up is over and before requests arrive."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG, older, oldest)
