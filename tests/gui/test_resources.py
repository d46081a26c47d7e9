import configparser

import pytest
from PySide6.QtSvg import QSvgRenderer

from sublane_desktop.gui.icons import app_icon, health_icon
from sublane_desktop.gui.pool_status import PoolHealth
from sublane_desktop.gui.resources import resource_path


@pytest.mark.parametrize(
    "name", ["sublane.svg", "sublane-ok.svg", "sublane-warn.svg", "sublane-down.svg"]
)
def test_icons_are_valid_svg(qapp, name):
    assert QSvgRenderer(str(resource_path(name))).isValid()


def test_icons_load(qapp):
    assert not app_icon().isNull()
    for health in PoolHealth:
        assert not health_icon(health).isNull()


def test_desktop_entry():
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str
    entry.read(resource_path("sublane.desktop"))
    section = entry["Desktop Entry"]
    assert section["Type"] == "Application"
    assert section["Name"] == "SubLane"
    assert section["Exec"] == "sublane"
    assert section["Icon"] == "sublane"
    assert section["Categories"] == "Network;Utility;"


def test_missing_resource_is_an_error():
    with pytest.raises(FileNotFoundError):
        resource_path("no-such-file.svg")
