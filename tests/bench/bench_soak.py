"""Soak benchmark (issue 27): does a long-running proxy keep its memory and descriptors?

Run from the repo root:
    python -m tests.bench.bench_soak [--requests N] [--tray] [--json PATH]

A real `sublane serve` (or, with --tray, the tray app with its Accounts and Requests windows
open) and the bare aiohttp relay (tests/bench/bare_relay.py) take the same steady mixed traffic
from 8 clients, against the fake upstreams in a process of their own
(tests/bench/mixed_upstreams.py): Messages JSON and SSE, Responses SSE, Chat Completions (JSON
and streamed, translated to Responses), WebSocket turns (Codex Responses over a socket, each
socket reopened after 25 turns), clients walking away mid-stream, and upstream errors (400s,
529s and 503s with retry-after, an error event mid-stream, a failed response). Conversations
carry session ids, renewed every 20 requests of a client, so the affinity table and the
per-conversation memory fill as they do in use.

The requests go in blocks of 5,000, the proxies taking turns, so both see the same load on a
shared machine. After each block the client connections are closed and the proxy's RSS, open
descriptors and CPU time are read from /proc. Printed: each reading, and the growth from the
end of the warm-up (the first 10,000 requests) to the end, as a difference and as a slope
fitted through every reading after the warm-up. Targets: under 10 MB of RSS growth and no
descriptor growth.

The bare relay serves the same mix except that it translates nothing: a Chat Completions slot
is sent to it as the equivalent Responses request, and its WebSocket turns are one streamed POST
each (bare_relay.py). Errors meant to cool an account (the 529, the 503, the error event, the
failed response) go through client keys whose groups have accounts of their own, so the
default group's traffic keeps flowing while those groups' accounts rest and the pool refuses
their requests (429s): the 529 and 503 rest an account for a second (retry-after 1), the others
by the cooldown ladder (15 s, doubling).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import aiohttp

from tests.bench import fleet
from tests.bench.bench_proxy import BASE_HEADERS

CLIENTS = 8
BLOCK = 5_000
WARMUP = 10_000
WS_TURNS_PER_SOCKET = 25
TURNS_PER_CONVERSATION = 20
TARGET_GROWTH_MB = 10.0
TIMEOUT = aiohttp.ClientTimeout(total=60)

CLAUDE = "claude-sonnet-4-5"
GPT = "gpt-5.4"

# One cycle of the mix (50 slots): what each request is, by its index. `~` marks the kinds
# sent with the "flaky" group's key (errors with retry-after 1: the account rests a second),
# `!` those sent with the "broken" group's (errors the cooldown ladder rests from 15 s up, so
# most of these meet a resting account and are refused by the pool).
SCHEDULE: list[str] = (
    ["msg_json"] * 8
    + ["msg_json_conv"] * 6
    + ["msg_sse"] * 8
    + ["msg_cancel"] * 2
    + ["msg_bad_request"]
    + ["responses_sse"] * 6
    + ["responses_cancel"]
    + ["chat_sse"] * 4
    + ["chat_json"] * 3
    + ["ws_turn"] * 7
    + ["~msg_overloaded", "~responses_503", "!msg_midstream_error", "!responses_failed"]
)
assert len(SCHEDULE) == 50
# Spread the kinds over the cycle so every stretch of requests is mixed.
SCHEDULE = [SCHEDULE[(i * 37) % 50] for i in range(50)]


def anthropic_body(marker: str, stream: bool) -> bytes:
    return json.dumps(
        {
            "model": CLAUDE,
            "max_tokens": 256,
            "stream": stream,
            "messages": [{"role": "user", "content": f"bench:{marker}"}],
        }
    ).encode()


def responses_body(marker: str) -> dict[str, Any]:
    return {
        "model": GPT,
        "instructions": "Be brief.",
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": f"bench:{marker}"}],
            }
        ],
        "stream": True,
        "store": False,
    }


def chat_body(marker: str, stream: bool) -> bytes:
    return json.dumps(
        {
            "model": GPT,
            "stream": stream,
            "messages": [{"role": "user", "content": f"bench:{marker}"}],
        }
    ).encode()


class Client:
    """One of the 8 clients: its conversation, its socket, what it saw."""

    def __init__(
        self, session: aiohttp.ClientSession, target: fleet.Target, tally: Counter[str]
    ) -> None:
        self.session = session
        self.target = target
        self.tally = tally
        self.conversation = uuid.uuid4().hex
        self.turns = 0
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.ws_turns = 0
        self.bare = target.name == "bare relay"

    def headers(self, group: str, conversation: bool, anthropic: bool) -> dict[str, str]:
        base = dict(BASE_HEADERS) if anthropic else {"content-type": "application/json"}
        base["Authorization"] = f"Bearer {self.target.keys[group]}"
        if conversation:
            name = "x-claude-code-session-id" if anthropic else "session_id"
            base[name] = self.conversation
        return base

    def next_turn(self) -> None:
        self.turns += 1
        if self.turns % TURNS_PER_CONVERSATION == 0:
            self.conversation = uuid.uuid4().hex

    async def post(
        self, kind: str, path: str, body: bytes, headers: dict[str, str], cancel: bool = False
    ) -> None:
        async with self.session.post(self.target.url + path, data=body, headers=headers) as r:
            if cancel and r.status == 200:
                await r.content.readany()  # the first bytes, then walk away
                r.close()
                self.tally[f"{kind} cancelled"] += 1
                return
            await r.read()
            self.tally[f"{kind} {r.status}"] += 1

    async def one(self, kind: str) -> None:
        self.next_turn()
        group = {"~": "flaky", "!": "broken"}.get(kind[0], "default")
        name = kind.lstrip("~!")
        if name.startswith("msg_"):
            marker = {
                "msg_json": "short",
                "msg_json_conv": "short",
                "msg_sse": "sse",
                "msg_cancel": "slow",
                "msg_bad_request": "bad_request",
                "msg_overloaded": "overloaded",
                "msg_midstream_error": "midstream_error",
            }[name]
            stream = name in ("msg_sse", "msg_cancel", "msg_midstream_error")
            conversation = name in ("msg_json_conv", "msg_sse", "msg_cancel")
            await self.post(
                kind,
                "/v1/messages",
                anthropic_body(marker, stream),
                self.headers(group, conversation, anthropic=True),
                cancel=name == "msg_cancel",
            )
        elif name.startswith("responses_"):
            marker = {
                "responses_sse": "sse",
                "responses_cancel": "slow",
                "responses_503": "server_error",
                "responses_failed": "failed",
            }[name]
            await self.post(
                kind,
                "/v1/responses",
                json.dumps(responses_body(marker)).encode(),
                self.headers(group, group == "default", anthropic=False),
                cancel=name == "responses_cancel",
            )
        elif name.startswith("chat_"):
            stream = name == "chat_sse"
            if self.bare:  # a bare relay translates nothing: the same turn as Responses
                await self.post(
                    kind,
                    "/v1/responses",
                    json.dumps(responses_body("sse" if stream else "short")).encode(),
                    self.headers(group, False, anthropic=False),
                )
            else:
                await self.post(
                    kind,
                    "/v1/chat/completions",
                    chat_body("sse" if stream else "short", stream),
                    self.headers(group, False, anthropic=False),
                )
        elif name == "ws_turn":
            await self.socket_turn(kind)
        else:
            raise AssertionError(kind)

    async def socket_turn(self, kind: str) -> None:
        if self.ws is None or self.ws.closed:
            headers = self.headers("default", True, anthropic=False)
            headers.pop("content-type")
            self.ws = await self.session.ws_connect(
                self.target.url + "/v1/responses", headers=headers, max_msg_size=0
            )
            self.ws_turns = 0
        turn = responses_body("short")
        del turn["stream"], turn["store"]
        await self.ws.send_str(json.dumps({"type": "response.create", **turn}))
        while True:
            msg = await self.ws.receive(timeout=60)
            if msg.type != aiohttp.WSMsgType.TEXT:
                self.tally[f"{kind} socket-{msg.type.name.lower()}"] += 1
                await self.ws.close()
                break
            event = json.loads(msg.data).get("type")
            if event in ("response.completed", "response.failed", "error"):
                self.tally[f"{kind} {event}"] += 1
                break
        self.ws_turns += 1
        if self.ws_turns >= WS_TURNS_PER_SOCKET:
            await self.close()

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
            self.ws = None


async def run_block(target: fleet.Target, first: int, count: int, tally: Counter[str]) -> float:
    """`count` requests of the mix from CLIENTS clients; returns the wall time."""
    issued = first
    end = first + count

    async def client_loop(client: Client) -> None:
        nonlocal issued
        while issued < end:
            index = issued
            issued += 1
            kind = SCHEDULE[index % len(SCHEDULE)]
            try:
                await client.one(kind)
            except (TimeoutError, aiohttp.ClientError) as exc:
                tally[f"{kind} {type(exc).__name__}"] += 1
        await client.close()

    t0 = time.perf_counter()
    connector = aiohttp.TCPConnector(limit=CLIENTS * 2)
    async with aiohttp.ClientSession(connector=connector, timeout=TIMEOUT) as session:
        await asyncio.gather(*(client_loop(Client(session, target, tally)) for _ in range(CLIENTS)))
    return time.perf_counter() - t0


def slope_per_10k(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of value against requests, per 10,000 requests."""
    if len(points) < 2:
        return float("nan")
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return 10_000 * sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var


