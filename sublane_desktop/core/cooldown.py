"""The cooldown ladder of R-POOL-7: 15 s doubling per failure in a streak, capped at 15 min."""

from __future__ import annotations

BASE_SECONDS = 15.0
CAP_SECONDS = 15 * 60.0


def cooldown_seconds(streak: int, retry_after: float | None = None) -> float:
    """How long an account rests after the `streak`-th failure in a row.

    An upstream retry-after is a mandate and wins over the ladder, bounded to the same cap so a
    bogus header cannot bench an account for days.
    """
    if retry_after is not None and retry_after > 0:
        return min(CAP_SECONDS, max(1.0, float(retry_after)))
    exponent = max(0, streak - 1)
    return min(CAP_SECONDS, BASE_SECONDS * (2.0 ** min(exponent, 16)))
