"""Responses relay benchmark: a streamed POST /v1/responses straight to the fake Codex
upstream vs through SubLane, plus the same answer through the translating and WebSocket paths.

Run from the repo root:
    python -m tests.bench.bench_responses [--json PATH] [--upstream thread|loop]

1. Pass-through: a 1,000-delta Responses SSE stream, direct vs through /v1/responses:
   relay-time ratio and time to first body byte (the headline figures).
2. Translated: the same upstream stream through /v1/chat/completions (Responses read into
   neutral events and rendered as chat chunks), against the direct figure.
3. WebSocket: the same turn through GET /v1/responses (one socket, turn after turn), from
   sending response.create to response.completed, against the direct figure.

Everything is loopback and every loop is bounded. The SubLane service and the client share the
main loop; the fake upstream runs by default on its own loop in a thread (`--upstream loop`
puts it on the main loop too), as in bench_proxy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import aiohttp

from sublane_desktop.accounts.secrets import SecretStore
from sublane_desktop.service import Service
from tests.bench.bench_proxy import ms, new_session
from tests.conftest import Harness, file_keyring
from tests.fake_codex import CodexReply, FakeCodex

T = TypeVar("T")

MODEL = "gpt-5.4"
EVENTS = 1000
TEXT = "x" * 4000
REPS = 30
WARMUP = 2
TARGET_RATIO = 1.10
DIRECT_HEADERS = {
    "Authorization": "Bearer tok-direct",
    "ChatGPT-Account-Id": "acct-direct",
    "originator": "codex_cli_rs",
    "content-type": "application/json",
}
INPUT = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]
DIRECT_BODY = json.dumps(
    {"model": MODEL, "instructions": "Be brief.", "input": INPUT, "stream": True, "store": False}
).encode()
RESPONSES_BODY = json.dumps(
    {"model": MODEL, "instructions": "Be brief.", "input": INPUT, "stream": True}
).encode()
CHAT_BODY = json.dumps(
    {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
).encode()


class Upstream:
    """A FakeCodex on the caller's loop or on a private loop in a daemon thread."""

    def __init__(self, threaded: bool) -> None:
        self.threaded = threaded
        self.fake: FakeCodex | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    async def _on_loop(self, make: Callable[[], Awaitable[T]]) -> T:
        if not self.threaded:
            return await make()
        future = asyncio.run_coroutine_threadsafe(make(), self._loop)
        return await asyncio.wait_for(asyncio.wrap_future(future), 30)

    async def start(self) -> str:
        if self.threaded:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=self._loop.run_forever, name="fake-codex", daemon=True
            )
            self._thread.start()

        async def make() -> FakeCodex:
            fake = FakeCodex()
            await fake.start()
            return fake

        self.fake = await self._on_loop(make)
        self.fake.default = CodexReply(text=TEXT, events=EVENTS)
        return self.fake.url

    def forget(self) -> None:
        assert self.fake is not None
        self.fake.seen.clear()  # it keeps every request; don't let that grow

    async def stop(self) -> None:
        if self.fake is not None:
            await self._on_loop(self.fake.stop)
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            self._loop.close()


async def http_stream(
    session: aiohttp.ClientSession, url: str, body: bytes, headers: dict[str, str], end: bytes
) -> tuple[float, float, int]:
    """(total seconds, seconds to first body byte, body bytes) of one streamed POST."""
    t0 = time.perf_counter()
    first: float | None = None
    size = 0
    tail = b""
    async with session.post(url, data=body, headers=headers) as response:
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {(await response.read())[:200]!r}")
        async for chunk in response.content.iter_any():
            if first is None:
                first = time.perf_counter() - t0
            size += len(chunk)
            tail = (tail + chunk)[-16384:]  # the terminal event repeats the whole text
    total = time.perf_counter() - t0
    if end not in tail:
        raise RuntimeError(f"stream ended without {end!r}")
    return total, first if first is not None else total, size


