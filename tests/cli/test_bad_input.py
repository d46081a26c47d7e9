"""Bad input a person can type, through the real `sublane` command (SPEC §2, R-ST-2): one clear
line on stderr, a non-zero exit, and nothing changed — no account, key, member or secret made,
no existing account altered."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.accounts.tool_logins import claude_login, write_json

from .conftest import Sublane
from .test_cli import one_error_line

SECRET = json.dumps({"api_key": "sk-ant-api03-bad-input"})
# Far deeper than Python's JSON parser goes (it recurses once per level).
DEEP_ARRAY = "[" * 100_000 + "]" * 100_000
DEEP_OBJECT = '{"a":' * 100_000 + "1" + "}" * 100_000


def rows(sublane: Sublane, table: str) -> list[tuple]:
    db = sqlite3.connect(sublane.data_dir / "sublane.db")
    try:
        return db.execute(f"SELECT name FROM {table} ORDER BY id").fetchall()
    finally:
        db.close()


# --- PYTHON_KEYRING_BACKEND ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "backend", ["keyrings.alt.file.PlaintextKeyrin", "keyrings.alt.fil.PlaintextKeyring"]
)
def test_a_mistyped_python_keyring_backend_is_one_line_naming_it(
    sublane: Sublane, backend: str
) -> None:
    result = sublane.run(
        "account",
        "add",
        "--provider",
        "anthropic",
        "--name",
        "work",
        input=SECRET,
        env={"PYTHON_KEYRING_BACKEND": backend},
    )
    line = one_error_line(result)
    assert line.startswith(f"sublane: error: PYTHON_KEYRING_BACKEND={backend!r} cannot be loaded")
    assert "unset it" in line and "keyrings.alt.file.PlaintextKeyring" in line
    assert "bad-input" not in result.stdout + result.stderr
    assert sublane.accounts() == []  # with the right backend: nothing was added
    assert not sublane.keyring_file.exists()


# --- JSON nested too deeply ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "text"),
    [
        ("import-claude-code", DEEP_ARRAY),
        ("import-codex", DEEP_OBJECT),
        ("import-gemini", DEEP_ARRAY),
        ("import-antigravity", DEEP_OBJECT),
    ],
    ids=["claude-code", "codex", "gemini", "antigravity"],
)
def test_an_import_file_nested_too_deeply_is_one_line(
    sublane: Sublane, command: str, text: str
) -> None:
    path = sublane.root / "deep.json"
    path.write_text(text)
    line = one_error_line(sublane.run("account", command, "--file", str(path)))
    assert line == f"sublane: error: {path} is not a login file: its JSON is nested too deeply"
    assert sublane.accounts() == []


def test_a_secret_on_stdin_nested_too_deeply_is_one_line(sublane: Sublane) -> None:
    result = sublane.run(
        "account", "add", "--provider", "anthropic", "--name", "work", input=DEEP_OBJECT
    )
    assert one_error_line(result) == (
        "sublane: error: secret on stdin is not an account secret: its JSON is nested too deeply"
    )
    assert sublane.accounts() == []


# --- names -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "   ", "\t"])
def test_a_blank_name_is_refused_for_accounts_keys_and_users(sublane: Sublane, name: str) -> None:
    added = sublane.run("account", "add", "--provider", "anthropic", "--name", name, input=SECRET)
    assert one_error_line(added) == "sublane: error: account name must not be empty"
    login = write_json(sublane.root / "cc.json", claude_login("blank", 1_900_000_000_000))
    imported = sublane.run("account", "import-claude-code", "--file", str(login), "--name", name)
    assert one_error_line(imported) == "sublane: error: account name must not be empty"
    key = sublane.run("key", "create", "--name", name)
    assert one_error_line(key) == "sublane: error: key name must not be empty"
    assert key.stdout == ""  # no key printed, none made
    user = sublane.run("user", "add", name)
    assert one_error_line(user) == "sublane: error: user name must not be empty"

    assert sublane.accounts() == []
    assert rows(sublane, "client_keys") == []
    assert rows(sublane, "users") == [("admin",)]
    assert not sublane.keyring_file.exists() or "bad-input" not in sublane.keyring_file.read_text()


@pytest.mark.parametrize(
    ("name", "words"),
    [("", "must not be empty"), ("two\nlines", "must be one line of visible text")],
)
def test_a_browser_sign_in_refuses_a_bad_name_before_any_browser_opens(
    sublane: Sublane, name: str, words: str
) -> None:
    result = sublane.run("account", "login", "claude", "--name", name, "--no-browser")
    assert one_error_line(result) == f"sublane: error: account name {words}"
    assert result.stdout == ""  # no sign-in address was offered
    assert sublane.accounts() == []


def test_a_name_on_two_lines_or_with_outer_spaces_is_refused(sublane: Sublane) -> None:
    two_lines = sublane.run("key", "create", "--name", "lap\ntop")
    assert one_error_line(two_lines) == "sublane: error: key name must be one line of visible text"
    spaced = sublane.run("user", "add", " bob")
    assert one_error_line(spaced) == "sublane: error: user name must not start or end with a space"
    sublane.ok("user", "add", "bob smith")  # a space inside is fine
    assert rows(sublane, "users") == [("admin",), ("bob smith",)]
    assert rows(sublane, "client_keys") == []


# --- base URLs -------------------------------------------------------------------------------------

BAD_URLS = {
    "not a url": "contains spaces",
    "api.anthropic.com": "is not an http or https address",
    "ftp://example.com": "is not an http or https address",
    "https://": "has no host",
    "https://example.com:99999": "is not a URL",
    "": "is empty",
}


@pytest.mark.parametrize("url", list(BAD_URLS))
def test_a_base_url_that_is_not_http_with_a_host_is_refused_at_add_and_update(
    sublane: Sublane, url: str
) -> None:
    words = (
        f"sublane: error: base URL {url!r} {BAD_URLS[url]}: give an http:// or https://"
        " address with a host, e.g. https://api.anthropic.com"
    )
    added = sublane.run(
        "account", "add", "--provider", "anthropic", "--name", "new", "--base-url", url,
        input=SECRET,
    )  # fmt: skip
    assert one_error_line(added) == words
    assert sublane.accounts() == []

    sublane.ok(
        "account", "add", "--provider", "anthropic", "--name", "work",
        "--base-url", "http://127.0.0.1:9", input=SECRET,
    )  # fmt: skip
    replaced = sublane.run(
        "account", "add", "--provider", "anthropic", "--name", "work", "--base-url", url,
        "--replace", input=json.dumps({"api_key": "sk-ant-api03-second"}),
    )  # fmt: skip
    assert one_error_line(replaced) == words
    db = sqlite3.connect(sublane.data_dir / "sublane.db")
    try:
        assert db.execute("SELECT base_url, revision FROM accounts").fetchall() == [
            ("http://127.0.0.1:9", 1)
        ]
    finally:
        db.close()
    assert "second" not in sublane.keyring_file.read_text()  # the old credential stays


def test_good_base_urls_are_kept_as_given(sublane: Sublane) -> None:
    for i, url in enumerate(("http://127.0.0.1:8080", "https://gateway.example.com/anthropic/")):
        sublane.ok(
            "account", "add", "--provider", "anthropic", "--name", f"a{i}", "--base-url", url,
            input=SECRET,
        )  # fmt: skip
    db = sqlite3.connect(sublane.data_dir / "sublane.db")
    try:
        assert db.execute("SELECT base_url FROM accounts ORDER BY id").fetchall() == [
            ("http://127.0.0.1:8080",),
            ("https://gateway.example.com/anthropic/",),
        ]
    finally:
        db.close()


# --- notification settings (R-UI-13) ---------------------------------------------------------------


def test_notification_settings_from_the_command_line(sublane: Sublane) -> None:
    assert sublane.ok("settings", "notify.thresholds", "[0.9, 0.7]").stdout == (
        "notify.thresholds = [0.7, 0.9]\n"
    )
    line = one_error_line(sublane.run("settings", "notify.thresholds", "[0.7, 1.5]"))
    assert "notify.thresholds must be 1 to 3 different fractions in (0, 1)" in line
    line = one_error_line(sublane.run("settings", "notify.forecast", "maybe"))
    assert "notify.forecast must be true or false" in line
    assert sublane.ok("settings", "notify.thresholds").stdout == "notify.thresholds = [0.7, 0.9]\n"
    assert sublane.ok("settings", "notify.forecast").stdout == "notify.forecast = true\n"
