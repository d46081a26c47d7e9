"""The collector's settings for the long-running processes (serve, the tray)."""

from __future__ import annotations

import gc

from sublane_desktop import heap


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
