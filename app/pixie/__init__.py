"""The Pixie worker and consolidation into long-term memory (design §3a)."""
