"""The real `sublane` command, run in subprocesses (SPEC §2 contract, §9 storage and secrets)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import urllib.error

import pytest

from sublane_desktop.accounts.secrets import account_secret

from .conftest import LOCAL, Sublane

ACCOUNT_KEYS = {
    "id",
    "name",
    "provider",
    "state",
    "in_flight",
    "max_concurrency",
    "paused",
    "pinned_until",
    "cooldown_until",
    "failure_streak",
    "current",
    "fable_current",
    "gauges",
}
# Beyond SPEC §7's fields, the view adds what the tray shows: why an account is auth_failed,
# its kind (oauth / api_key), its forecasts (R-UI-7) and what holds it, on which evidence
# (R-OBS-3). Clients must tolerate additions; a missing or renamed SPEC field is the break
# this guards against.
ACCOUNT_EXTRA_KEYS = {"auth_reason", "kind", "forecast", "family_cooldowns", "hold", "holds"}
GAUGE_KEYS = {"utilization", "resets_at", "observed_at", "cold", "stale"}


def oauth_secret(tag: str, **extra) -> dict:
    return {
        "access_token": f"sk-ant-oat01-ACCESS-{tag}-7f3a9c",
        "refresh_token": f"sk-ant-ort01-REFRESH-{tag}-b81d2e",
        "expires_at": 4_000_000_000,
        **extra,
    }


def add_work(sublane: Sublane, tag: str = "work") -> dict:
    secret = oauth_secret(tag)
    sublane.ok(
        "account", "add", "--provider", "anthropic", "--name", "work", input=json.dumps(secret)
    )
    return secret


def one_error_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.strip("\n").splitlines()
    assert result.returncode != 0, f"expected failure, got 0; stdout: {result.stdout!r}"
    assert len(lines) == 1, f"expected one stderr line, got {result.stderr!r}"
    assert "error" in lines[0] and "Traceback" not in result.stderr
    return lines[0]


def fake_jwt(claims: dict) -> str:
    def part(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.c2ln"


# --- accounts and secrets ---------------------------------------------------------------------


def test_account_add_keeps_the_secret_in_the_keyring_only(sublane: Sublane) -> None:
    secret = oauth_secret("add")
    result = sublane.ok(
        "account", "add", "--provider", "anthropic", "--name", "work", input=json.dumps(secret)
    )
    assert "work" in result.stdout

    [account] = sublane.accounts()
    assert (account["name"], account["provider"], account["max_concurrency"]) == (
        "work",
        "anthropic",
        2,
    )

    # The secret is in the keyring file named by KEYRING_PROPERTY_FILE_PATH...
    assert sublane.keyring_file.exists()
    stored = sublane.keyring_secret(account_secret(account["id"]))
    assert stored is not None and json.loads(stored) == {**secret, "expires_at": 4e9}
    # ...and PlaintextKeyring did not fall back to its default file under the data root.
    assert not any(p.name.startswith("keyring_pass") for p in sublane.home.rglob("*"))

    # Nowhere in SQLite (database, WAL, shm) nor in anything the command printed.
    db = sublane.database_bytes()
    assert db, "no database written"
    for value in (secret["access_token"], secret["refresh_token"], json.dumps(secret)):
        assert value.encode() not in db
        assert value not in result.stdout and value not in result.stderr


def test_bad_input_is_one_stderr_line_and_changes_nothing(sublane: Sublane) -> None:
    add_work(sublane)
    sublane.ok("key", "create", "--name", "laptop")
    accounts_before = sublane.accounts()
    keys_before = sublane.json("key", "list", "--json")
    keyring_before = sublane.keyring_file.read_bytes()

    good = json.dumps(oauth_secret("bad"))
    leaky = '{"access_token": "sk-ant-oat01-LEAK-ME-NOT", "refresh_token": '  # truncated JSON
    cases = [
        (["account", "add", "--provider", "openai", "--name", "x"], good, "provider"),
        (["account", "add", "--provider", "anthropic", "--name", "x"], leaky, "JSON"),
        (["account", "add", "--provider", "anthropic", "--name", "x"], "", "stdin"),
        (["account", "add", "--provider", "anthropic", "--name", "x"], "[1, 2]", "object"),
        (
            ["account", "add", "--provider", "anthropic", "--name", "x"],
            json.dumps({"access_token": "a", "expires_at": 4e9}),
            "refresh_token",
        ),
        (["account", "add", "--provider", "codex", "--name", "x"], good, "account_id"),
        (
            ["account", "add", "--provider", "anthropic", "--name", "x"],
            json.dumps(oauth_secret("s", expires_at="tomorrow")),
            "expires_at",
        ),
        (
            ["account", "add", "--provider", "anthropic", "--name", "x"],
            json.dumps({"api_key": ""}),
            "api_key",
        ),
        (
            ["account", "add", "--provider", "anthropic", "--name", "x", "--max-concurrency", "0"],
            good,
            "1 to 8",
        ),
        (
            ["account", "add", "--provider", "anthropic", "--name", "x", "--max-concurrency", "9"],
            good,
            "1 to 8",
        ),
        (
            [
                "account",
                "add",
                "--provider",
                "anthropic",
                "--name",
                "x",
                "--max-concurrency",
                "two",
            ],
            good,
            "max-concurrency",
        ),
        (["account", "add", "--provider", "anthropic", "--name", "work"], good, "exists"),
        (["account", "pause", "nosuch"], None, "nosuch"),
        (["account", "unpause", "nosuch"], None, "nosuch"),
        (["account", "clear-cooldown", "nosuch"], None, "nosuch"),
        (["key", "revoke", "nosuch"], None, "nosuch"),
        (["key", "create", "--name", "b", "--user", "nobody"], None, "nobody"),
        (["account", "frobnicate"], None, "frobnicate"),
    ]
    problems = []
    for args, stdin, mentions in cases:
        result = sublane.run(*args, input=stdin)
        try:
            line = one_error_line(result)
            assert mentions in line, f"{line!r} does not mention {mentions!r}"
            assert "LEAK-ME-NOT" not in result.stderr + result.stdout
        except AssertionError as exc:
            problems.append(f"sublane {' '.join(args)}: {exc}")
    assert not problems, "\n".join(problems)

    assert sublane.accounts() == accounts_before
    assert sublane.json("key", "list", "--json") == keys_before
    assert sublane.keyring_file.read_bytes() == keyring_before


def test_import_claude_code_creates_then_updates(sublane: Sublane) -> None:
    creds = sublane.root / "credentials.json"

    def write(tag: str, expires_ms: int) -> None:
        creds.write_text(
            json.dumps(
                {
                    "claudeAiOauth": {
                        "accessToken": f"sk-ant-oat01-cc-{tag}",
                        "refreshToken": f"sk-ant-ort01-cc-{tag}",
                        "expiresAt": expires_ms,
                        "scopes": ["user:inference"],
                        "subscriptionType": "max",
                    }
                }
            )
        )

    write("one", 1_900_000_000_000)
    sublane.ok("account", "import-claude-code", "--file", str(creds))
    [account] = sublane.accounts()
    assert (account["name"], account["provider"]) == ("claude-code", "anthropic")
    assert json.loads(sublane.keyring_secret(account_secret(account["id"]))) == {
        "access_token": "sk-ant-oat01-cc-one",
        "refresh_token": "sk-ant-ort01-cc-one",
        "expires_at": 1_900_000_000.0,
    }  # the file keeps milliseconds, we keep seconds

    write("two", 1_950_000_000_000)  # Claude Code refreshed its login: import again
    sublane.ok("account", "import-claude-code", "--file", str(creds))
    [again] = sublane.accounts()
    assert again["id"] == account["id"] and again["name"] == "claude-code"
    secret = json.loads(sublane.keyring_secret(account_secret(account["id"])))
    assert secret["access_token"] == "sk-ant-oat01-cc-two"
    assert secret["expires_at"] == 1_950_000_000.0
    assert b"sk-ant-oat01-cc-" not in sublane.database_bytes()

    # A missing or malformed file is one clear line and changes nothing.
    missing = sublane.run(
        "account", "import-claude-code", "--file", str(sublane.root / "nope.json")
    )
    assert "nope.json" in one_error_line(missing)
    creds.write_text('{"something": "else"}')
    assert "credentials" in one_error_line(
        sublane.run("account", "import-claude-code", "--file", str(creds))
    )
    # With no --file it looks in ~/.claude/.credentials.json (HOME is the test's).
    assert ".credentials.json" in one_error_line(sublane.run("account", "import-claude-code"))
    assert [a["id"] for a in sublane.accounts()] == [account["id"]]


def test_import_codex(sublane: Sublane) -> None:
    auth = sublane.root / "auth.json"
    access = fake_jwt({"exp": 1_900_000_123})
    auth.write_text(
        json.dumps(
            {
                "OPENAI_API_KEY": None,
                "tokens": {
                    "access_token": access,
                    "refresh_token": "rt-codex-1",
                    "id_token": fake_jwt({}),
                    "account_id": "acct-123",
                },
            }
        )
    )
    sublane.ok("account", "import-codex", "--file", str(auth))
    [account] = sublane.accounts()
    assert (account["name"], account["provider"]) == ("codex", "codex")
    assert json.loads(sublane.keyring_secret(account_secret(account["id"]))) == {
        "access_token": access,
        "refresh_token": "rt-codex-1",
        "expires_at": 1_900_000_123.0,
        "account_id": "acct-123",
    }

    sublane.ok("account", "import-codex", "--file", str(auth))  # re-import: no duplicate
    assert len(sublane.accounts()) == 1
    missing = sublane.run("account", "import-codex", "--file", str(sublane.root / "no.json"))
    assert "no.json" in one_error_line(missing)
    assert len(sublane.accounts()) == 1


# --- keys, users, admin token -----------------------------------------------------------------


def test_client_keys_and_members(sublane: Sublane) -> None:
    created = sublane.ok("key", "create", "--name", "laptop")
    [key] = created.stdout.splitlines()
    assert key.startswith("sl-") and len(key) > 20

    [listed] = sublane.json("key", "list", "--json")
    assert listed["name"] == "laptop" and listed["revoked"] is False
    assert key.startswith(listed["prefix"]) and len(listed["prefix"]) < len(key)
    listing = sublane.ok("key", "list").stdout + sublane.ok("key", "list", "--json").stdout
    assert key not in listing
    assert key.encode() not in sublane.database_bytes()  # only its hash is stored

    sublane.ok("key", "revoke", "laptop")
    [revoked] = sublane.json("key", "list", "--json")
    assert revoked["id"] == listed["id"] and revoked["revoked"] is True

    sublane.ok("user", "add", "bob")
    [bob_key] = sublane.ok("key", "create", "--name", "b", "--user", "bob").stdout.splitlines()
    assert bob_key.startswith("sl-") and bob_key != key
    keys = sublane.json("key", "list", "--json")
    assert [(k["name"], k["user"], k["revoked"]) for k in keys] == [
        ("laptop", "admin", True),
        ("b", "bob", False),
    ]

    assert "nobody" in one_error_line(
        sublane.run("key", "create", "--name", "c", "--user", "nobody")
    )
    assert "bob" in one_error_line(sublane.run("user", "add", "bob"))
    assert len(sublane.json("key", "list", "--json")) == 2


def test_admin_token_is_stable(sublane: Sublane) -> None:
    first = sublane.ok("admin-token").stdout
    second = sublane.ok("admin-token").stdout
    assert first == second and len(first.splitlines()) == 1 and len(first.strip()) >= 20
    assert sublane.keyring_secret("admin-token") == first.strip()
    assert first.strip().encode() not in sublane.database_bytes()


# --- account list, offline --------------------------------------------------------------------


def test_account_list_json_without_a_server(sublane: Sublane) -> None:
    assert sublane.accounts() == []
    add_work(sublane)
    sublane.ok(
        "account",
        "add",
        "--provider",
        "codex",
        "--name",
        "cx",
        "--max-concurrency",
        "5",
        input=json.dumps(oauth_secret("cx", account_id="acct-9")),
    )
    assert "no SubLane server" in sublane.run("status").stdout  # really no server here

    accounts = sublane.accounts()
    assert [(a["name"], a["provider"], a["max_concurrency"]) for a in accounts] == [
        ("work", "anthropic", 2),
        ("cx", "codex", 5),
    ]
    for account in accounts:
        assert ACCOUNT_KEYS <= set(account) <= ACCOUNT_KEYS | ACCOUNT_EXTRA_KEYS
        assert isinstance(account["id"], int)
        assert account["state"] == "ok" and account["paused"] is False
        assert account["in_flight"] == 0 and account["failure_streak"] == 0
        assert account["pinned_until"] is None and account["cooldown_until"] is None
        assert isinstance(account["current"], bool)
        assert isinstance(account["fable_current"], bool)
        assert set(account["gauges"]) == {"five_hour", "seven_day", "fable"}
        for gauge in account["gauges"].values():
            assert set(gauge) == GAUGE_KEYS
            assert gauge["cold"] is True  # nothing observed yet

    # Levers work offline too, on the stored state; the table view lists every account.
    sublane.ok("account", "pause", "cx")
    by_name = {a["name"]: a for a in sublane.accounts()}
    assert by_name["cx"]["paused"] is True and by_name["cx"]["state"] == "paused"
    assert by_name["work"]["paused"] is False
    table = sublane.ok("account", "list").stdout
    assert "work" in table and "cx" in table and "paused" in table


# --- serve ------------------------------------------------------------------------------------


def test_serve_status_levers_and_ctrl_c(sublane: Sublane) -> None:
    add_work(sublane)
    token = sublane.ok("admin-token").stdout.strip()
    server = sublane.serve()
    assert server.proc.poll() is None

    status = sublane.json("status", "--json")
    assert status["running"] is True and status["port"] == server.port
    assert status["url"] == server.url and status["accounts"] == 1
    assert status["records_dropped"] == 0  # R-FT-2: shown by `sublane status`
    # A (dead) HTTP proxy in the environment must not stand between the CLI and its server.
    dead_proxy = "http://127.0.0.1:9"
    proxied = sublane.run(
        "status",
        "--json",
        env={"http_proxy": dead_proxy, "HTTP_PROXY": dead_proxy, "no_proxy": "", "NO_PROXY": ""},
    )
    assert proxied.returncode == 0, proxied.stdout + proxied.stderr
    assert json.loads(proxied.stdout)["port"] == server.port

    # With a server, `account list --json` is the server's own runtime view.
    runtime = server.get("/api/accounts/runtime", token)
    assert sublane.accounts() == runtime["accounts"]

    def live(name: str) -> dict:
        [match] = [
            a for a in server.get("/api/accounts/runtime", token)["accounts"] if a["name"] == name
        ]
        return match

    sublane.ok("account", "pause", "work")
    assert live("work")["paused"] is True and live("work")["state"] == "paused"
    assert sublane.accounts()[0]["state"] == "paused"
    sublane.ok("account", "unpause", "work")
    assert live("work")["paused"] is False and live("work")["state"] != "paused"
    sublane.ok("account", "clear-cooldown", "work")
    assert live("work")["cooldown_until"] is None and live("work")["failure_streak"] == 0
    assert "nosuch" in one_error_line(sublane.run("account", "pause", "nosuch"))

    # The management API refuses anyone without the administrator token.
    with pytest.raises(urllib.error.HTTPError) as refused:
        LOCAL.open(server.url + "/api/accounts/runtime", timeout=10)
    assert refused.value.code == 401
    refused.value.close()

    assert server.interrupt() == 0, server.stderr()
    assert server.remaining_stdout() == []  # exactly one line: the listening line
    assert "Traceback" not in server.stderr()
    assert sublane.run("status").returncode == 1
    stopped = sublane.run("status", "--json")
    assert stopped.returncode == 1 and json.loads(stopped.stdout)["running"] is False
    assert not (sublane.data_dir / "server.json").exists()
    # Offline again: the database still has the account, unpaused.
    [account] = sublane.accounts()
    assert account["name"] == "work" and account["paused"] is False


def test_account_added_while_serving_is_visible(sublane: Sublane) -> None:
    add_work(sublane)
    sublane.serve()
    sublane.ok(
        "account",
        "add",
        "--provider",
        "anthropic",
        "--name",
        "late",
        input=json.dumps({"api_key": "sk-ant-api03-late"}),
    )
    assert [a["name"] for a in sublane.accounts()] == ["work", "late"]
    sublane.ok("account", "pause", "late")


# --- entry points -----------------------------------------------------------------------------


def test_help_and_headless_imports(sublane: Sublane) -> None:
    helped = sublane.ok("--help")
    assert "usage: sublane" in helped.stdout
    for command in ("serve", "account", "key", "user", "admin-token", "status"):
        assert command in helped.stdout
    assert "import-claude-code" in sublane.ok("account", "--help").stdout
    # cli.py keeps its own copy of the default port so quick commands skip importing aiohttp.
    from sublane_desktop import cli, service

    assert cli.DEFAULT_PORT == service.DEFAULT_PORT == 8765
    assert f"default {service.DEFAULT_PORT}" in helped.stdout

    # `serve` is headless: nothing on its import path pulls in Qt.
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, sublane_desktop.cli, sublane_desktop.app, sublane_desktop.service, "
            "sublane_desktop.proxy.server; assert 'PySide6' not in sys.modules, "
            "sorted(m for m in sys.modules if m.startswith('PySide6'))",
        ],
        capture_output=True,
        text=True,
        env=sublane.env,
        timeout=30,
    )
    assert probe.returncode == 0, probe.stderr


def test_account_list_says_which_evidence_holds_an_account_and_clear_cooldown_lifts_it(
    sublane: Sublane,
) -> None:
    """R-OBS-3 offline: a quota hold a server left behind (stored with its window and reset,
    R-POOL-10) is listed in words, carried in --json, and cleared by clear-cooldown."""
    import sqlite3
    import time as clock

    add_work(sublane)
    sublane.accounts()  # the schema exists
    resets = clock.time() + 2 * 3600
    holds = {
        "evidence": {
            "account": {"kind": "quota", "window": "five_hour", "since": 1.0, "resets_at": resets}
        },
        "families": {},
    }

    def held_in_db() -> None:
        db = sqlite3.connect(sublane.data_dir / "sublane.db")
        with db:
            account_id = db.execute("SELECT id FROM accounts WHERE name = 'work'").fetchone()[0]
            db.execute(
                "INSERT OR REPLACE INTO account_runtime (account_id, cooldown_until,"
                " failure_streak, holds) VALUES (?, ?, 1, ?)",
                (account_id, resets, json.dumps(holds)),
            )
        db.close()

    held_in_db()
    words = f"Limit reached (5h), resets {clock.strftime('%H:%M', clock.localtime(resets))}"
    table = sublane.ok("account", "list").stdout
    assert f"      {words}" in table.splitlines()
    (work,) = sublane.accounts()
    assert work["state"] == "cooling" and work["hold"]["kind"] == "quota"
    assert work["hold"]["words"] == words
    # a server started on it holds the account the same, and `status` says so
    server = sublane.serve()
    status = sublane.json("status", "--json")
    assert [(h["account"], h["kind"], h["words"]) for h in status["holds"]] == [
        ("work", "quota", words)
    ]
    assert f"  work: {words}" in sublane.ok("status").stdout.splitlines()
    sublane.ok("account", "clear-cooldown", "work")  # through the running server
    assert sublane.json("status", "--json")["holds"] == []
    assert server.interrupt() == 0
    held_in_db()
    assert sublane.accounts()[0]["hold"]["words"] == words
    sublane.ok("account", "clear-cooldown", "work")  # and offline
    (work,) = sublane.accounts()
    assert work["hold"] is None and work["holds"] == []
    assert "Limit reached" not in sublane.ok("account", "list").stdout
