"""R-LOGIN-4 through the real `sublane` command: a credential deleted from the keyring (with the
keyring library's own file backend, as another program would) shows in `account list` with its
reason, `account verify` says "credential missing" and exits 1, and `account add --replace` or
an import of the same login mends the account in place — with and without a running server."""

from __future__ import annotations

import asyncio
import json

import anthropic
import pytest
from keyrings.alt.file import PlaintextKeyring

from sublane_desktop.accounts.secrets import SERVICE, account_secret
from tests.cli.conftest import Sublane
from tests.cli.test_cli import one_error_line
from tests.fake_upstream import CLAUDE_CODE_HEADERS

MISSING = "credential missing from the keyring — sign in again"
OLD = {"access_token": "sk-ant-oat01-old-3b7e", "refresh_token": "rt-old-3b7e", "expires_at": 4e9}
NEW = {"access_token": "sk-ant-oat01-new-a51c", "refresh_token": "rt-new-a51c", "expires_at": 4e9}
ASK = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}
LEAKS = ("sk-ant-oat01-old", "rt-old", "LookupError", "Error:", "Traceback", "keyring.cfg")


def add(sublane: Sublane, name: str, secret: dict, *extra: str):
    return sublane.run(
        "account",
        "add",
        "--provider",
        "anthropic",
        "--name",
        name,
        *extra,
        input=json.dumps(secret),
    )


def delete_entry(sublane: Sublane, account_id: int) -> None:
    backend = PlaintextKeyring()
    backend.file_path = str(sublane.keyring_file)
    backend.delete_password(SERVICE, account_secret(account_id))


def by_name(sublane: Sublane) -> dict[str, dict]:
    return {a["name"]: a for a in sublane.accounts()}


def no_leak(*texts: str) -> None:
    for text in texts:
        for leak in LEAKS:
            assert leak not in text, f"{leak!r} in {text!r}"


def test_without_a_server_list_and_verify_say_credential_missing_and_replace_mends(
    sublane: Sublane,
) -> None:
    assert add(sublane, "work", OLD).returncode == 0
    assert add(sublane, "spare", {"api_key": "sk-ant-api03-spare"}).returncode == 0
    work = by_name(sublane)["work"]
    delete_entry(sublane, work["id"])

    accounts = by_name(sublane)
    assert accounts["work"]["state"] == "auth_failed"
    assert accounts["work"]["auth_reason"] == MISSING
    assert accounts["spare"]["state"] == "ok" and accounts["spare"]["auth_reason"] is None
    table = sublane.ok("account", "list").stdout
    [line] = [i for i, text in enumerate(table.splitlines()) if " work " in text]
    assert "auth_failed" in table.splitlines()[line]
    assert table.splitlines()[line + 1].strip() == MISSING

    verify = sublane.run("account", "verify", "work")
    assert verify.returncode == 1
    assert verify.stdout.strip() == f"work: auth_failed — {MISSING}"
    assert verify.stderr == ""
    no_leak(verify.stdout, table)
    assert json.loads(sublane.run("account", "verify", "work", "--json").stdout) == {
        "id": work["id"],
        "name": "work",
        "provider": "anthropic",
        "result": "auth_failed",
        "detail": MISSING,
    }

    # without --replace the name is refused, with the way out; nothing changes
    refused = add(sublane, "work", NEW)
    assert one_error_line(refused).endswith(
        "account 'work' already exists; pass --replace to give it this credential in place"
    )
    assert sublane.keyring_secret(account_secret(work["id"])) is None

    mended = add(sublane, "work", NEW, "--replace")
    assert mended.returncode == 0, mended.stderr
    assert mended.stdout.startswith(f"updated anthropic account work (id {work['id']}")
    accounts = by_name(sublane)
    assert accounts["work"]["state"] == "ok" and accounts["work"]["auth_reason"] is None
    assert [a["id"] for a in accounts.values()] == [work["id"], accounts["spare"]["id"]]
    assert json.loads(sublane.keyring_secret(account_secret(work["id"]))) == NEW
    # a healthy account still answers the offline verify with "start the server"
    assert "start the server" in one_error_line(sublane.run("account", "verify", "work"))


@pytest.mark.parametrize("mend", ["add --replace", "import"])
async def test_with_a_server_the_request_list_and_verify_say_why_and_a_mend_needs_no_restart(
    sublane: Sublane, upstream, mend: str
) -> None:
    sublane.env["SUBLANE_ANTHROPIC_BASE_URL"] = upstream.url
    sublane.env["SUBLANE_OAUTH_BASE_URL"] = upstream.url
    upstream.usage_for["*"] = {"five_hour": None, "seven_day": None}
    assert add(sublane, "work", OLD).returncode == 0
    work = by_name(sublane)["work"]["id"]
    key = sublane.ok("key", "create", "--name", "k").stdout.split()[0]
    server = sublane.serve()
    client = anthropic.AsyncAnthropic(
        base_url=server.url, api_key=key, max_retries=0, default_headers=CLAUDE_CODE_HEADERS
    )
    await client.messages.create(**ASK)

    delete_entry(sublane, work)
    with pytest.raises(anthropic.APIStatusError) as refused:
        await client.messages.create(**ASK)
    message = refused.value.body["error"]["message"]
    if "no usable" not in message:  # this request was the first to see it
        assert message.startswith("account work: credential missing from the keyring; sign in")
        assert "sublane account add --replace --name work" in message
    else:  # the server's own look (every 5 s, real time here) saw it first
        assert message.endswith("account work needs to be signed in again")
    no_leak(json.dumps(refused.value.body))

    async def run(*args: str, **kw: str):  # in a thread: the fake upstream answers meanwhile
        return await asyncio.to_thread(sublane.run, *args, **kw)

    listed = json.loads((await run("account", "list", "--json")).stdout)
    assert [(a["state"], a["auth_reason"]) for a in listed] == [("auth_failed", MISSING)]
    verify = await run("account", "verify", "work")
    assert verify.returncode == 1 and "credential missing" in verify.stdout
    assert verify.stdout.strip() == f"work: auth_failed — {MISSING}"
    no_leak(verify.stdout, verify.stderr)

    if mend == "import":
        creds = sublane.root / "claude.json"
        creds.write_text(
            json.dumps(
                {
                    "claudeAiOauth": {
                        "accessToken": NEW["access_token"],
                        "refreshToken": NEW["refresh_token"],
                        "expiresAt": 4_000_000_000_000,
                    }
                }
            )
        )
        done = await run("account", "import-claude-code", "--file", str(creds), "--name", "work")
    else:
        done = await run(
            "account",
            "add",
            "--provider",
            "anthropic",
            "--name",
            "work",
            "--replace",
            input=json.dumps(NEW),
        )
    assert done.returncode == 0, done.stderr
    listed = json.loads((await run("account", "list", "--json")).stdout)
    assert [(a["id"], a["state"], a["auth_reason"]) for a in listed] == [(work, "ok", None)]
    await client.messages.create(**ASK)  # no restart, no Remove
    assert upstream.tokens_served()[-1] == NEW["access_token"]
    ok = await run("account", "verify", "work")
    assert ok.returncode == 0 and ok.stdout.startswith("work: ok")
