"""Numbered schema migrations (R-ST-1).

One step per change, each inside a transaction, applied in order from the version stored in
`schema_version`. Before the first step runs on an existing file, the file is copied aside so a
failed upgrade can be undone by hand. Steps are plain SQL so they never depend on today's models.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

from peewee import SqliteDatabase

from sublane_desktop import file_modes

log = logging.getLogger(__name__)

STEPS: dict[int, list[str]] = {
    1: [
        "CREATE TABLE users (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE,"
        " is_admin INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL)",
        "CREATE TABLE groups (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE)",
        "CREATE TABLE client_keys (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,"
        " user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
        " group_id INTEGER NOT NULL REFERENCES groups(id), prefix TEXT NOT NULL,"
        " key_hash TEXT NOT NULL UNIQUE, created_at REAL NOT NULL, revoked_at REAL)",
        "CREATE TABLE accounts (id INTEGER PRIMARY KEY AUTOINCREMENT, provider TEXT NOT NULL,"
        " name TEXT NOT NULL UNIQUE, kind TEXT NOT NULL DEFAULT 'oauth', base_url TEXT,"
        " enabled INTEGER NOT NULL DEFAULT 1, revision INTEGER NOT NULL DEFAULT 1,"
        " created_at REAL NOT NULL, deleted_at REAL)",
        "CREATE TABLE account_groups (account_id INTEGER NOT NULL REFERENCES accounts(id)"
        " ON DELETE CASCADE, group_id INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,"
        " PRIMARY KEY (account_id, group_id))",
        "CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "INSERT INTO groups (name) VALUES ('default')",
    ],
    # Pool runtime (SPEC §4): the per-account limit, persisted cooldowns and bindings.
    2: [
        "ALTER TABLE accounts ADD COLUMN max_concurrency INTEGER NOT NULL DEFAULT 2",
        "CREATE TABLE account_runtime (account_id INTEGER PRIMARY KEY REFERENCES accounts(id)"
        " ON DELETE CASCADE, paused INTEGER NOT NULL DEFAULT 0, auth_failed INTEGER NOT NULL"
        " DEFAULT 0, cooldown_until REAL, failure_streak INTEGER NOT NULL DEFAULT 0,"
        " runtime_revision INTEGER NOT NULL DEFAULT 0, updated_at REAL)",
        "CREATE TABLE affinity_bindings (scope TEXT NOT NULL, group_id INTEGER NOT NULL,"
        " digest TEXT NOT NULL, account_id INTEGER NOT NULL REFERENCES accounts(id)"
        " ON DELETE CASCADE, created_at REAL NOT NULL, PRIMARY KEY (scope, group_id, digest))",
    ],
    # Request records (SPEC §6). AUTOINCREMENT so ids are never reused after cleanup; no
    # foreign keys, because history outlives deleted accounts, keys and users.
    3: [
        "CREATE TABLE request_records (id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " request_id TEXT NOT NULL, user_id INTEGER NOT NULL, key_id INTEGER NOT NULL,"
        " group_id INTEGER NOT NULL, account_id INTEGER, provider TEXT NOT NULL,"
        " model TEXT NOT NULL, protocol TEXT NOT NULL, operation TEXT NOT NULL,"
        " started_at REAL NOT NULL, duration_ms INTEGER, first_token_ms INTEGER,"
        " outcome TEXT NOT NULL, error_code TEXT, upstream_status INTEGER,"
        " input_tokens INTEGER, output_tokens INTEGER, cached_tokens INTEGER)",
        # personal pages: WHERE user_id = ? AND id < cursor ORDER BY id DESC
        "CREATE INDEX request_records_user_id ON request_records (user_id, id)",
        # the 7-day retention delete and the time filters
        "CREATE INDEX request_records_started_at ON request_records (started_at)",
    ],
    # Quota observations (SPEC §5, R-GAUGE-4): the freshest reading per account and window,
    # tagged with the account's lifecycle revision so a refresh begun before a re-auth loses.
    4: [
        "CREATE TABLE quota_observations (account_id INTEGER NOT NULL REFERENCES accounts(id)"
        " ON DELETE CASCADE, window TEXT NOT NULL, utilization REAL NOT NULL, resets_at REAL,"
        " observed_at REAL NOT NULL, source TEXT NOT NULL, rejected INTEGER NOT NULL DEFAULT 0,"
        " revision INTEGER NOT NULL, PRIMARY KEY (account_id, window))",
    ],
    # Usage history (R-UI-11, R-UI-7): readings over time for the 7-day chart and the burn
    # rate, thinned to about one a minute per window and kept for HISTORY_RETENTION_S.
    5: [
        "CREATE TABLE quota_history (account_id INTEGER NOT NULL REFERENCES accounts(id)"
        " ON DELETE CASCADE, window TEXT NOT NULL, utilization REAL NOT NULL,"
        " observed_at REAL NOT NULL)",
        "CREATE INDEX quota_history_account ON quota_history (account_id, window, observed_at)",
        "CREATE INDEX quota_history_observed_at ON quota_history (observed_at)",
    ],
    # Cache-miss forensics (SPEC §13, R-CF-1): the cause and cost on each record (old rows read
    # null), and the last turn's facts beside each conversation's binding so a restart keeps
    # them. A freed binding is kept as `bound = 0` rather than deleted: the facts of a
    # conversation whose account was paused are exactly what explains its next turn's miss.
    6: [
        "ALTER TABLE request_records ADD COLUMN cache_miss TEXT",
        "ALTER TABLE request_records ADD COLUMN reread_tokens INTEGER",
        "ALTER TABLE affinity_bindings ADD COLUMN bound INTEGER NOT NULL DEFAULT 1",
        "ALTER TABLE affinity_bindings ADD COLUMN last_account_id INTEGER",
        "ALTER TABLE affinity_bindings ADD COLUMN last_ended_at REAL",
        "ALTER TABLE affinity_bindings ADD COLUMN last_input_tokens INTEGER",
        "ALTER TABLE affinity_bindings ADD COLUMN last_warm_tokens INTEGER",
    ],
    # What a miss's explanation needs in words (R-CF-3): the account the previous turn used and
    # how long the conversation sat idle. Set on misses only; numbers, never content.
    7: [
        "ALTER TABLE request_records ADD COLUMN previous_account_id INTEGER",
        "ALTER TABLE request_records ADD COLUMN idle_seconds REAL",
    ],
    # The last turn's facts per model (core/turn_memory.py says why: a provider caches per
    # model, and one conversation mixes models). A small JSON map, model -> [account id, ended
    # at, total input, warm input], beside the binding. It supersedes step 6's single-turn
    # columns, which stay unused: SQLite before 3.35 cannot drop a column.
    8: [
        "ALTER TABLE affinity_bindings ADD COLUMN last_turns TEXT",
    ],
    # The Fable-scope cooldown survives a restart like the account-wide one (R-FT-10).
    9: [
        "ALTER TABLE account_runtime ADD COLUMN fable_cooldown_until REAL",
        "ALTER TABLE account_runtime ADD COLUMN fable_streak INTEGER NOT NULL DEFAULT 0",
    ],
    # Where an imported login came from (R-LOGIN-2): the tool's store (a file path or a keychain
    # item), a digest of the account identity it carried, and whether the import was detached.
    # Never a token: the tokens stay in the keyring and in the tool's own store.
    10: [
        "CREATE TABLE account_sources (account_id INTEGER PRIMARY KEY REFERENCES accounts(id)"
        " ON DELETE CASCADE, kind TEXT NOT NULL, location TEXT NOT NULL, identity TEXT,"
        " detached INTEGER NOT NULL DEFAULT 0, updated_at REAL NOT NULL)",
    ],
    # What each cooldown rests on (R-OBS-3): a quota hold keeps its window and reset across a
    # restart, and resting model families are kept with it (R-POOL-10).
    11: ["ALTER TABLE account_runtime ADD COLUMN holds TEXT"],
    # What a person or an upstream set outlives a restart (R-OBS-2): a manual pin's wall-clock
    # deadline beside the account's other runtime, and per account when its last quota read
    # began (the poll floor counts from it) and until when the usage endpoint asked us to wait.
    12: [
        "ALTER TABLE account_runtime ADD COLUMN pinned_until REAL",
        "CREATE TABLE quota_polls (account_id INTEGER PRIMARY KEY REFERENCES accounts(id)"
        " ON DELETE CASCADE, started_at REAL, blocked_until REAL)",
    ],
    # reset-usage voids the readings so far for the forecast (R-LANE-8) but not for the chart,
    # which shows what really happened; marked so a restart does not bring them back (R-OBS-2).
    13: [
        "ALTER TABLE quota_history ADD COLUMN voided INTEGER NOT NULL DEFAULT 0",
    ],
    # The poll floor belongs to the account revision it was taken under (R-OBS-2, R-UI-14): a
    # re-sign-in or re-enable written by the CLI while no server ran voids it. A floor saved
    # before this step is taken to be of the account's present revision, so it keeps holding
    # (at worst, a change the CLI made offline just before the upgrade waits out one floor).
    14: [
        "ALTER TABLE quota_polls ADD COLUMN revision INTEGER",
        "UPDATE quota_polls SET revision ="
        " (SELECT revision FROM accounts WHERE accounts.id = quota_polls.account_id)",
    ],
}
LATEST = max(STEPS)


def current_version(db: SqliteDatabase) -> int:
    tables = set(db.get_tables())
    if "schema_version" not in tables:
        return 0
    row = db.execute_sql("SELECT version FROM schema_version").fetchone()
    return int(row[0]) if row else 0


def backup(path: Path, version: int) -> Path | None:
    if not path.exists() or path.stat().st_size == 0:
        return None
    target = path.with_name(f"{path.name}.v{version}.{int(time.time())}.bak")
    # sqlite's online backup copies a consistent snapshot even with a WAL beside the file.
    file_modes.create_private(target)
    src = sqlite3.connect(str(path))
    try:
        dst = sqlite3.connect(str(target))
        with dst:
            src.backup(dst)
        dst.close()
    finally:
        src.close()
    return target


def migrate(db: SqliteDatabase, path: Path | None = None, upto: int = LATEST) -> int:
    """Bring the database to `upto`; returns the version it ended at."""
    version = current_version(db)
    if version >= upto:
        return version
    if version > 0 and path is not None:
        saved = backup(path, version)
        log.info("backed up schema v%s to %s before migrating", version, saved)
    if version == 0:
        db.execute_sql("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        db.execute_sql("INSERT INTO schema_version (version) VALUES (0)")
    for step in range(version + 1, upto + 1):
        with db.atomic():
            for statement in STEPS[step]:
                db.execute_sql(statement)
            db.execute_sql("UPDATE schema_version SET version = ?", (step,))
        log.info("migrated database to schema v%s", step)
    return upto
