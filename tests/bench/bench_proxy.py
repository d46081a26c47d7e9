"""Proxy overhead benchmark: direct-to-upstream vs through SubLane, plus a real `serve`'s RSS.

Run from the repo root:  python -m tests.bench.bench_proxy [--json PATH] [--upstream thread|loop]

1. Small non-streaming POST /v1/messages at concurrency 1 and 8, direct vs through SubLane:
   p50/p99 latency, overhead (through - direct) and ratio.
2. A 1,000-event SSE stream, direct vs through: relay-time ratio and time to first body byte.
3. Peak RSS (VmHWM) of a real `python -m sublane_desktop serve` subprocess after 2,000
   requests at concurrency 8.

Everything is loopback; every loop is bounded. Parts 1-2 run the SubLane service in this
process (client and proxy share the main event loop). The fake upstream runs, by default, on
its own event loop in a separate thread, so its work does not queue behind the proxy's on one
loop (it still shares the GIL). `--upstream loop` puts it on the main loop instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import aiohttp

from sublane_desktop.accounts.secrets import SecretStore
from sublane_desktop.service import Service
from tests.conftest import Harness, file_keyring
from tests.fake_upstream import FakeAnthropic, Reply

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[2]
MODEL = "claude-sonnet-4-5"
SMALL_BODY = json.dumps(
    {"model": MODEL, "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
).encode()
STREAM_BODY = json.dumps(
    {
        "model": MODEL,
        "max_tokens": 4096,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
).encode()
# What Claude Code sends on a subscription login (the strict fake reads an OAuth token only with
# the oauth beta, and only from Claude Code: SPEC R-WF-2), both straight and through SubLane.
BASE_HEADERS = {
    "content-type": "application/json",
    "anthropic-version": "2023-06-01",
    "anthropic-beta": "oauth-2025-04-20",
    "User-Agent": "claude-cli/2.1.197 (external, cli)",
    "x-app": "cli",
}
DIRECT_TOKEN = "sk-ant-oat01-direct"  # what a client talking to the upstream itself would send

N_REQUESTS = 2000
N_WARMUP = 100
ROUNDS = 4  # measured requests are split into alternating direct/through blocks
SSE_EVENTS = 1000
SSE_TEXT = "x" * 4000
SSE_REPS = 20
SSE_WARMUP = 2
RSS_REQUESTS = 2000
RSS_CONCURRENCY = 8

TARGET_P50_OVERHEAD_MS = 1.0
TARGET_P99_OVERHEAD_MS = 5.0
TARGET_SSE_RATIO = 1.10
TARGET_RSS_MB = 90.0

REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=30)


# --- statistics ---------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def ms(seconds: float) -> float:
    return seconds * 1000.0


# --- the fake upstream, on its own thread or on the main loop ------------------------------------


class Upstream:
    """A FakeAnthropic, either on the caller's loop or on a private loop in a daemon thread."""

    def __init__(self, threaded: bool) -> None:
        self.threaded = threaded
        self.fake: FakeAnthropic | None = None
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
                target=self._loop.run_forever, name="fake-upstream", daemon=True
            )
            self._thread.start()

        async def make() -> FakeAnthropic:
            fake = FakeAnthropic()
            await fake.start()
            return fake

        self.fake = await self._on_loop(make)
        return self.fake.url

    def answer(self, reply: Reply) -> None:
        """Set the default reply (only between phases, while nothing is in flight)."""
        assert self.fake is not None
        self.fake.default = reply
        self.fake.seen.clear()  # it keeps every request; don't let that grow across phases

    async def stop(self) -> None:
        if self.fake is not None:
            await self._on_loop(self.fake.stop)
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            self._loop.close()


# --- load drivers -------------------------------------------------------------------------------


class Sample:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors: Counter[str] = Counter()
        self.wall = 0.0

    def extend(self, other: Sample) -> None:
        self.latencies += other.latencies
        self.errors += other.errors
        self.wall += other.wall


