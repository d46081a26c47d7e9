"""Background tasks cannot vanish (core/tasks.py): named, referenced until they end, a crash
logged with the task's name, and shutdown waits for them within its bound."""

from __future__ import annotations

import asyncio
import gc
import logging

from sublane_desktop.core import tasks


def running_names() -> set[str]:
    # The registry is process-wide: other tests' tasks may be in it too.
    return {task.get_name() for task in tasks._running}


async def test_a_task_nobody_holds_still_runs_to_its_end_and_is_then_let_go():
    gate, finished = asyncio.Event(), asyncio.Event()

    async def work() -> None:
        await gate.wait()
        finished.set()

    task = tasks.spawn(work(), name="quota-refresh")
    assert task.get_name() == "quota-refresh"
    del task
    gc.collect()  # a bare create_task could be collected here, mid-flight
    gate.set()
    await asyncio.wait_for(finished.wait(), 5)
    await asyncio.sleep(0)  # its done callback runs on the next loop pass
    assert "quota-refresh" not in running_names()  # nothing kept once it ended


async def test_a_crash_is_logged_with_the_tasks_name_and_a_cancel_is_not(caplog):
    async def crash() -> None:
        raise RuntimeError("disk gone")

    async def forever() -> None:
        await asyncio.Event().wait()

    with caplog.at_level(logging.ERROR, logger="sublane_desktop.core.tasks"):
        crashed = tasks.spawn(crash(), name="record-writer")
        await asyncio.wait([crashed])
        cancelled = tasks.spawn(forever(), name="poller")
        await asyncio.sleep(0)  # let it start, then cancel it
        cancelled.cancel()
        await asyncio.wait([cancelled])
        await asyncio.sleep(0)  # done callbacks run on the next loop pass
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["background task record-writer failed: RuntimeError('disk gone')"]
    assert not {"record-writer", "poller"} & running_names()


async def test_drain_waits_for_running_tasks_but_only_as_long_as_its_bound():
    gate = asyncio.Event()
    stuck = tasks.spawn(asyncio.Event().wait(), name="stuck")
    quick = tasks.spawn(gate.wait(), name="quick")
    gate.set()
    await tasks.drain(0.05)  # returns although one task never ends
    assert quick.done() and not stuck.done()
    stuck.cancel()
    await asyncio.wait([stuck])
