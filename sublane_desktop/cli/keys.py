"""`sublane key create|list|revoke` and `sublane admin-token`."""

from __future__ import annotations

import argparse
import json
import sys
import urllib.parse
from typing import Any

from sublane_desktop.cli.context import CliError, Context


def cmd_key(ctx: Context, args: argparse.Namespace) -> int:
    from sublane_desktop.service.offline import NotFound

    try:
        if args.key_command == "create":
            row, key = ctx.offline.create_key(args.name, args.user, args.group)
            print(key)
            print(
                f"key {row['id']} ({args.name}) for {row['user']} in group {row['group']}; "
                "shown once, only its hash is stored",
                file=sys.stderr,
            )
            return 0
        if args.key_command == "list":
            keys = ctx.offline.list_keys()
            if args.json:
                print(json.dumps(keys, indent=2))
            for k in [] if args.json else keys:
                print(
                    f"{k['id']:>3}  {k['name']:<16} {k['prefix']}…  {k['user']:<10} "
                    f"{k['group']:<10} {'revoked' if k['revoked'] else 'active'}"
                )
            return 0
        if args.key_command == "revoke":
            print(revoke(ctx, args.key))
            return 0
    except (NotFound, ValueError) as exc:  # ValueError: not a usable key name
        raise CliError(str(exc)) from None
    return 2


def revoke(ctx: Context, ref: str) -> str:
    """A running server revokes it (refused from the moment we return, R-FT-12); with none,
    the database is the only place that needs to know."""
    server = ctx.running_server()
    if server is not None:
        row = ctx.api(server, "POST", f"/api/keys/{urllib.parse.quote(ref, safe='')}/revoke", {})
        return f"revoked key {row['id']} ({row['name']})"
    revoked = ctx.offline.revoke_key(ref)
    return f"revoked key {revoked['id']} ({revoked['name']})"


def new_client_key(ctx: Context, name: str) -> tuple[dict[str, Any], str]:
    """A key for the administrator in the default group: ({id, name, user, group}, key)."""
    from sublane_desktop.service.offline import NotFound

    try:
        return ctx.offline.create_key(name)
    except NotFound as exc:
        raise CliError(str(exc)) from None


def cmd_admin_token(ctx: Context, args: argparse.Namespace) -> int:
    print(ctx.offline.ensure_admin_token())
    return 0
