"""Wiring: store + secrets + core + proxy (+ gui) on one loop (R-ARCH-3).

Headless mode (`sublane serve`) never imports Qt; GUI mode imports it only here, on demand.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path

from sublane_desktop import heap
from sublane_desktop.service import Service
from sublane_desktop.stop_signals import on_stop_signals

log = logging.getLogger(__name__)

# SIGINT, SIGTERM and Quit let in-flight streams finish for at most this long (R-FT-8, R-UI-5).
DRAIN_SECONDS = 10.0


def make_service(data_dir: Path, host: str, port: int | None) -> Service:
    return Service(data_dir, host=host, port=port)


async def _serve(data_dir: Path, host: str, port: int | None) -> int:
    from sublane_desktop.startup import StartupError

    stop = asyncio.Event()
    # Before start: a Ctrl-C or SIGTERM while starting stops cleanly once started (R-FT-8).
    restore = on_stop_signals(asyncio.get_running_loop(), stop.set)
    try:
        service = make_service(data_dir, host, port)
        try:
            await service.start()
        except StartupError as exc:
            print(f"sublane: error: {exc}", file=sys.stderr, flush=True)
            return 1
        except Exception as exc:  # unforeseen: still one line, never a traceback (R-FT-7)
            log.debug("start failed", exc_info=True)
            print(
                f"sublane: error: could not start: {type(exc).__name__}: {exc}",
                file=sys.stderr,
                flush=True,
            )
            return 1
        heap.settle()
        print(f"listening on {service.endpoint_url}", flush=True)
        try:
            await stop.wait()
        finally:
            print("stopping: letting in-flight requests finish", file=sys.stderr, flush=True)
            await service.stop(drain_timeout=DRAIN_SECONDS)
        return 0
    finally:
        restore()


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

    def service_factory(other_port: int | None = None) -> Service:
        # The port-in-use dialog starts the service again on the port the person picked.
        return make_service(data_dir, host, port if other_port is None else other_port)

    return run(service_factory, data_dir)
