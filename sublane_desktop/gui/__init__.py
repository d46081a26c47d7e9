"""The PySide6 desktop: tray, windows and the bridge to the service. Imported only in GUI mode."""

from sublane_desktop.gui import none_guard

none_guard.install()  # before any widget can hand back an empty QVariant (see none_guard)
