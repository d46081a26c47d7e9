import asyncio

from gui_fakes import FakeService, account

from sublane_desktop.gui.bridge import Bridge


def test_bus_events_become_signals(qtbot, service):
    bridge = Bridge(service)
    with qtbot.waitSignal(bridge.accountsChanged, timeout=1000):
        service.bus.publish("accounts.changed")
    with qtbot.waitSignal(bridge.accountsChanged, timeout=1000):
        service.bus.publish("accounts.state", id=1)
    with qtbot.waitSignal(bridge.recordAdded, timeout=1000) as blocker:
        service.bus.publish("records.added", id="req_1", model="m")
    assert blocker.args == [{"id": "req_1", "model": "m"}]
    with qtbot.assertNotEmitted(bridge.accountsChanged):
        service.bus.publish("records.added", id="req_2")


def test_reads_forward_to_service(qtbot, service):
    bridge = Bridge(service)
    assert [a["name"] for a in bridge.accounts()] == ["work", "home"]
    assert bridge.endpoint_url() == "http://127.0.0.1:8765"


def test_close_unsubscribes(qtbot, service):
    bridge = Bridge(service)
    bridge.close()
    with qtbot.assertNotEmitted(bridge.accountsChanged):
        service.bus.publish("accounts.changed")


class LeverService(FakeService):
    def __init__(self):
        super().__init__([account("work")])
        self.calls = []

    async def switch(self, name):
        self.calls.append(("switch", name))

    async def pause(self, name, paused):
        self.calls.append(("pause", name, paused))

    async def set_limit(self, account_id, n):
        raise ValueError("limit must be 1..8")


async def test_levers_run_as_tasks_on_the_loop(qtbot):
    service = LeverService()
    bridge = Bridge(service)
    await bridge.switch("work")
    await bridge.pause("work", True)
    assert service.calls == [("switch", "work"), ("pause", "work", True)]
    # clear_cooldown does not exist on this service yet: ignored, nothing scheduled
    assert bridge.clear_cooldown("work") is None


async def test_failed_lever_is_reported(qtbot):
    bridge = Bridge(LeverService())
    failures = []
    bridge.leverFailed.connect(lambda method, message: failures.append((method, message)))
    task = bridge.set_limit(1, 99)
    await asyncio.wait([task])
    await asyncio.sleep(0)  # let the done-callbacks run (they are scheduled, not immediate)
    assert failures == [("set_limit", "limit must be 1..8")]
