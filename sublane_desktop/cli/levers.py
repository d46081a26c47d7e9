"""The levers on a running pool: account pause/unpause/clear-cooldown/switch/set-limit, and
`sublane reset-usage`. With a server running they go through its management API, so the live
state and the database never disagree; with none they change the database directly.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from sublane_desktop.cli.context import CliError, Context


def cmd_account_lever(ctx: Context, args: argparse.Namespace) -> int:
    """pause, unpause, clear-cooldown, switch or set-limit one account (by name or id)."""
    from sublane_desktop.service.offline import NotFound

    which = args.account_command
    server = ctx.running_server()
    if server is not None:
        account = ctx.api(server, "GET", "/api/accounts/runtime")
        match = [
            a
            for a in account["accounts"]
            if a["name"] == args.account or str(a["id"]) == args.account
        ]
        if not match:
            raise CliError(f"unknown account {args.account!r}")
        acc_id = match[0]["id"]
        if which == "switch":
            ctx.api(server, "POST", "/llmux/switch", {"account": acc_id})
        elif which in ("pause", "unpause"):
            ctx.api(
                server,
                "POST",
                "/llmux/pause-account",
                {"account": acc_id, "paused": which == "pause"},
            )
        elif which == "clear-cooldown":
            ctx.api(server, "POST", f"/api/accounts/{acc_id}/resume", {})
        elif which in ("disable", "enable"):
            ctx.api(server, "POST", f"/api/accounts/{acc_id}/{which}", {})
        elif which == "verify":
            return _print_verdict(
                ctx.api(server, "POST", f"/api/accounts/{acc_id}/verify", {}), args.json
            )
        elif which == "set-limit":
            ctx.api(
                server, "PATCH", f"/api/accounts/{acc_id}/limits", {"max_concurrency": args.limit}
            )
    else:
        offline = ctx.offline
        try:
            offline.account_id(args.account)
            if which == "switch":
                raise CliError(
                    "switch pins the live pool for 5 minutes: start the server "
                    "first (`sublane serve` or the tray app)"
                )
            if which == "verify":
                stored = _stored_problem(ctx, args.account)
                if stored is not None:  # no upstream needed to say the credential is gone
                    return _print_verdict(stored, args.json)
                raise CliError(
                    "verify asks the upstream through the running pool: start the "
                    "server first (`sublane serve` or the tray app)"
                )
            if which in ("pause", "unpause"):
                offline.pause(args.account, which == "pause")
            elif which == "clear-cooldown":
                offline.clear_cooldown(args.account)
            elif which in ("disable", "enable"):
                offline.set_enabled(args.account, which == "enable")
            elif which == "set-limit":
                offline.set_limit(args.account, args.limit)
        except (NotFound, ValueError) as exc:
            raise CliError(str(exc)) from None
    print(f"{which}: {args.account}")
    return 0


def cmd_reset_usage(ctx: Context, args: argparse.Namespace) -> int:
    server = ctx.running_server()
    if server is not None:
        ctx.api(server, "POST", "/llmux/reset-usage", {})
    else:
        ctx.offline.reset_usage()
    print("every gauge is cold again; headers and polls will repopulate them")
    return 0


def _stored_problem(ctx: Context, ref: str) -> dict[str, Any] | None:
    """With no server: a verdict when the account's stored credential cannot be used (missing
    from the keyring, unreadable: R-LOGIN-4), else None."""
    for account in ctx.offline.pool_view()["accounts"]:
        if (account["name"] == ref or str(account["id"]) == ref) and account.get("auth_reason"):
            return {
                "id": account["id"],
                "name": account["name"],
                "provider": account["provider"],
                "result": "auth_failed",
                "detail": account["auth_reason"],
            }
    return None


def _print_verdict(verdict: dict[str, Any], as_json: bool) -> int:
    """One line a person can act on; exit 1 unless the credential works."""
    if as_json:
        print(json.dumps(verdict))
    else:
        print(f"{verdict['name']}: {verdict['result']} — {verdict['detail']}")
    return 0 if verdict["result"] == "ok" else 1
