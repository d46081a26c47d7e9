"""The collector's settings for the long-running processes (serve, the tray)."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import threading

import pytest

from sublane_desktop import heap
from sublane_desktop import service as service_module
from sublane_desktop.core.tasks import spawn


def test_settling_freezes_what_start_up_made_and_widens_the_young_generation():
    threshold = gc.get_threshold()
    try:
        kept_from_start_up = [object() for _ in range(10)], {"service": "state"}
        heap.settle()
        assert gc.get_freeze_count() >= len(gc.get_referents(kept_from_start_up))
        assert gc.get_threshold() == (heap.YOUNG, threshold[1], threshold[2])
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


GIVE_BACK = """
import sys
from sublane_desktop import heap

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 1e6

chunks = [bytes(1024 + i % 7) for i in range(100_000)]  # ~100 MB in malloc's heap
kept = chunks[::50]  # a live chunk every 50 keeps the heap's top from shrinking by itself
del chunks
before = rss_mb()
heap.give_back()
print(before - rss_mb())
"""


@pytest.mark.skipif(not heap.available(), reason="malloc_trim is glibc's")
def test_freed_heap_pages_go_back_to_the_system():
    """Weeks of uptime: what requests allocated and freed does not stay resident (in its own
    process, so the heap is one this test shaped)."""
    done = subprocess.run(
        [sys.executable, "-c", GIVE_BACK], capture_output=True, text=True, check=True
    )
    assert float(done.stdout) > 50  # MB the system got back


async def test_the_service_tick_gives_freed_memory_back(harness, monkeypatch):
    """The service hands freed pages back on its evaluation tick, off the event loop."""
    given = asyncio.Event()
    threads = []

    def give_back() -> bool:
        threads.append(threading.current_thread())
        given.set()
        return True

    monkeypatch.setattr(heap, "give_back", give_back)
    monkeypatch.setattr(heap, "_TRIM", lambda pad: 1)
    monkeypatch.setattr(service_module, "TICK_SECONDS", 0.005)
    service = harness.service
    service._tick.cancel()
    service._tick = spawn(service._evaluation_tick(), name="scheduler-tick")
    await asyncio.wait_for(given.wait(), 10)
    assert threads[0] is not threading.main_thread()