async def drive(
    session: aiohttp.ClientSession, url: str, headers: dict[str, str], total: int, concurrency: int
) -> Sample:
    """`total` small POSTs from `concurrency` workers sharing one keep-alive session."""
    sample = Sample()
    issued = 0

    async def worker() -> None:
        nonlocal issued
        while issued < total:
            issued += 1
            t0 = time.perf_counter()
            try:
                async with session.post(url, data=SMALL_BODY, headers=headers) as response:
                    await response.read()
                    status = response.status
            except (TimeoutError, aiohttp.ClientError) as exc:
                sample.errors[type(exc).__name__] += 1
                continue
            elapsed = time.perf_counter() - t0
            if status == 200:
                sample.latencies.append(elapsed)
            else:
                sample.errors[f"http_{status}"] += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    sample.wall = time.perf_counter() - t0
    return sample


async def one_stream(
    session: aiohttp.ClientSession, url: str, headers: dict[str, str]
) -> tuple[float, float, int, bool]:
    """(total seconds, seconds to first body byte, body bytes, saw message_stop)."""
    t0 = time.perf_counter()
    first: float | None = None
    size = 0
    tail = b""
    async with session.post(url, data=STREAM_BODY, headers=headers) as response:
        if response.status != 200:
            raise RuntimeError(
                f"stream answered HTTP {response.status}: {(await response.read())[:200]!r}"
            )
        async for chunk in response.content.iter_any():
            if first is None:
                first = time.perf_counter() - t0
            size += len(chunk)
            tail = (tail + chunk)[-256:]
    total = time.perf_counter() - t0
    return total, first if first is not None else total, size, b"message_stop" in tail


def new_session(concurrency: int = 8) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=max(concurrency, 8), keepalive_timeout=60),
        timeout=REQUEST_TIMEOUT,
    )


# --- part 1 -------------------------------------------------------------------------------------


async def bench_small(
    direct: tuple[aiohttp.ClientSession, str, dict[str, str]],
    through: tuple[aiohttp.ClientSession, str, dict[str, str]],
    concurrency: int,
) -> dict[str, Any]:
    modes = {"direct": direct, "through": through}
    for name, (session, url, headers) in modes.items():
        warm = await drive(session, url, headers, N_WARMUP, concurrency)
        if warm.errors:
            raise RuntimeError(f"warm-up {name} c={concurrency} failed: {dict(warm.errors)}")
    samples = {name: Sample() for name in modes}
    block = N_REQUESTS // ROUNDS
    for r in range(ROUNDS):
        order = ["direct", "through"] if r % 2 == 0 else ["through", "direct"]
        for name in order:
            session, url, headers = modes[name]
            samples[name].extend(await drive(session, url, headers, block, concurrency))
    out: dict[str, Any] = {"concurrency": concurrency, "requests_per_mode": block * ROUNDS}
    for name, s in samples.items():
        out[name] = {
            "p50_ms": ms(percentile(s.latencies, 50)),
            "p99_ms": ms(percentile(s.latencies, 99)),
            "mean_ms": ms(statistics.fmean(s.latencies)) if s.latencies else float("nan"),
            "ok": len(s.latencies),
            "errors": dict(s.errors),
            "req_per_s": len(s.latencies) / s.wall if s.wall else float("nan"),
        }
    d, t = out["direct"], out["through"]
    out["overhead_p50_ms"] = t["p50_ms"] - d["p50_ms"]
    out["overhead_p99_ms"] = t["p99_ms"] - d["p99_ms"]
    out["ratio_p50"] = t["p50_ms"] / d["p50_ms"]
    out["ratio_p99"] = t["p99_ms"] / d["p99_ms"]
    return out


# --- part 2 -------------------------------------------------------------------------------------


async def bench_stream(
    direct: tuple[aiohttp.ClientSession, str, dict[str, str]],
    through: tuple[aiohttp.ClientSession, str, dict[str, str]],
) -> dict[str, Any]:
    modes = {"direct": direct, "through": through}
    runs: dict[str, list[tuple[float, float, int, bool]]] = {"direct": [], "through": []}
    for i in range(SSE_WARMUP + SSE_REPS):
        order = ["direct", "through"] if i % 2 == 0 else ["through", "direct"]
        for name in order:
            session, url, headers = modes[name]
            result = await one_stream(session, url, headers)
            if i >= SSE_WARMUP:
                runs[name].append(result)
    out: dict[str, Any] = {"events": SSE_EVENTS, "reps": SSE_REPS}
    for name, rs in runs.items():
        totals = [r[0] for r in rs]
        firsts = [r[1] for r in rs]
        out[name] = {
            "total_ms_median": ms(statistics.median(totals)),
            "total_ms_min": ms(min(totals)),
            "total_ms_max": ms(max(totals)),
            "ttfb_ms_median": ms(statistics.median(firsts)),
            "body_bytes": rs[0][2],
            "complete": all(r[3] for r in rs),
        }
    out["ratio"] = out["through"]["total_ms_median"] / out["direct"]["total_ms_median"]
    out["ttfb_overhead_ms"] = out["through"]["ttfb_ms_median"] - out["direct"]["ttfb_ms_median"]
    out["same_bytes"] = out["through"]["body_bytes"] == out["direct"]["body_bytes"]
    return out


