"""`sublane requests`: the same history as the API, from a running server or the database."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from tests.proxy.test_history_api import ask, member_key


async def sublane(tmp_path: Path, data_dir: Path, *args: str) -> tuple[int, str, str]:
    """The real command in a subprocess (the loop keeps serving the in-process server)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SUBLANE_", "KEYRING_"))}
    env.update(
        {
            "PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring",
            "KEYRING_PROPERTY_FILE_PATH": str(tmp_path / "keyring.cfg"),  # the harness's keyring
            "HOME": str(tmp_path),
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sublane_desktop",
        "--data-dir",
        str(data_dir),
        "requests",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode, out.decode(), err.decode()


async def test_requests_through_the_running_server_and_offline(harness, tmp_path):
    await harness.add_account("work")
    alice, _, alice_id = await member_key(harness, "alice")
    admin_key = await harness.create_key("admin-laptop")
    theirs = await ask(harness, alice)
    mine = await ask(harness, admin_key)
    await harness.service.flush_records()
    data_dir = harness.service.data_dir

    code, out, err = await sublane(tmp_path, data_dir, "--json")
    assert code == 0, err
    page = json.loads(out)
    assert [i["request_id"] for i in page["items"]] == [mine, theirs]
    assert page["items"][0]["account_name"] == "work"

    code, out, err = await sublane(tmp_path, data_dir, "--mine", "--json")
    assert code == 0, err
    assert [i["request_id"] for i in json.loads(out)["items"]] == [mine]

    code, out, err = await sublane(tmp_path, data_dir, "--user-id", str(alice_id))
    assert code == 0, err
    assert theirs in out and mine not in out and "STARTED" in out and "60%" in out

    code, out, err = await sublane(tmp_path, data_dir, "--outcome", "bogus")
    assert code == 1 and out == ""
    assert err.strip().startswith("sublane: error: --outcome: outcome must be one of")
    assert len(err.strip().splitlines()) == 1

    code, _, err = await sublane(tmp_path, data_dir, "--mine", "--user-id", "2")
    assert code == 1 and "drop --mine" in err

    await harness.service.stop(drain_timeout=2)  # offline: the command reads the database
    code, out, err = await sublane(tmp_path, data_dir, "--json", "--request-id", theirs)
    assert code == 0, err
    [item] = json.loads(out)["items"]
    assert item["user_id"] == alice_id and item["cache_hit_rate"] == "60%"
    code, out, err = await sublane(tmp_path, data_dir, "--mine")
    assert code == 0 and mine in out and theirs not in out
    code, _, err = await sublane(tmp_path, data_dir, "--from", "20", "--until", "10")
    assert code == 1 and "--from: from must not be later than until" in err
