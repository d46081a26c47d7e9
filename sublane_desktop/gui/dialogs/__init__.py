"""Dialogs (R-UI-4). Non-modal and opened with show()/open(), never exec(): a nested event loop
would stall the asyncio loop that serves the proxy."""
