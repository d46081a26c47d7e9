"""The `sublane` command (SPEC §2). argparse, one clear stderr line per failure (R-CLI-2).

Levers that change a running pool (pause, clear-cooldown, limits) go through the running
server's management API, so the live state and the database never disagree; with no server
they change the database directly.

One module per command group: `accounts`, `levers`, `keys`, `users`, `settings`, `requests`,
`server` (serve, status, env, run), `simulate`; `context` holds what they share.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from sublane_desktop.cli import (
    accounts,
    keys,
    levers,
    login,
    requests,
    server,
    settings,
    simulate,
    users,
)
from sublane_desktop.cli.accounts import PROVIDERS
from sublane_desktop.cli.context import DEFAULT_PORT, CliError, Context, default_data_dir

__all__ = [
    "DEFAULT_PORT",
    "PROVIDERS",
    "CliError",
    "Context",
    "build_parser",
    "default_data_dir",
    "main",
]

# --- parser -----------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one stderr line (R-CLI-2), not usage text plus a line."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _globals(parser: argparse.ArgumentParser, top: bool) -> None:
    default = None if top else argparse.SUPPRESS
    parser.add_argument("--data-dir", type=Path, default=default, help="data directory")
    parser.add_argument("--host", default=default, help="bind address (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=int,
        default=default,
        help=f"port (default {DEFAULT_PORT}; 0 picks a free one)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sublane", description="SubLane Desktop")
    _globals(parser, top=True)
    sub = parser.add_subparsers(dest="command")

    def command(parent, name: str, help_text: str) -> argparse.ArgumentParser:
        p = parent.add_parser(name, help=help_text)
        _globals(p, top=False)
        return p

    command(sub, "serve", "run the proxy without a GUI")

    account = command(sub, "account", "manage accounts")
    acc = account.add_subparsers(dest="account_command", required=True)
    add = command(acc, "add", "add an account; secret JSON on stdin")
    add.add_argument("--provider", required=True)
    add.add_argument("--name", required=True)
    add.add_argument("--group", default="default")
    add.add_argument("--base-url")
    add.add_argument("--max-concurrency", type=int, default=2)
    add.add_argument(
        "--replace",
        action="store_true",
        help="give the existing account of this name the new credential (mends it in place)",
    )
    for name in ("import-claude-code", "import-codex", "import-gemini", "import-antigravity"):
        imp = command(acc, name, "import an installed CLI's login")
        imp.add_argument("--file", type=Path)
        imp.add_argument("--name")
        imp.add_argument("--group", default="default")
        imp.add_argument("--base-url")
        imp.add_argument(
            "--detach",
            action="store_true",
            help="never read or write the tool's login again (the first to refresh then signs"
            " the other out; sign in for a family of SubLane's own)",
        )
    login.add_arguments(
        command(acc, "login", "sign an account in with the browser (new, or NAME again)")
    )
    lst = command(acc, "list", "accounts with state, gauges, in-flight and limit")
    lst.add_argument("--json", action="store_true")
    for name in ("pause", "unpause", "clear-cooldown", "switch", "disable", "enable"):
        lever = command(acc, name, f"{name} an account")
        lever.add_argument("account")
    verify = command(acc, "verify", "check that an account's credential works (one cheap call)")
    verify.add_argument("account")
    verify.add_argument("--json", action="store_true")
    limit = command(acc, "set-limit", "set an account's concurrency limit (1-8)")
    limit.add_argument("account")
    limit.add_argument("limit", type=int)

    key = command(sub, "key", "manage client keys")
    keys = key.add_subparsers(dest="key_command", required=True)
    create = command(keys, "create", "print a new client key once")
    create.add_argument("--name", required=True)
    create.add_argument("--user")
    create.add_argument("--group", default="default")
    klist = command(keys, "list", "list client keys")
    klist.add_argument("--json", action="store_true")
    revoke = command(keys, "revoke", "revoke a client key (id or name)")
    revoke.add_argument("key")

    user = command(sub, "user", "manage members")
    users = user.add_subparsers(dest="user_command", required=True)
    uadd = command(users, "add", "add a member")
    uadd.add_argument("name")

    command(sub, "admin-token", "print the administrator token")
    command(sub, "reset-usage", "every quota gauge back to cold")
    cfg = command(sub, "settings", "show or change settings (scheduler.mode, ceilings, cap…)")
    cfg.add_argument("key", nargs="?")
    cfg.add_argument("value", nargs="?", help='a JSON value, e.g. 0.95, "round_robin"')
    status = command(sub, "status", "is a server running, and the pool summary")
    status.add_argument("--json", action="store_true")
    requests = command(sub, "requests", "recent request records, newest first (50 a page)")
    requests.add_argument(
        "--mine", action="store_true", help="only the administrator's own requests (personal view)"
    )
    for flag in (
        "--outcome",
        "--model",
        "--key-id",
        "--request-id",
        "--user-id",
        "--account-id",
        "--cursor",
    ):
        requests.add_argument(flag)
    requests.add_argument(
        "--cache-miss",
        metavar="CAUSE",
        help="first_turn, account_switch, ttl_expired, prefix_changed or any",
    )
    requests.add_argument(
        "--misses",
        action="store_true",
        help="cache misses by cause: count, re-read tokens, share of input",
    )
    requests.add_argument("--from", dest="since", metavar="UNIX_SECONDS", help="inclusive")
    requests.add_argument("--until", metavar="UNIX_SECONDS", help="exclusive")
    requests.add_argument("--json", action="store_true")
    env = command(
        sub,
        "env",
        "print the variables that point Claude Code, Codex and the SDKs"
        " at this server, with a new client key",
    )
    env.add_argument(
        "--shell",
        choices=("sh", "fish", "powershell"),
        help="output syntax (default: sh; powershell on Windows)",
    )
    run = command(
        sub,
        "run",
        "start the server if none runs, then run CMD pointed at it (sublane run -- claude)",
    )
    run.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD …")
    simulate.add_arguments(
        command(sub, "simulate", "compare scheduling policies on a simulated week (SPEC §12)")
    )
    return parser


COMMANDS = {
    "serve": server.cmd_serve,
    "account": accounts.cmd_account,
    "key": keys.cmd_key,
    "user": users.cmd_user,
    "reset-usage": levers.cmd_reset_usage,
    "settings": settings.cmd_settings,
    "admin-token": keys.cmd_admin_token,
    "status": server.cmd_status,
    "requests": requests.cmd_requests,
    "env": server.cmd_env,
    "run": server.cmd_run,
    "simulate": simulate.cmd_simulate,
}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    ctx = Context(args)
    try:
        if args.command is None:
            return server.cmd_gui(ctx)
        handler = COMMANDS.get(args.command)
        if handler is not None:
            return handler(ctx, args)
        parser.error(f"unknown command {args.command}")
    except CliError as exc:
        print(f"sublane: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # keyring or database trouble: one line, no traceback, no secret
        from sublane_desktop.service.offline import DB_FILE, DatabaseError, KeyringUnavailable

        if isinstance(exc, KeyringUnavailable):
            print(f"sublane: error: {exc}", file=sys.stderr)
            return 1
        if isinstance(exc, OSError):  # e.g. a data dir that cannot be created or written
            print(
                f"sublane: error: {exc.filename or ctx.data_dir}: "
                f"{exc.strerror or type(exc).__name__}",
                file=sys.stderr,
            )
            return 1
        if isinstance(exc, DatabaseError):
            print(
                f"sublane: error: database {ctx.data_dir / DB_FILE}: {type(exc).__name__}: {exc}",
                file=sys.stderr,
            )
            return 1
        raise
    finally:
        ctx.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
