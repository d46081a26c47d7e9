"""The `sublane` command (SPEC §2). argparse, one clear stderr line per failure (R-CLI-2).

Levers that change a running pool (pause, clear-cooldown, limits) go through the running
server's management API, so the live state and the database never disagree; with no server
they change the database directly.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from sublane_desktop import credentials

# sublane_desktop.service (and with it aiohttp) is imported where it is needed: it doubles the
# start-up time of quick commands such as `key create` or `admin-token`.
DEFAULT_PORT = 8765  # the same as sublane_desktop.service.DEFAULT_PORT (a test checks)

PROVIDERS = ("anthropic", "codex", "antigravity")


class CliError(Exception):
    """A user-facing failure: printed as one line, exit status 1."""


def default_data_dir() -> Path:
    env = os.environ.get("SUBLANE_DATA_DIR")
    if env:
        return Path(env)
    from platformdirs import user_data_dir

    return Path(user_data_dir("sublane-desktop", appauthor=False))


# --- parser -----------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one stderr line (R-CLI-2), not usage text plus a line."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _globals(parser: argparse.ArgumentParser, top: bool) -> None:
    default = None if top else argparse.SUPPRESS
    parser.add_argument("--data-dir", type=Path, default=default, help="data directory")
    parser.add_argument("--host", default=default, help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=default,
                        help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")


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
    for name in ("import-claude-code", "import-codex", "import-gemini", "import-antigravity"):
        imp = command(acc, name, "import an installed CLI's login")
        imp.add_argument("--file", type=Path)
        imp.add_argument("--name")
        imp.add_argument("--group", default="default")
        imp.add_argument("--base-url")
    lst = command(acc, "list", "accounts with state, gauges, in-flight and limit")
    lst.add_argument("--json", action="store_true")
    for name in ("pause", "unpause", "clear-cooldown", "switch"):
        lever = command(acc, name, f"{name} an account")
        lever.add_argument("account")
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
    cfg.add_argument("value", nargs="?", help="a JSON value, e.g. 0.95, \"round_robin\"")
    status = command(sub, "status", "is a server running, and the pool summary")
    status.add_argument("--json", action="store_true")
    requests = command(sub, "requests", "recent request records, newest first (50 a page)")
    requests.add_argument("--mine", action="store_true",
                          help="only the administrator's own requests (personal view)")
    for flag in ("--outcome", "--model", "--key-id", "--request-id", "--user-id",
                 "--account-id", "--cursor"):
        requests.add_argument(flag)
    requests.add_argument("--cache-miss", metavar="CAUSE",
                          help="first_turn, account_switch, ttl_expired, prefix_changed or any")
    requests.add_argument("--misses", action="store_true",
                          help="cache misses by cause: count, re-read tokens, share of input")
    requests.add_argument("--from", dest="since", metavar="UNIX_SECONDS", help="inclusive")
    requests.add_argument("--until", metavar="UNIX_SECONDS", help="exclusive")
    requests.add_argument("--json", action="store_true")
    env = command(sub, "env", "print the variables that point Claude Code, Codex and the SDKs"
                  " at this server, with a new client key")
    env.add_argument("--shell", choices=("sh", "fish", "powershell"),
                     help="output syntax (default: sh; powershell on Windows)")
    run = command(sub, "run", "start the server if none runs, then run CMD pointed at it"
                  " (sublane run -- claude)")
    run.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD …")
    from sublane_desktop import simulate_cli

    simulate_cli.add_arguments(command(sub, "simulate", "compare scheduling policies on a"
                                       " simulated week (SPEC §12)"))
    return parser


# --- helpers ----------------------------------------------------------------------------------


# The server is ours and local: an http_proxy/https_proxy in the environment must not
# route management calls (with the administrator token) through a corporate proxy.
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Context:
    def __init__(self, args: argparse.Namespace) -> None:
        self.data_dir: Path = args.data_dir or default_data_dir()
        self.host: str = args.host or "127.0.0.1"
        # None: the stored setting `server.port` (default 8765) decides when the server starts.
        self.port: int | None = args.port
        self._store = None
        self._secrets = None

    @property
    def store(self):
        if self._store is None:
            from sublane_desktop.store import repositories as repo
            from sublane_desktop.store.connection import Store

            self._store = Store(self.data_dir / "sublane.db")
            with self._store.db.atomic():
                repo.ensure_admin()
        return self._store

    @property
    def secrets(self):
        if self._secrets is None:
            from sublane_desktop.secrets import SecretStore

            self._secrets = SecretStore(self.data_dir)
        return self._secrets

    def running_server(self) -> dict[str, Any] | None:
        """The status file of a live server for this data dir, or None."""
        try:
            from sublane_desktop.service import STATUS_FILE

            status = json.loads((self.data_dir / STATUS_FILE).read_text())
        except (OSError, ValueError):
            return None
        try:
            with _LOCAL.open(status["url"] + "/healthz", timeout=2) as resp:
                if resp.status == 200:
                    return status
        except (OSError, KeyError, TypeError, ValueError, urllib.error.URLError):
            return None
        return None

    def api(self, server: dict[str, Any], method: str, path: str, body: Any = None) -> Any:
        token = self.secrets.get("admin-token")
        if not token:
            raise CliError("no administrator token in the keyring; run `sublane admin-token`")
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(server["url"] + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with _LOCAL.open(req, timeout=10) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            try:
                message = json.loads(exc.read())["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = f"HTTP {exc.code}"
            raise CliError(message) from None
        except (OSError, ValueError) as exc:  # URLError is an OSError; ValueError: bad JSON
            raise CliError(f"the server at {server['url']} did not answer {method} {path}: "
                           f"{type(exc).__name__}") from None

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def read_secret_json(provider: str) -> dict[str, Any]:
    if sys.stdin is None or sys.stdin.isatty():
        raise CliError("the account secret is read from stdin as JSON (never from arguments)")
    text = sys.stdin.read()
    if not text.strip():
        raise CliError("no secret on stdin: pipe the account's secret JSON into this command")
    try:
        secret = json.loads(text)
    except ValueError:
        raise CliError("secret on stdin is not valid JSON") from None
    return validate_secret(provider, secret)


def validate_secret(provider: str, secret: Any) -> dict[str, Any]:
    try:
        return credentials.validate_secret(provider, secret)
    except credentials.CredentialError as exc:
        raise CliError(str(exc)) from None


def claude_code_secret(path: Path) -> dict[str, Any]:
    try:
        return credentials.claude_code_secret(path)
    except credentials.CredentialError as exc:
        raise CliError(str(exc)) from None


def codex_secret(path: Path) -> dict[str, Any]:
    try:
        return credentials.codex_secret(path)
    except credentials.CredentialError as exc:
        raise CliError(str(exc)) from None


def save_account(ctx: Context, provider: str, name: str, group: str, base_url: str | None,
                 limit: int, secret: dict[str, Any], replace: bool = False) -> str:
    try:
        with ctx.store.db.atomic():
            account_id, verb, kind = credentials.store_account(
                ctx.secrets, provider, name, group, base_url, limit, secret, replace=replace)
    except credentials.CredentialError as exc:
        raise CliError(str(exc)) from None
    return f"{verb} {provider} account {name} (id {account_id}, {kind})"


# --- commands ---------------------------------------------------------------------------------


def cmd_account(ctx: Context, args: argparse.Namespace) -> int:
    from sublane_desktop.store import repositories as repo

    which = args.account_command
    if which == "add":
        if args.provider not in PROVIDERS:
            raise CliError(f"unknown provider {args.provider!r} (choose from "
                           f"{', '.join(PROVIDERS)})")
        if not 1 <= args.max_concurrency <= 8:
            raise CliError("--max-concurrency must be from 1 to 8")
        secret = read_secret_json(args.provider)
        print(save_account(ctx, args.provider, args.name, args.group, args.base_url,
                           args.max_concurrency, secret))
        return 0
    if which == "import-claude-code":
        path = args.file or Path.home() / ".claude" / ".credentials.json"
        secret = claude_code_secret(path)
        print(save_account(ctx, "anthropic", args.name or "claude-code", args.group,
                           args.base_url, 2, secret, replace=True))
        return 0
    if which == "import-codex":
        path = args.file or Path.home() / ".codex" / "auth.json"
        secret = codex_secret(path)
        print(save_account(ctx, "codex", args.name or "codex", args.group, args.base_url, 2,
                           secret, replace=True))
        return 0
    if which in ("import-gemini", "import-antigravity"):  # Google logins (R-AG-1)
        kind = which.removeprefix("import-")
        read = credentials.gemini_cli_secret if kind == "gemini" else \
            credentials.antigravity_secret
        try:
            secret = read(args.file or Path.home() / credentials.LOGIN_FILES[kind])
        except credentials.CredentialError as exc:
            raise CliError(str(exc)) from None
        print(save_account(ctx, "antigravity", args.name or kind, args.group, args.base_url, 2,
                           secret, replace=True))
        return 0
    if which == "list":
        runtime = runtime_snapshot(ctx)
        if args.json:
            print(json.dumps(runtime["accounts"], indent=2))
        else:
            print_accounts(runtime)
        return 0
    # levers
    server = ctx.running_server()
    if server is not None:
        account = ctx.api(server, "GET", "/api/accounts/runtime")
        match = [a for a in account["accounts"] if a["name"] == args.account
                 or str(a["id"]) == args.account]
        if not match:
            raise CliError(f"unknown account {args.account!r}")
        acc_id = match[0]["id"]
        if which == "switch":
            ctx.api(server, "POST", "/llmux/switch", {"account": acc_id})
        elif which in ("pause", "unpause"):
            ctx.api(server, "POST", "/llmux/pause-account",
                    {"account": acc_id, "paused": which == "pause"})
        elif which == "clear-cooldown":
            ctx.api(server, "POST", f"/api/accounts/{acc_id}/resume", {})
        elif which == "set-limit":
            ctx.api(server, "PATCH", f"/api/accounts/{acc_id}/limits",
                    {"max_concurrency": args.limit})
    else:
        try:
            account = repo.find_account(args.account) if ctx.store else None
        except repo.NotFound as exc:
            raise CliError(str(exc)) from None
        if which == "switch":
            raise CliError("switch pins the live pool for 5 minutes: start the server first "
                           "(`sublane serve` or the tray app)")
        with ctx.store.db.atomic():
            if which in ("pause", "unpause"):
                repo.save_runtime(account.id, paused=which == "pause")
            elif which == "clear-cooldown":
                from sublane_desktop.store.models import AccountRuntime

                row = AccountRuntime.get_or_none(AccountRuntime.account == account.id)
                repo.save_runtime(account.id, cooldown_until=None, failure_streak=0,
                                  runtime_revision=(row.runtime_revision if row else 0) + 1)
            elif which == "set-limit":
                if not 1 <= args.limit <= 8:
                    raise CliError("limit must be from 1 to 8")
                repo.set_max_concurrency(account.id, args.limit)
    print(f"{which}: {args.account}")
    return 0


def runtime_snapshot(ctx: Context) -> dict[str, Any]:
    """The live pool from a running server, or the stored one built by the same service code."""
    server = ctx.running_server()
    if server is not None:
        return ctx.api(server, "GET", "/api/accounts/runtime")
    from sublane_desktop.service import Service, load_account_states

    ctx.store  # noqa: B018 - opens and migrates
    from sublane_desktop.store.quota import load_observations

    service = Service(ctx.data_dir, secret_store=_NoSecrets())
    service.pool.sync_accounts(load_account_states())
    for account_id, observations in load_observations().items():
        for obs in observations:
            service.pool.accounts[account_id].gauges.apply(obs)
    return service.accounts_runtime()


def cmd_reset_usage(ctx: Context) -> int:
    server = ctx.running_server()
    if server is not None:
        ctx.api(server, "POST", "/llmux/reset-usage", {})
    else:
        from sublane_desktop.store.quota import clear_observations

        with ctx.store.db.atomic():
            clear_observations()
    print("every gauge is cold again; headers and polls will repopulate them")
    return 0


def cmd_settings(ctx: Context, args: argparse.Namespace) -> int:
    from sublane_desktop.service import SCHEDULER_SETTINGS, validate_settings
    from sublane_desktop.store import repositories as repo

    server = ctx.running_server()
    if args.key is not None and args.value is not None:
        try:
            value = json.loads(args.value)
        except ValueError:
            value = args.value  # a bare word, e.g. round_robin
        try:
            clean = validate_settings({args.key: value})
        except ValueError as exc:
            raise CliError(str(exc)) from None
        if server is not None:
            ctx.api(server, "PATCH", "/api/settings", clean)
        else:
            with ctx.store.db.atomic():
                repo.set_setting(args.key, clean[args.key])
    if server is not None:
        current = ctx.api(server, "GET", "/api/settings")
    else:
        ctx.store  # noqa: B018
        current = {**SCHEDULER_SETTINGS, **repo.all_settings()}
    if args.key is not None and args.key not in current:
        raise CliError(f"unknown setting {args.key!r}")
    for key in [args.key] if args.key else sorted(current):
        print(f"{key} = {json.dumps(current[key])}")
    return 0


class _NoSecrets:
    """Listing accounts offline needs no keyring."""


def print_accounts(runtime: dict[str, Any]) -> None:
    accounts = runtime["accounts"]
    if not accounts:
        print("no accounts yet: add one with `sublane account import-claude-code` or "
              "`sublane account add`")
        return
    print(f"{'ID':>3}  {'NAME':<18} {'PROVIDER':<11} {'STATE':<16} {'FLIGHT':>6}  "
          f"{'5H':>5} {'7D':>5} {'FABLE':>5}")
    for a in accounts:
        def gauge(name: str) -> str:
            g = a["gauges"].get(name)
            if g is None:
                return "-"
            return "cold" if g["cold"] else f"{round((g['utilization'] or 0) * 100)}%"

        mark = "*" if a["current"] else " "
        # Antigravity's per-family gauges follow the fixed columns (R-AG-4)
        families = "".join(f"  {name} {gauge(name)}" for name in a["gauges"]
                           if name not in ("five_hour", "seven_day", "fable"))
        print(f"{a['id']:>3}{mark} {a['name']:<18} {a['provider']:<11} {a['state']:<16} "
              f"{a['in_flight']:>3}/{a['max_concurrency']:<2}  {gauge('five_hour'):>5} "
              f"{gauge('seven_day'):>5} {gauge('fable'):>5}{families}")


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
            with ctx.store.db.atomic():
                row = repo.revoke_key(args.key)
            print(f"revoked key {row.id} ({row.name})")
            return 0
    except repo.NotFound as exc:
        raise CliError(str(exc)) from None
    return 2


def cmd_user(ctx: Context, args: argparse.Namespace) -> int:
    from sublane_desktop.store import repositories as repo

    try:
        with ctx.store.db.atomic():
            user = repo.add_user(args.name)
    except repo.Conflict as exc:
        raise CliError(str(exc)) from None
    print(f"added member {user.name} (id {user.id})")
    return 0


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
    summary = {"running": True, "url": server["url"], "host": server["host"],
               "port": server["port"], "pid": server["pid"], "accounts": len(runtime["accounts"]),
               "states": states, "in_flight": runtime["in_flight"], "cap": runtime["cap"]}
    if args.json:
        print(json.dumps(summary))
    else:
        by_state = ", ".join(f"{n} {s}" for s, n in sorted(states.items())) or "no accounts"
        print(f"running on {server['url']} (pid {server['pid']}); {by_state}; "
              f"{runtime['in_flight']}/{runtime['cap']} in flight")
    return 0


def cmd_requests(ctx: Context, args: argparse.Namespace) -> int:
    """One page of history: from the running server's API, else from the database directly.
    Both validate with the same core parser, so the messages match the API's."""
    import urllib.parse

    from sublane_desktop.core.history import InvalidQuery, parse_query

    if args.mine and (args.user_id or args.account_id):
        raise CliError("--user-id and --account-id narrow all requests; drop --mine")
    given = {"outcome": args.outcome, "model": args.model, "key_id": args.key_id,
             "request_id": args.request_id, "user_id": args.user_id,
             "account_id": args.account_id, "cursor": args.cursor, "from": args.since,
             "until": args.until, "cache_miss": args.cache_miss}
    params = {name: value for name, value in given.items() if value is not None}
    try:
        query = parse_query(params, admin=not args.mine)
    except InvalidQuery as exc:
        flag = "--" + exc.param.replace("_", "-")
        raise CliError(f"{flag}: {exc.message}") from None
    if args.misses:
        return print_misses(ctx, args, query)
    server = ctx.running_server()
    if server is not None:
        path = "/api/me/requests" if args.mine else "/api/requests"
        page = ctx.api(server, "GET", f"{path}?{urllib.parse.urlencode(params)}")
    else:
        import time

        from sublane_desktop.store import records

        store = ctx.store
        now = time.time()
        with store.db.atomic():
            records.prune(now)  # cleanup on read, as the server does
        owner = records.admin_user_id() if args.mine else None
        page = records.read_page(query, owner=owner, now=now)
    if args.json:
        print(json.dumps(page, indent=2))
    else:
        print_requests(page)
    return 0


