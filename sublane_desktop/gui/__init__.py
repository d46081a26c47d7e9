"""The PySide6 desktop: tray, windows and the bridge to the service. Imported only in GUI mode."""
