"""Google logins through the real `sublane` command (R-AG-1, R-CLI-2): `account import-gemini`
reads Gemini CLI's `~/.gemini/oauth_creds.json`, `account import-antigravity` an Antigravity
account file, `account add --provider antigravity` a Google login on stdin. Bad input is one
clear stderr line and changes nothing."""

from __future__ import annotations

import json
import os

from sublane_desktop.providers.antigravity import CLIENTS
from sublane_desktop.secrets import account_secret

from .conftest import Sublane
from .test_cli import one_error_line

GEMINI_CREDS = {"access_token": "ya29.gemini-one", "refresh_token": "1//rt-gemini",
                "scope": "https://www.googleapis.com/auth/cloud-platform",
                "token_type": "Bearer", "id_token": "x.y.z", "expiry_date": 1_900_000_000_000}


def test_import_gemini_from_the_home_dir(sublane: Sublane) -> None:
    creds = sublane.home / ".gemini" / "oauth_creds.json"
    creds.parent.mkdir()
    creds.write_text(json.dumps(GEMINI_CREDS))
    result = sublane.ok("account", "import-gemini")
    assert "added antigravity account gemini" in result.stdout
    [account] = sublane.accounts()
    assert (account["name"], account["provider"], account["state"]) == (
        "gemini", "antigravity", "ok")
    assert set(account["gauges"]) == {"claude", "gemini_pro", "gemini_flash"}
    assert account["gauges"]["gemini_pro"]["cold"] is True
    client_id, client_secret = CLIENTS["gemini-cli"]
    assert json.loads(sublane.keyring_secret(account_secret(account["id"]))) == {
        "access_token": "ya29.gemini-one", "refresh_token": "1//rt-gemini",
        "expires_at": 1_900_000_000.0, "client_id": client_id, "client_secret": client_secret}
    assert b"ya29.gemini-one" not in sublane.database_bytes()
    # signing in again with Gemini CLI and importing again updates the same account
    creds.write_text(json.dumps(dict(GEMINI_CREDS, access_token="ya29.gemini-two")))
    assert "updated antigravity account gemini" in sublane.ok("account", "import-gemini").stdout
    [again] = sublane.accounts()
    assert again["id"] == account["id"]
    listing = sublane.ok("account", "list").stdout
    assert "gemini_pro cold" in listing and "claude cold" in listing


def test_import_antigravity_file(sublane: Sublane) -> None:
    file = sublane.root / "ag.json"
    file.write_text(json.dumps({"accounts": [{
        "email": "me@example.com", "token": {
            "access_token": "ya29.ag", "refresh_token": "1//rt-ag",
            "expiry_timestamp": 1_900_000_500, "project_id": "proj-42"}}]}))
    sublane.ok("account", "import-antigravity", "--file", str(file), "--name", "work-google")
    [account] = sublane.accounts()
    assert (account["name"], account["provider"]) == ("work-google", "antigravity")
    assert json.loads(sublane.keyring_secret(account_secret(account["id"]))) == {
        "access_token": "ya29.ag", "refresh_token": "1//rt-ag", "expires_at": 1_900_000_500.0,
        "project_id": "proj-42"}


def test_account_add_takes_a_google_login_on_stdin(sublane: Sublane) -> None:
    secret = {"access_token": "ya29.x", "refresh_token": "1//rt", "expires_at": 1_900_000_000,
              "project_id": "p-1"}
    sublane.ok("account", "add", "--provider", "antigravity", "--name", "g",
               input=json.dumps(secret))
    [account] = sublane.accounts()
    assert json.loads(sublane.keyring_secret(account_secret(account["id"]))) == dict(
        secret, expires_at=1_900_000_000.0)


def test_bad_google_logins_are_one_clear_line_and_change_nothing(sublane: Sublane) -> None:
    no_refresh = {"access_token": "ya29.x", "expires_at": 1_900_000_000}
    result = sublane.run("account", "add", "--provider", "antigravity", "--name", "g",
                         input=json.dumps(no_refresh))
    line = one_error_line(result)
    assert '"refresh_token"' in line and "cannot renew" in line
    assert "ya29.x" not in result.stderr
    result = sublane.run("account", "add", "--provider", "antigravity", "--name", "g",
                         input=json.dumps({"api_key": "AIza-something"}))
    assert "not an api_key" in one_error_line(result)

    missing = sublane.run("account", "import-gemini")
    assert ".gemini/oauth_creds.json" in one_error_line(missing)
    assert "sign in with Google" in one_error_line(missing)
    unreadable = sublane.root / "locked.json"
    unreadable.write_text(json.dumps(GEMINI_CREDS))
    unreadable.chmod(0)
    if os.geteuid() != 0:  # root reads anything; the permission case needs a normal user
        result = sublane.run("account", "import-gemini", "--file", str(unreadable))
        assert "cannot read" in one_error_line(result)
    assert "cannot read" in one_error_line(  # a directory: unreadable even for root
        sublane.run("account", "import-gemini", "--file", str(sublane.root)))
    garbage = sublane.root / "garbage.json"
    garbage.write_text("{not json")
    assert "not valid JSON" in one_error_line(
        sublane.run("account", "import-gemini", "--file", str(garbage)))
    wrong = sublane.root / "wrong.json"
    wrong.write_text(json.dumps({"hello": "world"}))
    assert "not a Gemini CLI credentials file" in one_error_line(
        sublane.run("account", "import-gemini", "--file", str(wrong)))
    no_rt = sublane.root / "nort.json"
    no_rt.write_text(json.dumps({k: v for k, v in GEMINI_CREDS.items()
                                 if k != "refresh_token"}))
    assert '"refresh_token"' in one_error_line(
        sublane.run("account", "import-gemini", "--file", str(no_rt)))
    assert "not an Antigravity account file" in one_error_line(
        sublane.run("account", "import-antigravity", "--file", str(wrong)))
    assert sublane.accounts() == []
