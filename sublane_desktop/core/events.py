"""A plain publish/subscribe bus: the core's only way to tell the outside (GUI bridge) anything."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

Listener = Callable[[str, dict[str, Any]], None]


class EventBus:
    def __init__(self) -> None:
        self._listeners: dict[str, list[Listener]] = defaultdict(list)

    def subscribe(self, topic: str, listener: Listener) -> Callable[[], None]:
        self._listeners[topic].append(listener)
        return lambda: self._listeners[topic].remove(listener)

    def publish(self, topic: str, **payload: Any) -> None:
        # A copy, so a listener may unsubscribe while called; none at all for a topic nobody
        # listens to (the proxy publishes a few per request).
        listeners = self._listeners
        for listener in (*listeners.get(topic, ()), *listeners.get("*", ())):
            try:
                listener(topic, payload)
            except Exception:  # a broken listener must not break the proxy
                log.exception("event listener for %s failed", topic)
