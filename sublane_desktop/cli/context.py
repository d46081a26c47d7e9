"""What every command shares: the data directory, the service's offline side (the database and
keyring, opened on demand, for when no server runs), and the running server's management API
(reached without any http_proxy from the environment).
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sublane_desktop.service.offline import OfflineService

# sublane_desktop.service (and with it aiohttp) is imported where it is needed: it doubles the
# start-up time of quick commands such as `key create` or `admin-token`.
DEFAULT_PORT = 8765  # the same as sublane_desktop.service.DEFAULT_PORT (a test checks)


class CliError(Exception):
    """A user-facing failure: printed as one line, exit status 1."""


def default_data_dir() -> Path:
    env = os.environ.get("SUBLANE_DATA_DIR")
    if env:
        return Path(env)
    from platformdirs import user_data_dir

    return Path(user_data_dir("sublane-desktop", appauthor=False))


# The server is ours and local: an http_proxy/https_proxy in the environment must not
# route management calls (with the administrator token) through a corporate proxy.
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Context:
    def __init__(self, args: argparse.Namespace) -> None:
        self.data_dir: Path = args.data_dir or default_data_dir()
        self.host: str = args.host or "127.0.0.1"
        # None: the stored setting `server.port` (default 8765) decides when the server starts.
        self.port: int | None = args.port
        self._offline: OfflineService | None = None

    @property
    def offline(self) -> OfflineService:
        """The database and keyring of the data dir, for when no server runs (opened lazily)."""
        if self._offline is None:
            from sublane_desktop.service.offline import OfflineService

            self._offline = OfflineService(self.data_dir)
        return self._offline

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
                    status["health"] = json.loads(resp.read())
                    return status
        except (OSError, KeyError, TypeError, ValueError, urllib.error.URLError):
            return None
        return None

    def api(self, server: dict[str, Any], method: str, path: str, body: Any = None) -> Any:
        token = self.offline.admin_token()
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
            raise CliError(
                f"the server at {server['url']} did not answer {method} {path}: "
                f"{type(exc).__name__}"
            ) from None

    def close(self) -> None:
        if self._offline is not None:
            self._offline.close()
