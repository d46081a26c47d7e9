"""`sublane account login` end to end (R-LOGIN-1): the real command in a subprocess, the fakes'
authorize page, redirect and code exchange, and a "browser" that is an HTTP client following
the redirect (Python's webbrowser runs `tests/browser_follow.py` through $BROWSER).

Each failure (a wrong state, a reused code, a browser closed before it answered, a taken port)
is one line on stderr, exit 1, and no account; no token or code ever reaches the output.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.browser_follow import follow, redirect_of
from tests.cli.conftest import RUN_TIMEOUT, Sublane
from tests.fake_antigravity import FakeAntigravity
from tests.fake_codex import FakeCodex
from tests.fake_upstream import FakeAnthropic

T = TypeVar("T")
FOLLOW = Path(__file__).resolve().parent.parent / "browser_follow.py"


class Fakes:
    """The three fakes on one loop in a daemon thread (the test bodies are synchronous)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.claude = FakeAnthropic()
        self.codex = FakeCodex()
        self.google = FakeAntigravity()
        for fake in (self.claude, self.codex, self.google):
            self.call(fake.start)

    def call(self, make: Callable[[], Awaitable[T]]) -> T:
        return asyncio.run_coroutine_threadsafe(make(), self.loop).result(30)

    def env(self) -> dict[str, str]:
        return {
            "SUBLANE_CLAUDE_AUTH_BASE_URL": self.claude.url,
            "SUBLANE_CODEX_AUTH_BASE_URL": self.codex.url,
            "SUBLANE_GOOGLE_AUTH_BASE_URL": self.google.url,
            "SUBLANE_ANTHROPIC_BASE_URL": self.claude.url,
            "SUBLANE_OAUTH_BASE_URL": self.claude.url,
            "SUBLANE_CODEX_BASE_URL": self.codex.url,
            "SUBLANE_ANTIGRAVITY_BASE_URL": self.google.url,
            "SUBLANE_GOOGLE_OAUTH_BASE_URL": self.google.url,
            "SUBLANE_LOGIN_TIMEOUT": "20",
            "BROWSER": f"{sys.executable} {FOLLOW} %s",
        }

    def codes(self) -> list[str]:
        return [
            code for fake in (self.claude, self.codex, self.google) for code in fake.oauth.grants
        ]

    def close(self) -> None:
        for fake in (self.claude, self.codex, self.google):
            self.call(fake.stop)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


@pytest.fixture
def fakes() -> Iterator[Fakes]:
    f = Fakes()
    # Real usage answers, so a signed-in account shows real gauges at once.
    f.claude.usage_for["*"] = {
        "five_hour": {"utilization": 42.0, "resets_at": "2030-01-01T00:00:00Z"},
        "seven_day": {"utilization": 7.0, "resets_at": "2030-01-05T00:00:00Z"},
    }
    yield f
    f.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def secrets_in(fakes: Fakes, text: str) -> list[str]:
    """Every token or code the fakes issued that shows up in `text`."""
    issued = list(fakes.codes())
    for n in range(1, 4):
        issued += [f"sk-ant-oat01-signin-{n}", f"sk-ant-ort01-signin-{n}"]
        issued += [f"rt-signin-{n}", f"ya29.signin-{n}", f"1//signin-{n}"]
    return [s for s in issued if s in text]


def login(sublane: Sublane, fakes: Fakes, *args: str, **env: str) -> subprocess.CompletedProcess:
    done = sublane.run("account", "login", *args, env={**fakes.env(), **env})
    assert not secrets_in(fakes, done.stdout + done.stderr), done.stdout + done.stderr
    return done


def stored(sublane: Sublane, account_id: int) -> dict[str, Any]:
    raw = sublane.keyring_secret(f"account:{account_id}")
    assert raw is not None
    return json.loads(raw)


