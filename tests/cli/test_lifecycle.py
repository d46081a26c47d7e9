"""Starting and stopping the server, as a person does it from a terminal (SPEC §10).

R-FT-6 file modes, R-FT-7 one server per data dir and clear startup failures, R-FT-8 stop
signals that drain. Real `sublane` subprocesses; the only stand-in is the upstream.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import sqlite3
import stat
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from tests.fake_upstream import Reply

from .conftest import LOCAL, Sublane
from .threaded_upstream import ThreadedUpstream

POSIX_MODES = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
NOISE = ("Traceback", "Unclosed", "Task was destroyed", "client_session")


@pytest.fixture
def upstream() -> Iterator[ThreadedUpstream]:
    fake = ThreadedUpstream()
    yield fake
    fake.close()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def only_line(stderr: str) -> str:
    lines = stderr.strip("\n").splitlines()
    assert len(lines) == 1, stderr
    for noise in NOISE:
        assert noise not in stderr
    return lines[0]


def bound_port() -> socket.socket:
    """A socket really listening on a loopback port, as another program would be."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    return taken


# --- R-FT-6 file modes ----------------------------------------------------------------------------


@POSIX_MODES
def test_data_dir_is_0700_and_its_files_0600_and_loosened_modes_are_tightened(
    sublane: Sublane,
) -> None:
    # The encrypted file keyring, so its file lands in the data dir too (the admin token).
    sublane.env.update({"SUBLANE_KEYRING": "file", "SUBLANE_KEYRING_PASSWORD": "pw-for-tests"})
    data = sublane.data_dir
    assert not data.exists()
    server = sublane.serve()
    files = ["sublane.db", "sublane.db-wal", "sublane.db-shm", "server.json", "secrets.enc"]
    assert mode(data) == 0o700
    assert {name: mode(data / name) for name in files} == dict.fromkeys(files, 0o600)
    assert server.interrupt() == 0

    # Someone loosened everything (a backup tool, a careless chmod -R): the next start fixes it.
    data.chmod(0o755)
    kept = [name for name in files if (data / name).exists()]
    assert "sublane.db" in kept and "secrets.enc" in kept
    for name in kept:
        (data / name).chmod(0o644)
    server = sublane.serve()
    assert mode(data) == 0o700
    assert {name: mode(data / name) for name in files} == dict.fromkeys(files, 0o600)
    assert server.interrupt() == 0


# --- R-FT-7 one server per data dir; startup failures -----------------------------------------------


def test_a_second_serve_on_one_data_dir_exits_1_naming_the_first(sublane: Sublane) -> None:
    first = sublane.serve()
    second = sublane.run("serve", "--port", "0")
    assert second.returncode == 1 and second.stdout == ""
    assert only_line(second.stderr) == (
        f"sublane: error: SubLane is already serving this data dir at {first.url} "
        f"(pid {first.proc.pid})"
    )
    # The first one still serves, and `status` still finds it (server.json was left alone).
    status = sublane.json("status", "--json")
    assert status["pid"] == first.proc.pid and status["url"] == first.url
    assert first.interrupt() == 0
    # Its lock went with it: serving again works.
    assert sublane.serve().interrupt() == 0


def test_a_port_in_use_is_one_line_and_exit_1_and_leaves_nothing_behind(sublane: Sublane) -> None:
    taken = bound_port()
    port = taken.getsockname()[1]
    try:
        result = sublane.run("serve", "--port", str(port))
    finally:
        taken.close()
    assert result.returncode == 1 and result.stdout == ""
    assert only_line(result.stderr) == (
        f"sublane: error: port {port} on 127.0.0.1 is already in use by another program; "
        "choose another with --port (0 picks a free one)"
    )
    assert not (sublane.data_dir / "server.json").exists()
    assert sublane.serve().interrupt() == 0  # the failed start released the data dir


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_a_bad_port_is_one_line_and_exit_1(sublane: Sublane, port: str) -> None:
    result = sublane.run("serve", "--port", port)
    assert result.returncode == 1 and result.stdout == ""
    assert only_line(result.stderr) == (
        f"sublane: error: port {port} is not valid: use 1-65535, or 0 to pick a free one"
    )


