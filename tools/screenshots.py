"""Render every window, dialog and the tray menu with a realistic demo pool into PNG files.

    python -m tools.screenshots OUTDIR

Offscreen (QT_QPA_PLATFORM=offscreen), grabbed with QWidget.grab(). The pool is real: a Service
on a temporary data dir with a FakeClock, secrets in an in-memory keyring that stands in for the
desktop's (so Add account says what most people read: "your system keyring"), gauges fed through real Observations, a cooldown from a real failed lease, records through
service.record. Upstream base URLs point at a closed local port, so nothing leaves the machine
(a quota refresh the Accounts window starts simply fails and keeps the demo readings).

Windows that are not built yet are skipped with a line saying so, so this keeps working while
the desktop grows.
"""

from __future__ import annotations

import argparse
import asyncio
import calendar
import gc
import importlib
import inspect
import json
import logging
import os
import pkgutil
import random
import re
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# 14:32:05 UTC on a Thursday: the clock every demo time is relative to.
DEMO_NOW = float(calendar.timegm((2026, 5, 14, 14, 32, 5, 0, 0, 0)))
DEAD_UPSTREAM = "http://127.0.0.1:9"  # discard port: connections are refused at once
SETTLE_S = 0.15  # a few event-loop turns so layouts, fonts and async replies land


@dataclass
class DemoPool:
    service: Any
    clock: Any
    leases: list[Any] = field(default_factory=list)
    featured_record: int | None = None  # the request shown in the details dialog


@dataclass
class Shots:
    outdir: Path
    written: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    suffix: str = ""  # "-dark" for the dark-palette variant
    # R-UI-10: what does not fit at the default size, per picture (layout_audit.problems)
    problems: dict[str, list[str]] = field(default_factory=dict)
    # R-UI-15: the least size each window can take, [width, height] in logical pixels
    minimums: dict[str, list[int]] = field(default_factory=dict)
    # ... and the least its content needs before it scrolls (sizing.scroll_when_small)
    contents: dict[str, list[int]] = field(default_factory=dict)

    def skip(self, what: str, why: str) -> None:
        self.skipped.append(what)
        print(f"skipped {what}: {why}")

    def audit(self, window: Any, name: str, prefix: str = "") -> None:
        """layout_audit.problems of a window (a menu too: its rows are painted text)."""
        from tools.layout_audit import problems

        found = [prefix + p for p in problems(window)]
        if found:
            self.problems.setdefault(name + self.suffix, []).extend(found)

    def save(self, widget: Any, name: str) -> Path:
        """A widget (grabbed) or a ready QPixmap, as OUTDIR/name.png."""
        from PySide6.QtWidgets import QWidget

        name += self.suffix
        path = self.outdir / f"{name}.png"
        if isinstance(widget, QWidget) and widget.isWindow() and widget.inherits("QMenu") is False:
            self.audit(widget, name.removesuffix(self.suffix))
            from tools.layout_audit import content_needs, smallest

            least = smallest(widget)
            self.minimums[name] = [least.width(), least.height()]
            need = content_needs(widget)
            if need is not None:
                self.contents[name] = [need.width(), need.height()]
        focused = widget.focusWidget() if hasattr(widget, "focusWidget") else None
        if focused is not None and focused is not widget:
            focused.clearFocus()  # no text cursor or focus ring frozen into the picture
        pixmap = widget.grab() if hasattr(widget, "grab") else widget
        if pixmap.isNull() or not pixmap.save(str(path), "PNG"):
            raise RuntimeError(f"could not render {name}")
        self.written.append(path)
        print(f"wrote {path}")
        return path


# --- the demo pool ----------------------------------------------------------------------------


def _secret(provider: str, name: str) -> dict[str, Any]:
    secret: dict[str, Any] = {
        "access_token": f"demo-access-{name}",
        "refresh_token": f"demo-refresh-{name}",
        "expires_at": DEMO_NOW + 30 * 86_400,
    }
    if provider == "codex":
        secret["account_id"] = f"demo-{name}"
    return secret


