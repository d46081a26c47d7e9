"""`sublane requests`: the request history, a page at a time (SPEC §6)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from sublane_desktop.cli.context import CliError, Context


def cmd_requests(ctx: Context, args: argparse.Namespace) -> int:
    """One page of history: from the running server's API, else from the database directly.
    Both validate with the same core parser, so the messages match the API's."""
    import urllib.parse

    from sublane_desktop.core.history import InvalidQuery, parse_query

    if args.mine and (args.user_id or args.account_id):
        raise CliError("--user-id and --account-id narrow all requests; drop --mine")
    given = {
        "outcome": args.outcome,
        "model": args.model,
        "key_id": args.key_id,
        "request_id": args.request_id,
        "user_id": args.user_id,
        "account_id": args.account_id,
        "cursor": args.cursor,
        "from": args.since,
        "until": args.until,
        "cache_miss": args.cache_miss,
    }
    params = {name: value for name, value in given.items() if value is not None}
    try:
        query = parse_query(params, admin=not args.mine)
    except InvalidQuery as exc:
        flag = "--" + exc.param.replace("_", "-")
        raise CliError(f"{flag}: {exc.message}") from None
    if args.misses:
        narrowing = sorted(name for name in params if name not in ("from", "until"))
        if narrowing:  # the summary spans a window only; a silently ignored filter would lie
            flags = ", ".join("--" + name.replace("_", "-") for name in narrowing)
            raise CliError(f"--misses sums a time window (--from, --until, --mine); drop {flags}")
        return print_misses(ctx, args, query)
    server = ctx.running_server()
    if server is not None:
        path = "/api/me/requests" if args.mine else "/api/requests"
        page = ctx.api(server, "GET", f"{path}?{urllib.parse.urlencode(params)}")
    else:
        page = ctx.offline.request_page(query, mine=args.mine)
    if args.json:
        print(json.dumps(page, indent=2))
    else:
        print_requests(page)
    return 0


def print_misses(ctx: Context, args: argparse.Namespace, query: Any) -> int:
    """`sublane requests --misses [--from … --until …]` (R-CF-2)."""
    import urllib.parse

    from sublane_desktop.core.miss_words import summary_lines

    window = {
        name: value
        for name, value in (("from", args.since), ("until", args.until))
        if value is not None
    }
    server = ctx.running_server()
    if server is not None:
        path = "/api/me/requests/misses" if args.mine else "/api/requests/misses"
        summary = ctx.api(server, "GET", f"{path}?{urllib.parse.urlencode(window)}")
    else:
        summary = ctx.offline.request_misses(query, mine=args.mine)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print("\n".join(summary_lines(summary)))
    return 0


def print_requests(page: dict[str, Any]) -> None:
    import time

    items = page["items"]
    if not items:
        print("no request records match (history keeps 7 days, at most 5,000 records)")
        return

    def ms(value: int | None) -> str:
        if value is None:
            return "—"
        return f"{value}ms" if value < 10_000 else f"{value / 1000:.1f}s"

    def count(value: int | None) -> str:
        return "—" if value is None else str(value)

    print(
        f"{'STARTED':<19}  {'REQUEST':<28}  {'MODEL':<24} {'ACCOUNT':<14} {'OUTCOME':<10} "
        f"{'STATUS':>6} {'DURATION':>8} {'FIRST':>7} {'IN':>7} {'OUT':>6} {'CACHED':>7} "
        f"{'HIT':>6}  {'CACHE MISS':<15} {'RE-READ':>7}  ERROR"
    )
    for r in items:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["started_at"]))
        print(
            f"{started:<19}  {r['request_id']:<28}  {r['model'][:24]:<24} "
            f"{(r['account_name'] or '—')[:14]:<14} {r['outcome']:<10} "
            f"{count(r['upstream_status']):>6} {ms(r['duration_ms']):>8} "
            f"{ms(r['first_token_ms']):>7} {count(r['input_tokens']):>7} "
            f"{count(r['output_tokens']):>6} {count(r['cached_tokens']):>7} "
            f"{r['cache_hit_rate']:>6}  {(r.get('cache_miss') or '—'):<15} "
            f"{count(r.get('reread_tokens')):>7}  {r['error_code'] or ''}".rstrip()
        )
    if page["next_cursor"] is not None:
        print(f"older: sublane requests --cursor {page['next_cursor']} (same filters)")
