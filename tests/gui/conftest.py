"""Qt tests run offscreen against a small fake of the service interface."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

# Must precede any Qt import: the platform plugin is chosen when QApplication is created,
# and qasync reads QT_API when it is imported.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["QT_API"] = "pyside6"

# The package is not installed in the venv and pyproject sets no pytest `pythonpath`; fall back
# to the checkout so `pytest tests/gui` works from the repo root either way.
if importlib.util.find_spec("sublane_desktop") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pytest  # noqa: E402
from gui_fakes import FakeService, account  # noqa: E402


@pytest.fixture
def service() -> FakeService:
    return FakeService(
        [account("work", "ok", id=1, current=True), account("home", "cooling", id=2)]
    )
