"""`sublane run`: a server in the background for the life of one command.

The server is the ordinary `python -m sublane_desktop serve`, started in its own session (POSIX)
or process group (Windows): the terminal's Ctrl-C belongs to the command being run — Claude Code
uses it to interrupt a turn — and must not take the proxy down under it. The server is stopped
the way a person would stop `serve`: SIGINT, so in-flight requests drain (R-UI-5).
"""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from sublane_desktop import file_modes
from sublane_desktop.startup import data_dir_unusable

START_TIMEOUT = 30.0  # until `serve` prints its listening line
STOP_TIMEOUT = 15.0  # from SIGINT to exit; `serve` drains for at most 10 s
LISTENING = "listening on "
LOG_NAME = "run-server.log"
SERVE_ERROR = "sublane: error: "  # how `serve` starts the one line that says why it stopped


class LaunchError(Exception):
    """The server could not be started; the message says why and where its log is."""


class BackgroundServer:
    def __init__(self, proc: subprocess.Popen[str], url: str, log_path: Path) -> None:
        self.proc = proc
        self.url = url
        self.log_path = log_path

    @classmethod
    def start(
        cls, data_dir: Path, host: str, port: int | None, timeout: float = START_TIMEOUT
    ) -> BackgroundServer:
        argv = [
            sys.executable,
            "-m",
            "sublane_desktop",
            "serve",
            "--data-dir",
            str(data_dir),
            "--host",
            host,
        ]
        if port is not None:
            argv += ["--port", str(port)]
        log_path = data_dir / LOG_NAME
        try:
            log_file = file_modes.open_private_append(log_path)
        except OSError as exc:
            raise LaunchError(str(data_dir_unusable(data_dir, exc))) from None
        with log_file:  # the child keeps its own descriptor
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log_file,
                text=True,
                **_own_group(),
            )
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:  # keeps the pipe drained for the server's whole life
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, name="sublane-run-stdout", daemon=True).start()
        try:
            first = lines.get(timeout=timeout)
        except queue.Empty:
            first = None
            problem = f"the server did not start within {timeout:.0f} s"
        except BaseException:  # Ctrl-C while waiting: leave no server behind
            cls(proc, "", log_path).stop()
            raise
        else:
            problem = "the server exited before listening"
        if first is None or not first.startswith(LISTENING):
            server = cls(proc, "", log_path)
            server.stop()
            detail = _last_line(log_path)
            if detail.startswith(SERVE_ERROR):  # serve said why in one line: that is the cause
                raise LaunchError(f"could not start the server: {detail[len(SERVE_ERROR) :]}")
            raise LaunchError(f"{problem}{': ' + detail if detail else ''} (log: {log_path})")
        return cls(proc, first[len(LISTENING) :].strip(), log_path)

    def stop(self, timeout: float = STOP_TIMEOUT) -> int | None:
        """Ctrl-C the server and wait for it (bounded); kill it if it will not go."""
        if self.proc.poll() is None:
            try:
                if sys.platform == "win32":
                    self.proc.send_signal(signal.CTRL_BREAK_EVENT)
                else:
                    self.proc.send_signal(signal.SIGINT)
                self.proc.wait(timeout=timeout)
            except (subprocess.TimeoutExpired, OSError):
                self.proc.kill()
                self.proc.wait(timeout=timeout)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.returncode


def run_command(command: Sequence[str], env: dict[str, str]) -> int:
    """Run CMD in the foreground with `env`; its exit status, shell-style (128+N for signal N)."""
    try:
        proc = subprocess.Popen(list(command), env=env)
    except FileNotFoundError:
        raise LaunchError(f"command not found: {command[0]}") from None
    except PermissionError:
        raise LaunchError(f"command is not executable: {command[0]}") from None
    with _signals_go_to(proc):
        returncode = proc.wait()
    return 128 - returncode if returncode < 0 else returncode


@contextmanager
def _signals_go_to(proc: subprocess.Popen[bytes]) -> Iterator[None]:
    """While CMD runs, Ctrl-C is its business (the terminal sends it to CMD too), and a
    SIGTERM/SIGHUP sent to us is passed on, so we outlive it and can stop the server."""
    if sys.platform == "win32":
        yield
        return
    previous: dict[int, Callable[[int, FrameType | None], Any] | int | None] = {}

    def forward(signum: int, _frame: object) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
    for stop in (signal.SIGTERM, signal.SIGHUP):
        previous[stop] = signal.signal(stop, forward)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _own_group() -> dict[str, Any]:
    if sys.platform == "win32":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1].strip()[:200] if lines else ""
