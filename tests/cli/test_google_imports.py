"""Google logins through the real `sublane` command (R-AG-1, R-CLI-2): `account import-gemini`
reads Gemini CLI's `~/.gemini/oauth_creds.json`, `account import-antigravity` an Antigravity
account file, `account add --provider antigravity` a Google login on stdin. Bad input is one
clear stderr line and changes nothing."""

from __future__ import annotations

import asyncio
import json
import os

import aiohttp
import anthropic

from sublane_desktop.accounts.secrets import account_secret
from sublane_desktop.providers.antigravity import CLIENTS
from tests.fake_antigravity import AgReply

from .conftest import Sublane
from .test_cli import one_error_line

GEMINI_CREDS = {
    "access_token": "ya29.gemini-one",
    "refresh_token": "1//rt-gemini",
    "scope": "https://www.googleapis.com/auth/cloud-platform",
    "token_type": "Bearer",
    "id_token": "x.y.z",
    "expiry_date": 1_900_000_000_000,
}


def test_import_gemini_from_the_home_dir(sublane: Sublane) -> None:
    creds = sublane.home / ".gemini" / "oauth_creds.json"
    creds.parent.mkdir()
    creds.write_text(json.dumps(GEMINI_CREDS))
    result = sublane.ok("account", "import-gemini")
    assert "added antigravity account gemini" in result.stdout
    [account] = sublane.accounts()
    assert (account["name"], account["provider"], account["state"]) == (
        "gemini",
        "antigravity",
        "ok",
    )
    assert set(account["gauges"]) == {"claude", "gemini_pro", "gemini_flash"}
    assert account["gauges"]["gemini_pro"]["cold"] is True
    client_id, client_secret = CLIENTS["gemini-cli"]
    assert json.loads(sublane.keyring_secret(account_secret(account["id"]))) == {
        "access_token": "ya29.gemini-one",
        "refresh_token": "1//rt-gemini",
        "expires_at": 1_900_000_000.0,
        "client_id": client_id,
        "client_secret": client_secret,
    }
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
    file.write_text(
        json.dumps(
            {
                "accounts": [
                    {
                        "email": "me@example.com",
                        "token": {
                            "access_token": "ya29.ag",
                            "refresh_token": "1//rt-ag",
                            "expiry_timestamp": 1_900_000_500,
                            "project_id": "proj-42",
                        },
                    }
                ]
            }
        )
    )
    sublane.ok("account", "import-antigravity", "--file", str(file), "--name", "work-google")
    [account] = sublane.accounts()
    assert (account["name"], account["provider"]) == ("work-google", "antigravity")
    assert json.loads(sublane.keyring_secret(account_secret(account["id"]))) == {
        "access_token": "ya29.ag",
        "refresh_token": "1//rt-ag",
        "expires_at": 1_900_000_500.0,
        "project_id": "proj-42",
    }


def test_account_add_takes_a_google_login_on_stdin(sublane: Sublane) -> None:
    secret = {
        "access_token": "ya29.x",
        "refresh_token": "1//rt",
        "expires_at": 1_900_000_000,
        "project_id": "p-1",
    }
    sublane.ok(
        "account", "add", "--provider", "antigravity", "--name", "g", input=json.dumps(secret)
    )
    [account] = sublane.accounts()
    assert json.loads(sublane.keyring_secret(account_secret(account["id"]))) == dict(
        secret, expires_at=1_900_000_000.0
    )


def test_bad_google_logins_are_one_clear_line_and_change_nothing(sublane: Sublane) -> None:
    no_refresh = {"access_token": "ya29.x", "expires_at": 1_900_000_000}
    result = sublane.run(
        "account", "add", "--provider", "antigravity", "--name", "g", input=json.dumps(no_refresh)
    )
    line = one_error_line(result)
    assert '"refresh_token"' in line and "cannot renew" in line
    assert "ya29.x" not in result.stderr
    result = sublane.run(
        "account",
        "add",
        "--provider",
        "antigravity",
        "--name",
        "g",
        input=json.dumps({"api_key": "AIza-something"}),
    )
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
        sublane.run("account", "import-gemini", "--file", str(sublane.root))
    )
    garbage = sublane.root / "garbage.json"
    garbage.write_text("{not json")
    assert "not valid JSON" in one_error_line(
        sublane.run("account", "import-gemini", "--file", str(garbage))
    )
    wrong = sublane.root / "wrong.json"
    wrong.write_text(json.dumps({"hello": "world"}))
    assert "not a Gemini CLI credentials file" in one_error_line(
        sublane.run("account", "import-gemini", "--file", str(wrong))
    )
    no_rt = sublane.root / "nort.json"
    no_rt.write_text(json.dumps({k: v for k, v in GEMINI_CREDS.items() if k != "refresh_token"}))
    assert '"refresh_token"' in one_error_line(
        sublane.run("account", "import-gemini", "--file", str(no_rt))
    )
    assert "not an Antigravity account file" in one_error_line(
        sublane.run("account", "import-antigravity", "--file", str(wrong))
    )
    assert sublane.accounts() == []


