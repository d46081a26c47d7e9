"""Scale benchmark (issue 27): many long streams at once through `sublane serve`.

Run from the repo root:
    python -m tests.bench.bench_scale [--streams 16,64,256] [--seconds 30] [--json PATH]

For each count of streams, `sublane serve` and the bare aiohttp relay (tests/bench/bare_relay.py)
each, in a fresh process of its own, relay that many concurrent long Messages streams from the
fake upstream (tests/bench/mixed_upstreams.py, its own process): a token every 100 ms for
`--seconds` (30). While every stream is open, one short streamed request at a time (3 tokens,
then 50 ms until the next) measures the first output: the time from sending it to its first body
bytes. Printed per proxy and count:

- RSS per stream: (RSS with every stream open, highest reading) - (RSS idle after a warm-up),
  divided by the count. Target: under 100 KB per idle stream (a stream waiting for its next
  token is idle 99 % of the time).
- CPU: the proxy's CPU time with every stream open and nothing else asked of it (the first 3 s
  after the last stream began), as a share of one core and per 1,000 tokens relayed.
- The short request's first-output latency p50/p99, and `serve`'s added to the bare relay's at
  the same count. Target: added p99 under 20 ms at 256 streams.

`serve` gets enough accounts (Claude Code subscription logins, 8 requests each) and a global
cap (`pool.cap`) for every stream plus the short request.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from tests.bench import fleet
from tests.bench.bench_proxy import BASE_HEADERS, ms, percentile

TARGET_KB_PER_STREAM = 100.0
TARGET_ADDED_P99_MS = 20.0
TARGET_AT = 256
PROBE_GAP_S = 0.05
ACCOUNT_LIMIT = 8
TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=30)


def body(marker: str) -> bytes:
    return json.dumps(
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "stream": True,
            "messages": [{"role": "user", "content": f"bench:{marker}"}],
        }
    ).encode()


class Streams:
    """N long streams, counting those that have begun and those that ended whole."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.begun = 0
        self.all_begun = asyncio.Event()
        self.whole = 0
        self.failed: list[str] = []

    async def one(
        self, session: aiohttp.ClientSession, url: str, headers: dict[str, str], marker: str
    ) -> None:
        counted = False
        try:
            async with session.post(url, data=body(marker), headers=headers) as response:
                if response.status != 200:
                    self.failed.append(f"HTTP {response.status}: {(await response.read())[:120]!r}")
                    return
                tail = b""
                async for chunk in response.content.iter_any():
                    if not counted:
                        counted = True
                        self._begin()
                    tail = (tail + chunk)[-64:]
                if b"message_stop" in tail:
                    self.whole += 1
                else:
                    self.failed.append("ended without message_stop")
        except (TimeoutError, aiohttp.ClientError) as exc:
            self.failed.append(type(exc).__name__)
        finally:
            if not counted:
                self._begin()  # a failed stream must not hold the others' start back

    def _begin(self) -> None:
        self.begun += 1
        if self.begun == self.n:
            self.all_begun.set()


