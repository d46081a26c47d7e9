"""Fixtures for driving the real `sublane` command in subprocesses (SPEC §2).

Every test gets its own data dir, HOME and keyring file. The keyring is a real backend class
(keyrings.alt's PlaintextKeyring) chosen with the keyring library's own environment variable
and pointed at a temp file with KEYRING_PROPERTY_FILE_PATH (R-ST-2).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from keyrings.alt.file import PlaintextKeyring

from sublane_desktop.accounts.secrets import SERVICE

RUN_TIMEOUT = 30.0  # per CLI invocation; a healthy one takes about half a second
START_TIMEOUT = 20.0  # until `serve` prints its listening line
STOP_TIMEOUT = 15.0  # from SIGINT to exit

# Environment that would change what the CLI does, and so must not leak in from the host.
_SCRUB = (
    "SUBLANE_DATA_DIR",
    "SUBLANE_KEYRING",
    "SUBLANE_KEYRING_PASSWORD",
    "SUBLANE_ANTHROPIC_BASE_URL",
    "SUBLANE_CODEX_BASE_URL",
    "SUBLANE_ANTIGRAVITY_BASE_URL",
    "SUBLANE_OAUTH_BASE_URL",
    "SUBLANE_GOOGLE_OAUTH_BASE_URL",
    "SUBLANE_CLAUDE_AUTH_BASE_URL",  # browser sign-in (R-LOGIN-1)
    "SUBLANE_CODEX_AUTH_BASE_URL",
    "SUBLANE_GOOGLE_AUTH_BASE_URL",
    "SUBLANE_LOGIN_PORT",
    "SUBLANE_LOGIN_TIMEOUT",
    "BROWSER",  # a sign-in must never open the host's real browser
    "PYTHON_KEYRING_BACKEND",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
)

# urllib for the tests' own management calls: straight to localhost, never via a proxy.
LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Server:
    """A running `sublane serve` subprocess and the URL it printed."""

    def __init__(
        self,
        proc: subprocess.Popen,
        url: str,
        port: int,
        lines: queue.Queue,
        stderr: list[str],
        stderr_reader: threading.Thread,
        stderr_grew: threading.Condition,
    ) -> None:
        self.proc = proc
        self.url = url
        self.port = port
        self._lines = lines  # further stdout lines (there should be none)
        self._stderr = stderr  # filled by a reader thread, so the pipe never fills up
        self._stderr_reader = stderr_reader
        self._stderr_grew = stderr_grew  # notified on every line the reader appends

    def wait_stderr(self, text: str, timeout: float = STOP_TIMEOUT) -> str:
        """Block until `text` shows up on stderr (or fail); returns stderr so far."""
        with self._stderr_grew:
            if not self._stderr_grew.wait_for(
                lambda: text in "".join(self._stderr) or self.proc.poll() is not None, timeout
            ):
                pytest.fail(f"{text!r} not on stderr within {timeout}s: {''.join(self._stderr)}")
        seen = self.stderr()
        assert text in seen, seen
        return seen

    def stderr(self) -> str:
        """Everything written to stderr so far; all of it once the process has exited."""
        if self.proc.poll() is not None:
            self._stderr_reader.join(timeout=STOP_TIMEOUT)
        return "".join(self._stderr)

    def remaining_stdout(self, timeout: float = STOP_TIMEOUT) -> list[str]:
        """stdout lines after the listening line, up to EOF (call once the process exits)."""
        out: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if line is None:
                return out
            out.append(line)

    def get(self, path: str, token: str) -> Any:
        req = urllib.request.Request(self.url + path)
        req.add_header("Authorization", f"Bearer {token}")
        with LOCAL.open(req, timeout=10) as resp:
            return json.loads(resp.read())

    def interrupt(self, timeout: float = STOP_TIMEOUT) -> int:
        """Ctrl-C, then wait (bounded) for the exit status."""
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=timeout)


class Sublane:
    """Runs `python -m sublane_desktop …` against one temp data dir and keyring file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data_dir = root / "data"
        self.home = root / "home"
        self.keyring_file = root / "keyring.cfg"
        self.home.mkdir()
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in _SCRUB and not k.startswith("KEYRING_PROPERTY_")
        }
        env.update(
            {
                "SUBLANE_DATA_DIR": str(self.data_dir),
                "PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring",
                "KEYRING_PROPERTY_FILE_PATH": str(self.keyring_file),
                "HOME": str(self.home),  # no real ~/.claude, ~/.codex or keyringrc.cfg
                "PYTHONUNBUFFERED": "1",
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
            }
        )
        self.env = env
        self._servers: list[tuple[subprocess.Popen, list[threading.Thread]]] = []

    def run(
        self, *args: str, input: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess:
        """One CLI invocation; `env` adds to (or, with "" values, blanks) the test env."""
        return subprocess.run(
            [sys.executable, "-m", "sublane_desktop", *args],
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            env={**self.env, **(env or {})},
            timeout=RUN_TIMEOUT,
        )

    def ok(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
        result = self.run(*args, input=input)
        assert result.returncode == 0, (
            f"sublane {' '.join(args)} exited {result.returncode}\n"
            f"stdout: {result.stdout}\nstderr: {result.stderr}"
        )
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args).stdout)

    def accounts(self) -> list[dict[str, Any]]:
        return self.json("account", "list", "--json")

    def keyring_secret(self, name: str) -> str | None:
        """Read a secret back from the keyring file with the same backend class."""
        backend = PlaintextKeyring()
        backend.file_path = str(self.keyring_file)
        return backend.get_password(SERVICE, name)

    def database_bytes(self) -> bytes:
        """The SQLite file plus its WAL and shared-memory files, as stored on disk."""
        blob = b""
        for suffix in ("", "-wal", "-shm", "-journal"):
            path = self.data_dir / f"sublane.db{suffix}"
            if path.exists():
                blob += path.read_bytes()
        return blob

    def serve(self, *extra: str, gui: bool = False) -> Server:
        """`sublane serve --port 0`; with gui=True the tray app (`sublane`) offscreen instead,
        which prints the same listening line."""
        command = [] if gui else ["serve"]
        env = (
            {
                **self.env,
                "QT_QPA_PLATFORM": "offscreen",
                "QT_API": "pyside6",
                "PYTHONFAULTHANDLER": "1",  # a crash in Qt says where instead of exiting mute
                "XDG_CONFIG_HOME": str(self.home / ".config"),
            }
            if gui
            else self.env
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "sublane_desktop", *command, "--port", "0", *extra],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        lines: queue.Queue = queue.Queue()

        stderr: list[str] = []
        stderr_grew = threading.Condition()

        def pump() -> None:
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)  # EOF

        def drain() -> None:
            for line in proc.stderr:
                with stderr_grew:
                    stderr.append(line)
                    stderr_grew.notify_all()
            with stderr_grew:
                stderr_grew.notify_all()  # EOF: waiters re-check whether the process ended

        readers = [
            threading.Thread(target=pump, daemon=True),
            threading.Thread(target=drain, daemon=True),
        ]
        for reader in readers:
            reader.start()
        self._servers.append((proc, readers))
        deadline = time.monotonic() + START_TIMEOUT
        try:
            first = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            first = None
            problem = f"no output within {START_TIMEOUT}s"
        else:
            problem = "exited before listening" if first is None else ""
        if first is None:
            proc.kill()
            proc.wait(timeout=STOP_TIMEOUT)
            readers[1].join(timeout=STOP_TIMEOUT)
            pytest.fail(
                f"sublane serve: {problem} (exit {proc.returncode}); stderr:\n{''.join(stderr)}"
            )
        prefix = "listening on http://127.0.0.1:"
        assert first.startswith(prefix) and first.endswith("\n"), repr(first)
        port_text = first[len(prefix) :].strip()
        assert port_text.isdigit(), repr(first)
        return Server(
            proc,
            first.strip()[len("listening on ") :],
            int(port_text),
            lines,
            stderr,
            readers[1],
            stderr_grew,
        )

    def close(self) -> None:
        for proc, readers in self._servers:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=STOP_TIMEOUT)
            for reader in readers:  # EOF follows exit; then the pipes can be closed
                reader.join(timeout=STOP_TIMEOUT)
            for pipe in (proc.stdout, proc.stderr):
                pipe.close()


@pytest.fixture
def sublane(tmp_path: Path) -> Iterator[Sublane]:
    cli = Sublane(tmp_path)
    yield cli
    cli.close()
