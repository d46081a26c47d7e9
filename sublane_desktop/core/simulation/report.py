"""The simulator's table for people, and the rule that names a winner."""

from __future__ import annotations

from collections.abc import Sequence

from sublane_desktop.core.simulation.metrics import RunResult

COLUMNS = (
    ("trace", "{:<11}"),
    ("policy", "{:<11}"),
    ("requests", "{:>8}"),
    ("served", "{:>7}"),
    ("quota used", "{:>10}"),
    ("wasted", "{:>7}"),
    ("429s", "{:>6}"),
    ("refused", "{:>7}"),
    ("cache breaks", "{:>12}"),
    ("re-read tokens", "{:>14}"),
)


def _cells(r: RunResult) -> tuple[object, ...]:
    return (
        r.trace,
        r.policy,
        r.requests,
        r.served,
        f"{r.quota_used:.1%}",
        f"{r.quota_wasted:.1%}",
        r.http_429,
        r.refused,
        r.cache_breaks,
        f"{r.reread_tokens:,}",
    )


def table(results: Sequence[RunResult]) -> str:
    head = "  ".join(fmt.format(name) for name, fmt in COLUMNS)
    rows = [
        "  ".join(fmt.format(cell) for (_, fmt), cell in zip(COLUMNS, _cells(r), strict=True))
        for r in results
    ]
    return "\n".join([head, *rows])


def markdown(results: Sequence[RunResult]) -> str:
    head = "| " + " | ".join(name for name, _ in COLUMNS) + " |"
    rule = "|" + "|".join("---" if i < 2 else "---:" for i in range(len(COLUMNS))) + "|"
    rows = ["| " + " | ".join(str(c) for c in _cells(r)) + " |" for r in results]
    return "\n".join([head, rule, *rows])


def rank_key(r: RunResult) -> tuple[float, ...]:
    """Better first: more turns served, then less quota wasted, fewer 429s and refusals, then
    fewer tokens read again. A turn the person had to give up is the cost they feel most."""
    return (-r.served, r.quota_wasted, r.http_429 + r.refused, r.reread_tokens)


def winner(results: Sequence[RunResult]) -> str:
    return min(results, key=rank_key).policy
