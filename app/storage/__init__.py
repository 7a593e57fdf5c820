"""Durable storage in SQLite: the message log, users, later the journal."""