def test_a_data_dir_that_cannot_be_created_is_one_line_and_exit_1(sublane: Sublane) -> None:
    blocker = sublane.root / "a-file"
    blocker.write_text("not a directory")
    data_dir = blocker / "data"
    result = sublane.run("serve", "--port", "0", "--data-dir", str(data_dir))
    assert result.returncode == 1 and result.stdout == ""
    assert only_line(result.stderr) == (
        f"sublane: error: cannot use the data dir {data_dir}: Not a directory (choose another "
        "with --data-dir or SUBLANE_DATA_DIR)"
    )


@POSIX_MODES
@pytest.mark.skipif(
    sys.platform != "win32" and os.geteuid() == 0, reason="root writes into read-only directories"
)
def test_a_read_only_data_dir_is_one_line_and_exit_1(sublane: Sublane) -> None:
    sublane.data_dir.mkdir(mode=0o500)
    try:
        result = sublane.run("serve", "--port", "0")
    finally:
        sublane.data_dir.chmod(0o700)
    assert result.returncode == 1
    assert only_line(result.stderr).startswith(
        f"sublane: error: cannot use the data dir {sublane.data_dir}: Permission denied"
    )


def test_a_database_locked_by_another_program_is_one_line_and_exit_1(sublane: Sublane) -> None:
    sublane.ok("key", "list")  # creates the database
    holder = sqlite3.connect(sublane.data_dir / "sublane.db", isolation_level=None)
    try:
        # A program that keeps the file to itself (a DB browser mid-write, an old SubLane
        # without the data-dir lock): nobody else can read or write until it lets go.
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        result = sublane.run("serve", "--port", "0")
    finally:
        holder.close()
    assert result.returncode == 1 and result.stdout == ""
    assert only_line(result.stderr) == (
        f"sublane: error: the database {sublane.data_dir / 'sublane.db'} is locked by another "
        "program; close it (or wait for it to finish) and start again"
    )
    assert sublane.serve().interrupt() == 0


@POSIX_MODES
def test_run_with_the_port_in_use_reports_the_real_cause(sublane: Sublane) -> None:
    taken = bound_port()
    port = taken.getsockname()[1]
    try:
        result = sublane.run("run", "--port", str(port), "--", sys.executable, "-c", "pass")
    finally:
        taken.close()
    assert result.returncode == 1
    for noise in NOISE:
        assert noise not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"sublane: error: could not start the server: port {port} on 127.0.0.1 is already in "
        "use by another program; choose another with --port (0 picks a free one)"
    )
    assert mode(sublane.data_dir / "run-server.log") == 0o600  # logs are private too (R-FT-6)


# --- R-FT-8 stop signals drain ----------------------------------------------------------------------


class StreamingClient:
    """One streaming Messages request through the proxy with the anthropic SDK, on a thread."""

    def __init__(self, url: str, key: str) -> None:
        self.first_text = threading.Event()
        self.result: dict[str, Any] = {}
        self._client = anthropic.Anthropic(base_url=url, api_key=key, max_retries=0, timeout=30)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            with self._client.messages.stream(
                model="claude-sonnet-4-5",
                max_tokens=16,
                messages=[{"role": "user", "content": "hi"}],
            ) as stream:
                for event in stream:
                    if event.type == "content_block_delta":
                        self.first_text.set()
                self.result["message"] = stream.get_final_message()
        except Exception as exc:  # reported by finish()
            self.result["error"] = exc
        finally:
            self.first_text.set()

    def finish(self, timeout: float = 30) -> Any:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the stream never finished"
        assert "error" not in self.result, self.result["error"]
        return self.result["message"]


def api_key_account(sublane: Sublane, upstream: ThreadedUpstream) -> str:
    sublane.ok(
        "account",
        "add",
        "--provider",
        "anthropic",
        "--name",
        "work",
        "--base-url",
        upstream.url,
        input=json.dumps({"api_key": "sk-ant-api03-lifecycle"}),
    )
    return sublane.ok("key", "create", "--name", "test").stdout.strip()


