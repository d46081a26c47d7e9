"""Incremental Server-Sent Events splitting for a byte pass-through relay.

The relay forwards upstream bytes untouched and only *watches* events go by, so it needs a
push parser fed arbitrary chunks. The maintained SSE packages are either servers (aiohttp-sse),
pull clients that own the connection (aiohttp-sse-client, unmaintained since 2021) or tied to
httpx (httpx-sse); none fits, so this is the small WHATWG line algorithm, events only.

It is on the hot path of every stream: lines are split once per chunk (not re-sliced per
line).
"""

from __future__ import annotations

from collections.abc import Iterator


class SSESplitter:
    def __init__(self) -> None:
        self._partial = b""
        self._event: str | None = None
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> Iterator[tuple[str | None, str]]:
        """Yields (event name, data) for every event completed by this chunk."""
        lines = (self._partial + chunk).split(b"\n") if self._partial else chunk.split(b"\n")
        self._partial = lines.pop()
        for raw in lines:
            line = raw[:-1] if raw.endswith(b"\r") else raw
            if not line:
                if self._data or self._event:
                    yield self._event, b"\n".join(self._data).decode("utf-8", "replace")
                self._event, self._data = None, []
            elif line.startswith(b"data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(b" ") else value)
            elif line.startswith(b"event:"):
                value = line[6:]
                self._event = (value[1:] if value.startswith(b" ") else value).decode(
                    "utf-8", "replace"
                )
            # comments (":…"), id: and retry: lines say nothing the relay needs
