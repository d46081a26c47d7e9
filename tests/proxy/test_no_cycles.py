"""A proxied request leaves no reference cycle behind (it is freed when it ends).

A cycle per request (the attempt and its stall guard once held each other) leaves every
request's objects, the upstream response included, for the garbage collector: its passes cost
a busy proxy several percent of its CPU and, every so often, a pause of many milliseconds in
the middle of other requests. The benchmark (`tests/bench/bench_proxy`) measures that cost;
this test keeps the cause away.
"""

from __future__ import annotations

import gc

import anthropic

from sublane_desktop.core.pool import Lease
from sublane_desktop.core.records import RequestRecord
from sublane_desktop.proxy.relay import Attempt
from tests.fake_upstream import CLAUDE_CODE_HEADERS
from tests.openai_helpers import oai


def _alive() -> dict[str, int]:
    kinds = (Attempt, Lease, RequestRecord)
    counts = {kind.__name__: 0 for kind in kinds}
    for obj in gc.get_objects():
        if type(obj) in kinds:
            counts[type(obj).__name__] += 1
    return counts


def _grown(before: dict[str, int]) -> dict[str, int]:
    return {kind: count - before[kind] for kind, count in _alive().items()}


async def test_answered_and_streamed_requests_are_freed_without_the_garbage_collector(harness):
    await harness.add_account("work")
    key = await harness.create_key()
    sdk = anthropic.AsyncAnthropic(
        api_key=key, base_url=harness.url, max_retries=0, default_headers=CLAUDE_CODE_HEADERS
    )
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}],
    }
    await sdk.messages.create(**body)  # warm: connections, caches, the record writer
    await harness.service.flush_records()
    gc.collect()
    gc.disable()  # from here, anything in a cycle stays in memory where get_objects sees it
    before = _alive()  # other tests' leftovers are not this test's business
    try:
        for _ in range(3):
            answer = await sdk.messages.create(**body)
            assert answer.content
            async with sdk.messages.stream(**body) as stream:
                assert await stream.get_final_message()
        await harness.service.flush_records()
        # Only the records the live view keeps on purpose (its last few) are still held.
        assert _grown(before) == {"Attempt": 0, "Lease": 0, "RequestRecord": 6}
    finally:
        gc.enable()
    await sdk.close()


async def test_openai_routes_are_freed_without_the_garbage_collector(codex_harness):
    """The Responses and Chat routes: a folded answer, a relayed stream and a translated
    chat completion (Codex answers only in streams, so each is a stream upstream)."""
    h = codex_harness
    await h.add_codex_account("sub", "tok-sub")
    key = await h.create_key()
    sdk = oai(h, key)
    await sdk.responses.create(model="gpt-5.4", input="hi")  # warm
    await h.service.flush_records()
    gc.collect()
    gc.disable()
    before = _alive()  # other tests' leftovers are not this test's business
    try:
        for _ in range(2):
            assert (await sdk.responses.create(model="gpt-5.4", input="hi")).output_text
            stream = await sdk.responses.create(model="gpt-5.4", input="hi", stream=True)
            assert [event async for event in stream]
            chat = await sdk.chat.completions.create(
                model="gpt-5.4", messages=[{"role": "user", "content": "hi"}]
            )
            assert chat.choices[0].message.content
        await h.service.flush_records()
        assert _grown(before) == {"Attempt": 0, "Lease": 0, "RequestRecord": 6}
    finally:
        gc.enable()
    await sdk.close()
