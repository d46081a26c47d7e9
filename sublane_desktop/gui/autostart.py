"""Start at login (setting `app.start_at_login`): one entry per platform, written or removed.

- Linux / BSD: an XDG autostart entry, `$XDG_CONFIG_HOME/autostart/sublane.desktop`
  (`~/.config` when the variable is unset or not absolute). Tested.
- macOS: a LaunchAgent, `~/Library/LaunchAgents/app.sublane.desktop.plist` (RunAtLoad; launchd
  reads it at the next login). Written but untested here.
- Windows: the `SubLane` value under `HKCU\\Software\\Microsoft\\Windows\\CurrentVersion\\Run`.
  Written but untested here.

No Qt: the desktop wires the setting to `apply()` and tests call it directly.
"""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ENTRY_NAME = "sublane.desktop"
LAUNCH_AGENT_LABEL = "app.sublane.desktop"
RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"
RUN_VALUE = "SubLane"
# Characters that force quoting of an Exec argument (Desktop Entry spec, "The Exec key").
_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")


def default_data_dir() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("sublane-desktop", appauthor=False))


def launch_command(data_dir: Path | None = None) -> list[str]:
    """How to start this same app at login: the frozen binary, the console script, or -m."""
    if getattr(sys, "frozen", False):  # PyInstaller: the executable is the app
        command = [sys.executable]
    else:
        script = shutil.which("sublane")
        command = [script] if script else [sys.executable, "-m", "sublane_desktop"]
    if (
        data_dir is not None
        and Path(data_dir).expanduser().resolve() != default_data_dir().resolve()
    ):
        command += ["--data-dir", str(Path(data_dir).expanduser().resolve())]
    return command


# --- XDG ---------------------------------------------------------------------------------------


def xdg_entry_path(env: Mapping[str, str] | None = None, home: Path | None = None) -> Path:
    env = os.environ if env is None else env
    config = env.get("XDG_CONFIG_HOME", "")
    # The spec says a relative value is invalid and must be ignored.
    base = Path(config) if config and os.path.isabs(config) else (home or Path.home()) / ".config"
    return base / "autostart" / ENTRY_NAME


def _exec_arg(arg: str) -> str:
    if arg and not (set(arg) & _RESERVED):
        return arg
    escaped = "".join("\\" + c if c in '"`$\\' else c for c in arg)
    return f'"{escaped}"'


def exec_line(command: list[str]) -> str:
    # The value is itself a desktop-file string, whose own escape for a backslash is "\\".
    return " ".join(_exec_arg(a) for a in command).replace("\\", "\\\\")


def xdg_entry(command: list[str]) -> str:
    return "\n".join(
        [
            "[Desktop Entry]",
            "Type=Application",
            "Version=1.5",
            "Name=SubLane",
            "Comment=Pool your LLM subscription accounts behind one localhost endpoint",
            f"Exec={exec_line(command)}",
            "Icon=sublane",
            "Terminal=false",
            "X-GNOME-Autostart-enabled=true",
            "",
        ]
    )


# --- macOS ---------------------------------------------------------------------------------------


def launch_agent_path(home: Path | None = None) -> Path:
    return (home or Path.home()) / "Library" / "LaunchAgents" / f"{LAUNCH_AGENT_LABEL}.plist"


def launch_agent(command: list[str]) -> bytes:
    return plistlib.dumps(
        {
            "Label": LAUNCH_AGENT_LABEL,
            "ProgramArguments": command,
            "RunAtLoad": True,
            "ProcessType": "Interactive",
        }
    )


# --- the switch ---------------------------------------------------------------------------------


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)  # never a half-written entry at login


def apply(
    enabled: bool,
    command: list[str] | None = None,
    *,
    platform: str | None = None,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> str:
    """Make start-at-login match `enabled`; returns where the entry lives (for messages)."""
    platform = platform or sys.platform
    command = command or launch_command()
    if platform == "win32":
        return _apply_windows(enabled, command)
    path = launch_agent_path(home) if platform == "darwin" else xdg_entry_path(env, home)
    if enabled:
        data = launch_agent(command) if platform == "darwin" else xdg_entry(command).encode()
        _write(path, data)
    else:
        path.unlink(missing_ok=True)
    return str(path)


def is_enabled(
    *, platform: str | None = None, env: Mapping[str, str] | None = None, home: Path | None = None
) -> bool:
    platform = platform or sys.platform
    if platform == "win32":
        return _windows_enabled()
    path = launch_agent_path(home) if platform == "darwin" else xdg_entry_path(env, home)
    return path.is_file()


def _windows_enabled() -> bool:
    if sys.platform != "win32":  # also tells the type checker winreg is Windows-only
        raise OSError("the Windows registry exists only on Windows")
    import winreg

    try:
        with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:
            winreg.QueryValueEx(key, RUN_VALUE)
        return True
    except OSError:
        return False


def _apply_windows(enabled: bool, command: list[str]) -> str:
    if sys.platform != "win32":  # as above
        raise OSError("the Windows registry exists only on Windows")
    import winreg

    with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY, 0, winreg.KEY_SET_VALUE) as key:
        if enabled:
            winreg.SetValueEx(key, RUN_VALUE, 0, winreg.REG_SZ, subprocess.list2cmdline(command))
        else:
            try:
                winreg.DeleteValue(key, RUN_VALUE)
            except FileNotFoundError:
                pass
    return f"HKCU\\{RUN_KEY}\\{RUN_VALUE}"
