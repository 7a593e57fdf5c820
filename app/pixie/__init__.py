"""The Pixie worker and consolidation into long-term memory (SPEC §3a)."""