def sizes(requests: int) -> tuple[int, int]:
    """(block, warm-up): 5,000 and 10,000 for the full 100,000; a shorter run keeps the
    proportions (20 blocks, the first tenth warm-up)."""
    block = max(1, min(BLOCK, requests // 20))
    return block, max(block, requests * WARMUP // 100_000)


def summarize(samples: list[dict[str, Any]], requests: int) -> dict[str, Any]:
    after = [s for s in samples if s["requests"] >= sizes(requests)[1]]
    base = after[0]
    last = samples[-1]
    busy = sum(s["wall_s"] for s in samples)
    first_half = after[: max(1, len(after) // 2)]
    cpu = last["cpu_s"] - samples[0]["cpu_s_before"]
    return {
        "rss_at_warmup_mb": base["rss_mb"],
        "rss_end_mb": last["rss_mb"],
        "rss_growth_mb": last["rss_mb"] - base["rss_mb"],
        "rss_max_after_warmup_mb": max(s["rss_mb"] for s in after),
        # RSS also counts pages of mapped files (the interpreter, Qt, extension modules) a new
        # code path touches for the first time; the anonymous part is the heaps alone.
        "anon_growth_mb": last["anon_mb"] - base["anon_mb"],
        "rss_slope_mb_per_10k": slope_per_10k([(s["requests"], s["rss_mb"]) for s in after]),
        "peak_rss_mb": last["peak_mb"],
        "fds_at_warmup": base["fds"],
        "fds_end": last["fds"],
        "fds_growth": last["fds"] - base["fds"],
        "fds_max_after_warmup": max(s["fds"] for s in after),
        # No growth: the count at the end is within what the first half after warm-up held
        # (a reading can catch a connection or two of the pools mid-close).
        "fds_grew": last["fds"] > max(s["fds"] for s in first_half),
        "cpu_ms_per_request": 1000 * cpu / requests,
        "requests_per_s": requests / busy if busy else float("nan"),
        "measured_from": base["requests"],
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    report: dict[str, Any] = {
        "environment": {
            "python": platform.python_version(),
            "aiohttp": aiohttp.__version__,
            "loadavg_start": fleet.loadavg(),
        },
        "requests": args.requests,
        "mode": "tray" if args.tray else "serve",
    }
    procs: list[asyncio.subprocess.Process] = []
    with tempfile.TemporaryDirectory(prefix="sublane-bench-soak-") as tmp_name:
        tmp = Path(tmp_name)
        upstreams = await fleet.start_upstreams(tmp)
        procs.append(upstreams.proc)
        try:
            env = fleet.child_env(tmp, upstreams)
            accounts = [
                *(fleet.AccountSpec("anthropic", f"claude-{n}") for n in range(1, 4)),
                *(fleet.AccountSpec("codex", f"codex-{n}") for n in range(1, 3)),
                *(
                    fleet.AccountSpec(provider, f"{provider}-{group}", group=group)
                    for group in ("flaky", "broken")
                    for provider in ("anthropic", "codex")
                ),
            ]
            data = tmp / "data"
            keys = await fleet.prepare_data_dir(
                env, data, accounts, ["default", "flaky", "broken"], {"pool.cap": 32}
            )
            start = fleet.start_tray if args.tray else fleet.start_serve
            traces = {
                name: (args.trace / name.replace(" ", "-") if args.trace else None)
                for name in (report["mode"], "bare relay")
            }
            proxy = await start(env, tmp, data, keys, traces[report["mode"]])
            procs.append(proxy.proc)
            bare = await fleet.start_bare(env, tmp, upstreams, traces["bare relay"])
            procs.append(bare.proc)
            targets = [proxy, bare]
            warmup = sizes(args.requests)[1]
            samples: dict[str, list[dict[str, Any]]] = defaultdict(list)
            tallies: dict[str, Counter[str]] = {t.name: Counter() for t in targets}
            done = 0
            block_no = 0
            while done < args.requests:
                count = min(sizes(args.requests)[0], args.requests - done)
                order = targets if block_no % 2 == 0 else targets[::-1]
                for target in order:
                    before = fleet.read(target.pid)
                    wall = await run_block(target, done, count, tallies[target.name])
                    try:
                        reading = await fleet.settled(target.pid)
                    except (ProcessLookupError, FileNotFoundError):
                        code = await target.proc.wait()
                        name = target.name.split()[0]
                        kept = Path(tempfile.gettempdir()) / f"sublane-bench-soak-{name}.err"
                        kept.write_bytes((tmp / f"{name}.err").read_bytes())
                        text = kept.read_text(errors="replace")
                        at = max(0, text.find("Fatal Python error"))
                        raise RuntimeError(
                            f"{target.name} exited ({code}) after {done} requests; its stderr"
                            f" is kept in {kept}:\n" + text[max(0, at - 3000) : at + 1500]
                        ) from None
                    sample = {
                        "requests": done + count,
                        "rss_mb": reading.rss_mb,
                        "anon_mb": reading.anon_mb,
                        "peak_mb": reading.peak_mb,
                        "fds": reading.fds,
                        "cpu_s": reading.cpu_s,
                        "cpu_s_before": before.cpu_s,
                        "wall_s": wall,
                        "load": fleet.loadavg(),
                    }
                    samples[target.name].append(sample)
                    trace = traces[target.name]
                    if trace is not None and done + count in (warmup, args.requests):
                        await fleet.snapshot(target, trace, 1 if done + count == warmup else 2)
                    print(
                        f"  {target.name:<10} {done + count:>7} requests  RSS "
                        f"{reading.rss_mb:7.1f} MB (anon {reading.anon_mb:6.1f})  fds {reading.fds:>4}  "
                        f"{count / wall:6.0f} req/s  load {sample['load']}",
                        flush=True,
                    )
                done += count
                block_no += 1
            if proxy.name != "bare relay":
                async with (
                    aiohttp.ClientSession() as session,
                    session.get(proxy.url + "/healthz") as health,
                ):
                    report["healthz"] = await health.json(content_type=None)
            if args.trace:
                report["heap_growth"] = {
                    name: fleet.heap_growth(
                        trace / "snapshot-1.pickle", trace / "snapshot-2.pickle"
                    )
                    for name, trace in traces.items()
                    if trace is not None
                }
            report["targets"] = {
                name: {
                    "samples": rows,
                    "summary": summarize(rows, args.requests),
                    "tally": dict(sorted(tallies[name].items())),
                }
                for name, rows in samples.items()
            }
        finally:
            report["exit_codes"] = await fleet.stop_all(procs[::-1])
    report["environment"]["loadavg_end"] = fleet.loadavg()
    report["elapsed_s"] = time.perf_counter() - started
    return report


def render(report: dict[str, Any]) -> str:
    env = report["environment"]
    lines = [
        "",
        f"SubLane soak: {report['requests']:,} requests of the mixed traffic to each proxy, "
        f"{CLIENTS} clients, blocks of {sizes(report['requests'])[0]:,}, proxies taking turns",
        f"  python {env['python']}, aiohttp {env['aiohttp']}; load average {env['loadavg_start']}"
        f" at start, {env['loadavg_end']} at end",
        "",
        f"  {'proxy':<10} {'RSS@warm':>9} {'RSS end':>8} {'growth':>8} {'anon':>7} {'slope/10k':>10}"
        f" {'fds@warm':>8} {'fds end':>7} {'max':>4} {'CPU ms/req':>10} {'req/s':>6}",
    ]
    for name, t in report["targets"].items():
        s = t["summary"]
        lines.append(
            f"  {name:<10} {s['rss_at_warmup_mb']:>7.1f}MB {s['rss_end_mb']:>6.1f}MB "
            f"{s['rss_growth_mb']:>+6.1f}MB {s['anon_growth_mb']:>+5.1f}MB "
            f"{s['rss_slope_mb_per_10k']:>+8.2f}MB "
            f"{s['fds_at_warmup']:>8} {s['fds_end']:>7} {s['fds_max_after_warmup']:>4} "
            f"{s['cpu_ms_per_request']:>10.3f} {s['requests_per_s']:>6.0f}"
        )
    proxy = report["mode"]
    s = report["targets"][proxy]["summary"]
    lines += [
        "",
        f"  {proxy}: RSS growth after the first {s['measured_from']:,} requests "
        f"{s['rss_growth_mb']:+.1f} MB (target < {TARGET_GROWTH_MB:g} MB: "
        f"{'PASS' if s['rss_growth_mb'] < TARGET_GROWTH_MB else 'MISS'}); descriptors "
        f"{s['fds_growth']:+d} from {s['fds_at_warmup']}, at most {s['fds_max_after_warmup']} "
        f"({'MISS: grew' if s['fds_grew'] else 'PASS: within the first half'})",
    ]
    if "healthz" in report:
        lines.append(f"  /healthz at the end: {json.dumps(report['healthz'])}")
    lines.append(
        "  what each proxy answered, by kind (`~`, `!`: the flaky and broken groups' keys):"
    )
    for name, t in report["targets"].items():
        lines.append(f"    {name}: " + ", ".join(f"{k} x{v}" for k, v in t["tally"].items()))
    for name, growth in report.get("heap_growth", {}).items():
        lines += [f"  where {name}'s Python heap grew (tracemalloc):", *growth]
    lines.append(f"  exit codes {report['exit_codes']}; bench time {report['elapsed_s']:.0f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench.bench_soak", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--requests", type=int, default=100_000, metavar="N")
    parser.add_argument(
        "--tray", action="store_true", help="the tray app (windows open) instead of `serve`"
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument(
        "--trace",
        type=Path,
        metavar="DIR",
        help="run each proxy under tracemalloc (much slower), snapshot its heap at the end of "
        "the warm-up and at the end into DIR, and print where it grew",
    )
    args = parser.parse_args(argv)
    if args.requests < 1:
        parser.error("--requests must be at least 1")
    report = asyncio.run(run(args))
    print(render(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
