"""Start at login: the XDG autostart entry is written and removed under XDG_CONFIG_HOME."""

import configparser
import plistlib
import sys

from sublane_desktop.gui import autostart


def read_entry(path):
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str
    entry.read(path)
    return entry["Desktop Entry"]


def test_writes_and_removes_the_xdg_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    path = tmp_path / "cfg" / "autostart" / "sublane.desktop"
    assert not autostart.is_enabled(platform="linux")

    where = autostart.apply(True, ["/opt/sublane/sublane"], platform="linux")
    assert where == str(path) and path.is_file()
    assert autostart.is_enabled(platform="linux")
    entry = read_entry(path)
    assert entry["Type"] == "Application" and entry["Name"] == "SubLane"
    assert entry["Exec"] == "/opt/sublane/sublane"
    assert entry["X-GNOME-Autostart-enabled"] == "true"
    assert not list(path.parent.glob("*.tmp"))

    autostart.apply(True, ["/opt/sublane/sublane"], platform="linux")  # idempotent
    autostart.apply(False, platform="linux")
    assert not path.exists() and not autostart.is_enabled(platform="linux")
    autostart.apply(False, platform="linux")  # removing twice is fine


def test_relative_or_missing_xdg_config_home_means_dot_config(tmp_path):
    home = tmp_path / "home"
    expected = home / ".config" / "autostart" / "sublane.desktop"
    assert autostart.xdg_entry_path({}, home) == expected
    assert autostart.xdg_entry_path({"XDG_CONFIG_HOME": "relative/cfg"}, home) == expected
    assert autostart.xdg_entry_path({"XDG_CONFIG_HOME": str(tmp_path / "x")}, home) == (
        tmp_path / "x" / "autostart" / "sublane.desktop"
    )


def test_exec_quoting_follows_the_desktop_entry_spec():
    assert autostart.exec_line(["/usr/bin/sublane"]) == "/usr/bin/sublane"
    line = autostart.exec_line(["/home/me/My Apps/sublane", "--data-dir", "/d/$x"])
    # Quoted args escape " ` $ \ with a backslash; the file format then doubles backslashes.
    assert line == '"/home/me/My Apps/sublane" --data-dir "/d/\\\\$x"'


def test_launch_command_names_a_non_default_data_dir(tmp_path, monkeypatch):
    command = autostart.launch_command(tmp_path / "data")
    assert command[-2:] == ["--data-dir", str((tmp_path / "data").resolve())]
    assert "--data-dir" not in autostart.launch_command(autostart.default_data_dir())
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert autostart.launch_command(None) == [sys.executable]


def test_macos_launch_agent_is_a_plist(tmp_path):
    where = autostart.apply(
        True, ["/Applications/SubLane.app/Contents/MacOS/SubLane"], platform="darwin", home=tmp_path
    )
    data = plistlib.loads(
        (tmp_path / "Library/LaunchAgents/app.sublane.desktop.plist").read_bytes()
    )
    assert where.endswith("app.sublane.desktop.plist")
    assert data["ProgramArguments"] == ["/Applications/SubLane.app/Contents/MacOS/SubLane"]
    assert data["RunAtLoad"] is True and data["Label"] == "app.sublane.desktop"
    autostart.apply(False, platform="darwin", home=tmp_path)
    assert not autostart.is_enabled(platform="darwin", home=tmp_path)
