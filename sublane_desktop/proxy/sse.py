"""Incremental Server-Sent Events splitting for a byte pass-through relay.

The relay forwards upstream bytes untouched and only *watches* events go by, so it needs a
push parser fed arbitrary chunks. The maintained SSE packages are either servers (aiohttp-sse),
pull clients that own the connection (aiohttp-sse-client, unmaintained since 2021) or tied to
httpx (httpx-sse); none fits, so this is the small WHATWG line algorithm, events only.
"""

from __future__ import annotations

from collections.abc import Iterator


class SSESplitter:
    def __init__(self) -> None:
        self._buffer = b""
        self._event: str | None = None
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> Iterator[tuple[str | None, str]]:
        """Yields (event name, data) for every event completed by this chunk."""
        self._buffer += chunk
        while True:
            cut = self._buffer.find(b"\n")
            if cut < 0:
                break
            raw, self._buffer = self._buffer[:cut], self._buffer[cut + 1 :]
            line = raw.rstrip(b"\r").decode("utf-8", "replace")
            if not line:
                if self._data or self._event:
                    yield self._event, "\n".join(self._data)
                self._event, self._data = None, []
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if name == "event":
                self._event = value
            elif name == "data":
                self._data.append(value)
