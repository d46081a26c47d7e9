"""Operator levers (R-ARCH-2): what a person can change in a running pool.

The tray, the API and the CLI pull the same levers. Each one changes the live pool first and
answers with the account's new view; what must outlive a restart is written to the database.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sublane_desktop.core.forecast import BURN_WINDOW_S
from sublane_desktop.service.settings import validate_settings
from sublane_desktop.store import quota as quota_store
from sublane_desktop.store import repositories as repo

if TYPE_CHECKING:
    from sublane_desktop.service import Service


class OperatorLevers:
    def __init__(self, service: Service) -> None:
        self.service = service

    async def set_limit(self, ref: str | int, limit: int) -> dict[str, Any]:
        service = self.service
        account = service.pool.set_limit(ref, limit)
        await service.db.write(lambda: repo.set_max_concurrency(account.id, limit))
        return service.account_view(account.id)

    async def resume(self, ref: str | int) -> dict[str, Any]:
        account = self.service.pool.resume(ref)
        return self.service.account_view(account.id)

    async def pause(self, ref: str | int, paused: bool = True) -> dict[str, Any]:
        account = self.service.pool.set_paused(ref, paused)
        self.service.fresh_gauges.look()  # back from a pause: aged gauges are read (R-UI-14)
        return self.service.account_view(account.id)

    async def set_enabled(self, ref: str | int, enabled: bool) -> dict[str, Any]:
        """Disable or enable (R-AG-6): settings stay; disabling frees the account's
        conversations; enabling advances its revision (written by the pool's persistence)."""
        account = self.service.pool.set_enabled(ref, enabled)
        self.service.fresh_gauges.look()  # an enabled account is read at once (R-UI-14)
        return self.service.account_view(account.id)

    async def verify(self, ref: str | int) -> dict[str, Any]:
        """One cheap authenticated call: ok, auth_failed or unreachable (R-AG-6). Read-only."""
        account = self.service.pool.find(ref)
        return await self.service.discovery.verify(account)

    async def switch(self, ref: str | int) -> dict[str, Any]:
        account = self.service.pool.switch(ref)
        return self.service.account_view(account.id)

    async def reset_usage(self) -> None:
        """Every gauge cold; the poll floor lifts so the feeds repopulate at once (R-LANE-8)."""
        service = self.service
        service.pool.reset_usage()
        service.refresher.lift_floor()
        service.usage_trail.clear()

        since = service.clock.now() - BURN_WINDOW_S  # all a forecast could still look at

        def forget() -> None:
            quota_store.clear_observations()
            quota_store.lift_poll_floors()
            quota_store.void_history_for_forecasts(since)

        await service.db.write(forget)

    async def update_settings(self, changes: dict[str, Any]) -> dict[str, Any]:
        """Validate, store and apply settings (the Settings dialog, the API and the CLI)."""
        service = self.service
        clean = validate_settings(changes)

        def write() -> None:
            for key, value in clean.items():
                repo.set_setting(key, value)

        await service.db.write(write)
        service.settings.update(clean)
        service.apply_settings()
        service.bus.publish("accounts.settings")
        return dict(service.settings)
