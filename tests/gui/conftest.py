"""Qt tests run offscreen against a small fake of the service interface."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

# Must precede any Qt import: the platform plugin is chosen when QApplication is created,
# and qasync reads QT_API when it is imported.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["QT_API"] = "pyside6"

# The package is not installed in the venv and pyproject sets no pytest `pythonpath`; fall back
# to the checkout so `pytest tests/gui` works from the repo root either way.
if importlib.util.find_spec("sublane_desktop") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pytest
from gui_fakes import FakeService, account


@pytest.fixture
def service() -> FakeService:
    return FakeService(
        [account("work", "ok", id=1, current=True), account("home", "cooling", id=2)]
    )


# --- a real service for the widgets ---------------------------------------------------------------

import asyncio

import aiohttp

from sublane_desktop.core.clock import FakeClock
from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.service import Service
from tests.conftest import Harness
from tests.fake_upstream import CLAUDE_CODE_HEADERS

BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}


@pytest.fixture(autouse=True)
def _collect_qt_garbage_on_the_gui_thread():
    """Bridges and widgets a test dropped sit in reference cycles with live QTimers. Collect them
    here, on the GUI thread: if the next test's database or keyring thread happened to trigger
    the collection, Qt objects would be destroyed on the wrong thread (and crash)."""
    yield
    import gc

    gc.collect()


@pytest.fixture(autouse=True)
def _private_config_home(tmp_path, monkeypatch):
    """Start-at-login writes under XDG_CONFIG_HOME: never into the real ~/.config."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))


class Live(Harness):
    """A started Service on a FakeClock (the GUI's real API), the fake upstream, a bridge."""

    clock: FakeClock
    bridge: Bridge

    async def api(self, method: str, path: str, body=None):
        headers = {"Authorization": f"Bearer {self.service.admin_token}"}
        async with (
            aiohttp.ClientSession() as session,
            session.request(method, self.url + path, json=body, headers=headers) as r,
        ):
            return r.status, await r.json(content_type=None)

    async def runtime(self, name: str) -> dict:
        status, body = await self.api("GET", "/api/accounts/runtime")
        assert status == 200, body
        return next(a for a in body["accounts"] if a["name"] == name)

    async def message(self, key: str) -> int:
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                self.url + "/v1/messages",
                json=BODY,
                headers={"x-api-key": key, **CLAUDE_CODE_HEADERS},
            ) as r,
        ):
            await r.read()
            return r.status


@pytest.fixture
async def live(qapp, tmp_path, upstream, secret_store):
    clock = FakeClock()
    service = Service(
        tmp_path / "data",
        port=0,
        clock=clock,
        secret_store=secret_store,
        env={"SUBLANE_ANTHROPIC_BASE_URL": upstream.url, "SUBLANE_OAUTH_BASE_URL": upstream.url},
    )
    await service.start()
    h = Live(service, upstream)
    h.clock = clock
    h.bridge = Bridge(service)
    try:
        yield h
    finally:
        await h.bridge.wait_idle()
        h.bridge.close()
        # Opening the Accounts window starts quota reads; let them end before the service
        # closes its HTTP session under them.
        await asyncio.gather(*service.refresher._running.values(), return_exceptions=True)
        await service.stop(drain_timeout=2)
