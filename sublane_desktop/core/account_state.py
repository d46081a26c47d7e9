"""What the pool and the scheduler know of one account, and what one request asks of them.

Its own module so that the pool (which owns these states), the scheduler (which reads them)
and the scheduling policies (core/policies) all depend on it, and never on each other in a
circle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sublane_desktop.core.cooldown import Evidence
from sublane_desktop.core.gauges import GaugeSet
from sublane_desktop.core.routing import ModelRoute

DEFAULT_LIMIT = 2
# Evidence scopes besides model families (whose scope is their gauge window), R-OBS-3.
ACCOUNT = "account"
FABLE_SCOPE = "fable"


@dataclass
class AccountState:
    id: int
    name: str
    provider: str
    group_ids: tuple[int, ...] = (1,)
    kind: str = "oauth"
    base_url: str | None = None
    enabled: bool = True
    max_concurrency: int = DEFAULT_LIMIT
    revision: int = 1  # lifecycle revision (credentials, enable/disable)
    paused: bool = False
    auth_failed: bool = False
    cooldown_until: float | None = None
    failure_streak: int = 0
    runtime_revision: int = 0
    # process-local
    quota_epoch: int = 0  # R-FT-9: advanced by reset-usage and re-auth
    in_flight: int = 0
    next_seq: int = 0
    decided_seq: int = -1  # highest admission sequence whose outcome has been applied
    probe_in_flight: bool = False
    # quota and lanes (SPEC §5)
    gauges: GaugeSet = field(default_factory=GaugeSet)
    pinned_until: float | None = None
    fable_cooldown_until: float | None = None
    fable_streak: int = 0
    ceilings: dict[str, float] = field(default_factory=dict)  # per-account overrides
    # Antigravity: a model family whose quota is spent rests until the reset Google named
    # (R-WF-5); a Codex per-model limit likewise (R-WF-4).
    family_cooldowns: dict[str, float] = field(default_factory=dict)
    # What each cooldown rests on (R-OBS-3), by scope: ACCOUNT, FABLE_SCOPE or a family
    # window. Persisted with the cooldowns (R-POOL-10) so a restart keeps kind and reset.
    evidence: dict[str, Evidence] = field(default_factory=dict)

    def family_resting(self, family: str, now: float) -> float | None:
        """Until when this family rests, or None when it serves."""
        until = self.family_cooldowns.get(family)
        return until if until is not None and now < until else None

    def cooling(self, now: float) -> bool:
        return self.cooldown_until is not None and now < self.cooldown_until

    def recovering(self, now: float) -> bool:
        """Cooldown over but not yet proven healthy: only one probe may go (R-POOL-7)."""
        return self.failure_streak > 0 and not self.cooling(now)

    def holds_json(self) -> dict[str, Any]:
        """The cooldowns' evidence and the resting families, as the store keeps them."""
        return {
            "evidence": {scope: ev.to_json() for scope, ev in self.evidence.items()},
            "families": dict(self.family_cooldowns),
        }

    def load_holds(self, data: Any) -> None:
        """The stored form of `holds_json`; what cannot be read is left out."""
        if not isinstance(data, dict):
            return
        evidence = data.get("evidence")
        for scope, raw in (evidence if isinstance(evidence, dict) else {}).items():
            found = Evidence.from_json(raw)
            if isinstance(scope, str) and found is not None:
                self.evidence[scope] = found
        families = data.get("families")
        for family, until in (families if isinstance(families, dict) else {}).items():
            if isinstance(family, str) and isinstance(until, (int, float)):
                self.family_cooldowns[family] = float(until)

    def runtime_fields(self) -> dict[str, Any]:
        return {
            "paused": self.paused,
            "auth_failed": self.auth_failed,
            "cooldown_until": self.cooldown_until,
            "failure_streak": self.failure_streak,
            "runtime_revision": self.runtime_revision,
            "fable_cooldown_until": self.fable_cooldown_until,
            "fable_streak": self.fable_streak,
            "holds": self.holds_json(),
            "pinned_until": self.pinned_until,
        }


@dataclass(frozen=True)
class Demand:
    """What one model request asks of the pool."""

    group_id: int
    route: ModelRoute
    conversation: str | None = None  # digest from core.affinity, or None
    # Whether the client is Claude Code, the one client an Anthropic subscription login serves
    # (R-WF-2, core/clients.py). The proxy's routes say; a demand made elsewhere (the
    # simulator, the core's own tests) is Claude Code's traffic.
    claude_code: bool = True
