"""The processes the soak and scale benchmarks measure, and how they are read from outside.

Every process here is a real one: the fake upstreams (tests.bench.mixed_upstreams), `sublane
serve`, the tray app (tests.bench.tray_app, windows open) and the bare aiohttp relay. Memory,
descriptors and CPU are read from /proc, so nothing inside the process under test changes to
be measured.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path

from tests.bench.bench_proxy import REPO, cli, cpu_seconds, stop_process


@dataclass
class Upstreams:
    proc: asyncio.subprocess.Process
    anthropic: str
    codex: str


@dataclass
class Target:
    """One proxy under test: its process, URL and client keys (by group)."""

    name: str
    proc: asyncio.subprocess.Process
    url: str
    keys: dict[str, str] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.proc.pid


@dataclass(frozen=True)
class Reading:
    rss_mb: float
    peak_mb: float
    fds: int
    cpu_s: float
    anon_mb: float = 0.0  # the anonymous part of RSS: heaps, not pages of mapped files


def read(pid: int) -> Reading:
    """RSS, peak RSS and anonymous RSS (MB), open descriptors and CPU seconds of a live
    process."""
    status: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM", "RssAnon"):
            status[name] = int(value.split()[0]) / 1024.0
    if "VmRSS" not in status:
        raise ProcessLookupError(f"process {pid} has exited")  # a zombie has no memory left
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return Reading(
        status["VmRSS"], status["VmHWM"], fds, cpu_seconds(pid), status.get("RssAnon", 0.0)
    )


async def settled(pid: int, tries: int = 30) -> Reading:
    """A reading once the descriptor count has stopped moving (closed client connections take
    the server a loop turn or two to notice), polling /proc every 0.1 s, at most `tries` times."""
    last = read(pid)
    for _ in range(tries):
        await asyncio.sleep(0.1)
        now = read(pid)
        if now.fds == last.fds:
            return now
        last = now
    return last


def child_env(tmp: Path, upstreams: Upstreams) -> dict[str, str]:
    """The environment of every child: a keyring file of the run's own, the fakes as upstreams,
    Qt offscreen, config under the temp dir."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SUBLANE_KEYRING", "SUBLANE_KEYRING_PASSWORD", "SUBLANE_DATA_DIR")
    }
    env.update(
        {
            "PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring",
            "KEYRING_PROPERTY_FILE_PATH": str(tmp / "keyring.cfg"),
            "SUBLANE_ANTHROPIC_BASE_URL": upstreams.anthropic,
            "SUBLANE_OAUTH_BASE_URL": upstreams.anthropic,
            "SUBLANE_CODEX_BASE_URL": upstreams.codex,
            "SUBLANE_OPENAI_BASE_URL": upstreams.codex,
            "QT_QPA_PLATFORM": "offscreen",
            "QT_API": "pyside6",
            "XDG_CONFIG_HOME": str(tmp / "xdg"),
        }
    )
    return env


async def wait_for_lines(
    proc: asyncio.subprocess.Process,
    out_path: Path,
    err_path: Path,
    patterns: list[str],
    wait_s: float = 60.0,
) -> list[str]:
    """The first group of each pattern once all appear on the child's stdout."""
    for _ in range(int(wait_s / 0.05)):
        text = out_path.read_text(errors="replace")
        found = [re.search(p, text) for p in patterns]
        if all(found):
            return [m.group(1) for m in found if m]
        if proc.returncode is not None:
            break
        await asyncio.sleep(0.05)
    if proc.returncode is None:
        proc.kill()
        await proc.wait()
    raise RuntimeError(
        f"{out_path.stem} did not start: " + err_path.read_text(errors="replace")[-3000:]
    )


async def spawn(
    args: list[str], env: dict[str, str], tmp: Path, name: str, patterns: list[str]
) -> tuple[asyncio.subprocess.Process, list[str]]:
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
    # (under tracemalloc, start-up's imports take minutes on a busy machine)
    wait_s = 600.0 if "tests.bench.traced" in args else 60.0
    return proc, await wait_for_lines(proc, out_path, err_path, patterns, wait_s)


async def start_upstreams(tmp: Path) -> Upstreams:
    proc, (anthropic, codex) = await spawn(
        ["-m", "tests.bench.mixed_upstreams"],
        dict(os.environ),
        tmp,
        "upstreams",
        [r"anthropic (http://\S+)", r"codex (http://\S+)"],
    )
    return Upstreams(proc, anthropic, codex)


@dataclass(frozen=True)
class AccountSpec:
    provider: str  # anthropic | codex
    name: str
    group: str = "default"
    limit: int = 8


