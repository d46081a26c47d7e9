"""What `sublane account …` does while a server runs, inside the test's own process.

The CLI is another process in real life, with a database object of its own. In one process
two would share peewee's model binding (`store.models.db`, a proxy): opening the CLI's store
re-points the running service's queries at the CLI's database object, whose connections are
not the ones the service's transactions and `PRAGMA data_version` use, and tests that waited on
the running pool timed out now and then (seen once in CI). So the in-process CLI uses the
service's database object: peewee keeps a connection per thread, and the CLI part runs on a
worker thread, so its commits are another connection's, as a CLI process's would be.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sublane_desktop.service.offline import OfflineService


@contextmanager
def offline_cli(service) -> Iterator[OfflineService]:
    offline = OfflineService(service.data_dir)
    offline._secrets = service.secrets  # the same keyring file, as the CLI's env says
    offline._store = service.db  # the service's database object; see above
    try:
        yield offline
    finally:
        offline._store = None  # the service closes its own store
        offline.close()
