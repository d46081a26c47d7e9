"""The fake Anthropic and Codex upstreams for the soak and scale benchmarks, in a process of
their own, answering each request by a marker in its text instead of a script.

    python -m tests.bench.mixed_upstreams

Prints `anthropic URL` and `codex URL`, then serves until SIGINT/SIGTERM. A request whose
(last) user text is `bench:<kind>` gets the reply of that kind (see `ANTHROPIC` and `CODEX`);
any other text gets the fake's default. The marker travels inside the body, so the same request
gets the same answer through `sublane serve`, through the bare relay and straight from the
client, and the client knows what it asked for without a script shared across processes.

The fakes are the strict ones of tests/ (the same refusals); only two things differ: what they
saw is not kept (a soak sends 100,000 requests, and this process should not grow either), and
the reply is picked from the marker.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from aiohttp import web

from tests.fake_codex import CodexReply, FakeCodex
from tests.fake_upstream import FakeAnthropic, Reply

# A long stream (`bench:long-N`): N tokens, one every 100 ms (issue 27's scale benchmark: 300,
# for 30 s). The text is split into as many deltas as there are events.
LONG_GAP_S = 0.1

ANTHROPIC: dict[str, Reply] = {
    "short": Reply(events=3),
    "sse": Reply(events=20, text="y" * 400),
    # slow enough that the client has time to walk away after the first delta
    "slow": Reply(events=40, delay_between=0.01, text="s" * 400),
    "bad_request": Reply(status=400, error_type="invalid_request_error", message="scripted"),
    # 529 with retry-after 1: the account rests for one second (R-POOL-7), not 15
    "overloaded": Reply(status=529, error_type="overloaded_error", retry_after="1"),
    "midstream_error": Reply(kind="midstream_error", events=5),
}
CODEX: dict[str, CodexReply] = {
    "short": CodexReply(events=3),
    "sse": CodexReply(events=20, text="y" * 400),
    "slow": CodexReply(events=40, delay_between=0.01, text="s" * 400),
    "server_error": CodexReply(status=503, retry_after="1"),
    "failed": CodexReply(terminal="failed"),
}


def anthropic_reply(kind: str, default: Reply) -> Reply:
    """`long-N`: a long stream of N tokens, one every 100 ms."""
    if kind.startswith("long-") and kind[5:].isdigit():
        events = int(kind[5:])
        return Reply(events=events, delay_between=LONG_GAP_S, text="t" * events)
    return ANTHROPIC.get(kind, default)


def marker(body: dict[str, Any]) -> str:
    """The `bench:<kind>` text of the request's last message or input item, or ''."""
    items = body.get("messages") or body.get("input") or []
    if not isinstance(items, list) or not items or not isinstance(items[-1], dict):
        return ""
    content = items[-1].get("content")
    if isinstance(content, list):
        texts = [c.get("text", "") for c in content if isinstance(c, dict)]
        content = texts[-1] if texts else ""
    if isinstance(content, str) and content.startswith("bench:"):
        return content[6:]
    return ""


class MixedAnthropic(FakeAnthropic):
    async def _answer(
        self, request: web.Request, body: dict[str, Any], reply: Reply, extra: dict[str, str]
    ) -> web.StreamResponse:
        self.seen.clear()
        self.requests.clear()
        return await super()._answer(request, body, anthropic_reply(marker(body), reply), extra)


class MixedCodex(FakeCodex):
    async def _answer(
        self, request: web.Request, body: dict[str, Any], reply: CodexReply
    ) -> web.StreamResponse:
        self.seen.clear()
        self.usage_reads.clear()
        return await super()._answer(request, body, CODEX.get(marker(body), reply))


async def main() -> None:
    anthropic, codex = MixedAnthropic(), MixedCodex()
    await anthropic.start()
    await codex.start()
    print(f"anthropic {anthropic.url}", flush=True)
    print(f"codex {codex.url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await anthropic.stop()
    await codex.stop()


if __name__ == "__main__":
    asyncio.run(main())
