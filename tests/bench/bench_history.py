"""Request history benchmark: page queries over a full history (5,000 records).

Run from the repo root:  python -m tests.bench.bench_history [--queries N] [--json PATH]

Seeds 5,000 records (4 users, 12 keys, 6 accounts, 5 models, every outcome, spread over six
days), then times page queries — personal and administrator, with and without filters, first
pages and deep cursors — at three levels:

- sql:     `store.records.read_page` on one connection (the query and the row shaping);
- service: `RequestLog.page`, what the routes call (cleanup-on-read on the writer thread, then
           the read on the reader thread);
- http:    `GET /api/me/requests` / `GET /api/requests` through a started service on loopback;
- filters: `RequestLog.filters` (the choices endpoints), personal and administrator.

Prints p50/p95 per level and the SQLite query plans. Target: p50 <= 5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from sublane_desktop.accounts.secrets import SecretStore
from sublane_desktop.core.clock import FakeClock
from sublane_desktop.core.history import MAX_RECORDS, OUTCOMES, HistoryQuery
from sublane_desktop.core.records import RequestRecord
from sublane_desktop.service import Service
from sublane_desktop.store import records
from sublane_desktop.store import repositories as repo
from tests.conftest import file_keyring

MODELS = [
    "claude-sonnet-4-5",
    "claude-opus-4-1",
    "claude-haiku-4-5",
    "claude-fable-5",
    "claude-sonnet-4-5[1m]",
]
TARGET_P50_MS = 5.0


def seed_records(
    clock: FakeClock,
    users: list[int],
    keys: dict[int, list[int]],
    accounts: list[int],
    rng: random.Random,
) -> list[RequestRecord]:
    start = clock.now() - 6 * 86_400
    out = []
    for n in range(MAX_RECORDS):
        user = rng.choice(users)
        outcome = rng.choices(OUTCOMES, weights=[80, 4, 6, 4, 6])[0]
        out.append(
            RequestRecord(
                request_id=f"req_{rng.getrandbits(96):024x}",
                user_id=user,
                key_id=rng.choice(keys[user]),
                group_id=1,
                provider="anthropic",
                model=rng.choice(MODELS),
                protocol="anthropic",
                operation="messages",
                started_at=start + n * (6 * 86_400 / MAX_RECORDS),
                account_id=rng.choice(accounts),
                duration_ms=rng.randint(200, 90_000),
                first_token_ms=rng.randint(100, 4_000),
                outcome=outcome,
                error_code=None if outcome == "success" else "account_busy",
                upstream_status=None if outcome == "rejected" else 200,
                input_tokens=rng.randint(1_000, 200_000),
                output_tokens=rng.randint(1, 8_000),
                cached_tokens=rng.randint(0, 1_000),
            )
        )
    return out


def workload(
    users: list[int],
    keys: dict[int, list[int]],
    accounts: list[int],
    sample: list[RequestRecord],
    rng: random.Random,
    n: int,
) -> list[tuple[str, int | None, HistoryQuery]]:
    """(label, owner, query): owner set = personal view."""
    shapes = []
    for i in range(n):
        user = users[i % len(users)]
        kind = i % 10
        cursor = rng.choice([None, None, rng.randint(100, MAX_RECORDS)])
        if kind == 0:
            shapes.append(("personal", user, HistoryQuery(cursor=cursor)))
        elif kind == 1:
            shapes.append(("personal+outcome", user, HistoryQuery(cursor=cursor, outcome="error")))
        elif kind == 2:
            shapes.append(
                (
                    "personal+model+key",
                    user,
                    HistoryQuery(model=rng.choice(MODELS), key_id=rng.choice(keys[user])),
                )
            )
        elif kind == 3:
            shapes.append(
                (
                    "personal+range",
                    user,
                    HistoryQuery(since=sample[1000].started_at, until=sample[3000].started_at),
                )
            )
        elif kind == 4:
            shapes.append(
                (
                    "personal+request_id",
                    user,
                    HistoryQuery(request_id=rng.choice(sample).request_id),
                )
            )
        elif kind == 5:
            shapes.append(("admin", None, HistoryQuery(cursor=cursor)))
        elif kind == 6:
            shapes.append(("admin+user", None, HistoryQuery(cursor=cursor, user_id=user)))
        elif kind == 7:
            shapes.append(
                (
                    "admin+account+outcome",
                    None,
                    HistoryQuery(account_id=rng.choice(accounts), outcome="rejected"),
                )
            )
        elif kind == 8:
            shapes.append(
                ("admin+model", None, HistoryQuery(cursor=cursor, model=rng.choice(MODELS)))
            )
        else:
            shapes.append(("admin+rare", None, HistoryQuery(outcome="canceled", model=MODELS[-1])))
    return shapes


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[max(0, int(len(ordered) * 0.95) - 1)],
        "max": ordered[-1],
    }


def params_of(query: HistoryQuery) -> dict[str, str]:
    names = {"since": "from"}
    return {names.get(k, k): str(v) for k, v in query.__dict__.items() if v is not None}


async def run(n_queries: int) -> dict[str, Any]:
    rng = random.Random(7)
    clock = FakeClock()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        service = Service(
            root / "data",
            port=0,
            clock=clock,
            secret_store=SecretStore(root, backend=file_keyring(root / "k.cfg")),
        )
        await service.start()
        try:

            def people() -> tuple[list[int], dict[int, list[int]], list[int], dict[int, str]]:
                group = repo.get_or_create_group("default")
                users = [repo.ensure_admin()] + [repo.add_user(f"member{i}") for i in range(3)]
                keys: dict[int, list[int]] = {}
                secrets: dict[int, str] = {}
                for u in users:
                    for k in range(3):
                        row, key = repo.create_key(f"k{k}", u, group)
                        keys.setdefault(u.id, []).append(row.id)
                        secrets.setdefault(u.id, key)
                accounts = [
                    repo.add_account("anthropic", f"acc{i}", "oauth", group).id for i in range(6)
                ]
                return [u.id for u in users], keys, accounts, secrets

            users, keys, accounts, secrets = await service.store.write(people)
            sample = seed_records(clock, users, keys, accounts, rng)
            t0 = time.perf_counter()
            await service.store.write(lambda: records.insert_records(sample, clock.now()))
            seed_s = time.perf_counter() - t0
            queries = workload(users, keys, accounts, sample, rng, n_queries)

            # sql level, on the reader thread's own connection
            def sql_level() -> list[float]:
                out = []
                for _, owner, query in queries:
                    t = time.perf_counter()
                    records.read_page(query, owner=owner, now=clock.now())
                    out.append((time.perf_counter() - t) * 1000)
                return out

            sql = await service.store.read(sql_level)

            service_ms = []
            for _, owner, query in queries:
                t = time.perf_counter()
                await service.request_log.page(query, owner=owner)
                service_ms.append((time.perf_counter() - t) * 1000)

            filters_ms = []
            for i in range(40):
                owner = users[i % len(users)] if i % 2 else None
                t = time.perf_counter()
                await service.request_log.filters(owner=owner)
                filters_ms.append((time.perf_counter() - t) * 1000)

            http_ms = []
            by_label: dict[str, list[float]] = {}
            async with aiohttp.ClientSession() as session:
                for label, owner, query in queries:
                    path = "/api/me/requests" if owner is not None else "/api/requests"
                    token = secrets[owner] if owner is not None else service.admin_token
                    t = time.perf_counter()
                    async with session.get(
                        service.endpoint_url + path,
                        params=params_of(query),
                        headers={"Authorization": f"Bearer {token}"},
                    ) as r:
                        assert r.status == 200, await r.text()
                        await r.read()
                    ms = (time.perf_counter() - t) * 1000
                    http_ms.append(ms)
                    by_label.setdefault(label, []).append(ms)

            def plans() -> dict[str, list[str]]:
                out = {}
                db = service.store.db
                for label, sql_text in [
                    (
                        "personal page",
                        "SELECT * FROM request_records r WHERE r.started_at >= 0"
                        " AND r.user_id = 2 AND r.id < 4000 ORDER BY r.id DESC LIMIT 51",
                    ),
                    (
                        "admin page",
                        "SELECT * FROM request_records r LEFT JOIN accounts a"
                        " ON a.id = r.account_id WHERE r.started_at >= 0 AND r.id < 4000"
                        " ORDER BY r.id DESC LIMIT 51",
                    ),
                    ("retention", "DELETE FROM request_records WHERE started_at < 0"),
                ]:
                    rows = db.execute_sql("EXPLAIN QUERY PLAN " + sql_text).fetchall()
                    out[label] = [row[-1] for row in rows]
                return out

            plan = await service.store.read(plans)
        finally:
            await service.stop(drain_timeout=1)
    return {
        "records": MAX_RECORDS,
        "queries": n_queries,
        "seed_seconds": round(seed_s, 3),
        "sql_ms": summary(sql),
        "service_ms": summary(service_ms),
        "http_ms": summary(http_ms),
        "filters_ms": summary(filters_ms),
        "http_by_shape_p50_ms": {k: statistics.median(v) for k, v in sorted(by_label.items())},
        "plans": plan,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.queries))
    print(
        f"seeded {result['records']} records in {result['seed_seconds']:.3f} s; "
        f"{result['queries']} page queries (personal and admin, with and without filters)"
    )
    for level in ("sql", "service", "http", "filters"):
        s = result[f"{level}_ms"]
        print(
            f"  {level:<8} p50 {s['p50']:6.2f} ms   p95 {s['p95']:6.2f} ms   max {s['max']:6.2f} ms"
        )
    print("  http p50 by shape:")
    for label, ms in result["http_by_shape_p50_ms"].items():
        print(f"    {label:<24} {ms:6.2f} ms")
    print("query plans:")
    for label, steps in result["plans"].items():
        print(f"  {label}: " + " | ".join(steps))
    ok = result["service_ms"]["p50"] <= TARGET_P50_MS
    print(f"target p50 <= {TARGET_P50_MS} ms (service level): {'met' if ok else 'MISSED'}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
