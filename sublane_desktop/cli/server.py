"""The server and its clients: `sublane serve`, `status`, `env` and `run`."""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.parse

from sublane_desktop.cli.context import DEFAULT_PORT, CliError, Context
from sublane_desktop.cli.keys import new_client_key


def cmd_gui(ctx: Context) -> int:
    """`sublane` with no command: the tray app, or the proxy alone when there is no display."""
    from sublane_desktop.app import has_display, run_gui, run_serve

    if not has_display():
        print(
            "no display found: running the proxy only (same as `sublane serve`)",
            file=sys.stderr,
            flush=True,
        )
        return run_serve(ctx.data_dir, ctx.host, ctx.port)
    return run_gui(ctx.data_dir, ctx.host, ctx.port)


def cmd_serve(ctx: Context, args: argparse.Namespace) -> int:
    from sublane_desktop.app import run_serve

    return run_serve(ctx.data_dir, ctx.host, ctx.port)


def cmd_status(ctx: Context, args: argparse.Namespace) -> int:
    server = ctx.running_server()
    if server is None:
        if args.json:
            print(json.dumps({"running": False}))
        else:
            print(f"no SubLane server is running for {ctx.data_dir}")
        return 1
    runtime = ctx.api(server, "GET", "/api/accounts/runtime")
    states: dict[str, int] = {}
    for a in runtime["accounts"]:
        states[a["state"]] = states.get(a["state"], 0) + 1
    summary = {
        "running": True,
        "url": server["url"],
        "host": server["host"],
        "port": server["port"],
        "pid": server["pid"],
        "accounts": len(runtime["accounts"]),
        "states": states,
        "in_flight": runtime["in_flight"],
        "cap": runtime["cap"],
        "records_dropped": server.get("health", {}).get("records_dropped", 0),
        # what holds each held account, on which evidence and until when (R-OBS-3)
        "holds": [
            {"account": a["name"], **hold}
            for a in runtime["accounts"]
            for hold in a.get("holds") or []
        ],
    }
    if args.json:
        print(json.dumps(summary))
    else:
        by_state = ", ".join(f"{n} {s}" for s, n in sorted(states.items())) or "no accounts"
        print(
            f"running on {server['url']} (pid {server['pid']}); {by_state}; "
            f"{runtime['in_flight']}/{runtime['cap']} in flight"
        )
        for hold in summary["holds"]:
            print(f"  {hold['account']}: {hold['words']}")
        if summary["records_dropped"]:
            print(
                f"{summary['records_dropped']} request records could not be saved; see the"
                " server log"
            )
    return 0


def endpoint_url(ctx: Context) -> str:
    """The running server's URL, else the configured host and port."""
    from sublane_desktop.client_env import base_url

    server = ctx.running_server()
    if server is not None:
        return base_url(server["host"], server["port"])
    port = ctx.port
    if port is None:
        port = int(ctx.offline.setting("server.port", DEFAULT_PORT))
    if port == 0:
        raise CliError(
            "no server is running and its port is picked at start (0): start it "
            "first (`sublane serve`) or give --port"
        )
    return base_url(ctx.host, port)


def cmd_env(ctx: Context, args: argparse.Namespace) -> int:
    import datetime

    from sublane_desktop.client_env import client_variables, default_shell, load_hint, render

    shell = args.shell or default_shell()
    url = endpoint_url(ctx)
    # A key is shown only once, so there is none to reuse: every call makes a fresh one.
    name = f"env-{datetime.date.today().isoformat()}"
    row, key = new_client_key(ctx, name)
    sys.stdout.write(render(client_variables(url, key), shell))
    print(
        f"created client key {row['id']} ({name}) for {row['user']}; a key is shown only "
        f"once, so each `sublane env` makes a new one (`sublane key revoke {row['id']}` to "
        "retire it). "
        f"Load with: {load_hint(shell)}",
        file=sys.stderr,
    )
    return 0


def run_key(ctx: Context) -> str:
    """The key `sublane run` uses, kept in the keyring and reused while it is valid."""
    key = ctx.offline.run_key()
    if key:
        return key
    row, key = new_client_key(ctx, "run")
    ctx.offline.keep_run_key(key)
    print(
        f"created client key {row['id']} (run) for {row['user']}; `sublane run` keeps it in "
        "the keyring and reuses it",
        file=sys.stderr,
    )
    return key


def cmd_run(ctx: Context, args: argparse.Namespace) -> int:
    from sublane_desktop.client_env import base_url, client_variables
    from sublane_desktop.launcher import BackgroundServer, LaunchError, run_command

    command = list(args.cmd)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise CliError("nothing to run: sublane run -- CMD [ARGS …]")
    key = run_key(ctx)
    started = None
    try:
        server = ctx.running_server()
        if server is not None:
            url = base_url(server["host"], server["port"])
        else:
            try:
                started = BackgroundServer.start(ctx.data_dir, ctx.host, ctx.port)
            except LaunchError as exc:
                raise CliError(str(exc)) from None
            listening = urllib.parse.urlsplit(started.url)
            url = base_url(listening.hostname or ctx.host, listening.port or DEFAULT_PORT)
            print(
                f"sublane: started a server on {url} for this command; it stops when the "
                "command ends",
                file=sys.stderr,
            )
        try:
            return run_command(command, {**os.environ, **client_variables(url, key)})
        except LaunchError as exc:  # the command itself could not start: shell-style 127
            print(f"sublane: error: {exc}", file=sys.stderr)
            return 127
    finally:
        if started is not None:
            started.stop()
