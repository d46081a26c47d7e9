"""200 concurrent clients against 3 accounts with cancellations, drops and 429s: no lease leaks,
and no account ever serves more than its limit (as the fake upstream itself saw it)."""

from __future__ import annotations

import asyncio
import collections
import random

import aiohttp

from tests.fake_upstream import CLAUDE_CODE_HEADERS, Reply

BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "x"}],
}
LIMITS = {"tok-a": 1, "tok-b": 2, "tok-c": 3}


async def test_stress_no_leaks_and_limits_hold(harness):
    h = harness
    rng = random.Random(7)
    for name, token in (("a", "tok-a"), ("b", "tok-b"), ("c", "tok-c")):
        await h.add_account(name, token, limit=LIMITS[token])
    key = await h.create_key()
    replies = []
    for _ in range(400):
        roll = rng.random()
        if roll < 0.03:
            replies.append(Reply(kind="drop"))
        elif roll < 0.06:
            replies.append(Reply(status=429, error_type="rate_limit_error", retry_after="1"))
        else:
            replies.append(Reply(kind="sse", events=5, delay_between=0.002))
    h.upstream.script(None, *replies)

    outcomes: collections.Counter[str] = collections.Counter()

    async def one(i: int, session: aiohttp.ClientSession) -> None:
        # A client that retries a few times on 429, like the SDKs do, paced by its own jitter.
        for _attempt in range(4):
            if await attempt(i, session):
                return
            await asyncio.sleep(rng.random() / 20)

    async def attempt(i: int, session: aiohttp.ClientSession) -> bool:
        headers = {"x-api-key": key, **CLAUDE_CODE_HEADERS}
        if i % 3 == 0:
            headers["session_id"] = f"conv-{i % 30}"
        try:
            async with session.post(
                h.url + "/v1/messages", json={**BODY, "stream": True}, headers=headers
            ) as resp:
                if resp.status == 200:
                    await resp.read()
                    outcomes["200"] += 1
                    return True
                body = await resp.json(content_type=None)
                code = body.get("error", {}).get("code") or body["error"]["type"]
                outcomes[f"{resp.status} {code}"] += 1
                return resp.status != 429
        except aiohttp.ClientError:
            outcomes["dropped"] += 1
            return True

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        tasks = [asyncio.ensure_future(one(i, session)) for i in range(200)]
        # Cancel a random fifth of the clients at random points while traffic flows.
        for task in rng.sample(tasks, 40):
            for _ in range(rng.randint(0, 200)):
                await asyncio.sleep(0)
            task.cancel()
            outcomes["canceled by client"] += 1
        await asyncio.gather(*tasks, return_exceptions=True)

    deadline = asyncio.get_running_loop().time() + 10
    while h.service.pool.in_flight:
        assert asyncio.get_running_loop().time() < deadline, "leaked leases"
        await asyncio.sleep(0)

    print("\nstress outcomes:", dict(outcomes))
    assert h.service.pool.in_flight == 0
    assert all(a.in_flight == 0 for a in h.service.pool.accounts.values())
    for token, limit in LIMITS.items():
        assert h.upstream.max_in_flight[token] <= limit, (token, h.upstream.max_in_flight)
    assert outcomes["200"] > 0
    assert sum(v for k, v in outcomes.items() if k.startswith("429")) > 0