def one_line_failure(done: subprocess.CompletedProcess, words: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sublane: error: "), done.stderr
    assert words in lines[0], lines[0]
    assert "Traceback" not in done.stderr


# --- the three providers, browser sign-in ---------------------------------------------------------


def test_claude_sign_in_adds_a_verified_account_with_real_gauges(
    sublane: Sublane, fakes: Fakes
) -> None:
    done = login(sublane, fakes, "claude")
    assert done.returncode == 0, done.stderr
    assert "signed in: anthropic account person1@example.com (id 1)" in done.stdout
    assert "verify: ok" in done.stdout and "quota: read" in done.stdout
    secret = stored(sublane, 1)
    assert secret["access_token"] == "sk-ant-oat01-signin-1"
    assert secret["refresh_token"] == "sk-ant-ort01-signin-1"
    [account] = sublane.accounts()
    assert account["provider"] == "anthropic" and account["state"] == "ok"
    assert round(account["gauges"]["five_hour"]["utilization"] * 100) == 42
    # the exchange Claude Code makes: JSON, its client, the loopback it listened on, the state
    [exchange] = fakes.claude.oauth.exchanges
    [authorize] = fakes.claude.oauth.authorize_calls
    assert exchange["redirect_uri"] == authorize["redirect_uri"]
    assert authorize["redirect_uri"].startswith("http://localhost:")
    assert authorize["redirect_uri"].endswith("/callback")
    assert exchange["state"] == authorize["state"] and authorize["code"] == "true"


def test_codex_sign_in_takes_the_account_id_from_the_id_token(
    sublane: Sublane, fakes: Fakes
) -> None:
    port = free_port()
    fakes.codex.redirect_ports = {port}  # the fake's allow-list, as auth.openai.com's
    done = login(sublane, fakes, "codex", "--name", "work", SUBLANE_LOGIN_PORT=str(port))
    assert done.returncode == 0, done.stderr
    assert "signed in: codex account work (id 1)" in done.stdout
    assert "verify: ok" in done.stdout
    secret = stored(sublane, 1)
    assert secret["account_id"] == "acct-fake-1"
    assert secret["refresh_token"] == "rt-signin-1"
    [exchange] = fakes.codex.oauth.exchanges
    assert exchange["redirect_uri"] == f"http://localhost:{port}/auth/callback"
    assert "state" not in exchange  # OpenAI's exchange takes no state: checked at the redirect


def test_antigravity_sign_in_keeps_the_client_and_finds_the_project(
    sublane: Sublane, fakes: Fakes
) -> None:
    port = free_port()
    done = login(sublane, fakes, "antigravity", SUBLANE_LOGIN_PORT=str(port))
    assert done.returncode == 0, done.stderr
    assert "signed in: antigravity account antigravity-1 (id 1)" in done.stdout
    assert "verify: ok" in done.stdout and "quota: read" in done.stdout
    secret = stored(sublane, 1)
    assert secret["refresh_token"] == "1//signin-1"
    assert secret["client_id"].startswith("1071006060591-")
    assert secret["project_id"] == fakes.google.project  # loadCodeAssist ran
    [authorize] = fakes.google.oauth.authorize_calls
    assert authorize["access_type"] == "offline" and authorize["prompt"] == "consent"
    assert fakes.google.quota_reads  # fetchAvailableModels: the family gauges


# --- --no-browser: the code on stdin ---------------------------------------------------------------


def paste_login(
    sublane: Sublane, fakes: Fakes, paste: Callable[[str], str], *args: str, **env: str
) -> tuple[int, str, str]:
    """Run `login … --no-browser`, read the URL it prints, give it what `paste(url)` returns."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sublane_desktop", "account", "login", *args, "--no-browser"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**sublane.env, **fakes.env(), **env},
    )
    assert proc.stdout is not None and proc.stdin is not None
    seen = []
    while True:
        line = proc.stdout.readline()
        assert line, "the command ended before printing the address"
        seen.append(line)
        if line.startswith("http"):
            break
    proc.stdin.write(paste(line.strip()) + "\n")
    proc.stdin.flush()
    out, err = proc.communicate(timeout=RUN_TIMEOUT)
    output = "".join(seen) + out
    assert not secrets_in(fakes, output + err), output + err
    return proc.returncode, output, err


def paste_back_code(url: str) -> str:
    """What Anthropic's paste-back page shows: code#state."""
    status, page = follow(url)
    assert status == 200, page
    return page.split('<code id="code">')[1].split("</code>")[0]


def test_no_browser_claude_reads_the_pasted_code(sublane: Sublane, fakes: Fakes) -> None:
    code, out, err = paste_login(sublane, fakes, paste_back_code, "claude", "--name", "team")
    assert code == 0, err
    assert "signed in: anthropic account team (id 1)" in out and "verify: ok" in out
    [authorize] = fakes.claude.oauth.authorize_calls
    assert authorize["redirect_uri"] == fakes.claude.url + "/oauth/code/callback"
    assert stored(sublane, 1)["access_token"] == "sk-ant-oat01-signin-1"


def test_no_browser_codex_reads_the_address_the_browser_ended_on(
    sublane: Sublane, fakes: Fakes
) -> None:
    port = free_port()
    fakes.codex.redirect_ports = {port}
    code, out, err = paste_login(sublane, fakes, redirect_of, "codex", SUBLANE_LOGIN_PORT=str(port))
    assert code == 0, err
    assert "signed in: codex account person1@example.com (id 1)" in out
    assert stored(sublane, 1)["account_id"] == "acct-fake-1"


def test_no_browser_antigravity_reads_the_address_the_browser_ended_on(
    sublane: Sublane, fakes: Fakes
) -> None:
    port = free_port()
    code, out, err = paste_login(
        sublane, fakes, redirect_of, "antigravity", SUBLANE_LOGIN_PORT=str(port)
    )
    assert code == 0, err
    assert "signed in: antigravity account antigravity-1 (id 1)" in out
    [exchange] = fakes.google.oauth.exchanges
    assert exchange["redirect_uri"] == f"http://localhost:{port}/oauth-callback"
    assert stored(sublane, 1)["refresh_token"] == "1//signin-1"


# --- signing an existing account in again -----------------------------------------------------------


def test_login_name_mends_the_account_in_place(sublane: Sublane, fakes: Fakes) -> None:
    assert login(sublane, fakes, "claude", "--name", "main").returncode == 0
    sublane.ok("account", "set-limit", "main", "5")
    db = sqlite3.connect(sublane.data_dir / "sublane.db")
    with db:
        db.execute("UPDATE account_runtime SET auth_failed = 1 WHERE account_id = 1")
        revision = db.execute("SELECT revision FROM accounts WHERE id = 1").fetchone()[0]
    db.close()
    assert sublane.accounts()[0]["state"] == "auth_failed"

    done = login(sublane, fakes, "main")
    assert done.returncode == 0, done.stderr
    assert "signed in again: anthropic account main (id 1)" in done.stdout
    [account] = sublane.accounts()
    assert (account["id"], account["state"], account["max_concurrency"]) == (1, "ok", 5)
    db = sqlite3.connect(sublane.data_dir / "sublane.db")
    assert db.execute("SELECT revision FROM accounts WHERE id = 1").fetchone()[0] == revision + 1
    db.close()
    assert stored(sublane, 1)["access_token"] == "sk-ant-oat01-signin-2"


def test_a_new_sign_in_under_a_taken_name_is_refused_before_the_browser(
    sublane: Sublane, fakes: Fakes
) -> None:
    assert login(sublane, fakes, "claude", "--name", "main").returncode == 0
    done = login(sublane, fakes, "claude", "--name", "main")
    one_line_failure(done, "account 'main' already exists; sign it in again")
    assert len(fakes.claude.oauth.authorize_calls) == 1


def test_unknown_account_is_one_line(sublane: Sublane, fakes: Fakes) -> None:
    one_line_failure(login(sublane, fakes, "nobody"), "unknown account 'nobody'")


def test_a_second_sign_in_right_after_the_first_listens_on_the_same_port(
    sublane: Sublane, fakes: Fakes
) -> None:
    """The port the first sign-in just closed (TIME_WAIT) is free again: Codex has only 1455
    and 1457, and two accounts are often added one after the other."""
    # The last sign-in's listener (SO_REUSEADDR, as SubLane's) closed a connection first: its
    # port is in TIME_WAIT.
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            conn, _ = listener.accept()
            conn.close()
            client.recv(1)
    fakes.codex.redirect_ports = {port}
    for name in ("one", "two"):
        done = login(sublane, fakes, "codex", "--name", name, SUBLANE_LOGIN_PORT=str(port))
        assert done.returncode == 0, done.stderr
    assert [a["name"] for a in sublane.accounts()] == ["one", "two"]


# --- failures change nothing ----------------------------------------------------------------------


def test_a_wrong_state_is_refused_before_the_code_is_used(sublane: Sublane, fakes: Fakes) -> None:
    done = login(sublane, fakes, "claude", BROWSER=f"{sys.executable} {FOLLOW} --wrong-state %s")
    one_line_failure(done, "not from this sign-in (its state does not match)")
    assert fakes.claude.oauth.exchanges == []  # the code was never sent
    assert sublane.accounts() == []


def test_a_reused_code_is_refused_in_the_providers_words(sublane: Sublane, fakes: Fakes) -> None:
    first: list[str] = []

    def keep(url: str) -> str:
        first.append(paste_back_code(url))
        return first[0]

    assert paste_login(sublane, fakes, keep, "claude", "--name", "one")[0] == 0

    def replay(url: str) -> str:
        paste_back_code(url)  # a fresh code is issued for this sign-in ...
        state = url.split("state=")[1].split("&")[0]
        return first[0].split("#")[0] + "#" + state  # ... but the spent one is pasted

    code, out, err = paste_login(sublane, fakes, replay, "claude", "--name", "two")
    assert code == 1, out + err
    [line] = err.strip().splitlines()
    assert "Claude refused the sign-in (HTTP 401: invalid_grant" in line, line
    assert "nothing was changed" in line
    assert [a["name"] for a in sublane.accounts()] == ["one"]


def test_a_closed_browser_times_out(sublane: Sublane, fakes: Fakes) -> None:
    done = login(sublane, fakes, "claude", BROWSER="true %s", SUBLANE_LOGIN_TIMEOUT="0.5")
    one_line_failure(done, "no answer from the browser within 0.5 s")
    assert sublane.accounts() == []


def test_a_taken_port_is_one_clear_line(sublane: Sublane, fakes: Fakes) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = login(sublane, fakes, "codex", SUBLANE_LOGIN_PORT=str(port))
    one_line_failure(done, f"127.0.0.1:{port} is taken")
    assert fakes.codex.oauth.authorize_calls == []  # no browser was sent anywhere
    assert sublane.accounts() == []


# --- with a server running ---------------------------------------------------------------------------


def test_a_running_server_has_the_new_account_at_once(sublane: Sublane, fakes: Fakes) -> None:
    sublane.env.update(fakes.env())
    server = sublane.serve()
    done = login(sublane, fakes, "claude", "--name", "live")
    assert done.returncode == 0, done.stderr
    token = sublane.ok("admin-token").stdout.strip()
    [account] = server.get("/api/accounts/runtime", token)["accounts"]
    assert account["name"] == "live" and account["state"] == "ok"
    assert round(account["gauges"]["five_hour"]["utilization"] * 100) == 42


def test_signing_an_imported_account_in_gives_sublane_its_own_family(
    sublane: Sublane, fakes: Fakes
) -> None:
    login_file = sublane.home / ".claude" / ".credentials.json"
    login_file.parent.mkdir()
    tool = {
        "claudeAiOauth": {
            "accessToken": "sk-ant-oat01-tool",
            "refreshToken": "sk-ant-ort01-tool",
            "expiresAt": 4_102_444_800_000,
            "scopes": ["user:inference"],
            "subscriptionType": "max",
        }
    }
    login_file.write_text(json.dumps(tool))
    sublane.ok("account", "import-claude-code", "--name", "cc")
    db = sqlite3.connect(sublane.data_dir / "sublane.db")
    assert db.execute("SELECT count(*) FROM account_sources").fetchone()[0] == 1
    db.close()

    done = login(sublane, fakes, "cc")
    assert done.returncode == 0, done.stderr
    db = sqlite3.connect(sublane.data_dir / "sublane.db")
    assert db.execute("SELECT count(*) FROM account_sources").fetchone()[0] == 0
    db.close()
    assert stored(sublane, 1)["refresh_token"] == "sk-ant-ort01-signin-1"
    assert json.loads(login_file.read_text()) == tool  # the tool's login is left as it was


def test_signing_in_again_while_a_server_runs_reaches_the_live_pool(
    sublane: Sublane, fakes: Fakes
) -> None:
    sublane.env.update(fakes.env())
    server = sublane.serve()
    assert login(sublane, fakes, "claude", "--name", "live").returncode == 0
    done = login(sublane, fakes, "live")
    assert done.returncode == 0, done.stderr
    assert "signed in again: anthropic account live (id 1)" in done.stdout
    # the server took up the new credential at once: its usage read went with the new token
    assert fakes.claude.usage_reads[-1] == "sk-ant-oat01-signin-2"
    token = sublane.ok("admin-token").stdout.strip()
    [account] = server.get("/api/accounts/runtime", token)["accounts"]
    assert (account["id"], account["state"]) == (1, "ok")


def test_signing_in_again_mends_an_account_whose_credential_vanished(
    sublane: Sublane, fakes: Fakes
) -> None:
    """R-LOGIN-4 meets R-LOGIN-1: the keyring lost the login, the pool says so, and signing in
    again (no Remove) brings the same account back."""
    from keyrings.alt.file import PlaintextKeyring

    from sublane_desktop.accounts.secrets import SERVICE

    sublane.env.update(fakes.env())
    server = sublane.serve()
    assert login(sublane, fakes, "claude", "--name", "gone").returncode == 0
    backend = PlaintextKeyring()
    backend.file_path = str(sublane.keyring_file)
    backend.delete_password(SERVICE, "account:1")
    verdict = sublane.run("account", "verify", "gone")
    assert verdict.returncode == 1 and "credential missing" in verdict.stdout, verdict.stdout

    done = login(sublane, fakes, "gone")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "signed in again: anthropic account gone (id 1)" in done.stdout
    assert "verify: ok" in done.stdout
    token = sublane.ok("admin-token").stdout.strip()
    [account] = server.get("/api/accounts/runtime", token)["accounts"]
    assert (account["id"], account["state"]) == (1, "ok")


def test_an_account_named_like_a_provider_is_reached_by_its_id(
    sublane: Sublane, fakes: Fakes
) -> None:
    assert login(sublane, fakes, "claude", "--name", "claude").returncode == 0
    done = login(sublane, fakes, "claude", "--name", "second")
    assert "to sign the account named 'claude' in again, use `sublane account login 1`" in (
        done.stdout
    )
    again = login(sublane, fakes, "1")
    assert "signed in again: anthropic account claude (id 1)" in again.stdout
    assert [a["name"] for a in sublane.accounts()] == ["claude", "second"]
