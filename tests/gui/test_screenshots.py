"""`python -m tools.screenshots OUTDIR`, run in-process into a temp dir."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from tools import screenshots


def test_renders_every_built_window_into_png_files(qapp, tmp_path, capsys) -> None:
    assert screenshots.main([str(tmp_path / "shots")]) == 0
    out = capsys.readouterr().out
    summary = json.loads(out.strip().splitlines()[-1])
    written = summary["written"]
    # The Requests window and its details dialog are always there; so is the tray menu.
    for name in (
        "requests.png",
        "request-details.png",
        "requests-mine.png",
        "tray-menu.png",
        "requests-account-switch.png",
        "request-details-account-switch.png",
    ):
        assert name in written, out
    # Only the retired status window may be missing; a window or dialog that failed to build
    # is a failure, not a skip.
    assert set(summary["skipped"]) <= {"status window"}, out
    committed = {
        p.name
        for p in (Path(__file__).parents[2] / "resources" / "screenshots").glob("*.png")
        if not p.name.endswith("-dark.png")
    }  # test_layout: --dark
    assert committed <= set(written), out  # every committed picture can be re-taken
    for name in written:
        path = tmp_path / "shots" / name
        assert path.stat().st_size > 1000, name
        image = QImage(str(path))
        assert not image.isNull() and image.width() >= 150 and image.height() >= 60, name
    # The demo pool's history is on the picture's page: a full first page of records.
    # (As wide as its default size allows on this screen: the window never outgrows it.)
    from PySide6.QtGui import QGuiApplication

    screen = QGuiApplication.primaryScreen()
    room = screen.availableGeometry().width() - 8 if screen is not None else 900
    assert QImage(str(tmp_path / "shots" / "requests.png")).width() >= min(900, room)

    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()  # the command's loop is gone, not left installed


def test_demo_records_are_deterministic_and_varied() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.records = []
            self.pool = type("P", (), {"accounts": {}})()

        def record(self, record) -> None:
            self.records.append(record)

    class Clock:
        def now(self) -> float:
            return screenshots.DEMO_NOW

    first, second = Recorder(), Recorder()
    row = screenshots.seed_records(first, Clock(), 2, {"laptop": 1, "ci": 2, "sam-mbp": 3})
    screenshots.seed_records(second, Clock(), 2, {"laptop": 1, "ci": 2, "sam-mbp": 3})
    assert [r.request_id for r in first.records] == [r.request_id for r in second.records]
    assert len(first.records) == 120 and 0 <= row < 50
    assert {r.outcome for r in first.records} == {
        "success",
        "error",
        "rejected",
        "canceled",
        "incomplete",
    }
    assert len({r.model for r in first.records}) >= 4
    times = [r.started_at for r in first.records]
    assert times == sorted(times) and times[-1] < screenshots.DEMO_NOW
