"""Stopping the service while a quota read is in flight (the Accounts window just polled)."""

import asyncio
import logging


async def test_stop_cancels_quota_reads_in_flight(harness, caplog):
    h = harness
    await h.add_account("a", "tok-a")
    h.upstream.usage_gate = asyncio.Event()  # the usage endpoint never answers
    tasks = h.service.refresher.want(h.service.quota_candidates(), force=True)
    assert len(tasks) == 1
    while not h.upstream.usage_in_flight:  # the read reached the upstream
        await asyncio.sleep(0)
    with caplog.at_level(logging.ERROR):
        await h.service.stop(drain_timeout=1)
    assert tasks[0].cancelled()
    assert "background task" not in caplog.text
    h.upstream.usage_gate.set()
