"""GUI startup benchmark: time to the Accounts window on screen, and resident memory.

Run from the repo root:  python -m tests.bench.bench_gui [--accounts 10] [--records 5000]
                                                         [--runs 3] [--json PATH]

Seeds a data directory (accounts with gauge observations, and request records when the Requests
window exists), then starts the real app — `gui.main.run` with a real Service, qasync, the tray
logic — in a fresh process, offscreen. There is no system tray offscreen, so the Accounts window
opens at start, as on a desktop without a tray. The child reports:

- shown_ms:     spawn of the process -> first paint of the Accounts window
- import_ms:    spawn -> `sublane_desktop.gui.main` imported (interpreter + PySide6)
- rss_shown_mb: resident memory at that first paint
- requests_ms / rss_requests_mb: opening the Requests window until its first page (5,000
  records in the database) is loaded, and the memory after that

Quota polls go to a closed local port, so nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

UNREACHABLE = "http://127.0.0.1:9"  # discard port: quota reads fail at once, locally


def rss_mb() -> float:
    try:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    except ImportError:  # Linux without psutil
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def process_start() -> float:
    try:
        import psutil

        return psutil.Process().create_time()
    except ImportError:
        ticks = os.sysconf("SC_CLK_TCK")
        start = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime")
        )
        return boot + start / ticks


# --- seeding (parent) ------------------------------------------------------------------------


def child_env(data: Path) -> dict[str, str]:
    return {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "QT_API": "pyside6",
        "PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring",
        "KEYRING_PROPERTY_FILE_PATH": str(data / "keyring.cfg"),
        "XDG_CONFIG_HOME": str(data / "xdg-config"),
        "SUBLANE_ANTHROPIC_BASE_URL": UNREACHABLE,
        "SUBLANE_OAUTH_BASE_URL": UNREACHABLE,
        "SUBLANE_CODEX_BASE_URL": UNREACHABLE,
    }


async def seed(data: Path, accounts: int, records: int) -> None:
    os.environ.update(child_env(data))
    from sublane_desktop.core.gauges import Observation
    from sublane_desktop.core.records import RequestRecord
    from sublane_desktop.service import Service
    from sublane_desktop.store import quota as quota_store

    service = Service(data, port=0)
    await service.start()
    now = service.clock.now()
    ids = []
    for i in range(accounts):
        provider = "anthropic" if i % 3 else "codex"
        secret = {
            "access_token": f"tok-{i}",
            "refresh_token": f"rt-{i}",
            "expires_at": now + 30 * 86400,
        }
        if provider == "codex":
            secret["account_id"] = f"acct-{i}"
        view = await service.add_account(provider, f"account-{i:02d}", secret)
        ids.append(view["id"])
        if provider == "anthropic":
            observations = [
                Observation("five_hour", (i * 0.13) % 1.0, now + 3600 * (i % 5 + 1), now, "poll"),
                Observation("seven_day", (i * 0.07) % 1.0, now + 86400 * (i % 6 + 1), now, "poll"),
                Observation("fable", (i * 0.19) % 1.0, now + 86400 * 3, now, "poll"),
            ]
            await service.store.write(
                lambda a=view["id"], o=observations: quota_store.save_observations(a, 1, o)
            )
    if records:
        await service.create_key("bench")
        from sublane_desktop.store import repositories as repo

        key_id = (await service.store.read(repo.list_keys))[0]["id"]
        for n in range(records):
            service.record(
                RequestRecord(
                    request_id=f"req_{n:024x}",
                    user_id=1,
                    key_id=key_id,
                    group_id=1,
                    account_id=ids[n % len(ids)],
                    provider="anthropic",
                    model="claude-sonnet-4-5",
                    protocol="anthropic",
                    operation="messages",
                    started_at=now - 6 * 86400 + n * 100,
                    duration_ms=900 + n % 500,
                    first_token_ms=300,
                    outcome="success" if n % 9 else "error",
                    error_code=None if n % 9 else "upstream_error",
                    upstream_status=200 if n % 9 else 529,
                    input_tokens=1200,
                    output_tokens=80,
                    cached_tokens=600,
                )
            )
        await service.flush_records()
    await service.stop(drain_timeout=1)


# --- the measured app (child) ------------------------------------------------------------------


def child(data: Path, out: Path) -> int:
    # The parent's clock just before it spawned us: includes exec and interpreter start-up
    # (psutil's create_time is only as precise as the boot time, a whole second).
    started = float(os.environ.get("SUBLANE_BENCH_T0") or process_start())
    os.environ["QT_API"] = "pyside6"
    from PySide6.QtCore import QEvent, QObject, QTimer
    from PySide6.QtWidgets import QApplication

    import sublane_desktop.gui.main as gui_main
    from sublane_desktop.gui.accounts_window import AccountsWindow
    from sublane_desktop.service import Service

    result: dict[str, Any] = {"import_ms": (time.time() - started) * 1000}
    app = QApplication(sys.argv[:1])

    def finish() -> None:
        out.write_text(json.dumps(result))
        QApplication.quit()

    def open_requests(window: AccountsWindow) -> None:
        if not window.requests_button.isEnabled():
            finish()
            return
        from sublane_desktop.gui.requests_window import RequestsWindow

        began = time.perf_counter()

        def loaded() -> bool:
            found = [
                w
                for w in QApplication.topLevelWidgets()
                if isinstance(w, RequestsWindow) and w.isVisible()
            ]
            return (
                bool(found)
                and not getattr(found[0], "_loading", False)
                and bool(found[0].model.rowCount())
            )

        def poll(attempts: int = 2000) -> None:
            if loaded() or attempts == 0:
                result["requests_ms"] = (time.perf_counter() - began) * 1000
                result["requests_loaded"] = loaded()
                result["rss_requests_mb"] = rss_mb()
                finish()
            else:
                QTimer.singleShot(5, lambda: poll(attempts - 1))

        window.requests_button.click()
        poll()

    class FirstPaint(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if (
                event.type() == QEvent.Type.Paint
                and isinstance(watched, AccountsWindow)
                and "shown_ms" not in result
            ):
                result["shown_ms"] = (time.time() - started) * 1000
                result["rss_shown_mb"] = rss_mb()
                result["cards"] = len(watched.cards)
                QTimer.singleShot(0, lambda: open_requests(watched))
            return False

    first_paint = FirstPaint()
    app.installEventFilter(first_paint)
    code = gui_main.run(lambda: Service(data, port=0), data)
    result["exit_code"] = code
    out.write_text(json.dumps(result))
    return code


# --- driver ------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accounts", type=int, default=10)
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.out)

    import importlib.util

    has_requests = importlib.util.find_spec("sublane_desktop.gui.requests_window") is not None
    records = args.records if has_requests else 0
    with tempfile.TemporaryDirectory(prefix="sublane-bench-gui-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        asyncio.run(seed(data, args.accounts, records))
        runs = []
        for n in range(args.runs):
            out = Path(tmp) / f"run-{n}.json"
            wall = time.perf_counter()
            env = child_env(data) | {"SUBLANE_BENCH_T0": repr(time.time())}
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "tests.bench.bench_gui",
                    "--child",
                    str(data),
                    "--out",
                    str(out),
                ],
                env=env,
                check=True,
                timeout=120,
                stderr=subprocess.DEVNULL if not os.environ.get("BENCH_VERBOSE") else None,
            )
            run = json.loads(out.read_text())
            run["process_wall_ms"] = (time.perf_counter() - wall) * 1000  # spawn to exit
            runs.append(run)
            print(
                f"run {n + 1}: "
                + ", ".join(
                    f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in run.items()
                )
            )
    summary = {"accounts": args.accounts, "records": records, "runs": runs}
    for key in ("import_ms", "shown_ms", "rss_shown_mb", "requests_ms", "rss_requests_mb"):
        values = [r[key] for r in runs if key in r]
        if values:
            summary[f"median_{key}"] = statistics.median(values)
    print(f"\n{args.accounts} accounts, {records} records, {args.runs} runs (medians):")
    print(f"  interpreter + imports      {summary['median_import_ms']:8.0f} ms")
    print(
        f"  Accounts window painted    {summary['median_shown_ms']:8.0f} ms after exec, "
        f"RSS {summary['median_rss_shown_mb']:.0f} MB"
    )
    if "median_requests_ms" in summary:
        print(
            f"  Requests window, 1st page  {summary['median_requests_ms']:8.0f} ms after "
            f"click, RSS {summary['median_rss_requests_mb']:.0f} MB"
        )
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
