"""The house rules about layers (STYLE.md), read from the source so a reader can trust the picture.

Floors, bottom up: `core` (pure rules) < `store`, `providers` < the service layer (`service`,
`accounts`: credentials, secrets, logins, …) < `proxy`, `gui`, `cli`. Every import counts, including those inside
functions and under TYPE_CHECKING: a lazy import still ties the floors together.

- core imports only itself, the standard library and the few pure libraries listed below;
- gui, proxy and cli reach the database only through the service: never `sublane_desktop.store`;
  the cli reaches the keyring only through the service too (`service.offline`);
- store and providers import nothing above them;
- core and proxy import no Qt (the headless server must run without a display).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "sublane_desktop"
CORE_THIRD_PARTY: set[str] = set()  # pure libraries core may use; none today
QT = ("PySide6", "qasync", "shiboken6")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> Iterator[tuple[int, str]]:
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    return imports_in(path.read_text(encoding="utf-8"), package)


def imports_in(source: str, package: str) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import in `source`, a module of `package`; relative
    imports resolved."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield node.lineno, base
            for alias in node.names:  # `from sublane_desktop import store` names a module
                yield node.lineno, f"{base}.{alias.name}"


def floor_of(module: str) -> str:
    """`sublane_desktop.gui.bridge` -> `gui`; a top-level module is its own floor."""
    return module.split(".")[1] if module.count(".") >= 1 else ""


def ours(module: str) -> bool:
    return module == "sublane_desktop" or module.startswith("sublane_desktop.")


def files(floor: str) -> list[Path]:
    found = sorted((PACKAGE / floor).rglob("*.py"))
    assert found, f"no files under {floor}/: the layer test would prove nothing"
    return found


def broken(floor: str, forbidden) -> list[str]:
    return [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
        for path in files(floor)
        for line, name in imports_of(path)
        if forbidden(name)
    ]


def test_core_imports_nothing_above_it():
    def forbidden(name: str) -> bool:
        if ours(name):
            return name != "sublane_desktop" and floor_of(name) != "core"
        top = name.split(".")[0]
        return top not in sys.stdlib_module_names and top not in CORE_THIRD_PARTY

    assert broken("core", forbidden) == []


@pytest.mark.parametrize("floor", ["gui", "proxy", "cli"])
def test_outer_floors_reach_the_store_only_through_the_service(floor):
    assert broken(floor, lambda name: floor_of(name) == "store" and ours(name)) == []


def test_cli_reaches_the_keyring_only_through_the_service():
    assert broken("cli", lambda name: name == "sublane_desktop.accounts.secrets") == []


@pytest.mark.parametrize("floor", ["store", "providers"])
def test_lower_floors_import_nothing_above_them(floor):
    above = {"service", "proxy", "gui", "cli", "app", "launcher", "accounts"}
    if floor == "store":
        above.add("providers")
    assert broken(floor, lambda name: ours(name) and floor_of(name) in above) == []


@pytest.mark.parametrize("floor", ["core", "proxy"])
def test_core_and_proxy_import_no_qt(floor):
    assert broken(floor, lambda name: name.split(".")[0] in QT) == []


def test_the_scanner_sees_lazy_relative_and_from_package_imports():
    """The checks above are only as good as `imports_in`: it must see every form."""
    source = (
        "import PySide6.QtCore\nfrom . import tray\nfrom ..store import records\n"
        "from sublane_desktop import store\n"
        "def late():\n    from sublane_desktop.store.models import User\n"
    )
    names = {name for _, name in imports_in(source, "sublane_desktop.gui")}
    assert {
        "PySide6.QtCore",
        "sublane_desktop.gui.tray",
        "sublane_desktop.store.records",
        "sublane_desktop.store",
        "sublane_desktop.store.models",
    } <= names


def core_import_graph() -> dict[str, set[str]]:
    """Core module -> the core modules it imports (every form, lazy and TYPE_CHECKING too)."""
    paths = files("core")
    known = {module_name(path) for path in paths}
    return {
        module_name(path): {name for _, name in imports_of(path) if name in known} - {""}
        for path in paths
    }


def import_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle in `graph` as [a, b, …, a], or [] when there is none (depth-first search)."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(module: str) -> list[str]:
        path.append(module)
        on_path.add(module)
        for target in sorted(graph.get(module, ())):
            if target in on_path:
                return [*path[path.index(target) :], target]
            if target not in done:
                found = visit(target)
                if found:
                    return found
        on_path.discard(path.pop())
        done.add(module)
        return []

    for module in sorted(graph):
        if module not in done:
            found = visit(module)
            if found:
                return found
    return []


def test_core_modules_import_no_circle():
    """A circle (pool -> scheduler -> cost_aware -> pool once) means no module of it can be
    read, tested or changed alone, and it invites lazy imports to paper over load order."""
    graph = core_import_graph()
    assert "sublane_desktop.core.scheduler" in graph["sublane_desktop.core.pool"]  # sees edges
    assert import_cycle(graph) == []


def test_the_cycle_finder_finds_a_circle_through_a_lazy_import():
    graph = {
        name: {target for _, target in imports_in(source, "sublane_desktop.core")}
        for name, source in {
            "sublane_desktop.core.pool": "from sublane_desktop.core.scheduler import Scheduler",
            "sublane_desktop.core.scheduler": "from sublane_desktop.core import cost_aware",
            "sublane_desktop.core.cost_aware": (
                "def place():\n    from sublane_desktop.core.pool import Demand\n"
            ),
            "sublane_desktop.core.clock": "import time",
        }.items()
    }
    graph = {name: targets & set(graph) for name, targets in graph.items()}
    assert import_cycle(graph) == [
        "sublane_desktop.core.cost_aware",
        "sublane_desktop.core.pool",
        "sublane_desktop.core.scheduler",
        "sublane_desktop.core.cost_aware",
    ]
    del graph["sublane_desktop.core.cost_aware"]
    assert import_cycle(graph) == []
