"""A real, started Service on a FakeClock, driven by a qasync loop inside a plain (sync) test.

pytest-qt has no qasync support, and waiting with qtbot inside an asyncio test would re-enter
the loop. So these tests are ordinary functions: a qasync loop is made the *running* loop for
the test's duration, and every Qt wait (qtbot.waitUntil / waitSignal) also runs the asyncio
callbacks, because qasync schedules them as Qt timers. Nothing sleeps.
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ["QT_API"] = "pyside6"

import pytest
import qasync
from keyrings.alt.file import PlaintextKeyring

from sublane_desktop.accounts.secrets import SecretStore
from sublane_desktop.core.clock import FakeClock
from sublane_desktop.core.records import RequestRecord
from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.service import Service
from sublane_desktop.store import repositories as repo

WAIT_MS = 5000
MODELS = ("claude-sonnet-4-5", "claude-fable-5", "gpt-5-codex")


@dataclass
class Desk:
    """The service, its bridge and a way to run coroutines to completion from a sync test."""

    service: Service
    bridge: Bridge
    clock: FakeClock
    qtbot: Any
    admin_key_id: int = 0
    member_key_id: int = 0
    member_id: int = 0
    account_ids: tuple[int, ...] = ()

    def run(self, coro: Coroutine[Any, Any, Any], timeout: int = WAIT_MS) -> Any:
        task = asyncio.get_running_loop().create_task(coro)
        self.qtbot.waitUntil(task.done, timeout=timeout)
        return task.result()

    def record(self, i: int, **fields: Any) -> RequestRecord:
        """A plausible record; `i` makes its id and time (higher i = newer)."""
        defaults: dict[str, Any] = {
            "request_id": f"req_{i:04d}" + "ab12cd34ef56ab12cd34"[:20],
            "user_id": 1,
            "key_id": self.admin_key_id,
            "group_id": 1,
            "provider": "anthropic",
            "model": MODELS[i % len(MODELS)],
            "protocol": "anthropic",
            "operation": "messages",
            "started_at": self.clock.now() - 3600 + i * 10,
            "account_id": self.account_ids[i % len(self.account_ids)] if self.account_ids else None,
            "duration_ms": 800 + i,
            "first_token_ms": None if i % 5 == 0 else 300 + i,
            "outcome": "error" if i % 7 == 0 else "success",
            "error_code": "upstream_error" if i % 7 == 0 else None,
            "upstream_status": 529 if i % 7 == 0 else 200,
            "input_tokens": 1000 + i,
            "output_tokens": 50 + i,
            "cached_tokens": 500 if i % 2 else 0,
        }
        defaults.update(fields)
        return RequestRecord(**defaults)

    def seed(self, count: int, *, member_every: int = 4) -> list[RequestRecord]:
        """`count` records, oldest first; every `member_every`-th belongs to the member."""
        made = []
        for i in range(count):
            extra = {}
            if member_every and i % member_every == member_every - 1:
                extra = {"user_id": self.member_id, "key_id": self.member_key_id}
            made.append(self.record(i, **extra))
            self.service.record(made[-1])
        self.run(self.service.flush_records())
        return made


def file_keyring(path: Path) -> PlaintextKeyring:
    backend = PlaintextKeyring()
    backend.file_path = str(path)
    return backend


@pytest.fixture(name="desk")
def desk_fixture(qapp, qtbot, tmp_path: Path) -> Iterator[Desk]:
    """Import `desk_fixture` into a test module; tests then take a `desk` argument."""
    # No automatic collection while database threads run: a collection on one of them could
    # destroy an earlier test's QObjects there. Collected on this thread at setup and teardown.
    gc.collect()
    gc.disable()
    loop = qasync.QEventLoop(qapp)
    asyncio.events._set_running_loop(loop)
    clock = FakeClock()
    service = Service(
        tmp_path / "data",
        port=0,
        clock=clock,
        secret_store=SecretStore(tmp_path, backend=file_keyring(tmp_path / "keyring.cfg")),
    )
    desk = Desk(service=service, bridge=None, clock=clock, qtbot=qtbot)
    try:
        desk.run(service.start())

        def setup() -> tuple[int, int, int, tuple[int, ...]]:
            admin = repo.ensure_admin()
            member = repo.add_user("sam")
            group = repo.get_or_create_group("default")
            admin_key, _ = repo.create_key("laptop", admin, group)
            member_key, _ = repo.create_key("sam-laptop", member, group)
            accounts = tuple(
                repo.add_account("anthropic", name, "oauth", group).id for name in ("work", "home")
            )
            return admin_key.id, member_key.id, member.id, accounts

        (desk.admin_key_id, desk.member_key_id, desk.member_id, desk.account_ids) = desk.run(
            service.store.write(setup)
        )
        desk.bridge = Bridge(service)
        yield desk
    finally:
        if desk.bridge is not None:
            desk.bridge.close()
        desk.run(service.stop(drain_timeout=1))
        asyncio.events._set_running_loop(None)
        loop.close()
        # The loop's QObjects (timers, signaller) sit in reference cycles; collect them here,
        # on the GUI thread: a collection on a database thread would destroy them there.
        del loop, desk
        gc.enable()
        gc.collect()
