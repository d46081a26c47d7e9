"""Where icons and desktop files live, installed or in a source checkout."""

from __future__ import annotations

from pathlib import Path

import sublane_desktop

_PACKAGE_DIR = Path(sublane_desktop.__file__).resolve().parent


def _search_dirs() -> tuple[Path, ...]:
    # Installed wheels carry resources inside the package (package-data); a source checkout
    # keeps them at the repository root.
    return (_PACKAGE_DIR / "resources", _PACKAGE_DIR.parent / "resources")


def resource_path(name: str) -> Path:
    for folder in _search_dirs():
        candidate = folder / name
        if candidate.is_file():
            return candidate
    searched = ", ".join(str(d) for d in _search_dirs())
    raise FileNotFoundError(f"resource {name!r} not found in {searched}")
