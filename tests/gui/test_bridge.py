import asyncio

from gui_fakes import FakeService, account

from sublane_desktop.gui.bridge import Bridge


def test_account_events_become_one_signal_per_burst(qtbot, service):
    bridge = Bridge(service)
    emitted = []
    bridge.accountsChanged.connect(lambda: emitted.append(True))
    with qtbot.waitSignal(bridge.accountsChanged, timeout=1000):
        service._accounts = [account("work", "busy", current=True), account("home", "ok", id=2)]
        for _ in range(50):  # every lease taken and released publishes one
            service.bus.publish("accounts.changed")
    assert emitted == [True]
    assert [a["state"] for a in bridge.snapshot()] == ["busy", "ok"]
    bridge.close()


def test_an_event_without_a_change_is_not_a_signal(qtbot, service):
    bridge = Bridge(service)
    with qtbot.assertNotEmitted(bridge.accountsChanged, wait=300):
        service.bus.publish("accounts.gauges", account_id=1)
    bridge.close()


def test_records_and_settings_have_their_own_signals(qtbot, service):
    bridge = Bridge(service)
    with qtbot.waitSignal(bridge.recordAdded, timeout=1000) as blocker:
        service.bus.publish("records.added", count=3)
    assert blocker.args == [{"count": 3}]
    with qtbot.waitSignal(bridge.settingsChanged, timeout=1000):
        service.bus.publish("accounts.settings")
    bridge.close()


def test_tick_rereads_memory_for_changes_that_come_with_time(qtbot, service):
    """A cooldown ending publishes nothing; the tick still notices within a second."""
    bridge = Bridge(service, tick_ms=50)
    service._accounts = [account("work", "ok", current=True), account("home", "probing", id=2)]
    with qtbot.waitSignal(bridge.accountsChanged, timeout=1000):
        pass  # no bus event at all
    with qtbot.waitSignal(bridge.ticked, timeout=1000):
        pass
    assert bridge.snapshot()[1]["state"] == "probing"
    bridge.close()


def test_close_unsubscribes_and_stops_the_tick(qtbot, service):
    bridge = Bridge(service, tick_ms=20)
    bridge.close()
    service._accounts = []
    with qtbot.assertNotEmitted(bridge.accountsChanged, wait=200):
        service.bus.publish("accounts.changed")
    with qtbot.assertNotEmitted(bridge.ticked, wait=100):
        pass


def test_reads_forward_to_service(qtbot, service):
    bridge = Bridge(service)
    assert [a["name"] for a in bridge.accounts()] == ["work", "home"]
    assert bridge.endpoint_url() == "http://127.0.0.1:8765"
    assert bridge.settings()["pool.cap"] == 8
    bridge.close()


class LeverService(FakeService):
    def __init__(self):
        super().__init__([account("work")])
        self.calls = []

    async def switch(self, ref):
        self.calls.append(("switch", ref))
        return {"name": "work"}

    async def pause(self, ref, paused):
        self.calls.append(("pause", ref, paused))

    def refresh_quotas(self):  # synchronous on the real service too
        self.calls.append(("refresh_quotas",))
        return 1

    async def set_limit(self, account_id, n):
        raise ValueError("max_concurrency must be an integer from 1 to 8")

    async def add_account(self, provider, name, secret, **options):
        raise ValueError('"api_key" must be a non-empty string')


async def test_levers_run_as_tasks_on_the_loop(qtbot):
    service = LeverService()
    bridge = Bridge(service)
    assert await bridge.switch("work") == {"name": "work"}
    await bridge.pause("work", True)
    assert await bridge.refresh_quotas() == 1
    assert service.calls == [("switch", "work"), ("pause", "work", True), ("refresh_quotas",)]
    # clear_cooldown does not exist on this service: ignored, nothing scheduled
    assert bridge.clear_cooldown("work") is None
    bridge.close()


async def test_failed_lever_is_reported_and_dialog_calls_are_not(qtbot):
    bridge = Bridge(LeverService())
    failures, replies = [], []
    bridge.leverFailed.connect(lambda method, message: failures.append((method, message)))
    reply = bridge.set_limit(1, 99)
    reply.failed.connect(replies.append)
    assert await reply is None
    assert failures == [("set_limit", "max_concurrency must be an integer from 1 to 8")]
    assert replies == ["max_concurrency must be an integer from 1 to 8"]

    failures.clear()
    reply = bridge.add_account("anthropic", "x", {"api_key": ""})
    reply.failed.connect(replies.append)
    await bridge.wait_idle()
    assert failures == []  # the dialog shows its own error inline
    assert replies[-1] == '"api_key" must be a non-empty string'
    bridge.close()


async def test_wait_idle_waits_for_every_call(qtbot):
    release = asyncio.Event()

    class Slow(LeverService):
        async def switch(self, ref):
            await release.wait()
            self.calls.append(("switch", ref))

    service = Slow()
    bridge = Bridge(service)
    bridge.switch("work")
    asyncio.get_running_loop().call_soon(release.set)
    await bridge.wait_idle()
    assert service.calls == [("switch", "work")]
    bridge.close()


async def test_the_gui_never_shows_keyring_class_names_or_variables(qtbot, tmp_path):
    """Item 5 of this session: the service's no-keyring message names keyring's backend class
    and the variables that choose one; right in a terminal (R-ST-2), jargon in a window. The
    bridge, the one door from the service to the GUI, says it without them."""
    import re

    from keyring.backends import fail

    from sublane_desktop.accounts.secrets import KeyringUnavailable, SecretStore

    try:
        SecretStore(tmp_path, backend=fail.Keyring())._choose_backend(fail.Keyring())
    except KeyringUnavailable as exc:
        terminal = str(exc)
    assert "keyring.backends.fail.Keyring" in terminal and "SUBLANE_KEYRING=file" in terminal

    class NoKeyring(LeverService):
        def __init__(self):
            super().__init__()
            self.keyring_problem = terminal

        async def add_account(self, *args, **kwargs):
            raise KeyringUnavailable(terminal)

        async def revoke_key(self, ref):
            raise RuntimeError()  # no message at all: its class name must not stand in

    bridge = Bridge(NoKeyring())
    failures: list[str] = []
    reply = bridge.add_account("anthropic", "x", {"api_key": "k"})
    reply.failed.connect(failures.append)
    other = bridge.revoke_key(1)
    other.failed.connect(failures.append)
    await bridge.wait_idle()
    shown = [bridge.keyring_problem() or "", *failures]
    class_path = re.compile(r"\b(?:[a-z_]+\.)+[A-Z]\w*")
    for text in shown:
        assert not class_path.search(text), text
        assert "KEYRING" not in text and "RuntimeError" not in text, text
    assert shown[0].startswith("no usable OS keyring")
    assert "Set up a keyring…" in shown[0]
    bridge.close()
