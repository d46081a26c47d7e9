"""Shared bits of the OpenAI-side end-to-end tests."""

from __future__ import annotations

import asyncio
import collections
import json

import aiohttp
import openai


async def until(predicate, what: str, seconds: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0)


def oai(h, key: str, **kw) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=h.url + "/v1", api_key=key, max_retries=0, **kw)


def count_releases(pool) -> collections.Counter:
    """How often each lease reached the pool's release step (must be exactly once)."""
    counts: collections.Counter = collections.Counter()
    original = pool._finish

    def finish(lease, *args, **kwargs):
        counts[id(lease)] += 1
        return original(lease, *args, **kwargs)

    pool._finish = finish
    return counts


async def raw_sse(h, key: str, path: str, body: dict, headers: dict | None = None):
    """(status, response headers, [(event, data-dict)]) of a streamed POST, via plain aiohttp."""
    async with aiohttp.ClientSession() as s:
        async with s.post(
            h.url + path, json=body, headers={"Authorization": f"Bearer {key}", **(headers or {})}
        ) as r:
            return r.status, r.headers, sse_frames(await r.read())


def sse_frames(raw: bytes) -> list[tuple[str | None, object]]:
    """The (event name, data) frames of an SSE body; data is parsed JSON, or `[DONE]`."""
    frames = []
    for block in raw.decode().replace("\r\n", "\n").split("\n\n"):
        name, data = None, None
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
        if data is not None:
            frames.append((name, data if data == "[DONE]" else json.loads(data)))
    return frames


def records(h):
    return list(h.service.records)