async def probe(session: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> float | str:
    """Seconds from sending a short streamed request to its first body bytes (or what failed)."""
    t0 = time.perf_counter()
    try:
        async with session.post(url, data=body("short"), headers=headers) as response:
            if response.status != 200:
                await response.read()
                return f"HTTP {response.status}"
            await response.content.readany()
            first = time.perf_counter() - t0
            await response.read()
            return first
    except (TimeoutError, aiohttp.ClientError) as exc:
        return type(exc).__name__


async def phase(target: fleet.Target, n: int, seconds: float) -> dict[str, Any]:
    url = target.url + "/v1/messages"
    headers = {**BASE_HEADERS, "Authorization": f"Bearer {target.keys['default']}"}
    async with (
        aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0), timeout=TIMEOUT
        ) as streams_session,
        aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=1), timeout=aiohttp.ClientTimeout(total=30)
        ) as probe_session,
    ):
        for _ in range(30):  # warm-up: the paths the phase takes, once
            result = await probe(probe_session, url, headers)
            if isinstance(result, str):
                raise RuntimeError(f"{target.name} warm-up request failed: {result}")
        warm = Streams(4)
        await asyncio.gather(*(warm.one(streams_session, url, headers, "long-3") for _ in range(4)))
        if warm.failed:
            raise RuntimeError(f"{target.name} warm-up stream failed: {warm.failed}")
        idle = await fleet.settled(target.pid)

        events = max(1, round(seconds * 10))
        streams = Streams(n)
        started = time.perf_counter()
        tasks = [
            asyncio.create_task(streams.one(streams_session, url, headers, f"long-{events}"))
            for _ in range(n)
        ]
        try:
            await asyncio.wait_for(streams.all_begun.wait(), 60)
        except TimeoutError:
            pass
        ramp = time.perf_counter() - started
        # First the streams alone: their CPU, with no short request to pay for.
        open_at = fleet.read(target.pid)
        t_open = time.perf_counter()
        await asyncio.sleep(min(3.0, seconds / 6))
        quiet = fleet.read(target.pid)
        window = time.perf_counter() - t_open
        highest = max(open_at.rss_mb, quiet.rss_mb)
        firsts: list[float] = []
        refusals: dict[str, int] = {}
        end_by = started + seconds - 1.5
        while time.perf_counter() < end_by and streams.failed == []:
            result = await probe(probe_session, url, headers)
            if isinstance(result, float):
                firsts.append(result)
            else:
                refusals[result] = refusals.get(result, 0) + 1
            highest = max(highest, fleet.read(target.pid).rss_mb)
            await asyncio.sleep(PROBE_GAP_S)
        await asyncio.gather(*tasks)
    cpu = quiet.cpu_s - open_at.cpu_s
    tokens = n * 10 * window  # a token per stream every 100 ms
    return {
        "streams": n,
        "whole": streams.whole,
        "failed": streams.failed[:5],
        "failed_count": len(streams.failed),
        "ramp_s": ramp,
        "idle_rss_mb": idle.rss_mb,
        "open_rss_mb": highest,
        "kb_per_stream": 1024 * (highest - idle.rss_mb) / n,
        "fds_idle": idle.fds,
        "fds_open": open_at.fds,
        "cpu_share": cpu / window if window > 0 else math.nan,
        "cpu_ms_per_1000_tokens": 1_000_000 * cpu / tokens if tokens else math.nan,
        "probes": len(firsts),
        "probe_refusals": refusals,
        "first_output_p50_ms": ms(percentile(firsts, 50)),
        "first_output_p99_ms": ms(percentile(firsts, 99)),
        "first_output_max_ms": ms(max(firsts)) if firsts else math.nan,
        "load": fleet.loadavg(),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    counts = args.streams
    report: dict[str, Any] = {
        "environment": {
            "python": platform.python_version(),
            "aiohttp": aiohttp.__version__,
            "loadavg_start": fleet.loadavg(),
        },
        "seconds": args.seconds,
        "phases": [],
    }
    slots = max(counts) + 1
    accounts = [
        fleet.AccountSpec("anthropic", f"claude-{i}", limit=ACCOUNT_LIMIT)
        for i in range(1, math.ceil(slots / ACCOUNT_LIMIT) + 2)  # one spare: quota reads
    ]
    cap = slots + 8  # room for the quota reads that traffic starts (R-GAUGE-3, R-POOL-11)
    report["accounts"], report["cap"] = len(accounts), cap
    with tempfile.TemporaryDirectory(prefix="sublane-bench-scale-") as tmp_name:
        tmp = Path(tmp_name)
        upstreams = await fleet.start_upstreams(tmp)
        try:
            env = fleet.child_env(tmp, upstreams)
            data = tmp / "data"
            keys = await fleet.prepare_data_dir(env, data, accounts, ["default"], {"pool.cap": cap})
            for i, n in enumerate(counts):
                makers = [
                    lambda: fleet.start_bare(env, tmp, upstreams),
                    lambda: fleet.start_serve(env, tmp, data, keys),
                ]
                for make in makers if i % 2 == 0 else makers[::-1]:
                    target = await make()
                    try:
                        result = await phase(target, n, args.seconds)
                    finally:
                        result_exit = await fleet.stop_all([target.proc])
                    result.update(proxy=target.name, exit_code=result_exit[0])
                    report["phases"].append(result)
                    print(
                        f"  {target.name:<10} {n:>4} streams: {result['kb_per_stream']:7.1f} KB"
                        f"/stream, CPU {100 * result['cpu_share']:5.1f} %, first output p50 "
                        f"{result['first_output_p50_ms']:6.2f} p99 "
                        f"{result['first_output_p99_ms']:6.2f} ms ({result['probes']} probes), "
                        f"{result['whole']}/{n} whole, load {result['load']}",
                        flush=True,
                    )
        finally:
            await fleet.stop_all([upstreams.proc])
    report["environment"]["loadavg_end"] = fleet.loadavg()
    report["elapsed_s"] = time.perf_counter() - started
    return report


def render(report: dict[str, Any]) -> str:
    env = report["environment"]
    lines = [
        "",
        f"SubLane scale: concurrent long streams (a token every 100 ms for {report['seconds']:g} s)"
        f" and a short request's first output, `serve` vs a bare aiohttp relay",
        f"  python {env['python']}, aiohttp {env['aiohttp']}; load average "
        f"{env['loadavg_start']} at start, {env['loadavg_end']} at end; serve with "
        f"{report['accounts']} accounts x {ACCOUNT_LIMIT}, pool.cap {report['cap']}",
        "",
        f"  {'streams':>7} {'proxy':<10} {'KB/stream':>9} {'RSS idle':>9} {'RSS open':>9}"
        f" {'CPU %':>6} {'ms/1k tok':>9} {'p50 ms':>7} {'p99 ms':>7} {'+p50':>6} {'+p99':>6}"
        f" {'whole':>9}",
    ]
    by = {(p["streams"], p["proxy"]): p for p in report["phases"]}
    verdicts = []
    for n in sorted({p["streams"] for p in report["phases"]}):
        bare = by.get((n, "bare relay"))
        for name in ("bare relay", "serve"):
            p = by.get((n, name))
            if p is None:
                continue
            added = ""
            if name == "serve" and bare is not None:
                added = (
                    f" {p['first_output_p50_ms'] - bare['first_output_p50_ms']:>+6.2f}"
                    f" {p['first_output_p99_ms'] - bare['first_output_p99_ms']:>+6.2f}"
                )
            else:
                added = f" {'':>6} {'':>6}"
            extra = ""
            if p["failed_count"] or p["probe_refusals"]:
                extra = f"  failed {p['failed'][:2]} probes refused {p['probe_refusals']}"
            lines.append(
                f"  {n:>7} {name:<10} {p['kb_per_stream']:>9.1f} {p['idle_rss_mb']:>7.1f}MB"
                f" {p['open_rss_mb']:>7.1f}MB {100 * p['cpu_share']:>6.1f}"
                f" {p['cpu_ms_per_1000_tokens']:>9.1f} {p['first_output_p50_ms']:>7.2f}"
                f" {p['first_output_p99_ms']:>7.2f}{added} {p['whole']:>4}/{n:<4}{extra}"
            )
        serve = by.get((n, "serve"))
        if serve is not None:
            verdicts.append(
                f"  {n} streams: serve {serve['kb_per_stream']:.1f} KB per stream (target < "
                f"{TARGET_KB_PER_STREAM:g}: "
                f"{'PASS' if serve['kb_per_stream'] < TARGET_KB_PER_STREAM else 'MISS'})"
            )
            if bare is not None and n == TARGET_AT:
                added_p99 = serve["first_output_p99_ms"] - bare["first_output_p99_ms"]
                verdicts[-1] += (
                    f"; added first-output p99 {added_p99:+.2f} ms (target < "
                    f"{TARGET_ADDED_P99_MS:g}: {'PASS' if added_p99 < TARGET_ADDED_P99_MS else 'MISS'})"
                )
    lines += ["", *verdicts, f"  bench time {report['elapsed_s']:.0f} s"]
    return "\n".join(lines)


def counts(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("a comma-separated list of stream counts") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError("stream counts must be positive")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench.bench_scale", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--streams", type=counts, default=[16, 64, 256], metavar="N,N,…")
    parser.add_argument(
        "--seconds", type=float, default=30.0, help="how long each long stream runs (30)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    if args.seconds < 3:
        parser.error("--seconds must be at least 3 (the short requests run in the middle)")
    report = asyncio.run(run(args))
    print(render(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
