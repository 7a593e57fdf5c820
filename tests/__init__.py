"""Novaberg's tests, in folders that mirror `app/`; shared support modules at this level."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository
DATA = ROOT / "tests" / "data"