async def socket_turn(ws: aiohttp.ClientWebSocketResponse) -> tuple[float, float, int]:
    """(total seconds, seconds to the first message, message bytes) of one socket turn."""
    async with asyncio.timeout(60):  # one bound per turn; a timer per message would cost more
        return await _socket_turn(ws)


async def _socket_turn(ws: aiohttp.ClientWebSocketResponse) -> tuple[float, float, int]:
    t0 = time.perf_counter()
    await ws.send_str(
        json.dumps(
            {"type": "response.create", "model": MODEL, "instructions": "Be brief.", "input": INPUT}
        )
    )
    first: float | None = None
    size = 0
    while True:
        msg = await ws.receive()
        if msg.type != aiohttp.WSMsgType.TEXT:
            raise RuntimeError(f"socket ended: {msg}")
        if first is None:
            first = time.perf_counter() - t0
        size += len(msg.data)
        kind = (
            json.loads(msg.data)["type"]
            if msg.data.startswith('{"type": "response.c')
            or msg.data.startswith('{"type": "error"')
            else ""
        )
        if kind == "error":
            raise RuntimeError(msg.data[:300])
        if kind == "response.completed":
            return time.perf_counter() - t0, first, size


def summary(runs: list[tuple[float, float, int]]) -> dict[str, Any]:
    totals = [r[0] for r in runs]
    return {
        "total_ms_median": ms(statistics.median(totals)),
        "total_ms_min": ms(min(totals)),
        "total_ms_max": ms(max(totals)),
        "ttfb_ms_median": ms(statistics.median(r[1] for r in runs)),
        "bytes": runs[0][2],
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    report: dict[str, Any] = {
        "environment": {
            "python": platform.python_version(),
            "aiohttp": aiohttp.__version__,
            "cpus": os.cpu_count(),
            "machine": platform.machine(),
            "upstream": args.upstream,
            "loadavg_start": list(os.getloadavg()),
        }
    }
    upstream = Upstream(args.upstream == "thread")
    upstream_url = await upstream.start()
    try:
        with tempfile.TemporaryDirectory(prefix="sublane-bench-responses-") as tmp_name:
            tmp = Path(tmp_name)
            service = Service(
                tmp / "data",
                port=0,
                secret_store=SecretStore(tmp, backend=file_keyring(tmp / "keyring.cfg")),
                env={"SUBLANE_CODEX_BASE_URL": upstream_url},
            )
            await service.start()
            try:
                harness = Harness(service, None)
                await harness.add_codex_account("bench", limit=8)
                key = await harness.create_key("bench")
                through_headers = {
                    "Authorization": f"Bearer {key}",
                    "content-type": "application/json",
                }
                runs: dict[str, list[tuple[float, float, int]]] = {
                    "direct": [],
                    "through": [],
                    "chat": [],
                    "socket": [],
                }
                async with new_session() as direct_s, new_session() as through_s:
                    ws = await through_s.ws_connect(
                        harness.url + "/v1/responses",
                        headers={"Authorization": f"Bearer {key}"},
                        max_msg_size=0,
                    )
                    steps = {
                        "direct": lambda: http_stream(
                            direct_s,
                            upstream_url + "/responses",
                            DIRECT_BODY,
                            DIRECT_HEADERS,
                            b"response.completed",
                        ),
                        "through": lambda: http_stream(
                            through_s,
                            harness.url + "/v1/responses",
                            RESPONSES_BODY,
                            through_headers,
                            b"response.completed",
                        ),
                        "chat": lambda: http_stream(
                            through_s,
                            harness.url + "/v1/chat/completions",
                            CHAT_BODY,
                            through_headers,
                            b"[DONE]",
                        ),
                        "socket": lambda: socket_turn(ws),
                    }
                    for i in range(WARMUP + REPS):
                        order = list(steps) if i % 2 == 0 else list(reversed(steps))
                        for name in order:
                            result = await steps[name]()
                            if i >= WARMUP:
                                runs[name].append(result)
                        upstream.forget()
                    await ws.close()
                report["failures"] = [
                    r.error_code for r in service.records if r.outcome != "success"
                ]
            finally:
                await service.stop(drain_timeout=2)
    finally:
        await upstream.stop()
    for name, samples in runs.items():
        report[name] = summary(samples)
    direct = report["direct"]
    for name in ("through", "chat", "socket"):
        report[name]["ratio"] = report[name]["total_ms_median"] / direct["total_ms_median"]
        # Runs of one round sit next to each other in time, so their ratio shrugs off the
        # load drift of a shared box better than a ratio of medians.
        report[name]["paired_ratio"] = statistics.median(
            t[0] / d[0] for t, d in zip(runs[name], runs["direct"], strict=True)
        )
        report[name]["ttfb_overhead_ms"] = report[name]["ttfb_ms_median"] - direct["ttfb_ms_median"]
    report["same_bytes"] = report["through"]["bytes"] == direct["bytes"]
    report["verdict_ratio"] = report["through"]["paired_ratio"] <= TARGET_RATIO
    report["elapsed_s"] = time.perf_counter() - started
    report["environment"]["loadavg_end"] = list(os.getloadavg())
    return report


def render(report: dict[str, Any]) -> str:
    env = report["environment"]
    lines = [
        "SubLane Responses relay benchmark",
        f"  python {env['python']}, aiohttp {env['aiohttp']}, {env['cpus']} CPUs, "
        f"{env['machine']}; fake Codex upstream: {env['upstream']}",
        f"  load average at start {env['loadavg_start'][0]:.2f}, at end "
        f"{env['loadavg_end'][0]:.2f}",
        f"  {EVENTS} text deltas per answer, {REPS} runs per path (+{WARMUP} warm-up), "
        "paths interleaved, medians",
        "",
        f"  {'path':<34} {'total ms':>9} {'min':>7} {'max':>7} {'TTFB ms':>8} {'ratio':>7}"
        f" {'paired':>7}",
    ]
    labels = {
        "direct": "direct  POST {codex}/responses",
        "through": "through POST /v1/responses (SSE)",
        "chat": "through /v1/chat/completions",
        "socket": "through GET /v1/responses (WS)",
    }
    for name, label in labels.items():
        m = report[name]
        ratio = f"x{m['ratio']:.3f}" if "ratio" in m else "-"
        paired = f"x{m['paired_ratio']:.3f}" if "paired_ratio" in m else "-"
        lines.append(
            f"  {label:<34} {m['total_ms_median']:>9.2f} {m['total_ms_min']:>7.2f} "
            f"{m['total_ms_max']:>7.2f} {m['ttfb_ms_median']:>8.2f} {ratio:>7}"
            f" {paired:>7}"
        )
    t = report["through"]
    lines += [
        "",
        f"  pass-through relay ratio x{t['paired_ratio']:.3f} paired, x{t['ratio']:.3f} of "
        f"medians (target <= {TARGET_RATIO:.2f} paired: "
        f"{'PASS' if report['verdict_ratio'] else 'MISS'}); TTFB overhead "
        f"{t['ttfb_overhead_ms']:+.2f} ms; identical bytes: {report['same_bytes']}",
        f"  translated chat x{report['chat']['paired_ratio']:.3f}, TTFB "
        f"{report['chat']['ttfb_overhead_ms']:+.2f} ms; WebSocket x"
        f"{report['socket']['paired_ratio']:.3f}, first message "
        f"{report['socket']['ttfb_overhead_ms']:+.2f} ms",
        f"  non-success records: {report['failures'] or 'none'}",
        f"  total bench time {report['elapsed_s']:.1f} s",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench.bench_responses", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--upstream", choices=("thread", "loop"), default="thread")
    args = parser.parse_args(argv)
    report = asyncio.run(run(args))
    print(render(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