def desktop_keyring() -> Any:
    """A keyring backend kept in memory, standing in for the desktop's password store: the
    pictures show what a person with one reads, and nothing is written anywhere."""
    from keyring.backend import KeyringBackend

    class DesktopKeyring(KeyringBackend):
        priority = 1

        def __init__(self) -> None:
            super().__init__()
            self.secrets: dict[tuple[str, str], str] = {}

        def get_password(self, service: str, username: str) -> str | None:
            return self.secrets.get((service, username))

        def set_password(self, service: str, username: str, password: str) -> None:
            self.secrets[service, username] = password

        def delete_password(self, service: str, username: str) -> None:
            self.secrets.pop((service, username), None)

    return DesktopKeyring()


async def build_demo_pool(data_dir: Path) -> DemoPool:
    from sublane_desktop.accounts.secrets import SecretStore
    from sublane_desktop.core.clock import FakeClock
    from sublane_desktop.core.gauges import Observation
    from sublane_desktop.core.pool import Outcome
    from sublane_desktop.service import BASE_URL_ENV, DEFAULT_PORT, Service

    clock = FakeClock(DEMO_NOW)
    service = Service(
        data_dir / "data",
        port=0,
        clock=clock,
        secret_store=SecretStore(data_dir, backend=desktop_keyring()),
        env={name: DEAD_UPSTREAM for name in BASE_URL_ENV.values()},
    )
    await service.start()
    # Pictures show the default port; the real listener is on a free one, so a SubLane already
    # running on this machine is no obstacle (and nothing can connect to the demo by mistake).
    service.port = DEFAULT_PORT
    demo = DemoPool(service, clock)
    now = clock.now()
    hour, day = 3600.0, 86_400.0

    accounts = [  # name, provider, limit, {window: (utilization, resets in seconds)}
        (
            "work-max",
            "anthropic",
            3,
            {
                "five_hour": (0.42, 2 * hour + 13 * 60),
                "seven_day": (0.61, 3 * day + 5 * hour),
                "fable": (0.35, day + 14 * hour),
            },
        ),
        (
            "personal-pro",
            "anthropic",
            2,
            {
                "five_hour": (0.93, 47 * 60),
                "seven_day": (0.71, 4 * day + 2 * hour),
                "fable": (0.88, 2 * day + 3 * hour),
            },
        ),
        (
            "team-max",
            "anthropic",
            4,
            {
                "five_hour": (0.12, 4 * hour + 20 * 60),
                "seven_day": (0.27, 5 * day + 9 * hour),
                "fable": (0.06, 6 * day + hour),
            },
        ),
        (
            "lab-pro",
            "anthropic",
            2,
            {"five_hour": (0.08, 3 * hour + 41 * 60), "seven_day": (0.19, 6 * day + 2 * hour)},
        ),  # Fable: cold
        (
            "codex-plus",
            "codex",
            2,
            {"five_hour": (0.18, hour + 52 * 60), "seven_day": (0.33, 2 * day + 18 * hour)},
        ),
    ]
    for name, provider, limit, _ in accounts:
        await service.add_account(provider, name, _secret(provider, name), max_concurrency=limit)
    # A week of readings behind the current account's chart (R-UI-11): the 5-hour window
    # fills and resets through each working day, the weekly one climbs.
    work = service.pool.find("work-max")
    steps = 7 * 24 * 2
    for step in range(steps, 0, -1):
        at = now - step * 1800.0
        busy = 8 <= (at // 3600) % 24 < 20
        five = ((at % (5 * hour)) / (5 * hour)) * (0.85 if busy else 0.15)
        await service._publish_quota(
            work,
            work.revision,
            [
                Observation("five_hour", round(five, 3), at + hour, at, "headers"),
                Observation(
                    "seven_day",
                    round(0.02 + 0.59 * (1 - step / steps), 3),
                    now + 3 * day,
                    at,
                    "headers",
                ),
                Observation(
                    "fable", round(0.05 + 0.3 * (1 - step / steps), 3), now + day, at, "headers"
                ),
            ],
        )
    for name, _, _, gauges in accounts:
        account = service.pool.find(name)
        observations = [
            Observation(window, utilization, now + resets_in, now - 20, "headers")
            for window, (utilization, resets_in) in gauges.items()
        ]
        await service.quota.publish(account, account.revision, observations)

    # Cooling: a real 429 with retry-after on a real lease (R-POOL-7).
    cooling = service.pool.find("personal-pro")
    service.pool._admit(cooling, now, bound=False).release(
        Outcome.FAILURE, retry_after=240, status=429
    )
    await service.pause("team-max", True)
    await service.switch("work-max")  # pinned: both lanes for 5 minutes (R-LANE-2)
    work = service.pool.find("work-max")
    demo.leases = [service.pool._admit(work, now, bound=False)]  # one request in flight

    sam = await service.add_user("sam")
    await service.create_key("laptop")
    await service.create_key("ci")
    await service.create_key("sam-mbp", user="sam")
    keys = {k["name"]: k["id"] for k in await service.list_keys()}
    demo.featured_record = seed_records(service, clock, sam, keys)
    await service.flush_records()
    return demo


MODELS = [  # model, provider, protocol, operation, weight
    ("claude-sonnet-4-5", "anthropic", "anthropic", "messages", 40),
    ("claude-fable-5", "anthropic", "anthropic", "messages", 20),
    ("claude-haiku-4-5", "anthropic", "anthropic", "messages", 12),
    ("claude-sonnet-4-5", "anthropic", "anthropic", "count_tokens", 4),
    ("gpt-5-codex", "codex", "openai-responses", "responses", 16),
    ("gpt-5", "codex", "openai-chat", "chat", 6),
    ("gpt-5-codex", "codex", "openai-responses", "compact", 2),
]


def seed_records(
    service: Any, clock: Any, member_id: int, keys: dict[str, int], count: int = 120
) -> int:
    """`count` plausible records over the last hour and a half, oldest first. Returns the row
    (newest first) of a record worth showing in the details dialog. A seeded RNG: the
    screenshots change only when the UI does."""
    from sublane_desktop.core.records import RequestRecord

    rng = random.Random(20260514)
    accounts = {a.name: a.id for a in service.pool.accounts.values()}
    anthropic = ["work-max", "work-max", "work-max", "lab-pro", "personal-pro"]
    now = clock.now()
    gaps = [rng.uniform(15, 85) for _ in range(count)]
    started = now - 6 - sum(gaps[1:])  # the newest a few seconds ago
    featured = None
    talk = DemoConversations(
        [a.id for a in service.pool.accounts.values() if a.provider == "anthropic" and not a.paused]
    )
    for i in range(count):
        started += gaps[i] if i else 0
        model, provider, protocol, operation, _ = rng.choices(
            MODELS, weights=[m[4] for m in MODELS]
        )[0]
        user_id, key_id = 1, keys["laptop"]
        if i % 5 == 3:
            user_id, key_id = member_id, keys["sam-mbp"]
        elif i % 11 == 0:
            key_id = keys["ci"]
        account = rng.choice(anthropic) if provider == "anthropic" else "codex-plus"
        roll = rng.random()
        status: int | None
        code: str | None
        total: int | None
        cached: int | None
        output: int | None
        first: int | None
        outcome, status, code = "success", 200, None
        if roll < 0.05:
            outcome, status, code = "error", rng.choice([529, 500, 502]), "upstream_error"
        elif roll < 0.11:
            outcome, status = "rejected", None
            code = rng.choice(["account_busy", "account_cooling", "quota_exhausted"])
        elif roll < 0.15:
            outcome, code = "canceled", "client_disconnected"
        elif roll < 0.20:
            outcome = "incomplete"
            code = "max_output_tokens"
        total = rng.randint(2_000, 90_000)
        cached = int(total * rng.choice([0, 0.25, 0.6, 0.82, 0.91, 0.95]))
        output = rng.randint(40, 3_800)
        duration = int(400 + output * rng.uniform(8, 25))
        first = rng.randint(260, 3_900)
        if operation == "count_tokens":
            output, duration, first, cached = 0, rng.randint(90, 300), None, None
        elif operation == "compact":
            first = None
        if outcome == "rejected":
            total = output = cached = first = None
            duration = rng.randint(1, 6)
        elif outcome == "error":
            output, first, duration = None, None, rng.randint(600, 9_000)
            total = cached = None
        elif outcome == "canceled" and output is not None:
            output = output // 4
        record = RequestRecord(
            request_id=f"req_{rng.getrandbits(96):024x}",
            user_id=user_id,
            key_id=key_id,
            group_id=1,
            provider=provider,
            model=model,
            protocol=protocol,
            operation=operation,
            started_at=round(started, 3),
            account_id=accounts.get(account) if code != "quota_exhausted" else None,
            duration_ms=duration,
            first_token_ms=first,
            outcome=outcome,
            error_code=code,
            upstream_status=status,
            input_tokens=total,
            output_tokens=output,
            cached_tokens=cached,
        )
        talk.turn(record)
        service.record(record)
        if outcome == "success" and cached and operation == "messages" and i >= count - 12:
            featured = i  # the newest such one: near the top of the first page
    return count - 1 - featured if featured is not None else 2


class DemoConversations:
    """Claude conversation turns for the demo history, judged by the real cache-miss rule
    (core.cache_miss through core.turn_memory, as the relay does), so the Requests window's
    cache cells, tooltips and filter show what a person would see (R-CF-3).

    A separate seeded RNG, so the records' own random stream (and the rest of the pictures)
    stays as it was. A conversation keeps its account, and now and then moves (a pause, a
    cooldown); the upstream's answer follows: warm on the same account within the TTL, cold
    after a move or a long pause, and sometimes cold because the client changed its prompt.
    """

    COUNT = 2
    MOVE = 0.14
    PREFIX_CHANGE = 0.06

    def __init__(self, account_ids: list[int]) -> None:
        from sublane_desktop.core.turn_memory import TurnMemory

        self.rng = random.Random(515)
        self.memory = TurnMemory()
        self.accounts = [a for a in account_ids if a is not None]
        self.bound: dict[int, int | None] = {}
        self.size: dict[int, int] = {}
        self.model: dict[int, str] = {}  # a conversation keeps its model, as the cache does

    def turn(self, record: Any) -> None:
        from sublane_desktop.core.cache_miss import DEFAULT_TTL, Turn

        if (
            record.provider != "anthropic"
            or record.operation != "messages"
            or record.outcome != "success"
            or record.input_tokens is None
        ):
            return
        rng = self.rng
        conversation = rng.randrange(self.COUNT)
        account = self.bound.get(conversation, record.account_id)
        if conversation in self.bound and rng.random() < self.MOVE and len(self.accounts) > 1:
            account = rng.choice([a for a in self.accounts if a != account])
        self.bound[conversation] = account
        record.account_id = account
        record.model = self.model.setdefault(conversation, record.model)
        size = self.size.get(conversation, rng.randint(8_000, 20_000)) + rng.randint(300, 4_000)
        self.size[conversation] = size
        previous = self.memory.previous(1, str(conversation), record.model)
        warm = (
            previous is not None
            and previous.account_id == account
            and record.started_at - previous.ended_at <= DEFAULT_TTL
            and rng.random() >= self.PREFIX_CHANGE
        )
        record.input_tokens = size
        record.cached_tokens = (
            size - rng.randint(300, 3_000)
            if warm
            else rng.choice([0, 0, rng.randint(2_000, 6_000)])
        )
        verdict = self.memory.settle(
            1,
            str(conversation),
            Turn(
                account_id=account or 0,
                started_at=record.started_at,
                input_tokens=size,
                cached_tokens=record.cached_tokens,
            ),
            ended_at=record.started_at + (record.duration_ms or 0) / 1000,
            warm_tokens=size,  # Claude Code's last breakpoint: the whole prompt is written
            model=record.model,
        )
        record.cache_miss, record.reread_tokens = verdict.cause, verdict.reread_tokens
        if verdict.is_miss and previous is not None:
            record.previous_account_id = previous.account_id
            record.idle_seconds = round(record.started_at - previous.ended_at, 3)


# --- rendering --------------------------------------------------------------------------------


async def settle(bridge: Any = None) -> None:
    """Let layouts, paints and the bridge's calls in flight land (a tool, not a test)."""
    wait_idle = getattr(bridge, "wait_idle", None)
    if wait_idle is not None:
        await asyncio.wait_for(wait_idle(), 5)
    await asyncio.sleep(SETTLE_S)


def _build(cls: Any, bridge: Any, **preferred: Any) -> Any:
    """cls(bridge, **the preferred options it accepts)."""
    params: Mapping[str, Any]
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        params = {}
    options = {k: v for k, v in preferred.items() if k in params}
    return cls(bridge, **options)


def _import(module: str) -> Any | None:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            return None
        raise


async def render_all(outdir: Path, suffix: str = "") -> Shots:
    from sublane_desktop.gui.bridge import Bridge

    outdir.mkdir(parents=True, exist_ok=True)
    shots = Shots(outdir, suffix=suffix)
    with tempfile.TemporaryDirectory(prefix="sublane-shots-") as tmp:
        demo = await build_demo_pool(Path(tmp))
        bridge = Bridge(demo.service)
        widgets: list[Any] = []
        try:
            for name, render in RENDERERS:
                try:
                    await render(bridge, demo, shots, widgets)
                except Exception as exc:  # one broken window must not cost the others
                    logging.getLogger(__name__).debug("render %s", name, exc_info=True)
                    shots.skip(name, f"failed: {type(exc).__name__}: {exc}")
        finally:
            for widget in widgets:
                widget.hide()
                widget.deleteLater()
            await settle()
            bridge.close()
            for lease in demo.leases:
                lease.release()
            await demo.service.stop(drain_timeout=1)
            bridge.deleteLater()
            await asyncio.sleep(0)
    return shots


async def _accounts(bridge: Any, demo: DemoPool, shots: Shots, widgets: list[Any]) -> None:
    module = _import("sublane_desktop.gui.accounts_window")
    if module is None or not hasattr(module, "AccountsWindow"):
        shots.skip("accounts window", "not built yet")
        return
    window = _build(module.AccountsWindow, bridge, requests_available=True)
    widgets.append(window)
    window.show()  # at its default size: what a person sees first (R-UI-10)
    await settle(bridge)
    shots.save(window, "accounts")
    # The usage history of the current account, opened (R-UI-11).
    card = window.cards.get(demo.service.pool.find("work-max").id)
    if card is not None:
        card.history_button.click()
        await card.history_task
        await settle()
        shots.save(card, "accounts-history")
        card.history_button.click()


async def _requests(bridge: Any, demo: DemoPool, shots: Shots, widgets: list[Any]) -> None:
    module = _import("sublane_desktop.gui.requests_window")
    if module is None:
        shots.skip("requests window", "not built yet")
        return
    window = module.RequestsWindow(bridge)
    widgets.append(window)
    window.show()
    for task in (window.reload_filters(), window.reload()):
        if task is not None:
            await task
    await settle(bridge)
    if demo.featured_record is not None and demo.featured_record < window.model.rowCount():
        window.table.selectRow(demo.featured_record)
    window.table.clearFocus()
    await settle()
    shots.save(window, "requests")

    dialog = window.open_details(demo.featured_record or 0)
    if dialog is None:
        shots.skip("request details", "no record to show")
        return
    dialog.adjustSize()
    await settle()
    shots.save(dialog, "request-details")

    dialog.hide()
    # "Why was that a cache miss?" (R-CF-3): the history filtered by one cause, and one such
    # turn's details in words.
    misses = getattr(window, "miss_filter", None)
    if misses is not None and misses.findData("account_switch") >= 0:
        misses.setCurrentIndex(misses.findData("account_switch"))
        task = window.reload()
        if task is not None:
            await task
        await settle(bridge)
        if window.model.rowCount():
            # The newest switch that happened while the cache was still warm: the costly kind.
            quick = [
                row
                for row, r in enumerate(window.model.records())
                if (r.get("idle_seconds") or 0) < 300
            ] or [0]
            window.table.selectRow(quick[0])
            window.table.clearFocus()
            await settle()
            shots.save(window, "requests-account-switch")
            switched = window.open_details(quick[0])
            if switched is not None:
                switched.adjustSize()
                await settle()
                shots.save(switched, "request-details-account-switch")
                switched.hide()
        window.clear_filters()
        await settle(bridge)

    window.set_mine(True)  # "My requests": the personal view, accounts blanked
    for task in (window.reload_filters(), window.reload()):
        if task is not None:
            await task
    await settle()
    shots.save(window, "requests-mine")


async def _tray_menu(bridge: Any, demo: DemoPool, shots: Shots, widgets: list[Any]) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QPainter, QPixmap

    module = _import("sublane_desktop.gui.tray")
    if module is None or not hasattr(module, "Tray"):
        shots.skip("tray menu", "not built yet")
        return
    tray = _build(module.Tray, bridge, requests_available=True)
    widgets.append(_Releaser(tray))
    menu = tray.menu
    widgets.append(menu)
    menu.aboutToShow.emit()  # the tray rebuilds its menu when it opens
    menu.adjustSize()
    menu.popup(menu.pos())
    await settle()
    # The menu as a person sees it: the current account's submenu open beside it.
    row = getattr(tray, "rows", {}).get("work-max")
    opened = row.action if row is not None else None
    if opened is None:
        shots.audit(menu, "tray-menu")
        shots.save(menu, "tray-menu")
        return
    menu.setActiveAction(opened)
    sub = opened.menu()
    sub.adjustSize()
    sub.popup(menu.pos())
    widgets.append(sub)
    await settle()
    shots.audit(menu, "tray-menu")
    shots.audit(sub, "tray-menu", "submenu: ")
    for name, other in getattr(tray, "rows", {}).items():  # every account's levers, audited
        lever_menu = other.action.menu() if other.action is not None else None
        if lever_menu is None or lever_menu is sub:
            continue
        lever_menu.adjustSize()
        lever_menu.popup(menu.pos())
        await settle()
        shots.audit(lever_menu, "tray-menu", f"{name} submenu: ")
        lever_menu.hide()
    menu.setActiveAction(opened)
    main, side = menu.grab(), sub.grab()
    top = max(0, menu.actionGeometry(opened).top() - 4)
    canvas = QPixmap(main.width() + side.width() - 4, max(main.height(), top + side.height()))
    canvas.fill(Qt.GlobalColor.transparent)
    painter = QPainter(canvas)
    painter.drawPixmap(0, 0, main)
    painter.drawPixmap(main.width() - 4, top, side)
    painter.end()
    shots.save(canvas, "tray-menu")
    sub.hide()
    menu.hide()
    tray.hide()


async def _status_window(bridge: Any, demo: DemoPool, shots: Shots, widgets: list[Any]) -> None:
    module = _import("sublane_desktop.gui.status_window")
    if module is None or not hasattr(module, "StatusWindow"):
        shots.skip("status window", "not built yet (the Accounts window replaced it)")
        return
    window = _build(module.StatusWindow, bridge, quit_on_close=False)
    widgets.append(window)
    window.show()
    await settle(bridge)
    shots.save(window, "status-window")


def _port_in_use(cls: Any) -> Any:
    from sublane_desktop.startup import StartupError

    taken = StartupError(StartupError.PORT_IN_USE, "port 8765 is in use", port=8765)
    return cls(taken, "127.0.0.1")


# Dialogs that show a situation rather than the pool: built from a sample of that situation.
DIALOG_SAMPLES: dict[str, Any] = {"PortInUseDialog": _port_in_use}


async def _dialogs(bridge: Any, demo: DemoPool, shots: Shots, widgets: list[Any]) -> None:
    from PySide6.QtWidgets import QDialog

    package = _import("sublane_desktop.gui.dialogs")
    if package is None:
        shots.skip("dialogs", "not built yet")
        return
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for cls_name, cls in sorted(vars(module).items()):
            if not (
                inspect.isclass(cls)
                and issubclass(cls, QDialog)
                and cls.__module__ == module.__name__
            ):
                continue
            name = "dialog-" + _kebab(cls_name.removesuffix("Dialog"))
            try:
                sample = DIALOG_SAMPLES.get(cls_name)
                dialog = sample(cls) if sample is not None else _build(cls, bridge)
            except Exception as exc:
                shots.skip(name, f"could not build it ({type(exc).__name__}: {exc})")
                continue
            widgets.append(dialog)
            dialog.show()
            await settle(bridge)
            shots.save(dialog, name)
            dialog.hide()


async def _welcome(bridge: Any, demo: DemoPool, shots: Shots, widgets: list[Any]) -> None:
    module = _import("sublane_desktop.gui.welcome")
    if module is None:
        shots.skip("welcome window", "not built yet")
        return
    window = module.WelcomeWindow(bridge)
    widgets.append(window)
    window.show()
    await settle(bridge)
    shots.save(window, "welcome")


async def _questions(bridge: Any, demo: DemoPool, shots: Shots, widgets: list[Any]) -> None:
    """The questions before a lever that is hard to undo (R-UI-12), opened the way a person
    opens them: Disable and Remove from the Accounts window, Revoke from Client keys."""
    accounts = _import("sublane_desktop.gui.accounts_window")
    keys = _import("sublane_desktop.gui.dialogs.client_keys")
    if accounts is None or keys is None or not hasattr(accounts.AccountsWindow, "confirm_remove"):
        shots.skip("questions", "not built yet")
        return
    window = _build(accounts.AccountsWindow, bridge, requests_available=True)
    widgets.append(window)
    window.show()
    await settle(bridge)
    cooling = demo.service.pool.find("personal-pro")
    for name, ask in (
        ("question-disable", window.confirm_disable),
        ("question-remove", window.confirm_remove),
    ):
        ask(cooling.id, cooling.name)
        await settle()
        shots.save(window.confirm_box, name)
        window.confirm_box.reject()
        await settle()
    window.hide()

    dialog = _build(keys.ClientKeysDialog, bridge)
    widgets.append(dialog)
    dialog.show()
    await settle(bridge)
    dialog.table.selectRow(0)
    dialog.confirm_revoke()
    await settle()
    if dialog.confirm_box is None:
        shots.skip("question-revoke", "no key to revoke")
        return
    shots.save(dialog.confirm_box, "question-revoke")
    dialog.confirm_box.reject()
    dialog.hide()


class _StillQuitting:
    """The previous SubLane, still draining (the waiting window asks only this)."""

    def still_running(self) -> bool:
        return True


async def _waiting(bridge: Any, demo: DemoPool, shots: Shots, widgets: list[Any]) -> None:
    """SubLane started again while the one just quit still drains (R-UI-15): the window that
    says so, and what it says if the old one never finishes."""
    module = _import("sublane_desktop.gui.single_instance")
    if module is None or not hasattr(module, "PreviousInstanceWait"):
        shots.skip("waiting window", "not built yet")
        return
    from sublane_desktop.gui.main import PREVIOUS_QUIT_TIMEOUT_S

    window = module.PreviousInstanceWait(_StillQuitting(), PREVIOUS_QUIT_TIMEOUT_S)
    widgets.append(window)
    window.show()  # not wait(): that runs its own event loop until the old one goes
    await settle()
    shots.save(window, "waiting-for-previous")
    window._deadline = 0.0  # its time is up: the next look says so
    window._look()
    await settle()
    shots.save(window, "waiting-for-previous-timed-out")
    window.hide()


def dark_palette() -> Any:
    """A dark desktop palette, for the dark variant of the pictures (R-UI-10)."""
    from PySide6.QtGui import QColor, QPalette

    palette = QPalette()
    roles = QPalette.ColorRole
    for role, colour in [
        (roles.Window, QColor(40, 42, 46)),
        (roles.WindowText, QColor(225, 227, 230)),
        (roles.Base, QColor(28, 30, 33)),
        (roles.AlternateBase, QColor(45, 47, 52)),
        (roles.Text, QColor(225, 227, 230)),
        (roles.Button, QColor(52, 55, 60)),
        (roles.ButtonText, QColor(225, 227, 230)),
        (roles.Highlight, QColor(61, 133, 224)),
        (roles.HighlightedText, QColor(255, 255, 255)),
        (roles.ToolTipBase, QColor(52, 55, 60)),
        (roles.ToolTipText, QColor(225, 227, 230)),
        (roles.Mid, QColor(90, 93, 99)),
        (roles.PlaceholderText, QColor(140, 143, 148)),
        (roles.Light, QColor(70, 73, 79)),
        (roles.Dark, QColor(20, 21, 23)),
        (roles.Shadow, QColor(0, 0, 0)),
    ]:
        palette.setColor(role, colour)
    dim = QColor(130, 133, 138)
    for role in (roles.WindowText, roles.Text, roles.ButtonText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, dim)
    return palette


class _Releaser:
    """Lets objects that are not widgets ride along in the clean-up list."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def hide(self) -> None:
        pass

    def deleteLater(self) -> None:
        self.obj.deleteLater()


DESK_SCREEN = {"screens": [{"name": "1080p", "x": 0, "y": 0, "width": 1920, "height": 1080}]}


def _desk_screen() -> str:
    path = Path(tempfile.gettempdir()) / "sublane-screenshots-screen.json"
    path.write_text(json.dumps(DESK_SCREEN))
    return str(path)


def _kebab(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


Renderer = Callable[[Any, DemoPool, Shots, list[Any]], Awaitable[None]]
RENDERERS: list[tuple[str, Renderer]] = [
    ("accounts window", _accounts),
    ("requests window", _requests),
    ("tray menu", _tray_menu),
    ("status window", _status_window),
    ("welcome window", _welcome),
    ("dialogs", _dialogs),
    ("questions", _questions),
    ("waiting window", _waiting),
]


# --- command ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.screenshots",
        description="Render every SubLane window with a demo pool into PNG files.",
    )
    parser.add_argument("outdir", type=Path)
    parser.add_argument(
        "--dark", action="store_true", help="a dark desktop palette; the files end in -dark"
    )
    args = parser.parse_args(argv)

    os.environ["QT_API"] = "pyside6"  # qasync reads it at import
    from PySide6.QtWidgets import QApplication

    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        app = existing
    else:
        # render, never show; "offscreen:configfile=…" (a screen of a given size) is kept
        if not os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen:"):
            # Qt's own offscreen screen is 800×800: windows never outgrow their screen
            # (sizing.scroll_when_small), so the pictures would show the Requests window
            # squeezed. A common 1920×1080 desk instead, as test_layout uses.
            os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={_desk_screen()}"
        app = QApplication([sys.argv[0]])
        app.setApplicationName("SubLane")
    import qasync

    quiet = logging.getLogger("sublane_desktop")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # the refused demo upstream is expected, not news
    # Garbage is collected here, on the GUI thread, not whenever a database thread happens to
    # allocate: a collection there would destroy Qt objects on the wrong thread.
    collecting = gc.isenabled()
    gc.disable()
    loop = qasync.QEventLoop(app)
    from PySide6.QtGui import QPalette

    palette = QPalette(app.palette())  # given back at the end: a test's app lives on
    try:
        if args.dark:
            app.setStyle("Fusion")  # the platform style may ignore a custom palette
            app.setPalette(dark_palette())
        from sublane_desktop.gui.main import use_readable_palette

        use_readable_palette(app)  # as the app does at start
        shots = loop.run_until_complete(render_all(args.outdir, "-dark" if args.dark else ""))
    finally:
        app.setPalette(palette)
        quiet.setLevel(level)
        loop.close()
        del loop
        if collecting:
            gc.enable()
        gc.collect()
    summary = {
        "written": [p.name for p in shots.written],
        "skipped": shots.skipped,
        "problems": shots.problems,
        "minimums": shots.minimums,
        "contents": shots.contents,
    }
    print(json.dumps(summary))
    return 0 if shots.written else 1


if __name__ == "__main__":
    raise SystemExit(main())
