"""Server-made ids: request ids are unique; correlation ids are also unguessable (R-POOL-6)."""

from __future__ import annotations

import re
import threading

from sublane_desktop.core.ids import _Entropy, new_request_id, random_hex


def test_request_ids_are_unique_and_shaped_like_the_spec_says():
    ids = [new_request_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"req_[0-9a-f]{24}", i) for i in ids)


def test_correlation_ids_never_repeat_across_pool_refills_or_threads():
    """Drawn from the OS's random pool a few KiB at a time: every draw gets fresh bytes, also
    when two threads draw at once and across every refill."""
    drawn: list[list[str]] = [[], []]

    def draw(into: list[str]) -> None:
        into.extend(random_hex(16) for _ in range(5_000))

    threads = [threading.Thread(target=draw, args=(d,)) for d in drawn]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = drawn[0] + drawn[1]
    assert len(set(every)) == 10_000
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in every)
    odd = [random_hex(n) for n in (1, 7, 4096, 5000)]  # sizes that straddle the pool
    assert [len(h) for h in odd] == [2, 14, 8192, 10000]


def test_a_fresh_pool_hands_out_os_bytes_from_its_first_draw():
    """A pool made now (not the module's, made at import) draws from the OS at once: no
    stand-in bytes come first, and a correlation id is 16 bytes unless asked otherwise."""
    firsts = {_Entropy().take(2) for _ in range(64)}
    assert len(firsts) > 32  # 64 draws of 16 bits: a fixed prefix would repeat
    assert all(len(f) == 2 for f in firsts)
    assert len(random_hex()) == 32