def print_misses(ctx: Context, args: argparse.Namespace, query: Any) -> int:
    """`sublane requests --misses [--from … --until …]` (R-CF-2)."""
    import time
    import urllib.parse

    from sublane_desktop.core.miss_words import summary_lines

    window = {name: value for name, value in (("from", args.since), ("until", args.until))
              if value is not None}
    server = ctx.running_server()
    if server is not None:
        path = "/api/me/requests/misses" if args.mine else "/api/requests/misses"
        summary = ctx.api(server, "GET", f"{path}?{urllib.parse.urlencode(window)}")
    else:
        from sublane_desktop.store import records

        ctx.store  # noqa: B018 - opens and migrates
        owner = records.admin_user_id() if args.mine else None
        summary = records.read_misses(owner=owner, since=query.since, until=query.until,
                                      now=time.time())
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

    print(f"{'STARTED':<19}  {'REQUEST':<28}  {'MODEL':<24} {'ACCOUNT':<14} {'OUTCOME':<10} "
          f"{'STATUS':>6} {'DURATION':>8} {'FIRST':>7} {'IN':>7} {'OUT':>6} {'CACHED':>7} "
          f"{'HIT':>6}  {'CACHE MISS':<15} {'RE-READ':>7}  ERROR")
    for r in items:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["started_at"]))
        print(f"{started:<19}  {r['request_id']:<28}  {r['model'][:24]:<24} "
              f"{(r['account_name'] or '—')[:14]:<14} {r['outcome']:<10} "
              f"{count(r['upstream_status']):>6} {ms(r['duration_ms']):>8} "
              f"{ms(r['first_token_ms']):>7} {count(r['input_tokens']):>7} "
              f"{count(r['output_tokens']):>6} {count(r['cached_tokens']):>7} "
              f"{r['cache_hit_rate']:>6}  {(r.get('cache_miss') or '—'):<15} "
              f"{count(r.get('reread_tokens')):>7}  {r['error_code'] or ''}".rstrip())
    if page["next_cursor"] is not None:
        print(f"older: sublane requests --cursor {page['next_cursor']} (same filters)")


