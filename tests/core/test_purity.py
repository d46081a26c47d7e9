"""R-ARCH-1: the core (and the headless proxy) never pull in Qt, aiohttp or peewee."""

import subprocess
import sys


def _modules_after(imports: str) -> set[str]:
    code = f"import sys; {imports}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_core_imports_no_framework():
    loaded = _modules_after(
        "import sublane_desktop.core.pool, sublane_desktop.core.scheduler, "
        "sublane_desktop.core.routing, sublane_desktop.core.affinity, "
        "sublane_desktop.core.records, sublane_desktop.core.gauges, sublane_desktop.core.events"
    )
    for framework in ("PySide6", "aiohttp", "peewee", "qasync"):
        assert framework not in loaded, framework


def test_headless_proxy_imports_no_qt():
    loaded = _modules_after(
        "import sublane_desktop.proxy.server, sublane_desktop.service, sublane_desktop.app, "
        "sublane_desktop.cli"
    )
    assert "PySide6" not in loaded and "qasync" not in loaded
