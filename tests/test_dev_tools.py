"""What only developers run stays out of what users install (issue 25, build item 5)."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("module", ["screenshots", "layout_audit"])
def test_developer_tools_live_outside_the_package(module):
    assert importlib.util.find_spec(f"sublane_desktop.gui.{module}") is None
    assert importlib.util.find_spec(f"tools.{module}") is not None


def test_the_package_never_imports_the_tools_and_setuptools_ships_only_the_package():
    for source in (ROOT / "sublane_desktop").rglob("*.py"):
        text = source.read_text(encoding="utf-8")
        assert "from tools" not in text and "import tools" not in text, source
    found = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert found["packages"]["find"]["include"] == ["sublane_desktop*"]