def endpoint_url(ctx: Context) -> str:
    """The running server's URL, else the configured host and port."""
    from sublane_desktop.client_env import base_url

    server = ctx.running_server()
    if server is not None:
        return base_url(server["host"], server["port"])
    port = ctx.port
    if port is None:
        from sublane_desktop.store import repositories as repo

        ctx.store  # noqa: B018 - opens and migrates
        port = int(repo.get_setting("server.port", DEFAULT_PORT))
    if port == 0:
        raise CliError("no server is running and its port is picked at start (0): start it "
                       "first (`sublane serve`) or give --port")
    return base_url(ctx.host, port)


def new_client_key(ctx: Context, name: str) -> tuple[Any, Any, str]:
    from sublane_desktop.store import repositories as repo

    try:
        with ctx.store.db.atomic():
            user = repo.ensure_admin()
            row, key = repo.create_key(name, user, repo.find_group("default"))
    except repo.NotFound as exc:
        raise CliError(str(exc)) from None
    return row, user, key


def cmd_env(ctx: Context, args: argparse.Namespace) -> int:
    import datetime

    from sublane_desktop.client_env import client_variables, default_shell, load_hint, render

    shell = args.shell or default_shell()
    url = endpoint_url(ctx)
    # A key is shown only once, so there is none to reuse: every call makes a fresh one.
    name = f"env-{datetime.date.today().isoformat()}"
    row, user, key = new_client_key(ctx, name)
    sys.stdout.write(render(client_variables(url, key), shell))
    print(f"created client key {row.id} ({name}) for {user.name}; a key is shown only once, so "
          f"each `sublane env` makes a new one (`sublane key revoke {row.id}` to retire it). "
          f"Load with: {load_hint(shell)}", file=sys.stderr)
    return 0


