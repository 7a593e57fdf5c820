"""Novaberg: a local, private AI companion that runs as one process."""

__version__ = "0.1.0"