async def test_done_when_a_gemini_cli_login_drives_gemini_from_claude_code(
    sublane: Sublane, antigravity_upstream
) -> None:
    """Issue 12's "done when", through the real command: import the Gemini CLI login (expired,
    no project), serve, and let the anthropic SDK drive gemini-3.1-pro-high with a tool call over
    two streamed turns; the history shows tokens and cache-hit rate, the pool its quota."""
    google = antigravity_upstream
    creds = sublane.home / ".gemini" / "oauth_creds.json"
    creds.parent.mkdir()
    creds.write_text(json.dumps(dict(GEMINI_CREDS, expiry_date=1_000_000_000_000)))  # expired
    google.refresh_tokens["1//rt-gemini"] = "ya29.renewed"
    sublane.env.update(
        {"SUBLANE_ANTIGRAVITY_BASE_URL": google.url, "SUBLANE_GOOGLE_OAUTH_BASE_URL": google.url}
    )
    sublane.ok("account", "import-gemini")
    key = sublane.ok("key", "create", "--name", "claude-code").stdout.split()[0]
    admin = sublane.ok("admin-token").stdout.strip()
    server = sublane.serve()
    google.script(
        AgReply(
            text="Listing.", thought="I should run ls.", tool_calls=[("Bash", {"command": "ls"})]
        ),
        AgReply(text="a.txt and b.txt."),
    )
    client = anthropic.AsyncAnthropic(
        base_url=server.url,
        api_key=key,
        max_retries=0,
        default_headers={"x-claude-code-session-id": "cc-1"},
    )
    tools = [
        {
            "name": "Bash",
            "description": "Run a command",
            "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
        }
    ]
    ask = [{"role": "user", "content": "what files are here?"}]
    async with client.messages.stream(
        model="gemini-3.1-pro-high", max_tokens=1024, messages=ask, tools=tools
    ) as stream:
        first = await stream.get_final_message()
    call = first.content[-1]
    assert (call.type, call.input) == ("tool_use", {"command": "ls"})
    async with client.messages.stream(
        model="gemini-3.1-pro-high",
        max_tokens=1024,
        tools=tools,
        messages=[
            *ask,
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": call.id, "content": "a.txt b.txt"}
                ],
            },
        ],
    ) as stream:
        second = await stream.get_final_message()
    assert second.content[0].text == "a.txt and b.txt."
    # the expired login was renewed with Gemini CLI's own client; the project was discovered
    assert google.refreshes[0]["client_id"] == CLIENTS["gemini-cli"][0]
    assert google.load_calls == ["ya29.renewed"]
    assert {s.token for s in google.seen} == {"ya29.renewed"}

    async def api(path: str) -> dict:
        async with (
            aiohttp.ClientSession() as s,
            s.get(server.url + path, headers={"Authorization": f"Bearer {admin}"}) as r,
        ):
            return await r.json()

    deadline = asyncio.get_running_loop().time() + 10
    while True:  # the server writes records and quota from its own process
        items = (await api("/api/requests"))["items"]
        gauges = (await api("/api/accounts/runtime"))["accounts"][0]["gauges"]
        if len(items) == 2 and not gauges["gemini_pro"]["cold"]:
            break
        assert asyncio.get_running_loop().time() < deadline, (items, gauges)
        await asyncio.sleep(0.05)
    assert {(i["provider"], i["model"], i["outcome"], i["cache_hit_rate"]) for i in items} == {
        ("antigravity", "gemini-3.1-pro-high", "success", "75%")
    }
    assert items[0]["input_tokens"] == 200 and items[0]["cached_tokens"] == 150
    assert gauges["gemini_pro"]["utilization"] == 0.0
    await client.close()
    assert server.interrupt() == 0