# --- part 3 -------------------------------------------------------------------------------------


def proc_status(pid: int) -> dict[str, float]:
    """VmRSS / VmHWM (peak RSS) of a process, in MB."""
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            out[name] = int(value.split()[0]) / 1024.0  # kB -> MB
    return out


async def cli(env: dict[str, str], *args: str, stdin: bytes | None = None) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sublane_desktop",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=REPO,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), 60)
    if proc.returncode != 0:
        raise RuntimeError(
            f"sublane {' '.join(args[:2])} failed ({proc.returncode}): "
            f"{err.decode(errors='replace').strip()[-300:]}"
        )
    return out.decode()


async def bench_serve_rss(upstream_url: str, tmp: Path) -> dict[str, Any]:
    data = tmp / "serve-data"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SUBLANE_KEYRING", "SUBLANE_KEYRING_PASSWORD", "SUBLANE_DATA_DIR")
    }
    env.update(
        {
            "PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring",
            "KEYRING_PROPERTY_FILE_PATH": str(tmp / "keyring.cfg"),
            "SUBLANE_ANTHROPIC_BASE_URL": upstream_url,
        }
    )
    secret = json.dumps({"access_token": "tok", "refresh_token": "r", "expires_at": 4000000000})
    await cli(
        env,
        "account",
        "add",
        "--provider",
        "anthropic",
        "--name",
        "bench",
        "--max-concurrency",
        "8",
        "--data-dir",
        str(data),
        stdin=secret.encode(),
    )
    key = await cli(env, "key", "create", "--name", "bench", "--data-dir", str(data))
    key = key.strip().splitlines()[0].strip()

    out_path, err_path = tmp / "serve.out", tmp / "serve.err"
    with open(out_path, "wb") as out_f, open(err_path, "wb") as err_f:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "sublane_desktop",
            "serve",
            "--port",
            "0",
            "--data-dir",
            str(data),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out_f,
            stderr=err_f,
            env=env,
            cwd=REPO,
        )
    result: dict[str, Any] = {"pid": proc.pid}
    try:
        url = None
        t_spawn = time.perf_counter()
        for _ in range(600):  # up to 30 s for the `listening on` line
            match = re.search(r"listening on (http://\S+)", out_path.read_text(errors="replace"))
            if match:
                url = match.group(1)
                break
            if proc.returncode is not None:
                break
            await asyncio.sleep(0.05)
        if url is None:
            raise RuntimeError(
                "serve did not print `listening on`: " + err_path.read_text(errors="replace")[-500:]
            )
        result["startup_s"] = time.perf_counter() - t_spawn
        result["idle"] = proc_status(proc.pid)
        async with new_session(RSS_CONCURRENCY) as session:
            headers = {**BASE_HEADERS, "Authorization": f"Bearer {key}"}
            sample = await drive(
                session, url + "/v1/messages", headers, RSS_REQUESTS, RSS_CONCURRENCY
            )
        result["after"] = proc_status(proc.pid)
        result["requests_ok"] = len(sample.latencies)
        result["errors"] = dict(sample.errors)
        result["p50_ms"] = ms(percentile(sample.latencies, 50))
        result["p99_ms"] = ms(percentile(sample.latencies, 99))
        result["req_per_s"] = len(sample.latencies) / sample.wall if sample.wall else 0.0
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(proc.wait(), 20)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        result["exit_code"] = proc.returncode
    return result


# --- --tray: the tray app, `serve` and a bare relay, side by side (issue 14) ----------------------

TRAY_TARGET_RATIO = 1.2  # tray p50 overhead <= 1.2 x serve's
TRAY_TARGET_P99_C8_MS = 10.0  # tray p99 overhead at concurrency 8
SERVE_VS_BARE_C8_MS = 0.5  # serve p50 within this of the bare relay at concurrency 8
TRAY_REQUESTS = 4800  # measured per mode and concurrency
TRAY_ROUNDS = 12


