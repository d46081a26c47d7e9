"""The fake Anthropic upstream on its own loop in a daemon thread, for tests that drive the real
`sublane` command in subprocesses (their test bodies are plain synchronous code)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

from tests.fake_upstream import FakeAnthropic, Reply

T = TypeVar("T")


class ThreadedUpstream:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="fake-upstream", daemon=True
        )
        self._thread.start()
        self.fake: FakeAnthropic = self.call(self._make)
        self.url = self.fake.url

    @staticmethod
    async def _make() -> FakeAnthropic:
        fake = FakeAnthropic()
        await fake.start()
        return fake

    def call(self, make: Callable[[], Awaitable[T]], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(make(), self.loop).result(timeout)

    def gate(self) -> asyncio.Event:
        """An event on the upstream's loop: a stream scripted with it waits before finishing."""

        async def make() -> asyncio.Event:
            return asyncio.Event()

        return self.call(make)

    def open_gate(self, gate: asyncio.Event) -> None:
        self.loop.call_soon_threadsafe(gate.set)

    def script(self, token: str | None, *replies: Reply) -> None:
        """Queue replies; in place before this returns, so the next request finds them."""

        async def add() -> None:
            self.fake.script(token, *replies)

        self.call(add)

    def close(self) -> None:
        self.call(self.fake.stop)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()
