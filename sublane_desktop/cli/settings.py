"""`sublane settings [KEY [VALUE]]` (SPEC §7)."""

from __future__ import annotations

import argparse
import json

from sublane_desktop.cli.context import CliError, Context
from sublane_desktop.core import json_text


def cmd_settings(ctx: Context, args: argparse.Namespace) -> int:
    from sublane_desktop.service.settings import validate_settings

    server = ctx.running_server()
    if args.key is not None and args.value is not None:
        try:
            value = json_text.parse(args.value)
        except ValueError:
            value = args.value  # a bare word, e.g. round_robin
        try:
            clean = validate_settings({args.key: value})
        except ValueError as exc:
            raise CliError(str(exc)) from None
        if server is not None:
            ctx.api(server, "PATCH", "/api/settings", clean)
        else:
            ctx.offline.set_setting(args.key, clean[args.key])
    if server is not None:
        current = ctx.api(server, "GET", "/api/settings")
    else:
        current = ctx.offline.settings()
    if args.key is not None and args.key not in current:
        raise CliError(f"unknown setting {args.key!r}")
    for key in [args.key] if args.key else sorted(current):
        print(f"{key} = {json.dumps(current[key])}")
    return 0