async def spawn_listening(
    args: list[str], env: dict[str, str], tmp: Path, name: str
) -> tuple[asyncio.subprocess.Process, str]:
    out_path, err_path = tmp / f"{name}.out", tmp / f"{name}.err"
    with open(out_path, "wb") as out_f, open(err_path, "wb") as err_f:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out_f,
            stderr=err_f,
            env=env,
            cwd=REPO,
        )
    for _ in range(1200):  # up to 60 s
        match = re.search(r"listening on (http://\S+)", out_path.read_text(errors="replace"))
        if match:
            return proc, match.group(1)
        if proc.returncode is not None:
            break
        await asyncio.sleep(0.05)
    if proc.returncode is None:
        proc.kill()
    raise RuntimeError(f"{name} did not start: " + err_path.read_text(errors="replace")[-3000:])


async def stop_process(proc: asyncio.subprocess.Process) -> int | None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGINT)
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()
    return proc.returncode


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU time a process has used (load-independent, unlike latency)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def prepared_data_dir(env: dict[str, str], data: Path) -> str:
    """A data dir with one account (limit 8) and a client key; returns the key."""
    secret = json.dumps({"access_token": "tok", "refresh_token": "r", "expires_at": 4000000000})
    await cli(
        env,
        "account",
        "add",
        "--provider",
        "anthropic",
        "--name",
        "bench",
        "--max-concurrency",
        "8",
        "--data-dir",
        str(data),
        stdin=secret.encode(),
    )
    key = await cli(env, "key", "create", "--name", "bench", "--data-dir", str(data))
    return key.strip().splitlines()[0].strip()


