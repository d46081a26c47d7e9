"""SQLite persistence (peewee, WAL, one writer thread, numbered migrations)."""
