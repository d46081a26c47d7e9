"""Settings: their defaults, their validation, and how they reach the pool (SPEC §7).

The CLI validates with the same `validate_settings` before writing the database directly, so a
bad value gets the same message with or without a running server.
"""

from __future__ import annotations

from typing import Any

from sublane_desktop.core import timeouts
from sublane_desktop.core.pool import MAX_CAP, Pool
from sublane_desktop.core.quota import QuotaRefresher
from sublane_desktop.core.scheduler import MODES, Ceilings
from sublane_desktop.providers import codex
from sublane_desktop.providers.antigravity import DEFAULT_CLIENT_VERSION, check_client_version

DEFAULT_PORT = 8765
DEFAULT_MAX_BODY = 32 * 1024 * 1024
BASE_URL_ENV = {
    "anthropic": "SUBLANE_ANTHROPIC_BASE_URL",
    "codex": "SUBLANE_CODEX_BASE_URL",
    "openai": "SUBLANE_OPENAI_BASE_URL",  # API-key accounts of the codex provider
    "antigravity": "SUBLANE_ANTIGRAVITY_BASE_URL",
    "oauth": "SUBLANE_OAUTH_BASE_URL",
}
DEFAULT_BASE_URLS = {
    "anthropic": "https://api.anthropic.com",
    "codex": "https://chatgpt.com/backend-api/codex",
    "openai": "https://api.openai.com",
    "antigravity": "https://cloudcode-pa.googleapis.com",
    "oauth": "https://platform.claude.com",
}
# Desktop notifications (R-UI-13): one switch per kind, and the window thresholds they cross.
NOTIFY_SETTINGS: dict[str, Any] = {
    "notify.window_crossing": True,  # a window crossing a threshold below
    "notify.thresholds": [0.8, 0.95],
    "notify.forecast": True,  # "runs out before its reset"
    "notify.cooldown": True,  # cooldown (or quota) entered and recovered
    "notify.signin": True,  # an account needs signing in again
    "notify.window_reset": True,  # a window reset while requests were being turned away
}
MAX_THRESHOLDS = 3

SCHEDULER_SETTINGS = {
    "scheduler.mode": "score",
    "scheduler.fable_weekly_max": 0.98,
    "scheduler.five_hour_max": 0.90,
    "scheduler.seven_day_max": 0.99,
    # account name -> {five_hour_max|seven_day_max|fable_weekly_max}
    "scheduler.account_limits": {},
    "quota.poll_floor_seconds": 300,
    "pool.cap": 8,
    "proxy.max_body_bytes": 32 * 1024 * 1024,
    "server.port": 8765,
    "app.start_at_login": False,
    # The tray icon carries the tightest window's percent (R-UI-12): on, because "how close
    # am I to a limit" is the one number a person looks at the tray for, and the icon's shape
    # and colour still say the pool's health under it.
    "tray.icon_percent": True,
    # GET /metrics without a credential, on a server that listens on loopback only (R-OBS-1):
    # the metrics hold no secret and no content, and a local Prometheus agent then needs no
    # copy of the administrator token. A server reachable from other machines always asks.
    "metrics.allow_loopback_without_token": True,
    # The Antigravity client version its user agent names (R-WF-5): a current one, or Cloud
    # Code refuses current models.
    "antigravity.client_version": DEFAULT_CLIENT_VERSION,
    **timeouts.DEFAULTS,  # upstream.connect/header/idle_timeout_s (R-FT-1)
    # The Codex release SubLane asks the ChatGPT model list as (R-WF-4): older ones are not
    # shown the newest models.
    "codex.client_version": codex.DEFAULT_CLIENT_VERSION,
    **NOTIFY_SETTINGS,
}


def put_in_force(settings: dict[str, Any], pool: Pool, refresher: QuotaRefresher) -> None:
    """Put stored settings in force: the cap, the scheduler mode and ceilings, the poll floor."""
    s = settings
    pool.cap = int(s["pool.cap"])
    pool.scheduler.mode = s["scheduler.mode"] if s["scheduler.mode"] in MODES else "score"
    pool.scheduler.ceilings = Ceilings(
        five_hour_max=float(s["scheduler.five_hour_max"]),
        seven_day_max=float(s["scheduler.seven_day_max"]),
        fable_weekly_max=float(s["scheduler.fable_weekly_max"]),
    )
    overrides = s.get("scheduler.account_limits") or {}
    for account in pool.accounts.values():
        account.ceilings = dict(overrides.get(account.name) or {})
    refresher.floor_seconds = float(s["quota.poll_floor_seconds"])


def validate_settings(changes: Any) -> dict[str, Any]:
    """Known keys with values in range, or ValueError naming the first bad one."""
    if not isinstance(changes, dict) or not changes:
        raise ValueError("settings must be a non-empty JSON object")
    clean: dict[str, Any] = {}
    for key, value in changes.items():
        if key not in SCHEDULER_SETTINGS:
            raise ValueError(f"unknown setting {key!r}")
        if key == "scheduler.mode":
            if value not in MODES:
                raise ValueError(f"scheduler.mode must be one of {', '.join(MODES)}")
        elif key.endswith("_max"):
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not (0 < value <= 1)
            ):
                raise ValueError(f"{key} must be a fraction in (0, 1]")
            value = float(value)
        elif key == "scheduler.account_limits":
            if not isinstance(value, dict):
                raise ValueError("scheduler.account_limits must map account names to ceilings")
            for name, limits in value.items():
                if not isinstance(limits, dict):
                    raise ValueError(f"ceilings for {name!r} must be an object")
                validate_settings(
                    {f"scheduler.{k}": v for k, v in limits.items()}
                ) if limits else None
        elif key in ("pool.cap", "server.port", "proxy.max_body_bytes", "quota.poll_floor_seconds"):
            low, high = {
                "pool.cap": (1, MAX_CAP),
                "server.port": (0, 65535),
                "proxy.max_body_bytes": (1024, 1 << 30),
                "quota.poll_floor_seconds": (0, 86400),
            }[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"{key} must be an integer from {low} to {high}")
        elif key in timeouts.DEFAULTS:
            value = timeouts.validate(key, value)
        elif key in (
            "app.start_at_login",
            "metrics.allow_loopback_without_token",
            "tray.icon_percent",
        ):
            if not isinstance(value, bool):
                raise ValueError(f"{key} must be true or false")
        elif key == "notify.thresholds":
            value = _thresholds(value)
        elif key.startswith("notify.") and not isinstance(value, bool):
            raise ValueError(f"{key} must be true or false")
        elif key == "antigravity.client_version":
            value = check_client_version(value)
        elif key == "codex.client_version" and not codex.valid_client_version(value):
            raise ValueError("codex.client_version must be a release number such as 0.171.0")
        clean[key] = value
    return clean


def _thresholds(value: Any) -> list[float]:
    """1 to 3 distinct fractions in (0, 1), lowest first."""
    if (
        not isinstance(value, list)
        or not 1 <= len(value) <= MAX_THRESHOLDS
        or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value)
        or any(not 0 < v < 1 for v in value)
        or len(set(value)) != len(value)
    ):
        raise ValueError(
            f"notify.thresholds must be 1 to {MAX_THRESHOLDS} different fractions in (0, 1), "
            "e.g. [0.8, 0.95]"
        )
    return sorted(float(v) for v in value)
