"""Wiring: store + secrets + core + proxy (+ gui) on one loop (R-ARCH-3).

Headless mode (`sublane serve`) never imports Qt; GUI mode imports it only here, on demand.
"""

from __future__ import annotations

import asyncio
import os
import logging
import signal
import sys
from pathlib import Path

from sublane_desktop.service import Service

log = logging.getLogger(__name__)


def make_service(data_dir: Path, host: str, port: int | None) -> Service:
    return Service(data_dir, host=host, port=port)


async def _serve(data_dir: Path, host: str, port: int | None) -> int:
    service = make_service(data_dir, host, port)
    await service.start()
    print(f"listening on {service.endpoint_url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # Windows: Ctrl-C arrives as KeyboardInterrupt
            pass
    try:
        await stop.wait()
    finally:
        print("stopping: letting in-flight requests finish", file=sys.stderr, flush=True)
        await service.stop()
    return 0


def run_serve(data_dir: Path, host: str, port: int | None) -> int:
    try:
        return asyncio.run(_serve(data_dir, host, port))
    except KeyboardInterrupt:
        return 0


def has_display() -> bool:
    """Whether a GUI can start; without one Qt would abort, so `sublane` serves headless."""
    if os.environ.get("QT_QPA_PLATFORM"):
        return True
    if sys.platform.startswith("linux") or "bsd" in sys.platform:
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def run_gui(data_dir: Path, host: str, port: int | None) -> int:
    from sublane_desktop.gui.main import run

    return run(lambda: make_service(data_dir, host, port), data_dir)
