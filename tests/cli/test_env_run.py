"""`sublane env` and `sublane run` (SPEC §2), driven as real subprocesses."""

from __future__ import annotations

import datetime
import json
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from .conftest import LOCAL, Sublane

VARIABLES = (
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "SUBLANE_KEY",
    # Claude Code's first-party behaviour behind SubLane (R-WF-8, client_env.FIRST_PARTY).
    "_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL",
)
PATTERNS = {
    "sh": re.compile(r"^export (\w+)='([^']*)'$"),
    "fish": re.compile(r"^set -gx (\w+) '([^']*)'$"),
    "powershell": re.compile(r"^\$env:(\w+) = '([^']*)'$"),
}


def parse(output: str, shell: str) -> dict[str, str]:
    found = {}
    for line in output.splitlines():
        match = PATTERNS[shell].match(line)
        assert match, f"not {shell} syntax: {line!r}"
        found[match[1]] = match[2]
    return found


def me_requests(url: str, key: str) -> int:
    req = urllib.request.Request(url + "/api/me/requests")
    req.add_header("Authorization", f"Bearer {key}")
    try:
        with LOCAL.open(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def refuses(url: str) -> bool:
    try:
        LOCAL.open(url + "/healthz", timeout=2)
    except (urllib.error.URLError, OSError):
        return True
    return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- env --------------------------------------------------------------------------------------


@pytest.mark.parametrize("shell", ["sh", "fish", "powershell"])
def test_env_prints_each_shells_syntax_with_a_fresh_key(sublane: Sublane, shell: str) -> None:
    result = sublane.ok("env", "--shell", shell, "--port", "9123")
    values = parse(result.stdout, shell)
    assert list(values) == list(VARIABLES)
    key = values["ANTHROPIC_AUTH_TOKEN"]
    assert key.startswith("sl-") and len(key) > 20
    assert values["OPENAI_API_KEY"] == values["SUBLANE_KEY"] == key
    assert values["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9123"  # no /v1 for Claude Code
    assert values["OPENAI_BASE_URL"] == "http://127.0.0.1:9123/v1"
    assert values["_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL"] == "1"
    assert "shown only once" in result.stderr and key not in result.stderr

    name = f"env-{datetime.date.today().isoformat()}"
    keys = sublane.json("key", "list", "--json")
    assert [(k["name"], k["user"], k["revoked"]) for k in keys] == [(name, "admin", False)]
    assert key.startswith(keys[0]["prefix"])


def test_env_output_is_what_sh_evaluates(sublane: Sublane) -> None:
    result = sublane.ok("env", "--shell", "sh", "--port", "9124")
    shown = subprocess.run(
        ["sh", "-c", result.stdout + 'printf "%s|%s" "$ANTHROPIC_BASE_URL" "$SUBLANE_KEY"'],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    ).stdout
    values = parse(result.stdout, "sh")
    assert shown == f"http://127.0.0.1:9124|{values['SUBLANE_KEY']}"


def test_each_env_call_makes_a_new_key(sublane: Sublane) -> None:
    first = parse(sublane.ok("env").stdout, "sh")
    second = parse(sublane.ok("env").stdout, "sh")
    assert first["SUBLANE_KEY"] != second["SUBLANE_KEY"]
    assert first["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8765"  # the configured default
    assert len(sublane.json("key", "list", "--json")) == 2


def test_env_points_at_the_running_server_and_its_key_works(sublane: Sublane) -> None:
    server = sublane.serve()
    values = parse(sublane.ok("env", "--shell", "sh").stdout, "sh")
    assert values["ANTHROPIC_BASE_URL"] == server.url  # the status file, not the default port
    assert me_requests(server.url, values["ANTHROPIC_AUTH_TOKEN"]) == 200
    assert me_requests(server.url, "sl-not-a-key") == 401


def test_env_rejects_an_unknown_shell(sublane: Sublane) -> None:
    result = sublane.run("env", "--shell", "tcsh")
    assert result.returncode == 2 and "tcsh" in result.stderr
    assert sublane.json("key", "list", "--json") == []


# --- run --------------------------------------------------------------------------------------

CLIENT = r"""
import json, os, sys, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
base = os.environ["ANTHROPIC_BASE_URL"]
with opener.open(base + "/healthz", timeout=10) as resp:
    health = json.loads(resp.read())
req = urllib.request.Request(base + "/api/me/requests")
req.add_header("Authorization", "Bearer " + os.environ["ANTHROPIC_AUTH_TOKEN"])
with opener.open(req, timeout=10) as resp:
    mine = resp.status
json.dump({"base": base, "openai": os.environ["OPENAI_BASE_URL"], "health": health,
           "mine": mine, "key": os.environ["SUBLANE_KEY"]}, open(sys.argv[1], "w"))
sys.exit(3)
"""


def test_run_starts_a_server_runs_the_command_and_stops_the_server(
    sublane: Sublane, tmp_path
) -> None:
    report = tmp_path / "report.json"
    result = sublane.run("run", "--port", "0", "--", sys.executable, "-c", CLIENT, str(report))
    assert result.returncode == 3, result.stderr  # the command's own exit status
    seen = json.loads(report.read_text())
    assert seen["health"]["ok"] is True
    assert seen["base"].startswith("http://127.0.0.1:") and seen["mine"] == 200
    assert seen["openai"] == seen["base"] + "/v1"
    assert "started a server" in result.stderr

    # The server it started is gone: nothing answers, no status file, `status` says so.
    assert refuses(seen["base"])
    assert not (sublane.data_dir / "server.json").exists()
    assert sublane.run("status").returncode == 1
    log = (sublane.data_dir / "run-server.log").read_text()
    assert "stopping" in log  # it was stopped with Ctrl-C (drained), not killed

    # A second run reuses the key kept in the keyring.
    again = tmp_path / "again.json"
    assert (
        sublane.run("run", "--port", "0", "--", sys.executable, "-c", CLIENT, str(again)).returncode
        == 3
    )
    assert json.loads(again.read_text())["key"] == seen["key"]
    keys = sublane.json("key", "list", "--json")
    assert [k["name"] for k in keys] == ["run"]


def test_run_uses_a_running_server_and_leaves_it_running(sublane: Sublane, tmp_path) -> None:
    server = sublane.serve()
    report = tmp_path / "report.json"
    result = sublane.run("run", "--", sys.executable, "-c", CLIENT, str(report))
    assert result.returncode == 3, result.stderr
    assert json.loads(report.read_text())["base"] == server.url
    assert "started a server" not in result.stderr
    assert server.proc.poll() is None and not refuses(server.url)


def test_run_passes_exit_status_zero_and_stops_on_a_missing_command(sublane: Sublane) -> None:
    port = free_port()
    ok = sublane.run("run", "--port", str(port), "--", sys.executable, "-c", "pass")
    assert ok.returncode == 0, ok.stderr
    missing = sublane.run("run", "--port", str(port), "--", "no-such-command-xyz")
    assert missing.returncode == 127
    assert "command not found: no-such-command-xyz" in missing.stderr
    assert refuses(f"http://127.0.0.1:{port}")


def test_run_without_a_command_is_one_error_line(sublane: Sublane) -> None:
    result = sublane.run("run")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "sublane: error: nothing to run: sublane run -- CMD [ARGS …]"
    ]


def test_run_reports_a_server_that_cannot_start(sublane: Sublane) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = sublane.run("run", "--port", str(port), "--", sys.executable, "-c", "pass")
    assert result.returncode == 1
    # The cause itself (more in tests/cli/test_lifecycle.py), not "exited before listening".
    assert f"could not start the server: port {port} on 127.0.0.1 is already in use" in (
        result.stderr
    )
