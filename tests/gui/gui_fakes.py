"""A small fake of the service interface the GUI uses (until tests can use the real one)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from sublane_desktop.accounts.secrets import SYSTEM, SecretHome
from sublane_desktop.core.clock import FakeClock
from sublane_desktop.core.events import EventBus
from sublane_desktop.service import SCHEDULER_SETTINGS


def account(name: str, state: str = "ok", *, id: int = 1, current: bool = False) -> dict[str, Any]:
    return {
        "id": id,
        "name": name,
        "provider": "anthropic",
        "state": state,
        "in_flight": 0,
        "max_concurrency": 2,
        "paused": state == "paused",
        "pinned_until": None,
        "cooldown_until": None,
        "failure_streak": 0,
        "current": current,
        "fable_current": False,
        "gauges": {},
    }


class FakeService:
    """Exactly the members the GUI may rely on, plus bookkeeping for assertions."""

    def __init__(self, accounts: list[dict[str, Any]] | None = None, port: int = 8765) -> None:
        self.bus = EventBus()
        self.clock = FakeClock()
        self.settings: dict[str, Any] = dict(SCHEDULER_SETTINGS)
        self.keyring_problem: str | None = None
        self.drain_timeout: float | None = None
        self._port = port
        self._accounts = accounts if accounts is not None else [account("work", current=True)]
        self.started = False
        self.stopped = False

    def secret_home(self) -> SecretHome | None:
        return None if self.keyring_problem else SecretHome(SYSTEM)

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    async def start(self) -> None:
        await asyncio.sleep(0)
        self.started = True

    async def stop(self, drain_timeout: float = 10.0) -> None:
        await asyncio.sleep(0)  # a real suspension: only true if stop() was actually awaited
        self.drain_timeout = drain_timeout
        self.stopped = True

    def accounts_runtime(self) -> dict[str, Any]:
        accounts = copy.deepcopy(self._accounts)
        return {"accounts": accounts, "in_flight": 0, "cap": 8}

    # test helper: what the core does when the pool changes
    def set_accounts(self, accounts: list[dict[str, Any]]) -> None:
        self._accounts = accounts
        self.bus.publish("accounts.changed")
