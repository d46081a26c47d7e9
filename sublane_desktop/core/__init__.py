"""Pure scheduling core: asyncio + stdlib only (R-ARCH-1).

Nothing under this package may import Qt, aiohttp or peewee; tests/core/test_purity.py proves it.
"""
