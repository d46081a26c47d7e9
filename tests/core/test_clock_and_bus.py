"""The two small services every core rule leans on: the test clock moves both its times
together, and the event bus stops calling a listener the moment it unsubscribes."""

from __future__ import annotations

from sublane_desktop.core.clock import FakeClock
from sublane_desktop.core.events import EventBus


def test_the_fake_clock_moves_wall_and_monotonic_time_together():
    clock = FakeClock(start=100.0)
    mono = clock.monotonic()
    clock.advance(5)
    clock.advance(2.5)
    assert clock.now() == 107.5
    assert clock.monotonic() == mono + 7.5


def test_an_unsubscribed_listener_hears_nothing_more():
    bus = EventBus()
    heard: list[tuple[str, dict]] = []
    other: list[str] = []
    stop = bus.subscribe("records.added", lambda topic, payload: heard.append((topic, payload)))
    bus.subscribe("records.added", lambda topic, payload: other.append(topic))
    bus.publish("records.added", count=1)
    stop()
    bus.publish("records.added", count=2)
    assert heard == [("records.added", {"count": 1})]
    assert other == ["records.added", "records.added"]  # the others still hear


def test_a_listener_to_every_topic_hears_each_event_once_after_its_own_listeners():
    """The desktop listens to "*": every topic reaches it, once, after the topic's own."""
    bus = EventBus()
    heard: list[str] = []
    bus.subscribe("*", lambda topic, payload: heard.append(f"all:{topic}"))
    bus.subscribe("accounts.changed", lambda topic, payload: heard.append(f"own:{topic}"))
    bus.publish("accounts.changed")
    bus.publish("records.added", count=1)
    assert heard == ["own:accounts.changed", "all:accounts.changed", "all:records.added"]


def test_a_listener_may_unsubscribe_while_it_is_being_called():
    bus = EventBus()
    heard: list[str] = []
    stops = []

    def once(topic: str, payload: dict) -> None:
        heard.append("once")
        stops[0]()

    stops.append(bus.subscribe("accounts.changed", once))
    bus.subscribe("accounts.changed", lambda topic, payload: heard.append("always"))
    bus.publish("accounts.changed")
    bus.publish("accounts.changed")
    assert heard == ["once", "always", "always"]