@pytest.mark.parametrize("gui", [False, True], ids=["serve", "tray"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_signal_lets_the_stream_in_flight_finish_then_exits_0(
    sublane: Sublane, upstream: ThreadedUpstream, gui: bool, signum: int
) -> None:
    if gui:
        pytest.importorskip("PySide6")
    key = api_key_account(sublane, upstream)
    gate = upstream.gate()
    upstream.script(None, Reply(gate=gate))  # the stream waits mid-way until we open the gate
    server = sublane.serve(gui=gui)
    assert (sublane.data_dir / "server.json").exists()
    client = StreamingClient(server.url, key)
    assert client.first_text.wait(30) and "error" not in client.result, client.result

    server.proc.send_signal(signum)
    server.wait_stderr("stopping: letting in-flight requests finish")
    assert server.proc.poll() is None  # draining: the stream is still open
    upstream.open_gate(gate)

    message = client.finish()
    assert message.content[0].text == "Hello from the fake upstream."
    assert message.stop_reason == "end_turn"
    assert server.proc.wait(timeout=30) == 0, server.stderr()
    assert not (sublane.data_dir / "server.json").exists()
    stderr = server.stderr()
    for noise in (*NOISE, "KeyboardInterrupt"):
        assert noise not in stderr, stderr


# --- R-FT-12 a revoked key is refused when `key revoke` returns --------------------------------------


def key_status(url: str, key: str) -> int:
    req = urllib.request.Request(url + "/api/me/requests")
    req.add_header("Authorization", f"Bearer {key}")
    try:
        with LOCAL.open(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        exc.close()
        return exc.code


def test_a_key_revoked_while_serving_is_refused_the_moment_revoke_returns(sublane: Sublane) -> None:
    key = sublane.ok("key", "create", "--name", "laptop").stdout.strip()
    server = sublane.serve()
    assert key_status(server.url, key) == 200  # the server now knows (and remembers) this key
    assert sublane.ok("key", "revoke", "laptop").stdout == "revoked key 1 (laptop)\n"
    assert key_status(server.url, key) == 401
    [listed] = sublane.json("key", "list", "--json")
    assert listed["revoked"] is True
    unknown = sublane.run("key", "revoke", "nosuch")
    assert unknown.returncode == 1
    assert only_line(unknown.stderr) == "sublane: error: unknown key 'nosuch'"
    assert server.interrupt() == 0


# --- kill -9 during load, then restart: nothing a person set is lost ---------------------------------

SESSION_HEADER = "x-claude-code-session-id"


def message(url: str, key: str, session: str, model: str = "claude-sonnet-4-5") -> int:
    """One non-streaming Messages request in a conversation; the HTTP status."""
    body = json.dumps(
        {"model": model, "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    req = urllib.request.Request(url + "/v1/messages", data=body, method="POST")
    for name, value in (
        ("x-api-key", key),
        ("content-type", "application/json"),
        ("anthropic-version", "2023-06-01"),
        (SESSION_HEADER, session),
    ):
        req.add_header(name, value)
    try:
        with LOCAL.open(req, timeout=10) as resp:
            resp.read()
            return resp.status
    except urllib.error.HTTPError as exc:
        exc.close()
        return exc.code


class Load:
    """Threads sending requests in two conversations until the server goes away."""

    def __init__(self, url: str, key: str, sessions: tuple[str, ...]) -> None:
        self.done = 0
        self._grew = threading.Condition()
        self._threads = [
            threading.Thread(target=self._run, args=(url, key, s), daemon=True)
            for s in sessions
            for _ in range(2)
        ]
        for thread in self._threads:
            thread.start()

    def _run(self, url: str, key: str, session: str) -> None:
        while True:
            try:
                message(url, key, session)
            except (OSError, http.client.HTTPException):  # killed under us: the point
                return
            with self._grew:
                self.done += 1
                self._grew.notify_all()

    def wait_for(self, count: int, timeout: float = 30) -> None:
        with self._grew:
            assert self._grew.wait_for(lambda: self.done >= count, timeout), self.done

    def join(self) -> None:
        for thread in self._threads:
            thread.join(timeout=30)
            assert not thread.is_alive()


def test_kill_9_during_load_then_restart_keeps_everything_a_person_set(
    sublane: Sublane, upstream: ThreadedUpstream
) -> None:
    tokens = {name: f"sk-ant-api03-{name}-k9" for name in ("a", "b", "c", "d", "e")}
    for name, token in tokens.items():
        sublane.ok(
            "account",
            "add",
            "--provider",
            "anthropic",
            "--name",
            name,
            "--base-url",
            upstream.url,
            input=json.dumps({"api_key": token}),
        )
    # R-OBS-2: in a group of their own (no traffic of the default group lands there), two
    # subscription logins whose quota traffic reads: the usage endpoint answers one with nothing
    # (the 5-minute floor holds it) and refuses the other with a 3600 s retry-after; and a
    # Codex account a person will pin.
    side = {"poll": "sk-ant-oat01-poll-k9", "held": "sk-ant-oat01-held-k9"}
    for name, token in side.items():
        sublane.ok(
            "account", "add", "--provider", "anthropic", "--name", name, "--group", "side",
            "--base-url", upstream.url,
            input=json.dumps(
                {"access_token": token, "refresh_token": f"rt-{name}", "expires_at": 4e9}
            ),
        )  # fmt: skip
    upstream.fake.usage_for[side["poll"]] = None  # no windows: the gauges stay cold
    upstream.fake.usage_for[side["held"]] = 429  # with retry-after: 3600
    sublane.ok(
        "account", "add", "--provider", "codex", "--name", "pinned", "--group", "side",
        "--base-url", upstream.url, input=json.dumps({"api_key": "sk-proj-pinned-k9"}),
    )  # fmt: skip
    # The forecast trail: a's 5-hour window read 30 % forty minutes ago and 40 % twenty
    # minutes ago (an earlier run's history); this run's responses say 50 %, reset in 4 h.
    now = time.time()
    with sqlite3.connect(sublane.data_dir / "sublane.db") as db:
        db.executemany(
            "INSERT INTO quota_history (account_id, window, utilization, observed_at)"
            " VALUES (1, 'five_hour', ?, ?)",
            [(0.30, now - 2400), (0.40, now - 1200)],
        )
    upstream.fake.headers_for[tokens["a"]] = {
        "anthropic-ratelimit-unified-5h-utilization": "0.5",
        "anthropic-ratelimit-unified-5h-reset": str(int(now + 4 * 3600)),
    }
    key = sublane.ok("key", "create", "--name", "load").stdout.strip()
    admin = sublane.ok("admin-token").stdout.strip()
    server = sublane.serve()

    def runtime(srv: Any) -> dict[str, dict[str, Any]]:
        return {a["name"]: a for a in srv.get("/api/accounts/runtime", admin)["accounts"]}

    def admin_call(srv: Any, method: str, path: str, body: dict[str, Any]) -> None:
        req = urllib.request.Request(
            srv.url + path,
            method=method,
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {admin}", "Content-Type": "application/json"},
        )
        with LOCAL.open(req, timeout=10) as resp:
            assert resp.status == 200

    def served_by(model: str = "claude-sonnet-4-5") -> str:
        """The account that got the latest request for `model` upstream."""
        (token, *_) = [
            s.token for s in reversed(upstream.fake.seen) if s.body.get("model") == model
        ]
        return next(name for name, t in tokens.items() if t == token)

    # A person's choices: d paused, b's limit 5, a ceiling; conversations s1 and s2 land on a
    # and b (new conversations rotate by id), and c cools down after an upstream 429. Last,
    # under load, e's Fable scope rests after a model-scoped 429 (15 s: the check comes first).
    sublane.ok("account", "pause", "d")
    sublane.ok("account", "set-limit", "b", "5")
    sublane.ok("settings", "scheduler.five_hour_max", "0.8")
    assert message(server.url, key, "s1") == 200 and served_by() == "a"
    assert message(server.url, key, "s2") == 200 and served_by() == "b"
    upstream.script(
        tokens["c"], Reply(status=429, error_type="rate_limit_error", retry_after="120")
    )
    assert message(server.url, key, "s3") == 429 and served_by() == "c"
    before = runtime(server)
    assert before["c"]["state"] == "cooling" and before["c"]["cooldown_until"] is not None
    assert before["d"]["paused"] is True and before["b"]["max_concurrency"] == 5

    load = Load(server.url, key, ("s1", "s2"))
    load.wait_for(40)
    upstream.script(tokens["e"], Reply(status=429, error_type="rate_limit_error"))
    assert message(server.url, key, "f1", "claude-fable-5") == 429
    assert served_by("claude-fable-5") == "e"
    # A person pins the Codex account (after e's 429, which would have released a pin on e).
    sublane.ok("account", "switch", "pinned")
    pinned = runtime(server)
    assert pinned["pinned"]["pinned_until"] is not None
    assert set(pinned["a"]["forecast"]) == {"five_hour"}
    # The traffic so far read each side login's quota once: the floor and the back-off hold.
    assert sorted(upstream.fake.usage_reads) == sorted(side.values())
    # State is saved by one writer thread in order: once this lever's own write is done, the
    # rest saved before it is on disk too (a kill -9 can only lose writes still in flight).
    admin_call(server, "PATCH", f"/api/accounts/{before['e']['id']}/limits", {"max_concurrency": 3})
    server.proc.kill()  # kill -9 in the middle of it
    assert server.proc.wait(timeout=30) == -signal.SIGKILL
    load.join()

    with sqlite3.connect(sublane.data_dir / "sublane.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        old_ids = [row[0] for row in db.execute("SELECT id FROM request_records")]
        (fable_rest,) = db.execute(
            "SELECT fable_cooldown_until FROM account_runtime JOIN accounts"
            " ON accounts.id = account_runtime.account_id WHERE accounts.name = 'e'"
        ).fetchone()
    assert len(old_ids) >= 3 and fable_rest is not None
    with sqlite3.connect(sublane.data_dir / "sublane.db") as db:
        polls = dict(
            db.execute(
                "SELECT name, quota_polls.blocked_until IS NOT NULL FROM quota_polls"
                " JOIN accounts ON accounts.id = quota_polls.account_id"
            ).fetchall()
        )
    assert polls == {"poll": 0, "held": 1}  # on disk before the kill

    server = sublane.serve()  # the lock died with the process; the stale server.json is replaced
    # Bindings: asked in the other order, a fresh rotation would put s2 on a and s1 on b.
    assert message(server.url, key, "s2") == 200 and served_by() == "b"
    assert message(server.url, key, "s1") == 200 and served_by() == "a"
    # The Fable scope's rest: with a and b paused, c cooling and d paused, only e is left, and
    # it still refuses Fable (nothing reaches the upstream) while serving other models.
    for name in ("a", "b"):
        admin_call(server, "POST", "/llmux/pause-account", {"account": name, "paused": True})
    seen = len(upstream.fake.seen)
    assert message(server.url, key, "f2", "claude-fable-5") in (429, 503)
    assert len(upstream.fake.seen) == seen
    assert message(server.url, key, "f3") == 200 and served_by() == "e"
    after = runtime(server)
    assert after["d"]["paused"] is True and after["d"]["state"] == "paused"
    assert after["b"]["max_concurrency"] == 5 and after["e"]["max_concurrency"] == 3
    assert after["c"]["state"] == "cooling"
    assert after["c"]["cooldown_until"] == before["c"]["cooldown_until"]
    assert after["c"]["failure_streak"] == before["c"]["failure_streak"]
    assert sublane.ok("settings", "scheduler.five_hour_max").stdout == (
        "scheduler.five_hour_max = 0.8\n"
    )
    # R-OBS-2: the pin keeps its deadline (not a fresh 5 minutes, not lost); the forecast trail
    # reloaded (a's forecast needs the readings of forty and twenty minutes ago); and all of
    # this run's traffic read neither side login again, inside the floor and the back-off.
    assert after["pinned"]["pinned_until"] == pinned["pinned"]["pinned_until"]
    assert set(after["a"]["forecast"]) == {"five_hour"}
    assert sorted(upstream.fake.usage_reads) == sorted(side.values())

    assert server.interrupt() == 0  # a clean stop writes every record still queued
    with sqlite3.connect(sublane.data_dir / "sublane.db") as db:
        ids = [row[0] for row in db.execute("SELECT id FROM request_records ORDER BY id")]
    new_ids = ids[len(old_ids) :]
    assert ids[: len(old_ids)] == sorted(old_ids)  # what survived the kill is still there
    assert len(new_ids) >= 3 and min(new_ids) > max(old_ids)  # and no id is handed out twice
