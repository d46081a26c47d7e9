"""A raw HTTP/1.1 client for tests that must send what no well-behaved client library would:
header values that are not UTF-8, half-finished requests, odd bodies."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]  # lower-cased names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def _dechunk(data: bytes) -> bytes:
    out = bytearray()
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out += data[:size]
        data = data[size + 2 :]
    return bytes(out)


async def raw_request(
    url: str,
    method: str,
    path: str,
    *,
    headers: list[tuple[bytes, bytes]] | None = None,
    body: bytes = b"",
    host: bytes | None = None,
    timeout: float = 20.0,
) -> RawResponse:
    """Send one request byte for byte (Connection: close) and read the whole answer."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        head = [
            f"{method} {path} HTTP/1.1".encode(),
            b"Host: " + (host if host is not None else parts.netloc.encode()),
        ]
        head += [name + b": " + value for name, value in headers or []]
        head += [b"Content-Length: %d" % len(body), b"Connection: close"]
        writer.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
    head_bytes, _, rest = data.partition(b"\r\n\r\n")
    lines = head_bytes.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    found: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        found[name.strip().lower()] = value.strip()
    if found.get("transfer-encoding", "").lower() == "chunked":
        rest = _dechunk(rest)
    return RawResponse(status, found, rest)
