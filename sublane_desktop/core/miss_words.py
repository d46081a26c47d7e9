"""Cache misses in plain words (R-CF-2, R-CF-3): one wording for the CLI, the Requests window,
request details, the Accounts window and the tray, so every surface says the same thing.

Pure: it turns a record's `cache_miss`, `reread_tokens`, account names and idle time into a
sentence, and a day's re-read tokens into the tray's warning when switching cost more than
SWITCH_WARN_TOKENS.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_desktop.core.cache_miss import (
    ACCOUNT_SWITCH,
    CAUSES,
    FIRST_TURN,
    PREFIX_CHANGED,
    TTL_EXPIRED,
)

LABELS = {
    FIRST_TURN: "first turn",
    ACCOUNT_SWITCH: "account switch",
    TTL_EXPIRED: "cache expired",
    PREFIX_CHANGED: "prompt changed",
}
# The same causes in a sentence a person reads without knowing how a prompt cache works: what
# made the provider read a repeated prompt again instead of taking it from its cache.
AFTER = {
    FIRST_TURN: "new conversations",
    ACCOUNT_SWITCH: "after switching accounts",
    TTL_EXPIRED: "after the cache expired",
    PREFIX_CHANGED: "after a tool changed its prompt",
}
# A short mark for a narrow table cell, beside the hit rate.
MARKS = {FIRST_TURN: "new", ACCOUNT_SWITCH: "⇄", TTL_EXPIRED: "⏱", PREFIX_CHANGED: "✎"}

# The tray speaks up when today's switches made more than this much input be read again. A
# Claude Code conversation carries some 50-100k tokens of context, so one move after a pause
# re-reads about that much and is expected; past two such moves' worth, switching is a pattern
# the person may want to see (and pin, or raise a ceiling) — below it, it is noise.
SWITCH_WARN_TOKENS = 200_000


def compact_tokens(count: int) -> str:
    """48213 -> "48k", 1_250_000 -> "1.2M", 950 -> "950"."""
    if count < 1_000:
        return str(count)
    if count < 1_000_000:
        return f"{round(count / 1_000)}k" if count < 999_500 else "1M"
    text = f"{count / 1_000_000:.1f}".rstrip("0").rstrip(".")
    return f"{text}M"


def idle_words(seconds: float) -> str:
    """40 -> "40 s", 420 -> "7 min", 3900 -> "1 h 5 min"."""
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{round(seconds)} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    return f"{hours} h {rest} min" if rest else f"{hours} h"


def explain(record: Mapping[str, Any]) -> str:
    """The tooltip / details sentence for one record ("" when there is nothing to explain).

    Uses `cache_miss`, `reread_tokens`, `idle_seconds`, `account_name` and
    `previous_account_name` (empty in personal views, which then say "another account").
    """
    cause = record.get("cache_miss")
    if cause not in CAUSES:
        return ""
    reread = int(record.get("reread_tokens") or 0)
    # One request's count, exact as in its Read again field (fault 16); totals over many
    # requests are the ones said compactly ("48k").
    cost = f"{reread:,} tokens read again"
    idle = record.get("idle_seconds")
    after = (
        f"{idle_words(float(idle))} after the previous turn"
        if idle is not None
        else ("after the previous turn")
    )
    account = record.get("account_name") or ""
    previous = record.get("previous_account_name") or ""
    if cause == FIRST_TURN:
        return "first turn of this conversation: nothing was cached for it yet"
    if cause == ACCOUNT_SWITCH:
        if account and previous:
            return f"moved from {previous} to {account} {after}: {cost}"
        return f"moved to another account {after}: {cost}"
    where = f" on {account}" if account else ""
    if cause == TTL_EXPIRED:
        return f"the prompt cache expired: {after}{where}, longer than it lives: {cost}"
    return f"the client changed the start of its prompt {after}{where}: {cost}"


def switch_warning(reread_today: int) -> str | None:
    """The tray's line when switching re-read more than SWITCH_WARN_TOKENS today."""
    if reread_today <= SWITCH_WARN_TOKENS:
        return None
    return f"switching re-read {compact_tokens(reread_today)} tokens today"


def summary_lines(summary: Mapping[str, Any]) -> list[str]:
    """`sublane requests --misses`: one line per cause, then the total."""
    total_input = int(summary.get("input_tokens") or 0)
    lines = [f"{'CAUSE':<16} {'COUNT':>6} {'RE-READ':>12} {'SHARE OF INPUT':>15}"]
    for entry in summary.get("causes", []):
        lines.append(
            f"{LABELS.get(entry['cause'], entry['cause']):<16} {entry['count']:>6} "
            f"{entry['reread_tokens']:>12,} {entry['share'] * 100:>14.1f}%"
        )
    reread = int(summary.get("reread_tokens") or 0)
    share = reread * 100 / total_input if total_input else 0.0
    lines.append(
        f"{'all misses':<16} {sum(e['count'] for e in summary.get('causes', [])):>6} "
        f"{reread:>12,} {share:>14.1f}%"
    )
    lines.append(f"of {total_input:,} input tokens in the window")
    return lines


def reread_today(summary: Mapping[str, Any] | None) -> str:
    """The Accounts window's line: today's re-read tokens per cause (R-CF-3), in words."""
    if not summary:
        return ""
    parts = [
        f"{compact_tokens(int(e['reread_tokens']))} {AFTER[e['cause']]}"
        for e in summary.get("causes", [])
        if e.get("reread_tokens")
    ]
    if not parts:
        return "Every repeated prompt was read from cache today"
    return "Prompt tokens read again, not from cache, today: " + " · ".join(parts)


def reread_today_by_account(summary: Mapping[str, Any] | None) -> str:
    """Its tooltip: the same per account that served the missed turn, largest first."""
    rows = [a for a in (summary or {}).get("accounts", []) if a.get("reread_tokens")]
    rows.sort(key=lambda a: -int(a["reread_tokens"]))
    return "\n".join(
        f"{a['account_name']}: {compact_tokens(int(a['reread_tokens']))} "
        f"{AFTER.get(a['cause'], a['cause'])} ({a['count']} request{'' if a['count'] == 1 else 's'})"
        for a in rows
    )


def switched_today(summary: Mapping[str, Any] | None) -> int:
    for entry in (summary or {}).get("causes", []):
        if entry.get("cause") == ACCOUNT_SWITCH:
            return int(entry.get("reread_tokens") or 0)
    return 0
