"""`sublane key create|list|revoke` and `sublane admin-token`."""

from __future__ import annotations

import argparse
import json
import sys
import urllib.parse
from typing import Any

from sublane_desktop.cli.context import CliError, Context


def cmd_key(ctx: Context, args: argparse.Namespace) -> int:
    from sublane_desktop.store import repositories as repo

    try:
        if args.key_command == "create":
            store = ctx.store
            with store.db.atomic():
                user = repo.find_user(args.user) if args.user else repo.ensure_admin()
                group = repo.find_group(args.group)
                row, key = repo.create_key(args.name, user, group)
            print(key)
            print(f"key {row.id} ({args.name}) for {user.name} in group {group.name}; "
                  "shown once, only its hash is stored", file=sys.stderr)
            return 0
        if args.key_command == "list":
            ctx.store  # noqa: B018
            keys = repo.list_keys()
            if args.json:
                print(json.dumps(keys, indent=2))
            for k in [] if args.json else keys:
                print(f"{k['id']:>3}  {k['name']:<16} {k['prefix']}…  {k['user']:<10} "
                      f"{k['group']:<10} {'revoked' if k['revoked'] else 'active'}")
            return 0
        if args.key_command == "revoke":
            print(revoke(ctx, args.key))
            return 0
    except repo.NotFound as exc:
        raise CliError(str(exc)) from None
    return 2


def revoke(ctx: Context, ref: str) -> str:
    """A running server revokes it (refused from the moment we return, R-FT-12); with none,
    the database is the only place that needs to know."""
    from sublane_desktop.store import repositories as repo

    server = ctx.running_server()
    if server is not None:
        row = ctx.api(server, "POST", f"/api/keys/{urllib.parse.quote(ref, safe='')}/revoke", {})
        return f"revoked key {row['id']} ({row['name']})"
    with ctx.store.db.atomic():
        key = repo.revoke_key(ref)
    return f"revoked key {key.id} ({key.name})"


def new_client_key(ctx: Context, name: str) -> tuple[Any, Any, str]:
    from sublane_desktop.store import repositories as repo

    try:
        with ctx.store.db.atomic():
            user = repo.ensure_admin()
            row, key = repo.create_key(name, user, repo.find_group("default"))
    except repo.NotFound as exc:
        raise CliError(str(exc)) from None
    return row, user, key


def cmd_admin_token(ctx: Context, args: argparse.Namespace) -> int:
    from sublane_desktop.service import ensure_admin_token

    print(ensure_admin_token(ctx.secrets))
    return 0