def secret_for(account: AccountSpec) -> dict[str, object]:
    secret: dict[str, object] = {
        "access_token": f"tok-{account.name}",
        "refresh_token": f"rt-{account.name}",
        "expires_at": 4_000_000_000,
    }
    if account.provider == "codex":
        secret["account_id"] = f"acct-{account.name}"
    return secret


async def prepare_data_dir(
    env: dict[str, str],
    data: Path,
    accounts: list[AccountSpec],
    key_groups: list[str],
    settings: dict[str, object],
) -> dict[str, str]:
    """A data dir made through the CLI a person uses: accounts, one client key per group, the
    settings. Returns the keys by group."""
    for account in accounts:
        await cli(
            env,
            "account",
            "add",
            "--provider",
            account.provider,
            "--name",
            account.name,
            "--group",
            account.group,
            "--max-concurrency",
            str(account.limit),
            "--data-dir",
            str(data),
            stdin=json.dumps(secret_for(account)).encode(),
        )
    keys = {}
    for group in key_groups:
        out = await cli(
            env,
            "key",
            "create",
            "--name",
            f"bench-{group}",
            "--group",
            group,
            "--data-dir",
            str(data),
        )
        keys[group] = out.strip().splitlines()[0].strip()
    for key, value in settings.items():
        await cli(env, "settings", key, json.dumps(value), "--data-dir", str(data))
    return keys


LISTENING = [r"listening on (http://\S+)"]


def module_args(module: str, args: list[str], trace: Path | None) -> list[str]:
    """`-m module args`, or the same under tests.bench.traced writing snapshots to `trace`."""
    if trace is None:
        return ["-m", module, *args]
    trace.mkdir(parents=True, exist_ok=True)
    return ["-m", "tests.bench.traced", str(trace), module, *args]


async def start_serve(
    env: dict[str, str], tmp: Path, data: Path, keys: dict[str, str], trace: Path | None = None
) -> Target:
    args = ["serve", "--port", "0", "--data-dir", str(data)]
    proc, (url,) = await spawn(
        module_args("sublane_desktop", args, trace), env, tmp, "serve", LISTENING
    )
    return Target("serve", proc, url, keys)


async def start_tray(
    env: dict[str, str], tmp: Path, data: Path, keys: dict[str, str], trace: Path | None = None
) -> Target:
    args = ["--data-dir", str(data)]
    proc, (url,) = await spawn(
        module_args("tests.bench.tray_app", args, trace), env, tmp, "tray", LISTENING
    )
    return Target("tray", proc, url, keys)


async def start_bare(
    env: dict[str, str], tmp: Path, upstreams: Upstreams, trace: Path | None = None
) -> Target:
    args = [upstreams.anthropic, upstreams.codex]
    proc, (url,) = await spawn(
        module_args("tests.bench.bare_relay", args, trace), env, tmp, "bare", LISTENING
    )
    return Target("bare relay", proc, url, dict.fromkeys(("default", "flaky", "broken"), "unused"))


async def snapshot(target: Target, trace: Path, n: int) -> Path:
    """Ask a traced target for heap snapshot n and wait (up to 120 s) until it is written."""
    path = trace / f"snapshot-{n}.pickle"
    target.proc.send_signal(signal.SIGUSR1)
    for _ in range(1200):
        if path.exists():
            return path
        await asyncio.sleep(0.1)
    raise RuntimeError(f"{target.name} wrote no heap snapshot {n}")


def heap_growth(first: Path, second: Path, top: int = 12) -> list[str]:
    """The allocation sites whose live memory grew most between two snapshots, in words."""
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
    before = tracemalloc.Snapshot.load(str(first)).filter_traces(ignore)
    after = tracemalloc.Snapshot.load(str(second)).filter_traces(ignore)
    stats = after.compare_to(before, "traceback")
    lines = [
        f"    live Python heap {sum(s.size for s in after.statistics('filename')) / 1e6:.2f} MB,"
        f" {sum(s.size_diff for s in stats) / 1e6:+.2f} MB since the end of the warm-up"
    ]
    for stat in stats[:top]:
        if stat.size_diff <= 0:
            break
        lines.append(f"    {stat.size_diff / 1024:+9.1f} KB {stat.count_diff:+7d} blocks")
        for frame in list(stat.traceback)[-4:][::-1]:
            lines.append(f"        {frame.filename.split('site-packages/')[-1]}:{frame.lineno}")
    return lines


async def stop_all(procs: list[asyncio.subprocess.Process]) -> list[int | None]:
    return [await stop_process(p) for p in procs]


def loadavg() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())