RUN_KEY = "run-client-key"  # keyring entry: the client key `sublane run` hands to commands


def run_key(ctx: Context) -> str:
    """The key `sublane run` uses, kept in the keyring and reused while it is valid."""
    from sublane_desktop.store import repositories as repo

    ctx.store  # noqa: B018
    key = ctx.secrets.get(RUN_KEY)
    if key and repo.identify_key(key) is not None:
        return key
    row, user, key = new_client_key(ctx, "run")
    ctx.secrets.set(RUN_KEY, key)
    print(f"created client key {row.id} (run) for {user.name}; `sublane run` keeps it in the "
          "keyring and reuses it", file=sys.stderr)
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
            print(f"sublane: started a server on {url} for this command; it stops when the "
                  "command ends", file=sys.stderr)
        try:
            return run_command(command, {**os.environ, **client_variables(url, key)})
        except LaunchError as exc:  # the command itself could not start: shell-style 127
            print(f"sublane: error: {exc}", file=sys.stderr)
            return 127
    finally:
        if started is not None:
            started.stop()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    ctx = Context(args)
    try:
        if args.command is None:
            from sublane_desktop.app import has_display, run_gui, run_serve

            if not has_display():
                print("no display found: running the proxy only (same as `sublane serve`)",
                      file=sys.stderr, flush=True)
                return run_serve(ctx.data_dir, ctx.host, ctx.port)
            return run_gui(ctx.data_dir, ctx.host, ctx.port)
        if args.command == "serve":
            from sublane_desktop.app import run_serve

            return run_serve(ctx.data_dir, ctx.host, ctx.port)
        if args.command == "account":
            return cmd_account(ctx, args)
        if args.command == "key":
            return cmd_key(ctx, args)
        if args.command == "user":
            return cmd_user(ctx, args)
        if args.command == "reset-usage":
            return cmd_reset_usage(ctx)
        if args.command == "settings":
            return cmd_settings(ctx, args)
        if args.command == "admin-token":
            from sublane_desktop.service import ensure_admin_token

            print(ensure_admin_token(ctx.secrets))
            return 0
        if args.command == "status":
            return cmd_status(ctx, args)
        if args.command == "requests":
            return cmd_requests(ctx, args)
        if args.command == "env":
            return cmd_env(ctx, args)
        if args.command == "run":
            return cmd_run(ctx, args)
        if args.command == "simulate":
            from sublane_desktop import simulate_cli

            try:
                return simulate_cli.run(args, lambda: ctx.store)
            except simulate_cli.SimulateError as exc:
                raise CliError(str(exc)) from None
        parser.error(f"unknown command {args.command}")
    except CliError as exc:
        print(f"sublane: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # keyring or database trouble: one line, no traceback, no secret
        from peewee import PeeweeException

        from sublane_desktop.secrets import KeyringUnavailable

        if isinstance(exc, KeyringUnavailable):
            print(f"sublane: error: {exc}", file=sys.stderr)
            return 1
        if isinstance(exc, PeeweeException):
            print(f"sublane: error: database {ctx.data_dir / 'sublane.db'}: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
        raise
    finally:
        ctx.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