async def bench_side_by_side(upstream_url: str, tmp: Path) -> dict[str, Any]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SUBLANE_KEYRING", "SUBLANE_KEYRING_PASSWORD", "SUBLANE_DATA_DIR")
    }
    env.update(
        {
            "PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring",
            "KEYRING_PROPERTY_FILE_PATH": str(tmp / "keyring.cfg"),
            "SUBLANE_ANTHROPIC_BASE_URL": upstream_url,
            "QT_QPA_PLATFORM": "offscreen",
            "QT_API": "pyside6",
            "XDG_CONFIG_HOME": str(tmp / "xdg"),  # start-at-login and window geometry stay here
        }
    )
    serve_key = await prepared_data_dir(env, tmp / "serve-data")
    tray_key = await prepared_data_dir(env, tmp / "tray-data")
    procs: list[asyncio.subprocess.Process] = []
    result: dict[str, Any] = {}
    try:
        bare, bare_url = await spawn_listening(
            ["-m", "tests.bench.bare_relay", upstream_url], env, tmp, "bare"
        )
        procs.append(bare)
        serve, serve_url = await spawn_listening(
            [
                "-m",
                "sublane_desktop",
                "serve",
                "--port",
                "0",
                "--data-dir",
                str(tmp / "serve-data"),
            ],
            env,
            tmp,
            "serve",
        )
        procs.append(serve)
        tray, tray_url = await spawn_listening(
            ["-m", "tests.bench.tray_app", "--data-dir", str(tmp / "tray-data")], env, tmp, "tray"
        )
        procs.append(tray)
        pids = {"direct": None, "bare relay": bare.pid, "serve": serve.pid, "tray": tray.pid}
        modes = {
            "direct": (upstream_url, DIRECT_TOKEN),
            "bare relay": (bare_url, "unused"),
            "serve": (serve_url, serve_key),
            "tray": (tray_url, tray_key),
        }
        sessions = {name: new_session() for name in modes}
        try:
            for concurrency in (1, 8):
                samples = {name: Sample() for name in modes}
                cpu = {name: 0.0 for name in modes}
                for name, (url, token) in modes.items():
                    headers = {**BASE_HEADERS, "Authorization": f"Bearer {token}"}
                    warm = await drive(
                        sessions[name], url + "/v1/messages", headers, N_WARMUP, concurrency
                    )
                    if warm.errors:
                        logs = "".join(
                            (tmp / f"{n}.err").read_text(errors="replace")[-600:]
                            for n in ("tray",)
                            if (tmp / f"{n}.err").exists()
                        )
                        raise RuntimeError(
                            f"warm-up {name} at {url} failed: {dict(warm.errors)}; tray log: {logs}"
                        )
                block = TRAY_REQUESTS // TRAY_ROUNDS
                names = list(modes)
                for r in range(TRAY_ROUNDS):  # rotate the order so drift hits every mode alike
                    for name in names[r % len(names) :] + names[: r % len(names)]:
                        url, token = modes[name]
                        headers = {**BASE_HEADERS, "Authorization": f"Bearer {token}"}
                        before = cpu_seconds(pids[name])
                        samples[name].extend(
                            await drive(
                                sessions[name], url + "/v1/messages", headers, block, concurrency
                            )
                        )
                        cpu[name] += cpu_seconds(pids[name]) - before
                part: dict[str, Any] = {}
                for name, sample in samples.items():
                    part[name] = {
                        "p50_ms": ms(percentile(sample.latencies, 50)),
                        "p99_ms": ms(percentile(sample.latencies, 99)),
                        "ok": len(sample.latencies),
                        "errors": dict(sample.errors),
                        "cpu_ms_per_request": 1000 * cpu[name] / max(1, len(sample.latencies)),
                    }
                for name in modes:
                    if name != "direct":
                        part[name]["overhead_p50_ms"] = (
                            part[name]["p50_ms"] - part["direct"]["p50_ms"]
                        )
                        part[name]["overhead_p99_ms"] = (
                            part[name]["p99_ms"] - part["direct"]["p99_ms"]
                        )
                result[f"c{concurrency}"] = part
        finally:
            for session in sessions.values():
                await session.close()
        if tray.returncode is not None:
            raise RuntimeError(
                "the tray app died: " + (tmp / "tray.err").read_text(errors="replace")[-12000:]
            )
        result["tray_rss_mb"] = proc_status(tray.pid)
    finally:
        result["exit_codes"] = [await stop_process(p) for p in procs]
    c1, c8 = result["c1"], result["c8"]
    result["verdicts"] = {
        "tray_p50_vs_serve_c1": c1["tray"]["overhead_p50_ms"]
        <= TRAY_TARGET_RATIO * c1["serve"]["overhead_p50_ms"],
        "tray_p50_vs_serve_c8": c8["tray"]["overhead_p50_ms"]
        <= TRAY_TARGET_RATIO * c8["serve"]["overhead_p50_ms"],
        "tray_p99_c8": c8["tray"]["overhead_p99_ms"] <= TRAY_TARGET_P99_C8_MS,
        "serve_vs_bare_c8": c8["serve"]["p50_ms"] - c8["bare relay"]["p50_ms"]
        <= SERVE_VS_BARE_C8_MS,
    }
    return result


def target_figures(report: dict[str, Any]) -> dict[str, float]:
    """The figures the --tray targets judge, from one run."""
    side = report["side_by_side"]
    c1, c8 = side["c1"], side["c8"]
    return {
        "tray/serve p50 overhead c1": c1["tray"]["overhead_p50_ms"]
        / max(1e-9, c1["serve"]["overhead_p50_ms"]),
        "tray/serve p50 overhead c8": c8["tray"]["overhead_p50_ms"]
        / max(1e-9, c8["serve"]["overhead_p50_ms"]),
        "tray p99 overhead c8 ms": c8["tray"]["overhead_p99_ms"],
        "serve - bare p50 c8 ms": c8["serve"]["p50_ms"] - c8["bare relay"]["p50_ms"],
        "serve CPU ms/req c8": c8["serve"]["cpu_ms_per_request"],
        "tray CPU ms/req c8": c8["tray"]["cpu_ms_per_request"],
        "bare CPU ms/req c8": c8["bare relay"]["cpu_ms_per_request"],
    }


