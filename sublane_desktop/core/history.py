"""Request history queries (R-REC-4, R-REC-6): what a caller may ask for, checked before any SQL.

Pure: the proxy routes, the CLI and the GUI all turn their input into a `HistoryQuery` here and
present rows with `present`, so every surface accepts and shows the same thing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sublane_desktop.core.cache_miss import CAUSES
from sublane_desktop.core.records import MODEL_MAX, OUTCOMES, cache_hit_rate

PAGE_SIZE = 50
MAX_RECORDS = 5_000
MAX_AGE_SECONDS = 7 * 86_400
CHOICES_MAX = 200  # filter choices are bounded even if history holds more distinct values
REQUEST_ID_MAX = 128
# Ids and times beyond this are not a real value of ours; SQLite's own limit is 2**63-1.
NUMBER_MAX = 2**53 - 1
DELETED = "deleted"

PERSONAL_PARAMS = (
    "cursor",
    "outcome",
    "model",
    "key_id",
    "request_id",
    "from",
    "until",
    "cache_miss",
)
# `cache_miss=any` asks for every miss, whatever its cause.
ANY_MISS = "any"
MISS_FILTERS = (*CAUSES, ANY_MISS)
ADMIN_PARAMS = (*PERSONAL_PARAMS, "user_id", "account_id")

_DIGITS = re.compile(r"[0-9]+")
_DECIMAL = re.compile(r"[0-9]+(\.[0-9]+)?")


class InvalidQuery(ValueError):
    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param
        self.message = message


@dataclass(frozen=True)
class HistoryQuery:
    """One page request. `cursor` is an id: the page holds records with a smaller id."""

    cursor: int | None = None
    outcome: str | None = None
    model: str | None = None
    key_id: int | None = None
    request_id: str | None = None
    since: float | None = None  # "from", inclusive
    until: float | None = None  # exclusive
    user_id: int | None = None  # administrator view only
    account_id: int | None = None  # administrator view only
    cache_miss: str | None = None  # a cause, or ANY_MISS


def parse_query(
    pairs: Iterable[tuple[str, str]] | Mapping[str, str], *, admin: bool
) -> HistoryQuery:
    """Validate query parameters; raises InvalidQuery naming the parameter.

    An empty value means "no filter" (clients send `?cursor=0&outcome=`). Parameters outside
    the caller's scope — `user_id`, `account_id`, `scope`, … on the personal view — are not
    read at all, so they can neither widen nor break a personal query.
    """
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    allowed = ADMIN_PARAMS if admin else PERSONAL_PARAMS
    values: dict[str, str] = {}
    for name, value in items:
        if name not in allowed:
            continue
        if name in values:
            raise InvalidQuery(name, f"{name} is given more than once")
        values[name] = value.strip()
    present = {name: value for name, value in values.items() if value != ""}

    cursor = _integer(present, "cursor", minimum=0)
    outcome = present.get("outcome")
    if outcome is not None and outcome not in OUTCOMES:
        raise InvalidQuery("outcome", f"outcome must be one of {', '.join(OUTCOMES)}")
    cache_miss = present.get("cache_miss")
    if cache_miss is not None and cache_miss not in MISS_FILTERS:
        raise InvalidQuery("cache_miss", f"cache_miss must be one of {', '.join(MISS_FILTERS)}")
    model = present.get("model")
    if model is not None:
        model = model[:MODEL_MAX]  # records keep the same bounded form
    request_id = present.get("request_id")
    if request_id is not None and len(request_id) > REQUEST_ID_MAX:
        raise InvalidQuery("request_id", f"request_id is longer than {REQUEST_ID_MAX} characters")
    since = _seconds(present, "from")
    until = _seconds(present, "until")
    if since is not None and until is not None and since > until:
        raise InvalidQuery("from", "from must not be later than until")
    return HistoryQuery(
        cursor=cursor or None,  # 0 asks for the first page
        outcome=outcome,
        model=model,
        key_id=_integer(present, "key_id", minimum=1),
        request_id=request_id,
        since=since,
        until=until,
        user_id=_integer(present, "user_id", minimum=1) if admin else None,
        account_id=_integer(present, "account_id", minimum=1) if admin else None,
        cache_miss=cache_miss,
    )


def _integer(values: Mapping[str, str], name: str, *, minimum: int) -> int | None:
    raw = values.get(name)
    if raw is None:
        return None
    if not _DIGITS.fullmatch(raw) or len(raw) > 20:
        raise InvalidQuery(name, f"{name} must be a whole number")
    number = int(raw)
    if number < minimum or number > NUMBER_MAX:
        raise InvalidQuery(name, f"{name} must be from {minimum} to {NUMBER_MAX}")
    return number


def _seconds(values: Mapping[str, str], name: str) -> float | None:
    raw = values.get(name)
    if raw is None:
        return None
    if not _DECIMAL.fullmatch(raw) or len(raw) > 32:
        raise InvalidQuery(name, f"{name} must be unix seconds (e.g. 1767225600)")
    number = float(raw)
    if not math.isfinite(number) or number > NUMBER_MAX:
        raise InvalidQuery(name, f"{name} must be from 0 to {NUMBER_MAX}")
    return number


def retention_cutoff(now: float) -> float:
    """Records that started before this are gone (R-REC-4)."""
    return now - MAX_AGE_SECONDS


def present(row: Mapping[str, Any], *, personal: bool) -> dict[str, Any]:
    """A stored row as the API shows it: R-REC-2 fields, account name, cache-hit rate.

    Personal views blank the subscription account (R-REC-6); a deleted account reads
    `deleted` while its historical id stays.
    """
    record = {
        "id": row["id"],
        "request_id": row["request_id"],
        "user_id": row["user_id"],
        "key_id": row["key_id"],
        "group_id": row["group_id"],
        "account_id": row["account_id"],
        "provider": row["provider"],
        "model": row["model"],
        "protocol": row["protocol"],
        "operation": row["operation"],
        "started_at": row["started_at"],
        "duration_ms": row["duration_ms"],
        "first_token_ms": row["first_token_ms"],
        "outcome": row["outcome"],
        "error_code": row["error_code"],
        "upstream_status": row["upstream_status"],
        "input_tokens": row["input_tokens"],
        "output_tokens": row["output_tokens"],
        "cached_tokens": row["cached_tokens"],
        "cache_miss": row.get("cache_miss"),
        "reread_tokens": row.get("reread_tokens"),
        "previous_account_id": row.get("previous_account_id"),
        "idle_seconds": row.get("idle_seconds"),
    }
    if personal:
        record["account_id"] = None
        record["account_name"] = ""
        record["previous_account_id"] = None
        record["previous_account_name"] = ""
    elif row["account_id"] is None:
        record["account_name"] = ""
    elif row.get("account_name") is None or row.get("account_deleted"):
        record["account_name"] = DELETED
    else:
        record["account_name"] = row["account_name"]
    if not personal:
        record["previous_account_name"] = (
            ""
            if row.get("previous_account_id") is None
            else row.get("previous_account_name") or DELETED
        )
    record["cache_hit_rate"] = cache_hit_rate(row["input_tokens"], row["cached_tokens"])
    return record


def present_misses(
    groups: Iterable[Mapping[str, Any]],
    total_input: int,
    *,
    since: float | None,
    until: float | None,
    personal: bool,
) -> dict[str, Any]:
    """Misses by cause over a window (R-CF-2): count, re-read tokens, share of all input.

    `groups` are rows of (cache_miss, account_id, account_name, count, reread_tokens), one per
    cause and account; `total_input` is all input tokens in the same window and scope, so a
    share says how much of what the person paid for as input was read again. Personal views
    leave the per-account split out (R-REC-6).
    """
    by_cause: dict[str, dict[str, Any]] = {
        cause: {"cause": cause, "count": 0, "reread_tokens": 0} for cause in CAUSES
    }
    accounts: list[dict[str, Any]] = []
    for group in groups:
        entry = by_cause.get(group["cache_miss"])
        if entry is None:
            continue
        entry["count"] += int(group["count"] or 0)
        entry["reread_tokens"] += int(group["reread_tokens"] or 0)
        if not personal and group["account_id"] is not None:
            accounts.append(
                {
                    "account_id": group["account_id"],
                    "account_name": group.get("account_name") or DELETED,
                    "cause": group["cache_miss"],
                    "count": int(group["count"] or 0),
                    "reread_tokens": int(group["reread_tokens"] or 0),
                }
            )
    for entry in by_cause.values():
        entry["share"] = round(entry["reread_tokens"] / total_input, 4) if total_input > 0 else 0.0
    summary: dict[str, Any] = {
        "from": since,
        "until": until,
        "input_tokens": total_input,
        "causes": list(by_cause.values()),
        "reread_tokens": sum(e["reread_tokens"] for e in by_cause.values()),
    }
    if not personal:
        summary["accounts"] = accounts
    return summary