def target_medians(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    figures = [target_figures(r) for r in runs]
    return {
        name: {
            "median": statistics.median(f[name] for f in figures),
            "min": min(f[name] for f in figures),
            "max": max(f[name] for f in figures),
        }
        for name in figures[0]
    }


def render_medians(medians: dict[str, dict[str, float]], n: int) -> str:
    limits = {
        "tray/serve p50 overhead c1": TRAY_TARGET_RATIO,
        "tray/serve p50 overhead c8": TRAY_TARGET_RATIO,
        "tray p99 overhead c8 ms": TRAY_TARGET_P99_C8_MS,
        "serve - bare p50 c8 ms": SERVE_VS_BARE_C8_MS,
    }
    lines = ["", f"Medians over {n} runs (min - max):"]
    for name, m in medians.items():
        target = (
            f"  target <= {limits[name]:g} {verdict(m['median'] <= limits[name])}"
            if name in limits
            else ""
        )
        lines.append(f"  {name:<28} {m['median']:>7.2f}  ({m['min']:.2f} - {m['max']:.2f}){target}")
    return "\n".join(lines)


def render_side_by_side(report: dict[str, Any]) -> str:
    env = report["environment"]
    side = report["side_by_side"]
    lines = [
        "SubLane: tray app vs `serve` vs a bare aiohttp relay (same fake upstream, same run)",
        f"  python {env['python']}, aiohttp {env['aiohttp']}, {env['cpus']} CPUs; load average "
        f"{_load(env['loadavg_start'])} at start, {_load(env['loadavg_end'])} at end",
        "  each proxy in its own process; client and fake upstream in the bench process; tray ="
        " `sublane` GUI (offscreen) with the Accounts and Requests windows open and live",
        f"  {TRAY_REQUESTS} measured requests per mode and concurrency (+{N_WARMUP} warm-up), "
        f"{TRAY_ROUNDS} rotating blocks",
        "",
        f"  {'conc':>4}  {'mode':<11} {'p50 ms':>7} {'p99 ms':>7} {'+p50':>7} {'+p99':>7}"
        f" {'CPU ms/req':>10}",
    ]
    for c in (1, 8):
        part = side[f"c{c}"]
        for name in ("direct", "bare relay", "serve", "tray"):
            m = part[name]
            extra = (
                ""
                if name == "direct"
                else f" {m['overhead_p50_ms']:>+7.2f} {m['overhead_p99_ms']:>+7.2f}"
                f" {m['cpu_ms_per_request']:>10.3f}"
            )
            errors = f"  errors {m['errors']}" if m["errors"] else ""
            lines.append(
                f"  {c:>4}  {name:<11} {m['p50_ms']:>7.2f} {m['p99_ms']:>7.2f}{extra}{errors}"
            )
    v = side["verdicts"]
    c1, c8 = side["c1"], side["c8"]
    lines += [
        "",
        f"  tray p50 overhead <= {TRAY_TARGET_RATIO} x serve's: c1 "
        f"{c1['tray']['overhead_p50_ms']:+.2f} vs {c1['serve']['overhead_p50_ms']:+.2f} ms "
        f"{verdict(v['tray_p50_vs_serve_c1'])}, c8 {c8['tray']['overhead_p50_ms']:+.2f} vs "
        f"{c8['serve']['overhead_p50_ms']:+.2f} ms {verdict(v['tray_p50_vs_serve_c8'])}",
        f"  tray p99 overhead at c8 <= {TRAY_TARGET_P99_C8_MS:g} ms: "
        f"{c8['tray']['overhead_p99_ms']:+.2f} ms {verdict(v['tray_p99_c8'])}",
        f"  serve p50 within {SERVE_VS_BARE_C8_MS} ms of the bare relay at c8: "
        f"{c8['serve']['p50_ms'] - c8['bare relay']['p50_ms']:+.2f} ms "
        f"{verdict(v['serve_vs_bare_c8'])}",
        f"  tray RSS {side['tray_rss_mb'].get('VmRSS', 0):.0f} MB (peak "
        f"{side['tray_rss_mb'].get('VmHWM', 0):.0f} MB); exit codes {side['exit_codes']}",
    ]
    return "\n".join(lines)


async def run_side_by_side() -> dict[str, Any]:
    started = time.perf_counter()
    report: dict[str, Any] = {
        "environment": {
            "python": platform.python_version(),
            "aiohttp": aiohttp.__version__,
            "cpus": os.cpu_count(),
            "machine": platform.machine(),
            "loadavg_start": list(os.getloadavg()),
        }
    }
    upstream = Upstream(threaded=True)
    upstream_url = await upstream.start()
    upstream.answer(Reply())
    try:
        with tempfile.TemporaryDirectory(prefix="sublane-bench-tray-") as tmp_name:
            report["side_by_side"] = await bench_side_by_side(upstream_url, Path(tmp_name))
    finally:
        await upstream.stop()
    report["environment"]["loadavg_end"] = list(os.getloadavg())
    report["elapsed_s"] = time.perf_counter() - started
    return report


# --- report -------------------------------------------------------------------------------------


def _load(values: list[float]) -> str:
    return "/".join(f"{v:.2f}" for v in values)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def render(report: dict[str, Any]) -> str:
    lines: list[str] = []
    env = report["environment"]
    lines += [
        "SubLane proxy benchmark",
        f"  python {env['python']}, aiohttp {env['aiohttp']}, {env['cpus']} CPUs, {env['machine']}",
        f"  layout: {env['layout']}",
        f"  load average (1/5/15 min) at start {_load(env['loadavg_start'])}, at end "
        f"{_load(env['loadavg_end'])}: other processes on this box skew the figures",
        f"  part 1: {N_REQUESTS} measured requests per mode (+{N_WARMUP} warm-up), in {ROUNDS}"
        " alternating direct/through blocks; one keep-alive ClientSession per mode",
        "",
        "1. Small non-streaming POST /v1/messages (latency, ms)",
        f"  {'conc':>4}  {'mode':<8} {'p50':>7} {'p99':>7} {'mean':>7} {'req/s':>7}  errors",
    ]
    for part in report["small"]:
        c = part["concurrency"]
        for name in ("direct", "through"):
            m = part[name]
            lines.append(
                f"  {c:>4}  {name:<8} {m['p50_ms']:>7.2f} {m['p99_ms']:>7.2f} "
                f"{m['mean_ms']:>7.2f} {m['req_per_s']:>7.0f}  "
                f"{m['errors'] or '-'}"
            )
        target = ""
        if c == 8:
            target = (
                f"   target p50 <= {TARGET_P50_OVERHEAD_MS:g} ms "
                f"{verdict(part['overhead_p50_ms'] <= TARGET_P50_OVERHEAD_MS)}, "
                f"p99 <= {TARGET_P99_OVERHEAD_MS:g} ms "
                f"{verdict(part['overhead_p99_ms'] <= TARGET_P99_OVERHEAD_MS)}"
            )
        lines.append(
            f"  {c:>4}  overhead p50 {part['overhead_p50_ms']:+.2f} ms "
            f"(x{part['ratio_p50']:.2f}), p99 {part['overhead_p99_ms']:+.2f} ms "
            f"(x{part['ratio_p99']:.2f}){target}"
        )
    s = report["stream"]
    lines += [
        "",
        f"2. SSE stream, {s['events']} text deltas, {s['reps']} runs per mode (median)",
        f"  {'mode':<8} {'total ms':>9} {'min':>7} {'max':>7} {'TTFB ms':>8} {'bytes':>8}"
        "  complete",
    ]
    for name in ("direct", "through"):
        m = s[name]
        lines.append(
            f"  {name:<8} {m['total_ms_median']:>9.2f} {m['total_ms_min']:>7.2f} "
            f"{m['total_ms_max']:>7.2f} {m['ttfb_ms_median']:>8.2f} "
            f"{m['body_bytes']:>8}  {m['complete']}"
        )
    lines.append(
        f"  relay-time ratio through/direct x{s['ratio']:.3f}   target <= "
        f"{TARGET_SSE_RATIO:.2f} {verdict(s['ratio'] <= TARGET_SSE_RATIO)};  TTFB "
        f"overhead {s['ttfb_overhead_ms']:+.2f} ms; identical bytes: {s['same_bytes']}"
    )
    r = report["serve"]
    lines += [
        "",
        f"3. `sublane serve` subprocess (pid {r['pid']}), {RSS_REQUESTS} requests at "
        f"concurrency {RSS_CONCURRENCY}",
        f"  started in {r['startup_s']:.2f} s; idle RSS {r['idle']['VmRSS']:.1f} MB",
        f"  after load: peak RSS (VmHWM) {r['after']['VmHWM']:.1f} MB, VmRSS "
        f"{r['after']['VmRSS']:.1f} MB   target <= {TARGET_RSS_MB:g} MB "
        f"{verdict(r['after']['VmHWM'] <= TARGET_RSS_MB)}",
        f"  {r['requests_ok']} ok, errors {r['errors'] or '-'}; p50 {r['p50_ms']:.2f} ms, "
        f"p99 {r['p99_ms']:.2f} ms, {r['req_per_s']:.0f} req/s "
        "(client + upstream in the bench process, proxy on its own)",
        f"  SIGINT -> exit code {r['exit_code']}",
        "",
        f"total bench time {report['elapsed_s']:.1f} s",
    ]
    return "\n".join(lines)


# --- main ---------------------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    threaded = args.upstream == "thread"
    layout = (
        "client + SubLane service share the main asyncio loop; fake upstream on its own "
        "loop in a separate thread (same process, shared GIL)"
        if threaded
        else "client, SubLane service and fake upstream all share ONE asyncio loop"
    )
    report: dict[str, Any] = {
        "environment": {
            "python": platform.python_version(),
            "aiohttp": aiohttp.__version__,
            "cpus": os.cpu_count(),
            "machine": platform.machine(),
            "layout": layout,
            "upstream": args.upstream,
            "loadavg_start": list(os.getloadavg()),
        }
    }
    upstream = Upstream(threaded)
    upstream_url = await upstream.start()
    try:
        with tempfile.TemporaryDirectory(prefix="sublane-bench-") as tmp_name:
            tmp = Path(tmp_name)
            secrets = SecretStore(tmp, backend=file_keyring(tmp / "keyring.cfg"))
            service = Service(
                tmp / "data",
                port=0,
                secret_store=secrets,
                env={"SUBLANE_ANTHROPIC_BASE_URL": upstream_url},
            )
            await service.start()
            try:
                harness = Harness(service, upstream.fake)
                await harness.add_account("bench", limit=8)
                key = await harness.create_key("bench")
                async with new_session() as direct_s, new_session() as through_s:
                    direct = (
                        direct_s,
                        upstream_url + "/v1/messages",
                        {**BASE_HEADERS, "Authorization": f"Bearer {DIRECT_TOKEN}"},
                    )
                    through = (
                        through_s,
                        harness.url + "/v1/messages",
                        {**BASE_HEADERS, "Authorization": f"Bearer {key}"},
                    )
                    upstream.answer(Reply())
                    report["small"] = [await bench_small(direct, through, c) for c in (1, 8)]
                    upstream.answer(Reply(events=SSE_EVENTS, text=SSE_TEXT))
                    report["stream"] = await bench_stream(direct, through)
            finally:
                await service.stop(drain_timeout=2)
            upstream.answer(Reply())
            report["serve"] = await bench_serve_rss(upstream_url, tmp)
    finally:
        await upstream.stop()
    report["elapsed_s"] = time.perf_counter() - started
    report["environment"]["loadavg_end"] = list(os.getloadavg())
    report["targets"] = {
        "overhead_p50_ms_c8": TARGET_P50_OVERHEAD_MS,
        "overhead_p99_ms_c8": TARGET_P99_OVERHEAD_MS,
        "sse_ratio": TARGET_SSE_RATIO,
        "peak_rss_mb": TARGET_RSS_MB,
    }
    c8 = next(p for p in report["small"] if p["concurrency"] == 8)
    report["verdicts"] = {
        "overhead_p50_c8": c8["overhead_p50_ms"] <= TARGET_P50_OVERHEAD_MS,
        "overhead_p99_c8": c8["overhead_p99_ms"] <= TARGET_P99_OVERHEAD_MS,
        "sse_ratio": report["stream"]["ratio"] <= TARGET_SSE_RATIO,
        "peak_rss": report["serve"]["after"]["VmHWM"] <= TARGET_RSS_MB,
    }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench.bench_proxy", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument(
        "--upstream",
        choices=("thread", "loop"),
        default="thread",
        help="fake upstream on its own thread+loop (default) or on the main loop",
    )
    parser.add_argument(
        "--tray",
        action="store_true",
        help="instead: the tray app, `serve` and a bare aiohttp relay side by "
        "side against the same fake upstream",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="with --tray: N whole runs, each printed, then the median of each target figure "
        "(a shared or virtual machine swings from run to run)",
    )
    args = parser.parse_args(argv)
    if args.tray:
        runs = []
        for _ in range(max(1, args.repeat)):
            runs.append(asyncio.run(run_side_by_side()))
            print(render_side_by_side(runs[-1]), flush=True)
        report = runs[-1] if len(runs) == 1 else {"runs": runs, "medians": target_medians(runs)}
        if len(runs) > 1:
            print(render_medians(report["medians"], len(runs)))
    else:
        report = asyncio.run(run(args))
        print(render(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
        print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
